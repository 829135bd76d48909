// SPDX-License-Identifier: Apache-2.0
// bench/bench_quant.c: quantized inference side by side (public API only): FusedQuantizedDense
// against the machine's DRAM read bandwidth (measured in the same run), the f32 GEMV / GEMM of
// the same shape, and its own decomposition.
//
//   1. batch-1 GEMV, weights K=4096 x N in {4096, 11008}, Q4_0, Q8_0, Q4_K, Q6_K and f32 (as
//      FusedDense with [N, K] weights, and as DotGeneral with [K, N] weights: "f32 KxN"), on
//      c:threads=1 and c:threads=2, each format with f32 activations and with int8 activations
//      ("i8": c:quant_int8=true): weight bytes streamed per second and the ratio to the DRAM
//      read rate of the same thread count, measured again right before each row (a 256 MiB
//      sum with 64-byte loads on huge pages, like the weights). Each timed execution uses the next
//      of enough distinct weight matrices (>= 256 MiB in all) that none is still in the last-level
//      cache.
//   2. batch 32, 4096 x 4096: Q8_0 and Q4_0 against the f32 GEMM of the same shape (FLOP/s).
//   3. fused vs decomposed on c (c vs c:fusion=false): Q4_K and Q8_0 at batch 1 and 32.
//   4. (only with --section 4) Linear / NF4, K = N = 2048, batch 1, 32 and 128: int8 per-channel
//      and block 64, int4 block 64 (also with SiLU), NF4 block 64, on each -b CONFIG (default
//      c:threads=1, c:threads=1,fusion=false, xla:cpu; the last one is the ratios' base). Run it
//      under taskset -c 0 for one core. Weights in cache (8 MiB or less), no rotation.
//
//   bench_quant [--quick] [--reps N] [--section S]   (--quick: 4096 x 4096 only, 3 reps;
//                                                    --section: run only part S, 1..4;
//                                                    --rotate: MiB of distinct weights, 256;
//                                                    -b CONFIG: section 4's backends)
//
// Prints the CPU model first. Benchmarks never gate CI: the exit status is 0 unless an
// execution fails.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "cml/cml.h"
#include "cml/fused.h"
#include "tools/cml/machine.h"

static double bq_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// CPU seconds of the whole process (all threads): unlike the wall clock, not inflated while
// other jobs hold the cores; the 1-thread rows also report rates per CPU second.
static double bq_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bq_cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double bq_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, bq_cmp);
  return v[n / 2];
}

//===--- DRAM read bandwidth ---===//

typedef struct bq_read_t {
  const uint64_t* p;
  size_t n;
  uint64_t sum;
} bq_read_t;

// Sums the words with four independent 64-byte (zmm) accumulators: a plain sequential read at
// the rate the core's loads and the hardware prefetchers reach (the bound the GEMV kernels are
// measured against; a scalar or 32-byte loop reads measurably slower on AVX-512 machines).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f"))) static uint64_t bq_sum_avx512(const uint64_t* p, size_t n) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(p + i + 8));
    s2 = _mm512_add_epi64(s2, _mm512_loadu_si512(p + i + 16));
    s3 = _mm512_add_epi64(s3, _mm512_loadu_si512(p + i + 24));
  }
  uint64_t t = (uint64_t)_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
  for (; i < n; ++i) t += p[i];
  return t;
}
#endif

static void* bq_read_thread(void* arg) {
  bq_read_t* r = arg;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx512f")) {
    r->sum = bq_sum_avx512(r->p, r->n);
    return NULL;
  }
#endif
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= r->n; i += 4) {
    s0 += r->p[i];
    s1 += r->p[i + 1];
    s2 += r->p[i + 2];
    s3 += r->p[i + 3];
  }
  r->sum = s0 + s1 + s2 + s3;
  return NULL;
}

