// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_elementwise_simd_test.c: the AVX2 / AVX-512 f32 elementwise and
// reduction kernels against the scalar reference kernels over edge-value grids (every pair of
// edge values, broadcast operands, every tail length), against libm in double for the
// polynomial transcendentals, AVX2 against AVX-512 bit for bit, and the blocked parallel full
// reduction for independence from the thread count. Parts for an ISA the CPU lacks are skipped.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/elementwise_internal.h"
#include "test.h"

#if defined(CMLC_HAVE_X86_64)

//===--- helpers ---===//

// The ISA the backend would pick with nothing disallowed (cpu.c: the one feature probe).
static cmlc_isa_t best_isa(void) {
  cmlc_cpu_features_t f;
  cmlc_cpu_detect(&f);
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  cmlc_options_select_isa(&f, true, true, false, &o);
  return o.isa;
}
static bool have_avx512(void) { return best_isa() >= CMLC_ISA_AVX512; }
static bool have_avx2(void) { return best_isa() >= CMLC_ISA_AVX2; }

typedef struct isa_entry_t {
  const char* name;
  cmlc_isa_t isa;
  cmlc_ew_fn (*unary)(cml_op_t, cml_dtype_t);
  cmlc_ew_fn (*binary)(cml_op_t, cml_dtype_t);
  cmlc_ew_fn (*where)(size_t);
  cmlc_ew_convert_fn (*convert)(cml_dtype_t, cml_dtype_t);
  cmlc_rd_f32_fn (*reduce)(cml_op_t);
  bool (*available)(void);
} isa_entry_t;

static const isa_entry_t kIsas[] = {
    {"avx512", CMLC_ISA_AVX512, cmlc_ew_avx512_unary_fn, cmlc_ew_avx512_binary_fn,
     cmlc_ew_avx512_where_fn, cmlc_ew_avx512_convert_fn, cmlc_ew_avx512_reduce_fn, have_avx512},
    {"avx2", CMLC_ISA_AVX2, cmlc_ew_avx2_unary_fn, cmlc_ew_avx2_binary_fn, cmlc_ew_avx2_where_fn,
     cmlc_ew_avx2_convert_fn, cmlc_ew_avx2_reduce_fn, have_avx2},
};
#define ISA_COUNT ((int)(sizeof kIsas / sizeof kIsas[0]))

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Same bits, or both NaN.
static bool same_f32(float a, float b) {
  return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static const float kEdges[] = {
    0.0f,        -0.0f,         1.0f,           -1.0f,         0.5f,
    -0.5f,       INFINITY,      -INFINITY,      NAN,           -NAN,
    FLT_MAX,     -FLT_MAX,      FLT_MIN,        -FLT_MIN,      0x1p-149f,
    -0x1p-140f,  1e-30f,        3.0f,           -2.5f,         88.72f,
    89.0f,       -104.0f,       -87.5f,         -100.0f,       0.55f,
    0.5499999f,  -0.55f,        0.99999994f,    3.92f,         -3.9200001f,
    100.0f,      2147483648.0f, -2147483648.0f, 2147483520.0f, -2147483904.0f,
    16777217.0f, 1.00390625f,   1.01171875f,    65504.0f,      65520.0f,
    6e-8f,       1e-3f,         7.0f / 3.0f};
#define EDGE_COUNT ((int)(sizeof kEdges / sizeof kEdges[0]))

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}
static float rng_uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)((double)rng_u32() / 4294967296.0);
}

// Error of |got| against |want| (exact) in units of the f32 spacing at |want|.
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

//===--- binary and compare ---===//

static const cml_op_t kBinaryOps[] = {
    CML_OP_ADD,       CML_OP_SUB,           CML_OP_MUL,          CML_OP_DIV,
    CML_OP_MAX,       CML_OP_MIN,           CML_OP_EQUAL,        CML_OP_NOT_EQUAL,
    CML_OP_LESS_THAN, CML_OP_LESS_OR_EQUAL, CML_OP_GREATER_THAN, CML_OP_GREATER_OR_EQUAL};

static bool is_compare(cml_op_t op) { return cml_op_kind(op) == CML_OPK_COMPARE; }

// Runs |fn| and the scalar kernel on the same operands and compares every output element.
static bool binary_matches(cml_op_t op, cmlc_ew_fn fn, const float* a, const float* b,
                           const int64_t* st, int64_t n, int64_t* out_bad) {
  cmlc_ew_fn ref = cmlc_ew_binary_fn(op, CML_DTYPE_F32);
  float got[EDGE_COUNT * EDGE_COUNT], want[EDGE_COUNT * EDGE_COUNT];
  const void* in[2] = {a, b};
  memset(got, 0x5a, sizeof got);
  fn(got, in, st, n);
  ref(want, in, st, n);
  for (int64_t i = 0; i < n; ++i) {
    const bool ok = is_compare(op) ? ((const uint8_t*)got)[i] == ((const uint8_t*)want)[i]
                                   : same_f32(got[i], want[i]);
    if (!ok) {
      *out_bad = i;
      return false;
    }
  }
  // Nothing written past n.
  const size_t esize = is_compare(op) ? 1 : 4;
  const unsigned char* g = (const unsigned char*)got;
  for (size_t k = (size_t)n * esize; k < (size_t)n * esize + 16 && k < sizeof got; ++k) {
    if (g[k] != 0x5a) {
      *out_bad = -1;
      return false;
    }
  }
  return true;
}

TEST(binary_matches_scalar_on_edge_grid) {
  static float a[EDGE_COUNT * EDGE_COUNT], b[EDGE_COUNT * EDGE_COUNT];
  for (int i = 0; i < EDGE_COUNT; ++i) {
    for (int j = 0; j < EDGE_COUNT; ++j) {
      a[i * EDGE_COUNT + j] = kEdges[i];
      b[i * EDGE_COUNT + j] = kEdges[j];
    }
  }
  int checked = 0;
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!kIsas[k].available()) continue;
    for (size_t o = 0; o < sizeof kBinaryOps / sizeof kBinaryOps[0]; ++o) {
      const cml_op_t op = kBinaryOps[o];
      cmlc_ew_fn fn = kIsas[k].binary(op, CML_DTYPE_F32);
      ASSERT_TRUE(fn != NULL);
      int64_t bad = 0;
      const int64_t both[2] = {1, 1};
      if (!binary_matches(op, fn, a, b, both, EDGE_COUNT * EDGE_COUNT, &bad)) {
        TEST_FAIL_("%s %s: element %lld (%a, %a)", kIsas[k].name, cml_op_name(op), (long long)bad,
                   bad >= 0 ? (double)a[bad] : 0.0, bad >= 0 ? (double)b[bad] : 0.0);
      }
      // Every tail length, and each operand broadcast.
      for (int64_t n = 0; n <= 40; ++n) {
        const int64_t strides[4][2] = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
        for (int s = 0; s < 4; ++s) {
          const float* pa = strides[s][0] ? a + 7 : &kEdges[n % EDGE_COUNT];
          const float* pb = strides[s][1] ? a + 3 : &kEdges[(n * 5) % EDGE_COUNT];
          if (!binary_matches(op, fn, pa, pb, strides[s], n, &bad)) {
            TEST_FAIL_("%s %s: n=%lld strides (%lld, %lld): element %lld", kIsas[k].name,
                       cml_op_name(op), (long long)n, (long long)strides[s][0],
                       (long long)strides[s][1], (long long)bad);
          }
        }
      }
      ++checked;
    }
  }
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

TEST(max_min_nan_and_signed_zero) {
  // Independent expectations (XLA semantics): NaN wins, -0 < +0.
  const float a[4] = {NAN, 1.0f, -0.0f, 0.0f}, b[4] = {1.0f, NAN, 0.0f, -0.0f};
  const int64_t st[2] = {1, 1};
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!kIsas[k].available()) continue;
    float mx[4], mn[4];
    const void* in[2] = {a, b};
    kIsas[k].binary(CML_OP_MAX, CML_DTYPE_F32)(mx, in, st, 4);
    kIsas[k].binary(CML_OP_MIN, CML_DTYPE_F32)(mn, in, st, 4);
    ASSERT_TRUE(isnan(mx[0]) && isnan(mx[1]) && isnan(mn[0]) && isnan(mn[1]));
    ASSERT_TRUE(same_f32(mx[2], 0.0f) && same_f32(mx[3], 0.0f));
    ASSERT_TRUE(same_f32(mn[2], -0.0f) && same_f32(mn[3], -0.0f));
  }
}

// Clamp(lo, x, hi): every ISA's kernel against the scalar kernel, f32 / bf16 / f16, over
// triples of the edge values (NaN anywhere, infinities, signed zeros, lo > hi), every tail
// length and each operand broadcast (stride 0: the usual scalar bounds). Halves compare as
// values (NaN as NaN): the SIMD kernels round once from f32, as the scalar ones do.
TEST(clamp_matches_scalar) {
  enum { N = EDGE_COUNT * 4 };
  static const cml_dtype_t dts[3] = {CML_DTYPE_F32, CML_DTYPE_BF16, CML_DTYPE_F16};
  int checked = 0;
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!kIsas[k].available()) continue;
    for (int di = 0; di < 3; ++di) {
      const cml_dtype_t dt = dts[di];
      const size_t es = dt == CML_DTYPE_F32 ? 4 : 2;
      cmlc_ew_fn fn = kIsas[k].binary(CML_OP_CLAMP, dt);
      cmlc_ew_fn ref = cmlc_ew_binary_fn(CML_OP_CLAMP, dt);
      ASSERT_TRUE(fn != NULL && ref != NULL);
      for (int t = 0; t < EDGE_COUNT; t += 3) {
        // Operands: lo walks the edges from t, x all of them, hi from 2t.
        unsigned char ops[3][N * 4];
        for (int e = 0; e < N; ++e) {
          const float v[3] = {kEdges[(t + e) % EDGE_COUNT], kEdges[e % EDGE_COUNT],
                              kEdges[(2 * t + 5 * e) % EDGE_COUNT]};
          for (int j = 0; j < 3; ++j) {
            if (dt == CML_DTYPE_F32) memcpy(ops[j] + 4 * e, &v[j], 4);
            uint16_t h = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(v[j]) : cml_f32_to_f16(v[j]);
            if (dt != CML_DTYPE_F32) memcpy(ops[j] + 2 * e, &h, 2);
          }
        }
        static const int64_t strides[4][3] = {{1, 1, 1}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}};
        for (int s = 0; s < 4; ++s) {
          for (int64_t n = t % 2 ? 1 : 0; n <= N; n += n < 40 ? 1 : 37) {
            const void* in[3] = {ops[0] + (strides[s][0] ? 0 : es * 3), ops[1],
                                 ops[2] + (strides[s][2] ? 0 : es * 5)};
            unsigned char got[N * 4 + 16], want[N * 4 + 16];
            memset(got, 0x5a, sizeof got);
            fn(got, in, strides[s], n);
            ref(want, in, strides[s], n);
            for (int64_t i = 0; i < n; ++i) {
              float a, b;
              if (dt == CML_DTYPE_F32) {
                memcpy(&a, got + 4 * i, 4);
                memcpy(&b, want + 4 * i, 4);
              } else {
                uint16_t ha, hb;
                memcpy(&ha, got + 2 * i, 2);
                memcpy(&hb, want + 2 * i, 2);
                a = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(ha) : cml_f16_to_f32(ha);
                b = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(hb) : cml_f16_to_f32(hb);
              }
              if (!same_f32(a, b)) {
                TEST_FAIL_("%s clamp %s: t %d strides %d n %lld: element %lld got %a want %a",
                           kIsas[k].name, cml_dtype_name(dt), t, s, (long long)n, (long long)i,
                           (double)a, (double)b);
              }
            }
            for (size_t q = (size_t)n * es; q < (size_t)n * es + 16; ++q)
              ASSERT_EQ_INT(got[q], 0x5a);
          }
        }
      }
      ++checked;
    }
  }
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

