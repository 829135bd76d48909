// SPDX-License-Identifier: Apache-2.0
// tools/cml/bench.c: "cml bench", this machine's limits and the standard benchmark cases on a
// backend, optionally side by side with other backends.
//
//   cml bench [--backend CONFIG] [--compare CONFIG]... [--filter TEXT] [--reps N] [--json FILE]
//             [--no-probes] [--list]
//
// Probes (small built-in loops, all online CPUs, one thread each): the f32 FMA rate (AVX-512 or
// AVX2 FMA on x86-64 when the CPU has it, else a plain multiply-add loop the compiler may
// vectorize) and the DRAM read rate (a 256 MiB array summed in parallel). Each case reports
// its median time, its rate, the rate as a fraction of the FMA probe (compute-bound cases) or
// of the DRAM probe (the GEMV, which streams a 64 MiB weight), and the ratio time_other /
// time_backend against each --compare backend (> 1: the chosen backend is faster). Exits 0 when
// every case ran on the chosen backend, 1 when one failed or the --json file could not be
// written, 2 for usage errors.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backendtest/json_string.h"
#include "backendtest/out_file.h"
#include "cml/cml.h"
#include "tools/cml/cli.h"
#include "tools/cml/machine.h"
#include "tools/cml/models.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CML_CLI_BENCH_X86 1
#endif

#define CML_CLI_BENCH_MAX_COMPARE 4
#define CML_CLI_BENCH_MAX_INPUTS 16

static double cml_cli_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

//===--- probes ---===//

enum { CML_CLI_PROBE_FMA_ITERS = 1 << 22 };

// What a probe measures: the f32 FMA rate, the bf16 dot-product rate (FLOP/s, two per pair
// multiplied and added), the int8 dot-product rate (OP/s, two per byte pair) or the DRAM read
// rate.
typedef enum cml_cli_probe_kind_t {
  CML_CLI_PROBE_F32,
  CML_CLI_PROBE_BF16,
  CML_CLI_PROBE_INT8,
  CML_CLI_PROBE_DRAM,
} cml_cli_probe_kind_t;

// The instruction set a compute probe runs on this CPU.
typedef enum cml_cli_probe_isa_t {
  CML_CLI_ISA_PLAIN,
  CML_CLI_ISA_AVX2,
  CML_CLI_ISA_AVX512,
  CML_CLI_ISA_AVX512_BF16,
  CML_CLI_ISA_AVX512_VNNI,
} cml_cli_probe_isa_t;

#if defined(CML_CLI_BENCH_X86)
// 12 independent accumulator chains (latency x throughput of every unit probed), named so they
// stay in registers: ACC##i = OP(ACC##i, A, B).
#define CML_CLI_OP12(OP, ACC, A, B)                                                      \
  do {                                                                                   \
    ACC##0 = OP(ACC##0, A, B), ACC##1 = OP(ACC##1, A, B), ACC##2 = OP(ACC##2, A, B);     \
    ACC##3 = OP(ACC##3, A, B), ACC##4 = OP(ACC##4, A, B), ACC##5 = OP(ACC##5, A, B);     \
    ACC##6 = OP(ACC##6, A, B), ACC##7 = OP(ACC##7, A, B), ACC##8 = OP(ACC##8, A, B);     \
    ACC##9 = OP(ACC##9, A, B), ACC##10 = OP(ACC##10, A, B), ACC##11 = OP(ACC##11, A, B); \
  } while (0)
#define CML_CLI_DECL12(T, x, INIT)                                  \
  T x##0 = INIT(0), x##1 = INIT(1), x##2 = INIT(2), x##3 = INIT(3); \
  T x##4 = INIT(4), x##5 = INIT(5), x##6 = INIT(6), x##7 = INIT(7); \
  T x##8 = INIT(8), x##9 = INIT(9), x##10 = INIT(10), x##11 = INIT(11)