// Read bandwidth in bytes/s of |threads| threads each summing its part of |buffer| (best of
// |reps|); |cpu_bw|: bytes per CPU second over all threads, times |threads| (best of |reps|).
static double bq_dram_read(const uint64_t* buffer, size_t words, int threads, int reps,
                           double* cpu_bw) {
  double best = 0;
  *cpu_bw = 0;
  for (int rep = 0; rep < reps; ++rep) {
    pthread_t tid[8];
    bq_read_t parts[8];
    double t0 = bq_now(), c0 = bq_cpu_now();
    for (int i = 0; i < threads; ++i) {
      parts[i].p = buffer + words / (size_t)threads * (size_t)i;
      parts[i].n = words / (size_t)threads;
      pthread_create(&tid[i], NULL, bq_read_thread, &parts[i]);
    }
    uint64_t sum = 0;
    for (int i = 0; i < threads; ++i) {
      pthread_join(tid[i], NULL);
      sum += parts[i].sum;
    }
    double bw = (double)(words * 8) / (bq_now() - t0);
    double cbw = (double)(words * 8) * threads / (bq_cpu_now() - c0);
    if (cbw > *cpu_bw) *cpu_bw = cbw;
    if (sum == 42) bw += 1e-9;  // keeps the sums alive
    if (bw > best) best = bw;
  }
  return best;
}

//===--- one contender: an executable and its rotating weight buffers ---===//

typedef struct bq_run_t {
  cml_backend_t* backend;
  cml_executable_t* exe;
  cml_buffer_t* x;
  cml_buffer_t* w[64];
  int w_count;
  size_t w_bytes;
} bq_run_t;

static void bq_release(bq_run_t* r) {
  cml_buffer_release(r->x);
  for (int i = 0; i < r->w_count; ++i) cml_buffer_release(r->w[i]);
  cml_executable_release(r->exe);
  cml_backend_release(r->backend);
  memset(r, 0, sizeof *r);
}

static bool bq_ok(cml_status_t st, const char* what) {
  if (st == CML_OK) return true;
  fprintf(stderr, "bench_quant: %s: %s\n", what, cml_status_message(st));
  cml_status_free(st);
  return false;
}

// type -1: f32 weights [N, K] through FusedDense (outputs_input layout: the GEMV's dot form);
// type -2: f32 weights [K, N] through DotGeneral (x [1, K] . w: the GEMV's axpy form).
static bool bq_setup(bq_run_t* r, const char* config, int type, int64_t m, int64_t k, int64_t n,
                     size_t rotate_bytes, const float* wsrc, const float* xsrc) {
  memset(r, 0, sizeof *r);
  if (!bq_ok(cml_backend_new_with_config(config, &r->backend), config)) return false;
  cml_builder_t* b = NULL;
  if (!bq_ok(cml_builder_create(r->backend, "bench_quant", &b), "builder")) return false;
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){m, k});
  cml_shape_t ws;
  if (type == -2) {
    ws = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){k, n});
  } else if (type < 0) {
    ws = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){n, k});
  } else {
    ws = cml_shape_make(CML_DTYPE_U8, 2,
                        (int64_t[]){n, cml_ggml_row_bytes((cml_ggml_type_t)type, k)});
  }
  cml_value_t xv = cml_parameter(f, "x", &xs);
  cml_value_t wv = cml_parameter(f, "w", &ws);
  cml_value_t y;
  if (type == -2) {
    y = cml_op_dot(f, xv, wv);
  } else if (type < 0) {
    cml_dense_config_t dc;
    cml_dense_config_init(&dc);
    dc.weight_layout = CML_DENSE_LAYOUT_OUTPUTS_INPUT;
    y = cml_op_fused_dense(f, xv, wv, CML_VALUE_INVALID, &dc);
  } else {
    cml_quantization_t q;
    cml_quantization_init(&q);
    q.scheme = CML_QUANT_GGML;
    q.ggml_type = (cml_ggml_type_t)type;
    y = cml_op_fused_quantized_dense(f, xv, wv, CML_VALUE_INVALID, &q, CML_ACTIVATION_NONE);
  }
  cml_status_t st = cml_function_return(f, &y, 1);
  if (st == CML_OK) st = cml_builder_compile(b, &r->exe);
  cml_builder_destroy(b);
  if (!bq_ok(st, "compile")) return false;
  r->w_bytes = cml_shape_byte_size(&ws);
  void* host = malloc(r->w_bytes);
  if (!host) return false;
  if (type < 0) {
    memcpy(host, wsrc, r->w_bytes);
  } else if (!bq_ok(cml_quantize_ggml((cml_ggml_type_t)type, wsrc, n, k, host, r->w_bytes),
                    "quantize")) {
    free(host);
    return false;
  }
  int count = (int)((rotate_bytes + r->w_bytes - 1) / r->w_bytes);
  if (count < 1) count = 1;
  if (count > 64) count = 64;
  bool ok =
      bq_ok(cml_buffer_from_host(r->backend, 0, &xs, xsrc, cml_shape_byte_size(&xs), &r->x), "x");
  for (int i = 0; ok && i < count; ++i) {
    ok = bq_ok(cml_buffer_from_host(r->backend, 0, &ws, host, r->w_bytes, &r->w[i]), "w");
    r->w_count += ok;
  }
  free(host);
  return ok;
}