//===--- unary ---===//

typedef struct unary_case_t {
  cml_op_t op;
  double (*ref)(double);  // NULL: must equal the scalar kernel bit for bit
  double max_ulps;
  float lo, hi;  // random input range
} unary_case_t;

static double ref_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }

static const unary_case_t kUnary[] = {
    {CML_OP_NEG, NULL, 0, -100, 100},      {CML_OP_ABS, NULL, 0, -100, 100},
    {CML_OP_SQRT, NULL, 0, 0, 1000},       {CML_OP_RSQRT, NULL, 0, 0, 1000},
    {CML_OP_EXP, exp, 1.5, -110, 90},      {CML_OP_LOG, log, 1.5, 0, 1e6},
    {CML_OP_TANH, tanh, 2.0, -10, 10},     {CML_OP_LOGISTIC, ref_logistic, 3.0, -110, 110},
    {CML_OP_ERF, erf, 2.0, -5, 5},         {CML_OP_EXPM1, expm1, 3.0, -20, 20},
    {CML_OP_LOG1P, log1p, 3.0, -1, 50},    {CML_OP_SIGN, NULL, 0, -3, 3},
    {CML_OP_FLOOR, NULL, 0, -300, 300},    {CML_OP_CEIL, NULL, 0, -300, 300},
    {CML_OP_ROUND, NULL, 0, -300, 300},    {CML_OP_SIN, sin, 2.0, -70000, 70000},
    {CML_OP_COS, cos, 2.0, -70000, 70000},
};

enum { UNARY_N = 1 << 16 };

TEST(unary_matches_reference) {
  static float x[UNARY_N], got[UNARY_N], want[UNARY_N], other[UNARY_N];
  int checked = 0;
  for (size_t c = 0; c < sizeof kUnary / sizeof kUnary[0]; ++c) {
    const unary_case_t* u = &kUnary[c];
    // Edge values, then random values in range, then random bit patterns.
    for (int64_t i = 0; i < UNARY_N; ++i) {
      if (i < EDGE_COUNT) {
        x[i] = kEdges[i];
      } else if (i < UNARY_N / 2) {
        x[i] = rng_uniform(u->lo, u->hi);
      } else {
        x[i] = bits_f32(rng_u32());
      }
    }
    const void* in[1] = {x};
    const int64_t st[1] = {1};
    cmlc_ew_unary_fn(u->op, CML_DTYPE_F32)(want, in, st, UNARY_N);
    bool first = true;
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!kIsas[k].available()) continue;
      cmlc_ew_fn fn = kIsas[k].unary(u->op, CML_DTYPE_F32);
      ASSERT_TRUE(fn != NULL);
      // Odd length: a tail.
      fn(got, in, st, UNARY_N - 3);
      for (int64_t i = 0; i < UNARY_N - 3; ++i) {
        const float g = got[i], w = want[i];
        if (!u->ref) {
          if (!same_f32(g, w)) {
            TEST_FAIL_("%s %s(%a) = %a, scalar %a", kIsas[k].name, cml_op_name(u->op), (double)x[i],
                       (double)g, (double)w);
          }
          continue;
        }
        // Specials (NaN, Inf, zeros) exactly as the scalar path; the rest within max_ulps.
        if (isnan(w) || isnan(g) || isinf(w) || isinf(g) || w == 0.0f || g == 0.0f) {
          const bool tiny = fabs((double)w) < 1e-44 && fabs((double)g) < 1e-44;
          if (!same_f32(g, w) && !(tiny && signbit(g) == signbit(w))) {
            TEST_FAIL_("%s %s(%a) = %a, scalar %a", kIsas[k].name, cml_op_name(u->op), (double)x[i],
                       (double)g, (double)w);
          }
          continue;
        }
        const double e = ulp_error(g, u->ref((double)x[i]));
        if (e > u->max_ulps) {
          TEST_FAIL_("%s %s(%a) = %a: %.2f ulp > %.1f", kIsas[k].name, cml_op_name(u->op),
                     (double)x[i], (double)g, e, u->max_ulps);
        }
      }
      // AVX2 and AVX-512 agree bit for bit.
      if (!first) {
        for (int64_t i = 0; i < UNARY_N - 3; ++i) {
          if (memcmp(&got[i], &other[i], 4) != 0) {
            TEST_FAIL_("%s %s(%a): %a differs from the other ISA's %a", kIsas[k].name,
                       cml_op_name(u->op), (double)x[i], (double)got[i], (double)other[i]);
          }
        }
      }
      memcpy(other, got, sizeof got);
      first = false;
      ++checked;
    }
  }
  if (checked == 0) printf("  (no AVX2/AVX-512 on this CPU: skipped)\n");
}

//===--- a one-node module, run through the group lookup ---===//

typedef struct tnode_t {
  cml_module_t module;
  cml_ir_value_t values[6];
  cml_ir_node_t node;
  uint32_t inputs[4];
  cml_ir_attrs_t attrs;
} tnode_t;

static void tnode_init(tnode_t* t, cml_op_t op, int input_count, const cml_shape_t* in_shapes,
                       const cml_shape_t* out_shape) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < input_count; ++i) {
    t->values[1 + i].shape = in_shapes[i];
    t->inputs[i] = (uint32_t)(1 + i);
  }
  t->values[1 + input_count].shape = *out_shape;
  t->node.op = op;
  t->node.input_count = (uint32_t)input_count;
  t->node.inputs = t->inputs;
  t->node.output_count = 1;
  t->node.first_output = (uint32_t)(1 + input_count);
  t->node.attrs = &t->attrs;
  t->module.node_count = 1;
  t->module.nodes = &t->node;
  t->module.value_count = (uint32_t)(2 + input_count);
  t->module.values = t->values;
  t->module.num_devices = 1;
}

static cmlc_options_t make_options(cmlc_isa_t isa, bool reference, int threads) {
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  o.isa = isa;
  o.reference = reference;
  o.threads = threads;
  o.devices = 1;
  return o;
}

// Runs the node with |options| (scratch allocated as the entry asks) on |pool|.
static cml_status_t tnode_run(tnode_t* t, bool reduce, const cmlc_options_t* options,
                              const void* const* inputs, void* output, cmlc_pool_t* pool) {
  cmlc_kernel_entry_t entry;
  const bool found = reduce
                         ? cmlc_kernels_reduce_lookup(&t->module, &t->node, options, &entry)
                         : cmlc_kernels_elementwise_lookup(&t->module, &t->node, options, &entry);
  if (!found) return cml_status_make(CML_STATUS_UNIMPLEMENTED, "no kernel");
  const cml_shape_t* in_shapes[4];
  for (uint32_t i = 0; i < t->node.input_count; ++i) in_shapes[i] = &t->values[1 + i].shape;
  const cml_shape_t* out_shapes[1] = {&t->values[t->node.first_output].shape};
  void* outputs[1] = {output};
  cmlc_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.module = &t->module;
  args.node = &t->node;
  args.options = options;
  args.input_count = t->node.input_count;
  args.input_shapes = in_shapes;
  args.inputs = inputs;
  args.output_count = 1;
  args.output_shapes = out_shapes;
  args.outputs = outputs;
  args.pool = pool;
  size_t scratch_size = entry.scratch ? entry.scratch(&t->module, &t->node, options) : 0;
  void* scratch = NULL;
  if (scratch_size) {
    scratch = aligned_alloc(64, (scratch_size + 63) & ~(size_t)63);
    if (!scratch) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "scratch");
  }
  args.scratch = scratch;
  args.scratch_size = scratch_size;
  memcpy(args.impl, entry.impl, sizeof args.impl);
  cml_status_t status = entry.run(&args);
  free(scratch);
  return status;
}

//===--- conversions ---===//

TEST(convert_matches_scalar) {
  enum { N = 4099 };
  static uint32_t src[N];
  static unsigned char got[N * 4], want[N * 4];
  for (int i = 0; i < N; ++i) {
    if (i < EDGE_COUNT) {
      memcpy(&src[i], &kEdges[i], 4);
    } else if (i < 200) {
      // NaN payloads (quiet and signaling, both signs) and halfway cases.
      src[i] = (i & 1 ? 0xff800000u : 0x7f800000u) | (uint32_t)(i * 2654435761u & 0x7fffffu);
      if ((src[i] & 0x7fffffu) == 0) src[i] |= 1;
    } else if (i < 400) {
      src[i] = (uint32_t)(0x3f800000u + (uint32_t)i * 0x8000u) | 0x8000u;  // bf16 ties
    } else if (i < 1040) {
      // Int32 one above (or below) a bf16 halfway point beyond 2^24, where rounding through f32
      // first would land on the halfway point and round to even, the wrong way.
      const int j = i - 1000, shift = 17 + (j % 8);
      const int32_t tie = (int32_t)((128u + (uint32_t)j) << shift) + (1 << (shift - 1));
      src[i] = (uint32_t)((j & 1 ? -1 : 1) * (tie + (j & 2 ? -1 : 1)));
    } else if (i < 1400) {
      // Small integers (Int32 inputs: the exact range of f32, and just above it).
      src[i] = (uint32_t)((int32_t)(rng_u32() % (1u << 26)) - (1 << 25));
    } else {
      src[i] = rng_u32();
    }
  }
  static const cml_dtype_t pairs[][2] = {
      {CML_DTYPE_F32, CML_DTYPE_BF16},  {CML_DTYPE_BF16, CML_DTYPE_F32},
      {CML_DTYPE_F32, CML_DTYPE_F16},   {CML_DTYPE_F16, CML_DTYPE_F32},
      {CML_DTYPE_F32, CML_DTYPE_I32},   {CML_DTYPE_I32, CML_DTYPE_F32},
      {CML_DTYPE_BF16, CML_DTYPE_F16},  {CML_DTYPE_F16, CML_DTYPE_BF16},
      {CML_DTYPE_BF16, CML_DTYPE_I32},  {CML_DTYPE_F16, CML_DTYPE_I32},
      {CML_DTYPE_I32, CML_DTYPE_BF16},  {CML_DTYPE_I32, CML_DTYPE_F16},
      {CML_DTYPE_BOOL, CML_DTYPE_F32},  {CML_DTYPE_BOOL, CML_DTYPE_BF16},
      {CML_DTYPE_BOOL, CML_DTYPE_F16},  {CML_DTYPE_F32, CML_DTYPE_BOOL},
      {CML_DTYPE_BF16, CML_DTYPE_BOOL}, {CML_DTYPE_F16, CML_DTYPE_BOOL}};
  const int64_t dims[1] = {N};
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; ++p) {
    const cml_shape_t in = cml_shape_make(pairs[p][0], 1, dims);
    const cml_shape_t out = cml_shape_make(pairs[p][1], 1, dims);
    tnode_t t;
    tnode_init(&t, CML_OP_CONVERT_DTYPE, 1, &in, &out);
    t.attrs.dtype = pairs[p][1];
    const void* inputs[1] = {src};
    const cmlc_options_t ref = make_options(CMLC_ISA_SCALAR, true, 1);
    ASSERT_STATUS_OK(tnode_run(&t, false, &ref, inputs, want, NULL));
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!kIsas[k].available()) continue;
      ASSERT_TRUE(kIsas[k].convert(pairs[p][0], pairs[p][1]) != NULL);
      const cmlc_options_t o = make_options(kIsas[k].isa, false, 1);
      memset(got, 0, sizeof got);
      ASSERT_STATUS_OK(tnode_run(&t, false, &o, inputs, got, NULL));
      const size_t esize = (size_t)cml_dtype_bits(pairs[p][1]) / 8;
      for (int i = 0; i < N; ++i) {
        if (memcmp(got + (size_t)i * esize, want + (size_t)i * esize, esize) != 0) {
          uint32_t g = 0, w = 0;
          memcpy(&g, got + (size_t)i * esize, esize);
          memcpy(&w, want + (size_t)i * esize, esize);
          TEST_FAIL_("%s %s -> %s: element %d (input bits %08x): %x, scalar %x", kIsas[k].name,
                     cml_dtype_name(pairs[p][0]), cml_dtype_name(pairs[p][1]), i, (unsigned)src[i],
                     (unsigned)g, (unsigned)w);
        }
      }
    }
  }
}

