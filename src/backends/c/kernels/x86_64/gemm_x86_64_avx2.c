// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_avx2.c: the AVX2 + FMA f32 GEMM micro-kernel (6 x 16 tile: twelve
// ymm accumulators, two B vectors and six broadcast A values per k step).
// Compiled for the target with function attributes, so the file needs no global -m flags; only
// called when the CPU has AVX2 and FMA (options->isa).
//
// Edges: partial tiles load and store their columns with vmaskmov (masked-off lanes are neither
// read nor written) and store only |rows| rows; the arithmetic is the same as a full tile's.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_AVX2_TARGET __attribute__((target("avx2,fma")))

// Lane mask with the first |count| (clamped to 0..8) lanes on.
static inline __attribute__((always_inline)) CMLC_AVX2_TARGET __m256i cmlc_avx2_mask(int count) {
  if (count < 0) count = 0;
  if (count > 8) count = 8;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define CMLC_AVX2_ROW(r)                         \
  do {                                           \
    __m256 av_ = _mm256_broadcast_ss(a + (r));   \
    c##r##0 = _mm256_fmadd_ps(av_, b0, c##r##0); \
    c##r##1 = _mm256_fmadd_ps(av_, b1, c##r##1); \
  } while (0)

#define CMLC_AVX2_STORE(r)                                                 \
  do {                                                                     \
    if ((r) < rows) {                                                      \
      float* cr_ = c + (int64_t)(r)*ldc;                                   \
      if (accumulate) {                                                    \
        c##r##0 = _mm256_add_ps(_mm256_maskload_ps(cr_, m0), c##r##0);     \
        c##r##1 = _mm256_add_ps(_mm256_maskload_ps(cr_ + 8, m1), c##r##1); \
      }                                                                    \
      _mm256_maskstore_ps(cr_, m0, c##r##0);                               \
      _mm256_maskstore_ps(cr_ + 8, m1, c##r##1);                           \
    }                                                                      \
  } while (0)

static inline __attribute__((always_inline)) CMLC_AVX2_TARGET void cmlc_avx2_6x16_body(
    int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, int accumulate,
    int rows, __m256i m0, __m256i m1, const int masked) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);
    _mm_prefetch((const char*)(c + (int64_t)r * ldc + 15), _MM_HINT_T0);
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m256 b0, b1;
    if (masked) {
      b0 = _mm256_maskload_ps(b, m0);
      b1 = _mm256_maskload_ps(b + 8, m1);
    } else {
      b0 = _mm256_loadu_ps(b);
      b1 = _mm256_loadu_ps(b + 8);
    }
    CMLC_AVX2_ROW(0);
    CMLC_AVX2_ROW(1);
    CMLC_AVX2_ROW(2);
    CMLC_AVX2_ROW(3);
    CMLC_AVX2_ROW(4);
    CMLC_AVX2_ROW(5);
    a += 6;
    b += ldb;
  }
  CMLC_AVX2_STORE(0);
  CMLC_AVX2_STORE(1);
  CMLC_AVX2_STORE(2);
  CMLC_AVX2_STORE(3);
  CMLC_AVX2_STORE(4);
  CMLC_AVX2_STORE(5);
}

CMLC_AVX2_TARGET void cmlc__gemm_ukernel_f32_avx2_6x16(int64_t kc, const float* a, const float* b,
                                                       int64_t ldb, float* c, int64_t ldc,
                                                       int accumulate, int rows, int cols) {
  __m256i m0 = cmlc_avx2_mask(cols), m1 = cmlc_avx2_mask(cols - 8);
  if (cols >= 16) {
    cmlc_avx2_6x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, 0);
  } else {
    cmlc_avx2_6x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, 1);
  }
}

//===--- f64 ---===//

// Lane mask (64-bit lanes) with the first |count| (clamped to 0..4) lanes on.
static inline __attribute__((always_inline)) CMLC_AVX2_TARGET __m256i cmlc_avx2_mask4(int count) {
  if (count < 0) count = 0;
  if (count > 4) count = 4;
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
}

