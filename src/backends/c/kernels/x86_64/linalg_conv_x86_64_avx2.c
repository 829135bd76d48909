// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/linalg_conv_x86_64_avx2.c: the AVX2 + FMA direct 2-D convolution micro-kernel
// of linalg_conv.c, for machines without AVX-512: the contract of the AVX-512 kernel (up to 6
// output pixels, each with its own input and output offset, x up to 64 output channels of the
// same packed [K][ldw] filter block, one chunk of K per call, optionally adding its sums to the
// earlier chunks' sums in the output). AVX2 has 16 ymm registers, so the channels go in passes of
// 16: per pass 6 pixels x 2 ymm = 12 accumulators, 2 filter vectors per k step and one broadcast
// input value per pixel. Compiled for the target with function attributes; only called when
// options->isa is AVX2 or better.
//
// Each output sums a block of CMLC__CONV_DIRECT_K_BLOCK rows in (ky, kx, ci) order, one fused
// multiply-add at a time from zero, then adds the earlier blocks' sum, as the AVX-512 kernel
// does, so both give the same bits.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_CONV_AVX2_TARGET __attribute__((target("avx2,fma")))

#define CMLC_CONV2_PIXEL(r)                                          \
  do {                                                               \
    if ((r) < pixels) {                                              \
      const __m256 xv_ = _mm256_broadcast_ss(xk + xo##r);            \
      acc##r##0 = _mm256_fmadd_ps(xv_, w0, acc##r##0);               \
      if (vecs > 1) acc##r##1 = _mm256_fmadd_ps(xv_, w1, acc##r##1); \
    }                                                                \
  } while (0)

#define CMLC_CONV2_ACC(r)                                        \
  __m256 acc##r##0 = _mm256_setzero_ps(), acc##r##1 = acc##r##0; \
  (void)acc##r##1

// With accumulate: the output's sums of the earlier chunks added to this chunk's.
#define CMLC_CONV2_ADD(r)                                                                    \
  do {                                                                                       \
    if ((r) < pixels) {                                                                      \
      const float* o_ = out + oo[r];                                                         \
      acc##r##0 = _mm256_add_ps(_mm256_maskload_ps(o_, vecs == 1 ? last : full), acc##r##0); \
      if (vecs > 1) acc##r##1 = _mm256_add_ps(_mm256_maskload_ps(o_ + 8, last), acc##r##1);  \
    }                                                                                        \
  } while (0)

#define CMLC_CONV2_STORE(r)                                        \
  do {                                                             \
    if ((r) < pixels) {                                            \
      float* o_ = out + oo[r];                                     \
      _mm256_maskstore_ps(o_, vecs == 1 ? last : full, acc##r##0); \
      if (vecs > 1) _mm256_maskstore_ps(o_ + 8, last, acc##r##1);  \
    }                                                              \
  } while (0)

// One pass: the outputs' channels [0, 8 * vecs) (|last| masks the last vector), the filter
// columns from |w| (row stride ldw), the outputs from |out| + oo[r].
#define CMLC_CONV2_ZERO(r)               \
  do {                                   \
    acc##r##0 = _mm256_setzero_ps();     \
    if (vecs > 1) acc##r##1 = acc##r##0; \
  } while (0)

// The block's sums into the output: added to the earlier blocks' sums once there are some.
#define CMLC_CONV2_FLUSH() \
  do {                     \
    if (stored) {          \
      CMLC_CONV2_ADD(0);   \
      CMLC_CONV2_ADD(1);   \
      CMLC_CONV2_ADD(2);   \
      CMLC_CONV2_ADD(3);   \
      CMLC_CONV2_ADD(4);   \
      CMLC_CONV2_ADD(5);   \
    }                      \
    CMLC_CONV2_STORE(0);   \
    CMLC_CONV2_STORE(1);   \
    CMLC_CONV2_STORE(2);   \
    CMLC_CONV2_STORE(3);   \
    CMLC_CONV2_STORE(4);   \
    CMLC_CONV2_STORE(5);   \
  } while (0)

static inline __attribute__((always_inline)) CMLC_CONV_AVX2_TARGET void cmlc_conv_avx2_body(
    const cmlc__conv_direct_args_t* a, const float* x, const int64_t* xo, const float* w,
    float* out, const int64_t* oo, __m256i last, const int pixels, const int vecs) {
  const __m256i full = _mm256_set1_epi32(-1);
  const int64_t x_kx = a->x_kx, x_ky = a->x_ky, ldw = a->ldw;
  const int64_t channels = a->channels;
  const int64_t xo0 = xo[0], xo1 = pixels > 1 ? xo[1] : 0, xo2 = pixels > 2 ? xo[2] : 0;
  const int64_t xo3 = pixels > 3 ? xo[3] : 0, xo4 = pixels > 4 ? xo[4] : 0;
  const int64_t xo5 = pixels > 5 ? xo[5] : 0;
  (void)xo1, (void)xo2, (void)xo3, (void)xo4, (void)xo5;
  CMLC_CONV2_ACC(0);
  CMLC_CONV2_ACC(1);
  CMLC_CONV2_ACC(2);
  CMLC_CONV2_ACC(3);
  CMLC_CONV2_ACC(4);
  CMLC_CONV2_ACC(5);
  const int64_t kw = a->kw, t1 = a->t1, c0 = a->c0;
  const bool fused = x_kx == channels && c0 == 0 && a->c1 == channels;
  // The chunk's k rows in blocks of CMLC__CONV_DIRECT_K_BLOCK: each block summed from zero and
  // added to the sums of the blocks (and chunks) before in the output.
  int64_t left = (t1 - a->t0) * (a->c1 - c0), room = CMLC__CONV_DIRECT_K_BLOCK;
  bool stored = a->accumulate != 0;
  for (int64_t t = a->t0; t < t1;) {
    const int64_t ky = t / kw, kx = t % kw;
    int64_t taps = 1;
    if (fused) taps = (t1 < (ky + 1) * kw ? t1 : (ky + 1) * kw) - t;
    const int64_t run = fused ? taps * channels : a->c1 - c0;
    const float* xk = x + ky * x_ky + kx * x_kx + c0;
    for (int64_t ci = 0; ci < run;) {
      // Up to the next block boundary of the chunk.
      const int64_t stop = ci + (run - ci < room ? run - ci : room);
      room -= stop - ci;
      left -= stop - ci;
      for (; ci < stop; ++ci) {
        // The packed block is zero past the live channels, so full loads are safe.
        const __m256 w0 = _mm256_loadu_ps(w);
        const __m256 w1 = vecs > 1 ? _mm256_loadu_ps(w + 8) : w0;
        (void)w1;
        CMLC_CONV2_PIXEL(0);
        CMLC_CONV2_PIXEL(1);
        CMLC_CONV2_PIXEL(2);
        CMLC_CONV2_PIXEL(3);
        CMLC_CONV2_PIXEL(4);
        CMLC_CONV2_PIXEL(5);
        w += ldw;
        ++xk;
      }
      if (room == 0 && left > 0) {
        CMLC_CONV2_FLUSH();
        CMLC_CONV2_ZERO(0);
        CMLC_CONV2_ZERO(1);
        CMLC_CONV2_ZERO(2);
        CMLC_CONV2_ZERO(3);
        CMLC_CONV2_ZERO(4);
        CMLC_CONV2_ZERO(5);
        stored = true;
        room = CMLC__CONV_DIRECT_K_BLOCK;
      }
    }
    t += taps;
  }
  CMLC_CONV2_FLUSH();
}

#define CMLC_CONV2_VECS(p)                                                        \
  do {                                                                            \
    if (vecs == 1) {                                                              \
      cmlc_conv_avx2_body(args, x, x_offsets, w_, out_, out_offsets, last, p, 1); \
    } else {                                                                      \
      cmlc_conv_avx2_body(args, x, x_offsets, w_, out_, out_offsets, last, p, 2); \
    }                                                                             \
  } while (0)

CMLC_CONV_AVX2_TARGET void cmlc__conv_direct_f32_avx2_6x16(const cmlc__conv_direct_args_t* args,
                                                           const float* x, const int64_t* x_offsets,
                                                           const float* w, float* out,
                                                           const int64_t* out_offsets, int pixels,
                                                           int cols) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int c0 = 0; c0 < cols; c0 += 16) {
    const int n = cols - c0 < 16 ? cols - c0 : 16;
    const int vecs = (n + 7) / 8;
    const __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - (vecs - 1) * 8), lanes);
    const float* w_ = w + c0;
    float* out_ = out + c0;
    switch (pixels) {
      case 1:
        CMLC_CONV2_VECS(1);
        break;
      case 2:
        CMLC_CONV2_VECS(2);
        break;
      case 3:
        CMLC_CONV2_VECS(3);
        break;
      case 4:
        CMLC_CONV2_VECS(4);
        break;
      case 5:
        CMLC_CONV2_VECS(5);
        break;
      default:
        CMLC_CONV2_VECS(6);
        break;
    }
  }
}

#endif  // CMLC_HAVE_X86_64