//===--- Int32 Div and Rem ---===//

// Every ISA against the scalar kernels: zero divisors, INT32_MIN / -1, signs, random values of
// every size, each operand broadcast or not, every length up to 40 and a long one.
TEST(i32_div_rem_match_scalar) {
  enum { N = 1000 };
  static int32_t a[N], b[N], got[N + 16], want[N + 16];
  static const int32_t edges[] = {0, 1, -1, 2, -2, 7, -7, INT32_MIN, INT32_MAX, INT32_MIN + 1};
  enum { EN = (int)(sizeof edges / sizeof edges[0]) };
  for (int i = 0; i < N; ++i) {
    if (i < EN * EN) {
      a[i] = edges[i / EN];
      b[i] = edges[i % EN];
    } else {
      a[i] = (int32_t)rng_u32() >> (rng_u32() % 31);
      b[i] = (int32_t)rng_u32() >> (rng_u32() % 32);
    }
  }
  static const cml_op_t ops[2] = {CML_OP_DIV, CML_OP_REM};
  for (int o = 0; o < 2; ++o) {
    cmlc_ew_fn ref = cmlc_ew_binary_fn(ops[o], CML_DTYPE_I32);
    ASSERT_TRUE(ref != NULL);
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!kIsas[k].available()) continue;
      cmlc_ew_fn fn = kIsas[k].binary(ops[o], CML_DTYPE_I32);
      ASSERT_TRUE(fn != NULL);
      static const int64_t strides[4][2] = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
      for (int s = 0; s < 4; ++s) {
        for (int start = 0; start < 2 * EN; start += 3) {
          const void* in[2] = {a + start, b + (strides[s][0] ? start : start + 7)};
          for (int64_t n = 0; n <= N - 2 * EN; n += n < 40 ? 1 : 301) {
            memset(got, 0x5a, sizeof got);
            memset(want, 0x5a, sizeof want);
            fn(got, in, strides[s], n);
            ref(want, in, strides[s], n);
            if (memcmp(got, want, sizeof got) != 0) {
              TEST_FAIL_("%s %s strides %d start %d n=%lld", kIsas[k].name, cml_op_name(ops[o]), s,
                         start, (long long)n);
            }
          }
        }
      }
    }
  }
}

//===--- IsFinite ---===//

// IsFinite on f32, bf16 and f16 (bool out): every ISA against the scalar kernel over the edge
// values and random bit patterns (NaNs and infinities of every payload and sign), every length.
TEST(is_finite_matches_scalar) {
  enum { N = 300 };
  static const cml_dtype_t dts[3] = {CML_DTYPE_F32, CML_DTYPE_BF16, CML_DTYPE_F16};
  static uint32_t x[N];
  static uint8_t got[N + 16], want[N + 16];
  for (int di = 0; di < 3; ++di) {
    const cml_dtype_t dt = dts[di];
    for (int i = 0; i < N; ++i) {
      uint32_t bits = rng_u32();
      if (i < EDGE_COUNT) memcpy(&bits, &kEdges[i], 4);
      if (dt == CML_DTYPE_F32) {
        x[i] = bits;
      } else {
        uint16_t h = (uint16_t)bits;
        if (i < EDGE_COUNT) {
          h = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(kEdges[i]) : cml_f32_to_f16(kEdges[i]);
        }
        ((uint16_t*)x)[i] = h;
      }
    }
    cmlc_ew_fn ref = cmlc_ew_unary_fn(CML_OP_IS_FINITE, dt);
    ASSERT_TRUE(ref != NULL);
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!kIsas[k].available()) continue;
      cmlc_ew_fn fn = kIsas[k].unary(CML_OP_IS_FINITE, dt);
      ASSERT_TRUE(fn != NULL);
      const void* in[1] = {x};
      const int64_t st[1] = {1};
      for (int64_t n = 0; n <= N; n += n < 40 ? 1 : 37) {
        memset(got, 0x5a, sizeof got);
        memset(want, 0x5a, sizeof want);
        fn(got, in, st, n);
        ref(want, in, st, n);
        if (memcmp(got, want, sizeof got) != 0) {
          TEST_FAIL_("%s IsFinite %s n=%lld", kIsas[k].name, cml_dtype_name(dt), (long long)n);
        }
      }
    }
  }
}

//===--- Where ---===//

TEST(where_matches_scalar) {
  enum { N = 77 };
  uint8_t cond[N];
  float t_[N], f_[N], got[N], want[N];
  for (int i = 0; i < N; ++i) {
    cond[i] = (uint8_t)(rng_u32() % 3 == 0 ? 0 : (rng_u32() & 0xff) | 1);
    t_[i] = (float)i;
    f_[i] = -(float)i;
  }
  const void* in[3] = {cond, t_, f_};
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!kIsas[k].available()) continue;
    cmlc_ew_fn fn = kIsas[k].where(4);
    ASSERT_TRUE(fn != NULL);
    for (int s = 0; s < 8; ++s) {
      const int64_t st[3] = {s & 1, (s >> 1) & 1, (s >> 2) & 1};
      for (int64_t n = 0; n <= N; n += (n < 40 ? 1 : 37)) {
        fn(got, in, st, n);
        cmlc_ew_where_fn(4)(want, in, st, n);
        for (int64_t i = 0; i < n; ++i) {
          if (!same_f32(got[i], want[i])) {
            TEST_FAIL_("%s where strides %d n=%lld: element %lld", kIsas[k].name, s, (long long)n,
                       (long long)i);
          }
        }
      }
    }
    // 2-byte elements (bf16, f16, i16, u16): the bits selected, nothing written past n.
    uint16_t t16[N], f16[N], got16[N + 8], want16[N + 8];
    for (int i = 0; i < N; ++i) {
      t16[i] = (uint16_t)(0x8001u + (unsigned)i * 771u);
      f16[i] = (uint16_t)(0x7C01u ^ (unsigned)i * 97u);
    }
    const void* in16[3] = {cond, t16, f16};
    cmlc_ew_fn fn16 = kIsas[k].where(2);
    ASSERT_TRUE(fn16 != NULL);
    for (int s = 0; s < 8; ++s) {
      const int64_t st[3] = {s & 1, (s >> 1) & 1, (s >> 2) & 1};
      for (int64_t n = 0; n <= N; n += (n < 40 ? 1 : 37)) {
        memset(got16, 0x5a, sizeof got16);
        memset(want16, 0x5a, sizeof want16);
        fn16(got16, in16, st, n);
        cmlc_ew_where_fn(2)(want16, in16, st, n);
        if (memcmp(got16, want16, sizeof got16) != 0) {
          TEST_FAIL_("%s where (2 bytes) strides %d n=%lld", kIsas[k].name, s, (long long)n);
        }
      }
    }
  }
}

// bf16 / f16 compares: every ISA against the scalar kernels over pairs of the edge values
// (NaN, infinities, signed zeros, values equal after rounding), each operand broadcast or not.
TEST(half_compares_match_scalar) {
  enum { N = EDGE_COUNT * EDGE_COUNT };
  static const cml_op_t ops[6] = {CML_OP_EQUAL,        CML_OP_NOT_EQUAL,
                                  CML_OP_LESS_THAN,    CML_OP_LESS_OR_EQUAL,
                                  CML_OP_GREATER_THAN, CML_OP_GREATER_OR_EQUAL};
  static const cml_dtype_t dts[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  static uint16_t a[N], b[N];
  static uint8_t got[N + 16], want[N + 16];
  for (int di = 0; di < 2; ++di) {
    const bool bf = dts[di] == CML_DTYPE_BF16;
    for (int i = 0; i < EDGE_COUNT; ++i) {
      for (int j = 0; j < EDGE_COUNT; ++j) {
        a[i * EDGE_COUNT + j] = bf ? cml_f32_to_bf16(kEdges[i]) : cml_f32_to_f16(kEdges[i]);
        b[i * EDGE_COUNT + j] = bf ? cml_f32_to_bf16(kEdges[j]) : cml_f32_to_f16(kEdges[j]);
      }
    }
    for (int k = 0; k < ISA_COUNT; ++k) {
      if (!kIsas[k].available()) continue;
      for (int o = 0; o < 6; ++o) {
        cmlc_ew_fn fn = kIsas[k].binary(ops[o], dts[di]);
        cmlc_ew_fn ref = cmlc_ew_binary_fn(ops[o], dts[di]);
        ASSERT_TRUE(fn != NULL && ref != NULL);
        static const int64_t strides[4][2] = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
        for (int s = 0; s < 4; ++s) {
          for (int64_t n = 0; n <= N; n += n < 40 ? 1 : 97) {
            const void* in[2] = {strides[s][0] ? a : a + 5, strides[s][1] ? b : b + 9};
            memset(got, 0x5a, sizeof got);
            memset(want, 0x5a, sizeof want);
            fn(got, in, strides[s], n);
            ref(want, in, strides[s], n);
            if (memcmp(got, want, sizeof got) != 0) {
              TEST_FAIL_("%s %s %s strides %d n=%lld", kIsas[k].name, cml_op_name(ops[o]),
                         cml_dtype_name(dts[di]), s, (long long)n);
            }
          }
        }
      }
    }
  }
}

//===--- reductions ---===//

TEST(reduce_kernels) {
  enum { N = 20011 };
  static float x[N];
  for (int i = 0; i < N; ++i) x[i] = rng_uniform(-8, 8);
  float prev[3] = {0, 0, 0};
  bool first = true;
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!kIsas[k].available()) continue;
    const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
    for (int o = 0; o < 3; ++o) {
      cmlc_rd_f32_fn fn = kIsas[k].reduce(ops[o]);
      ASSERT_TRUE(fn != NULL);
      for (int64_t n = 0; n <= 70; ++n) {  // tails; independent loops as references
        double sum = 0, bound = 0;
        float mx = -INFINITY, mn = INFINITY;
        for (int64_t i = 0; i < n; ++i) {
          sum += x[i];
          bound += fabs(x[i]);
          mx = x[i] > mx ? x[i] : mx;
          mn = x[i] < mn ? x[i] : mn;
        }
        const float r = fn(x, n);
        if (o == 0) ASSERT_NEAR(r, sum, 1e-6 * bound + 1e-30);
        if (o == 1) ASSERT_EQ_DBL(r, mx);
        if (o == 2) ASSERT_EQ_DBL(r, mn);
      }
      const float r = fn(x, N);
      if (!first) ASSERT_TRUE(same_f32(r, prev[o]));  // AVX2 == AVX-512
      prev[o] = r;
    }
    // NaN anywhere wins; -0 / +0 order.
    float y[40];
    for (int i = 0; i < 40; ++i) y[i] = (float)i;
    y[37] = NAN;
    ASSERT_TRUE(isnan(kIsas[k].reduce(CML_OP_REDUCE_MAX)(y, 40)));
    ASSERT_TRUE(isnan(kIsas[k].reduce(CML_OP_REDUCE_MIN)(y, 40)));
    ASSERT_TRUE(isnan(kIsas[k].reduce(CML_OP_REDUCE_SUM)(y, 40)));
    const float zeros[3] = {-0.0f, 0.0f, -0.0f};
    ASSERT_TRUE(same_f32(kIsas[k].reduce(CML_OP_REDUCE_MAX)(zeros, 3), 0.0f));
    ASSERT_TRUE(same_f32(kIsas[k].reduce(CML_OP_REDUCE_MIN)(zeros + 1, 2), -0.0f));
    ASSERT_TRUE(same_f32(kIsas[k].reduce(CML_OP_REDUCE_MAX)(zeros, 0), -INFINITY));
    first = false;
  }
}

