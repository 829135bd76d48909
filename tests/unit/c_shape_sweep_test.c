// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_shape_sweep_test.c: the c backend's kernels at shapes just below, at and just
// above the size thresholds where their code path changes, built through the public API and run
// in several configurations (c:threads=1, 2, 3 and 4 with AVX-512 where the CPU has it,
// c:avx512=false (AVX2), c:avx512=false,avx2=false (scalar kernels)), each after one execution
// on other data, each output compared with the same graph on c:reference=true (scalar kernels,
// no fusion, no plan-time rewrites), the oracle. Kernels that reference mode shares (Transpose,
// Gather, Scatter, the dynamic slices) are also checked against host loops. Tolerances follow
// the reduction length and the dtype (see sw_tol_dot); data movement must match bit for bit.
// The only internal header read is the executable's planner report (cmlc_opt_stats_t), to assert
// that a case still reaches the rewrite it was written for.
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
//     Transposed-B tiles (bt_try): batch 1, 2 <= M <= BT_M = 64, B [N, K] not constant, K * N
//       > DIRECT_B_MAX: A packed k-major in passes of 16 / 8 lanes (the last the narrowest that
//       covers the rows left), weight rows in groups of 12, about 4 groups of tasks per thread.
//     Direct A (AVX-512): A row-major, K <= KC, M * lda * 4 <= 32 KiB, on one thread or in batch
//       mode; tiles of up to 14 rows.
//     DIRECT_B_MAX = 64 * 256 (K * N): B read in place (no packing) at or below.
//     Skinny path (skinny_try): batch 1, M <= SKINNY_M = 32, K * N > DIRECT_B_MAX, B rows
//       contiguous (or B packed at plan time); all of A must fit the shared panel. AVX-512:
//       M = 13..16 uses the 16 x 16 kernel over B in place, and so does M = 17..32 (two 16-row
//       passes) when B's rows start on 64-byte lines; else M > MR copies B in groups of
//       SKINNY_GROUP = 8 slivers; chunks of max(ceil(slivers / (4 threads)), 128 / NR) slivers.
//     stream_b: M <= MC, K * N > DIRECT_B_MAX, B row stride a multiple of 64 bytes: B read in
//       place by the blocked path.
//     Batch mode: batch >= 2 and (batch >= 2 threads or M N K < 64^3): one batch per task.
//     Row blocks shrink (down to 4 MR) to give about 4 tasks per thread; column chunks when
//       there are fewer than 2 row blocks per thread; A shared (packed once) when the row
//       blocks fit the threads.
//     Plan-time packing of a constant rhs (linalg.c, dot_prepare): batch 1, M > 1, N > 1,
//       K * N > 64 * 256, f32 or f64 GEMM (not the bf16 one).
//     bf16 x bf16 with AVX-512 BF16 (gemm_x86_64_avx512bf16.c): the k-pair driver, KC = 512
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
//   Loop fusion (loop_fusion.c): at most 12 registers, 16 inputs, 6 broadcast operands and 32
//     ops per fused loop (longer chains split), blocks of 256 elements, chunks of 64 blocks.
//     Constant folding (opt.c): results up to 1 MiB are computed at plan time.
//   Quantized dense (kernels/generic/quant.c, kernels/x86_64/quant_*): 64-column tiles of one
//     weight row; tasks of 65536 / (K M 64) tiles; quant_int8 (batch 1, GGML): activations
//     quantized to int8 per 32 / 256 block, VNNI dot products, rows 4 at a time with a tail.
#include <math.h>
#include <stdint.h>

#include "api_common.h"
#include "backends/c/engine_internal.h"  // only to check that the planner took the fast path
#include "cml/autodiff.h"
#include "cml/fused.h"
#include "test.h"

//===--- configurations ---===//

