// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_vecmath_test.c: the vector math of the SIMD kernels
// (kernels/x86_64/vecmath.h) against libm in double over dense sweeps of f32 bit patterns,
// asserting the error bounds documented there and in docs/elementwise.md; and the fused-op
// inner loops (kernels/x86_64/elementwise_x86_64_fused.h: GELU, dense epilogue, layer-norm and
// softmax rows) against double references, for every tail length, f32/bf16/f16 storage, and
// AVX2 against AVX-512 bit for bit. Parts for an ISA the CPU lacks are skipped.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/elementwise_internal.h"
#include "cml/fused.h"
#include "test.h"

#if defined(CMLC_HAVE_X86_64)

//===--- helpers ---===//

static cmlc_isa_t best_isa(void) {
  cmlc_cpu_features_t f;
  cmlc_cpu_detect(&f);
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  cmlc_options_select_isa(&f, true, true, false, &o);
  return o.isa;
}

typedef struct isa_entry_t {
  const char* name;
  cmlc_isa_t isa;
  cmlc_ew_fn (*unary)(cml_op_t, cml_dtype_t);
  cmlc_impl_fn (*fused)(cmlc_fk_loop_t, cml_dtype_t);
} isa_entry_t;

static const isa_entry_t kIsas[] = {
    {"avx512", CMLC_ISA_AVX512, cmlc_ew_avx512_unary_fn, cmlc_ew_avx512_fused_fn},
    {"avx2", CMLC_ISA_AVX2, cmlc_ew_avx2_unary_fn, cmlc_ew_avx2_fused_fn},
};
#define ISA_COUNT ((int)(sizeof kIsas / sizeof kIsas[0]))

static bool available(int k) { return best_isa() >= kIsas[k].isa; }

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// |got| - |want| in units of the f32 spacing at |want| (subnormal spacing below 2^-126).
static double ulp_error(float got, double want) {
  const double a = fabs(want);
  double ulp = 0x1p-149;
  if (a >= 0x1p-126) {
    int e;
    frexp(a, &e);
    ulp = ldexp(1.0, e - 24);
  }
  return fabs((double)got - want) / ulp;
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static double rng_uniform(double lo, double hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (double)(rng_state >> 11) * 0x1p-53;
}

// Every |stride|-th f32 bit pattern from |lo| to |hi| (both finite, lo < hi), ascending.
static int64_t sweep(float lo, float hi, uint32_t stride, float* out, int64_t cap) {
  int64_t n = 0;
  // Negative part: bit patterns of |x| from |lo| down to 0; then positive ones up to |hi|.
  if (lo < 0) {
    uint32_t b;
    memcpy(&b, &lo, 4);
    for (int64_t u = (int64_t)(b & 0x7fffffffu); u >= 0 && n < cap; u -= stride) {
      float v = -bits_f32((uint32_t)u);
      if (v <= hi) out[n++] = v;
    }
  }
  if (hi > 0) {
    float start = lo > 0 ? lo : 0.0f;
    uint32_t b0, b1;
    memcpy(&b0, &start, 4);
    memcpy(&b1, &hi, 4);
    for (int64_t u = b0; u <= (int64_t)b1 && n < cap; u += stride) out[n++] = bits_f32((uint32_t)u);
  }
  return n;
}

//===--- exp, log, tanh, logistic, erf: dense sweeps of every 2^10-th bit pattern ---===//

typedef struct unary_bound_t {
  cml_op_t op;
  double (*ref)(double);
  float lo, hi;     // the sweep (beyond it the results are 0, 1, +-Inf or NaN: exact)
  double max_ulps;  // documented in vecmath.h and docs/elementwise.md
} unary_bound_t;

static double ref_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }

static const unary_bound_t kBounds[] = {
    {CML_OP_EXP, exp, -104.0f, 89.0f, 1.0},
    {CML_OP_LOG, log, 0x1p-149f, FLT_MAX, 1.0},
    {CML_OP_TANH, tanh, -10.0f, 10.0f, 1.5},
    {CML_OP_ERF, erf, -4.5f, 4.5f, 1.5},
    {CML_OP_LOGISTIC, ref_logistic, -104.0f, 89.0f, 2.5},
    {CML_OP_EXPM1, expm1, -104.0f, 89.0f, 3.0},
    {CML_OP_LOG1P, log1p, -0.99999994f, FLT_MAX, 3.0},
    {CML_OP_SIN, sin, -65536.0f, 65536.0f, 2.0},
    {CML_OP_COS, cos, -65536.0f, 65536.0f, 2.0},
};

