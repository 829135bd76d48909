// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_shape_sweep_test.c: the c backend's kernels at shapes just below, at and just
// above the size thresholds where their code path changes, built through the public API only
// and run in several configurations (c:threads=1, 2 and 3 with AVX-512 where the CPU has it,
// c:avx512=false (AVX2), c:avx512=false,avx2=false (scalar kernels)), each output compared with
// the same graph on c:reference=true (scalar kernels, no fusion, no plan-time rewrites), the
// oracle. Tolerances follow the reduction length and the dtype (see sw_tol_dot); data-movement
// ops must match bit for bit.
//
// Why: a GEMV whose task count came from the uncapped chunk while each task wrote at most 4096
// outputs left every output past 4096 per thread zero (x[1, 4096] . w[4096, 11008] on one
// thread); the compliance suite and the other tests use small shapes, so nothing caught it.
// Every size threshold below changes the code path; the sweep puts shapes on both sides.
//
// Thresholds (src/backends/c/..., at the time of writing; line numbers drift):
//   GEMM (kernels/generic/gemm.c, gemm_impl.h)
//     KC = 256, MC = 144, NC = 2048: cache blocks (k, rows, columns); k tails, row / column
//       block edges. MR x NR micro-tiles: AVX-512 12 x 32, AVX2 6 x 16, scalar 4 x 8 (edge
//       tiles masked).
//     GEMV (gemv_try): M == 1 with affine operands (axpy form for contiguous B rows, dot form
//       for a transposed B); chunk = round_up(N / threads, 64), at least round_up(65536 / K, 64),
//       capped at 4096 outputs per task (the bug above). N == 1, M > 1: chunk = 16384 / K rows,
//       at least 8. Below 2 * 256 Ki flops (batch included) the GEMV runs on one thread.
//     2 * 128^3 flops: at or below, a product stays on the calling thread.
//     DIRECT_B_MAX = 64 * 256 (K * N): B read in place (no packing) at or below.
//     Skinny path (skinny_try): batch 1, M <= SKINNY_M = 32, K * N > DIRECT_B_MAX, B rows
//       contiguous (or B packed at plan time); all of A must fit the shared panel. AVX-512:
//       M = 13..16 uses the 16 x 16 kernel over B in place; M > MR copies B in groups of
//       SKINNY_GROUP = 8 slivers; chunks of max(ceil(slivers / (4 threads)), 128 / NR) slivers.
//     stream_b: M <= MC, K * N > DIRECT_B_MAX, B row stride a multiple of 64 bytes: B read in
//       place by the blocked path.
//     Batch mode: batch >= 2 and (batch >= 2 threads or M N K < 64^3): one batch per task.
//     Row blocks shrink (down to 4 MR) to give about 4 tasks per thread; column chunks when
//       there are fewer than 2 row blocks per thread; A shared (packed once) when the row
//       blocks fit the threads.
//     Plan-time packing of a constant rhs (linalg.c, dot_prepare): batch 1, M > 1, N > 1,
//       K * N > 64 * 256, f32 or f64 GEMM (not the bf16 one).
//     bf16 x bf16 with AVX-512 BF16 (gemm_x86_64_avx512bf16.c): its own driver, KC = 512
//       (pairs of k), MC = 144, NC = 2048, 12 x 32 tiles; f16 / bf16 otherwise widen while
//       packing. f64 accumulation: the f64 GEMM (AVX-512 12 x 16, AVX2 6 x 8).
//   Conv (kernels/generic/linalg_conv.c)
//     Direct 2-D kernel (AVX-512 / AVX2, f32, one group, 2 spatial axes): 6 pixels x 64 output
//       channels per call; K chunks of DIRECT_K_MAX = 1280 (whole taps when C_in <= 1280, else
//       each tap split into ceil(C_in / 1280) channel ranges); a 1x1 kernel over fewer than 12
//       output pixels goes to the GEMM path; a 1x1 f32 channels-last input whose taps stay
//       inside is read in place; up to 8 output rows per task (fewer under STRIP_TARGET =
//       256 KiB, or to give 4 tasks per thread); STRIP_MAX 1 MiB, TILE_MAX 4 MiB: else im2col.
//     im2col + GEMM: tile = 512 KiB / (K bytes) rows in [96, 768], a multiple of 12, halved
//       (not below 96) until there are 32 tasks; over 32 MiB of im2col per tile: direct loop.
//       Depthwise (C_in per group 1, several groups): 16384 / (taps C_out) rows per task.
//       Output written in place when NHWC, one group, accumulator dtype; the input read as A
//       for a 1x1, stride-1, unpadded NHWC conv.
//   Reductions (kernels/generic/reduce.c): TILE = 256 columns; the f32 SIMD column path
//     (reduced axes not last) in 4096-column tiles with partials per ROW_BLOCK = 128 rows (two
//     passes when there is more than one block); MIN_WORK = 32768 per task; full reductions in
//     blocks of >= 65536 elements, at most 1024 partials.
//   Fused softmax / layer norm / gelu (kernels/generic/fused.c): rows per task 8192 / n or
//     16384 / n; elementwise loops (elementwise*.c, loop_fusion.c) in 16384-element chunks,
//     256-element blocks, vector widths 8 / 16 with scalar tails.
//   Fused attention (kernels/generic/fused_attention*.{c,h}): tiles of BQ = 32 query rows and
//     BK = 64 keys; a task with at most DEC_ROWS = 4 live query rows takes the decode path;
//     head dims padded to 16; k / v as up to MAX_PARTS = 8 parts when they come from a
//     Concatenate along the key axis (opt.c, segmented operands).
//   Movement (kernels/generic/movement.c): transposes of at least TILED_MIN_ELEMENTS = 4096
//     elements whose last axis moves take the tiled path. Gather / Scatter (index.c): chunks of
//     16384 / slice elements.
//   Concatenate placement (plan.c, place_concats): with every axis before the concatenation
//     axis of size 1, an operand produced by a kernel of the same function that nothing else
//     reads is written straight into the output; its run must start and end on
//     CMLC_ALIGNMENT (64-byte) boundaries.
//   Quantized dense (kernels/generic/quant.c, kernels/x86_64/quant_*): 64-column tiles of one
//     weight row; tasks of 65536 / (K M 64) tiles; quant_int8 (batch 1, GGML): activations
//     quantized to int8 per 32 / 256 block, VNNI dot products, rows 4 at a time with a tail.
#include <math.h>
#include <stdint.h>