// The oracle first; every other configuration is compared with it.
static const char* const kSwConfigs[] = {
    "c:reference=true",
    "c:threads=1",
    "c:threads=2",
    "c:threads=3",
    "c:threads=4",
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
static double sw_uniform(uint64_t* state) {
  return (double)sw_next(state) / 2147483648.0 * 2.0 - 1.0;
}

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

static const sw_tol_t kSwExact = {0.0, 0.0};

// Builds the case's graph into |f| and writes its outputs to |outs|; returns their count.
typedef size_t (*sw_build_fn)(cml_function_t* f, const void* arg, cml_value_t* outs);

typedef struct sw_result_t sw_result_t;

typedef struct sw_case_t {
  char name[160];
  sw_build_fn build;
  const void* arg;
  sw_tol_t tol;
  int64_t int_hi;  // integer parameters are filled with [0, int_hi)
  // Fills input |i| itself when it returns true (else the default fill).
  bool (*fill)(const void* arg, size_t i, const cml_shape_t* shape, void* data);
  // An independent oracle for kernels that reference mode shares with the others (movement and
  // indexing): computes output |o|'s element |i| from the oracle run's inputs |r|.
  double (*host)(const void* arg, const sw_result_t* r, size_t o, int64_t i);
  // Planner rewrites every configuration but the oracle must report (cmlc_opt_stats_t), so
  // that the case keeps exercising the path it was written for.
  uint32_t want_prepared, want_segmented, want_placed, want_fused, want_folded;
  // Configurations to run besides the oracle (NULL: kSwConfigs[1..]).
  const char* const* configs;
  int config_count;
} sw_case_t;

struct sw_result_t {
  size_t count;
  cml_dtype_t dtype[8];
  int64_t elems[8];
  void* data[8];
  // The inputs it ran on (kept for a host oracle).
  size_t in_count;
  cml_shape_t in_shape[32];
  void* in_data[32];
};

static void sw_result_free(sw_result_t* r) {
  for (size_t i = 0; i < r->count; ++i) free(r->data[i]);
  for (size_t i = 0; i < r->in_count; ++i) free(r->in_data[i]);
  memset(r, 0, sizeof *r);
}

// The planner's report for the last executable sw_run_config compiled.
static cmlc_opt_stats_t sw_stats;

// Builds, compiles and runs the case on |config| (after a first run on other data when |warm|);
// fills |out|. Prints and returns false on error.
static bool sw_run_config(const sw_case_t* c, const char* config, bool warm, sw_result_t* out) {
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
  sw_stats = ((const cmlc_executable_t*)exe)->stats;
  enum { kMaxIn = 32 };
  const size_t n_in = cml_executable_input_count(exe);
  void* in_data[kMaxIn] = {0};
  void* out_data[8] = {0};
  cml_buffer_t* ins[kMaxIn] = {0};
  cml_buffer_t* res[8] = {0};
  bool ok = n_in <= kMaxIn && cml_executable_output_count(exe) == n_out && n_out <= 8;
  if (!ok) fprintf(stderr, "%s: %zu inputs, %zu outputs: too many\n", c->name, n_in, n_out);
  // A first execution on other data: state a kernel keeps between executions (packed operands,
  // per-thread caches, the storage cache) must not leak into the next one.
  for (size_t i = 0; warm && ok && i < n_in; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    void* tmp = malloc(cml_shape_byte_size(s) + 1);
    ok = tmp != NULL;
    if (ok && !(c->fill && c->fill(c->arg, i, s, tmp)))
      sw_fill(tmp, s->dtype, cml_shape_element_count(s), i + 1001, c->int_hi);
    if (ok) st = cml_buffer_from_host(backend, 0, s, tmp, cml_shape_byte_size(s), &ins[i]);
    ok = ok && st == CML_OK;
    free(tmp);
  }
  if (warm && ok) st = cml_executable_execute(exe, ins, n_in, NULL, 0, res);
  for (size_t i = 0; warm && i < kMaxIn; ++i) cml_buffer_release(ins[i]), ins[i] = NULL;
  for (size_t i = 0; warm && i < 8; ++i) cml_buffer_release(res[i]), res[i] = NULL;
  ok = ok && st == CML_OK;
  for (size_t i = 0; ok && i < n_in; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    in_data[i] = malloc(cml_shape_byte_size(s) + 1);
    ok = in_data[i] != NULL;
    if (ok && !(c->fill && c->fill(c->arg, i, s, in_data[i])))
      sw_fill(in_data[i], s->dtype, cml_shape_element_count(s), i + 1, c->int_hi);
    if (ok) st = cml_buffer_from_host(backend, 0, s, in_data[i], cml_shape_byte_size(s), &ins[i]);
    ok = ok && st == CML_OK;
  }
  for (size_t i = 0; ok && i < n_out; ++i) {
    const cml_shape_t* s = cml_executable_output_shape(exe, i);
    out_data[i] = malloc(cml_shape_byte_size(s) + 1);
    ok = out_data[i] != NULL;
    out->dtype[i] = s->dtype;
    out->elems[i] = cml_shape_element_count(s);
  }
  if (ok) st = cml_executable_execute(exe, ins, n_in, NULL, 0, res);
  for (size_t i = 0; ok && st == CML_OK && i < n_out; ++i) {
    st =
        cml_buffer_copy_to_host(res[i], out_data[i], cml_shape_byte_size(cml_buffer_shape(res[i])));
  }
  if (st != CML_OK) {
    fprintf(stderr, "%s on %s: execute: %s\n", c->name, config, cml_status_message(st));
    cml_status_free(st);
    ok = false;
  }
  for (size_t i = 0; i < n_in && i < kMaxIn; ++i) cml_buffer_release(ins[i]);
  for (size_t i = 0; i < n_out && i < 8; ++i) cml_buffer_release(res[i]);
  out->in_count = n_in < kMaxIn ? n_in : kMaxIn;
  for (size_t i = 0; i < out->in_count; ++i) {
    out->in_shape[i] = *cml_executable_input_shape(exe, i);
    out->in_data[i] = in_data[i];
  }
  out->count = n_out;
  for (size_t i = 0; i < n_out && i < 8; ++i) out->data[i] = out_data[i];
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
  if (getenv("CML_SWEEP_VERBOSE")) printf("case: %s\n", c->name);
  if (!sw_run_config(c, kSwConfigs[0], false, &want)) return 1;
  int bad_configs = 0;
  if (c->host) {
    int64_t bad = 0;
    for (size_t o = 0; o < want.count; ++o) {
      for (int64_t i = 0; i < want.elems[o]; ++i) {
        const double w = c->host(c->arg, &want, o, i);
        const double g = sw_load(want.data[o], want.dtype[o], i);
        ++sw_values_checked;
        if (w == g || fabs(g - w) <= c->tol.atol + c->tol.rtol * fabs(w)) continue;
        if (bad++ < 4) {
          fprintf(stderr, "%s on %s: output %zu [%lld]: got %.9g, host loop %.9g\n", c->name,
                  kSwConfigs[0], o, (long long)i, g, w);
        }
      }
    }
    if (bad > 0) {
      fprintf(stderr, "%s on %s: %lld mismatches with the host loop\n", c->name, kSwConfigs[0],
              (long long)bad);
      ++bad_configs;
    }
  }
  const char* const* configs = c->configs ? c->configs : kSwConfigs + 1;
  const int config_count = c->configs ? c->config_count : kSwConfigCount - 1;
  for (int ci = 0; ci < config_count; ++ci) {
    sw_result_t got;
    if (!sw_run_config(c, configs[ci], true, &got)) {
      ++bad_configs;
      continue;
    }
    int64_t bad = 0;
    if (sw_stats.prepared < c->want_prepared || sw_stats.segmented < c->want_segmented ||
        sw_stats.concat_placed < c->want_placed || sw_stats.fused_groups < c->want_fused ||
        sw_stats.folded < c->want_folded) {
      fprintf(stderr,
              "%s on %s: planner: %u prepared (want >= %u), %u segmented (want >= %u), %u "
              "concat operands placed (want >= %u), %u fused loops (want >= %u), %u folded "
              "(want >= %u)\n",
              c->name, configs[ci], sw_stats.prepared, c->want_prepared, sw_stats.segmented,
              c->want_segmented, sw_stats.concat_placed, c->want_placed, sw_stats.fused_groups,
              c->want_fused, sw_stats.folded, c->want_folded);
      ++bad;
    }
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
#define SW_DONE(bad)                                                        \
  do {                                                                      \
    printf("  %lld cases, %lld values compared\n", (long long)sw_cases_run, \
           (long long)sw_values_checked);                                   \
    ASSERT_TRUE(sw_values_checked > 0);                                     \
    sw_cases_run = sw_values_checked = 0;                                   \
    ASSERT_EQ_INT((bad), 0);                                                \
  } while (0)

#define SW_SHAPE(dt, ...) API_SHAPE(dt, __VA_ARGS__)

//===--- DotGeneral ---===//

// lhs [batch..., M, K] (or [K, M] when lhs_t), rhs [batch..., K, N] (or [N, K] when rhs_t).
typedef struct sw_dot_t {
  int64_t batch, m, k, n;  // batch 0: no batch axis
  bool lhs_t, rhs_t;
  cml_dtype_t in, acc, out;     // acc / out CML_DTYPE_INVALID: the input dtype
  bool rhs_const;               // rhs a constant (packed at plan time when it qualifies)
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
  const cml_dtype_t out = d.out != CML_DTYPE_INVALID   ? d.out
                          : d.acc != CML_DTYPE_INVALID ? d.acc
                                                       : d.in;
  snprintf(c.name, sizeof c.name, "dot %s b%lld m%lld k%lld n%lld%s%s%s%s acc %s out %s",
           cml_dtype_name(d.in), (long long)d.batch, (long long)d.m, (long long)d.k, (long long)d.n,
           d.lhs_t ? " lhsT" : "", d.rhs_t ? " rhsT" : "", d.rhs_const ? " const-rhs" : "",
           d.lhs_vector || d.rhs_vector ? " vector" : "", cml_dtype_name(acc), cml_dtype_name(out));
  c.build = sw_build_dot;
  c.arg = &d;
  const bool f32_or_f64_gemm =
      d.in == CML_DTYPE_F32 || d.in == CML_DTYPE_F64 || acc == CML_DTYPE_F64;
  c.want_prepared =
      d.rhs_const && f32_or_f64_gemm && d.batch == 0 && d.m > 1 && d.n > 1 && d.k * d.n > 64 * 256;
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
  static const int64_t kn[][2] = {{3, 4095},  {3, 4096},   {3, 4097},  {3, 8191},  {3, 8192},
                                  {3, 8300},  {3, 12289},  {1, 130},   {17, 4100}, {40, 8300},
                                  {64, 4097}, {300, 1000}, {257, 300}, {5, 64},    {2, 24577}};
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
  static const int64_t mk[][2] = {{8300, 3}, {1000, 17}, {5, 5000}, {4097, 64},
                                  {2, 3},    {3000, 1},  {9, 2049}};
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

// M = 2..33 around the skinny limit (32), the 16 x 16 kernel's range (13..16, and 17..32 in
// two passes on 64-byte B rows) and MR (12 / 6 / 4), with K * N on both sides of DIRECT_B_MAX,
// K across KC, N not a multiple of 16 / 32, and B rows on and off 64-byte lines (stream_b).
TEST(dot_skinny) {
  static const int64_t ms[] = {2, 5, 6, 7, 12, 13, 16, 17, 24, 31, 32, 33};
  static const int64_t kn[][2] = {{64, 256},   {64, 257},   {70, 300},
                                  {300, 1001}, {257, 1024}, {300, 1040}};
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
  // B packed at plan time across several column blocks (NC = 2048); A too large for the
  // shared panel (the blocked path).
  static const int64_t mkn[][3] = {{5, 70, 4100},   {16, 70, 4100},  {2, 300, 2049},
                                   {31, 300, 2050}, {20, 3000, 100}, {14, 2000, 70}};
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    bad += sw_dot(d);
    d.rhs_const = true;
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

// The blocked path across MC (144), NC (2048) and KC (256), with row-block splitting for
// several threads, transposed operands, and a rhs packed at plan time.
TEST(dot_blocked) {
  static const int64_t mkn[][3] = {{144, 256, 2048}, {145, 257, 2049}, {143, 255, 100},
                                   {289, 513, 70},   {416, 64, 300},   {100, 64, 256},
                                   {100, 64, 257},   {37, 1000, 33},   {433, 31, 47},
                                   {100, 64, 272},   {40, 100, 4112},  {144, 70, 4096}};
  int bad = 0;
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    bad += sw_dot(d);
    if (mkn[i][0] * mkn[i][1] * mkn[i][2] > 20000000) {
      // The largest: row-major and a constant rhs only (the oracle's scalar loops are slow
      // under sanitizers).
      d.rhs_const = true;
      if (i == 1) bad += sw_dot(d);
      continue;
    }
    d.lhs_t = true;
    bad += sw_dot(d);
    d.lhs_t = false;
    d.rhs_t = true;
    bad += sw_dot(d);
    d.rhs_t = false;
    d.rhs_const = true;
    bad += sw_dot(d);
    d.rhs_t = true;  // constant and transposed
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

// Small products whose A is read in place (one thread or batch mode, k <= KC, A rows within
// 32 KiB; AVX-512 tiles of up to 14 rows), around those bounds.
TEST(dot_direct_a) {
  static const int64_t bmkn[][4] = {
      {0, 13, 13, 13},   {0, 14, 13, 32},  {0, 15, 17, 33},  {0, 28, 9, 47}, {0, 29, 31, 64},
      {0, 32, 256, 20},  {0, 33, 248, 20}, {0, 31, 257, 20}, {0, 2, 3, 5},   {0, 64, 128, 65},
      {384, 13, 13, 32}, {8, 14, 256, 20}, {6, 29, 64, 17},  {3, 33, 250, 9}};
  int bad = 0;
  for (size_t i = 0; i < sizeof bmkn / sizeof bmkn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(bmkn[i][1], bmkn[i][2], bmkn[i][3]);
    d.batch = bmkn[i][0];
    bad += sw_dot(d);
    d.rhs_t = true;
    bad += sw_dot(d);
    d.rhs_t = false;
    d.lhs_t = true;  // A not row-major: packed
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

// Products of 2..64 rows with a large B stored transposed ([N, K], not constant): A packed
// k-major in passes of 16 and 8 lanes, the weight read row by row in groups of 12 rows.
TEST(dot_transposed_b_small_m) {
  static const int64_t ms[] = {2, 7, 8, 9, 16, 17, 24, 25, 40, 47, 48, 49, 63, 64, 65};
  static const int64_t kn[][2] = {{70, 300}, {300, 1001}, {17, 4099}};
  int bad = 0;
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i) {
    for (size_t j = 0; j < sizeof kn / sizeof kn[0]; ++j) {
      if (j == 2 && ms[i] % 8 != 1) continue;  // the widest B: a few heights
      sw_dot_t d = sw_dot_f32(ms[i], kn[j][0], kn[j][1]);
      d.rhs_t = true;
      bad += sw_dot(d);
      if (j != 1) continue;
      d.lhs_t = true;  // A through its offset tables
      bad += sw_dot(d);
    }
  }
  SW_DONE(bad);
}

// K of 0, 1 and 2 (offset tables of one entry have no stride), empty outputs.
TEST(dot_tiny_k) {
  static const int64_t mkn[][3] = {{145, 1, 2049}, {13, 2, 4100}, {1, 1, 8300}, {5, 0, 7},
                                   {1, 0, 4097},   {0, 5, 7},     {4, 7, 0},    {33, 1, 65}};
  int bad = 0;
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    bad += sw_dot(d);
    d.rhs_t = true;
    bad += sw_dot(d);
    d.in = CML_DTYPE_BF16;
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

// Batched products: batch mode (one batch per task) and the per-batch blocked path.
TEST(dot_batched) {
  static const int64_t bmkn[][4] = {{8, 20, 20, 20},  {3, 64, 64, 64},   {2, 130, 70, 33},
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

// DotGeneral with axes that make the offset tables non-affine (several free or contracting
// axes interleaved) or put the batch axis in the middle: the generic packing loops.
typedef struct sw_dotg_t {
  int32_t lrank, rrank;
  int64_t ldims[4], rdims[4];
  cml_dot_config_t cfg;
  cml_dtype_t dtype;
  int64_t k;
} sw_dotg_t;

static size_t sw_build_dotg(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_dotg_t* g = arg;
  cml_shape_t ls = cml_shape_make(g->dtype, g->lrank, g->ldims);
  cml_shape_t rs = cml_shape_make(g->dtype, g->rrank, g->rdims);
  outs[0] =
      cml_op_dot_general(f, cml_parameter(f, "lhs", &ls), cml_parameter(f, "rhs", &rs), &g->cfg);
  return 1;
}

TEST(dot_general_axes) {
  sw_dotg_t cases[5];
  memset(cases, 0, sizeof cases);
  // lhs [3, 40, 5, 7] . rhs [7, 9, 40], contracting (1, 3) with (2, 0): M = 15, K = 280, N = 9.
  cases[0] = (sw_dotg_t){4, 3, {3, 40, 5, 7}, {7, 9, 40}, {0}, CML_DTYPE_F32, 280};
  cases[0].cfg.lhs_contracting_count = cases[0].cfg.rhs_contracting_count = 2;
  cases[0].cfg.lhs_contracting_axes[0] = 1;
  cases[0].cfg.lhs_contracting_axes[1] = 3;
  cases[0].cfg.rhs_contracting_axes[0] = 2;
  cases[0].cfg.rhs_contracting_axes[1] = 0;
  cases[1] = cases[0];
  cases[1].dtype = CML_DTYPE_BF16;
  // lhs [1, 300, 2] . rhs [300, 4100, 2], contracting (1, 2) with (0, 2): M = 1, N = 4100, a B
  // whose k offsets are not affine (no GEMV).
  cases[2] = (sw_dotg_t){3, 3, {1, 300, 2}, {300, 4100, 2}, {0}, CML_DTYPE_F32, 600};
  cases[2].cfg.lhs_contracting_count = cases[2].cfg.rhs_contracting_count = 2;
  cases[2].cfg.lhs_contracting_axes[0] = 1;
  cases[2].cfg.lhs_contracting_axes[1] = 2;
  cases[2].cfg.rhs_contracting_axes[0] = 0;
  cases[2].cfg.rhs_contracting_axes[1] = 2;
  // Batch axis in the middle: lhs [33, 4, 70] . rhs [70, 4, 129], batch 1 / 1.
  cases[3] = (sw_dotg_t){3, 3, {33, 4, 70}, {70, 4, 129}, {0}, CML_DTYPE_F32, 70};
  cases[3].cfg.lhs_contracting_count = cases[3].cfg.rhs_contracting_count = 1;
  cases[3].cfg.lhs_contracting_axes[0] = 2;
  cases[3].cfg.rhs_contracting_axes[0] = 0;
  cases[3].cfg.lhs_batch_count = cases[3].cfg.rhs_batch_count = 1;
  cases[3].cfg.lhs_batch_axes[0] = cases[3].cfg.rhs_batch_axes[0] = 1;
  cases[4] = cases[3];
  cases[4].dtype = CML_DTYPE_F16;
  int bad = 0;
  for (size_t i = 0; i < 5; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "DotGeneral axes case %zu %s", i,
             cml_dtype_name(cases[i].dtype));
    c.build = sw_build_dotg;
    c.arg = &cases[i];
    c.tol = sw_tol_dot(cases[i].k, CML_DTYPE_F32, cases[i].dtype);
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

// Half operands (widened while packing; bf16 x bf16 with AVX-512 BF16: its own driver, KC 512
// pairs), half outputs, and the f64 GEMM (f64 operands, or f32 with an f64 accumulator).
TEST(dot_dtypes) {
  static const int64_t mkn[][3] = {{1, 3, 8300},   {5, 513, 70},     {33, 300, 129},
                                   {13, 1025, 65}, {145, 257, 2049}, {1, 1030, 33}};
  static const cml_dtype_t halves[] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  int bad = 0;
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    // The one product across every block (MC, KC, NC): half and f64 operands, one layout each
    // (the oracle's scalar loops are slow under sanitizers).
    const bool large = mkn[i][0] * mkn[i][1] * mkn[i][2] > 20000000;
    for (size_t h = 0; h < 2; ++h) {
      sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
      d.in = halves[h];
      bad += sw_dot(d);  // half out
      if (large) continue;
      d.out = CML_DTYPE_F32;
      d.acc = CML_DTYPE_F32;
      d.rhs_t = true;
      bad += sw_dot(d);  // f32 out, transposed B
      d.rhs_t = false;
      d.lhs_t = true;
      bad += sw_dot(d);  // transposed A
    }
    sw_dot_t d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    d.in = CML_DTYPE_F64;
    bad += sw_dot(d);
    if (large) continue;
    d.rhs_const = true;
    bad += sw_dot(d);
    // A constant half rhs (widened and packed at plan time unless the bf16 driver runs).
    for (size_t h = 0; h < 2; ++h) {
      d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
      d.in = halves[h];
      d.rhs_const = true;
      d.rhs_t = h == 1;
      bad += sw_dot(d);
    }
    d = sw_dot_f32(mkn[i][0], mkn[i][1], mkn[i][2]);
    d.acc = CML_DTYPE_F64;
    d.out = CML_DTYPE_F32;
    bad += sw_dot(d);
  }
  SW_DONE(bad);
}

//===--- FusedDense ---===//

typedef struct sw_dense_t {
  int64_t m, k, n;
  cml_dense_layout_t layout;
  cml_activation_t act;
  bool bias, weight_const;
} sw_dense_t;

static size_t sw_build_dense(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_dense_t* d = arg;
  cml_shape_t xs = SW_SHAPE(CML_DTYPE_F32, d->m, d->k);
  cml_shape_t ws = d->layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS
                       ? SW_SHAPE(CML_DTYPE_F32, d->k, d->n)
                       : SW_SHAPE(CML_DTYPE_F32, d->n, d->k);
  cml_shape_t bs = SW_SHAPE(CML_DTYPE_F32, d->n);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w = d->weight_const ? sw_const(f, &ws, 91) : cml_parameter(f, "w", &ws);
  cml_value_t b = d->bias ? cml_parameter(f, "b", &bs) : CML_VALUE_INVALID;
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  cfg.activation = d->act;
  cfg.weight_layout = d->layout;
  outs[0] = cml_op_fused_dense(f, x, w, b, &cfg);
  return 1;
}

TEST(fused_dense) {
  static const int64_t mkn[][3] = {{1, 3, 8300},  {1, 40, 4097},  {5, 3, 4100},
                                   {13, 70, 300}, {33, 257, 129}, {150, 300, 2049}};
  static const cml_activation_t acts[] = {CML_ACTIVATION_NONE, CML_ACTIVATION_GELU,
                                          CML_ACTIVATION_SILU, CML_ACTIVATION_RELU,
                                          CML_ACTIVATION_TANH, CML_ACTIVATION_HARD_SWISH};
  int bad = 0;
  for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
    for (int layout = 0; layout < 2; ++layout) {
      sw_dense_t d = {mkn[i][0],
                      mkn[i][1],
                      mkn[i][2],
                      (cml_dense_layout_t)layout,
                      acts[(i * 2 + (size_t)layout) % 6],
                      (i + (size_t)layout) % 2 == 0,
                      i % 3 == 1};
      sw_case_t c;
      memset(&c, 0, sizeof c);
      snprintf(c.name, sizeof c.name, "FusedDense m%lld k%lld n%lld %s %s%s%s", (long long)d.m,
               (long long)d.k, (long long)d.n, cml_dense_layout_name(d.layout),
               cml_activation_name(d.act), d.bias ? " bias" : "", d.weight_const ? " const-w" : "");
      c.build = sw_build_dense;
      c.arg = &d;
      c.tol = sw_tol_dot(d.k + 1, CML_DTYPE_F32, CML_DTYPE_F32);
      c.tol.rtol += 1e-6;  // the activations' own approximations
      bad += sw_check(&c);
    }
  }
  SW_DONE(bad);
}

//===--- ConvGeneral ---===//

// Input [N, H, W, C] (or [N, C, H, W] when nchw), kernel [KH, KW, C / groups, O], output
// channels-last (or channels-first when nchw).
typedef struct sw_conv_t {
  int64_t n, h, w, c, kh, kw, o, stride, pad, groups, dil;
  bool nchw, kernel_const;
  cml_dtype_t dtype;
} sw_conv_t;

static size_t sw_build_conv(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_conv_t* v = arg;
  cml_shape_t xs = v->nchw ? SW_SHAPE(v->dtype, v->n, v->c, v->h, v->w)
                           : SW_SHAPE(v->dtype, v->n, v->h, v->w, v->c);
  cml_shape_t ks = SW_SHAPE(v->dtype, v->kh, v->kw, v->c / v->groups, v->o);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t k = v->kernel_const ? sw_const(f, &ks, 55) : cml_parameter(f, "k", &ks);
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = 2;
  cc.input_batch_axis = 0;
  cc.input_channel_axis = v->nchw ? 1 : 3;
  cc.input_spatial_axes[0] = v->nchw ? 2 : 1;
  cc.input_spatial_axes[1] = v->nchw ? 3 : 2;
  cc.kernel_input_channel_axis = 2;
  cc.kernel_output_channel_axis = 3;
  cc.kernel_spatial_axes[0] = 0;
  cc.kernel_spatial_axes[1] = 1;
  cc.output_batch_axis = 0;
  cc.output_channel_axis = cc.input_channel_axis;
  cc.output_spatial_axes[0] = cc.input_spatial_axes[0];
  cc.output_spatial_axes[1] = cc.input_spatial_axes[1];
  for (int d = 0; d < 2; ++d) {
    cc.strides[d] = v->stride;
    cc.padding_low[d] = cc.padding_high[d] = v->pad;
    cc.kernel_dilations[d] = v->dil;
  }
  cc.channel_group_count = v->groups;
  outs[0] = cml_op_conv_general(f, x, k, &cc);
  return 1;
}

static int sw_conv(sw_conv_t v) {
  sw_case_t c;
  memset(&c, 0, sizeof c);
  if (v.dtype == CML_DTYPE_INVALID) v.dtype = CML_DTYPE_F32;
  if (v.groups < 1) v.groups = 1;
  if (v.stride < 1) v.stride = 1;
  if (v.dil < 1) v.dil = 1;
  snprintf(c.name, sizeof c.name,
           "conv %s x[%lld,%lld,%lld,%lld]%s k%lldx%lld o%lld s%lld p%lld g%lld d%lld%s",
           cml_dtype_name(v.dtype), (long long)v.n, (long long)v.h, (long long)v.w, (long long)v.c,
           v.nchw ? " NCHW" : "", (long long)v.kh, (long long)v.kw, (long long)v.o,
           (long long)v.stride, (long long)v.pad, (long long)v.groups, (long long)v.dil,
           v.kernel_const ? " const-k" : "");
  c.build = sw_build_conv;
  c.arg = &v;
  const cml_dtype_t acc = v.dtype == CML_DTYPE_F64 ? CML_DTYPE_F64 : CML_DTYPE_F32;
  c.tol = sw_tol_dot(v.kh * v.kw * v.c / v.groups, acc, v.dtype);
  return sw_check(&c);
}

TEST(conv) {
  int bad = 0;
  // 1x1: input read in place / as A; under 12 output pixels: the GEMM path.
  bad += sw_conv((sw_conv_t){.n = 1, .h = 8, .w = 8, .c = 300, .kh = 1, .kw = 1, .o = 70});
  bad += sw_conv((sw_conv_t){.n = 3, .h = 1, .w = 3, .c = 65, .kh = 1, .kw = 1, .o = 129});
  bad += sw_conv((sw_conv_t){.n = 2, .h = 2, .w = 6, .c = 33, .kh = 1, .kw = 1, .o = 64});
  bad +=
      sw_conv((sw_conv_t){.n = 1, .h = 7, .w = 9, .c = 64, .kh = 1, .kw = 1, .o = 65, .stride = 2});
  bad += sw_conv(
      (sw_conv_t){.n = 1, .h = 8, .w = 8, .c = 300, .kh = 1, .kw = 1, .o = 70, .nchw = true});
  // 3x3 around the 64-channel blocks and 6-pixel blocks.
  bad += sw_conv((sw_conv_t){.n = 2, .h = 9, .w = 9, .c = 17, .kh = 3, .kw = 3, .o = 65, .pad = 1});
  bad += sw_conv((sw_conv_t){.n = 1,
                             .h = 13,
                             .w = 11,
                             .c = 64,
                             .kh = 3,
                             .kw = 3,
                             .o = 128,
                             .pad = 1,
                             .kernel_const = true});
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 10, .w = 7, .c = 5, .kh = 3, .kw = 3, .o = 63, .stride = 2, .dil = 2, .pad = 2});
  // The 7x7 / 2 stem.
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 32, .w = 30, .c = 3, .kh = 7, .kw = 7, .o = 64, .stride = 2, .pad = 3});
  // K over DIRECT_K_MAX (1280): whole taps per chunk, and channel ranges per tap.
  bad +=
      sw_conv((sw_conv_t){.n = 1, .h = 6, .w = 6, .c = 200, .kh = 3, .kw = 3, .o = 16, .pad = 1});
  bad += sw_conv((sw_conv_t){.n = 1, .h = 5, .w = 5, .c = 500, .kh = 3, .kw = 3, .o = 8, .pad = 1});
  bad += sw_conv((sw_conv_t){.n = 1, .h = 5, .w = 5, .c = 1300, .kh = 1, .kw = 1, .o = 8});
  bad +=
      sw_conv((sw_conv_t){.n = 1, .h = 4, .w = 4, .c = 1281, .kh = 3, .kw = 3, .o = 67, .pad = 1});
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 14, .w = 14, .c = 143, .kh = 3, .kw = 3, .o = 9, .pad = 1, .nchw = true});
  // The input strip over STRIP_MAX (1 MiB) at one output row: the im2col path instead.
  bad +=
      sw_conv((sw_conv_t){.n = 1, .h = 3, .w = 100, .c = 900, .kh = 3, .kw = 3, .o = 8, .pad = 1});
  // Feature groups (im2col + GEMM per group), depthwise, several row tiles.
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 10, .w = 10, .c = 32, .kh = 3, .kw = 3, .o = 32, .pad = 1, .groups = 4});
  bad += sw_conv((sw_conv_t){
      .n = 2, .h = 30, .w = 31, .c = 32, .kh = 3, .kw = 3, .o = 64, .pad = 1, .groups = 2});
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 12, .w = 12, .c = 32, .kh = 3, .kw = 3, .o = 32, .pad = 1, .groups = 32});
  bad += sw_conv((sw_conv_t){.n = 2,
                             .h = 9,
                             .w = 9,
                             .c = 24,
                             .kh = 5,
                             .kw = 5,
                             .o = 48,
                             .pad = 2,
                             .groups = 24,
                             .stride = 2});
  // Depthwise with more channels than 16384 / taps (one row per task), constant kernels on the
  // grouped, depthwise and f64 paths.
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 5, .w = 5, .c = 2048, .kh = 3, .kw = 3, .o = 2048, .pad = 1, .groups = 2048});
  bad += sw_conv((sw_conv_t){.n = 1,
                             .h = 10,
                             .w = 10,
                             .c = 32,
                             .kh = 3,
                             .kw = 3,
                             .o = 32,
                             .pad = 1,
                             .groups = 4,
                             .kernel_const = true});
  bad += sw_conv((sw_conv_t){.n = 1,
                             .h = 12,
                             .w = 12,
                             .c = 32,
                             .kh = 3,
                             .kw = 3,
                             .o = 32,
                             .pad = 1,
                             .groups = 32,
                             .kernel_const = true});
  bad += sw_conv((sw_conv_t){.n = 1,
                             .h = 9,
                             .w = 9,
                             .c = 17,
                             .kh = 3,
                             .kw = 3,
                             .o = 33,
                             .pad = 1,
                             .dtype = CML_DTYPE_F64,
                             .kernel_const = true});
  // Other dtypes: f64 (im2col, f64 GEMM), bf16 and f16 (widened).
  bad += sw_conv((sw_conv_t){.n = 1,
                             .h = 9,
                             .w = 9,
                             .c = 17,
                             .kh = 3,
                             .kw = 3,
                             .o = 33,
                             .pad = 1,
                             .dtype = CML_DTYPE_F64});
  bad += sw_conv((sw_conv_t){.n = 1,
                             .h = 9,
                             .w = 9,
                             .c = 17,
                             .kh = 3,
                             .kw = 3,
                             .o = 65,
                             .pad = 1,
                             .dtype = CML_DTYPE_BF16});
  bad += sw_conv((sw_conv_t){
      .n = 1, .h = 8, .w = 8, .c = 40, .kh = 1, .kw = 1, .o = 70, .dtype = CML_DTYPE_F16});
  SW_DONE(bad);
}