enum { SWEEP_CAP = 1 << 22 };

TEST(transcendentals_dense_sweep) {
  float* x = malloc(SWEEP_CAP * sizeof(float));
  float* got = malloc(SWEEP_CAP * sizeof(float));
  ASSERT_TRUE(x && got);
  int checked = 0;
  for (size_t c = 0; c < sizeof kBounds / sizeof kBounds[0]; ++c) {
    const unary_bound_t* b = &kBounds[c];
    const int64_t n = sweep(b->lo, b->hi, 1u << 10, x, SWEEP_CAP);
    ASSERT_TRUE(n > 100000);
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!available(k)) continue;
      const void* in[1] = {x};
      const int64_t st[1] = {1};
      kIsas[k].unary(b->op, CML_DTYPE_F32)(got, in, st, n);
      double worst = 0;
      float worst_x = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double want = b->ref((double)x[i]);
        if (fabs(want) < 0x1p-126 || isinf(want) || fabs(want) > FLT_MAX) continue;  // flushed
        const double e = ulp_error(got[i], want);
        if (e > worst) worst = e, worst_x = x[i];
      }
      printf("  %s %s: %lld inputs, max %.3f ulp at %a (bound %.1f)\n", kIsas[k].name,
             cml_op_name(b->op), (long long)n, worst, (double)worst_x, b->max_ulps);
      if (worst > b->max_ulps) {
        TEST_FAIL_("%s %s: %.3f ulp at %a > %.1f", kIsas[k].name, cml_op_name(b->op), worst,
                   (double)worst_x, b->max_ulps);
      }
      ++checked;
    }
  }
  free(x);
  free(got);
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

//===--- GELU ---===//

static double gelu_erf_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double gelu_tanh_ref(double x) {
  const double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));  // = x/2 (1 + tanh(u)), without the cancellation
}

typedef struct gelu_region_t {
  float lo, hi;
  double max_ulps;  // in ulps of the result
} gelu_region_t;

// The bounds documented in vecmath.h.
static const gelu_region_t kGeluErf[] = {{-13.0f, 16.0f, 7.0}};
static const gelu_region_t kGeluTanh[] = {{-1.5f, 16.0f, 5.0}, {-9.0f, -1.5f, 160.0}};

static void check_gelu(int* test_failed_, const char* isa, const char* form, const float* x,
                       const float* got, int64_t n, double (*ref)(double),
                       const gelu_region_t* regions, int region_count) {
  for (int r = 0; r < region_count; ++r) {
    double worst = 0;
    float worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] < regions[r].lo || x[i] > regions[r].hi) continue;
      const double want = ref((double)x[i]);
      if (want == 0) {
        if (got[i] != 0)
          TEST_FAIL_("%s %s(%a) = %a, want 0", isa, form, (double)x[i], (double)got[i]);
        continue;
      }
      const double e = ulp_error(got[i], want);
      if (e > worst) worst = e, worst_x = x[i];
    }
    printf("  %s %s on [%g, %g]: max %.3f ulp at %a (bound %.1f)\n", isa, form,
           (double)regions[r].lo, (double)regions[r].hi, worst, (double)worst_x,
           regions[r].max_ulps);
    if (worst > regions[r].max_ulps) {
      TEST_FAIL_("%s %s on [%g, %g]: %.3f ulp at %a > %.1f", isa, form, (double)regions[r].lo,
                 (double)regions[r].hi, worst, (double)worst_x, regions[r].max_ulps);
    }
  }
}

