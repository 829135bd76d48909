// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_fpenv_test.c: the floating-point environment the c backend's kernels run in.
// A caller's rounding mode, unmasked exceptions and flush-to-zero bits (what fesetround,
// feenableexcept and a -ffast-math program's start-up set) must not change a result, on the
// calling thread or on pool workers started while they were set, and the caller gets its
// environment back. c:flush_denormals=true flushes denormal results to zero (and reads denormal
// inputs as they are), in executions and in constants folded at compile time. Expected values:
// plain C arithmetic in the default environment, and the bits of a run in that environment.
// Not a valgrind test: valgrind emulates neither FTZ / DAZ nor floating-point traps.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // feenableexcept, fegetexcept
#endif
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"
#include "test.h"

#if defined(__x86_64__) && defined(__GLIBC__)
#include <xmmintrin.h>

// Enough elements that every elementwise op is cut into chunks the workers take.
enum { FE_N = 1 << 18, FE_PATTERNS = 5, FE_OUTPUTS = 5 };
#define FE_FTZ_DAZ 0x8040u

// x = a * b, a + b, a / b, log(a), and the constant 1e-20f * 1e-20f (folded at compile time).
static cml_executable_t* fe_compile(cml_backend_t* backend) {
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(backend, "fpenv", &b);
  if (st != CML_OK) {
    fprintf(stderr, "builder: %s\n", cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  cml_function_t* f = cml_builder_main(b);
  const int64_t n = FE_N;
  const cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
  cml_value_t a = cml_parameter(f, "a", &s), y = cml_parameter(f, "b", &s);
  cml_value_t tiny = cml_constant_scalar_f64(f, CML_DTYPE_F32, 1e-20);
  cml_value_t outs[FE_OUTPUTS] = {cml_op_mul(f, a, y), cml_op_add(f, a, y), cml_op_div(f, a, y),
                                  cml_op_log(f, a), cml_op_mul(f, tiny, tiny)};
  cml_executable_t* exe = NULL;
  st = cml_function_return(f, outs, FE_OUTPUTS);
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  if (st != CML_OK) {
    fprintf(stderr, "compile: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  cml_builder_destroy(b);
  return exe;
}

// The inputs, by i % FE_PATTERNS: a subnormal product; a sum that rounds to 1 to nearest and
// up otherwise; 0 / 0 and log(0); a subnormal input; 1 / 0.
static void fe_inputs(float* a, float* b) {
  const float pa[FE_PATTERNS] = {1e-20f, 1.0f, 0.0f, 1e-39f, 1.0f};
  const float pb[FE_PATTERNS] = {1e-20f, 1e-8f, 0.0f, 1.0f, 0.0f};
  for (int i = 0; i < FE_N; ++i) {
    a[i] = pa[i % FE_PATTERNS];
    b[i] = pb[i % FE_PATTERNS];
  }
}

// Runs |exe| and copies every output's bits to |out| (FE_OUTPUTS x FE_N floats; the constant
// output in out[4 * FE_N]). Touches no float of the caller's (the environment may trap).
static cml_status_t fe_run(cml_backend_t* backend, cml_executable_t* exe, const float* a,
                           const float* b, float* out) {
  const int64_t n = FE_N;
  const cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
  const size_t bytes = (size_t)FE_N * sizeof(float);
  cml_buffer_t* in[2] = {NULL, NULL};
  cml_buffer_t* res[FE_OUTPUTS] = {NULL};
  cml_status_t st = cml_buffer_from_host(backend, 0, &s, a, bytes, &in[0]);
  if (st == CML_OK) st = cml_buffer_from_host(backend, 0, &s, b, bytes, &in[1]);
  if (st == CML_OK) st = cml_executable_execute(exe, in, 2, NULL, 0, res);
  for (int k = 0; st == CML_OK && k < FE_OUTPUTS; ++k) {
    st = cml_buffer_copy_to_host(res[k], out + (size_t)k * FE_N, k < 4 ? bytes : sizeof(float));
  }
  for (int k = 0; k < FE_OUTPUTS; ++k) cml_buffer_release(res[k]);
  cml_buffer_release(in[0]);
  cml_buffer_release(in[1]);
  return st;
}

static uint32_t fe_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

// The caller's hostile environment: rounding up, division by zero, invalid and overflow
// trapping, and FTZ + DAZ.
static void fe_hostile(void) {
  fesetround(FE_UPWARD);
  feenableexcept(FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW);
  _mm_setcsr(_mm_getcsr() | FE_FTZ_DAZ);
}

static void fe_default(void) {
  fedisableexcept(FE_ALL_EXCEPT);
  fesetenv(FE_DFL_ENV);
  _mm_setcsr(0x1F80u);
}

TEST(results_do_not_depend_on_the_callers_environment) {
  const size_t bytes = (size_t)FE_N * sizeof(float);
  float* a = malloc(bytes);
  float* b = malloc(bytes);
  float* want = malloc(FE_OUTPUTS * bytes);
  float* got = malloc(FE_OUTPUTS * bytes);
  ASSERT_TRUE(a && b && want && got);
  fe_inputs(a, b);
  const char* configs[] = {"c:threads=1", "c:threads=2", "c:threads=2,reference=true"};
  for (size_t c = 0; c < sizeof configs / sizeof *configs; ++c) {
    // The default environment's results, checked by hand where exact.
    fe_default();
    cml_backend_t* calm = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(configs[c], &calm));
    cml_executable_t* exe = fe_compile(calm);
    ASSERT_TRUE(exe != NULL);
    ASSERT_STATUS_OK(fe_run(calm, exe, a, b, want));
    volatile float tiny = 1e-20f, sub = 1e-39f;
    const float product = tiny * tiny;
    ASSERT_TRUE(fe_bits(product) != 0 && fe_bits(product) < 0x00800000u);  // subnormal
    for (int i = 0; i < 40; ++i) {
      const float wp = want[i], ws = want[FE_N + i], wq = want[2 * FE_N + i];
      switch (i % FE_PATTERNS) {
        case 0:
          ASSERT_EQ_U64(fe_bits(wp), fe_bits(product));
          break;
        case 1:
          ASSERT_EQ_U64(fe_bits(ws), fe_bits(1.0f));
          break;
        case 2:
          ASSERT_TRUE(wq != wq);
          ASSERT_EQ_U64(fe_bits(want[3 * FE_N + i]), fe_bits(-HUGE_VALF));
          break;
        case 3:
          ASSERT_EQ_U64(fe_bits(wp), fe_bits(sub));
          ASSERT_EQ_U64(fe_bits(wq), fe_bits(sub));
          break;
        default:
          ASSERT_EQ_U64(fe_bits(wq), fe_bits(HUGE_VALF));
          break;
      }
    }
    ASSERT_EQ_U64(fe_bits(want[4 * FE_N]), fe_bits(product));  // the folded constant

    // The same executable, and a backend whose workers start in the hostile environment.
    for (int fresh = 0; fresh < 2; ++fresh) {
      fe_hostile();
      cml_backend_t* backend = calm;
      cml_executable_t* run = exe;
      cml_status_t st = CML_OK;
      if (fresh) {
        backend = NULL;
        st = cml_backend_new_with_config(configs[c], &backend);
        run = st == CML_OK ? fe_compile(backend) : NULL;
      }
      memset(got, 0xff, FE_OUTPUTS * bytes);
      if (st == CML_OK && run) st = fe_run(backend, run, a, b, got);
      // The caller's environment is back.
      const int round = fegetround(), traps = fegetexcept();
      const unsigned csr = _mm_getcsr();
      fe_default();
      ASSERT_STATUS_OK(st);
      ASSERT_TRUE(run != NULL);
      ASSERT_EQ_INT(round, FE_UPWARD);
      ASSERT_EQ_INT(traps, FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW);
      ASSERT_EQ_U64(csr & FE_FTZ_DAZ, FE_FTZ_DAZ);
      for (int k = 0; k < FE_OUTPUTS; ++k) {
        const size_t count = k < 4 ? (size_t)FE_N : 1;
        if (memcmp(got + (size_t)k * FE_N, want + (size_t)k * FE_N, count * sizeof(float))) {
          fprintf(stderr, "%s, %s backend: output %d differs\n", configs[c],
                  fresh ? "a new" : "the same", k);
          ASSERT_TRUE(false);
        }
      }
      if (fresh) {
        cml_executable_release(run);
        cml_backend_release(backend);
      }
    }
    cml_executable_release(exe);
    cml_backend_release(calm);
  }
  free(a);
  free(b);
  free(want);
  free(got);
}

TEST(flush_denormals_flushes_results_and_folded_constants) {
  fe_default();
  const size_t bytes = (size_t)FE_N * sizeof(float);
  float* a = malloc(bytes);
  float* b = malloc(bytes);
  float* got = malloc(FE_OUTPUTS * bytes);
  ASSERT_TRUE(a && b && got);
  fe_inputs(a, b);
  volatile float sub = 1e-39f;
  const char* configs[] = {"c:threads=2,flush_denormals=true",
                           "c:threads=1,reference=true,flush_denormals=true"};
  for (size_t c = 0; c < sizeof configs / sizeof *configs; ++c) {
    cml_backend_t* backend = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(configs[c], &backend));
    ASSERT_CONTAINS(cml_backend_config(backend), "flush_denormals=true");
    cml_executable_t* exe = fe_compile(backend);
    ASSERT_TRUE(exe != NULL);
    ASSERT_STATUS_OK(fe_run(backend, exe, a, b, got));
    for (int i = 0; i < FE_N; i += 997) {
      const float p = got[i], s = got[FE_N + i], q = got[2 * FE_N + i];
      switch (i % FE_PATTERNS) {
        case 0:
          ASSERT_EQ_U64(fe_bits(p), 0);
          break;  // 1e-40 flushed
        case 1:
          ASSERT_EQ_U64(fe_bits(s), fe_bits(1.0f));
          ASSERT_EQ_U64(fe_bits(p), fe_bits(1e-8f));
          break;
        case 2:
          ASSERT_TRUE(q != q);
          break;
        case 3:  // the input 1e-39 is read as it is: 1e-39 * 1 and / 1 flushed, log exact
          ASSERT_EQ_U64(fe_bits(p), 0);
          ASSERT_EQ_U64(fe_bits(q), 0);
          ASSERT_NEAR(got[3 * FE_N + i], log((double)sub), 1e-4);
          break;
        default:
          ASSERT_EQ_U64(fe_bits(q), fe_bits(HUGE_VALF));
          break;
      }
    }
    ASSERT_EQ_U64(fe_bits(got[4 * FE_N]), 0);  // folded in the flushing environment
    // The caller keeps its denormals.
    ASSERT_EQ_U64(_mm_getcsr() & FE_FTZ_DAZ, 0);
    volatile float tiny = 1e-20f;
    ASSERT_TRUE(tiny * tiny != 0.0f);
    cml_executable_release(exe);
    cml_backend_release(backend);
  }
  free(a);
  free(b);
  free(got);
}

TEST_MAIN(TEST_ENTRY(results_do_not_depend_on_the_callers_environment),
          TEST_ENTRY(flush_denormals_flushes_results_and_folded_constants))

#else

// Elsewhere the option is refused.
TEST(flush_denormals_is_refused) {
  cml_backend_t* backend = NULL;
  ASSERT_STATUS_CODE(cml_backend_new_with_config("c:flush_denormals=true", &backend),
                     CML_STATUS_UNIMPLEMENTED);
}

TEST_MAIN(TEST_ENTRY(flush_denormals_is_refused))
#endif