//===--- reductions ---===//

typedef struct sw_reduce_t {
  int32_t rank;
  int64_t dims[4];
  int32_t axis_count;  // 0: all
  int64_t axes[4];
  cml_op_t op;
  cml_dtype_t dtype;
} sw_reduce_t;

static size_t sw_build_reduce(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_reduce_t* r = arg;
  cml_shape_t xs = cml_shape_make(r->dtype, r->rank, r->dims);
  cml_value_t x = cml_parameter(f, "x", &xs);
  outs[0] = cml_op_reduce(f, r->op, x, r->axes, (size_t)r->axis_count);
  return 1;
}

static int sw_reduce(sw_reduce_t r) {
  sw_case_t c;
  memset(&c, 0, sizeof c);
  if (r.dtype == CML_DTYPE_INVALID) r.dtype = CML_DTYPE_F32;
  int64_t total = 1, reduced = 1;
  for (int32_t d = 0; d < r.rank; ++d) total *= r.dims[d];
  for (int32_t a = 0; a < r.axis_count; ++a) reduced *= r.dims[r.axes[a]];
  if (r.axis_count == 0) reduced = total;
  snprintf(c.name, sizeof c.name, "%s %s [%lld,%lld,%lld,%lld] rank %d over %d axes (%lld)",
           cml_op_name(r.op), cml_dtype_name(r.dtype), (long long)r.dims[0], (long long)r.dims[1],
           (long long)r.dims[2], (long long)r.dims[3], r.rank, r.axis_count, (long long)reduced);
  c.build = sw_build_reduce;
  c.arg = &r;
  c.tol =
      r.op == CML_OP_REDUCE_SUM
          ? sw_tol_dot(reduced, r.dtype == CML_DTYPE_F64 ? CML_DTYPE_F64 : CML_DTYPE_F32, r.dtype)
          : kSwExact;
  return sw_check(&c);
}