#include "api_common.h"
#include "cml/fused.h"
#include "test.h"

//===--- configurations ---===//

// The oracle first; every other configuration is compared with it.
static const char* const kSwConfigs[] = {
    "c:reference=true",
    "c:threads=1",
    "c:threads=2",
    "c:threads=3",
    "c:avx512=false,threads=2",
    "c:avx512=false,avx2=false,threads=2",
};
enum { kSwConfigCount = (int)(sizeof kSwConfigs / sizeof kSwConfigs[0]) };

//===--- deterministic data ---===//

static uint64_t sw_next(uint64_t* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state >> 33;
}

// Uniform in [-1, 1).
static double sw_uniform(uint64_t* state) { return (double)sw_next(state) / 2147483648.0 * 2.0 - 1.0; }

// Fills |count| elements of |dtype| at |data|: floats uniform in [-1, 1), integers in
// [0, int_hi), Bool alternating.
static void sw_fill(void* data, cml_dtype_t dtype, int64_t count, uint64_t seed, int64_t int_hi) {
  uint64_t st = seed * 0x9E3779B97F4A7C15ull + 12345;
  for (int64_t i = 0; i < count; ++i) {
    const double u = sw_uniform(&st);
    const int64_t v = int_hi > 0 ? (int64_t)(sw_next(&st) % (uint64_t)int_hi) : 0;
    switch (dtype) {
      case CML_DTYPE_F32:
        ((float*)data)[i] = (float)u;
        break;
      case CML_DTYPE_F64:
        ((double*)data)[i] = u;
        break;
      case CML_DTYPE_F16:
        ((uint16_t*)data)[i] = cml_f64_to_f16(u);
        break;
      case CML_DTYPE_BF16:
        ((uint16_t*)data)[i] = cml_f64_to_bf16(u);
        break;
      case CML_DTYPE_I32:
        ((int32_t*)data)[i] = (int32_t)v;
        break;
      case CML_DTYPE_I64:
        ((int64_t*)data)[i] = v;
        break;
      case CML_DTYPE_BOOL:
        ((uint8_t*)data)[i] = (uint8_t)(i % 3 != 0);
        break;
      default:
        break;
    }
  }
}

