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

#endif  // CML_TESTS_FUZZ_CLANG_COMPAT_H_
