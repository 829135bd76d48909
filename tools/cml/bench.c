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
// every case ran on the chosen backend, 1 when one failed, 2 for usage errors.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cml/cml.h"
#include "tools/cml/cli.h"
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

#if defined(CML_CLI_BENCH_X86)
// 12 independent accumulator chains (FMA latency x throughput), named so they stay in registers.
#define CML_CLI_FMA12(FMA, ACC, A, B)                                                       \
  do {                                                                                      \
    ACC##0 = FMA(ACC##0, A, B), ACC##1 = FMA(ACC##1, A, B), ACC##2 = FMA(ACC##2, A, B);     \
    ACC##3 = FMA(ACC##3, A, B), ACC##4 = FMA(ACC##4, A, B), ACC##5 = FMA(ACC##5, A, B);     \
    ACC##6 = FMA(ACC##6, A, B), ACC##7 = FMA(ACC##7, A, B), ACC##8 = FMA(ACC##8, A, B);     \
    ACC##9 = FMA(ACC##9, A, B), ACC##10 = FMA(ACC##10, A, B), ACC##11 = FMA(ACC##11, A, B); \
  } while (0)

__attribute__((target("avx512f"))) static float cml_cli_probe_fma_avx512(void) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  __m512 x0 = _mm512_set1_ps(0), x1 = _mm512_set1_ps(1), x2 = _mm512_set1_ps(2);
  __m512 x3 = _mm512_set1_ps(3), x4 = _mm512_set1_ps(4), x5 = _mm512_set1_ps(5);
  __m512 x6 = _mm512_set1_ps(6), x7 = _mm512_set1_ps(7), x8 = _mm512_set1_ps(8);
  __m512 x9 = _mm512_set1_ps(9), x10 = _mm512_set1_ps(10), x11 = _mm512_set1_ps(11);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_FMA12(_mm512_fmadd_ps, x, a, b);
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                           _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)));
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float cml_cli_probe_fma_avx2(void) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  __m256 x0 = _mm256_set1_ps(0), x1 = _mm256_set1_ps(1), x2 = _mm256_set1_ps(2);
  __m256 x3 = _mm256_set1_ps(3), x4 = _mm256_set1_ps(4), x5 = _mm256_set1_ps(5);
  __m256 x6 = _mm256_set1_ps(6), x7 = _mm256_set1_ps(7), x8 = _mm256_set1_ps(8);
  __m256 x9 = _mm256_set1_ps(9), x10 = _mm256_set1_ps(10), x11 = _mm256_set1_ps(11);
  for (int it = 0; it < CML_CLI_PROBE_FMA_ITERS; ++it) CML_CLI_FMA12(_mm256_fmadd_ps, x, a, b);
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                           _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}
#undef CML_CLI_FMA12
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

typedef struct cml_cli_probe_t {
  int kind;   // 0: FMA, 1: DRAM read
  int width;  // FMA: floats per instruction x chains (flops per iteration / 2)
  const float* data;
  size_t count;
  double seconds;
  float sink;
} cml_cli_probe_t;

static int cml_cli_probe_fma_width(void) {
#if defined(CML_CLI_BENCH_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 16 * 12;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8 * 12;
#endif
  return 96;
}

static void* cml_cli_probe_thread(void* arg) {
  cml_cli_probe_t* p = arg;
  double t0 = cml_cli_bench_now();
  if (p->kind == 0) {
#if defined(CML_CLI_BENCH_X86)
    if (p->width == 16 * 12) {
      p->sink = cml_cli_probe_fma_avx512();
    } else if (p->width == 8 * 12) {
      p->sink = cml_cli_probe_fma_avx2();
    } else {
      p->sink = cml_cli_probe_fma_plain();
    }
#else
    p->sink = cml_cli_probe_fma_plain();
#endif
  } else {
    // Eight partial sums: the loads are independent of each other.
    float s[8] = {0};
    for (size_t i = 0; i + 8 <= p->count; i += 8)
      for (int j = 0; j < 8; ++j) s[j] += p->data[i + j];
    p->sink = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
  }
  p->seconds = cml_cli_bench_now() - t0;
  return NULL;
}