static double sw_load(const void* data, cml_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case CML_DTYPE_F32:
      return ((const float*)data)[i];
    case CML_DTYPE_F64:
      return ((const double*)data)[i];
    case CML_DTYPE_F16:
      return cml_f16_to_f32(((const uint16_t*)data)[i]);
    case CML_DTYPE_BF16:
      return cml_bf16_to_f32(((const uint16_t*)data)[i]);
    case CML_DTYPE_I32:
      return ((const int32_t*)data)[i];
    case CML_DTYPE_I64:
      return (double)((const int64_t*)data)[i];
    case CML_DTYPE_U8:
    case CML_DTYPE_BOOL:
      return ((const uint8_t*)data)[i];
    default:
      return NAN;
  }
}

// Smallest relative step of |dtype| (unit roundoff times 2).
static double sw_eps(cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_F64:
      return 0x1p-52;
    case CML_DTYPE_F16:
      return 0x1p-10;
    case CML_DTYPE_BF16:
      return 0x1p-7;
    case CML_DTYPE_F32:
      return 0x1p-23;
    default:
      return 0.0;
  }
}

//===--- the runner ---===//

// |want| within atol + rtol |want|: atol covers the summation order (sums of |k| terms of
// [-1, 1) products, accumulated in f32 or f64: the error grows as eps k / 4; a margin of 8),
// rtol the output's rounding (two steps: both sides may round).
typedef struct sw_tol_t {
  double atol, rtol;
} sw_tol_t;

static sw_tol_t sw_tol_dot(int64_t k, cml_dtype_t acc, cml_dtype_t out) {
  sw_tol_t t;
  t.atol = 2.0 * sw_eps(acc) * (double)(k + 16) + 1e-30;
  t.rtol = 2.0 * sw_eps(out);
  return t;
}

#define kSwExact ((sw_tol_t){0.0, 0.0})

// Builds the case's graph into |f| and writes its outputs to |outs|; returns their count.
typedef size_t (*sw_build_fn)(cml_function_t* f, const void* arg, cml_value_t* outs);

typedef struct sw_case_t {
  char name[160];
  sw_build_fn build;
  const void* arg;
  sw_tol_t tol;
  int64_t int_hi;  // integer parameters are filled with [0, int_hi)
  // Configurations to run besides the oracle (NULL: kSwConfigs[1..]).
  const char* const* configs;
  int config_count;
} sw_case_t;

typedef struct sw_result_t {
  size_t count;
  cml_dtype_t dtype[8];
  int64_t elems[8];
  void* data[8];
} sw_result_t;

static void sw_result_free(sw_result_t* r) {
  for (size_t i = 0; i < r->count; ++i) free(r->data[i]);
  memset(r, 0, sizeof *r);
}