// The f64 6 x 8 tile (four doubles per ymm): same structure as the f32 kernel above.
#define CMLC_AVX2D_ROW(r)                        \
  do {                                           \
    __m256d av_ = _mm256_broadcast_sd(a + (r));  \
    c##r##0 = _mm256_fmadd_pd(av_, b0, c##r##0); \
    c##r##1 = _mm256_fmadd_pd(av_, b1, c##r##1); \
  } while (0)

#define CMLC_AVX2D_STORE(r)                                                \
  do {                                                                     \
    if ((r) < rows) {                                                      \
      double* cr_ = c + (int64_t)(r)*ldc;                                  \
      if (accumulate) {                                                    \
        c##r##0 = _mm256_add_pd(_mm256_maskload_pd(cr_, m0), c##r##0);     \
        c##r##1 = _mm256_add_pd(_mm256_maskload_pd(cr_ + 4, m1), c##r##1); \
      }                                                                    \
      _mm256_maskstore_pd(cr_, m0, c##r##0);                               \
      _mm256_maskstore_pd(cr_ + 4, m1, c##r##1);                           \
    }                                                                      \
  } while (0)

static inline __attribute__((always_inline)) CMLC_AVX2_TARGET void cmlc_avx2_6x8_f64_body(
    int64_t kc, const double* a, const double* b, int64_t ldb, double* c, int64_t ldc,
    int accumulate, int rows, __m256i m0, __m256i m1, const int masked) {
  __m256d c00 = _mm256_setzero_pd(), c01 = _mm256_setzero_pd();
  __m256d c10 = _mm256_setzero_pd(), c11 = _mm256_setzero_pd();
  __m256d c20 = _mm256_setzero_pd(), c21 = _mm256_setzero_pd();
  __m256d c30 = _mm256_setzero_pd(), c31 = _mm256_setzero_pd();
  __m256d c40 = _mm256_setzero_pd(), c41 = _mm256_setzero_pd();
  __m256d c50 = _mm256_setzero_pd(), c51 = _mm256_setzero_pd();
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);
    _mm_prefetch((const char*)(c + (int64_t)r * ldc + 7), _MM_HINT_T0);
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m256d b0, b1;
    if (masked) {
      b0 = _mm256_maskload_pd(b, m0);
      b1 = _mm256_maskload_pd(b + 4, m1);
    } else {
      b0 = _mm256_loadu_pd(b);
      b1 = _mm256_loadu_pd(b + 4);
    }
    CMLC_AVX2D_ROW(0);
    CMLC_AVX2D_ROW(1);
    CMLC_AVX2D_ROW(2);
    CMLC_AVX2D_ROW(3);
    CMLC_AVX2D_ROW(4);
    CMLC_AVX2D_ROW(5);
    a += 6;
    b += ldb;
  }
  CMLC_AVX2D_STORE(0);
  CMLC_AVX2D_STORE(1);
  CMLC_AVX2D_STORE(2);
  CMLC_AVX2D_STORE(3);
  CMLC_AVX2D_STORE(4);
  CMLC_AVX2D_STORE(5);
}

CMLC_AVX2_TARGET void cmlc__gemm_ukernel_f64_avx2_6x8(int64_t kc, const double* a, const double* b,
                                                      int64_t ldb, double* c, int64_t ldc,
                                                      int accumulate, int rows, int cols) {
  __m256i m0 = cmlc_avx2_mask4(cols), m1 = cmlc_avx2_mask4(cols - 4);
  if (cols >= 8) {
    cmlc_avx2_6x8_f64_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, 0);
  } else {
    cmlc_avx2_6x8_f64_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, 1);
  }
}

//===--- transposed B, small M (weights stored [N, K]) ---===//

// The products x[M, K] times w[N, K]^T with a few rows (M <= 128) and a large weight whose rows
// are contiguous in k (cmlc__gemm_bt_fn): the tile puts R weight rows (R outputs' columns)
// against 8 x V rows of x, packed as xt[k * 8V + m]. The weight is read in place, row by row:
// every 64 k the tile copies the next 64 values of its R rows (R sequential streams, each fetched
// ahead; f16 and bf16 widened on the way, exactly) into an L1 buffer, and each k step broadcasts
// one value of each row from there (one base register for all rows) and multiplies it by the V
// vectors of x. Each output sums its k terms in the driver's k blocks of |kcb|: one fused
// multiply-add per k from zero in each block, the blocks added in order (the arithmetic of the
// micro-kernels over a packed B, so the same bits). These ymm tiles also serve the AVX-512 ISA:
// zmm versions (12 x 32 and 12 x 16 tiles) measured slower on Zen 4 (11.5 against 9.7 ms for
// 24 x 4096 x 4096 on one core) and never faster.
#define CMLC_AVX2_BT_TARGET __attribute__((target("avx2,fma,f16c")))

