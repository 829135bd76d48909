// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_mvec.c: f64 transcendental functions on SIMD ISAs from
// glibc's vector math library (libmvec: exp, log, expm1, log1p, tanh, sin, cos, erf; 8 lanes
// with AVX-512, 4 with AVX2). The scalar kernels call libm once per element (about 20 ns for a
// tanh); libmvec is part of libc6, well kept, and documented within 4 ulp of the exact results
// (the test checks each against libm). Logistic keeps the scalar kernel: built on libmvec's exp
// (up to about 3 ulp), e^x / (1 + e^x) passed that error on whole for x < 0 (4.5 ulp). It is loaded
// with dlopen on first use, so the library still loads where an older glibc lacks a function (exp,
// log, sin and cos since 2.22, the others since 2.35): those ops keep the scalar kernel.
//
// Thread-safety: the table is filled once (pthread_once) and read-only afterwards.
#include "backends/c/kernels/generic/elementwise_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef enum cmlc_mv_fn_t {
  CMLC_MV_EXP = 0,
  CMLC_MV_LOG,
  CMLC_MV_EXPM1,
  CMLC_MV_LOG1P,
  CMLC_MV_TANH,
  CMLC_MV_SIN,
  CMLC_MV_COS,
  CMLC_MV_ERF,
  CMLC_MV_COUNT
} cmlc_mv_fn_t;

// Per function: the op it computes and its libmvec name.
static const struct {
  cml_op_t op;
  const char* name;
} kCmlcMv[CMLC_MV_COUNT] = {
    {CML_OP_EXP, "exp"},   {CML_OP_LOG, "log"}, {CML_OP_EXPM1, "expm1"}, {CML_OP_LOG1P, "log1p"},
    {CML_OP_TANH, "tanh"}, {CML_OP_SIN, "sin"}, {CML_OP_COS, "cos"},     {CML_OP_ERF, "erf"},
};

typedef __m512d (*cmlc_mv8_fn)(__m512d);
typedef __m256d (*cmlc_mv4_fn)(__m256d);

static pthread_once_t g_cmlc_mv_once = PTHREAD_ONCE_INIT;
static cmlc_mv8_fn g_cmlc_mv8[CMLC_MV_COUNT];  // _ZGVeN8v_<name> (AVX-512)
static cmlc_mv4_fn g_cmlc_mv4[CMLC_MV_COUNT];  // _ZGVdN4v_<name> (AVX2)

static void cmlc_mv_load(void) {
  // Never closed: the functions stay in use for the life of the process.
  void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  for (int k = 0; k < CMLC_MV_COUNT; ++k) {
    char name[32];
    snprintf(name, sizeof name, "_ZGVeN8v_%s", kCmlcMv[k].name);
    void* p8 = dlsym(lib, name);
    snprintf(name, sizeof name, "_ZGVdN4v_%s", kCmlcMv[k].name);
    void* p4 = dlsym(lib, name);
    memcpy(&g_cmlc_mv8[k], &p8, sizeof p8);
    memcpy(&g_cmlc_mv4[k], &p4, sizeof p4);
  }
}

static void cmlc_mv_fill(double v, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = v;
}