TEST(reduce) {
  int bad = 0;
  static const cml_op_t ops[] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX};
  for (int o = 0; o < 2; ++o) {
    const cml_op_t op = ops[o];
    // Rows (last axis), long and odd.
    bad += sw_reduce((sw_reduce_t){2, {7, 70001}, 1, {1}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {4097, 17}, 1, {1}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {3, 255}, 1, {1}, op, 0});
    // Columns: the SIMD column path's 4096-column tiles and 128-row blocks (one and several).
    bad += sw_reduce((sw_reduce_t){2, {1000, 4097}, 1, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {128, 300}, 1, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {129, 257}, 1, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {16385, 3}, 1, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){3, {3, 300, 257}, 1, {1}, op, 0});
    bad += sw_reduce((sw_reduce_t){3, {5, 70, 9}, 2, {0, 2}, op, 0});
    // Everything: blocks of 65536, at most 1024 partials.
    bad += sw_reduce((sw_reduce_t){1, {65537}, 0, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){1, {131071}, 0, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){1, {131072}, 0, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {3, 65537}, 0, {0}, op, 0});
    bad += sw_reduce((sw_reduce_t){2, {1031, 997}, 0, {0}, op, 0});
    // Other dtypes.
    bad += sw_reduce((sw_reduce_t){2, {129, 4099}, 1, {0}, op, CML_DTYPE_F64});
    bad += sw_reduce((sw_reduce_t){2, {33, 4099}, 1, {1}, op, CML_DTYPE_BF16});
  }
  SW_DONE(bad);
}

//===--- softmax, layer norm, gelu ---===//

typedef struct sw_norm_t {
  int kind;  // 0 softmax, 1 layer norm, 2 exact gelu, 3 tanh gelu, 4 softmax over axis 0
  int32_t rank;
  int64_t dims[3];
  int32_t axis_count;  // layer norm: the last |axis_count| axes
  cml_dtype_t dtype;
} sw_norm_t;

static size_t sw_build_norm(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_norm_t* n = arg;
  cml_shape_t xs = cml_shape_make(n->dtype, n->rank, n->dims);
  cml_value_t x = cml_parameter(f, "x", &xs);
  switch (n->kind) {
    case 0:
      outs[0] = cml_op_fused_softmax(f, x, -1);
      break;
    case 4:
      outs[0] = cml_op_fused_softmax(f, x, 0);
      break;
    case 1: {
      int64_t axes[3], gdims[3];
      for (int32_t a = 0; a < n->axis_count; ++a) {
        axes[a] = n->rank - n->axis_count + a;
        gdims[a] = n->dims[axes[a]];
      }
      cml_shape_t gs = cml_shape_make(n->dtype, n->axis_count, gdims);
      cml_value_t g = cml_parameter(f, "gamma", &gs);
      cml_value_t b = cml_parameter(f, "beta", &gs);
      outs[0] = cml_op_fused_layer_norm(f, x, axes, (size_t)n->axis_count, 1e-5, g, b);
      break;
    }
    default:
      outs[0] = cml_op_fused_gelu(f, x, n->kind == 2);
      break;
  }
  return 1;
}

TEST(softmax_layernorm_gelu) {
  static const sw_norm_t cases[] = {
      {0, 2, {3, 4097}, 0, CML_DTYPE_F32},  {0, 2, {5, 17}, 0, CML_DTYPE_F32},
      {0, 2, {4099, 15}, 0, CML_DTYPE_F32}, {0, 3, {2, 3, 1000}, 0, CML_DTYPE_BF16},
      {4, 2, {300, 7}, 0, CML_DTYPE_F32},   {0, 1, {16385}, 0, CML_DTYPE_F32},
      {1, 2, {4, 4099}, 1, CML_DTYPE_F32},  {1, 3, {2, 3, 1000}, 2, CML_DTYPE_F32},
      {1, 2, {1025, 33}, 1, CML_DTYPE_F32}, {1, 2, {7, 257}, 1, CML_DTYPE_F16},
      {2, 1, {100003}, 0, CML_DTYPE_F32},   {3, 2, {129, 255}, 0, CML_DTYPE_F32},
      {2, 1, {17}, 0, CML_DTYPE_BF16},      {3, 1, {16385}, 0, CML_DTYPE_F64},
  };
  static const char* const kinds[] = {"FusedSoftmax", "FusedLayerNorm", "FusedGelu exact",
                                      "FusedGelu tanh", "FusedSoftmax axis 0"};
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    const sw_norm_t* n = &cases[i];
    snprintf(c.name, sizeof c.name, "%s %s [%lld,%lld,%lld] rank %d", kinds[n->kind],
             cml_dtype_name(n->dtype), (long long)n->dims[0], (long long)n->dims[1],
             (long long)n->dims[2], n->rank);
    c.build = sw_build_norm;
    c.arg = n;
    // Sums of up to a few thousand terms in f32, then exp / rsqrt / erf approximations of a few
    // ulps; half dtypes round once more.
    // The oracle computes a half dtype's decomposition in that dtype: (x - mean) of values
    // near 1 is off by a few of its steps.
    const double eps = n->dtype == CML_DTYPE_F64 ? 1e-12 : 2e-5;
    c.tol.atol = eps + 4.0 * sw_eps(n->dtype);
    c.tol.rtol = eps + 2.0 * sw_eps(n->dtype);
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- fused attention ---===//

typedef struct sw_attn_t {
  int64_t batch, heads, kv_heads, seq, kv_seq, d, dv;
  bool causal, lengths, bshd, mask;
  int parts;  // > 1: k and v as a Concatenate of |parts| operands along the key axis
  cml_dtype_t dtype;
} sw_attn_t;

// The key counts of the parts: uneven, one of them a single key.
static int64_t sw_attn_part(const sw_attn_t* a, int p) {
  if (a->parts <= 1) return a->kv_seq;
  const int64_t base = (a->kv_seq - 1) / (a->parts - 1);
  if (p == 1) return 1;
  const int64_t before = p == 0 ? 0 : 1 + base * (p - 1);
  return p == a->parts - 1 ? a->kv_seq - before : base;
}

static cml_value_t sw_attn_kv(cml_function_t* f, const sw_attn_t* a, int64_t dim,
                              const char* name) {
  if (a->parts <= 1) {
    cml_shape_t s = a->bshd ? SW_SHAPE(a->dtype, a->batch, a->kv_seq, a->kv_heads, dim)
                            : SW_SHAPE(a->dtype, a->batch, a->kv_heads, a->kv_seq, dim);
    return cml_parameter(f, name, &s);
  }
  cml_value_t vals[8];
  for (int p = 0; p < a->parts; ++p) {
    char nm[32];
    snprintf(nm, sizeof nm, "%s%d", name, p);
    const int64_t n = sw_attn_part(a, p);
    cml_shape_t s = a->bshd ? SW_SHAPE(a->dtype, a->batch, n, a->kv_heads, dim)
                            : SW_SHAPE(a->dtype, a->batch, a->kv_heads, n, dim);
    vals[p] = cml_parameter(f, nm, &s);
  }
  return cml_op_concatenate(f, a->bshd ? 1 : 2, vals, (size_t)a->parts);
}

static size_t sw_build_attn(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_attn_t* a = arg;
  cml_shape_t qs = a->bshd ? SW_SHAPE(a->dtype, a->batch, a->seq, a->heads, a->d)
                           : SW_SHAPE(a->dtype, a->batch, a->heads, a->seq, a->d);
  cml_value_t q = cml_parameter(f, "q", &qs);
  cml_value_t k = sw_attn_kv(f, a, a->d, "k");
  cml_value_t v = sw_attn_kv(f, a, a->dv, "v");
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = a->causal;
  if (a->lengths) {
    cml_shape_t ls = SW_SHAPE(CML_DTYPE_I32, a->batch);
    cfg.query_seq_len = cml_parameter(f, "q_len", &ls);
    cfg.kv_seq_len = cml_parameter(f, "kv_len", &ls);
  }
  if (a->mask) {
    cml_shape_t ms = SW_SHAPE(CML_DTYPE_BOOL, a->seq, a->kv_seq);
    cfg.mask = cml_parameter(f, "mask", &ms);
  }
  outs[0] =
      cml_op_fused_sdpa(f, q, k, v, a->bshd ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD,
                        &cfg, NULL, NULL);
  return 1;
}

static int sw_attn(sw_attn_t a) {
  sw_case_t c;
  memset(&c, 0, sizeof c);
  if (a.dtype == CML_DTYPE_INVALID) a.dtype = CML_DTYPE_F32;
  if (a.kv_heads == 0) a.kv_heads = a.heads;
  if (a.dv == 0) a.dv = a.d;
  snprintf(c.name, sizeof c.name,
           "sdpa %s b%lld h%lld/%lld seq %lld kv %lld d %lld dv %lld%s%s%s%s parts %d",
           cml_dtype_name(a.dtype), (long long)a.batch, (long long)a.heads, (long long)a.kv_heads,
           (long long)a.seq, (long long)a.kv_seq, (long long)a.d, (long long)a.dv,
           a.causal ? " causal" : "", a.lengths ? " lengths" : "", a.bshd ? " BSHD" : "",
           a.mask ? " mask" : "", a.parts);
  c.build = sw_build_attn;
  c.arg = &a;
  c.want_segmented = a.parts > 1 ? 2 : 0;
  // Outputs are convex combinations of v rows in [-1, 1): f32 sums of kv_seq terms and a
  // polynomial exp; half dtypes round the inputs' products the same way, the output once.
  c.tol.atol = 1e-5 + 4.0 * 0x1p-23 * (double)a.kv_seq + 2.0 * sw_eps(a.dtype);
  c.tol.rtol = 2.0 * sw_eps(a.dtype);
  c.int_hi = a.seq < a.kv_seq ? a.seq + 1 : a.kv_seq + 1;
  return sw_check(&c);
}

TEST(attention) {
  int bad = 0;
  static const int64_t seqs[] = {1, 4, 5, 31, 32, 33, 65};
  static const int64_t kvs[] = {1, 63, 64, 65, 129};
  for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; ++i) {
    for (size_t j = 0; j < sizeof kvs / sizeof kvs[0]; ++j) {
      const bool causal = (i + j) % 2 == 1;
      bad += sw_attn((sw_attn_t){
          .batch = 1, .heads = 2, .seq = seqs[i], .kv_seq = kvs[j], .d = 16, .causal = causal});
    }
  }
  // Head dims off 16, grouped-query heads, v's own head dim.
  bad += sw_attn((sw_attn_t){.batch = 2,
                             .heads = 4,
                             .kv_heads = 2,
                             .seq = 33,
                             .kv_seq = 70,
                             .d = 17,
                             .dv = 9,
                             .causal = true});
  bad += sw_attn((sw_attn_t){
      .batch = 1, .heads = 6, .kv_heads = 3, .seq = 1, .kv_seq = 300, .d = 64, .dv = 64});
  bad += sw_attn((sw_attn_t){.batch = 1, .heads = 2, .seq = 3, .kv_seq = 200, .d = 80});
  // More v rows than the forward prefetches (256 KiB), decode and tiled.
  bad += sw_attn((sw_attn_t){.batch = 1, .heads = 2, .seq = 1, .kv_seq = 1100, .d = 64});
  bad += sw_attn(
      (sw_attn_t){.batch = 1, .heads = 1, .seq = 40, .kv_seq = 1100, .d = 64, .causal = true});
  // Lengths (keys past kv_len masked, query rows past q_len zero).
  bad += sw_attn(
      (sw_attn_t){.batch = 3, .heads = 2, .seq = 65, .kv_seq = 65, .d = 16, .lengths = true});
  bad += sw_attn((sw_attn_t){
      .batch = 3, .heads = 2, .seq = 70, .kv_seq = 70, .d = 16, .causal = true, .lengths = true});
  // Segmented k / v (a Concatenate along the keys read in place), decode and prefill.
  static const int parts[] = {2, 3, 8};
  for (size_t p = 0; p < 3; ++p) {
    bad += sw_attn(
        (sw_attn_t){.batch = 1, .heads = 2, .seq = 1, .kv_seq = 130, .d = 16, .parts = parts[p]});
    bad += sw_attn((sw_attn_t){.batch = 2,
                               .heads = 2,
                               .seq = 33,
                               .kv_seq = 97,
                               .d = 24,
                               .causal = true,
                               .parts = parts[p]});
    bad += sw_attn((sw_attn_t){
        .batch = 1, .heads = 4, .kv_heads = 2, .seq = 4, .kv_seq = 64, .d = 16, .parts = parts[p]});
  }
  // BSHD (segments along axis 1), a Bool mask.
  bad += sw_attn((sw_attn_t){
      .batch = 2, .heads = 3, .seq = 33, .kv_seq = 65, .d = 16, .bshd = true, .causal = true});
  bad += sw_attn((sw_attn_t){.batch = 1,
                             .heads = 4,
                             .kv_heads = 1,
                             .seq = 1,
                             .kv_seq = 129,
                             .d = 32,
                             .bshd = true,
                             .parts = 3});
  bad += sw_attn((sw_attn_t){.batch = 1,
                             .heads = 2,
                             .seq = 40,
                             .kv_seq = 97,
                             .d = 16,
                             .bshd = true,
                             .parts = 2,
                             .mask = true});
  bad += sw_attn((sw_attn_t){
      .batch = 2, .heads = 2, .seq = 4, .kv_seq = 70, .d = 16, .mask = true, .causal = true});
  // Half dtypes.
  bad += sw_attn((sw_attn_t){.batch = 1,
                             .heads = 2,
                             .seq = 33,
                             .kv_seq = 65,
                             .d = 32,
                             .causal = true,
                             .dtype = CML_DTYPE_BF16});
  bad += sw_attn((sw_attn_t){.batch = 1,
                             .heads = 2,
                             .seq = 2,
                             .kv_seq = 129,
                             .d = 16,
                             .dtype = CML_DTYPE_F16,
                             .parts = 2});
  bad += sw_attn((sw_attn_t){.batch = 1,
                             .heads = 1,
                             .seq = 40,
                             .kv_seq = 40,
                             .d = 8,
                             .causal = true,
                             .dtype = CML_DTYPE_F64});
  SW_DONE(bad);
}