TEST(gelu_forms_error_bound) {
  float* x = malloc(SWEEP_CAP * sizeof(float));
  float* got = malloc(SWEEP_CAP * sizeof(float));
  float* other = malloc(SWEEP_CAP * sizeof(float));
  ASSERT_TRUE(x && got && other);
  int64_t n = sweep(-16.0f, 16.0f, 1u << 8, x, SWEEP_CAP - 8);
  // Specials and far values.
  const float extra[] = {INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 1e30f, -1e30f, 0.0f};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; ++i) x[n++] = extra[i];
  const cmlc_fk_loop_t forms[2] = {CMLC_FK_GELU_ERF, CMLC_FK_GELU_TANH};
  int checked = 0;
  for (int f = 0; f < 2; ++f) {
    bool first = true;
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!available(k)) continue;
      cmlc_fk_map_fn fn = (cmlc_fk_map_fn)kIsas[k].fused(forms[f], CML_DTYPE_F32);
      ASSERT_TRUE(fn != NULL);
      fn(got, x, n);
      const char* name = f == 0 ? "gelu_erf" : "gelu_tanh";
      if (f == 0) {
        check_gelu(test_failed_, kIsas[k].name, name, x, got, n - 8, gelu_erf_ref, kGeluErf, 1);
      } else {
        check_gelu(test_failed_, kIsas[k].name, name, x, got, n - 8, gelu_tanh_ref, kGeluTanh, 2);
      }
      // Specials: +Inf -> +Inf, -Inf -> NaN (as the formula: -Inf * 0), NaN -> NaN, huge
      // positive -> x, huge negative -> -0, 0 -> 0.
      const float* s = got + n - 8;
      ASSERT_TRUE(isinf(s[0]) && s[0] > 0);
      ASSERT_TRUE(isnan(s[1]) && isnan(s[2]));
      ASSERT_TRUE(s[3] == FLT_MAX && s[5] == 1e30f);
      ASSERT_TRUE(s[4] == 0.0f && s[6] == 0.0f && s[7] == 0.0f);
      // Monotone where GELU is (x >= -0.5, away from its flat minimum at -0.75), so no polynomial
      // seam shows.
      for (int64_t i = 1; i < n - 8; ++i) {
        if (x[i - 1] >= -0.5f && x[i] > x[i - 1] && got[i] < got[i - 1]) {
          TEST_FAIL_("%s %s not monotone: f(%a) = %a < f(%a) = %a", kIsas[k].name, name,
                     (double)x[i], (double)got[i], (double)x[i - 1], (double)got[i - 1]);
        }
      }
      if (!first && memcmp(got, other, (size_t)n * sizeof(float)) != 0) {
        TEST_FAIL_("%s %s differs from the other ISA", kIsas[k].name, name);
      }
      memcpy(other, got, (size_t)n * sizeof(float));
      first = false;
      // bf16 and f16 storage: the f32 result rounded once.
      enum { M = 4099 };
      uint16_t hx[M], hy[M];
      for (int dt = 0; dt < 2; ++dt) {
        const cml_dtype_t dtype = dt == 0 ? CML_DTYPE_BF16 : CML_DTYPE_F16;
        float xs[M], ys[M];
        for (int i = 0; i < M; ++i) {
          const float v = (float)rng_uniform(-8, 8);
          hx[i] = dt == 0 ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
          xs[i] = dt == 0 ? cml_bf16_to_f32(hx[i]) : cml_f16_to_f32(hx[i]);
        }
        fn(ys, xs, M);
        cmlc_fk_map_fn hfn = (cmlc_fk_map_fn)kIsas[k].fused(forms[f], dtype);
        ASSERT_TRUE(hfn != NULL);
        hfn(hy, hx, M);
        for (int i = 0; i < M; ++i) {
          const uint16_t want = dt == 0 ? cml_f32_to_bf16(ys[i]) : cml_f32_to_f16(ys[i]);
          if (hy[i] != want) {
            TEST_FAIL_("%s %s %s(%a) = %04x, f32 rounded %04x", kIsas[k].name, name,
                       cml_dtype_name(dtype), (double)xs[i], hy[i], want);
          }
        }
      }
      ++checked;
    }
  }
  free(x);
  free(got);
  free(other);
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

//===--- dense epilogue, layer norm and softmax rows ---===//