// A full reduction big enough to be blocked gives the same bits on 1, 2 and 3 threads, for
// the reference kernels and the SIMD ones, and is close to a double-precision sum.
TEST(blocked_full_reduction_thread_independent) {
  enum { N = 300001 };
  float* x = (float*)malloc(N * sizeof(float));
  ASSERT_TRUE(x != NULL);
  double sum = 0, bound = 0;
  float mx = -INFINITY, mn = INFINITY;
  for (int i = 0; i < N; ++i) {
    x[i] = rng_uniform(-1, 3);
    sum += x[i];
    bound += fabs(x[i]);
    mx = x[i] > mx ? x[i] : mx;
    mn = x[i] < mn ? x[i] : mn;
  }
  const int64_t flat[1] = {N};
  cml_shape_t in = cml_shape_make(CML_DTYPE_F32, 1, flat);
  cml_shape_t out = cml_shape_scalar(CML_DTYPE_F32);
  const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  for (int o = 0; o < 3; ++o) {
    tnode_t t;
    tnode_init(&t, ops[o], 1, &in, &out);
    t.attrs.axis_count = 1;
    t.attrs.axes[0] = 0;
    for (int mode = 0; mode < 3; ++mode) {
      const cmlc_isa_t isa = mode == 0 ? CMLC_ISA_SCALAR : kIsas[mode - 1].isa;
      if (mode > 0 && !kIsas[mode - 1].available()) continue;
      float results[3];
      for (int threads = 1; threads <= 3; ++threads) {
        cmlc_pool_t* pool = NULL;
        ASSERT_STATUS_OK(cmlc_pool_create(threads, cml_allocator_system(), &pool));
        const cmlc_options_t opt = make_options(isa, mode == 0, threads);
        const void* inputs[1] = {x};
        cml_status_t st = tnode_run(&t, true, &opt, inputs, &results[threads - 1], pool);
        cmlc_pool_destroy(pool);
        ASSERT_STATUS_OK(st);
      }
      ASSERT_TRUE(same_f32(results[0], results[1]) && same_f32(results[0], results[2]));
      if (o == 0) ASSERT_NEAR(results[0], sum, 1e-6 * bound);
      if (o == 1) ASSERT_EQ_DBL(results[0], mx);
      if (o == 2) ASSERT_EQ_DBL(results[0], mn);
    }
  }
  free(x);
}

TEST(reference_options_pick_no_simd) {
  const cmlc_options_t ref = make_options(CMLC_ISA_AVX512, true, 1);
  const cmlc_options_t scalar = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_TRUE(cmlc_ew_simd_unary_fn(&ref, CML_OP_EXP, CML_DTYPE_F32) == NULL);
  ASSERT_TRUE(cmlc_ew_simd_binary_fn(&scalar, CML_OP_ADD, CML_DTYPE_F32) == NULL);
  ASSERT_TRUE(cmlc_ew_simd_convert_fn(NULL, CML_DTYPE_F32, CML_DTYPE_BF16) == NULL);
  ASSERT_TRUE(cmlc_rd_simd_f32_fn(&ref, CML_OP_REDUCE_SUM) == NULL);
  const cmlc_options_t avx2 = make_options(CMLC_ISA_AVX2, false, 1);
  if (have_avx2()) {
    ASSERT_TRUE(cmlc_ew_simd_unary_fn(&avx2, CML_OP_EXP, CML_DTYPE_F32) ==
                cmlc_ew_avx2_unary_fn(CML_OP_EXP, CML_DTYPE_F32));
  }
  ASSERT_TRUE(cmlc_ew_simd_unary_fn(&avx2, CML_OP_SIGN, CML_DTYPE_F64) == NULL);
  ASSERT_TRUE(cmlc_ew_simd_unary_fn(&ref, CML_OP_ROUND, CML_DTYPE_F64) == NULL);
  ASSERT_TRUE(cmlc_ew_simd_unary_fn(&ref, CML_OP_EXP, CML_DTYPE_F64) == NULL);
}

// 32- and 64-bit integer kernels on SIMD ISAs (the scalar loops compiled for AVX2): the scalar
// kernels' bits for every binary, comparison and Clamp op and Pow, on edge values (0, +-1, the
// type's extremes, shift counts and exponents 0..70, negative and huge ones) and random ones, every
// stride pattern, every length up to 40 and a long one.
TEST(int_kernels_match_scalar) {
  static const cml_op_t kOps[] = {CML_OP_ADD,
                                  CML_OP_SUB,
                                  CML_OP_MUL,
                                  CML_OP_SHIFT_LEFT,
                                  CML_OP_SHIFT_RIGHT_LOGICAL,
                                  CML_OP_SHIFT_RIGHT_ARITHMETIC,
                                  CML_OP_MAX,
                                  CML_OP_MIN,
                                  CML_OP_BITWISE_AND,
                                  CML_OP_BITWISE_OR,
                                  CML_OP_BITWISE_XOR,
                                  CML_OP_EQUAL,
                                  CML_OP_NOT_EQUAL,
                                  CML_OP_LESS_THAN,
                                  CML_OP_LESS_OR_EQUAL,
                                  CML_OP_GREATER_THAN,
                                  CML_OP_GREATER_OR_EQUAL,
                                  CML_OP_CLAMP,
                                  CML_OP_POW};
  static const cml_dtype_t kTypes[] = {CML_DTYPE_I32, CML_DTYPE_U32, CML_DTYPE_I64, CML_DTYPE_U64};
  enum { N = 700 };
  static uint64_t a[N], bb[N], c[N], got[N + 8], want[N + 8];
  static const uint64_t kEdge[] = {0,
                                   1,
                                   2,
                                   ~0ull,
                                   0x7fffffffull,
                                   0x80000000ull,
                                   0xffffffffull,
                                   0x7fffffffffffffffull,
                                   0x8000000000000000ull,
                                   31,
                                   32,
                                   33,
                                   63,
                                   64,
                                   70};
  const int edges = (int)(sizeof kEdge / sizeof kEdge[0]);
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < N; ++i) {
    h ^= h << 13, h ^= h >> 7, h ^= h << 17;
    a[i] = i < edges * edges ? kEdge[i % edges] : h;
    bb[i] = i < edges * edges ? kEdge[i / edges] : (i % 3 == 0 ? h % 72 : h * 31);
    c[i] = h ^ (h >> 29);
  }
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
      const size_t es = cmlc_dtype_size(kTypes[t]);
      // 64-bit patterns packed into the type's width (the low 4 bytes of each for 32-bit).
      static uint8_t pa[N * 8], pb[N * 8], pc[N * 8];
      for (int i = 0; i < N; ++i) {
        memcpy(pa + i * es, &a[i], es), memcpy(pb + i * es, &bb[i], es);
        memcpy(pc + i * es, &c[i], es);
      }
      for (size_t k = 0; k < sizeof kOps / sizeof kOps[0]; ++k) {
        cmlc_ew_fn fn = cmlc_ew_simd_binary_fn(&o, kOps[k], kTypes[t]);
        cmlc_ew_fn ref = cmlc_ew_binary_fn(kOps[k], kTypes[t]);
        ASSERT_TRUE(fn != NULL && ref != NULL && fn != ref);
        const bool clamp = kOps[k] == CML_OP_CLAMP;
        const size_t os = cml_op_kind(kOps[k]) == CML_OPK_COMPARE ? 1 : es;
        for (int s = 0; s < (clamp ? 8 : 4); ++s) {
          const int64_t st[3] = {s & 1, (s >> 1) & 1, (s >> 2) & 1};
          for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
            const void* in[3] = {pa, pb, pc};
            if (clamp) {  // (lo, x, hi): bounds from b and c, x from a
              in[0] = pb, in[1] = pa, in[2] = pc;
            }
            memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
            fn(got, in, st, n), ref(want, in, st, n);
            if (memcmp(got, want, (size_t)n * os + 8) != 0) {
              TEST_FAIL_("isa %d %s %s strides %d length %lld: differs from the scalar kernel", isa,
                         cml_op_name(kOps[k]), cml_dtype_name(kTypes[t]), s, (long long)n);
              return;
            }
          }
        }
      }
    }
  }
}

// 64-bit Div and Rem on SIMD ISAs: shifts for a divisor broadcast from a power of two (1, 2,
// 64, 4096, 2^62, and 2^63 unsigned), the scalar rules for every other divisor (0, -1, 3, -4,
// INT64_MIN, per-element divisors): the scalar kernels' bits on edge dividends (0, +-1, -5,
// the extremes) and random ones, every stride pattern, lengths 0..40 and a long one.
TEST(i64_u64_div_rem_match_scalar) {
  enum { N = 600 };
  static uint64_t a[N], bb[N], got[N + 8], want[N + 8];
  static const uint64_t kDividends[] = {
      0,    1,    ~0ull,           (uint64_t)-5,   0x8000000000000000ull, 0x7fffffffffffffffull,
      4095, 4096, (uint64_t)-4096, (uint64_t)-4097};
  static const uint64_t kDivisors[] = {
      1, 2, 64, 4096, 1ull << 62, 1ull << 63, 0, ~0ull, 3, (uint64_t)-4, 0x8000000000000000ull, 7};
  uint64_t h = 0x243f6a8885a308d3ull;
  const int ne = (int)(sizeof kDividends / sizeof kDividends[0]);
  for (int i = 0; i < N; ++i) {
    h ^= h << 13, h ^= h >> 7, h ^= h << 17;
    a[i] = i < ne ? kDividends[i] : (i % 2 ? h : h >> (h % 60));
    bb[i] = kDivisors[h % (sizeof kDivisors / sizeof kDivisors[0])] + (i % 5 == 0 ? h % 9 : 0);
  }
  static const cml_dtype_t kTypes[] = {CML_DTYPE_I64, CML_DTYPE_U64};
  static const cml_op_t kOps[] = {CML_OP_DIV, CML_OP_REM};
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (int t = 0; t < 2; ++t) {
      for (int k = 0; k < 2; ++k) {
        cmlc_ew_fn fn = cmlc_ew_simd_binary_fn(&o, kOps[k], kTypes[t]);
        cmlc_ew_fn ref = cmlc_ew_binary_fn(kOps[k], kTypes[t]);
        ASSERT_TRUE(fn != NULL && ref != NULL && fn != ref);
        for (size_t d = 0; d < sizeof kDivisors / sizeof kDivisors[0]; ++d) {
          for (int s = 0; s < 4; ++s) {
            const int64_t st[2] = {s & 1, (s >> 1) & 1};
            // Broadcast divisors are each of kDivisors in turn; per-element ones are bb.
            const void* in[2] = {a, st[1] ? (const void*)bb : (const void*)&kDivisors[d]};
            if (st[1] && d > 0) continue;
            for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
              memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
              fn(got, in, st, n), ref(want, in, st, n);
              if (memcmp(got, want, (size_t)n * 8 + 8) != 0) {
                TEST_FAIL_("isa %d %s %s divisor %s%llx strides %d length %lld: differs", isa,
                           cml_op_name(kOps[k]), cml_dtype_name(kTypes[t]),
                           st[1] ? "per element, first " : "", (unsigned long long)kDivisors[d], s,
                           (long long)n);
                return;
              }
            }
          }
        }
      }
    }
  }
}