//===--- fused attention gradients ---===//

// d/d(q, k, v) of sum(sdpa(q, k, v) * w): the native backward (single pass per batch and kv
// head when there are at least as many of them as threads, else two passes) against the
// gradient of the decomposition.
static size_t sw_build_attn_grad(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_attn_t* a = arg;
  cml_shape_t qs = a->bshd ? SW_SHAPE(a->dtype, a->batch, a->seq, a->heads, a->d)
                           : SW_SHAPE(a->dtype, a->batch, a->heads, a->seq, a->d);
  cml_shape_t ks = a->bshd ? SW_SHAPE(a->dtype, a->batch, a->kv_seq, a->kv_heads, a->d)
                           : SW_SHAPE(a->dtype, a->batch, a->kv_heads, a->kv_seq, a->d);
  cml_shape_t vs = a->bshd ? SW_SHAPE(a->dtype, a->batch, a->kv_seq, a->kv_heads, a->dv)
                           : SW_SHAPE(a->dtype, a->batch, a->kv_heads, a->kv_seq, a->dv);
  cml_shape_t os = a->bshd ? SW_SHAPE(a->dtype, a->batch, a->seq, a->heads, a->dv)
                           : SW_SHAPE(a->dtype, a->batch, a->heads, a->seq, a->dv);
  cml_value_t in[3] = {cml_parameter(f, "q", &qs), cml_parameter(f, "k", &ks),
                       cml_parameter(f, "v", &vs)};
  cml_value_t w = cml_parameter(f, "w", &os);
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = a->causal;
  cml_value_t o = cml_op_fused_sdpa(f, in[0], in[1], in[2],
                                    a->bshd ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD,
                                    &cfg, NULL, NULL);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, o, w), NULL, 0);
  cml_status_t st = cml_gradients(f, loss, in, 3, outs);
  if (st != CML_OK) {
    fprintf(stderr, "cml_gradients: %s\n", cml_status_message(st));
    cml_status_free(st);
    return 0;
  }
  return 3;
}

