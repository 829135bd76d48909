// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/clang_compat.h: force-included into the library objects of a fuzzing (clang)
// build only. glibc's <complex.h> defines CMPLX/CMPLXF only for GCC >= 4.7, so under clang the
// C kernels' CMPLX calls become implicit declarations and fail to link. Reported in
// docs/robustness.md; remove this file once the kernels stop relying on it.
#ifndef CML_TESTS_FUZZ_CLANG_COMPAT_H_
#define CML_TESTS_FUZZ_CLANG_COMPAT_H_

// <complex.h> is not included here: it defines the macros |complex| and |I|, which would leak
// into files that do not ask for them. glibc never defines CMPLX under clang, so no conflict.
#if defined(__clang__) && !defined(CMPLX)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#if defined(__clang__) && !defined(CMPLXF)
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

// clang 14 rejects __builtin_cpu_supports("f16c") at compile time (GCC accepts it), which
// breaks src/backends/c/kernels/generic/elementwise_simd.c. The fuzz build answers the feature
// names the library uses from CPUID/XGETBV itself. Reported in docs/robustness.md.
#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <string.h>

static inline int cml_fuzz_cpu_supports(const char* feature) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  unsigned ecx1 = c;
  int osxsave = (ecx1 >> 27) & 1;
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = ((unsigned long long)hi << 32) | lo;
  }
  int avx_os = (xcr0 & 0x6) == 0x6;
  int avx512_os = avx_os && (xcr0 & 0xe0) == 0xe0;
  if (strcmp(feature, "fma") == 0) return avx_os && ((ecx1 >> 12) & 1);
  if (strcmp(feature, "f16c") == 0) return avx_os && ((ecx1 >> 29) & 1);
  unsigned ebx7 = 0, ecx7 = 0, eax71 = 0;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    ebx7 = b;
    ecx7 = c;
    __cpuid_count(7, 1, a, b, c, d);
    eax71 = a;
  }
  if (strcmp(feature, "avx2") == 0) return avx_os && ((ebx7 >> 5) & 1);
  if (strcmp(feature, "avx512f") == 0) return avx512_os && ((ebx7 >> 16) & 1);
  if (strcmp(feature, "avx512dq") == 0) return avx512_os && ((ebx7 >> 17) & 1);
  if (strcmp(feature, "avx512bw") == 0) return avx512_os && ((ebx7 >> 30) & 1);
  if (strcmp(feature, "avx512vl") == 0) return avx512_os && ((ebx7 >> 31) & 1);
  if (strcmp(feature, "avx512vnni") == 0) return avx512_os && ((ecx7 >> 11) & 1);
  if (strcmp(feature, "avx512bf16") == 0) return avx512_os && ((eax71 >> 5) & 1);
  return 0;
}
#define __builtin_cpu_supports(feature) cml_fuzz_cpu_supports(feature)
#endif

#endif  // CML_TESTS_FUZZ_CLANG_COMPAT_H_