// f64 arithmetic, Max / Min and comparisons on SIMD ISAs (the scalar loops compiled for AVX2):
// the scalar kernels' results on every pair of edge values (signed zeros, subnormals, the
// extremes, infinities, NaNs of both signs) and on random ones, every stride pattern, every
// length up to 40 and a long one; Max / Min give the exact operand (-0 < +0, NaN first).
TEST(f64_kernels_match_scalar) {
  static const cml_op_t kOps[] = {
      CML_OP_ADD,       CML_OP_SUB,           CML_OP_MUL,          CML_OP_DIV,
      CML_OP_MAX,       CML_OP_MIN,           CML_OP_EQUAL,        CML_OP_NOT_EQUAL,
      CML_OP_LESS_THAN, CML_OP_LESS_OR_EQUAL, CML_OP_GREATER_THAN, CML_OP_GREATER_OR_EQUAL};
  enum { N = 700 };
  static double a[N], b[N], got[N + 1], want[N + 1];
  static const uint64_t kEdge[] = {0x0000000000000000ull,   // +0
                                   0x8000000000000000ull,   // -0
                                   0x3ff0000000000000ull,   // 1
                                   0xbff0000000000000ull,   // -1
                                   0x0000000000000001ull,   // the smallest subnormal
                                   0x800fffffffffffffull,   // the largest negative subnormal
                                   0x7fefffffffffffffull,   // DBL_MAX
                                   0x7ff0000000000000ull,   // +inf
                                   0xfff0000000000000ull,   // -inf
                                   0x7ff8000000000000ull,   // NaN
                                   0xfff8000000000123ull,   // -NaN with a payload
                                   0x3fd5555555555555ull};  // 1/3
  const int edges = (int)(sizeof kEdge / sizeof kEdge[0]);
  for (int i = 0; i < N; ++i) {
    if (i < edges * edges) {
      memcpy(&a[i], &kEdge[i % edges], sizeof a[i]);
      memcpy(&b[i], &kEdge[i / edges], sizeof b[i]);
    } else {
      a[i] = (double)rng_uniform(-4.0f, 4.0f) / 3.0;
      b[i] = i % 5 == 0 ? a[i] : (double)rng_uniform(-4.0f, 4.0f) / 7.0;
    }
  }
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (size_t k = 0; k < sizeof kOps / sizeof kOps[0]; ++k) {
      cmlc_ew_fn fn = cmlc_ew_simd_binary_fn(&o, kOps[k], CML_DTYPE_F64);
      cmlc_ew_fn ref = cmlc_ew_binary_fn(kOps[k], CML_DTYPE_F64);
      ASSERT_TRUE(fn != NULL && ref != NULL && fn != ref);
      const bool cmp = is_compare(kOps[k]);
      const bool exact = kOps[k] == CML_OP_MAX || kOps[k] == CML_OP_MIN;
      for (int s = 0; s < 4; ++s) {
        const int64_t st[2] = {s & 1, (s >> 1) & 1};
        for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
          const void* in[2] = {a, b};
          memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
          fn(got, in, st, n), ref(want, in, st, n);
          bool same = true;
          if (cmp || exact) {
            // Bytes (0/1), or the operand chosen: bit for bit, and nothing past n written.
            same = memcmp(got, want, (size_t)n * (cmp ? 1 : 8) + 8) == 0;
          } else {
            for (int64_t i = 0; i < n && same; ++i) {
              same = memcmp(&got[i], &want[i], 8) == 0 || (isnan(got[i]) && isnan(want[i]));
            }
            same = same && memcmp(&got[n], &want[n], 8) == 0;
          }
          if (!same) {
            TEST_FAIL_("isa %d %s f64 strides %d length %lld: differs from the scalar kernel", isa,
                       cml_op_name(kOps[k]), s, (long long)n);
            return;
          }
        }
      }
    }
  }
}

// f64 Floor, Ceil, Round, Sqrt and Rsqrt on SIMD ISAs (the rounding and square-root
// instructions): the scalar kernels' bits, NaNs included (a signaling NaN comes back quieted
// with its payload and sign, a negative square root as the default NaN), on edge values (ties,
// the last fractional magnitudes, signed zeros, subnormals, infinities) and random ones, every
// length up to 40 and a long one, and a broadcast (stride 0) input; nothing written past n.
TEST(f64_rounding_and_sqrt_match_scalar) {
  static const cml_op_t kOps[] = {CML_OP_FLOOR, CML_OP_CEIL, CML_OP_ROUND, CML_OP_SQRT,
                                  CML_OP_RSQRT};
  static const uint64_t kEdge[] = {
      0x0000000000000000ull, 0x8000000000000000ull,  // +-0
      0x3fe0000000000000ull, 0xbfe0000000000000ull,  // +-0.5
      0x3ff8000000000000ull, 0xc004000000000000ull,  // 1.5, -2.5
      0x4330000000000001ull, 0x432fffffffffffffull,  // 2^52 + 1, 2^52 - 0.5
      0x0000000000000001ull, 0x800fffffffffffffull,  // subnormals
      0x7ff0000000000000ull, 0xfff0000000000000ull,  // +-inf
      0x7ff8000000000000ull, 0xfff8000000000123ull,  // NaNs
      0x7ff0000000000001ull, 0xfff4000000000abcull,  // signaling NaNs
      0xbff0000000000000ull, 0x7fefffffffffffffull,  // -1, DBL_MAX
  };
  enum { N = 500 };
  static double x[N], got[N + 1], want[N + 1];
  const int edges = (int)(sizeof kEdge / sizeof kEdge[0]);
  for (int i = 0; i < N; ++i) {
    if (i < edges) {
      memcpy(&x[i], &kEdge[i], sizeof x[i]);
    } else {
      x[i] = (double)rng_uniform(-50.0f, 50.0f) * (i % 3 ? 1.0 : 1e-3);
    }
  }
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (size_t k = 0; k < sizeof kOps / sizeof kOps[0]; ++k) {
      cmlc_ew_fn fn = cmlc_ew_simd_unary_fn(&o, kOps[k], CML_DTYPE_F64);
      cmlc_ew_fn ref = cmlc_ew_unary_fn(kOps[k], CML_DTYPE_F64);
      ASSERT_TRUE(fn != NULL && ref != NULL && fn != ref);
      for (int s = 0; s < 2; ++s) {
        const int64_t st[1] = {s};
        for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
          for (int64_t first = 0; first < (s ? 1 : edges); ++first) {
            const void* in[1] = {x + first};
            memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
            // (Stride 0, a broadcast input: every output is the scalar kernel's result for
            // x[first].)
            fn(got, in, st, n);
            if (s == 0) {
              ref(want, in, (const int64_t[]){1}, 1);
              for (int64_t i = 1; i < n; ++i) want[i] = want[0];
              if (n == 0) want[0] = got[0];
            } else {
              ref(want, in, st, n);
            }
            if (memcmp(got, want, (size_t)(n + 1) * sizeof(double)) != 0) {
              TEST_FAIL_(
                  "isa %d %s f64 stride %d length %lld first %lld: differs from the "
                  "scalar kernel",
                  isa, cml_op_name(kOps[k]), s, (long long)n, (long long)first);
              return;
            }
          }
        }
      }
    }
  }
}

// f32 Pow on SIMD ISAs: by a constant 2, the correctly rounded square (specials included: NaN,
// infinities, -0, overflow to infinity, subnormal results); any other exponent, or exponents
// that vary, powf's bits as the scalar kernel gives them.
TEST(pow_f32_square) {
  enum { N = 300 };
  static float x[N], y[N], got[N + 8], want[N + 8];
  static const float kSpecial[] = {0.0f,  -0.0f,  NAN,    INFINITY, -INFINITY,
                                   1e20f, -3e19f, 1e-23f, -1.5f,    3.0f};
  for (int i = 0; i < N; ++i) {
    x[i] = i < 10 ? kSpecial[i] : rng_uniform(-100.0f, 100.0f);
    y[i] = rng_uniform(-3.0f, 3.0f);
  }
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    cmlc_ew_fn fn = cmlc_ew_simd_binary_fn(&o, CML_OP_POW, CML_DTYPE_F32);
    cmlc_ew_fn ref = cmlc_ew_binary_fn(CML_OP_POW, CML_DTYPE_F32);
    ASSERT_TRUE(fn != NULL && ref != NULL);
    const float exps[3] = {2.0f, 0.75f, -2.0f};
    for (int e = 0; e < 3; ++e) {
      for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
        const void* in[2] = {x, &exps[e]};
        const int64_t st[2] = {1, 0};
        memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
        fn(got, in, st, n), ref(want, in, st, n);
        for (int64_t i = 0; i < n + 8; ++i) {
          const float w = e == 0 && i < n ? (float)((double)x[i] * (double)x[i]) : want[i];
          if (!same_f32(got[i], w)) {
            TEST_FAIL_("isa %d pow(%a, %g): %a, want %a", isa, (double)x[i < n ? i : 0],
                       (double)exps[e], (double)got[i], (double)w);
            return;
          }
        }
      }
    }
    // Varying exponents and a scalar base: powf's bits.
    const void* in[2] = {x, y};
    const int64_t st[2] = {1, 1};
    fn(got, in, st, N), ref(want, in, st, N);
    for (int i = 0; i < N; ++i) ASSERT_TRUE(same_f32(got[i], want[i]));
    const float base = 2.0f;
    const void* in2[2] = {&base, y};
    const int64_t st2[2] = {0, 1};
    fn(got, in2, st2, N), ref(want, in2, st2, N);
    for (int i = 0; i < N; ++i) ASSERT_TRUE(same_f32(got[i], want[i]));
  }
}

// BitCount and CountLeadingZeros of every integer dtype on SIMD ISAs (popcnt / lzcnt): the
// scalar kernels' values, for zero, -1, the extremes, single bits and random values, a
// broadcast input, every tail.
TEST(bit_count_and_clz_match_scalar) {
  static const cml_dtype_t kTypes[] = {CML_DTYPE_I8,  CML_DTYPE_U8,  CML_DTYPE_I16, CML_DTYPE_U16,
                                       CML_DTYPE_I32, CML_DTYPE_U32, CML_DTYPE_I64, CML_DTYPE_U64};
  static const cml_op_t kOps[] = {CML_OP_BIT_COUNT, CML_OP_CLZ};
  enum { N = 300 };
  static uint64_t x[N], got[N + 8], want[N + 8];
  uint64_t r = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < N; ++i) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    x[i] = i == 0   ? 0
           : i == 1 ? ~0ull
           : i < 66 ? 1ull << (i - 2)
           : i < 70 ? 0x8000000000000000ull >> (i - 66) * 8
                    : r >> (r & 63);
  }
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
      const size_t es = (size_t)cml_dtype_bits(kTypes[t]) / 8;
      // The values packed at the dtype's width (their low bytes).
      static uint8_t packed[N * 8];
      for (int i = 0; i < N; ++i) memcpy(packed + (size_t)i * es, &x[i], es);
      for (size_t k = 0; k < 2; ++k) {
        cmlc_ew_fn fn = cmlc_ew_simd_unary_fn(&o, kOps[k], kTypes[t]);
        cmlc_ew_fn ref = cmlc_ew_unary_fn(kOps[k], kTypes[t]);
        ASSERT_TRUE(fn != NULL && ref != NULL && fn != ref);
        for (int s = 0; s < 2; ++s) {
          for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
            const int64_t st[1] = {s};
            memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
            fn(got, (const void*[]){packed + (s ? 0 : 3 * es)}, st, n);
            if (s) {
              ref(want, (const void*[]){packed}, st, n);
            } else {  // a broadcast input: every output is the scalar kernel's for that value
              ref(want, (const void*[]){packed + 3 * es}, (const int64_t[]){1}, n ? 1 : 0);
              for (int64_t i = 1; i < n; ++i) memcpy((char*)want + i * es, want, es);
            }
            if (memcmp(got, want, sizeof got) != 0) {
              TEST_FAIL_("isa %d %s %s stride %d length %lld: differs from the scalar kernel", isa,
                         cml_op_name(kOps[k]), cml_dtype_name(kTypes[t]), s, (long long)n);
              return;
            }
          }
        }
      }
    }
  }
}