static double act_ref(double v, int act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return gelu_erf_ref(v);
    case CML_ACTIVATION_RELU:
      return v < 0 ? 0 : v;
    case CML_ACTIVATION_SILU:
      return v / (1.0 + exp(-v));
    case CML_ACTIVATION_HARD_SWISH: {
      // In f32 as the scalar epilogue (v / 6 + 1/2 cancels near -3: a property of the formula).
      float t = (float)v / 6.0f + 0.5f;
      t = t < 0 ? 0 : (t > 1 ? 1 : t);
      return (double)((float)v * t);
    }
    case CML_ACTIVATION_TANH:
      return tanh(v);
    default:
      return v;
  }
}

enum { ROW_MAX = 800 };

TEST(dense_rows_every_activation_and_tail) {
  static const int acts[] = {CML_ACTIVATION_NONE, CML_ACTIVATION_GELU,       CML_ACTIVATION_RELU,
                             CML_ACTIVATION_SILU, CML_ACTIVATION_HARD_SWISH, CML_ACTIVATION_TANH};
  float c[ROW_MAX], bias[ROW_MAX], y[ROW_MAX + 16], other[ROW_MAX + 16];
  for (int i = 0; i < ROW_MAX; ++i) {
    c[i] = (float)rng_uniform(-6, 6);
    bias[i] = (float)rng_uniform(-1, 1);
  }
  c[3] = NAN;
  int checked = 0;
  for (size_t a = 0; a < sizeof acts / sizeof acts[0]; ++a) {
    bool first = true;
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!available(k)) continue;
      cmlc_fk_dense_row_fn fn =
          (cmlc_fk_dense_row_fn)kIsas[k].fused(CMLC_FK_DENSE_ROW, CML_DTYPE_F32);
      ASSERT_TRUE(fn != NULL);
      for (int n = 1; n <= 40 || n == 768; n = n == 40 ? 768 : n + 1) {
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
          for (int i = 0; i < ROW_MAX + 16; ++i) y[i] = -12345.0f;
          fn(y, c, with_bias ? bias : NULL, n, acts[a]);
          for (int i = 0; i < n; ++i) {
            const float v = c[i] + (with_bias ? bias[i] : 0.0f);
            const double want = act_ref((double)v, acts[a]);
            if (isnan(want) != isnan(y[i]) ||
                (!isnan(want) && fabs(y[i] - want) > 1e-6 * fabs(want) + 1e-30)) {
              TEST_FAIL_("%s act %d n=%d bias %d: element %d of %a: %a, want %a", kIsas[k].name,
                         acts[a], n, with_bias, i, (double)v, (double)y[i], want);
            }
          }
          ASSERT_TRUE(y[n] == -12345.0f);  // nothing written past the row
        }
      }
      if (!first && memcmp(y, other, 768 * sizeof(float)) != 0) {
        TEST_FAIL_("%s act %d differs from the other ISA", kIsas[k].name, acts[a]);
      }
      memcpy(other, y, sizeof y);
      first = false;
      ++checked;
    }
  }
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