TEST(attention_gradients) {
  static const sw_attn_t cases[] = {
      {.batch = 1, .heads = 2, .kv_heads = 2, .seq = 33, .kv_seq = 65, .d = 16, .dv = 16},
      {.batch = 1, .heads = 4, .kv_heads = 2, .seq = 1, .kv_seq = 129, .d = 16, .dv = 16},
      {.batch = 2,
       .heads = 2,
       .kv_heads = 2,
       .seq = 70,
       .kv_seq = 70,
       .d = 17,
       .dv = 9,
       .causal = true},
      {.batch = 3,
       .heads = 1,
       .kv_heads = 1,
       .seq = 32,
       .kv_seq = 64,
       .d = 32,
       .dv = 32,
       .bshd = true},
      {.batch = 1,
       .heads = 3,
       .kv_heads = 3,
       .seq = 65,
       .kv_seq = 33,
       .d = 16,
       .dv = 16,
       .causal = true,
       .bshd = true},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_attn_t a = cases[i];
    a.dtype = CML_DTYPE_F32;
    sw_case_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "sdpa gradients b%lld h%lld/%lld seq %lld kv %lld d %lld%s%s",
             (long long)a.batch, (long long)a.heads, (long long)a.kv_heads, (long long)a.seq,
             (long long)a.kv_seq, (long long)a.d, a.causal ? " causal" : "", a.bshd ? " BSHD" : "");
    c.build = sw_build_attn_grad;
    c.arg = &a;
    // Gradients sum seq (or kv_seq) rows of products of values in [-1, 1).
    c.tol.atol = 1e-5 * (double)(a.seq + a.kv_seq);
    c.tol.rtol = 1e-4;
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- Gather, Scatter, DynamicSlice, DynamicUpdateSlice ---===//

typedef struct sw_index_t {
  int kind;  // 0 gather rows, 1 scatter-sum rows, 2 dynamic slice, 3 dynamic update slice,
             // 4 gather columns (slices of one element)
  int64_t rows, cols, count;
  cml_dtype_t dtype;
} sw_index_t;

static size_t sw_build_index(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_index_t* x = arg;
  cml_shape_t ts = SW_SHAPE(x->dtype, x->rows, x->cols);
  cml_value_t table = cml_parameter(f, "table", &ts);
  if (x->kind == 0 || x->kind == 4) {
    cml_shape_t is =
        x->kind == 0 ? SW_SHAPE(CML_DTYPE_I32, x->count, 1) : SW_SHAPE(CML_DTYPE_I32, x->count, 2);
    cml_value_t idx = cml_parameter(f, "idx", &is);
    cml_gather_dims_t g;
    memset(&g, 0, sizeof g);
    g.index_vector_axis = 1;
    g.slice_size_count = 2;
    if (x->kind == 0) {
      g.offset_output_axis_count = 1;
      g.offset_output_axes[0] = 1;
      g.collapsed_slice_axis_count = 1;
      g.collapsed_slice_axes[0] = 0;
      g.start_index_map_count = 1;
      g.start_index_map[0] = 0;
      g.slice_sizes[0] = 1;
      g.slice_sizes[1] = x->cols;
    } else {
      g.collapsed_slice_axis_count = 2;
      g.collapsed_slice_axes[0] = 0;
      g.collapsed_slice_axes[1] = 1;
      g.start_index_map_count = 2;
      g.start_index_map[0] = 0;
      g.start_index_map[1] = 1;
      g.slice_sizes[0] = 1;
      g.slice_sizes[1] = 1;
    }
    outs[0] = cml_op_gather(f, table, idx, &g);
    return 1;
  }
  if (x->kind == 1) {
    cml_shape_t is = SW_SHAPE(CML_DTYPE_I32, x->count, 1);
    cml_shape_t us = SW_SHAPE(x->dtype, x->count, x->cols);
    cml_value_t idx = cml_parameter(f, "idx", &is);
    cml_value_t upd = cml_parameter(f, "upd", &us);
    cml_scatter_dims_t s;
    memset(&s, 0, sizeof s);
    s.index_vector_axis = 1;
    s.update_window_axis_count = 1;
    s.update_window_axes[0] = 1;
    s.inserted_window_axis_count = 1;
    s.inserted_window_axes[0] = 0;
    s.scatter_axes_to_operand_axes_count = 1;
    s.scatter_axes_to_operand_axes[0] = 0;
    outs[0] = cml_op_scatter_sum(f, table, idx, upd, &s);
    return 1;
  }
  cml_shape_t ss = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t starts[2] = {cml_parameter(f, "r0", &ss), cml_parameter(f, "c0", &ss)};
  if (x->kind == 2) {
    const int64_t sizes[2] = {x->count, x->cols - 3};
    outs[0] = cml_op_dynamic_slice(f, table, starts, sizes, 2);
    return 1;
  }
  cml_shape_t us = SW_SHAPE(x->dtype, x->count, x->cols - 1);
  cml_value_t upd = cml_parameter(f, "upd", &us);
  outs[0] = cml_op_dynamic_update_slice(f, table, upd, starts, 2);
  return 1;
}

static int64_t sw_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int64_t sw_in_int(const sw_result_t* r, size_t input, int64_t i) {
  return (int64_t)sw_load(r->in_data[input], r->in_shape[input].dtype, i);
}

// The index ops in double from the oracle's inputs (table, then indices / starts, updates).
static double sw_host_index(const void* arg, const sw_result_t* r, size_t o, int64_t i) {
  const sw_index_t* x = arg;
  (void)o;
  const void* table = r->in_data[0];
  const cml_dtype_t dt = r->in_shape[0].dtype;
  switch (x->kind) {
    case 0: {  // out [count, cols]: row idx (clamped)
      const int64_t row = sw_clamp(sw_in_int(r, 1, i / x->cols), 0, x->rows - 1);
      return sw_load(table, dt, row * x->cols + i % x->cols);
    }
    case 4: {  // out [count]: element (idx[i, 0], idx[i, 1]), each clamped
      const int64_t row = sw_clamp(sw_in_int(r, 1, 2 * i), 0, x->rows - 1);
      const int64_t col = sw_clamp(sw_in_int(r, 1, 2 * i + 1), 0, x->cols - 1);
      return sw_load(table, dt, row * x->cols + col);
    }
    case 1: {  // out = table; rows idx[u] (in range) += upd[u], all computed at i == 0
      static double* sums;
      if (i == 0) {
        free(sums);
        sums = malloc((size_t)(x->rows * x->cols) * sizeof(double));
        if (!sums) return NAN;
        for (int64_t e = 0; e < x->rows * x->cols; ++e) sums[e] = sw_load(table, dt, e);
        for (int64_t u = 0; u < x->count; ++u) {
          const int64_t row = sw_in_int(r, 1, u);
          if (row < 0 || row >= x->rows) continue;
          for (int64_t col = 0; col < x->cols; ++col)
            sums[row * x->cols + col] += sw_load(r->in_data[2], dt, u * x->cols + col);
        }
      }
      const double v = sums ? sums[i] : NAN;
      if (i == x->rows * x->cols - 1) {
        free(sums);
        sums = NULL;
      }
      return v;
    }
    case 2: {  // out [count, cols - 3] at starts clamped to [0, dim - size]
      const int64_t w = x->cols - 3;
      const int64_t r0 = sw_clamp(sw_in_int(r, 1, 0), 0, x->rows - x->count);
      const int64_t c0 = sw_clamp(sw_in_int(r, 2, 0), 0, x->cols - w);
      return sw_load(table, dt, (r0 + i / w) * x->cols + c0 + i % w);
    }
    default: {  // table with upd [count, cols - 1] written at clamped starts
      const int64_t w = x->cols - 1;
      const int64_t r0 = sw_clamp(sw_in_int(r, 1, 0), 0, x->rows - x->count);
      const int64_t c0 = sw_clamp(sw_in_int(r, 2, 0), 0, x->cols - w);
      const int64_t row = i / x->cols, col = i % x->cols;
      if (row >= r0 && row < r0 + x->count && col >= c0 && col < c0 + w)
        return sw_load(r->in_data[3], dt, (row - r0) * w + col - c0);
      return sw_load(table, dt, i);
    }
  }
}

TEST(gather_scatter_slices) {
  static const sw_index_t cases[] = {
      {0, 50000, 33, 1000, CML_DTYPE_F32}, {0, 20000, 1, 16385, CML_DTYPE_F32},
      {0, 3000, 4097, 5, CML_DTYPE_F32},   {0, 30000, 64, 700, CML_DTYPE_BF16},
      {4, 600, 700, 20000, CML_DTYPE_F32}, {1, 5000, 17, 3000, CML_DTYPE_F32},
      {1, 300, 4099, 40, CML_DTYPE_F32},   {1, 70000, 1, 20000, CML_DTYPE_F64},
      {2, 3000, 300, 1000, CML_DTYPE_F32}, {2, 5, 70001, 3, CML_DTYPE_F16},
      {3, 3000, 300, 1000, CML_DTYPE_F32}, {3, 4, 70001, 2, CML_DTYPE_BF16},
  };
  static const char* const kinds[] = {"Gather rows", "ScatterSum rows", "DynamicSlice",
                                      "DynamicUpdateSlice", "Gather elements"};
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    const sw_index_t* x = &cases[i];
    snprintf(c.name, sizeof c.name, "%s %s table [%lld,%lld] count %lld", kinds[x->kind],
             cml_dtype_name(x->dtype), (long long)x->rows, (long long)x->cols, (long long)x->count);
    c.build = sw_build_index;
    c.arg = x;
    c.host = sw_host_index;
    // Indices and starts anywhere in the table (and past it: clamped or skipped).
    c.int_hi = x->kind == 4 ? 700 : x->kind >= 2 ? x->rows : x->rows + x->rows / 50;
    // Scatter sums repeated rows in an order that may differ: a few f32 steps.
    c.tol = x->kind == 1 ? (sw_tol_t){1e-6, 1e-6} : kSwExact;
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- Concatenate (operands computed in place) ---===//

typedef struct sw_concat_t {
  int64_t cols;  // columns of every operand: 16 keeps float runs on 64-byte lines, 5 does not
  // 0: axis 0 of [r, cols] parts; 1: axis 1 of [1, n] parts (after a size-1 axis); 2: axis 0
  // of conv, softmax, attention, layer norm and gather outputs (cols 16)
  int variant;
} sw_concat_t;

static size_t sw_build_concat(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_concat_t* c = arg;
  const int64_t cols = c->cols;
  cml_shape_t a_s = SW_SHAPE(CML_DTYPE_F32, 33, cols), t_s = SW_SHAPE(CML_DTYPE_F32, 7, cols);
  cml_shape_t l_s = SW_SHAPE(CML_DTYPE_F32, 5, 300), r_s = SW_SHAPE(CML_DTYPE_F32, 300, cols);
  cml_value_t a = cml_parameter(f, "a", &a_s), b = cml_parameter(f, "b", &a_s);
  cml_value_t t = cml_parameter(f, "t", &t_s);
  cml_value_t l = cml_parameter(f, "l", &l_s), l2 = cml_parameter(f, "l2", &l_s);
  cml_value_t r = cml_parameter(f, "r", &r_s);
  cml_value_t parts[5];
  if (c->variant == 0) {
    parts[0] = cml_op_add(f, a, b);                   // elementwise (fused loop)
    parts[1] = cml_op_tanh(f, t);                     // unary kernel
    parts[2] = cml_op_dot(f, l, r);                   // GEMM, [5, cols]
    parts[3] = a;                                     // a parameter: copied
    parts[4] = cml_op_tanh(f, cml_op_dot(f, l2, r));  // elementwise of a GEMM
    outs[0] = cml_op_concatenate(f, 0, parts, 5);
    cml_value_t second[2] = {cml_op_mul(f, b, b), cml_op_neg(f, t)};
    outs[1] = cml_op_exp(f, cml_op_concatenate(f, 0, second, 2));  // not a main output
    return 2;
  }
  if (c->variant == 2) {
    // Fused and conv kernels writing into the output: a conv (reshaped: an alias of it), a
    // softmax, an attention output, a layer norm and a gather, as [rows, 16] runs.
    cml_shape_t x_s = SW_SHAPE(CML_DTYPE_F32, 1, 8, 8, 5),
                k_s = SW_SHAPE(CML_DTYPE_F32, 3, 3, 5, 16);
    cml_shape_t s_s = SW_SHAPE(CML_DTYPE_F32, 4, 16), q_s = SW_SHAPE(CML_DTYPE_F32, 1, 2, 8, 16);
    cml_shape_t kv_s = SW_SHAPE(CML_DTYPE_F32, 1, 2, 70, 16), i_s = SW_SHAPE(CML_DTYPE_I32, 5, 1);
    sw_conv_t cv = {.n = 1,
                    .h = 8,
                    .w = 8,
                    .c = 5,
                    .kh = 3,
                    .kw = 3,
                    .o = 16,
                    .stride = 1,
                    .pad = 1,
                    .groups = 1,
                    .dil = 1,
                    .dtype = CML_DTYPE_F32};
    cml_value_t conv_out;
    sw_build_conv(f, &cv, &conv_out);
    (void)x_s;
    (void)k_s;
    cml_value_t sm = cml_op_fused_softmax(f, cml_parameter(f, "s", &s_s), -1);
    cml_value_t q = cml_parameter(f, "q", &q_s), kk = cml_parameter(f, "kk", &kv_s);
    cml_value_t vv = cml_parameter(f, "vv", &kv_s);
    cml_value_t at = cml_op_fused_sdpa(f, q, kk, vv, CML_ATTENTION_LAYOUT_BHSD, NULL, NULL, NULL);
    const int64_t last = -1;
    cml_value_t ln = cml_op_fused_layer_norm(f, cml_parameter(f, "n", &t_s), &last, 1, 1e-5,
                                             CML_VALUE_INVALID, CML_VALUE_INVALID);
    cml_gather_dims_t g;
    memset(&g, 0, sizeof g);
    g.index_vector_axis = 1;
    g.offset_output_axis_count = 1;
    g.offset_output_axes[0] = 1;
    g.collapsed_slice_axis_count = 1;
    g.start_index_map_count = 1;
    g.slice_size_count = 2;
    g.slice_sizes[0] = 1;
    g.slice_sizes[1] = cols;
    cml_value_t ga = cml_op_gather(f, r, cml_parameter(f, "idx", &i_s), &g);
    const int64_t d64[2] = {64, cols}, d16[2] = {16, cols};
    parts[0] = cml_op_reshape(f, conv_out, d64, 2);
    parts[1] = sm;
    parts[2] = cml_op_reshape(f, at, d16, 2);
    parts[3] = ln;
    parts[4] = ga;
    outs[0] = cml_op_concatenate(f, 0, parts, 5);
    return 1;
  }
  if (c->variant == 3) {
    // Producers whose operand dies there (in-place candidates) writing into the output, a
    // Concatenate of a Concatenate, and the result both returned and read again.
    cml_value_t u = cml_op_dot(f, l, r), u2 = cml_op_dot(f, l2, r);
    cml_value_t inner[2] = {cml_op_neg(f, t), cml_op_abs(f, a)};
    parts[0] = cml_op_tanh(f, u);
    parts[1] = cml_op_add(f, u2, u2);
    parts[2] = cml_op_concatenate(f, 0, inner, 2);
    parts[3] = cml_op_sub(f, b, a);
    cml_value_t cat = cml_op_concatenate(f, 0, parts, 4);
    outs[0] = cat;
    outs[1] = cml_op_mul(f, cat, cat);
    return 2;
  }
  // [1, n] parts along axis 1: two GEMV outputs (8304 values: whole 64-byte lines), then a
  // reduction (300 values: not a whole number of lines, so it is copied).
  cml_shape_t g_s = SW_SHAPE(CML_DTYPE_F32, 1, 3), w_s = SW_SHAPE(CML_DTYPE_F32, 3, 8304);
  cml_value_t g = cml_parameter(f, "g", &g_s), w = cml_parameter(f, "w", &w_s);
  cml_value_t w2 = cml_parameter(f, "w2", &w_s);
  const int64_t axis1[1] = {1};
  cml_value_t red = cml_op_reduce_sum(f, r, axis1, 1);  // [300]
  const int64_t one_by[2] = {1, 300};
  parts[0] = cml_op_dot(f, g, w);                  // [1, 8304]
  parts[1] = cml_op_sin(f, cml_op_dot(f, g, w2));  // [1, 8304]
  parts[2] = cml_op_reshape(f, red, one_by, 2);    // [1, 300]
  outs[0] = cml_op_concatenate(f, 1, parts, 3);
  return 1;
}

TEST(concatenate_in_place) {
  int bad = 0;
  static const sw_concat_t cases[] = {{16, 0}, {5, 0}, {32, 0}, {16, 1}, {16, 2}, {16, 3}, {5, 3}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "Concatenate variant %d cols %lld", cases[i].variant,
             (long long)cases[i].cols);
    c.build = sw_build_concat;
    c.arg = &cases[i];
    // Aligned runs: add, tanh, the GEMM, tanh of a GEMM, and the second Concatenate's two
    // (the parameter is copied); [1, n] parts: the two 8300-value products (1200 bytes of
    // reduction are not a multiple of 64).
    c.want_placed = cases[i].cols % 16 != 0 ? 0
                    : cases[i].variant == 1 ? 2
                    : cases[i].variant == 2 ? 5
                    : cases[i].variant == 3 ? 5
                                            : 6;
    c.int_hi = 300;
    c.tol = sw_tol_dot(300, CML_DTYPE_F32, CML_DTYPE_F32);
    c.tol.rtol += 1e-6;  // exp, tanh, sine
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- Transpose ---===//

typedef struct sw_transpose_t {
  int32_t rank;
  int64_t dims[4], perm[4];
  cml_dtype_t dtype;
} sw_transpose_t;

static size_t sw_build_transpose(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_transpose_t* t = arg;
  cml_shape_t xs = cml_shape_make(t->dtype, t->rank, t->dims);
  outs[0] = cml_op_transpose(f, cml_parameter(f, "x", &xs), t->perm, (size_t)t->rank);
  return 1;
}

// out[o] = x[the index whose axis perm[d] is out's axis d].
static double sw_host_transpose(const void* arg, const sw_result_t* r, size_t o, int64_t i) {
  const sw_transpose_t* t = arg;
  (void)o;
  int64_t in_strides[4], out_idx[4], rem = i, in = 0;
  in_strides[t->rank - 1] = 1;
  for (int32_t d = t->rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * t->dims[d + 1];
  for (int32_t d = t->rank - 1; d >= 0; --d) {
    out_idx[d] = rem % t->dims[t->perm[d]];
    rem /= t->dims[t->perm[d]];
  }
  for (int32_t d = 0; d < t->rank; ++d) in += out_idx[d] * in_strides[t->perm[d]];
  return sw_load(r->in_data[0], t->dtype, in);
}

TEST(transpose) {
  static const sw_transpose_t cases[] = {
      {2, {257, 1023}, {1, 0}, CML_DTYPE_F32},
      {2, {64, 64}, {1, 0}, CML_DTYPE_F32},
      {2, {63, 65}, {1, 0}, CML_DTYPE_F32},
      {2, {1, 4097}, {1, 0}, CML_DTYPE_F32},
      {4, {3, 129, 65, 5}, {2, 0, 3, 1}, CML_DTYPE_F32},
      {3, {50, 60, 7}, {1, 0, 2}, CML_DTYPE_F32},
      {2, {129, 257}, {1, 0}, CML_DTYPE_F16},
      {3, {17, 33, 65}, {2, 1, 0}, CML_DTYPE_F64},
      {2, {4099, 3}, {1, 0}, CML_DTYPE_BF16},
      {3, {31, 4, 67}, {0, 2, 1}, CML_DTYPE_I32},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    const sw_transpose_t* t = &cases[i];
    snprintf(c.name, sizeof c.name, "Transpose %s [%lld,%lld,%lld,%lld] rank %d",
             cml_dtype_name(t->dtype), (long long)t->dims[0], (long long)t->dims[1],
             (long long)t->dims[2], (long long)t->dims[3], t->rank);
    c.build = sw_build_transpose;
    c.arg = t;
    c.host = sw_host_transpose;
    c.tol = kSwExact;
    c.int_hi = 1000000;
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- FusedQuantizedDense (GGML) ---===//

typedef struct sw_quant_t {
  cml_ggml_type_t type;
  int64_t m, k, n;
  bool weight_param;  // the blocks as a parameter (else a constant)
  cml_activation_t act;
  uint8_t* blocks;  // [n, row bytes], made by the test
  bool lookup;      // QuantizedEmbeddingLookup of m x 3 rows of the [n, row bytes] table
} sw_quant_t;

static size_t sw_build_quant(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_quant_t* q = arg;
  const int64_t rb = cml_ggml_row_bytes(q->type, q->k);
  cml_shape_t xs = SW_SHAPE(CML_DTYPE_F32, q->m, q->k);
  cml_shape_t ws = SW_SHAPE(CML_DTYPE_U8, q->n, rb);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w = q->weight_param ? cml_parameter(f, "w", &ws) : cml_constant(f, &ws, q->blocks);
  cml_quantization_t qz;
  cml_quantization_init(&qz);
  qz.scheme = CML_QUANT_GGML;
  qz.ggml_type = q->type;
  if (q->lookup) {
    cml_shape_t is = SW_SHAPE(CML_DTYPE_I32, q->m, 3, 1);
    outs[0] = cml_op_quantized_embedding_lookup(f, w, cml_parameter(f, "idx", &is), &qz);
    outs[1] = x;
    return 2;
  }
  outs[0] = cml_op_fused_quantized_dense(f, x, w, CML_VALUE_INVALID, &qz, q->act);
  return 1;
}

static bool sw_fill_quant(const void* arg, size_t i, const cml_shape_t* shape, void* data) {
  const sw_quant_t* q = arg;
  if (!q->weight_param || i != 1) return false;  // x, then the weights when a parameter
  memcpy(data, q->blocks, cml_shape_byte_size(shape));
  return true;
}

static int sw_quant(sw_quant_t q, bool int8) {
  const int64_t rb = cml_ggml_row_bytes(q.type, q.k);
  float* w = malloc((size_t)(q.n * q.k) * sizeof(float));
  q.blocks = malloc((size_t)(q.n * rb));
  int bad = 1;
  if (w && q.blocks && rb > 0) {
    sw_fill(w, CML_DTYPE_F32, q.n * q.k, 4242, 0);
    cml_status_t st = cml_quantize_ggml(q.type, w, q.n, q.k, q.blocks, (size_t)(q.n * rb));
    if (st == CML_OK) {
      sw_case_t c;
      memset(&c, 0, sizeof c);
      snprintf(c.name, sizeof c.name, "%s %s m%lld k%lld n%lld %s%s%s",
               q.lookup ? "QuantizedEmbeddingLookup" : "FusedQuantizedDense",
               cml_ggml_type_name(q.type), (long long)q.m, (long long)q.k, (long long)q.n,
               cml_activation_name(q.act), q.weight_param ? " weights-param" : "",
               int8 ? " quant_int8" : "");
      c.build = sw_build_quant;
      c.arg = &q;
      c.fill = sw_fill_quant;
      c.int_hi = q.n;
      // Both sides dequantize to the same f32 weights (|w| <= about 1); quant_int8 rounds the
      // activations to 8 bits per block (an error of max|x| / 254 per term).
      c.tol = sw_tol_dot(q.k, CML_DTYPE_F32, CML_DTYPE_F32);
      c.tol.rtol += 1e-6;
      static const char* const int8_configs[] = {
          "c:quant_int8=true,threads=1", "c:quant_int8=true,threads=2",
          "c:quant_int8=true,threads=3", "c:quant_int8=true,avx512=false,threads=2"};
      if (int8) {
        c.tol.atol = 4.0 * sqrt((double)q.k) / 254.0;
        c.configs = int8_configs;
        c.config_count = 4;
      }
      bad = sw_check(&c);
    } else {
      fprintf(stderr, "quantize %s: %s\n", cml_ggml_type_name(q.type), cml_status_message(st));
      cml_status_free(st);
    }
  }
  free(w);
  free(q.blocks);
  return bad;
}

// Linear and NF4 schemes: blocks of |block| along N (the last one short), constant weights.
typedef struct sw_qlin_t {
  cml_quant_scheme_t scheme;
  cml_dtype_t wdtype;
  int64_t m, k, n, block;
  bool zero_point;
  void *w, *scale, *zp;
} sw_qlin_t;

static size_t sw_build_qlin(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_qlin_t* q = arg;
  const int64_t nb = (q->n + q->block - 1) / q->block;
  cml_shape_t xs = SW_SHAPE(CML_DTYPE_F32, q->m, q->k), ws = SW_SHAPE(q->wdtype, q->k, q->n);
  cml_shape_t ss = SW_SHAPE(CML_DTYPE_F32, q->k, nb);
  cml_quantization_t qz;
  cml_quantization_init(&qz);
  qz.scheme = q->scheme;
  qz.block_size = q->block;
  qz.scale = cml_constant(f, &ss, q->scale);
  if (q->zero_point) qz.zero_point = cml_constant(f, &ss, q->zp);
  outs[0] = cml_op_fused_quantized_dense(f, cml_parameter(f, "x", &xs), cml_constant(f, &ws, q->w),
                                         CML_VALUE_INVALID, &qz, CML_ACTIVATION_NONE);
  return 1;
}

static int sw_qlin(sw_qlin_t q) {
  const int64_t nb = (q.n + q.block - 1) / q.block;
  cml_shape_t ws = SW_SHAPE(q.wdtype, q.k, q.n);
  float* src = malloc((size_t)(q.k * q.n) * sizeof(float));
  q.w = malloc(cml_shape_byte_size(&ws) + 1);
  q.scale = malloc((size_t)(q.k * nb) * sizeof(float));
  q.zp = malloc((size_t)(q.k * nb) * sizeof(float));
  int bad = 1;
  if (src && q.w && q.scale && q.zp) {
    sw_fill(src, CML_DTYPE_F32, q.k * q.n, 31337, 0);
    cml_status_t st = cml_quantize_linear(q.scheme, q.wdtype, src, q.k, q.n, q.block, q.w, q.scale,
                                          q.zero_point ? q.zp : NULL);
    if (st == CML_OK) {
      sw_case_t c;
      memset(&c, 0, sizeof c);
      snprintf(c.name, sizeof c.name, "FusedQuantizedDense %s %s m%lld k%lld n%lld block %lld%s",
               cml_quant_scheme_name(q.scheme), cml_dtype_name(q.wdtype), (long long)q.m,
               (long long)q.k, (long long)q.n, (long long)q.block,
               q.zero_point ? " zero-point" : "");
      c.build = sw_build_qlin;
      c.arg = &q;
      c.tol = sw_tol_dot(q.k, CML_DTYPE_F32, CML_DTYPE_F32);
      c.tol.rtol += 1e-6;
      bad = sw_check(&c);
    } else {
      fprintf(stderr, "quantize linear: %s\n", cml_status_message(st));
      cml_status_free(st);
    }
  }
  free(src);
  free(q.w);
  free(q.scale);
  free(q.zp);
  return bad;
}

TEST(quantized_dense) {
  int bad = 0;
  static const cml_ggml_type_t types[] = {CML_GGML_Q4_0, CML_GGML_Q8_0, CML_GGML_Q4_K,
                                          CML_GGML_Q6_K};
  static const int64_t mkn[][3] = {{1, 256, 4097}, {1, 256, 8300}, {3, 512, 4100}, {1, 768, 37}};
  // (The other formats run at N = 4101 below.)
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; ++i) {
      sw_quant_t q = {types[t],  mkn[i][0], mkn[i][1],
                      mkn[i][2], i == 2,    i == 1 ? CML_ACTIVATION_SILU : CML_ACTIVATION_NONE,
                      NULL,      false};
      bad += sw_quant(q, false);
      if (q.m == 1) bad += sw_quant(q, true);
    }
  }
  bad += sw_qlin(
      (sw_qlin_t){CML_QUANT_LINEAR, CML_DTYPE_I8, 1, 40, 4161, 64, false, NULL, NULL, NULL});
  bad += sw_qlin(
      (sw_qlin_t){CML_QUANT_LINEAR, CML_DTYPE_U4, 3, 33, 4100, 100, true, NULL, NULL, NULL});
  bad +=
      sw_qlin((sw_qlin_t){CML_QUANT_NF4, CML_DTYPE_U4, 1, 17, 8300, 8300, false, NULL, NULL, NULL});
  bad += sw_qlin((sw_qlin_t){CML_QUANT_NF4, CML_DTYPE_I8, 5, 9, 130, 7, false, NULL, NULL, NULL});
  // Every format at N > 4096 on one row, and 32-value formats with K not a multiple of 4 blocks.
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    const int64_t k = cml_ggml_type_values_per_block((cml_ggml_type_t)t) == 32 ? 96 : 256;
    sw_quant_t q = {(cml_ggml_type_t)t, 1, k, 4101, false, CML_ACTIVATION_NONE, NULL, false};
    bad += sw_quant(q, false);
    bad += sw_quant(q, true);
    q.k = k == 96 ? 160 : 512;
    q.m = 2;
    q.n = 67;
    bad += sw_quant(q, false);
    q.lookup = true;  // rows of a 4101-row table
    q.n = 4101;
    q.m = 700;
    bad += sw_quant(q, false);
  }
  SW_DONE(bad);
}

//===--- elementwise chains, broadcasts, conversions (fused loops, in-place reuse) ---===//

typedef struct sw_ew_t {
  int64_t rows, cols;
  cml_dtype_t dtype;
} sw_ew_t;

static size_t sw_build_ew(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_ew_t* e = arg;
  cml_shape_t xs = SW_SHAPE(e->dtype, e->rows, e->cols);
  cml_shape_t rs = SW_SHAPE(e->dtype, e->cols), cs = SW_SHAPE(e->dtype, e->rows, 1);
  cml_value_t x = cml_parameter(f, "x", &xs), y = cml_parameter(f, "y", &xs);
  cml_value_t row = cml_parameter(f, "row", &rs), col = cml_parameter(f, "col", &cs);
  const int64_t dims[2] = {e->rows, e->cols};
  const int64_t axis1[1] = {1}, axes01[2] = {0, 1};
  cml_value_t brow = cml_op_broadcast_in_dim(f, row, dims, 2, axis1, 1);
  cml_value_t bcol = cml_op_broadcast_in_dim(f, col, dims, 2, axes01, 2);
  // One fused chain (x dies inside it: in-place reuse), a broadcast product, a conversion round
  // trip, a comparison-select and a slice / reverse / pad of the result.
  cml_value_t t = cml_op_tanh(f, x);
  cml_value_t z = cml_op_add(f, cml_op_mul(f, t, brow), cml_op_mul(f, y, bcol));
  cml_value_t h = cml_op_convert_dtype(f, cml_op_convert_dtype(f, z, CML_DTYPE_BF16), e->dtype);
  cml_value_t s = cml_op_where(f, cml_op_greater_than(f, z, y), h, cml_op_sub(f, y, z));
  const int64_t rev_axes[1] = {1};
  cml_value_t r = cml_op_reverse(f, s, rev_axes, 1);
  cml_pad_axis_t pads[2] = {{1, 2, 0}, {-1, 3, 1}};
  cml_value_t p = cml_op_pad(f, r, cml_constant_scalar_f64(f, e->dtype, 0.5), pads, 2);
  outs[0] = z;
  outs[1] = p;
  outs[2] = cml_op_exp(f, cml_op_neg(f, cml_op_abs(f, s)));
  return 3;
}

TEST(elementwise) {
  static const sw_ew_t cases[] = {
      {1, 16383, CML_DTYPE_F32},  {1, 16384, CML_DTYPE_F32},  {1, 16385, CML_DTYPE_F32},
      {129, 4099, CML_DTYPE_F32}, {4097, 17, CML_DTYPE_F32},  {3, 70001, CML_DTYPE_F32},
      {65, 257, CML_DTYPE_F64},   {33, 1025, CML_DTYPE_BF16}, {17, 4097, CML_DTYPE_F16},
      {2, 7, CML_DTYPE_F32},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "elementwise %s [%lld,%lld]", cml_dtype_name(cases[i].dtype),
             (long long)cases[i].rows, (long long)cases[i].cols);
    c.build = sw_build_ew;
    c.arg = &cases[i];
    // tanh / exp approximations of a few ulps; the bf16 round trip may round a value that sits
    // on a tie the other way (one bf16 step) when z differs in its last bits.
    c.tol.atol = 4.0 * sw_eps(cases[i].dtype == CML_DTYPE_F64 ? CML_DTYPE_F64 : CML_DTYPE_F32);
    c.tol.rtol = 4.0 * sw_eps(cases[i].dtype) + 0x1p-7;
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- ArgMinMax, RNG, FFT ---===//

typedef struct sw_misc_t {
  int kind;  // 0 ArgMinMax over the last axis, 1 over axis 0, 2 RNG bits, 3 FFT (complex),
             // 4 real FFT
  int64_t rows, cols;
} sw_misc_t;

static size_t sw_build_misc(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_misc_t* m = arg;
  cml_shape_t xs = SW_SHAPE(CML_DTYPE_F32, m->rows, m->cols);
  switch (m->kind) {
    case 0:
    case 1: {
      cml_value_t x = cml_parameter(f, "x", &xs);
      outs[0] = cml_op_arg_min_max(f, x, m->kind == 0 ? 1 : 0, CML_DTYPE_I32, false);
      outs[1] = cml_op_arg_min_max(f, x, m->kind == 0 ? 1 : 0, CML_DTYPE_I64, true);
      return 2;
    }
    case 2: {
      const uint64_t state[3] = {0x0123456789ABCDEFull, 7, 0};
      cml_shape_t ss = SW_SHAPE(CML_DTYPE_U64, 3), os = SW_SHAPE(CML_DTYPE_U32, m->rows, m->cols);
      cml_value_t st = cml_constant(f, &ss, state);
      if (!cml_op_rng_bit_generator(f, st, &os, &outs[1], &outs[0])) return 0;
      // The bits as two exactly representable halves.
      outs[1] = cml_op_convert_dtype(
          f, cml_op_shift_right_logical(f, outs[0], cml_constant_scalar_i64(f, CML_DTYPE_U32, 16)),
          CML_DTYPE_F64);
      outs[0] = cml_op_convert_dtype(
          f, cml_op_bitwise_and(f, outs[0], cml_constant_scalar_i64(f, CML_DTYPE_U32, 0xFFFF)),
          CML_DTYPE_F64);
      return 2;
    }
    case 3: {
      cml_value_t x = cml_op_complex(f, cml_parameter(f, "re", &xs), cml_parameter(f, "im", &xs));
      cml_value_t y = cml_op_fft(f, x, CML_FFT_FORWARD, &m->cols, 1);
      outs[0] = cml_op_real(f, y);
      outs[1] = cml_op_imag(f, y);
      return 2;
    }
    default: {
      cml_value_t y = cml_op_fft(f, cml_parameter(f, "x", &xs), CML_FFT_FORWARD_REAL, &m->cols, 1);
      outs[0] = cml_op_real(f, y);
      outs[1] = cml_op_imag(f, y);
      return 2;
    }
  }
}

TEST(argminmax_rng_fft) {
  static const sw_misc_t cases[] = {
      {0, 7, 70001}, {0, 4097, 17}, {1, 4097, 17}, {1, 129, 4099}, {2, 3, 70001}, {2, 1, 4097},
      {3, 4, 31},    {3, 4, 32},    {3, 4, 33},    {3, 3, 64},     {3, 2, 97},    {3, 2, 1000},
      {4, 3, 30},    {4, 3, 32},    {4, 2, 66},    {4, 2, 4098},
  };
  static const char* const kinds[] = {"ArgMinMax last axis", "ArgMinMax axis 0", "RngBitGenerator",
                                      "Fft", "Fft real"};
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s [%lld,%lld]", kinds[cases[i].kind],
             (long long)cases[i].rows, (long long)cases[i].cols);
    c.build = sw_build_misc;
    c.arg = &cases[i];
    if (cases[i].kind >= 3) {
      // Sums of n terms of magnitude <= 1 through log2(n) butterfly stages (or Bluestein's
      // three transforms of a padded length).
      c.tol.atol = 64.0 * 0x1p-23 * (double)cases[i].cols;
      c.tol.rtol = 1e-5;
    } else {
      c.tol = kSwExact;
    }
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

//===--- loop fusion and constant folding limits ---===//

// Elementwise graphs at the fused-loop limits (loop_fusion.c: 12 registers, 16 inputs, 6
// broadcasts, 32 ops per loop; blocks of 256 elements) and constant folding (opt.c: results up
// to 1 MiB are folded at plan time).
typedef struct sw_fuse_t {
  int kind;  // 0 many inputs, 1 long chain, 2 many broadcasts, 3 wide tree, 4 constant folding
  int64_t n;
  int count;
} sw_fuse_t;

static size_t sw_build_fuse(cml_function_t* f, const void* arg, cml_value_t* outs) {
  const sw_fuse_t* z = arg;
  cml_shape_t xs = SW_SHAPE(CML_DTYPE_F32, 3, z->n);
  cml_value_t acc = CML_VALUE_INVALID;
  switch (z->kind) {
    case 0: {  // x0 * x1 + x2 * x3 + ... over |count| inputs, in a chain
      acc = cml_parameter(f, "x0", &xs);
      for (int i = 1; i < z->count; ++i) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        cml_value_t x = cml_parameter(f, nm, &xs);
        acc = i % 2 ? cml_op_add(
                          f, cml_op_mul(f, acc, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5)), x)
                    : cml_op_sub(f, acc, cml_op_tanh(f, x));
      }
      break;
    }
    case 1: {  // |count| unary / binary ops in a row on one input
      cml_value_t x = cml_parameter(f, "x", &xs);
      acc = x;
      for (int i = 0; i < z->count; ++i) {
        switch (i % 4) {
          case 0:
            acc = cml_op_sin(f, acc);
            break;
          case 1:
            acc = cml_op_add(f, acc, x);
            break;
          case 2:
            acc = cml_op_mul(f, acc, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.75));
            break;
          default:
            acc = cml_op_tanh(f, acc);
            break;
        }
      }
      break;
    }
    case 2: {  // |count| row and column broadcasts added in
      const int64_t dims[2] = {3, z->n}, axis1[1] = {1}, axis0[1] = {0};
      acc = cml_parameter(f, "x", &xs);
      for (int i = 0; i < z->count; ++i) {
        char nm[16];
        snprintf(nm, sizeof nm, "b%d", i);
        cml_shape_t bs = i % 2 ? SW_SHAPE(CML_DTYPE_F32, z->n) : SW_SHAPE(CML_DTYPE_F32, 3);
        cml_value_t b = cml_op_broadcast_in_dim(f, cml_parameter(f, nm, &bs), dims, 2,
                                                i % 2 ? axis1 : axis0, 1);
        acc = cml_op_add(f, cml_op_mul(f, acc, b), b);
      }
      break;
    }
    case 3: {  // a balanced tree over |count| inputs: many values live at once
      cml_value_t vals[32];
      for (int i = 0; i < z->count; ++i) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        vals[i] = cml_op_exp(f, cml_parameter(f, nm, &xs));
      }
      for (int width = z->count; width > 1; width = (width + 1) / 2) {
        for (int i = 0; i < width / 2; ++i)
          vals[i] = cml_op_mul(f, cml_op_add(f, vals[2 * i], vals[2 * i + 1]),
                               cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5));
        if (width % 2) vals[width / 2] = vals[width - 1];
      }
      acc = vals[0];
      break;
    }
    default: {  // exp(c) + x for a constant c of 3 n floats (folded when <= 1 MiB)
      cml_value_t cst = sw_const(f, &xs, 99);
      acc = cml_op_add(f, cml_op_exp(f, cml_op_sin(f, cst)), cml_parameter(f, "x", &xs));
      break;
    }
  }
  outs[0] = acc;
  return 1;
}

