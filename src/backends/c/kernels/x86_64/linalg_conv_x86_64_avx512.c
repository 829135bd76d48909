// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/linalg_conv_x86_64_avx512.c: the AVX-512F direct 2-D convolution micro-kernel
// of linalg_conv.c: up to 6 output pixels (anywhere in a task's output rows, each with its own
// input and output offset) x up to 64 output channels (four zmm per pixel, 24 accumulators),
// reading the input from a zero-padded strip of input rows (no im2col; a 1x1 kernel reads the
// input in place) and the filter from a [K][ldw] block packed once per plan or run. A call
// covers one chunk of K and may add its sums to the earlier chunks' sums in the output. Per k step
// it loads the filter's (up to) four vectors once and broadcasts one input value per pixel, so
// the filter is reused across the pixels and the input across the channels. Compiled for the
// target with function attributes; only called when options->isa is AVX512.
//
// Each output sums a block of CMLC__CONV_DIRECT_K_BLOCK rows of the chunk in (ky, kx, ci) order,
// one fused multiply-add at a time from zero, and adds that to the sum of the blocks and chunks
// before, so a tile's values do not depend on where it sits, how many pixels or channels it
// holds, or which thread runs it.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_CONV_AVX512_TARGET __attribute__((target("avx512f")))

// Pixel r's terms against the |vecs| filter vectors of this k step (r and vecs are constants
// in every instantiation, so dead pixels and vectors cost nothing).
#define CMLC_CONV_PIXEL(r)                                           \
  do {                                                               \
    if ((r) < pixels) {                                              \
      const __m512 xv_ = _mm512_set1_ps(xk[xo##r]);                  \
      acc##r##0 = _mm512_fmadd_ps(xv_, w0, acc##r##0);               \
      if (vecs > 1) acc##r##1 = _mm512_fmadd_ps(xv_, w1, acc##r##1); \
      if (vecs > 2) acc##r##2 = _mm512_fmadd_ps(xv_, w2, acc##r##2); \
      if (vecs > 3) acc##r##3 = _mm512_fmadd_ps(xv_, w3, acc##r##3); \
    }                                                                \
  } while (0)

#define CMLC_CONV_STORE(r)                                                              \
  do {                                                                                  \
    if ((r) < pixels) {                                                                 \
      float* o_ = out + oo[r];                                                          \
      _mm512_mask_storeu_ps(o_, vecs == 1 ? last : full, acc##r##0);                    \
      if (vecs > 1) _mm512_mask_storeu_ps(o_ + 16, vecs == 2 ? last : full, acc##r##1); \
      if (vecs > 2) _mm512_mask_storeu_ps(o_ + 32, vecs == 3 ? last : full, acc##r##2); \
      if (vecs > 3) _mm512_mask_storeu_ps(o_ + 48, last, acc##r##3);                    \
    }                                                                                   \
  } while (0)

#define CMLC_CONV_ACC(r)                                                                \
  __m512 acc##r##0 = _mm512_setzero_ps(), acc##r##1 = acc##r##0, acc##r##2 = acc##r##0, \
         acc##r##3 = acc##r##0;                                                         \
  (void)acc##r##1;                                                                      \
  (void)acc##r##2;                                                                      \
  (void)acc##r##3

// With accumulate: the output's sums of the earlier chunks added to pixel r's sums of this one
// (masked like the store), as the GEMM micro-kernels add a k block's sums to C.
#define CMLC_CONV_ADD(r)                                                                        \
  do {                                                                                          \
    if ((r) < pixels) {                                                                         \
      const float* o_ = out + oo[r];                                                            \
      acc##r##0 = _mm512_add_ps(_mm512_maskz_loadu_ps(vecs == 1 ? last : full, o_), acc##r##0); \
      if (vecs > 1)                                                                             \
        acc##r##1 =                                                                             \
            _mm512_add_ps(_mm512_maskz_loadu_ps(vecs == 2 ? last : full, o_ + 16), acc##r##1);  \
      if (vecs > 2)                                                                             \
        acc##r##2 =                                                                             \
            _mm512_add_ps(_mm512_maskz_loadu_ps(vecs == 3 ? last : full, o_ + 32), acc##r##2);  \
      if (vecs > 3) acc##r##3 = _mm512_add_ps(_mm512_maskz_loadu_ps(last, o_ + 48), acc##r##3); \
    }                                                                                           \
  } while (0)

// Pixel r's sums back to zero after a flush.
#define CMLC_CONV_ZERO(r)                \
  do {                                   \
    acc##r##0 = _mm512_setzero_ps();     \
    if (vecs > 1) acc##r##1 = acc##r##0; \
    if (vecs > 2) acc##r##2 = acc##r##0; \
    if (vecs > 3) acc##r##3 = acc##r##0; \
  } while (0)

// The block's sums into the output: added to the earlier blocks' sums once there are some.
#define CMLC_CONV_FLUSH() \
  do {                    \
    if (stored) {         \
      CMLC_CONV_ADD(0);   \
      CMLC_CONV_ADD(1);   \
      CMLC_CONV_ADD(2);   \
      CMLC_CONV_ADD(3);   \
      CMLC_CONV_ADD(4);   \
      CMLC_CONV_ADD(5);   \
    }                     \
    CMLC_CONV_STORE(0);   \
    CMLC_CONV_STORE(1);   \
    CMLC_CONV_STORE(2);   \
    CMLC_CONV_STORE(3);   \
    CMLC_CONV_STORE(4);   \
    CMLC_CONV_STORE(5);   \
  } while (0)

static inline __attribute__((always_inline)) CMLC_CONV_AVX512_TARGET void cmlc_conv_avx512_body(
    const cmlc__conv_direct_args_t* a, const float* x, const int64_t* xo, const float* w,
    float* out, const int64_t* oo, __mmask16 last, const int pixels, const int vecs) {
  const __mmask16 full = (__mmask16)0xFFFF;
  const int64_t x_kx = a->x_kx, x_ky = a->x_ky, ldw = a->ldw;
  const int64_t channels = a->channels;
  // Pixel offsets in registers (absent pixels read pixel 0's, and compute nothing).
  const int64_t xo0 = xo[0], xo1 = pixels > 1 ? xo[1] : 0, xo2 = pixels > 2 ? xo[2] : 0;
  const int64_t xo3 = pixels > 3 ? xo[3] : 0, xo4 = pixels > 4 ? xo[4] : 0;
  const int64_t xo5 = pixels > 5 ? xo[5] : 0;
  (void)xo1, (void)xo2, (void)xo3, (void)xo4, (void)xo5;
  CMLC_CONV_ACC(0);
  CMLC_CONV_ACC(1);
  CMLC_CONV_ACC(2);
  CMLC_CONV_ACC(3);
  CMLC_CONV_ACC(4);
  CMLC_CONV_ACC(5);
  // Without kernel dilation the taps of one kernel row are adjacent in the strip (x_kx ==
  // channels): whole taps of one row run as one loop of (taps x channels) values (a 7x7 stem
  // on 3 channels: 21, not 7 runs of 3).
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
        const __m512 w0 = _mm512_loadu_ps(w);
        const __m512 w1 = vecs > 1 ? _mm512_loadu_ps(w + 16) : w0;
        const __m512 w2 = vecs > 2 ? _mm512_loadu_ps(w + 32) : w0;
        const __m512 w3 = vecs > 3 ? _mm512_loadu_ps(w + 48) : w0;
        (void)w1;
        (void)w2;
        (void)w3;
        CMLC_CONV_PIXEL(0);
        CMLC_CONV_PIXEL(1);
        CMLC_CONV_PIXEL(2);
        CMLC_CONV_PIXEL(3);
        CMLC_CONV_PIXEL(4);
        CMLC_CONV_PIXEL(5);
        w += ldw;
        ++xk;
      }
      if (room == 0 && left > 0) {
        CMLC_CONV_FLUSH();
        CMLC_CONV_ZERO(0);
        CMLC_CONV_ZERO(1);
        CMLC_CONV_ZERO(2);
        CMLC_CONV_ZERO(3);
        CMLC_CONV_ZERO(4);
        CMLC_CONV_ZERO(5);
        stored = true;
        room = CMLC__CONV_DIRECT_K_BLOCK;
      }
    }
    t += taps;
  }
  CMLC_CONV_FLUSH();
}

#define CMLC_CONV_VECS(p)                                                           \
  do {                                                                              \
    switch (vecs) {                                                                 \
      case 1:                                                                       \
        cmlc_conv_avx512_body(args, x, x_offsets, w, out, out_offsets, last, p, 1); \
        break;                                                                      \
      case 2:                                                                       \
        cmlc_conv_avx512_body(args, x, x_offsets, w, out, out_offsets, last, p, 2); \
        break;                                                                      \
      case 3:                                                                       \
        cmlc_conv_avx512_body(args, x, x_offsets, w, out, out_offsets, last, p, 3); \
        break;                                                                      \
      default:                                                                      \
        cmlc_conv_avx512_body(args, x, x_offsets, w, out, out_offsets, last, p, 4); \
        break;                                                                      \
    }                                                                               \
  } while (0)

CMLC_CONV_AVX512_TARGET void cmlc__conv_direct_f32_avx512_6x64(
    const cmlc__conv_direct_args_t* args, const float* x, const int64_t* x_offsets, const float* w,
    float* out, const int64_t* out_offsets, int pixels, int cols) {
  const int vecs = (cols + 15) / 16;
  const int tail = cols - (vecs - 1) * 16;
  const __mmask16 last = (__mmask16)(tail >= 16 ? 0xFFFFu : (1u << tail) - 1u);
  switch (pixels) {
    case 1:
      CMLC_CONV_VECS(1);
      break;
    case 2:
      CMLC_CONV_VECS(2);
      break;
    case 3:
      CMLC_CONV_VECS(3);
      break;
    case 4:
      CMLC_CONV_VECS(4);
      break;
    case 5:
      CMLC_CONV_VECS(5);
      break;
    default:
      CMLC_CONV_VECS(6);
      break;
  }
}

#endif  // CMLC_HAVE_X86_64