TEST(layer_norm_and_softmax_rows) {
  float x[ROW_MAX], g[ROW_MAX], b[ROW_MAX], y[ROW_MAX + 16], other[ROW_MAX + 16];
  double want[ROW_MAX];
  int checked = 0;
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!available(k)) continue;
    cmlc_fk_ln_row_fn ln = (cmlc_fk_ln_row_fn)kIsas[k].fused(CMLC_FK_LN_ROW, CML_DTYPE_F32);
    cmlc_fk_softmax_row_fn sm =
        (cmlc_fk_softmax_row_fn)kIsas[k].fused(CMLC_FK_SOFTMAX_ROW, CML_DTYPE_F32);
    ASSERT_TRUE(ln != NULL && sm != NULL);
    for (int n = 1; n <= 40 || n == 768; n = n == 40 ? 768 : n + 1) {
      // Three rows: centered, a large common offset with a small spread (the mean's precision
      // matters), and a constant row (variance 0: y = beta).
      for (int kind = 0; kind < 3; ++kind) {
        for (int i = 0; i < n; ++i) {
          x[i] = kind == 0   ? (float)rng_uniform(-3, 3)
                 : kind == 1 ? 1000.0f + (float)rng_uniform(-0.01, 0.01)
                             : 7.0f;
          g[i] = (float)rng_uniform(0.5, 1.5);
          b[i] = (float)rng_uniform(-0.5, 0.5);
        }
        double mean = 0, var = 0;
        for (int i = 0; i < n; ++i) mean += x[i];
        mean /= n;
        for (int i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
        var /= n;
        const double rstd = 1.0 / sqrt(var + 1e-5);
        for (int i = 0; i < n; ++i) want[i] = (x[i] - mean) * rstd * g[i] + b[i];
        for (int i = 0; i < ROW_MAX + 16; ++i) y[i] = -12345.0f;
        ln(y, x, g, b, n, 1e-5f);
        for (int i = 0; i < n; ++i) {
          if (!(fabs(y[i] - want[i]) <= 2e-5 * fabs(want[i]) + 2e-6)) {
            TEST_FAIL_("%s layer norm n=%d kind %d: element %d = %a, want %a", kIsas[k].name, n,
                       kind, i, (double)y[i], want[i]);
          }
        }
        ASSERT_TRUE(y[n] == -12345.0f);
        // In place, no gamma / beta.
        memcpy(y, x, (size_t)n * sizeof(float));
        ln(y, y, NULL, NULL, n, 1e-5f);
        for (int i = 0; i < n; ++i) {
          const double w = (x[i] - mean) * rstd;
          if (!(fabs(y[i] - w) <= 2e-5 * fabs(w) + 2e-6)) {
            TEST_FAIL_("%s layer norm in place n=%d kind %d: element %d = %a, want %a",
                       kIsas[k].name, n, kind, i, (double)y[i], w);
          }
        }
      }
      // Softmax: a row with a large offset (exp would overflow without the max).
      for (int i = 0; i < n; ++i) x[i] = 500.0f + (float)rng_uniform(-20, 20);
      double m = -INFINITY, sum = 0;
      for (int i = 0; i < n; ++i) m = fmax(m, x[i]);
      for (int i = 0; i < n; ++i) sum += exp(x[i] - m);
      for (int i = 0; i < ROW_MAX + 16; ++i) y[i] = -12345.0f;
      sm(y, x, n);
      for (int i = 0; i < n; ++i) {
        const double w = exp(x[i] - m) / sum;
        if (!(fabs(y[i] - w) <= 4e-7 * w + 1e-30)) {
          TEST_FAIL_("%s softmax n=%d: element %d = %a, want %a", kIsas[k].name, n, i, (double)y[i],
                     w);
        }
      }
      ASSERT_TRUE(y[n] == -12345.0f);
    }
    // A NaN anywhere in a softmax row makes the whole row NaN (as the scalar kernel).
    for (int i = 0; i < 37; ++i) x[i] = (float)i;
    x[20] = NAN;
    sm(y, x, 37);
    for (int i = 0; i < 37; ++i) ASSERT_TRUE(isnan(y[i]));
    // The same 768-row on both ISAs: bit-identical.
    for (int i = 0; i < 768; ++i) x[i] = 3.0f * sinf(0.37f * (float)i);
    ln(y, x, NULL, NULL, 768, 1e-5f);
    sm(y + 0, y, 768);
    if (checked > 0 && memcmp(y, other, 768 * sizeof(float)) != 0) {
      TEST_FAIL_("%s layer norm + softmax differ from the other ISA", kIsas[k].name);
    }
    memcpy(other, y, 768 * sizeof(float));
    ++checked;
  }
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

//===--- bf16 / f16 elementwise kernels against the scalar ones ---===//

static float half_to_f32(uint16_t h, cml_dtype_t dt) {
  return dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(h) : cml_f16_to_f32(h);
}