// Builds, compiles and runs the case on |config|; fills |out|. Prints and returns false on error.
static bool sw_run_config(const sw_case_t* c, const char* config, sw_result_t* out) {
  memset(out, 0, sizeof *out);
  cml_backend_t* backend = NULL;
  cml_builder_t* b = NULL;
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &backend);
  if (st == CML_OK) st = cml_builder_create(backend, "sweep", &b);
  cml_value_t outs[8];
  size_t n_out = 0;
  if (st == CML_OK) {
    n_out = c->build(cml_builder_main(b), c->arg, outs);
    st = api_finish(b, outs, n_out, &exe);
    b = NULL;
  }
  if (st != CML_OK) {
    fprintf(stderr, "%s on %s: %s\n", c->name, config, cml_status_message(st));
    cml_status_free(st);
    cml_builder_destroy(b);
    cml_backend_release(backend);
    return false;
  }
  size_t n_in = cml_executable_input_count(exe);
  void* in_data[16] = {0};
  void* out_data[8] = {0};
  bool ok = n_in <= 16 && cml_executable_output_count(exe) == n_out && n_out <= 8;
  for (size_t i = 0; ok && i < n_in; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    in_data[i] = malloc(cml_shape_byte_size(s) + 1);
    ok = in_data[i] != NULL;
    if (ok) sw_fill(in_data[i], s->dtype, cml_shape_element_count(s), i + 1, c->int_hi);
  }
  for (size_t i = 0; ok && i < n_out; ++i) {
    const cml_shape_t* s = cml_executable_output_shape(exe, i);
    out_data[i] = malloc(cml_shape_byte_size(s) + 1);
    ok = out_data[i] != NULL;
    out->dtype[i] = s->dtype;
    out->elems[i] = cml_shape_element_count(s);
  }
  if (ok) {
    st = api_run(backend, exe, (const void* const*)in_data, out_data);
    if (st != CML_OK) {
      fprintf(stderr, "%s on %s: execute: %s\n", c->name, config, cml_status_message(st));
      cml_status_free(st);
      ok = false;
    }
  }
  for (size_t i = 0; i < n_in; ++i) free(in_data[i]);
  out->count = n_out;
  for (size_t i = 0; i < n_out; ++i) out->data[i] = out_data[i];
  if (!ok) sw_result_free(out);
  cml_executable_release(exe);
  cml_backend_release(backend);
  return ok;
}

static int64_t sw_cases_run, sw_values_checked;

// Runs |c| on the oracle and every configuration; returns the number of configurations that
// failed or disagreed (each prints its first mismatches).
static int sw_check(const sw_case_t* c) {
  sw_result_t want;
  ++sw_cases_run;
  if (!sw_run_config(c, kSwConfigs[0], &want)) return 1;
  int bad_configs = 0;
  const char* const* configs = c->configs ? c->configs : kSwConfigs + 1;
  const int config_count = c->configs ? c->config_count : kSwConfigCount - 1;
  for (int ci = 0; ci < config_count; ++ci) {
    sw_result_t got;
    if (!sw_run_config(c, configs[ci], &got)) {
      ++bad_configs;
      continue;
    }
    int64_t bad = 0;
    for (size_t o = 0; o < want.count; ++o) {
      for (int64_t i = 0; i < want.elems[o]; ++i) {
        const double w = sw_load(want.data[o], want.dtype[o], i);
        const double g = sw_load(got.data[o], got.dtype[o], i);
        const double tol = c->tol.atol + c->tol.rtol * fabs(w);
        const bool same = (isnan(w) && isnan(g)) || w == g || fabs(g - w) <= tol;
        ++sw_values_checked;
        if (same) continue;
        if (bad < 4) {
          fprintf(stderr, "%s on %s: output %zu [%lld]: got %.9g, want %.9g (tol %.3g)\n", c->name,
                  configs[ci], o, (long long)i, g, w, tol);
        }
        ++bad;
      }
    }
    if (bad > 0) {
      fprintf(stderr, "%s on %s: %lld mismatches\n", c->name, configs[ci], (long long)bad);
      ++bad_configs;
    }
    sw_result_free(&got);
  }
  sw_result_free(&want);
  return bad_configs;
}