// Distance in units in the last place between two finite floats of the same sign (or zeros).
static int64_t ulp_distance_f32(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return ia > ib ? (int64_t)ia - ib : (int64_t)ib - ia;
}

// Pow by a constant exponent on SIMD ISAs, f32 and f64, against libm's pow in double (rounded
// to f32 for f32: the scalar kernel's value): exponents 0, 1, 2, 0.5 and -1 (f64 also) must be
// the same value bit for bit (1, x, the correctly rounded square, square root and inverse; the
// IEEE specials: pow(-0, 0.5) = +0, pow(-inf, 0.5) = +inf, pow(NaN, 0) = 1); -0.5, 3..8 and
// -2..-8 (f32, in double) and 3 (f64, one rounding with fma) within 1 ulp, infinities, zeros
// (with their signs) and NaNs as pow gives them. Inputs: zeros, infinities, NaNs, subnormals,
// the largest values, and values whose powers overflow or underflow; every tail length, and a
// broadcast base.
TEST(pow_constant_exponents) {
  enum { N = 400 };
  static const double kExps[] = {0.0, 1.0, 2.0, 0.5,  -1.0, -0.5, 3.0, 4.0,
                                 5.0, 7.0, 8.0, -2.0, -3.0, -8.0, 6.0, 2.5};
  static const double kSpecial[] = {
      0.0, -0.0, INFINITY, -INFINITY, NAN,   -NAN, 1e-40,  -1e-45,  3e38,  -3.4e38, 1e-6,  -1e-7,
      1e5, -1e6, 1.0,      -1.0,      1e-20, 7e12, 1e-300, -1e-310, 1e300, 1.5e154, -2e102};
  static float xf[N], gotf[N + 8];
  static double xd[N], gotd[N + 8];
  const int nspecial = (int)(sizeof kSpecial / sizeof kSpecial[0]);
  for (int i = 0; i < N; ++i) {
    const double r = (double)rng_uniform(-8.0f, 8.0f) * (i % 4 == 0   ? 1e-3
                                                         : i % 4 == 1 ? 40.0
                                                                      : 1.0);
    xd[i] = i < nspecial ? kSpecial[i] : r;
    xf[i] = (float)xd[i];
  }
  // f64 cubes that are not pow's value: one rounding (fma) almost never differs from pow's
  // (x * x * x, two roundings, differs for about a fifth of the values).
  int64_t cube_inexact = 0, cubes = 0;
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    cmlc_ew_fn f32 = cmlc_ew_simd_binary_fn(&o, CML_OP_POW, CML_DTYPE_F32);
    cmlc_ew_fn f64 = cmlc_ew_simd_binary_fn(&o, CML_OP_POW, CML_DTYPE_F64);
    cmlc_ew_fn ref64 = cmlc_ew_binary_fn(CML_OP_POW, CML_DTYPE_F64);
    ASSERT_TRUE(f32 != NULL && f64 != NULL && f64 != ref64);
    for (size_t k = 0; k < sizeof kExps / sizeof kExps[0]; ++k) {
      const double e = kExps[k];
      const float ef = (float)e;
      const bool exact = e == 0.0 || e == 1.0 || e == 2.0 || e == 0.5 || e == -1.0;
      for (int s = 0; s < 2; ++s) {
        for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
          const int64_t st[2] = {s, 0};
          memset(gotf, 0x5a, sizeof gotf), memset(gotd, 0x5a, sizeof gotd);
          f32(gotf, (const void*[]){xf, &ef}, st, n);
          f64(gotd, (const void*[]){xd, &e}, st, n);
          for (int64_t i = 0; i < n + 8; ++i) {
            const int64_t j = s ? i : 0;
            if (i >= n) {  // past the end: untouched
              ASSERT_TRUE(memcmp(&gotf[i], &(uint32_t){0x5a5a5a5au}, 4) == 0);
              continue;
            }
            const float wf = (float)pow((double)xf[j], e);
            const double wd = pow(xd[j], e);
            const float gf = gotf[i];
            const double gd = gotd[i];
            bool ok_f = isnan(wf)                            ? isnan(gf)
                        : (exact || isinf(wf) || wf == 0.0f) ? same_f32(gf, wf)
                                                             : ulp_distance_f32(gf, wf) <= 1;
            if (!isnan(wf) && !exact && !isinf(wf) && wf != 0.0f)
              ok_f = ok_f && (signbit(gf) == signbit(wf)) && !isinf(gf);
            const bool exact_d = exact || e != 3.0;  // f64 runs pow for the others
            cubes += !exact_d;
            bool ok_d = isnan(wd)                             ? isnan(gd)
                        : (exact_d || isinf(wd) || wd == 0.0) ? memcmp(&gd, &wd, sizeof wd) == 0
                                                              : fabs(gd - wd) <= fabs(wd) * 0x1p-52;
            if (!exact_d && !isnan(wd) && memcmp(&gd, &wd, sizeof wd) != 0) ++cube_inexact;
            if (!ok_f || !ok_d) {
              TEST_FAIL_("isa %d pow(x, %g) stride %d, x = %a: f32 %a (want %a), f64 %a (want %a)",
                         isa, e, s, xd[j], (double)gf, (double)wf, gd, wd);
              return;
            }
          }
        }
      }
    }
  }
  ASSERT_TRUE(cube_inexact * 100 <= cubes);
}

// f64 transcendental functions from libmvec on SIMD ISAs: within 4 ulp of libm (as glibc
// documents them), NaN and infinities as libm gives them, a stride-0 input as the same value
// inside an array; every length up to 40 (the tails) and a long run. On glibc 2.35 and later every
// function is there; before, those missing return NULL and the scalar kernel runs.
static double ulp_error_f64(double got, double want) {
  if (got == want) return 0.0;
  int e;
  frexp(want, &e);
  const double ulp = want == 0.0 ? 0x1p-1074 : ldexp(1.0, e - 53);
  return fabs(got - want) / (ulp > 0x1p-1074 ? ulp : 0x1p-1074);
}

TEST(f64_libmvec_kernels) {
  static const struct {
    cml_op_t op;
    double (*ref)(double);
    double lo, hi;
  } kFns[] = {
      {CML_OP_EXP, exp, -745.0, 709.0},   {CML_OP_LOG, log, 0.0, 1e300},
      {CML_OP_EXPM1, expm1, -40.0, 40.0}, {CML_OP_LOG1P, log1p, -1.0, 1e10},
      {CML_OP_TANH, tanh, -30.0, 30.0},   {CML_OP_SIN, sin, -1e4, 1e4},
      {CML_OP_COS, cos, -1e4, 1e4},       {CML_OP_ERF, erf, -6.0, 6.0},
  };
  enum { N = 3000 };
  static double x[N], got[N + 8];
  static const double kSpecial[] = {0.0,    -0.0,    NAN, INFINITY, -INFINITY,
                                    1e-310, -1e-310, 0.5, -0.5};
  const int specials = (int)(sizeof kSpecial / sizeof kSpecial[0]);
  int found = 0;
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (size_t f = 0; f < sizeof kFns / sizeof kFns[0]; ++f) {
      cmlc_ew_fn fn = cmlc_ew_simd_unary_fn(&o, kFns[f].op, CML_DTYPE_F64);
      if (!fn) continue;
      ++found;
      for (int i = 0; i < N; ++i) {
        // Specials, small values around 0, then the function's range (log-spaced for log).
        const double u = (double)rng_uniform(0.0f, 1.0f);
        x[i] = i < specials ? kSpecial[i]
               : i < 300    ? (u - 0.5) * 1e-3
                            : kFns[f].lo + u * (kFns[f].hi - kFns[f].lo);
        if (kFns[f].op == CML_OP_LOG && i >= 300) x[i] = exp((u - 0.5) * 1400.0);
      }
      for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
        const void* in[1] = {x};
        const int64_t st[1] = {1};
        memset(got, 0x5a, sizeof got);
        fn(got, in, st, n);
        for (int64_t i = 0; i < n; ++i) {
          const double want = kFns[f].ref(x[i]);
          const bool ok = (isnan(want) && isnan(got[i])) || (isinf(want) && got[i] == want) ||
                          (!isinf(want) && !isnan(want) && ulp_error_f64(got[i], want) <= 4.0);
          if (!ok) {
            TEST_FAIL_("isa %d %s(%a) = %a, libm %a", isa, cml_op_name(kFns[f].op), x[i], got[i],
                       want);
            return;
          }
        }
        uint64_t bits;
        memcpy(&bits, &got[n], 8);
        ASSERT_TRUE(bits == 0x5a5a5a5a5a5a5a5aull);  // nothing written past n
      }
      // A stride-0 input: the value the same input gets inside an array, everywhere.
      for (int i = 0; i < 8; ++i) x[i] = 2.7147186769005421;
      const void* array_in[1] = {x};
      const int64_t array_st[1] = {1};
      fn(got, array_in, array_st, 8);
      const double in_array = got[5];
      const void* in[1] = {x};
      const int64_t st[1] = {0};
      fn(got, in, st, 5);
      for (int i = 0; i < 5; ++i) ASSERT_TRUE(got[i] == in_array);
    }
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  if (best_isa() >= CMLC_ISA_AVX2) ASSERT_TRUE(found >= 8);
#endif
}

// Float64 Logistic on every ISA (whichever kernel the SIMD lookup gives, else the scalar one):
// within 1.5 ulp of a long double reference, at the inputs where e^x / (1 + e^x) on libmvec's exp
// reached 4.5 ulp, across [-3, -2.5] where it passed 3 ulp (found by an outside test), and
// across [-40, 40]. (The plain formula on libm's exp, rounding three times, reached 2.2 ulp.)
TEST(f64_logistic_accuracy) {
  enum { N = 4000 };
  static double x[N], got[N];
  x[0] = -2.714718676900542;
  x[1] = -3.4417078212340435;
  for (int i = 2; i < N; ++i) {  // [-3, -2.5], then [-40, 40]
    x[i] = i < N / 2 ? -3.0 + (double)i / N : -40.0 + 80.0 * (double)(i - N / 2) / (N / 2);
  }
  for (size_t k = 0; k < sizeof kIsas / sizeof kIsas[0]; ++k) {
    if (!kIsas[k].available()) continue;
    const cmlc_options_t o = make_options(kIsas[k].isa, false, 1);
    cmlc_ew_fn fn = cmlc_ew_simd_unary_fn(&o, CML_OP_LOGISTIC, CML_DTYPE_F64);
    if (!fn) fn = cmlc_ew_unary_fn(CML_OP_LOGISTIC, CML_DTYPE_F64);
    ASSERT_TRUE(fn != NULL);
    const void* in[1] = {x};
    const int64_t st[1] = {1};
    fn(got, in, st, N);
    for (int i = 0; i < N; ++i) {
      const long double want = 1.0L / (1.0L + expl(-(long double)x[i]));
      const double err =
          (double)fabsl((long double)got[i] - want) / ldexp(1.0, ilogb((double)want) - 52);
      if (err > 1.5) {
        TEST_FAIL_("isa %d: Logistic(%a) = %a, %.2f ulp from %La", (int)kIsas[k].isa, x[i], got[i],
                   err, want);
        return;
      }
    }
  }
}