#define CML_CLI_SUM12(ADD, x)                                                            \
  ADD(ADD(ADD(ADD(x##0, x##1), ADD(x##2, x##3)), ADD(ADD(x##4, x##5), ADD(x##6, x##7))), \
      ADD(ADD(x##8, x##9), ADD(x##10, x##11)))

#define CML_CLI_PS512(i) _mm512_set1_ps((float)(i))
#define CML_CLI_PS256(i) _mm256_set1_ps((float)(i))
#define CML_CLI_EPI512(i) _mm512_set1_epi32(i)
#define CML_CLI_EPI256(i) _mm256_set1_epi32(i)

__attribute__((target("avx512f"))) static float cml_cli_probe_fma_avx512(void) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  CML_CLI_DECL12(__m512, x, CML_CLI_PS512);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_OP12(_mm512_fmadd_ps, x, a, b);
  return _mm512_reduce_add_ps(CML_CLI_SUM12(_mm512_add_ps, x));
}

__attribute__((target("avx2,fma"))) static float cml_cli_probe_fma_avx2(void) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  CML_CLI_DECL12(__m256, x, CML_CLI_PS256);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_OP12(_mm256_fmadd_ps, x, a, b);
  float out[8];
  _mm256_storeu_ps(out, CML_CLI_SUM12(_mm256_add_ps, x));
  return out[0] + out[7];
}

// vdpbf16ps: 32 bf16 pairs per instruction (1.0 x 2^-24 each, so the sums stay small).
#define CML_CLI_DPBF16(acc, a, b) _mm512_dpbf16_ps(acc, a, b)
__attribute__((target("avx512f,avx512bf16"))) static float cml_cli_probe_bf16_avx512(void) {
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3380);
  CML_CLI_DECL12(__m512, x, CML_CLI_PS512);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_OP12(CML_CLI_DPBF16, x, a, b);
  return _mm512_reduce_add_ps(CML_CLI_SUM12(_mm512_add_ps, x));
}
#undef CML_CLI_DPBF16

// vpdpbusd: 64 unsigned x signed byte pairs per instruction (the int32 sums may wrap; only the
// time counts).
#define CML_CLI_DPBUSD(acc, a, b) _mm512_dpbusd_epi32(acc, a, b)
__attribute__((target("avx512f,avx512vnni"))) static float cml_cli_probe_int8_vnni(void) {
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  CML_CLI_DECL12(__m512i, x, CML_CLI_EPI512);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_OP12(CML_CLI_DPBUSD, x, a, b);
  return (float)_mm512_reduce_add_epi32(CML_CLI_SUM12(_mm512_add_epi32, x));
}
#undef CML_CLI_DPBUSD

// AVX2 int8: vpmaddubsw (32 byte pairs to 16 words), vpmaddwd by ones to dwords, vpaddd: what
// the quantized kernels run on CPUs without VNNI.
__attribute__((target("avx2"))) static inline __m256i cml_cli_dp_avx2(__m256i acc, __m256i a,
                                                                      __m256i b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
}
__attribute__((target("avx2"))) static float cml_cli_probe_int8_avx2(void) {
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  CML_CLI_DECL12(__m256i, x, CML_CLI_EPI256);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_OP12(cml_cli_dp_avx2, x, a, b);
  int out[8];
  _mm256_storeu_si256((__m256i*)out, CML_CLI_SUM12(_mm256_add_epi32, x));
  return (float)(out[0] + out[7]);
}
#undef CML_CLI_OP12
#undef CML_CLI_DECL12
#undef CML_CLI_SUM12
#undef CML_CLI_PS512
#undef CML_CLI_PS256
#undef CML_CLI_EPI512
#undef CML_CLI_EPI256
#endif

// Portable: 12 x 8 independent multiply-adds per iteration.
static float cml_cli_probe_fma_plain(void) {
  float acc[96];
  for (int i = 0; i < 96; ++i) acc[i] = (float)i;
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it)
    for (int i = 0; i < 96; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
  float s = 0;
  for (int i = 0; i < 96; ++i) s += acc[i];
  return s;
}

// The instruction set of |kind|'s probe on this CPU (PLAIN: none for bf16 and int8).
static cml_cli_probe_isa_t cml_cli_probe_isa(cml_cli_probe_kind_t kind) {
#if defined(CML_CLI_BENCH_X86)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2");
  switch (kind) {
    case CML_CLI_PROBE_F32:
      return avx512                                  ? CML_CLI_ISA_AVX512
             : avx2 && __builtin_cpu_supports("fma") ? CML_CLI_ISA_AVX2
                                                     : CML_CLI_ISA_PLAIN;
    case CML_CLI_PROBE_BF16:
      return avx512 && __builtin_cpu_supports("avx512bf16") ? CML_CLI_ISA_AVX512_BF16
                                                            : CML_CLI_ISA_PLAIN;
    case CML_CLI_PROBE_INT8:
      return avx512 && __builtin_cpu_supports("avx512vnni") ? CML_CLI_ISA_AVX512_VNNI
             : avx2                                         ? CML_CLI_ISA_AVX2
                                                            : CML_CLI_ISA_PLAIN;
    case CML_CLI_PROBE_DRAM:
      break;
  }
#else
  if (kind == CML_CLI_PROBE_F32) return CML_CLI_ISA_PLAIN;
#endif
  return CML_CLI_ISA_PLAIN;
}

static const char* cml_cli_probe_isa_name(cml_cli_probe_isa_t isa) {
  switch (isa) {
    case CML_CLI_ISA_AVX2:
      return "avx2";
    case CML_CLI_ISA_AVX512:
      return "avx512";
    case CML_CLI_ISA_AVX512_BF16:
      return "avx512_bf16";
    case CML_CLI_ISA_AVX512_VNNI:
      return "avx512_vnni";
    case CML_CLI_ISA_PLAIN:
      break;
  }
  return "plain C";
}

// Operations (FLOP or OP) one probe thread performs: 12 chains x lanes x 2 per pair.
static double cml_cli_probe_ops(cml_cli_probe_kind_t kind, cml_cli_probe_isa_t isa) {
  double per_iter = 0;
  if (kind == CML_CLI_PROBE_F32) {
    per_iter = isa == CML_CLI_ISA_AVX512 ? 12 * 16 * 2
               : isa == CML_CLI_ISA_AVX2 ? 12 * 8 * 2
                                         : 96 * 2;
  } else if (kind == CML_CLI_PROBE_BF16) {
    per_iter = 12 * 32 * 2;
  } else if (kind == CML_CLI_PROBE_INT8) {
    per_iter = isa == CML_CLI_ISA_AVX512_VNNI ? 12 * 64 * 2 : 12 * 32 * 2;
  }
  return per_iter * (double)CML_CLI_PROBE_FMA_ITERS;
}

typedef struct cml_cli_probe_t {
  cml_cli_probe_kind_t kind;
  cml_cli_probe_isa_t isa;
  const float* data;  // DRAM read: this thread's part
  size_t count;
  double seconds;
  float sink;
} cml_cli_probe_t;

static float cml_cli_probe_compute(cml_cli_probe_kind_t kind, cml_cli_probe_isa_t isa) {
#if defined(CML_CLI_BENCH_X86)
  if (kind == CML_CLI_PROBE_F32 && isa == CML_CLI_ISA_AVX512) return cml_cli_probe_fma_avx512();
  if (kind == CML_CLI_PROBE_F32 && isa == CML_CLI_ISA_AVX2) return cml_cli_probe_fma_avx2();
  if (kind == CML_CLI_PROBE_BF16 && isa == CML_CLI_ISA_AVX512_BF16)
    return cml_cli_probe_bf16_avx512();
  if (kind == CML_CLI_PROBE_INT8 && isa == CML_CLI_ISA_AVX512_VNNI)
    return cml_cli_probe_int8_vnni();
  if (kind == CML_CLI_PROBE_INT8 && isa == CML_CLI_ISA_AVX2) return cml_cli_probe_int8_avx2();
#else
  (void)kind, (void)isa;
#endif
  return cml_cli_probe_fma_plain();
}

// Every probe's result is stored here too: when no thread starts (wasm32-wasi has none), the
// probes array never escapes, and clang dropped the DRAM loop whose sum nothing read (the
// probe then reported about 4.5 PB/s).
static volatile float cml_cli_probe_sink;

static void* cml_cli_probe_thread(void* arg) {
  cml_cli_probe_t* p = arg;
  double t0 = cml_cli_bench_now();
  if (p->kind != CML_CLI_PROBE_DRAM) {
    p->sink = cml_cli_probe_compute(p->kind, p->isa);
  } else {
    // Eight partial sums: the loads are independent of each other.
    float s[8] = {0};
    for (size_t i = 0; i + 8 <= p->count; i += 8)
      for (int j = 0; j < 8; ++j) s[j] += p->data[i + j];
    p->sink = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
  }
  cml_cli_probe_sink = p->sink;
  p->seconds = cml_cli_bench_now() - t0;
  return NULL;
}

// Runs the probe on |threads| threads at once; returns the slowest thread's time (best of 3)
// and sets |*ran| to the threads that ran.
static double cml_cli_probe_run(cml_cli_probe_kind_t kind, cml_cli_probe_isa_t isa, int threads,
                                const float* data, size_t count, int* ran) {
  double best = INFINITY;
  cml_cli_probe_t probes[256];
  pthread_t ids[256];
  if (threads > 256) threads = 256;
  for (int round = 0; round < 3; ++round) {
    int started = 0;
    size_t per = count / (size_t)threads / 8 * 8;
    for (int t = 0; t < threads; ++t) {
      probes[t] = (cml_cli_probe_t){kind, isa, data ? data + (size_t)t * per : NULL, per, 0, 0};
      if (t > 0 && pthread_create(&ids[t], NULL, cml_cli_probe_thread, &probes[t]) == 0) {
        ++started;
      } else if (t > 0) {
        probes[t].seconds = 0;
      }
    }
    cml_cli_probe_thread(&probes[0]);
    for (int t = 1; t <= started; ++t) pthread_join(ids[t], NULL);
    double slowest = 0;
    for (int t = 0; t <= started; ++t)
      if (probes[t].seconds > slowest) slowest = probes[t].seconds;
    if (slowest < best) best = slowest;
    threads = started + 1;
  }
  *ran = threads;
  return best;
}

typedef struct cml_cli_machine_t {
  int cpus;
  const char* fma_isa;
  const char* bf16_isa;  // NULL: no bf16 dot-product instruction
  const char* int8_isa;  // NULL: no int8 dot-product instruction
  double fma_gflops;     // f32, all CPUs
  double bf16_gflops;    // bf16 dot products, all CPUs (0: none)
  double int8_gops;      // int8 dot products, all CPUs (0: none)
  double dram_gbs;       // read, all CPUs
} cml_cli_machine_t;

// The rate of the compute probe |kind| on all CPUs, in G per second (0: no such instruction).
static double cml_cli_probe_rate(cml_cli_probe_kind_t kind, int cpus, const char** isa_name) {
  cml_cli_probe_isa_t isa = cml_cli_probe_isa(kind);
  *isa_name = cml_cli_probe_isa_name(isa);
  if (kind != CML_CLI_PROBE_F32 && isa == CML_CLI_ISA_PLAIN) {
    *isa_name = NULL;
    return 0;
  }
  int ran = 1;
  double t = cml_cli_probe_run(kind, isa, cpus, NULL, 0, &ran);
  return cml_cli_probe_ops(kind, isa) * ran / t * 1e-9;
}

static void cml_cli_probe_machine(cml_cli_machine_t* m) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  m->cpus = cpus < 1 ? 1 : cpus > 256 ? 256 : (int)cpus;
  m->fma_gflops = cml_cli_probe_rate(CML_CLI_PROBE_F32, m->cpus, &m->fma_isa);
  m->bf16_gflops = cml_cli_probe_rate(CML_CLI_PROBE_BF16, m->cpus, &m->bf16_isa);
  m->int8_gops = cml_cli_probe_rate(CML_CLI_PROBE_INT8, m->cpus, &m->int8_isa);
  size_t count = (size_t)64 << 20;  // 256 MiB of floats
  float* data = malloc(count * sizeof(float));
  m->dram_gbs = 0;
  if (data) {
    for (size_t i = 0; i < count; ++i) data[i] = (float)(i & 7);
    int ran = 1;
    double t = cml_cli_probe_run(CML_CLI_PROBE_DRAM, CML_CLI_ISA_PLAIN, m->cpus, data, count, &ran);
    size_t per = count / (size_t)m->cpus / 8 * 8;
    m->dram_gbs = (double)(per * (size_t)ran * sizeof(float)) / t * 1e-9;
    free(data);
  }
}

//===--- cases ---===//

typedef enum cml_cli_case_kind_t {
  CML_CLI_CASE_MATMUL,
  CML_CLI_CASE_CONV,
  CML_CLI_CASE_RESNET,
  CML_CLI_CASE_MLP,
  CML_CLI_CASE_TRANSFORMER,
  CML_CLI_CASE_DECODER,
} cml_cli_case_kind_t;

// Matmul cases: d = {batch, m, k, n, rhs transposed, f32 output}: lhs [batch, m, k] (rank 2
// when batch is 0) times rhs [k, n] ([n, k] when transposed), contracting k.
enum {
  CML_CLI_MM_BATCH,
  CML_CLI_MM_M,
  CML_CLI_MM_K,
  CML_CLI_MM_N,
  CML_CLI_MM_TRANS,
  CML_CLI_MM_F32
};

typedef struct cml_cli_case_t {
  const char* name;
  cml_cli_case_kind_t kind;
  cml_dtype_t dtype;
  int64_t d[8];
  bool bandwidth;  // rated against the DRAM probe (bytes: cml_cli_case_bytes)
} cml_cli_case_t;

static const cml_cli_case_t kCmlCliCases[] = {
    {"matmul f32 1024x1024x1024", CML_CLI_CASE_MATMUL, CML_DTYPE_F32, {0, 1024, 1024, 1024}, false},
    {"matmul f32 1x4096x4096 (GEMV)", CML_CLI_CASE_MATMUL, CML_DTYPE_F32, {0, 1, 4096, 4096}, true},
    {"matmul f32 32x4096x4096", CML_CLI_CASE_MATMUL, CML_DTYPE_F32, {0, 32, 4096, 4096}, false},
    {"matmul f32 32x13x384 @ 384x1152",
     CML_CLI_CASE_MATMUL,
     CML_DTYPE_F32,
     {32, 13, 384, 1152},
     false},
    {"matmul f32 32x13x1536 @ 1536x384",
     CML_CLI_CASE_MATMUL,
     CML_DTYPE_F32,
     {32, 13, 1536, 384},
     false},
    {"matmul f32 32x13x1536 @ 384x1536 (transposed rhs)",
     CML_CLI_CASE_MATMUL,
     CML_DTYPE_F32,
     {32, 13, 1536, 384, 1},
     false},
    {"matmul bf16 512x512x512", CML_CLI_CASE_MATMUL, CML_DTYPE_BF16, {0, 512, 512, 512}, false},
    {"matmul bf16 1536x1920x1024",
     CML_CLI_CASE_MATMUL,
     CML_DTYPE_BF16,
     {0, 1536, 1920, 1024},
     false},
    {"matmul bf16->f32 1536x1920x1024",
     CML_CLI_CASE_MATMUL,
     CML_DTYPE_BF16,
     {0, 1536, 1920, 1024, 0, 1},
     false},
    {"conv2d f32 7x7/2 stem [1,224,224,3] -> 64",
     CML_CLI_CASE_CONV,
     CML_DTYPE_F32,
     {1, 224, 224, 3, 7, 64, 2, 3},
     false},
    {"conv2d f32 3x3 [8,32,32,64] -> 64",
     CML_CLI_CASE_CONV,
     CML_DTYPE_F32,
     {8, 32, 32, 64, 3, 64, 1, 1},
     false},
    {"resnet f32 basic block [1,56,56,64]", CML_CLI_CASE_RESNET, CML_DTYPE_F32, {1, 56, 64}, false},
    {"transformer f32 block d768 h12 seq 128, batch 1",
     CML_CLI_CASE_TRANSFORMER,
     CML_DTYPE_F32,
     {1, 128, 768, 12},
     false},
    {"transformer f32 block d768 h12 seq 128, batch 8",
     CML_CLI_CASE_TRANSFORMER,
     CML_DTYPE_F32,
     {8, 128, 768, 12},
     false},
    {"transformer bf16 block d768 h12 seq 128, batch 1",
     CML_CLI_CASE_TRANSFORMER,
     CML_DTYPE_BF16,
     {1, 128, 768, 12},
     false},
    {"transformer bf16 block d768 h12 seq 128, batch 8",
     CML_CLI_CASE_TRANSFORMER,
     CML_DTYPE_BF16,
     {8, 128, 768, 12},
     false},
    {"decoder f32 step d768 h12, 1 token vs 512 cached, batch 1",
     CML_CLI_CASE_DECODER,
     CML_DTYPE_F32,
     {1, 512, 768, 12},
     true},
    {"decoder f32 step d768 h12, 1 token vs 512 cached, batch 8",
     CML_CLI_CASE_DECODER,
     CML_DTYPE_F32,
     {8, 512, 768, 12},
     true},
    {"decoder bf16 step d768 h12, 1 token vs 512 cached, batch 1",
     CML_CLI_CASE_DECODER,
     CML_DTYPE_BF16,
     {1, 512, 768, 12},
     true},
    {"decoder bf16 step d768 h12, 1 token vs 512 cached, batch 8",
     CML_CLI_CASE_DECODER,
     CML_DTYPE_BF16,
     {8, 512, 768, 12},
     true},
    {"mlp f32 784-512-512-10, batch 1", CML_CLI_CASE_MLP, CML_DTYPE_F32, {1}, false},
    {"mlp f32 784-512-512-10, batch 128", CML_CLI_CASE_MLP, CML_DTYPE_F32, {128}, false},
};
#define CML_CLI_CASE_COUNT (sizeof kCmlCliCases / sizeof kCmlCliCases[0])

static cml_value_t cml_cli_case_matmul(cml_function_t* f, const cml_cli_case_t* c) {
  const int64_t* d = c->d;
  const bool batched = d[CML_CLI_MM_BATCH] > 0, trans = d[CML_CLI_MM_TRANS] != 0;
  int64_t lhs_dims[3] = {d[CML_CLI_MM_BATCH], d[CML_CLI_MM_M], d[CML_CLI_MM_K]};
  cml_shape_t sa = cml_shape_make(c->dtype, batched ? 3 : 2, batched ? lhs_dims : lhs_dims + 1);
  cml_shape_t sb = cml_shape_make(c->dtype, 2,
                                  trans ? (int64_t[]){d[CML_CLI_MM_N], d[CML_CLI_MM_K]}
                                        : (int64_t[]){d[CML_CLI_MM_K], d[CML_CLI_MM_N]});
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = batched ? 2 : 1;
  cfg.rhs_contracting_axes[0] = trans ? 1 : 0;
  cfg.accumulator_dtype = CML_DTYPE_INVALID;
  cfg.output_dtype = d[CML_CLI_MM_F32] ? CML_DTYPE_F32 : CML_DTYPE_INVALID;
  return cml_op_dot_general(f, cml_parameter(f, "lhs", &sa), cml_parameter(f, "rhs", &sb), &cfg);
}

static cml_value_t cml_cli_case_build(cml_function_t* f, const cml_cli_case_t* c) {
  const int64_t* d = c->d;
  switch (c->kind) {
    case CML_CLI_CASE_MATMUL:
      return cml_cli_case_matmul(f, c);
    case CML_CLI_CASE_CONV:
      return cml_cli_model_conv2d(f, c->dtype, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
    case CML_CLI_CASE_RESNET:
      return cml_cli_model_resnet_block(f, c->dtype, d[0], d[1], d[2]);
    case CML_CLI_CASE_MLP:
      return cml_cli_model_mlp(f, c->dtype, d[0]);
    case CML_CLI_CASE_TRANSFORMER:
      return cml_cli_model_transformer_block(f, c->dtype, d[0], d[1], d[2], d[3]);
    case CML_CLI_CASE_DECODER:
      return cml_cli_model_decoder_step(f, c->dtype, d[0], d[1], d[2], d[3]);
  }
  return cml_cli_model_mlp(f, c->dtype, 1);
}

static double cml_cli_case_flops(const cml_cli_case_t* c) {
  const int64_t* d = c->d;
  switch (c->kind) {
    case CML_CLI_CASE_MATMUL:
      return 2.0 * (double)(d[CML_CLI_MM_BATCH] > 0 ? d[CML_CLI_MM_BATCH] : 1) *
             (double)d[CML_CLI_MM_M] * (double)d[CML_CLI_MM_K] * (double)d[CML_CLI_MM_N];
    case CML_CLI_CASE_CONV:
      return cml_cli_model_conv2d_flops(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
    case CML_CLI_CASE_RESNET:
      return cml_cli_model_resnet_block_flops(d[0], d[1], d[2]);
    case CML_CLI_CASE_MLP:
      return cml_cli_model_mlp_flops(d[0]);
    case CML_CLI_CASE_TRANSFORMER:
      return cml_cli_model_transformer_block_flops(d[0], d[1], d[2]);
    case CML_CLI_CASE_DECODER:
      return cml_cli_model_decoder_step_flops(d[0], d[1], d[2]);
  }
  return 0;
}

// Bytes a bandwidth-rated case must read: the GEMV's weight; the decoder step's weights
// (12 d^2) and its two caches [batch, cached, d].
static double cml_cli_case_bytes(const cml_cli_case_t* c) {
  const double elem = (double)cml_dtype_bits(c->dtype) / 8.0;
  const int64_t* d = c->d;
  if (c->kind == CML_CLI_CASE_DECODER) {
    const double dm = (double)d[2];
    return elem * (12.0 * dm * dm + 2.0 * (double)d[0] * (double)d[1] * dm);
  }
  return elem * (double)d[CML_CLI_MM_K] * (double)d[CML_CLI_MM_N];
}

// Fills |n| elements of |dtype| with values in [-1, 1) from |seed| (other dtypes: zeros).
static void cml_cli_fill(void* data, cml_dtype_t dtype, int64_t n, uint32_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    float v = (float)(seed >> 8) / 8388608.0f - 1.0f;
    if (dtype == CML_DTYPE_F32) {
      ((float*)data)[i] = v;
    } else if (dtype == CML_DTYPE_BF16) {
      ((uint16_t*)data)[i] = cml_f32_to_bf16(v);
    } else if (dtype == CML_DTYPE_F16) {
      ((uint16_t*)data)[i] = cml_f32_to_f16(v);
    } else if (dtype == CML_DTYPE_F64) {
      ((double*)data)[i] = v;
    }
  }
}

static int cml_cli_cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

// One contender of one case: a compiled executable and its inputs on a backend, or OpenBLAS's
// sgemm on host arrays. Contenders are prepared together and then run interleaved, rep by rep
// (the first contender rotating), so that drift and other threads' leftover spinning (a
// runtime's pool that spins after its call) hit every contender alike.
typedef struct cml_cli_run_t {
  bool ok;  // prepared and every execute so far succeeded
  char why[256];
  // A backend:
  cml_builder_t* builder;
  cml_executable_t* exe;
  cml_backend_t* backend;
  cml_buffer_t* inputs[CML_CLI_BENCH_MAX_INPUTS];
  size_t n_inputs;
  // OpenBLAS (blas set):
  const struct cml_cli_blas_t* blas;
  float *a, *w, *out;
  int m, k, n;
  bool trans;
  double* times;
} cml_cli_run_t;

static void cml_cli_run_fail(cml_cli_run_t* r, cml_status_t st) {
  snprintf(r->why, sizeof r->why, "%s: %s", cml_status_code_name(cml_status_code(st)),
           cml_status_message(st));
  cml_status_free(st);
  r->ok = false;
}

// Compiles case |c| on |backend| and uploads its inputs; r->ok false (r->why set) on failure.
static void cml_cli_run_prepare(cml_cli_run_t* r, cml_backend_t* backend, const cml_cli_case_t* c,
                                int reps) {
  memset(r, 0, sizeof *r);
  r->backend = backend;
  r->times = calloc((size_t)reps, sizeof(double));
  if (!r->times) {
    snprintf(r->why, sizeof r->why, "out of memory");
    return;
  }
  cml_status_t st = cml_builder_create(backend, "bench", &r->builder);
  if (st == CML_OK) {
    cml_value_t out = cml_cli_case_build(cml_builder_main(r->builder), c);
    st = cml_function_return(cml_builder_main(r->builder), &out, 1);
    if (st == CML_OK) st = cml_builder_compile(r->builder, &r->exe);
  }
  if (st != CML_OK) {
    cml_cli_run_fail(r, st);
    return;
  }
  size_t n_inputs = cml_executable_input_count(r->exe);
  if (n_inputs > CML_CLI_BENCH_MAX_INPUTS) {
    snprintf(r->why, sizeof r->why, "more than %d inputs", CML_CLI_BENCH_MAX_INPUTS);
    return;
  }
  for (size_t i = 0; i < n_inputs; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(r->exe, i);
    size_t bytes = cml_shape_byte_size(s);
    void* host = calloc(1, bytes ? bytes : 1);
    if (!host) {
      snprintf(r->why, sizeof r->why, "out of memory");
      return;
    }
    cml_cli_fill(host, s->dtype, cml_shape_element_count(s), 17u + 31u * (uint32_t)i);
    st = cml_buffer_from_host(backend, 0, s, host, bytes, &r->inputs[i]);
    free(host);
    if (st != CML_OK) {
      cml_cli_run_fail(r, st);
      return;
    }
    r->n_inputs = i + 1;
  }
  r->ok = true;
}

// Execute |rep| (negative: a warm-up, not recorded).
static void cml_cli_run_once(cml_cli_run_t* r, int rep);

static double cml_cli_run_median(cml_cli_run_t* r, int reps) {
  if (!r->ok) return -1;
  qsort(r->times, (size_t)reps, sizeof(double), cml_cli_cmp_double);
  return r->times[reps / 2];
}

static void cml_cli_run_release(cml_cli_run_t* r) {
  for (size_t i = 0; i < r->n_inputs; ++i) cml_buffer_release(r->inputs[i]);
  cml_executable_release(r->exe);
  cml_builder_destroy(r->builder);
  free(r->a);
  free(r->w);
  free(r->out);
  free(r->times);
  memset(r, 0, sizeof *r);
}

//===--- OpenBLAS, when installed (opened at run time: not a dependency) ---===//

#if defined(__unix__) && !defined(__EMSCRIPTEN__)
#include <dlfcn.h>
#define CML_CLI_BENCH_DL 1
#endif

// cblas_sgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) with the
// CBLAS enumeration values (row major 101, no transpose 111, transpose 112).
typedef void (*cml_cli_sgemm_fn)(int, int, int, int, int, int, float, const float*, int,
                                 const float*, int, float, float*, int);
typedef void (*cml_cli_blas_threads_fn)(int);

struct cml_cli_blas_t {
  void* lib;
  cml_cli_sgemm_fn sgemm;
  const char* name;
};
typedef struct cml_cli_blas_t cml_cli_blas_t;

// Opens OpenBLAS if this machine has it and sets its thread count; false when it does not.
static bool cml_cli_blas_open(cml_cli_blas_t* b, int threads) {
  memset(b, 0, sizeof *b);
#if defined(CML_CLI_BENCH_DL)
  static const char* const kNames[] = {"libopenblas.so.0", "libopenblas.so"};
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0] && !b->lib; ++i) {
    void* lib = dlopen(kNames[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    void* sgemm = dlsym(lib, "cblas_sgemm");
    void* set_threads = dlsym(lib, "openblas_set_num_threads");
    if (!sgemm) {
      dlclose(lib);
      continue;
    }
    b->lib = lib;
    b->name = kNames[i];
    memcpy(&b->sgemm, &sgemm, sizeof b->sgemm);
    if (set_threads) {
      cml_cli_blas_threads_fn fn;
      memcpy(&fn, &set_threads, sizeof fn);
      fn(threads);
    }
  }
#else
  (void)threads;
#endif
  return b->lib != NULL;
}

static void cml_cli_blas_close(cml_cli_blas_t* b) {
#if defined(CML_CLI_BENCH_DL)
  if (b->lib) dlclose(b->lib);
#endif
  memset(b, 0, sizeof *b);
}

// Prepares OpenBLAS as a contender of an f32 matmul case; false (nothing to release) for the
// other cases.
static bool cml_cli_blas_prepare(cml_cli_run_t* r, const cml_cli_blas_t* b, const cml_cli_case_t* c,
                                 int reps) {
  memset(r, 0, sizeof *r);
  if (!b->sgemm || c->kind != CML_CLI_CASE_MATMUL || c->dtype != CML_DTYPE_F32) return false;
  const int64_t* d = c->d;
  r->blas = b;
  r->m = (int)((d[CML_CLI_MM_BATCH] > 0 ? d[CML_CLI_MM_BATCH] : 1) * d[CML_CLI_MM_M]);
  r->k = (int)d[CML_CLI_MM_K];
  r->n = (int)d[CML_CLI_MM_N];
  r->trans = d[CML_CLI_MM_TRANS] != 0;
  r->a = malloc(sizeof(float) * (size_t)r->m * (size_t)r->k);
  r->w = malloc(sizeof(float) * (size_t)r->k * (size_t)r->n);
  r->out = malloc(sizeof(float) * (size_t)r->m * (size_t)r->n);
  r->times = calloc((size_t)reps, sizeof(double));
  if (!r->a || !r->w || !r->out || !r->times) {
    snprintf(r->why, sizeof r->why, "out of memory");
    return true;
  }
  cml_cli_fill(r->a, CML_DTYPE_F32, (int64_t)r->m * r->k, 17u);
  cml_cli_fill(r->w, CML_DTYPE_F32, (int64_t)r->k * r->n, 48u);
  r->ok = true;
  return true;
}

static void cml_cli_run_once(cml_cli_run_t* r, int rep) {
  if (!r->ok) return;
  double t0 = cml_cli_bench_now();
  if (r->blas) {
    r->blas->sgemm(101, 111, r->trans ? 112 : 111, r->m, r->n, r->k, 1.0f, r->a, r->k, r->w,
                   r->trans ? r->k : r->n, 0.0f, r->out, r->n);
  } else {
    cml_buffer_t* out = NULL;
    cml_status_t st = cml_executable_execute(r->exe, r->inputs, r->n_inputs, NULL, 0, &out);
    cml_buffer_release(out);
    if (st != CML_OK) {
      cml_cli_run_fail(r, st);
      return;
    }
  }
  if (rep >= 0) r->times[rep] = cml_cli_bench_now() - t0;
}

// The thread count in a backend config ("c:threads=2,..."), else |fallback|.
static int cml_cli_config_threads(const char* config, int fallback) {
  for (const char* p = config ? strstr(config, "threads=") : NULL; p;
       p = strstr(p + 1, "threads=")) {
    if (p > config && (p[-1] == ':' || p[-1] == ',')) {
      long v = strtol(p + 8, NULL, 10);
      if (v > 0 && v < 4096) return (int)v;
    }
  }
  return fallback;
}

//===--- command ---===//

static void cml_cli_bench_usage(FILE* out) {
  fputs(
      "usage: cml bench [--backend CONFIG] [--compare CONFIG]... [--filter TEXT] [--reps N]\n"
      "                 [--json FILE] [--no-probes] [--no-native] [--list]\n"
      "\n"
      "Measures this machine's peak rates with small built-in probes (f32 FMA, bf16 and int8\n"
      "dot products where the CPU has them) and its DRAM read rate, then runs the standard\n"
      "cases (matmuls, GEMV, convolutions, ResNet block, transformer block, decoder step, MLP)\n"
      "on a backend and prints each case's median time, rate, the rate as a fraction of the\n"
      "probe that bounds it (f32 FMA for f32 cases, bf16 dot products for bf16 cases, DRAM\n"
      "for the GEMV and the decoder step, whose weights and cache are read once; above 100%:\n"
      "they stayed in the caches), and the ratio time_other / time_backend for each --compare\n"
      "backend and for OpenBLAS on the f32 matmuls when libopenblas is installed (> 1: the\n"
      "backend is faster; OpenBLAS gets the backend's thread count). The contenders of a case\n"
      "run interleaved, rep by rep.\n"
      "  --backend CONFIG  backend to measure (default: GOMLX_BACKEND, else the best available)\n"
      "  --compare CONFIG  also run each case on this backend (repeatable, up to 4, each once),\n"
      "                    e.g. xla:cpu; a contender that fails a case says why\n"
      "  --filter TEXT     run only the cases whose name contains TEXT, or only the case named\n"
      "                    TEXT exactly when there is one\n"
      "  --reps N          timed executes per case and backend (median taken; default 5)\n"
      "  --json FILE       also write the machine figures and results as JSON to FILE (replaced\n"
      "                    at the end: a run stopped early leaves the old file whole)\n"
      "  --no-probes       skip the probes (no fractions of peak: null in the JSON)\n"
      "  --no-native       skip OpenBLAS\n"
      "  --list            list the cases (those --filter selects) and exit\n",
      out);
}

static const char* cml_cli_bench_value(int argc, char** argv, int* i, const char* name) {
  size_t len = strlen(name);
  const char* arg = argv[*i];
  if (strncmp(arg, name, len) == 0 && arg[len] == '=') return arg + len + 1;
  if (strcmp(arg, name) == 0 && *i + 1 < argc) return argv[++*i];
  return NULL;
}

// A JSON number, or null when |known| is false.
static void cml_cli_json_number(FILE* json, bool known, double value, const char* format) {
  if (known) {
    fprintf(json, format, value);
  } else {
    fprintf(json, "null");
  }
}

static bool cml_cli_bench_is(const char* arg, const char* name) {
  size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

// Whether the case |name| runs under |filter| (NULL: all), |exact| when the filter names a case.
static bool cml_cli_bench_selects(const char* name, const char* filter, bool exact) {
  if (!filter) return true;
  return exact ? strcmp(name, filter) == 0 : strstr(name, filter) != NULL;
}

int cml_cli_bench(int argc, char** argv) {
  const char* backend_config = NULL;
  const char* compare[CML_CLI_BENCH_MAX_COMPARE];
  int compare_count = 0;
  const char* filter = NULL;
  const char* json_path = NULL;
  int reps = 5;
  bool probes = true, list = false, native = true;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* v = NULL;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 || strcmp(arg, "help") == 0) {
      cml_cli_bench_usage(stdout);
      return 0;
    } else if (cml_cli_bench_is(arg, "--backend")) {
      if (!(backend_config = cml_cli_bench_value(argc, argv, &i, "--backend"))) goto needs_value;
    } else if (cml_cli_bench_is(arg, "--compare")) {
      if (!(v = cml_cli_bench_value(argc, argv, &i, "--compare")) || !v[0]) goto needs_value;
      if (compare_count == CML_CLI_BENCH_MAX_COMPARE) {
        fprintf(stderr, "cml bench: at most %d --compare backends\n", CML_CLI_BENCH_MAX_COMPARE);
        return 2;
      }
      for (int o = 0; o < compare_count; ++o) {
        if (strcmp(compare[o], v) == 0) {
          fprintf(stderr, "cml bench: --compare %s given twice\n", v);
          return 2;
        }
      }
      compare[compare_count++] = v;
    } else if (cml_cli_bench_is(arg, "--filter")) {
      if (!(filter = cml_cli_bench_value(argc, argv, &i, "--filter"))) goto needs_value;
    } else if (cml_cli_bench_is(arg, "--json")) {
      if (!(json_path = cml_cli_bench_value(argc, argv, &i, "--json")) || !json_path[0])
        goto needs_value;
    } else if (cml_cli_bench_is(arg, "--reps")) {
      if (!(v = cml_cli_bench_value(argc, argv, &i, "--reps"))) goto needs_value;
      char* end = NULL;
      long n = strtol(v, &end, 10);
      if (!end || *end || n < 1 || n > 10000) {
        fprintf(stderr, "cml bench: --reps needs a count in [1, 10000], got \"%s\"\n", v);
        return 2;
      }
      reps = (int)n;
    } else if (strcmp(arg, "--no-probes") == 0) {
      probes = false;
    } else if (strcmp(arg, "--no-native") == 0) {
      native = false;
    } else if (strcmp(arg, "--list") == 0) {
      list = true;
    } else {
      fprintf(stderr, "cml bench: unknown argument \"%s\"\n\n", arg);
      cml_cli_bench_usage(stderr);
      return 2;
    }
    continue;
  needs_value:
    fprintf(stderr, "cml bench: %s needs a value\n", arg);
    return 2;
  }
  int help_rc = 0;
  if (cml_cli_backend_help("bench", backend_config, &help_rc)) return help_rc;
  // A filter that names a case exactly selects that case alone ("..., batch 1" without
  // "..., batch 128"); otherwise every case containing it.
  bool exact = false;
  for (size_t c = 0; filter && c < CML_CLI_CASE_COUNT; ++c) {
    exact = exact || strcmp(kCmlCliCases[c].name, filter) == 0;
  }
  if (list) {
    int listed = 0;
    for (size_t c = 0; c < CML_CLI_CASE_COUNT; ++c) {
      if (!cml_cli_bench_selects(kCmlCliCases[c].name, filter, exact)) continue;
      printf("%s\n", kCmlCliCases[c].name);
      ++listed;
    }
    if (listed == 0) {
      fprintf(stderr, "cml bench: no case matches \"%s\"\n", filter);
      return 1;
    }
    return 0;
  }

  cml_backend_t* backend = cml_cli_open_backend("bench", backend_config);
  if (!backend) return 2;
  cml_backend_t* others[CML_CLI_BENCH_MAX_COMPARE] = {0};
  for (int o = 0; o < compare_count; ++o) {
    others[o] = cml_cli_open_backend("bench", compare[o]);
    if (!others[o]) fprintf(stderr, "cml bench: skipping --compare %s\n", compare[o]);
  }
  cml__out_file_t json_file;
  FILE* json = NULL;
  if (json_path) {
    if (cml__out_file_open(&json_file, json_path)) json = json_file.f;
    if (!json) {
      fprintf(stderr, "cml bench: cannot write %s: %s\n", json_path, strerror(errno));
      cml_backend_release(backend);
      for (int o = 0; o < compare_count; ++o) cml_backend_release(others[o]);
      return 1;  // an output file that cannot be written, as a full disk: not a usage error
    }
  }

  cml_cli_machine_t m = {0};
  char cpu_model[192];
  cml_cli_cpu_model(cpu_model, sizeof cpu_model);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = cpus < 1 ? 1 : (int)cpus;
  if (probes) {
    cml_cli_probe_machine(&m);
    char bf16[64] = "none", int8[64] = "none";
    if (m.bf16_isa) snprintf(bf16, sizeof bf16, "(%s) %.1f GFLOP/s", m.bf16_isa, m.bf16_gflops);
    if (m.int8_isa) snprintf(int8, sizeof int8, "(%s) %.1f GOP/s", m.int8_isa, m.int8_gops);
    printf(
        "# machine: %s, %d CPU(s); probes on all of them: f32 FMA (%s) %.1f GFLOP/s, bf16 dot "
        "%s, int8 dot %s, DRAM read %.1f GB/s\n",
        cpu_model, m.cpus, m.fma_isa, m.fma_gflops, bf16, int8, m.dram_gbs);
  }
  cml_cli_blas_t blas = {0};
  const int blas_threads = cml_cli_config_threads(cml_backend_config(backend), m.cpus);
  if (native) cml_cli_blas_open(&blas, blas_threads);
  printf("# backend %s, %d rep(s) per case (median)", cml_backend_config(backend), reps);
  if (blas.lib) printf("; OpenBLAS (%s) on %d thread(s)", blas.name, blas_threads);
  printf("\n%-58s %11s %15s %8s", "case", "time", "rate", "of limit");
  // Each --compare column as wide as its label (two long configs must not look the same).
  int width[CML_CLI_BENCH_MAX_COMPARE];
  for (int o = 0; o < compare_count; ++o) {
    const int len = 3 + (int)strlen(compare[o]);
    width[o] = len > 15 ? len : 15;
    printf("  vs %*s", width[o] - 3, compare[o]);
  }
  if (blas.lib) printf("  %15s", "vs OpenBLAS");
  printf("\n");
  if (json) {
    // Without the probes (--no-probes) the machine's figures are null, not 0.
    fprintf(json, "{\"cpu\": ");
    cml__json_write_string(json, cpu_model);
    fprintf(json, ", \"cpus\": %d, \"fma_isa\": ", m.cpus);
    cml__json_write_string(json, probes && m.fma_isa ? m.fma_isa : NULL);
    fprintf(json, ", \"fma_gflops\": ");
    cml_cli_json_number(json, probes, m.fma_gflops, "%.3f");
    fprintf(json, ", \"bf16_isa\": ");
    cml__json_write_string(json, probes && m.bf16_isa ? m.bf16_isa : NULL);
    fprintf(json, ", \"bf16_gflops\": ");
    cml_cli_json_number(json, probes && m.bf16_isa, m.bf16_gflops, "%.3f");
    fprintf(json, ", \"int8_isa\": ");
    cml__json_write_string(json, probes && m.int8_isa ? m.int8_isa : NULL);
    fprintf(json, ", \"int8_gops\": ");
    cml_cli_json_number(json, probes && m.int8_isa, m.int8_gops, "%.3f");
    fprintf(json, ", \"dram_gbs\": ");
    cml_cli_json_number(json, probes, m.dram_gbs, "%.3f");
    fprintf(json, ", \"backend\": ");
    cml__json_write_string(json, cml_backend_config(backend));
    fprintf(json, ", \"openblas_threads\": %d, \"reps\": %d, \"cases\": [",
            blas.lib ? blas_threads : 0, reps);
  }
  int failed = 0, ran = 0;
  bool json_failed = false;
  // Contender 0 is the measured backend, 1 .. compare_count the --compare backends, the last
  // OpenBLAS where it runs the case.
  cml_cli_run_t runs[CML_CLI_BENCH_MAX_COMPARE + 2];
  for (size_t ci = 0; ci < CML_CLI_CASE_COUNT; ++ci) {
    const cml_cli_case_t* c = &kCmlCliCases[ci];
    if (!cml_cli_bench_selects(c->name, filter, exact)) continue;
    cml_cli_run_prepare(&runs[0], backend, c, reps);
    int count = 1;
    for (int o = 0; o < compare_count; ++o, ++count) {
      if (others[o]) {
        cml_cli_run_prepare(&runs[count], others[o], c, reps);
      } else {
        memset(&runs[count], 0, sizeof runs[count]);
      }
    }
    const bool with_blas = blas.lib && cml_cli_blas_prepare(&runs[count], &blas, c, reps);
    if (with_blas) ++count;
    for (int r = -2; r < reps && runs[0].ok; ++r) {
      for (int j = 0; j < count; ++j) cml_cli_run_once(&runs[((r + 2) + j) % count], r);
    }
    double t = cml_cli_run_median(&runs[0], reps);
    if (t < 0) {
      printf("%-58s failed: %s\n", c->name, runs[0].why);
      if (json) {  // a failed case stays in the file, told apart from one filtered out
        fprintf(json, "%s\n  {\"case\": ", ran + failed ? "," : "");
        cml__json_write_string(json, c->name);
        fprintf(json, ", \"error\": ");
        cml__json_write_string(json, runs[0].why);
        fprintf(json, "}");
      }
      ++failed;
      for (int j = 0; j < count; ++j) cml_cli_run_release(&runs[j]);
      continue;
    }
    double flops = cml_cli_case_flops(c);
    double rate, limit;
    const char* unit;
    if (c->bandwidth) {
      rate = cml_cli_case_bytes(c) / t * 1e-9;
      limit = m.dram_gbs;
      unit = "GB/s";
    } else {
      rate = flops / t * 1e-9;
      // bf16 products run on the f32 FMAs where the CPU has no bf16 dot product.
      limit = c->dtype == CML_DTYPE_BF16 && m.bf16_gflops > 0 ? m.bf16_gflops : m.fma_gflops;
      unit = "GFLOP/s";
    }
    char tbuf[32], rbuf[32], fbuf[16] = "-";
    snprintf(tbuf, sizeof tbuf, "%.3f ms", t * 1e3);
    snprintf(rbuf, sizeof rbuf, "%.1f %s", rate, unit);
    if (limit > 0) snprintf(fbuf, sizeof fbuf, "%.0f%%", 100.0 * rate / limit);
    printf("%-58s %11s %15s %8s", c->name, tbuf, rbuf, fbuf);
    if (json) {
      fprintf(json, "%s\n  {\"case\": ", ran + failed ? "," : "");
      cml__json_write_string(json, c->name);
      fprintf(json, ", \"seconds\": %.9g, \"rate\": %.6g, \"unit\": \"%s\", \"fraction\": ", t,
              rate, unit);
      cml_cli_json_number(json, limit > 0, limit > 0 ? rate / limit : 0.0, "%.4f");
      fprintf(json, ", \"compare\": {");
    }
    for (int o = 0; o <= compare_count; ++o) {
      if (o == compare_count && !blas.lib) break;
      const bool is_blas = o == compare_count;
      double to = is_blas ? (with_blas ? cml_cli_run_median(&runs[count - 1], reps) : -1)
                          : cml_cli_run_median(&runs[1 + o], reps);
      const int w = is_blas ? 15 : width[o];
      if (to < 0) {
        printf("  %*s", w, "-");
      } else {
        printf("  %*.2fx", w - 1, to / t);
      }
      if (json) {
        if (is_blas) {
          fprintf(json, "}, \"openblas\": ");
        } else {
          fprintf(json, "%s", o ? ", " : "");
          cml__json_write_string(json, compare[o]);
          fprintf(json, ": ");
        }
        if (to < 0) {
          fprintf(json, "null");
        } else {
          fprintf(json, "%.4f", to / t);
        }
      }
    }
    if (json) fprintf(json, blas.lib ? "" : "}, \"openblas\": null");
    // Why a contender has no figure: its reason, on the console and in the JSON.
    bool any_error = false;
    for (int o = 0; o < compare_count; ++o) {
      const cml_cli_run_t* r = &runs[1 + o];
      const char* why = !others[o] ? "the backend could not be created" : r->why;
      if (others[o] && cml_cli_run_median(&runs[1 + o], reps) >= 0) continue;
      printf("\n    vs %s: %s", compare[o], why && why[0] ? why : "failed");
      if (json) {
        fprintf(json, "%s", any_error ? ", " : ", \"compare_errors\": {");
        cml__json_write_string(json, compare[o]);
        fprintf(json, ": ");
        cml__json_write_string(json, why && why[0] ? why : "failed");
      }
      any_error = true;
    }
    if (json) fprintf(json, any_error ? "}}" : "}");
    printf("\n");
    fflush(stdout);
    for (int j = 0; j < count; ++j) cml_cli_run_release(&runs[j]);
    ++ran;
  }
  if (json) {
    fprintf(json, "\n]}\n");
    if (!cml__out_file_close(&json_file, true)) {
      fprintf(stderr, "cml bench: writing %s failed: %s\n", json_path, strerror(errno));
      json_failed = true;
    }
  }
  cml_cli_blas_close(&blas);
  cml_backend_release(backend);
  for (int o = 0; o < compare_count; ++o) cml_backend_release(others[o]);
  if (ran == 0 && failed == 0) {
    fprintf(stderr, "cml bench: no case matches \"%s\"\n", filter ? filter : "");
    return 1;
  }
  return failed || json_failed ? 1 : 0;
}