// Prints how much a test compared (a sweep that compares nothing would pass silently).
#define SW_DONE(bad)                                                                       \
  do {                                                                                     \
    printf("  %lld cases, %lld values compared\n", (long long)sw_cases_run,                \
           (long long)sw_values_checked);                                                  \
    ASSERT_TRUE(sw_values_checked > 0);                                                    \
    sw_cases_run = sw_values_checked = 0;                                                  \
    ASSERT_EQ_INT((bad), 0);                                                               \
  } while (0)

#define SW_SHAPE(dt, ...) API_SHAPE(dt, __VA_ARGS__)

//===--- DotGeneral ---===//

// lhs [batch..., M, K] (or [K, M] when lhs_t), rhs [batch..., K, N] (or [N, K] when rhs_t).
typedef struct sw_dot_t {
  int64_t batch, m, k, n;  // batch 0: no batch axis
  bool lhs_t, rhs_t;
  cml_dtype_t in, acc, out;  // acc / out CML_DTYPE_INVALID: the input dtype
  bool rhs_const;            // rhs a constant (packed at plan time when it qualifies)
  bool lhs_vector, rhs_vector;  // M == 1 as a rank-1 lhs [K] / N == 1 as a rank-1 rhs [K]
} sw_dot_t;

// Deterministic host data for a constant of |s| (the same in every configuration).
static cml_value_t sw_const(cml_function_t* f, const cml_shape_t* s, uint64_t seed) {
  void* data = malloc(cml_shape_byte_size(s) + 1);
  if (!data) return CML_VALUE_INVALID;
  sw_fill(data, s->dtype, cml_shape_element_count(s), seed, 0);
  cml_value_t v = cml_constant(f, s, data);
  free(data);
  return v;
}

static size_t sw_build_dot(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_dot_t* d = arg;
  const int64_t nb = d->batch > 0 ? 1 : 0;
  cml_shape_t ls, rs;
  if (d->lhs_vector) {
    ls = SW_SHAPE(d->in, d->k);
  } else if (nb) {
    ls = d->lhs_t ? SW_SHAPE(d->in, d->batch, d->k, d->m) : SW_SHAPE(d->in, d->batch, d->m, d->k);
  } else {
    ls = d->lhs_t ? SW_SHAPE(d->in, d->k, d->m) : SW_SHAPE(d->in, d->m, d->k);
  }
  if (d->rhs_vector) {
    rs = SW_SHAPE(d->in, d->k);
  } else if (nb) {
    rs = d->rhs_t ? SW_SHAPE(d->in, d->batch, d->n, d->k) : SW_SHAPE(d->in, d->batch, d->k, d->n);
  } else {
    rs = d->rhs_t ? SW_SHAPE(d->in, d->n, d->k) : SW_SHAPE(d->in, d->k, d->n);
  }
  cml_value_t lhs = cml_parameter(f, "lhs", &ls);
  cml_value_t rhs = d->rhs_const ? sw_const(f, &rs, 77) : cml_parameter(f, "rhs", &rs);
  cml_dot_config_t dc;
  memset(&dc, 0, sizeof dc);
  dc.lhs_contracting_count = dc.rhs_contracting_count = 1;
  dc.lhs_contracting_axes[0] = d->lhs_vector ? 0 : nb + (d->lhs_t ? 0 : 1);
  dc.rhs_contracting_axes[0] = d->rhs_vector ? 0 : nb + (d->rhs_t ? 1 : 0);
  if (nb) {
    dc.lhs_batch_count = dc.rhs_batch_count = 1;
    dc.lhs_batch_axes[0] = dc.rhs_batch_axes[0] = 0;
  }
  dc.accumulator_dtype = d->acc;
  dc.output_dtype = d->out;
  outs[0] = cml_op_dot_general(f, lhs, rhs, &dc);
  return 1;
}

