// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/fused_attention_x86_64.c: the AVX2 + FMA (32-byte vectors) and AVX-512
// (64-byte vectors) variants of the fused attention tasks, forward and backward
// (kernels/generic/fused_attention.c), instantiated from the same bodies with target
// attributes; picked by options->isa.
#include "backends/c/kernels/generic/fused_attention.h"

#if defined(CMLC_HAVE_X86_64)
#include <math.h>
#include <string.h>

// The bodies' `acc += x * y` on vectors are meant as fused multiply-adds, but ISO C mode
// (-std=c11) turns GCC's contraction off: without this, each is a multiply and an add (twice
// the instructions of the GEMM micro-kernels' explicit FMAs). Contract them in this file.
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=fast")
#endif

typedef float cmlc_fa_v8f __attribute__((vector_size(32)));
typedef int32_t cmlc_fa_v8i __attribute__((vector_size(32)));
typedef double cmlc_fa_v4d __attribute__((vector_size(32)));
typedef int64_t cmlc_fa_v4l __attribute__((vector_size(32)));
typedef float cmlc_fa_v16f __attribute__((vector_size(64)));
typedef int32_t cmlc_fa_v16i __attribute__((vector_size(64)));
typedef double cmlc_fa_v8d __attribute__((vector_size(64)));
typedef int64_t cmlc_fa_v8l __attribute__((vector_size(64)));

#include <immintrin.h>

// f16 rows widened with F16C, 8 lanes at a time (exact; a NaN comes back quieted, as the SIMD
// conversions give it): the float variants' loads of f16 q, k and v rows, which went through
// the scalar conversion element by element (an f16 decode step with grouped-query heads took
// 6-10x the f32 step's time, 2.2x xla:cpu's).
__attribute__((target("avx2,fma,f16c"))) static inline void cmlc_fa_f16_row_x86(float* dst,
                                                                                const uint16_t* src,
                                                                                int64_t n) {
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    _mm256_storeu_ps(dst + e, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + e))));
  }
  for (; e < n; ++e) dst[e] = cmlc__fa_load_f32(src, e, CML_DTYPE_F16);
}

#define CMLC_FA_T float
#define CMLC_FA_NATIVE CML_DTYPE_F32
#define CMLC_FA_F16_ROW cmlc_fa_f16_row_x86
#define CMLC_FA_V cmlc_fa_v8f
#define CMLC_FA_IV cmlc_fa_v8i
#define CMLC_FA_VEXP 1
#define CMLC_FA_W 8
#define CMLC_FA_EXP expf
#define CMLC_FA_LOAD cmlc__fa_load_f32
#define CMLC_FA_STORE cmlc__fa_store_f32
#define CMLC_FA_NAME(x) cmlc__fa_##x##_f32_avx2
#define CMLC_FA_LINKAGE
#define CMLC_FA_ATTR __attribute__((target("avx2,fma,f16c")))
#include "backends/c/kernels/generic/fused_attention_impl.h"
#include "backends/c/kernels/generic/fused_attention_bwd_impl.h"
#include "backends/c/kernels/generic/fused_attention_undef.h"

#define CMLC_FA_T double
#define CMLC_FA_NATIVE CML_DTYPE_F64
#define CMLC_FA_V cmlc_fa_v4d
#define CMLC_FA_IV cmlc_fa_v4l
#define CMLC_FA_VEXP 0
#define CMLC_FA_W 4
#define CMLC_FA_EXP exp
#define CMLC_FA_LOAD cmlc_load_f64
#define CMLC_FA_STORE cmlc_store_f64
#define CMLC_FA_NAME(x) cmlc__fa_##x##_f64_avx2
#define CMLC_FA_LINKAGE
#define CMLC_FA_ATTR __attribute__((target("avx2,fma,f16c")))
#include "backends/c/kernels/generic/fused_attention_impl.h"
#include "backends/c/kernels/generic/fused_attention_bwd_impl.h"
#include "backends/c/kernels/generic/fused_attention_undef.h"

#define CMLC_FA_T float
#define CMLC_FA_NATIVE CML_DTYPE_F32
#define CMLC_FA_F16_ROW cmlc_fa_f16_row_x86
#define CMLC_FA_V cmlc_fa_v16f
#define CMLC_FA_IV cmlc_fa_v16i
#define CMLC_FA_VEXP 1
#define CMLC_FA_W 16
#define CMLC_FA_EXP expf
#define CMLC_FA_LOAD cmlc__fa_load_f32
#define CMLC_FA_STORE cmlc__fa_store_f32
#define CMLC_FA_NAME(x) cmlc__fa_##x##_f32_avx512
#define CMLC_FA_LINKAGE
#define CMLC_FA_ATTR __attribute__((target("avx512f,avx2,fma,f16c")))
#include "backends/c/kernels/generic/fused_attention_impl.h"
#include "backends/c/kernels/generic/fused_attention_bwd_impl.h"
#include "backends/c/kernels/generic/fused_attention_undef.h"

#define CMLC_FA_T double
#define CMLC_FA_NATIVE CML_DTYPE_F64
#define CMLC_FA_V cmlc_fa_v8d
#define CMLC_FA_IV cmlc_fa_v8l
#define CMLC_FA_VEXP 0
#define CMLC_FA_W 8
#define CMLC_FA_EXP exp
#define CMLC_FA_LOAD cmlc_load_f64
#define CMLC_FA_STORE cmlc_store_f64
#define CMLC_FA_NAME(x) cmlc__fa_##x##_f64_avx512
#define CMLC_FA_LINKAGE
#define CMLC_FA_ATTR __attribute__((target("avx512f,avx2,fma,f16c")))
#include "backends/c/kernels/generic/fused_attention_impl.h"
#include "backends/c/kernels/generic/fused_attention_bwd_impl.h"
#include "backends/c/kernels/generic/fused_attention_undef.h"
#endif