// Median seconds per execution over |reps| samples, each sample one pass over the matrices;
// |cpu|: the median process CPU seconds per execution (NULL: not wanted).
static double bq_time(bq_run_t* r, int reps, double* cpu) {
  double* s = malloc(sizeof(double) * 2 * (size_t)reps);
  int next = 0;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up pass
    double t0 = bq_now(), c0 = bq_cpu_now();
    for (int i = 0; i < r->w_count; ++i) {
      cml_buffer_t* out = NULL;
      cml_buffer_t* in[2] = {r->x, r->w[next]};
      next = (next + 1) % r->w_count;
      if (!bq_ok(cml_executable_execute(r->exe, in, 2, NULL, 0, &out), "execute")) exit(1);
      cml_buffer_release(out);
    }
    if (rep >= 0) {
      s[rep] = (bq_now() - t0) / r->w_count;
      s[reps + rep] = (bq_cpu_now() - c0) / r->w_count;
    }
  }
  double med = bq_median(s, reps);
  if (cpu) *cpu = bq_median(s + reps, reps);
  free(s);
  return med;
}

static const int bq_types[] = {CML_GGML_Q4_0, CML_GGML_Q8_0, CML_GGML_Q4_K, CML_GGML_Q6_K, -1, -2};

static const char* bq_type_name(int type) {
  return type == -2 ? "f32 KxN" : type < 0 ? "f32" : cml_ggml_type_name((cml_ggml_type_t)type);
}

// Section 4: a Linear / NF4 case (weights [K, N], scale [K, ceil(N / block)], block 0: per
// channel, one scale per weight row).
typedef struct bq_lin_t {
  const char* name;
  cml_quant_scheme_t scheme;
  cml_dtype_t dtype;
  int64_t block;
  cml_activation_t act;
} bq_lin_t;

// Compiles y = act(x [m, k] . w) for |lin| on |config| and uploads x, w, scale; r->w[0] holds the
// weights, r->w[1] the scale.
static bool bq_setup_lin(bq_run_t* r, const char* config, const bq_lin_t* lin, int64_t m, int64_t k,
                         int64_t n, const float* wsrc, const float* xsrc) {
  memset(r, 0, sizeof *r);
  if (!bq_ok(cml_backend_new_with_config(config, &r->backend), config)) return false;
  const int64_t block = lin->block ? lin->block : n, nb = (n + block - 1) / block;
  cml_builder_t* b = NULL;
  if (!bq_ok(cml_builder_create(r->backend, "bench_quant_lin", &b), "builder")) return false;
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){m, k});
  cml_shape_t ws = cml_shape_make(lin->dtype, 2, (int64_t[]){k, n});
  cml_shape_t ss = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){k, nb});
  cml_value_t xv = cml_parameter(f, "x", &xs);
  cml_value_t wv = cml_parameter(f, "w", &ws);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = lin->scheme;
  q.block_size = block;
  q.scale = cml_parameter(f, "scale", &ss);
  cml_value_t y = cml_op_fused_quantized_dense(f, xv, wv, CML_VALUE_INVALID, &q, lin->act);
  cml_status_t st = cml_function_return(f, &y, 1);
  if (st == CML_OK) st = cml_builder_compile(b, &r->exe);
  cml_builder_destroy(b);
  if (!bq_ok(st, "compile")) return false;
  r->w_bytes = cml_shape_byte_size(&ws);
  void* host = malloc(r->w_bytes);
  float* scale = malloc(sizeof(float) * (size_t)(k * nb));
  bool ok =
      host && scale &&
      bq_ok(cml_quantize_linear(lin->scheme, lin->dtype, wsrc, k, n, block, host, scale, NULL),
            "quantize");
  ok = ok &&
       bq_ok(cml_buffer_from_host(r->backend, 0, &xs, xsrc, cml_shape_byte_size(&xs), &r->x), "x");
  ok = ok && bq_ok(cml_buffer_from_host(r->backend, 0, &ws, host, r->w_bytes, &r->w[0]), "w");
  r->w_count = ok;
  ok = ok &&
       bq_ok(cml_buffer_from_host(r->backend, 0, &ss, scale, cml_shape_byte_size(&ss), &r->w[1]),
             "scale");
  r->w_count += ok;
  free(host);
  free(scale);
  return ok;
}