// Runs the probe on |threads| threads at once; returns the slowest thread's time (best of 3).
static double cml_cli_probe_run(int kind, int threads, int width, const float* data, size_t count) {
  double best = INFINITY;
  cml_cli_probe_t probes[256];
  pthread_t ids[256];
  if (threads > 256) threads = 256;
  for (int round = 0; round < 3; ++round) {
    int started = 0;
    size_t per = count / (size_t)threads / 8 * 8;
    for (int t = 0; t < threads; ++t) {
      probes[t] = (cml_cli_probe_t){kind, width, data ? data + (size_t)t * per : NULL, per, 0, 0};
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
  return best;
}

typedef struct cml_cli_machine_t {
  int cpus;
  const char* fma_isa;
  double fma_gflops;  // f32, all CPUs
  double dram_gbs;    // read, all CPUs
} cml_cli_machine_t;

static void cml_cli_probe_machine(cml_cli_machine_t* m) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  m->cpus = cpus < 1 ? 1 : cpus > 256 ? 256 : (int)cpus;
  int width = cml_cli_probe_fma_width();
  m->fma_isa = width == 16 * 12 ? "avx512" : width == 8 * 12 ? "avx2+fma" : "plain C";
  double t = cml_cli_probe_run(0, m->cpus, width, NULL, 0);
  m->fma_gflops = 2.0 * width * (double)CML_CLI_PROBE_FMA_ITERS * m->cpus / t * 1e-9;
  size_t count = (size_t)64 << 20;  // 256 MiB of floats
  float* data = malloc(count * sizeof(float));
  m->dram_gbs = 0;
  if (data) {
    for (size_t i = 0; i < count; ++i) data[i] = (float)(i & 7);
    t = cml_cli_probe_run(1, m->cpus, 0, data, count);
    size_t per = count / (size_t)m->cpus / 8 * 8;
    m->dram_gbs = (double)(per * (size_t)m->cpus * sizeof(float)) / t * 1e-9;
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
} cml_cli_case_kind_t;

typedef struct cml_cli_case_t {
  const char* name;
  cml_cli_case_kind_t kind;
  cml_dtype_t dtype;
  int64_t d[8];
  bool bandwidth;  // rated against the DRAM probe (bytes = the weight)
} cml_cli_case_t;

static const cml_cli_case_t kCmlCliCases[] = {
    {"matmul f32 1024x1024x1024", CML_CLI_CASE_MATMUL, CML_DTYPE_F32, {1024, 1024, 1024}, false},
    {"matmul f32 1x4096x4096 (GEMV)", CML_CLI_CASE_MATMUL, CML_DTYPE_F32, {1, 4096, 4096}, true},
    {"matmul f32 32x4096x4096", CML_CLI_CASE_MATMUL, CML_DTYPE_F32, {32, 4096, 4096}, false},
    {"matmul bf16 512x512x512", CML_CLI_CASE_MATMUL, CML_DTYPE_BF16, {512, 512, 512}, false},
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
    {"mlp f32 784-512-512-10, batch 128", CML_CLI_CASE_MLP, CML_DTYPE_F32, {128}, false},
    {"transformer f32 block d768 h12 seq 128, batch 1",
     CML_CLI_CASE_TRANSFORMER,
     CML_DTYPE_F32,
     {1, 128, 768, 12},
     false},
};
#define CML_CLI_CASE_COUNT (sizeof kCmlCliCases / sizeof kCmlCliCases[0])

static cml_value_t cml_cli_case_build(cml_function_t* f, const cml_cli_case_t* c) {
  const int64_t* d = c->d;
  switch (c->kind) {
    case CML_CLI_CASE_MATMUL: {
      cml_shape_t sa = cml_shape_make(c->dtype, 2, (int64_t[]){d[0], d[1]});
      cml_shape_t sb = cml_shape_make(c->dtype, 2, (int64_t[]){d[1], d[2]});
      cml_value_t a = cml_parameter(f, "lhs", &sa);
      cml_value_t b = cml_parameter(f, "rhs", &sb);
      return cml_op_dot(f, a, b);
    }
    case CML_CLI_CASE_CONV:
      return cml_cli_model_conv2d(f, c->dtype, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
    case CML_CLI_CASE_RESNET:
      return cml_cli_model_resnet_block(f, c->dtype, d[0], d[1], d[2]);
    case CML_CLI_CASE_MLP:
      return cml_cli_model_mlp(f, c->dtype, d[0]);
    case CML_CLI_CASE_TRANSFORMER:
      return cml_cli_model_transformer_block(f, c->dtype, d[0], d[1], d[2], d[3]);
  }
  return cml_cli_model_mlp(f, c->dtype, 1);
}

static double cml_cli_case_flops(const cml_cli_case_t* c) {
  const int64_t* d = c->d;
  switch (c->kind) {
    case CML_CLI_CASE_MATMUL:
      return 2.0 * (double)d[0] * (double)d[1] * (double)d[2];
    case CML_CLI_CASE_CONV:
      return cml_cli_model_conv2d_flops(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
    case CML_CLI_CASE_RESNET:
      return cml_cli_model_resnet_block_flops(d[0], d[1], d[2]);
    case CML_CLI_CASE_MLP:
      return cml_cli_model_mlp_flops(d[0]);
    case CML_CLI_CASE_TRANSFORMER:
      return cml_cli_model_transformer_block_flops(d[0], d[1], d[2]);
  }
  return 0;
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

// Compiles and times case |c| on |backend|: the median of |reps| executes after 2 warm-ups.
// Returns the median in seconds, or a negative value (with |why| set) when it could not run.
static double cml_cli_bench_case(cml_backend_t* backend, const cml_cli_case_t* c, int reps,
                                 char* why, size_t why_size) {
  cml_builder_t* builder = NULL;
  cml_executable_t* exe = NULL;
  cml_buffer_t* inputs[CML_CLI_BENCH_MAX_INPUTS] = {0};
  size_t n_inputs = 0;
  double result = -1;
  cml_status_t st = cml_builder_create(backend, "bench", &builder);
  if (st == CML_OK) {
    cml_value_t out = cml_cli_case_build(cml_builder_main(builder), c);
    st = cml_function_return(cml_builder_main(builder), &out, 1);
    if (st == CML_OK) st = cml_builder_compile(builder, &exe);
  }
  if (st == CML_OK) {
    n_inputs = cml_executable_input_count(exe);
    if (n_inputs > CML_CLI_BENCH_MAX_INPUTS) {
      snprintf(why, why_size, "more than %d inputs", CML_CLI_BENCH_MAX_INPUTS);
      n_inputs = 0;
      goto done;
    }
    for (size_t i = 0; i < n_inputs && st == CML_OK; ++i) {
      const cml_shape_t* s = cml_executable_input_shape(exe, i);
      size_t bytes = cml_shape_byte_size(s);
      void* host = calloc(1, bytes ? bytes : 1);
      if (!host) {
        snprintf(why, why_size, "out of memory");
        goto done;
      }
      cml_cli_fill(host, s->dtype, cml_shape_element_count(s), 17u + 31u * (uint32_t)i);
      st = cml_buffer_from_host(backend, 0, s, host, bytes, &inputs[i]);
      free(host);
    }
  }
  double* times = calloc((size_t)reps, sizeof(double));
  for (int r = -2; r < reps && st == CML_OK && times; ++r) {
    cml_buffer_t* out = NULL;
    double t0 = cml_cli_bench_now();
    st = cml_executable_execute(exe, inputs, n_inputs, NULL, 0, &out);
    double t = cml_cli_bench_now() - t0;
    cml_buffer_release(out);
    if (r >= 0) times[r] = t;
  }
  if (st == CML_OK && times) {
    qsort(times, (size_t)reps, sizeof(double), cml_cli_cmp_double);
    result = times[reps / 2];
  } else if (!times) {
    snprintf(why, why_size, "out of memory");
  }
  free(times);
done:
  if (st != CML_OK) {
    snprintf(why, why_size, "%s: %s", cml_status_code_name(cml_status_code(st)),
             cml_status_message(st));
    cml_status_free(st);
    result = -1;
  }
  for (size_t i = 0; i < CML_CLI_BENCH_MAX_INPUTS; ++i) cml_buffer_release(inputs[i]);
  cml_executable_release(exe);
  cml_builder_destroy(builder);
  return result;
}

//===--- command ---===//

static void cml_cli_bench_usage(FILE* out) {
  fputs(
      "usage: cml bench [--backend CONFIG] [--compare CONFIG]... [--filter TEXT] [--reps N]\n"
      "                 [--json FILE] [--no-probes] [--list]\n"
      "\n"
      "Measures this machine's f32 FMA rate and DRAM read rate with small built-in probes, then\n"
      "runs the standard cases (matmul, GEMV, conv, ResNet block, MLP, transformer block) on a\n"
      "backend and prints each case's median time, rate, fraction of the probe's limit, and\n"
      "the ratio time_other / time_backend for each --compare backend (> 1: faster).\n"
      "  --backend CONFIG  backend to measure (default: GOMLX_BACKEND, else the best available)\n"
      "  --compare CONFIG  also run each case on this backend (repeatable, up to 4), e.g. xla:cpu\n"
      "  --filter TEXT     run only the cases whose name contains TEXT\n"
      "  --reps N          timed executes per case and backend (median taken; default 5)\n"
      "  --json FILE       also write the machine figures and results as JSON to FILE\n"
      "  --no-probes       skip the probes (no fractions of peak)\n"
      "  --list            list the cases and exit\n",
      out);
}

static const char* cml_cli_bench_value(int argc, char** argv, int* i, const char* name) {
  size_t len = strlen(name);
  const char* arg = argv[*i];
  if (strncmp(arg, name, len) == 0 && arg[len] == '=') return arg + len + 1;
  if (strcmp(arg, name) == 0 && *i + 1 < argc) return argv[++*i];
  return NULL;
}

static bool cml_cli_bench_is(const char* arg, const char* name) {
  size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

// Writes |s| as a JSON string.
static void cml_cli_json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') {
      fprintf(f, "\\%c", *s);
    } else if ((unsigned char)*s < 0x20) {
      fprintf(f, "\\u%04x", (unsigned)*s);
    } else {
      fputc(*s, f);
    }
  }
  fputc('"', f);
}

int cml_cli_bench(int argc, char** argv) {
  const char* backend_config = NULL;
  const char* compare[CML_CLI_BENCH_MAX_COMPARE];
  int compare_count = 0;
  const char* filter = NULL;
  const char* json_path = NULL;
  int reps = 5;
  bool probes = true, list = false;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* v = NULL;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 || strcmp(arg, "help") == 0) {
      cml_cli_bench_usage(stdout);
      return 0;
    } else if (cml_cli_bench_is(arg, "--backend")) {
      if (!(backend_config = cml_cli_bench_value(argc, argv, &i, "--backend"))) goto needs_value;
    } else if (cml_cli_bench_is(arg, "--compare")) {
      if (!(v = cml_cli_bench_value(argc, argv, &i, "--compare"))) goto needs_value;
      if (compare_count == CML_CLI_BENCH_MAX_COMPARE) {
        fprintf(stderr, "cml bench: at most %d --compare backends\n", CML_CLI_BENCH_MAX_COMPARE);
        return 2;
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
  if (list) {
    for (size_t c = 0; c < CML_CLI_CASE_COUNT; ++c) printf("%s\n", kCmlCliCases[c].name);
    return 0;
  }

  cml_backend_t* backend = cml_cli_open_backend("bench", backend_config);
  if (!backend) return 2;
  cml_backend_t* others[CML_CLI_BENCH_MAX_COMPARE] = {0};
  for (int o = 0; o < compare_count; ++o) {
    others[o] = cml_cli_open_backend("bench", compare[o]);
    if (!others[o]) fprintf(stderr, "cml bench: skipping --compare %s\n", compare[o]);
  }
  FILE* json = NULL;
  if (json_path) {
    json = fopen(json_path, "w");
    if (!json) {
      fprintf(stderr, "cml bench: cannot write %s\n", json_path);
      cml_backend_release(backend);
      for (int o = 0; o < compare_count; ++o) cml_backend_release(others[o]);
      return 2;
    }
  }

  cml_cli_machine_t m = {0};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = cpus < 1 ? 1 : (int)cpus;
  if (probes) {
    cml_cli_probe_machine(&m);
    printf(
        "# machine: %d CPU(s); probes on all of them: f32 FMA (%s) %.1f GFLOP/s, DRAM read "
        "%.1f GB/s\n",
        m.cpus, m.fma_isa, m.fma_gflops, m.dram_gbs);
  }
  printf("# backend %s, %d rep(s) per case (median)\n", cml_backend_config(backend), reps);
  printf("%-48s %12s %16s %8s", "case", "time", "rate", "of limit");
  for (int o = 0; o < compare_count; ++o) printf("  vs %-12s", compare[o]);
  printf("\n");
  if (json) {
    fprintf(json, "{\"cpus\": %d, \"fma_isa\": ", m.cpus);
    cml_cli_json_string(json, m.fma_isa ? m.fma_isa : "");
    fprintf(json, ", \"fma_gflops\": %.3f, \"dram_gbs\": %.3f, \"backend\": ", m.fma_gflops,
            m.dram_gbs);
    cml_cli_json_string(json, cml_backend_config(backend));
    fprintf(json, ", \"reps\": %d, \"cases\": [", reps);
  }
  int failed = 0, ran = 0;
  for (size_t ci = 0; ci < CML_CLI_CASE_COUNT; ++ci) {
    const cml_cli_case_t* c = &kCmlCliCases[ci];
    if (filter && !strstr(c->name, filter)) continue;
    char why[256] = "";
    double t = cml_cli_bench_case(backend, c, reps, why, sizeof why);
    if (t < 0) {
      printf("%-48s failed: %s\n", c->name, why);
      ++failed;
      continue;
    }
    double flops = cml_cli_case_flops(c);
    double rate, limit;
    const char* unit;
    if (c->bandwidth) {
      // The weight, read once (the vector and output are tiny).
      double bytes = (double)c->d[1] * (double)c->d[2] * (double)cml_dtype_bits(c->dtype) / 8.0;
      rate = bytes / t * 1e-9;
      limit = m.dram_gbs;
      unit = "GB/s";
    } else {
      rate = flops / t * 1e-9;
      limit = c->dtype == CML_DTYPE_F32 ? m.fma_gflops : 0;
      unit = "GFLOP/s";
    }
    char tbuf[32], rbuf[32], fbuf[16] = "-";
    snprintf(tbuf, sizeof tbuf, "%.3f ms", t * 1e3);
    snprintf(rbuf, sizeof rbuf, "%.1f %s", rate, unit);
    if (limit > 0) snprintf(fbuf, sizeof fbuf, "%.0f%%", 100.0 * rate / limit);
    printf("%-48s %12s %16s %8s", c->name, tbuf, rbuf, fbuf);
    if (json) {
      fprintf(json, "%s\n  {\"case\": ", ran ? "," : "");
      cml_cli_json_string(json, c->name);
      fprintf(json, ", \"seconds\": %.9g, \"rate\": %.6g, \"unit\": \"%s\", \"fraction\": %.4f", t,
              rate, unit, limit > 0 ? rate / limit : 0.0);
      fprintf(json, ", \"compare\": {");
    }
    for (int o = 0; o < compare_count; ++o) {
      double to = others[o] ? cml_cli_bench_case(others[o], c, reps, why, sizeof why) : -1;
      if (to < 0) {
        printf("  %-15s", "-");
      } else {
        printf("  %14.2fx", to / t);
      }
      if (json) {
        fprintf(json, "%s", o ? ", " : "");
        cml_cli_json_string(json, compare[o]);
        if (to < 0) {
          fprintf(json, ": null");
        } else {
          fprintf(json, ": %.4f", to / t);
        }
      }
    }
    if (json) fprintf(json, "}}");
    printf("\n");
    fflush(stdout);
    ++ran;
  }
  if (json) {
    fprintf(json, "\n]}\n");
    fclose(json);
  }
  cml_backend_release(backend);
  for (int o = 0; o < compare_count; ++o) cml_backend_release(others[o]);
  if (ran == 0 && failed == 0) {
    fprintf(stderr, "cml bench: no case matches \"%s\"\n", filter ? filter : "");
    return 1;
  }
  return failed ? 1 : 0;
}