TEST(half_elementwise_matches_scalar) {
  enum { N = 1000 };
  static const cml_op_t binary[] = {CML_OP_ADD, CML_OP_SUB, CML_OP_MUL,
                                    CML_OP_DIV, CML_OP_MAX, CML_OP_MIN};
  static const cml_op_t unary[] = {
      CML_OP_EXP,   CML_OP_LOG,   CML_OP_TANH,  CML_OP_LOGISTIC, CML_OP_ERF,   CML_OP_SQRT,
      CML_OP_RSQRT, CML_OP_NEG,   CML_OP_ABS,   CML_OP_SIGN,     CML_OP_FLOOR, CML_OP_CEIL,
      CML_OP_ROUND, CML_OP_EXPM1, CML_OP_LOG1P, CML_OP_SIN,      CML_OP_COS};
  uint16_t a[N], b[N], got[N + 8], want[N];
  int checked = 0;
  for (int dt_i = 0; dt_i < 2; ++dt_i) {
    const cml_dtype_t dt = dt_i == 0 ? CML_DTYPE_BF16 : CML_DTYPE_F16;
    for (int i = 0; i < N; ++i) {
      const float va = i < 8
                           ? (float[]){0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -2.5f, 3.0f}[i]
                           : (float)rng_uniform(-6, 6);
      const float vb = (float)rng_uniform(-6, 6);
      a[i] = dt_i == 0 ? cml_f32_to_bf16(va) : cml_f32_to_f16(va);
      b[i] = dt_i == 0 ? cml_f32_to_bf16(vb) : cml_f32_to_f16(vb);
    }
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!available(k)) continue;
      for (int u = 0; u < 2; ++u) {
        const size_t count = u ? sizeof unary / sizeof unary[0] : sizeof binary / sizeof binary[0];
        for (size_t o = 0; o < count; ++o) {
          const cml_op_t op = u ? unary[o] : binary[o];
          cmlc_ew_fn fn = u ? kIsas[k].unary(op, dt) : cmlc_ew_avx2_binary_fn(op, dt);
          if (!u && kIsas[k].isa == CMLC_ISA_AVX512) fn = cmlc_ew_avx512_binary_fn(op, dt);
          cmlc_ew_fn ref = u ? cmlc_ew_unary_fn(op, dt) : cmlc_ew_binary_fn(op, dt);
          ASSERT_TRUE(fn != NULL && ref != NULL);
          // Both operands streamed, then b broadcast; every length up to 40 and N.
          for (int s = 0; s < 2; ++s) {
            const int64_t st[2] = {1, s == 0 ? 1 : 0};
            for (int n = 0; n <= N; n = n < 40 ? n + 1 : N) {
              const void* in[2] = {a, b};
              for (int i = 0; i < N + 8; ++i) got[i] = 0x5a5a;
              fn(got, in, st, n);
              ref(want, in, st, n);
              ASSERT_TRUE(got[n] == 0x5a5a);
              for (int i = 0; i < n; ++i) {
                const float g = half_to_f32(got[i], dt), w = half_to_f32(want[i], dt);
                if (isnan(g) && isnan(w)) continue;
                // Exact for + - * / max min and neg; the polynomial transcendentals may round
                // to the neighbouring half value (1 ulp of the dtype).
                const int diff = abs((int)(int16_t)got[i] - (int)(int16_t)want[i]);
                const bool exact_op = !u || op == CML_OP_NEG || op == CML_OP_SQRT ||
                                      op == CML_OP_ABS || op == CML_OP_SIGN || op == CML_OP_FLOOR ||
                                      op == CML_OP_CEIL || op == CML_OP_ROUND;
                if (exact_op ? got[i] != want[i] : diff > 1) {
                  TEST_FAIL_("%s %s %s n=%d: element %d: %a, scalar %a", kIsas[k].name,
                             cml_dtype_name(dt), cml_op_name(op), n, i, (double)g, (double)w);
                }
              }
              if (n == N) break;
            }
          }
        }
      }
      ++checked;
    }
  }
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

TEST_MAIN(TEST_ENTRY(transcendentals_dense_sweep), TEST_ENTRY(gelu_forms_error_bound),
          TEST_ENTRY(dense_rows_every_activation_and_tail), TEST_ENTRY(layer_norm_and_softmax_rows),
          TEST_ENTRY(half_elementwise_matches_scalar))

#else  // no x86 SIMD kernels in this build

TEST(no_simd_kernels) { ASSERT_TRUE(true); }
TEST_MAIN(TEST_ENTRY(no_simd_kernels))

#endif