// The lookup decides the inner loop once, at plan time: the entry carries the variant for the
// options' ISA, and the runner uses exactly that one (a NULL slot makes it fail, not re-pick).
TEST(lookup_picks_variant_at_plan_time) {
  const cml_shape_t v = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){64});
  const cml_shape_t ins[2] = {v, v};
  tnode_t t;
  tnode_init(&t, CML_OP_ADD, 2, ins, &v);
  for (size_t k = 0; k < sizeof kIsas / sizeof kIsas[0]; ++k) {
    if (!kIsas[k].available()) continue;
    const cmlc_options_t o = make_options(kIsas[k].isa, false, 1);
    cmlc_kernel_entry_t e;
    ASSERT_TRUE(cmlc_kernels_elementwise_lookup(&t.module, &t.node, &o, &e));
    ASSERT_TRUE(kIsas[k].binary(CML_OP_ADD, CML_DTYPE_F32) != NULL);
    ASSERT_TRUE(e.impl[0] == (cmlc_impl_fn)kIsas[k].binary(CML_OP_ADD, CML_DTYPE_F32));
  }
  const cmlc_options_t ref = make_options(CMLC_ISA_AVX512, true, 1);
  cmlc_kernel_entry_t e;
  ASSERT_TRUE(cmlc_kernels_elementwise_lookup(&t.module, &t.node, &ref, &e));
  ASSERT_TRUE(e.impl[0] == (cmlc_impl_fn)cmlc_ew_binary_fn(CML_OP_ADD, CML_DTYPE_F32));
  // A runner handed no variant reports it instead of choosing one itself.
  float a[64] = {0}, b[64] = {0}, out[64];
  const void* inputs[2] = {a, b};
  const cml_shape_t* in_shapes[2] = {&t.values[1].shape, &t.values[2].shape};
  const cml_shape_t* out_shapes[1] = {&t.values[3].shape};
  void* outputs[1] = {out};
  cmlc_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.module = &t.module;
  args.node = &t.node;
  args.options = &ref;
  args.input_count = 2;
  args.input_shapes = in_shapes;
  args.inputs = inputs;
  args.output_count = 1;
  args.output_shapes = out_shapes;
  args.outputs = outputs;
  cml_status_t st = e.run(&args);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INTERNAL);
  cml_status_free(st);
}

// Complex products on a SIMD ISA run the FMA instructions inline: the scalar kernel's bits
// (libm's fma / fmaf; NaN for NaN, whose sign may come from either operand) for c64 and c128 over
// pairs of edge values (infinities, NaN, huge values whose unfused products overflow, subnormals),
// each operand broadcast or not.
TEST(complex_mul_matches_scalar) {
  enum { N = EDGE_COUNT * EDGE_COUNT };
  static float xf[2 * N], yf[2 * N], gotf[2 * N + 8], wantf[2 * N + 8];
  static double xd[2 * N], yd[2 * N], gotd[2 * N + 8], wantd[2 * N + 8];
  for (int i = 0; i < N; ++i) {
    const float v[4] = {kEdges[i % EDGE_COUNT], kEdges[(i / EDGE_COUNT) % EDGE_COUNT],
                        kEdges[(i * 7 + 3) % EDGE_COUNT], kEdges[(i * 13 + 5) % EDGE_COUNT]};
    xf[2 * i] = v[0], xf[2 * i + 1] = v[1], yf[2 * i] = v[2], yf[2 * i + 1] = v[3];
    for (int j = 0; j < 2; ++j) {
      xd[2 * i + j] = (double)(j ? v[1] : v[0]) * (i % 3 ? 1.0 : 1e280);
      yd[2 * i + j] = (double)(j ? v[3] : v[2]) * (i % 5 ? 1.0 : 1e-300);
    }
  }
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    static const int64_t strides[3][2] = {{1, 1}, {1, 0}, {0, 1}};
    for (int d = 0; d < 2; ++d) {
      const cml_dtype_t dt = d ? CML_DTYPE_C128 : CML_DTYPE_C64;
      cmlc_ew_fn fn = cmlc_ew_simd_binary_fn(&o, CML_OP_MUL, dt);
      cmlc_ew_fn ref = cmlc_ew_binary_fn(CML_OP_MUL, dt);
      ASSERT_TRUE(fn != NULL && ref != NULL);
      for (int s = 0; s < 3; ++s) {
        const void* in[2] = {d ? (const void*)(xd + 2 * 9) : (const void*)(xf + 2 * 9),
                             d ? (const void*)yd : (const void*)yf};
        const int64_t n = N - 9;
        if (d) {
          memset(gotd, 0x5a, sizeof gotd), memset(wantd, 0x5a, sizeof wantd);
          fn(gotd, in, strides[s], n), ref(wantd, in, strides[s], n);
        } else {
          memset(gotf, 0x5a, sizeof gotf), memset(wantf, 0x5a, sizeof wantf);
          fn(gotf, in, strides[s], n), ref(wantf, in, strides[s], n);
        }
        for (int64_t i = 0; i < 2 * n + 8; ++i) {
          const bool same =
              d ? memcmp(&gotd[i], &wantd[i], 8) == 0 || (isnan(gotd[i]) && isnan(wantd[i]))
                : same_f32(gotf[i], wantf[i]);
          if (!same) {
            TEST_FAIL_("isa %d %s strides %d element %lld: differs from the scalar kernel", isa,
                       cml_dtype_name(dt), s, (long long)i);
            break;
          }
        }
      }
    }
  }
}

// Complex products round as XLA's CPU code (and JAX) does: the imaginary part is
// fma(b, c, a * d). Fused the other way it differed in the last bit for a third of random
// inputs, and in sign where a * d and b * c cancel. Expected values from xla:cpu and JAX.
TEST(complex_mul_rounds_as_xla) {
  static const float xf[4] = {0.587736845f, -0.217012256f, 1e-30f, 1e-30f};
  static const float yf[4] = {0.188156649f, 0.705253541f, 1e38f, -1e38f};
  static const uint32_t want_imag_f[2] = {0x3ebf51d4u, 0xc0385280u};  // 0.373671174, -2.8800354
  static const double xd[2] = {1e300, 1e300}, yd[2] = {1e308, -1e308};
  for (int isa = CMLC_ISA_SCALAR; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    static const int64_t strides[2] = {1, 1};
    cmlc_ew_fn f32 = isa == CMLC_ISA_SCALAR ? cmlc_ew_binary_fn(CML_OP_MUL, CML_DTYPE_C64)
                                            : cmlc_ew_simd_binary_fn(&o, CML_OP_MUL, CML_DTYPE_C64);
    cmlc_ew_fn f64 = isa == CMLC_ISA_SCALAR
                         ? cmlc_ew_binary_fn(CML_OP_MUL, CML_DTYPE_C128)
                         : cmlc_ew_simd_binary_fn(&o, CML_OP_MUL, CML_DTYPE_C128);
    ASSERT_TRUE(f32 != NULL && f64 != NULL);
    float gotf[4];
    f32(gotf, (const void* const[]){xf, yf}, strides, 2);
    for (int i = 0; i < 2; ++i) {
      uint32_t bits;
      memcpy(&bits, &gotf[2 * i + 1], sizeof bits);
      if (bits != want_imag_f[i]) {
        TEST_FAIL_("isa %d c64 product %d: imaginary part %.9g (0x%08x), XLA gives 0x%08x", isa, i,
                   (double)gotf[2 * i + 1], bits, want_imag_f[i]);
      }
    }
    ASSERT_EQ_DBL(gotf[0], 0.263635248f);
    ASSERT_EQ_DBL(gotf[2], 200000000.0f);
    double gotd[2];
    f64(gotd, (const void* const[]){xd, yd}, strides, 1);
    ASSERT_TRUE(isinf(gotd[0]) && gotd[0] > 0);
    ASSERT_TRUE(isinf(gotd[1]) && gotd[1] < 0);  // XLA: inf - inf i (Annex G-free)
  }
}

// f32 <-> f64 and same-width signed <-> unsigned conversions as plain loops on SIMD ISAs:
// hand-checked values (ties to even, overflow to infinity, NaN, signed zero, subnormals
// flushed by the f32 range, integers keeping their bits), every length up to 40.
TEST(plain_conversions) {
  const double d[8] = {1.0 + 0x1p-24, 1.0 + 3 * 0x1p-25, 1e300, -1e-300, -0.0, NAN, -2.5, 0x1p-149};
  const float dwant[8] = {1.0f, 1.0f + 0x1p-23f, INFINITY, -0.0f, -0.0f, NAN, -2.5f, 0x1p-149f};
  const float f[4] = {0x1p-149f, -3.25f, INFINITY, 16777217.0f};
  const int32_t i[4] = {-1, INT32_MIN, 7, INT32_MAX};
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    cmlc_ew_convert_fn d2f = cmlc_ew_simd_convert_fn(&o, CML_DTYPE_F64, CML_DTYPE_F32);
    cmlc_ew_convert_fn f2d = cmlc_ew_simd_convert_fn(&o, CML_DTYPE_F32, CML_DTYPE_F64);
    cmlc_ew_convert_fn i2u = cmlc_ew_simd_convert_fn(&o, CML_DTYPE_I32, CML_DTYPE_U32);
    cmlc_ew_convert_fn u2i = cmlc_ew_simd_convert_fn(&o, CML_DTYPE_U64, CML_DTYPE_I64);
    ASSERT_TRUE(d2f && f2d && i2u && u2i);
    for (int n = 0; n <= 40; ++n) {
      double din[40], dout[40];
      float fout[40], fin[40];
      uint32_t uout[40];
      int32_t iin[40];
      uint64_t u64in[40];
      int64_t i64out[40];
      for (int k = 0; k < n; ++k) {
        din[k] = d[k % 8], fin[k] = f[k % 4], iin[k] = i[k % 4];
        u64in[k] = 0xFFFFFFFFFFFFFFF0ull + (uint64_t)k;
      }
      d2f(fout, din, n), f2d(dout, fin, n), i2u(uout, iin, n), u2i(i64out, u64in, n);
      for (int k = 0; k < n; ++k) {
        ASSERT_TRUE(same_f32(fout[k], dwant[k % 8]));
        ASSERT_TRUE(memcmp(&dout[k], &(double){(double)f[k % 4]}, 8) == 0);
        ASSERT_EQ_INT(uout[k], (uint32_t)i[k % 4]);
        ASSERT_EQ_INT(i64out[k], -16 + k);
      }
    }
  }
}

// Integer <-> float conversions as plain loops on SIMD ISAs: every integer width to f32 and f64
// (rounded once: 2^24 + 1 and 2^53 + 1 are ties), and f32 / f64 to every integer width
// (saturated, NaN to 0, truncated toward zero), against the generic path's rules written out
// here, every length up to 40.
static int64_t sat_signed(double d, int bits) {
  const int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1, lo = -hi - 1;
  if (isnan(d)) return 0;
  if (d <= (double)lo) return lo;
  if (d >= (double)hi) return hi;
  return (int64_t)d;
}
static uint64_t sat_unsigned(double d, int bits) {
  const uint64_t hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  if (isnan(d) || d <= 0) return 0;
  if (d >= (double)hi) return hi;
  return (uint64_t)d;
}