enum {
  CMLC_AVX2_BT_STEP = 64,    // k values copied per weight row at a time
  CMLC_AVX2_BT_AHEAD = 512,  // weight values fetched this far ahead (into L2)
};

// Copies (widening) |step| values of |rows| weight rows (element size |es|, row stride |ldw|
// elements) into buf[r * STEP + j]. |wt|: 0 f32, 1 bf16, 2 f16 (a constant in each caller).
static inline __attribute__((always_inline)) CMLC_AVX2_BT_TARGET void cmlc_avx2_bt_copy(
    const char* src, int64_t ldw, int rows, int64_t step, float* buf, const int wt) {
  const size_t es = wt ? 2 : 4;
  for (int r = 0; r < rows; ++r, src += (size_t)ldw * es) {
    float* d = buf + r * CMLC_AVX2_BT_STEP;
    if (step == CMLC_AVX2_BT_STEP) {
      for (int j = 0; j < CMLC_AVX2_BT_STEP; j += 16) {
        _mm_prefetch(src + (CMLC_AVX2_BT_AHEAD + j) * es, _MM_HINT_T1);
        for (int h = 0; h < 16; h += 8) {
          __m256 v;
          if (wt == 0) {
            v = _mm256_loadu_ps((const float*)src + j + h);
          } else {
            const __m128i u = _mm_loadu_si128((const __m128i*)((const uint16_t*)src + j + h));
            v = wt == 1 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(u), 16))
                        : _mm256_cvtph_ps(u);
          }
          _mm256_store_ps(d + j + h, v);
        }
      }
    } else if (wt == 0) {
      memcpy(d, src, (size_t)step * sizeof(float));
    } else if (wt == 2) {
      cmlc__gemm_widen_f16_f16c((const uint16_t*)src, d, step);
    } else {
      const uint16_t* s16 = (const uint16_t*)src;
      for (int64_t j = 0; j < step; ++j) {
        const uint32_t u = (uint32_t)s16[j] << 16;
        memcpy(d + j, &u, sizeof u);
      }
    }
  }
}

static inline __attribute__((always_inline)) CMLC_AVX2_BT_TARGET void cmlc_avx2_bt_body(
    int64_t k, int64_t kcb, const void* w, int64_t ldw, const float* xt, float* c, int64_t ldc,
    int rows, int cols, const int R, const int V, const int wt) {
  float sum[12 * 16] __attribute__((aligned(32)));
  float buf[12 * CMLC_AVX2_BT_STEP] __attribute__((aligned(32)));
  const int lanes = 8 * V;
  const size_t es = wt ? 2 : 4;
  if (rows < R) memset(buf, 0, sizeof buf);
  for (int64_t pc = 0; pc < k; pc += kcb) {
    const int64_t kc = k - pc < kcb ? k - pc : kcb;
    __m256 acc[12][2];
    _Pragma("GCC unroll 12") for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm256_setzero_ps();
      if (V > 1) acc[r][1] = _mm256_setzero_ps();
    }
    for (int64_t k0 = 0; k0 < kc; k0 += CMLC_AVX2_BT_STEP) {
      const int64_t step = kc - k0 < CMLC_AVX2_BT_STEP ? kc - k0 : CMLC_AVX2_BT_STEP;
      cmlc_avx2_bt_copy((const char*)w + (size_t)(pc + k0) * es, ldw, rows, step, buf, wt);
      const float* xk = xt + (pc + k0) * lanes;
      for (int64_t kk = 0; kk < step; ++kk) {
        const __m256 x0 = _mm256_load_ps(xk + kk * lanes);
        const __m256 x1 = V > 1 ? _mm256_load_ps(xk + kk * lanes + 8) : x0;
        const float* wk = buf + kk;
        _Pragma("GCC unroll 12") for (int r = 0; r < R; ++r) {
          const __m256 wv = _mm256_broadcast_ss(wk + r * CMLC_AVX2_BT_STEP);
          acc[r][0] = _mm256_fmadd_ps(wv, x0, acc[r][0]);
          if (V > 1) acc[r][1] = _mm256_fmadd_ps(wv, x1, acc[r][1]);
        }
      }
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < R; ++r) {
      float* s = sum + r * lanes;
      if (pc > 0) {
        acc[r][0] = _mm256_add_ps(_mm256_load_ps(s), acc[r][0]);
        if (V > 1) acc[r][1] = _mm256_add_ps(_mm256_load_ps(s + 8), acc[r][1]);
      }
      _mm256_store_ps(s, acc[r][0]);
      if (V > 1) _mm256_store_ps(s + 8, acc[r][1]);
    }
  }
  // Output (m, n0 + r) is c[m * ldc + r].
  for (int m = 0; m < cols; ++m)
    for (int r = 0; r < rows; ++r) c[m * ldc + r] = sum[r * lanes + m];
}