// One kernel per (function, ISA): whole vectors, then the tail through a padded vector (its
// unused lanes hold 0, which no function traps on: exceptions are masked). A stride-0 input is
// one value computed once by the same vector function, so a value gives the same result alone,
// broadcast, or inside an array.
#define CMLC_MV_KERNELS(K, suffix)                                                                \
  __attribute__((target("avx512f"))) static void cmlc_mv8_##suffix(                               \
      void* out, const void* const* in, const int64_t* st, int64_t n) {                           \
    const double* x = (const double*)in[0];                                                       \
    double* y = (double*)out;                                                                     \
    const cmlc_mv8_fn fn = g_cmlc_mv8[K];                                                         \
    if (st[0] == 0) {                                                                             \
      cmlc_mv_fill(_mm512_cvtsd_f64(fn(_mm512_set1_pd(x[0]))), y, n);                             \
      return;                                                                                     \
    }                                                                                             \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8) _mm512_storeu_pd(y + i, fn(_mm512_loadu_pd(x + i)));               \
    if (i < n) {                                                                                  \
      const __mmask8 m = (__mmask8)((1u << (n - i)) - 1);                                         \
      _mm512_mask_storeu_pd(y + i, m, fn(_mm512_maskz_loadu_pd(m, x + i)));                       \
    }                                                                                             \
  }                                                                                               \
  __attribute__((target("avx2"))) static void cmlc_mv4_##suffix(void* out, const void* const* in, \
                                                                const int64_t* st, int64_t n) {   \
    const double* x = (const double*)in[0];                                                       \
    double* y = (double*)out;                                                                     \
    const cmlc_mv4_fn fn = g_cmlc_mv4[K];                                                         \
    if (st[0] == 0) {                                                                             \
      cmlc_mv_fill(_mm256_cvtsd_f64(fn(_mm256_set1_pd(x[0]))), y, n);                             \
      return;                                                                                     \
    }                                                                                             \
    int64_t i = 0;                                                                                \
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, fn(_mm256_loadu_pd(x + i)));               \
    if (i < n) {                                                                                  \
      double t[4] = {0.0, 0.0, 0.0, 0.0};                                                         \
      memcpy(t, x + i, (size_t)(n - i) * sizeof(double));                                         \
      _mm256_storeu_pd(t, fn(_mm256_loadu_pd(t)));                                                \
      memcpy(y + i, t, (size_t)(n - i) * sizeof(double));                                         \
    }                                                                                             \
  }
CMLC_MV_KERNELS(CMLC_MV_EXP, exp)
CMLC_MV_KERNELS(CMLC_MV_LOG, log)
CMLC_MV_KERNELS(CMLC_MV_EXPM1, expm1)
CMLC_MV_KERNELS(CMLC_MV_LOG1P, log1p)
CMLC_MV_KERNELS(CMLC_MV_TANH, tanh)
CMLC_MV_KERNELS(CMLC_MV_SIN, sin)
CMLC_MV_KERNELS(CMLC_MV_COS, cos)
CMLC_MV_KERNELS(CMLC_MV_ERF, erf)
#undef CMLC_MV_KERNELS

cmlc_ew_fn cmlc_ew_mvec_unary_fn(cmlc_isa_t isa, cml_op_t op, cml_dtype_t dtype) {
  if (dtype != CML_DTYPE_F64 || (isa != CMLC_ISA_AVX512 && isa != CMLC_ISA_AVX2)) return NULL;
  pthread_once(&g_cmlc_mv_once, cmlc_mv_load);
  // The kernels in cmlc_mv_fn_t order.
  static const cmlc_ew_fn k8[CMLC_MV_COUNT] = {cmlc_mv8_exp,   cmlc_mv8_log,  cmlc_mv8_expm1,
                                               cmlc_mv8_log1p, cmlc_mv8_tanh, cmlc_mv8_sin,
                                               cmlc_mv8_cos,   cmlc_mv8_erf};
  static const cmlc_ew_fn k4[CMLC_MV_COUNT] = {cmlc_mv4_exp,   cmlc_mv4_log,  cmlc_mv4_expm1,
                                               cmlc_mv4_log1p, cmlc_mv4_tanh, cmlc_mv4_sin,
                                               cmlc_mv4_cos,   cmlc_mv4_erf};
  const bool wide = isa == CMLC_ISA_AVX512;
  for (int k = 0; k < CMLC_MV_COUNT; ++k) {
    if (kCmlcMv[k].op != op) continue;
    if (wide ? g_cmlc_mv8[k] == NULL : g_cmlc_mv4[k] == NULL) return NULL;
    return wide ? k8[k] : k4[k];
  }
  return NULL;
}

#endif  // CMLC_HAVE_X86_64