TEST(int_float_conversions) {
  static const cml_dtype_t ints[8] = {CML_DTYPE_I8,  CML_DTYPE_U8,  CML_DTYPE_I16, CML_DTYPE_U16,
                                      CML_DTYPE_I32, CML_DTYPE_U32, CML_DTYPE_I64, CML_DTYPE_U64};
  // Raw 64-bit patterns, truncated to each width.
  static const uint64_t raw[10] = {0,
                                   1,
                                   0xFF,
                                   0x80,
                                   0x7FFF,
                                   0x1000001,
                                   0xFFFFFFFF,
                                   0x80000000,
                                   0x20000000000001ull,
                                   0x8000000000000001ull};
  static const double fl[16] = {0.0,    -0.0,    0.99,    -0.99,        127.5,         -128.5,
                                255.9,  -1.5,    65535.2, 2147483647.0, -2147483649.0, 4294967296.0,
                                9.3e18, -9.3e18, 1.9e19,  NAN};
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (int t = 0; t < 8; ++t) {
      const cml_dtype_t it = ints[t];
      const int bits = cml_dtype_bits(it);
      const bool sgn = cml_dtype_is_signed_int(it);
      for (int fk = 0; fk < 2; ++fk) {
        const cml_dtype_t ft = fk ? CML_DTYPE_F64 : CML_DTYPE_F32;
        cmlc_ew_convert_fn i2f = cmlc_ew_simd_convert_fn(&o, it, ft);
        cmlc_ew_convert_fn f2i = cmlc_ew_simd_convert_fn(&o, ft, it);
        ASSERT_TRUE(i2f != NULL && f2i != NULL);
        for (int n = 0; n <= 40; ++n) {
          uint8_t iin[40 * 8], iout[40 * 8 + 8];
          double fin_d[40], fout_d[41];
          float fin_f[40], fout_f[41];
          for (int k = 0; k < n; ++k) {
            memcpy(iin + k * (bits / 8), &raw[k % 10], (size_t)bits / 8);  // little-endian
            fin_d[k] = fl[k % 16];
            fin_f[k] = (float)fl[k % 16];
          }
          memset(fout_d, 0x5a, sizeof fout_d), memset(fout_f, 0x5a, sizeof fout_f);
          memset(iout, 0x5a, sizeof iout);
          i2f(fk ? (void*)fout_d : (void*)fout_f, iin, n);
          f2i(iout, fk ? (const void*)fin_d : (const void*)fin_f, n);
          for (int k = 0; k < n; ++k) {
            uint64_t u = 0;
            memcpy(&u, iin + k * (bits / 8), (size_t)bits / 8);
            int64_t v = (int64_t)u;
            if (sgn && bits < 64 && (u >> (bits - 1) & 1)) v = (int64_t)(u | ~0ull << bits);
            if (fk) {
              const double want = sgn ? (double)v : (double)u;
              ASSERT_TRUE(memcmp(&fout_d[k], &want, 8) == 0);
            } else {
              const float want = sgn ? (float)v : (float)u;
              ASSERT_TRUE(memcmp(&fout_f[k], &want, 4) == 0);
            }
            const double d = fk ? fin_d[k] : (double)fin_f[k];
            const uint64_t want = sgn ? (uint64_t)sat_signed(d, bits) : sat_unsigned(d, bits);
            uint64_t got = 0;
            memcpy(&got, iout + k * (bits / 8), (size_t)bits / 8);
            const uint64_t mask = bits == 64 ? ~0ull : ((uint64_t)1 << bits) - 1;
            if (got != (want & mask)) {
              TEST_FAIL_("isa %d %s -> %s element %d (%g): %llx, want %llx", isa,
                         cml_dtype_name(ft), cml_dtype_name(it), k, d, (unsigned long long)got,
                         (unsigned long long)(want & mask));
            }
          }
          // Nothing written past n.
          ASSERT_EQ_INT(iout[n * (bits / 8)], 0x5a);
        }
      }
    }
  }
}

// Integer and Bool conversions among themselves as plain loops on SIMD ISAs, every pair: the
// value (Bool as 0 / 1, whatever nonzero byte holds it) wrapped to the target's width, a Bool
// target as != 0; Bool <-> f64 too. The generic path's rules written out here, every length up
// to 40, nothing written past the end.
TEST(int_int_conversions) {
  static const cml_dtype_t types[9] = {CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_U8,
                                       CML_DTYPE_I16,  CML_DTYPE_U16, CML_DTYPE_I32,
                                       CML_DTYPE_U32,  CML_DTYPE_I64, CML_DTYPE_U64};
  static const uint64_t raw[11] = {0,
                                   1,
                                   2,
                                   0xFF,
                                   0x80,
                                   0x7FFF,
                                   0x12345678,
                                   0x80000000,
                                   0xFFFFFFFF,
                                   0x100000000ull,
                                   0x8000000000000001ull};
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (best_isa() < (cmlc_isa_t)isa) continue;
    const cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    for (int a = 0; a < 9; ++a) {
      for (int b = 0; b < 9; ++b) {
        const cml_dtype_t from = types[a], to = types[b];
        const int fb = cml_dtype_bits(from) / 8, tb = cml_dtype_bits(to) / 8;
        cmlc_ew_convert_fn fn = cmlc_ew_simd_convert_fn(&o, from, to);
        if (a == b && !fn) continue;  // (a same-dtype conversion never reaches a kernel)
        ASSERT_TRUE(fn != NULL);
        for (int n = 0; n <= 40; ++n) {
          uint8_t in[40 * 8], out[40 * 8 + 8];
          for (int k = 0; k < n; ++k) memcpy(in + k * fb, &raw[(k + a) % 11], (size_t)fb);
          memset(out, 0x5a, sizeof out);
          fn(out, in, n);
          for (int k = 0; k < n; ++k) {
            uint64_t u = 0;
            memcpy(&u, in + k * fb, (size_t)fb);  // little-endian
            // The source's value as 64 bits: Bool 0 / 1, signed types sign-extended.
            uint64_t v = u;
            if (from == CML_DTYPE_BOOL) {
              v = u != 0;
            } else if (cml_dtype_is_signed_int(from) && fb < 8 && (u >> (8 * fb - 1) & 1)) {
              v = u | ~0ull << (8 * fb);
            }
            uint64_t want = to == CML_DTYPE_BOOL ? v != 0 : v;
            if (tb < 8) want &= ((uint64_t)1 << (8 * tb)) - 1;
            uint64_t got = 0;
            memcpy(&got, out + k * tb, (size_t)tb);
            if (got != want) {
              TEST_FAIL_("isa %d %s -> %s element %d (%llx): %llx, want %llx", isa,
                         cml_dtype_name(from), cml_dtype_name(to), k, (unsigned long long)u,
                         (unsigned long long)got, (unsigned long long)want);
            }
          }
          ASSERT_EQ_INT(out[n * tb], 0x5a);
        }
      }
    }
    cmlc_ew_convert_fn b2d = cmlc_ew_simd_convert_fn(&o, CML_DTYPE_BOOL, CML_DTYPE_F64);
    cmlc_ew_convert_fn d2b = cmlc_ew_simd_convert_fn(&o, CML_DTYPE_F64, CML_DTYPE_BOOL);
    ASSERT_TRUE(b2d != NULL && d2b != NULL);
    const uint8_t bools[5] = {0, 1, 2, 0xFF, 0};
    const double ds[5] = {0.0, -0.0, NAN, 1e-320, -3.5};
    double dout[5];
    uint8_t bout[6];
    memset(bout, 0x5a, sizeof bout);
    b2d(dout, bools, 5), d2b(bout, ds, 5);
    for (int k = 0; k < 5; ++k) {
      ASSERT_EQ_DBL(dout[k], bools[k] != 0 ? 1.0 : 0.0);
      ASSERT_EQ_INT(bout[k], k >= 2);  // NaN and subnormals are != 0
    }
    ASSERT_EQ_INT(bout[5], 0x5a);
  }
}

// Complex64 Exp and Abs on SIMD ISAs: Abs gives the scalar kernel's bits (hypot in double, as
// glibc's hypotf); Exp is within a few ulp of e^a per component (the vector exp and sincos) and
// the scalar kernel's bits where a part is not finite or the real part is above 88. Pairs of
// edge values and random values in [-20, 20]; every length up to 40 and a long one.
TEST(complex64_exp_abs) {
  enum { N = EDGE_COUNT * EDGE_COUNT + 600 };
  static float x[2 * N], got[2 * N + 8], want[2 * N + 8];
  for (int i = 0; i < N; ++i) {
    if (i < EDGE_COUNT * EDGE_COUNT) {
      x[2 * i] = kEdges[i % EDGE_COUNT], x[2 * i + 1] = kEdges[i / EDGE_COUNT];
    } else {
      x[2 * i] = rng_uniform(-20.0f, 20.0f), x[2 * i + 1] = rng_uniform(-20.0f, 20.0f);
    }
  }
  for (int k = 0; k < ISA_COUNT; ++k) {
    if (!kIsas[k].available()) continue;
    for (int op = 0; op < 2; ++op) {
      const cml_op_t o = op ? CML_OP_ABS : CML_OP_EXP;
      cmlc_ew_fn fn = kIsas[k].unary(o, CML_DTYPE_C64);
      cmlc_ew_fn ref = cmlc_ew_unary_fn(o, CML_DTYPE_C64);
      ASSERT_TRUE(fn != NULL && ref != NULL);
      const int outw = op ? 1 : 2;  // floats per output element
      {
        for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
          const void* in[1] = {x};
          const int64_t st[1] = {1};
          memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
          fn(got, in, st, n), ref(want, in, st, n);
          for (int64_t i = 0; i < n * outw; ++i) {
            const int64_t e = i / outw;
            const float a = x[2 * e], b = x[2 * e + 1];
            const bool exact = op || !isfinite(a) || !isfinite(b) || a > 88.0f;
            bool ok = same_f32(got[i], want[i]);
            if (!ok && !exact) {
              const double scale = exp((double)a);
              ok = fabs((double)got[i] - (double)want[i]) <= 8.0 * FLT_EPSILON * scale + 1e-37;
            }
            if (!ok) {
              TEST_FAIL_("%s %s n=%lld: element %lld (%g%+gi): %g, scalar %g", kIsas[k].name,
                         cml_op_name(o), (long long)n, (long long)e, a, b, got[i], want[i]);
            }
          }
          ASSERT_TRUE(memcmp(got + n * outw, want + n * outw, 8 * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_MAIN(TEST_ENTRY(binary_matches_scalar_on_edge_grid), TEST_ENTRY(max_min_nan_and_signed_zero),
          TEST_ENTRY(clamp_matches_scalar), TEST_ENTRY(half_compares_match_scalar),
          TEST_ENTRY(complex_mul_matches_scalar), TEST_ENTRY(complex_mul_rounds_as_xla),
          TEST_ENTRY(plain_conversions), TEST_ENTRY(int_float_conversions),
          TEST_ENTRY(int_int_conversions), TEST_ENTRY(f64_libmvec_kernels),
          TEST_ENTRY(f64_logistic_accuracy), TEST_ENTRY(pow_f32_square),
          TEST_ENTRY(pow_constant_exponents), TEST_ENTRY(bit_count_and_clz_match_scalar),
          TEST_ENTRY(int_kernels_match_scalar), TEST_ENTRY(i64_u64_div_rem_match_scalar),
          TEST_ENTRY(f64_kernels_match_scalar), TEST_ENTRY(f64_rounding_and_sqrt_match_scalar),
          TEST_ENTRY(complex64_exp_abs), TEST_ENTRY(unary_matches_reference),
          TEST_ENTRY(convert_matches_scalar), TEST_ENTRY(is_finite_matches_scalar),
          TEST_ENTRY(i32_div_rem_match_scalar), TEST_ENTRY(where_matches_scalar),
          TEST_ENTRY(reduce_kernels), TEST_ENTRY(blocked_full_reduction_thread_independent),
          TEST_ENTRY(reference_options_pick_no_simd), TEST_ENTRY(lookup_picks_variant_at_plan_time))

#else  // no x86 SIMD kernels in this build

TEST(no_simd_kernels) { ASSERT_TRUE(true); }
TEST_MAIN(TEST_ENTRY(no_simd_kernels))

#endif