TEST(fusion_limits) {
  static const sw_fuse_t cases[] = {
      {0, 4097, 15},  {0, 255, 17},  {0, 16385, 24}, {1, 4097, 31}, {1, 257, 33},
      {1, 16384, 70}, {2, 4097, 5},  {2, 255, 7},    {2, 1000, 12}, {3, 4097, 12},
      {3, 257, 13},   {3, 1000, 27}, {4, 87381, 0},  {4, 87382, 0},
  };
  static const char* const kinds[] = {"many inputs", "long chain", "many broadcasts", "wide tree",
                                      "folded constant"};
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    sw_case_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "fusion %s [3,%lld] x%d", kinds[cases[i].kind],
             (long long)cases[i].n, cases[i].count);
    c.build = sw_build_fuse;
    c.arg = &cases[i];
    c.want_fused = cases[i].kind < 4 ? 1 : 0;
    c.want_folded = cases[i].kind == 4 && 3 * cases[i].n * 4 <= (1 << 20) ? 1 : 0;
    // Chains of transcendental approximations (a few ulps each) on values of magnitude <= a few.
    c.tol.atol = 1e-5;
    c.tol.rtol = 1e-5;
    bad += sw_check(&c);
  }
  SW_DONE(bad);
}

TEST_MAIN(TEST_ENTRY(dot_gemv_m1), TEST_ENTRY(dot_gemv_n1), TEST_ENTRY(dot_skinny),
          TEST_ENTRY(dot_blocked), TEST_ENTRY(dot_tiny_k), TEST_ENTRY(dot_direct_a),
          TEST_ENTRY(dot_transposed_b_small_m), TEST_ENTRY(dot_batched),
          TEST_ENTRY(dot_general_axes), TEST_ENTRY(dot_dtypes), TEST_ENTRY(fused_dense),
          TEST_ENTRY(conv), TEST_ENTRY(reduce), TEST_ENTRY(softmax_layernorm_gelu),
          TEST_ENTRY(attention), TEST_ENTRY(attention_gradients), TEST_ENTRY(gather_scatter_slices),
          TEST_ENTRY(concatenate_in_place), TEST_ENTRY(transpose), TEST_ENTRY(quantized_dense),
          TEST_ENTRY(elementwise), TEST_ENTRY(argminmax_rng_fft), TEST_ENTRY(fusion_limits))