// Median process CPU seconds per execution of a bq_setup_lin run over |reps| samples of |inner|
// executions (CPU time, not wall time: on one pinned core it is the work done, robust to the time
// slices other jobs take on a shared machine).
static double bq_time_lin(bq_run_t* r, int reps, int inner) {
  double* s = malloc(sizeof(double) * (size_t)reps);
  for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
    double t0 = bq_cpu_now();
    for (int i = 0; i < inner; ++i) {
      cml_buffer_t* out = NULL;
      cml_buffer_t* in[3] = {r->x, r->w[0], r->w[1]};
      if (!bq_ok(cml_executable_execute(r->exe, in, 3, NULL, 0, &out), "execute")) exit(1);
      cml_buffer_release(out);
    }
    if (rep >= 0) s[rep] = (bq_cpu_now() - t0) / inner;
  }
  double med = bq_median(s, reps);
  free(s);
  return med;
}

// Section 4: Linear / NF4, K = N = 2048, batch 1, 32 and 128, on each of |configs|.
static int bq_linear_section(const char* const* configs, int nconfigs, int reps, const float* w,
                             const float* x) {
  static const bq_lin_t cases[] = {
      {"int8 per-channel", CML_QUANT_LINEAR, CML_DTYPE_I8, 0, CML_ACTIVATION_NONE},
      {"int8 block 64", CML_QUANT_LINEAR, CML_DTYPE_I8, 64, CML_ACTIVATION_NONE},
      {"int4 block 64", CML_QUANT_LINEAR, CML_DTYPE_I4, 64, CML_ACTIVATION_NONE},
      {"int4 block 64 silu", CML_QUANT_LINEAR, CML_DTYPE_I4, 64, CML_ACTIVATION_SILU},
      {"nf4 block 64", CML_QUANT_NF4, CML_DTYPE_U4, 64, CML_ACTIVATION_NONE},
  };
  const int64_t k = 2048, n = 2048;
  printf("\n4. Linear / NF4, K = N = 2048 (CPU us per call; ratios: time / the last backend's)\n");
  printf("%-20s %-6s", "case", "batch");
  for (int c = 0; c < nconfigs; ++c) printf(" %24s", configs[c]);
  printf(" %s\n", nconfigs > 1 ? "ratios" : "");
  // For scale: GGML Q8_0 (8.5 bits per weight, its own kernels) of the same shape.
  for (int64_t m = 1; m <= 128; m = m == 1 ? 32 : m * 4) {
    printf("%-20s %-6lld", "q8_0 (ggml)", (long long)m);
    for (int c = 0; c < nconfigs; ++c) {
      bq_run_t r;
      double cpu = 0;
      if (!bq_setup(&r, configs[c], CML_GGML_Q8_0, m, k, n, 0, w, x)) return 1;
      (void)bq_time(&r, reps, &cpu);
      bq_release(&r);
      printf(" %24.1f", cpu * 1e6);
    }
    printf("\n");
  }
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    for (int64_t m = 1; m <= 128; m = m == 1 ? 32 : m * 4) {
      double t[16];
      for (int c = 0; c < nconfigs; ++c) {
        bq_run_t r;
        if (!bq_setup_lin(&r, configs[c], &cases[i], m, k, n, w, x)) return 1;
        // Enough executions per sample for ~20 ms at 1 GFLOP/s.
        int inner = (int)(2e7 / (2.0 * (double)(m * k * n)) * 1e3);
        inner = inner < 1 ? 1 : inner > 50 ? 50 : inner;
        t[c] = bq_time_lin(&r, reps, inner);
        bq_release(&r);
      }
      printf("%-20s %-6lld", cases[i].name, (long long)m);
      for (int c = 0; c < nconfigs; ++c) printf(" %24.1f", t[c] * 1e6);
      for (int c = 0; c + 1 < nconfigs; ++c) printf(" %6.2fx", t[c] / t[nconfigs - 1]);
      printf("\n");
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 7, section = 0;
  size_t rotate = (size_t)256 << 20;
  const char* configs[16];
  int nconfigs = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-b") == 0 && i + 1 < argc) {
      if (nconfigs < 16) configs[nconfigs++] = argv[++i];
    } else if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
      reps = 3;
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
      if (reps < 1) reps = 1;
    } else if (strcmp(argv[i], "--rotate") == 0 && i + 1 < argc) {
      rotate = (size_t)atoi(argv[++i]) << 20;
    } else if (strcmp(argv[i], "--section") == 0 && i + 1 < argc) {
      section = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: bench_quant [--quick] [--reps N] [--section 1|2|3|4] [--rotate MiB] "
              "[-b CONFIG]...\n");
      return 2;
    }
  }
  char cpu[256];
  cml_cli_cpu_model(cpu, sizeof cpu);
  printf("bench_quant: %s, %d reps (medians)\n", cpu, reps);
  if (nconfigs == 0) {
    configs[nconfigs++] = "c:threads=1";
    configs[nconfigs++] = "c:threads=1,fusion=false";
    configs[nconfigs++] = "xla:cpu";
  }
  if (section == 4) {  // only the Linear / NF4 cases: no DRAM probe, small weights
    float* lw = malloc(sizeof(float) * 2048 * 2048);
    float* lx = malloc(sizeof(float) * 128 * 2048);
    if (!lw || !lx) return 1;
    uint64_t ls = 88172645463325252ull;
    for (int64_t i = 0; i < 2048 * 2048; ++i) {
      ls ^= ls << 13, ls ^= ls >> 7, ls ^= ls << 17;
      lw[i] = (float)((double)(ls >> 40) / 16777216.0 - 0.5);
    }
    for (int64_t i = 0; i < 128 * 2048; ++i) lx[i] = (float)((i % 17) - 8) / 8.0f;
    int rc = bq_linear_section(configs, nconfigs, reps, lw, lx);
    free(lw);
    free(lx);
    return rc;
  }
  const int64_t k = 4096, big_n = 11008;
  float* w = malloc(sizeof(float) * (size_t)(big_n * k));
  float* x = malloc(sizeof(float) * 32 * (size_t)k);
  const size_t dram_bytes = (size_t)256 << 20;
  // The probe's buffer gets huge pages like the backend's large buffers (the weights).
  uint64_t* dram = aligned_alloc((size_t)2 << 20, dram_bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (dram) (void)madvise(dram, dram_bytes, MADV_HUGEPAGE);
#endif
  if (!w || !x || !dram) return 1;
  uint64_t s = 88172645463325252ull;
  for (int64_t i = 0; i < big_n * k; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    w[i] = (float)((double)(s >> 40) / 16777216.0 - 0.5);
  }
  for (int64_t i = 0; i < 32 * k; ++i) x[i] = (float)((i % 17) - 8) / 8.0f;
  memset(dram, 1, dram_bytes);
  double bw[3] = {0, 0, 0}, cbw[3] = {0, 0, 0};
  for (int t = 1; t <= 2; ++t) bw[t] = bq_dram_read(dram, dram_bytes / 8, t, 5, &cbw[t]);
  printf("DRAM read (256 MiB, sum of words): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n",
         bw[1] * 1e-9, bw[2] * 1e-9);
  printf("  per CPU second (x threads): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n\n", cbw[1] * 1e-9,
         cbw[2] * 1e-9);

  printf("1. batch-1 GEMV (weights streamed from DRAM: >= 256 MiB of distinct matrices)\n");
  if (section != 0 && section != 1) printf("(skipped)\n");
  printf("%-7s %-12s %-7s %10s %10s %9s %9s %9s\n", "format", "K x N", "threads", "time us", "GB/s",
         "of DRAM", "vs f32", "cpu/DRAM");
  for (int shape = 0; shape < (section == 0 || section == 1 ? (quick ? 1 : 2) : 0); ++shape) {
    const int64_t n = shape ? big_n : 4096;
    for (int t = 1; t <= 2; ++t) {
      double f32_time = 0;
      // f32 first, for the "vs f32" column; then each format with f32 activations and with
      // int8 activations (quant_int8=true, reported separately as "<format> i8").
      for (int i = 10; i >= 0; --i) {
        const int type = bq_types[i / 2];
        const bool int8 = i % 2 == 1;
        if (type < 0 && int8) continue;
        char config[64];
        snprintf(config, sizeof config, "c:threads=%d%s", t, int8 ? ",quant_int8=true" : "");
        bq_run_t r;
        if (!bq_setup(&r, config, type, 1, k, n, rotate, w, x)) return 1;
        // The read probe again right before this row (the machine's rate drifts), so that each
        // row's fractions compare two measurements taken seconds apart.
        double row_cbw = 0;
        const double row_bw = bq_dram_read(dram, dram_bytes / 8, t, 3, &row_cbw);
        double cpu_s = 0;
        const double tm = bq_time(&r, reps, &cpu_s);
        if (type < 0) f32_time = tm;
        double gbs = (double)r.w_bytes / tm * 1e-9;
        char name[16];
        snprintf(name, sizeof name, "%s%s", bq_type_name(type), int8 ? " i8" : "");
        // cpu/DRAM: the same ratio with both rates per CPU second (x threads): robust to time
        // slices lost to other jobs; meaningful for 1 thread (the pool's spinning counts too).
        printf("%-7s %lldx%-7lld %-7d %10.1f %10.1f %8.0f%% %8.2fx %8.0f%%\n", name, (long long)k,
               (long long)n, t, tm * 1e6, gbs, 100 * gbs / (row_bw * 1e-9), f32_time / tm,
               100 * ((double)r.w_bytes * t / cpu_s) / row_cbw);
        bq_release(&r);
      }
    }
  }

  printf("\n2. batch 32, 4096 x 4096 (FLOP/s; c with all threads)\n");
  printf("%-6s %10s %10s %9s\n", "format", "time us", "GFLOP/s", "vs f32");
  double f32_gemm = 0;
  static const int gemm_types[] = {-1, CML_GGML_Q8_0, CML_GGML_Q4_0};
  for (int i = 0; i < (section == 0 || section == 2 ? 3 : 0); ++i) {
    bq_run_t r;
    if (!bq_setup(&r, "c", gemm_types[i], 32, k, 4096, rotate, w, x)) return 1;
    double tm = bq_time(&r, reps, NULL);
    if (gemm_types[i] < 0) f32_gemm = tm;
    printf("%-6s %10.1f %10.1f %8.2fx\n", bq_type_name(gemm_types[i]), tm * 1e6,
           2.0 * 32 * 4096 * 4096 / tm * 1e-9, f32_gemm / tm);
    bq_release(&r);
  }

  printf("\n3. fused (c) vs decomposed (c:fusion=false), 4096 x 4096\n");
  printf("%-6s %-6s %12s %14s %8s\n", "format", "batch", "fused us", "decomposed us", "ratio");
  static const int fd_types[] = {CML_GGML_Q4_K, CML_GGML_Q8_0};
  for (int i = 0; i < (section == 0 || section == 3 ? 2 : 0); ++i) {
    for (int m = 1; m <= 32; m += 31) {
      bq_run_t a, b;
      if (!bq_setup(&a, "c", fd_types[i], m, k, 4096, 0, w, x)) return 1;
      double ta = bq_time(&a, reps, NULL);
      bq_release(&a);
      if (!bq_setup(&b, "c:fusion=false", fd_types[i], m, k, 4096, 0, w, x)) return 1;
      double tb = bq_time(&b, reps, NULL);
      bq_release(&b);
      printf("%-6s %-6d %12.1f %14.1f %7.1fx\n", bq_type_name(fd_types[i]), m, ta * 1e6, tb * 1e6,
             tb / ta);
    }
  }
  free(dram);
  free(w);
  free(x);
  return 0;
}