static int sw_dot(sw_dot_t d) {
  sw_case_t c;
  memset(&c, 0, sizeof c);
  const cml_dtype_t acc = d.acc != CML_DTYPE_INVALID ? d.acc
                          : d.in == CML_DTYPE_F64    ? CML_DTYPE_F64
                                                     : CML_DTYPE_F32;
  const cml_dtype_t out = d.out != CML_DTYPE_INVALID ? d.out
                          : d.acc != CML_DTYPE_INVALID ? d.acc
                                                       : d.in;
  snprintf(c.name, sizeof c.name, "dot %s b%lld m%lld k%lld n%lld%s%s%s%s acc %s out %s",
           cml_dtype_name(d.in), (long long)d.batch, (long long)d.m, (long long)d.k,
           (long long)d.n, d.lhs_t ? " lhsT" : "", d.rhs_t ? " rhsT" : "",
           d.rhs_const ? " const-rhs" : "", d.lhs_vector || d.rhs_vector ? " vector" : "",
           cml_dtype_name(acc), cml_dtype_name(out));
  c.build = sw_build_dot;
  c.arg = &d;
  c.tol = sw_tol_dot(d.k, acc, out);
  return sw_check(&c);
}

static sw_dot_t sw_dot_f32(int64_t m, int64_t k, int64_t n) {
  sw_dot_t d;
  memset(&d, 0, sizeof d);
  d.m = m;
  d.k = k;
  d.n = n;
  d.in = CML_DTYPE_F32;
  d.acc = d.out = CML_DTYPE_INVALID;
  return d;
}

// M == 1: the GEMV path, both B layouts, around the 4096-output cap per task (one and several
// tasks per thread), the 65536 / K chunk floor and the one-thread flop bound.
TEST(dot_gemv_m1) {
  static const int64_t kn[][2] = {{3, 4095}, {3, 4096}, {3, 4097}, {3, 8191}, {3, 8192},
                                  {3, 8300}, {3, 12289}, {1, 130},  {17, 4100}, {40, 8300},
                                  {64, 4097}, {300, 1000}, {257, 300}, {5, 64},   {2, 24577}};
  int bad = 0;
  for (size_t i = 0; i < sizeof kn / sizeof kn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(1, kn[i][0], kn[i][1]);
    bad += sw_dot(d);
    d.rhs_t = true;  // w [N, K]: the dot form
    bad += sw_dot(d);
  }
  // Rank-1 lhs (Dot's vector . matrix) and a batched GEMV.
  sw_dot_t d = sw_dot_f32(1, 3, 8300);
  d.lhs_vector = true;
  bad += sw_dot(d);
  d = sw_dot_f32(1, 5, 4500);
  d.batch = 3;
  bad += sw_dot(d);
  d.rhs_t = true;
  bad += sw_dot(d);
  d = sw_dot_f32(1, 3, 8300);
  d.batch = 2;
  bad += sw_dot(d);
  SW_DONE(bad);
}

// N == 1: the dot-form GEMV over A rows (16384 / K rows per task, at least 8).
TEST(dot_gemv_n1) {
  static const int64_t mk[][2] = {{8300, 3}, {1000, 17}, {5, 5000}, {4097, 64}, {2, 3},
                                  {3000, 1},  {9, 2049}};
  int bad = 0;
  for (size_t i = 0; i < sizeof mk / sizeof mk[0]; ++i) {
    sw_dot_t d = sw_dot_f32(mk[i][0], mk[i][1], 1);
    bad += sw_dot(d);
    d.rhs_vector = true;
    bad += sw_dot(d);
    d.rhs_vector = false;
    d.lhs_t = true;  // A transposed: not the GEMV's layout, the blocked path
    bad += sw_dot(d);
  }
  sw_dot_t d = sw_dot_f32(4500, 7, 1);
  d.batch = 3;
  bad += sw_dot(d);
  SW_DONE(bad);
}

