// SPDX-License-Identifier: Apache-2.0
// tests/harness/test.h: a tiny C test harness in libuv's style.
//
// Usage (one file = one CTest entry; TEST_MAIN runs every TEST in order and reports):
//
//   #include "test.h"
//   TEST(status_codes) {
//     ASSERT_EQ_INT(cml_status_code(CML_OK), CML_STATUS_OK);
//     ASSERT_STATUS_OK(cml_shape_init(&s, CML_DTYPE_F32, 1, dims));
//   }
//   TEST_MAIN(TEST_ENTRY(status_codes))
//
// A failing ASSERT prints both sides (and the status message) and ends that test; the process
// exits non-zero when any test failed. `./x_test name` runs only the named test.
#ifndef CML_TESTS_HARNESS_TEST_H_
#define CML_TESTS_HARNESS_TEST_H_

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/base.h"
#include "cml/shape.h"

typedef struct test_entry_t {
  const char* name;
  void (*fn)(int* failed);
} test_entry_t;

#define TEST(name) static void test_##name(int* test_failed_)
#define TEST_ENTRY(name) \
  { #name, test_##name }

#define TEST_FAIL_(...)                             \
  do {                                              \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                   \
    fprintf(stderr, "\n");                          \
    *test_failed_ = 1;                              \
    return;                                         \
  } while (0)

#define ASSERT_TRUE(c)                                  \
  do {                                                  \
    if (!(c)) TEST_FAIL_("ASSERT_TRUE(%s) failed", #c); \
  } while (0)
#define ASSERT_FALSE(c)                               \
  do {                                                \
    if (c) TEST_FAIL_("ASSERT_FALSE(%s) failed", #c); \
  } while (0)
#define ASSERT_EQ_INT(a, b)                                                          \
  do {                                                                               \
    long long a_ = (long long)(a), b_ = (long long)(b);                              \
    if (a_ != b_) TEST_FAIL_("ASSERT_EQ_INT(%s, %s): %lld != %lld", #a, #b, a_, b_); \
  } while (0)
#define ASSERT_NE_INT(a, b)                                                   \
  do {                                                                        \
    long long a_ = (long long)(a), b_ = (long long)(b);                       \
    if (a_ == b_) TEST_FAIL_("ASSERT_NE_INT(%s, %s): both %lld", #a, #b, a_); \
  } while (0)
#define ASSERT_EQ_U64(a, b)                                                          \
  do {                                                                               \
    unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);   \
    if (a_ != b_) TEST_FAIL_("ASSERT_EQ_U64(%s, %s): %llu != %llu", #a, #b, a_, b_); \
  } while (0)
#define ASSERT_EQ_DBL(a, b)                                                \
  do {                                                                     \
    double a_ = (double)(a), b_ = (double)(b);                             \
    if (!(a_ == b_ || (isnan(a_) && isnan(b_))))                           \
      TEST_FAIL_("ASSERT_EQ_DBL(%s, %s): %.17g != %.17g", #a, #b, a_, b_); \
  } while (0)
#define ASSERT_NEAR(a, b, tol)                                                              \
  do {                                                                                      \
    double a_ = (double)(a), b_ = (double)(b);                                              \
    if (!(fabs(a_ - b_) <= (tol)))                                                          \
      TEST_FAIL_("ASSERT_NEAR(%s, %s, %g): %.17g vs %.17g", #a, #b, (double)(tol), a_, b_); \
  } while (0)
#define ASSERT_STREQ(a, b)                                                             \
  do {                                                                                 \
    const char *a_ = (a), *b_ = (b);                                                   \
    if (!a_ || !b_ || strcmp(a_, b_) != 0)                                             \
      TEST_FAIL_("ASSERT_STREQ(%s, %s): \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", \
                 b_ ? b_ : "(null)");                                                  \
  } while (0)
#define ASSERT_CONTAINS(haystack, needle)                                                       \
  do {                                                                                          \
    const char *h_ = (haystack), *n_ = (needle);                                                \
    if (!h_ || !strstr(h_, n_))                                                                 \
      TEST_FAIL_("ASSERT_CONTAINS(%s, \"%s\"): got \"%s\"", #haystack, n_, h_ ? h_ : "(null)"); \
  } while (0)
#define ASSERT_STATUS_OK(expr)                                                    \
  do {                                                                            \
    cml_status_t s_ = (expr);                                                     \
    if (s_ != CML_OK) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #expr,           \
              cml_status_code_name(cml_status_code(s_)), cml_status_message(s_)); \
      cml_status_free(s_);                                                        \
      *test_failed_ = 1;                                                          \
      return;                                                                     \
    }                                                                             \
  } while (0)
// Asserts |expr| fails with |code|; frees the status.
#define ASSERT_STATUS_CODE(expr, code)                                                       \
  do {                                                                                       \
    cml_status_t s_ = (expr);                                                                \
    cml_status_code_t c_ = cml_status_code(s_);                                              \
    if (c_ != (code)) {                                                                      \
      fprintf(stderr, "%s:%d: %s: want %s, got %s: %s\n", __FILE__, __LINE__, #expr,         \
              cml_status_code_name(code), cml_status_code_name(c_), cml_status_message(s_)); \
      cml_status_free(s_);                                                                   \
      *test_failed_ = 1;                                                                     \
      return;                                                                                \
    }                                                                                        \
    cml_status_free(s_);                                                                     \
  } while (0)

// The directory for a test's temporary files: $TMPDIR when it is an absolute path, else /tmp
// (scripts/test.sh moves TMPDIR to a tmpfs when the disk is nearly full).
static inline const char* test_tmpdir(void) {
  const char* dir = getenv("TMPDIR");
  return dir != NULL && dir[0] == '/' ? dir : "/tmp";
}

// Writes "<test_tmpdir()>/<name>XXXXXX" into |out| (a template for mkstemp or mkdtemp), or
// "/tmp/<name>XXXXXX" when the first does not fit; false when neither fits.
static inline bool test_tmp_template(char* out, size_t size, const char* name) {
  int n = snprintf(out, size, "%s/%sXXXXXX", test_tmpdir(), name);
  if (n > 0 && (size_t)n < size) return true;
  n = snprintf(out, size, "/tmp/%sXXXXXX", name);
  return n > 0 && (size_t)n < size;
}

// Whether |bytes| of |dtype| elements at |a| and |b| hold the same values: the same bits, or NaN
// in both (float components of f16, bf16, f32, f64, c64 and c128). Which NaN an add or a
// product of two NaNs returns follows the operand order the compiler picked for the
// instruction, so two code paths may differ there and only there (docs/engine.md).
static inline bool test_same_values(cml_dtype_t dtype, const void* a, const void* b, size_t bytes) {
  if (memcmp(a, b, bytes) == 0) return true;
  size_t es = 0;
  uint64_t exp_mask = 0, man_mask = 0;
  switch (dtype) {
    case CML_DTYPE_F16:
      es = 2, exp_mask = 0x7c00u, man_mask = 0x03ffu;
      break;
    case CML_DTYPE_BF16:
      es = 2, exp_mask = 0x7f80u, man_mask = 0x007fu;
      break;
    case CML_DTYPE_F32:
    case CML_DTYPE_C64:
      es = 4, exp_mask = 0x7f800000u, man_mask = 0x007fffffu;
      break;
    case CML_DTYPE_F64:
    case CML_DTYPE_C128:
      es = 8, exp_mask = 0x7ff0000000000000ull, man_mask = 0x000fffffffffffffull;
      break;
    default:
      return false;
  }
  for (size_t at = 0; at + es <= bytes; at += es) {
    uint64_t x = 0, y = 0;
    memcpy(&x, (const char*)a + at, es);  // (little-endian: the low bytes)
    memcpy(&y, (const char*)b + at, es);
    if (x == y) continue;
    const bool nx = (x & exp_mask) == exp_mask && (x & man_mask) != 0;
    const bool ny = (y & exp_mask) == exp_mask && (y & man_mask) != 0;
    if (!nx || !ny) return false;
  }
  return true;
}

#define TEST_MAIN(...)                                                        \
  int main(int argc, char** argv) {                                           \
    static const test_entry_t tests_[] = {__VA_ARGS__};                       \
    int failures_ = 0, ran_ = 0;                                              \
    for (size_t i_ = 0; i_ < sizeof tests_ / sizeof tests_[0]; ++i_) {        \
      if (argc > 1 && strcmp(argv[1], tests_[i_].name) != 0) continue;        \
      int failed_ = 0;                                                        \
      tests_[i_].fn(&failed_);                                                \
      ++ran_;                                                                 \
      printf("%s %s\n", failed_ ? "FAIL" : "ok  ", tests_[i_].name);          \
      failures_ += failed_;                                                   \
    }                                                                         \
    printf("%d passed, %d failed, 0 skipped\n", ran_ - failures_, failures_); \
    return (failures_ || ran_ == 0) ? 1 : 0;                                  \
  }

#endif  // CML_TESTS_HARNESS_TEST_H_