#define CMLC_AVX2_BT_DISPATCH(R, V)                                       \
  do {                                                                    \
    if (wdtype == CML_DTYPE_BF16)                                         \
      cmlc_avx2_bt_body(k, kcb, w, ldw, xt, c, ldc, rows, cols, R, V, 1); \
    else if (wdtype == CML_DTYPE_F16)                                     \
      cmlc_avx2_bt_body(k, kcb, w, ldw, xt, c, ldc, rows, cols, R, V, 2); \
    else                                                                  \
      cmlc_avx2_bt_body(k, kcb, w, ldw, xt, c, ldc, rows, cols, R, V, 0); \
  } while (0)

// 6 weight rows x 16 rows of x (xt rows of 16 floats, 32-byte aligned).
CMLC_AVX2_BT_TARGET void cmlc__gemm_bt_f32_avx2_6x16(int64_t k, int64_t kcb, const void* w,
                                                     cml_dtype_t wdtype, int64_t ldw,
                                                     const float* xt, float* c, int64_t ldc,
                                                     int rows, int cols) {
  CMLC_AVX2_BT_DISPATCH(6, 2);
}

// 12 weight rows x 8 rows of x (xt rows of 8 floats, 32-byte aligned).
CMLC_AVX2_BT_TARGET void cmlc__gemm_bt_f32_avx2_12x8(int64_t k, int64_t kcb, const void* w,
                                                     cml_dtype_t wdtype, int64_t ldw,
                                                     const float* xt, float* c, int64_t ldc,
                                                     int rows, int cols) {
  CMLC_AVX2_BT_DISPATCH(12, 1);
}

// The GEMV kernels are in gemm_x86_64_gemv.c.

//===--- f16 runs (F16C) ---===//

#define CMLC_F16C_TARGET __attribute__((target("avx2,fma,f16c")))

// dst[i] = src[i] widened from binary16 (exact), for packing f16 operands.
CMLC_F16C_TARGET void cmlc__gemm_widen_f16_f16c(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + i))));
  }
  for (; i < n; ++i) dst[i] = cml__f16_to_f32(src[i]);
}

// dst[i] = src[i] rounded to binary16 (nearest even; NaN -> sign | 0x7E00): the bits of
// cml_f32_to_f16.
CMLC_F16C_TARGET void cmlc__gemm_narrow_f16_f16c(const float* src, uint16_t* dst, int64_t n) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
  const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    // A NaN becomes the canonical quiet NaN of its sign, which converts to sign | 0x7E00.
    const __m256 canon = _mm256_or_ps(_mm256_and_ps(v, sign), qnan);
    v = _mm256_blendv_ps(v, canon, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    _mm_storeu_si128((__m128i*)(dst + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) dst[i] = cml__f32_to_f16(src[i]);
}

#else
// Keeps the translation unit non-empty on other architectures.
typedef int cmlc_gemm_avx2_unused_t;
#endif