// M = 2..33 around the skinny limit (32), the 16 x 16 kernel's range (13..16) and MR (12 / 6
// / 4), with K * N on both sides of DIRECT_B_MAX, K across KC, N not a multiple of 16 / 32,
// and B rows on and off 64-byte lines (stream_b).
TEST(dot_skinny) {
  static const int64_t ms[] = {2, 5, 6, 7, 12, 13, 16, 17, 24, 31, 32, 33};
  static const int64_t kn[][2] = {{64, 256}, {64, 257}, {70, 300}, {300, 1001}, {257, 1024}};
  int bad = 0;
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i) {
    for (size_t j = 0; j < sizeof kn / sizeof kn[0]; ++j) {
      sw_dot_t d = sw_dot_f32(ms[i], kn[j][0], kn[j][1]);
      bad += sw_dot(d);
      if (j == 3) {
        d.rhs_t = true;
        bad += sw_dot(d);
        d.rhs_t = false;
        d.rhs_const = true;
        bad += sw_dot(d);
      }
    }
  }
  SW_DONE(bad);
}

// The blocked path across MC (144), NC (2048) and KC (256), with row-block splitting for
// several threads, transposed operands, and a rhs packed at plan time.
TEST(dot_blocked) {
  static const int64_t mkn[][3] = {{144, 256, 2048}, {145, 257, 2049}, {143, 255, 100},
                                   {289, 513, 70},   {416, 64, 300},   {100, 64, 256},
                                   {100, 64, 257},   {37, 1000, 33},   {433, 31, 47}};
  int bad = 0;
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    bad += sw_dot(d);
    if (i == 0) continue;  // the largest: one layout
    d.lhs_t = true;
    bad += sw_dot(d);
    d.lhs_t = false;
    d.rhs_t = true;
    bad += sw_dot(d);
    d.rhs_t = false;
    d.rhs_const = true;
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

// Batched products: batch mode (one batch per task) and the per-batch blocked path.
TEST(dot_batched) {
  static const int64_t bmkn[][4] = {{8, 20, 20, 20},  {3, 64, 64, 64},  {2, 130, 70, 33},
                                    {5, 7, 300, 257}, {2, 1, 300, 4100}, {4, 33, 17, 2049},
                                    {7, 2, 2, 2}};
  int bad = 0;
  for (size_t i = 0; i < sizeof bmkn / sizeof bmkn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(bmkn[i][1], bmkn[i][2], bmkn[i][3]);
    d.batch = bmkn[i][0];
    bad += sw_dot(d);
    d.rhs_t = true;
    bad += sw_dot(d);
    d.rhs_t = false;
    d.lhs_t = true;
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

// Half operands (widened while packing; bf16 x bf16 with AVX-512 BF16: its own driver, KC 512
// pairs), half outputs, and the f64 GEMM (f64 operands, or f32 with an f64 accumulator).
TEST(dot_dtypes) {
  static const int64_t mkn[][3] = {{1, 3, 8300}, {5, 513, 70},   {33, 300, 129},
                                   {13, 1025, 65}, {145, 257, 2049}, {1, 1030, 33}};
  static const cml_dtype_t halves[] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  int bad = 0;
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    for (size_t h = 0; h < 2; ++h) {
      sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
      d.in = halves[h];
      bad += sw_dot(d);  // half out
      d.out = CML_DTYPE_F32;
      d.acc = CML_DTYPE_F32;
      d.rhs_t = true;
      bad += sw_dot(d);  // f32 out, transposed B
    }
    sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    d.in = CML_DTYPE_F64;
    bad += sw_dot(d);
    d.rhs_const = true;
    bad += sw_dot(d);
    d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    d.acc = CML_DTYPE_F64;
    d.out = CML_DTYPE_F32;
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

TEST_MAIN(TEST_ENTRY(dot_gemv_m1), TEST_ENTRY(dot_gemv_n1), TEST_ENTRY(dot_skinny),
          TEST_ENTRY(dot_blocked), TEST_ENTRY(dot_batched), TEST_ENTRY(dot_dtypes))
