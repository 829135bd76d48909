// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_vnni.c: the batch-1 int8 path (option quant_int8) of Q4_0, Q4_K
// and Q6_K on AVX-512 VNNI: raw unsigned weight integers straight into zmm vpdpbusd against the
// activations quantized per 32 values, per 256 for Q4_K (cmlc_q_prepare), re-laid out once per call
// here so that one vpdpbusd takes 64 weights as they lie in memory after a mask or shift, and the
// weights' offsets (-8, -32) enter as integer activation sums. Compiled with function target
// attributes; only called when the CPU has AVX-512F/BW/VL and AVX512-VNNI.
//
// The products are the same as those of the generic int8 consumer (quant_x86_64_body.h): per
// 32 activations (16 for Q6_K's scales) an exact integer dot q . xq, times the weight's scale
// and the activations' scale dx in f32, summed in f32; only the order of the f32 sums (and, for
// Q4_K, where the 6-bit scales multiply the integer dots before one conversion per super-block,
// the rounding of the scale products) differs.
//
// Per-call activation layouts (|cmlc_quant_vnni_bytes|), per group of weights:
//   Q4_0, 4 blocks (128 values, 72 weight bytes): xlo[64] (the 16 first activations of each
//        block), xhi[64] (the 16 last), ibias[16] int32 (lane 4j: -8 * sum xq of block j), dxe[16]
//        f32 (lanes 4j..4j+3: dx of block j); 256 bytes. A last group of 1-3 blocks is padded
//        with zero activations and scales.
//   Q4_K, 1 super-block (256 values): x[4][64] (sub-blocks {0,2}, {1,3}, {4,6}, {5,7}: the
//        order of the low and high nibbles of two 32-byte chunks), bs[8] int16 (sum xq of each
//        sub-block, for the mins), dx[4] f32 (the super-block's one activation scale: Q4_K's
//        activations are quantized per 256 values, cmlc_q_prepare), 32 bytes of padding;
//        320 bytes.
//   Q6_K, 1 super-block: x[256] (natural order), ibias[4][16] int32 (lane 4t of vector v:
//        -32 * sum xq of values 64v + 16t .. +15), dx16[16] (dx of each 16 values); 576 bytes.
#include <string.h>

#include "backends/c/kernels/generic/quant_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_QV_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define CMLC_QV_INLINE static inline __attribute__((always_inline)) CMLC_QV_TARGET

bool cmlc_quant_vnni_supports(cml_ggml_type_t type) {
  return type == CML_GGML_Q4_0 || type == CML_GGML_Q4_K || type == CML_GGML_Q6_K;
}

size_t cmlc_quant_vnni_bytes(cml_ggml_type_t type, int64_t k) {
  switch (type) {
    case CML_GGML_Q4_0:
      return (size_t)((k / 32 + 3) / 4) * 256;
    case CML_GGML_Q4_K:
      return (size_t)(k / 256) * 320;
    case CML_GGML_Q6_K:
      return (size_t)(k / 256) * 576;
    default:
      return 0;
  }
}

static int32_t cmlc_qv_sum(const int8_t* q, int n) {
  int32_t t = 0;
  for (int i = 0; i < n; ++i) t += q[i];
  return t;
}

void cmlc_quant_vnni_prepare(cml_ggml_type_t type, const cmlc_quant_act_t* act, void* out) {
  const int64_t k = act->k, nb = k / 32;
  uint8_t* o = out;
  memset(o, 0, cmlc_quant_vnni_bytes(type, k));
  if (type == CML_GGML_Q4_0) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* g = o + (b / 4) * 256;
      const int j = (int)(b % 4);
      const int8_t* xq = act->xq + 32 * b;
      memcpy(g + 16 * j, xq, 16);
      memcpy(g + 64 + 16 * j, xq + 16, 16);
      const int32_t bias = -8 * cmlc_qv_sum(xq, 32);
      memcpy(g + 128 + 16 * j, &bias, 4);
      for (int l = 0; l < 4; ++l) memcpy(g + 192 + 16 * j + 4 * l, &act->xd[b], 4);
    }
  } else if (type == CML_GGML_Q4_K) {
    static const int order[8] = {0, 2, 1, 3, 4, 6, 5, 7};  // sub-block at x slot i
    for (int64_t s = 0; s < k / 256; ++s) {
      uint8_t* g = o + s * 320;
      const int8_t* xq = act->xq + 256 * s;
      int16_t* bs = (int16_t*)(g + 256);
      float* dx = (float*)(g + 272);
      for (int i = 0; i < 8; ++i) {
        memcpy(g + 32 * i, xq + 32 * order[i], 32);
        bs[i] = (int16_t)cmlc_qv_sum(xq + 32 * i, 32);  // |sum| <= 32 * 127
      }
      for (int l = 0; l < 4; ++l) dx[l] = act->xd[8 * s];  // one per super-block (cmlc_q_prepare)
    }
  } else if (type == CML_GGML_Q6_K) {
    for (int64_t s = 0; s < k / 256; ++s) {
      uint8_t* g = o + s * 576;
      const int8_t* xq = act->xq + 256 * s;
      memcpy(g, xq, 256);
      int32_t* ib = (int32_t*)(g + 256);
      float* dx16 = (float*)(g + 512);
      for (int t = 0; t < 16; ++t) {
        ib[4 * t] = -32 * cmlc_qv_sum(xq + 16 * t, 16);
        dx16[t] = act->xd[8 * s + t / 2];
      }
    }
  }
}

// Prefetches the slice of the rows |ahead| rows after |w| (a multiple of four) that matches
// step |i| of |bytes| bytes per row of the group at |w|, as quant_x86_64_body.h's
// cmlc_qb_prefetch, so that the rows ahead arrive linearly. Into L2 (|l1| false: two groups
// ahead for Q4_0 and Q6_K, four for Q4_K, which streamed 2-5% faster 16 rows ahead than 8 on
// Zen 4 and 10% slower 4 ahead), or, on CPUs with an L1 data cache of at least
// CMLC_QUANT_PREFETCH_L1_MIN (|l1| true), into L1 two groups ahead for every format: on Zen 5
// (48 KiB L1), 1 thread, 4096 x 4096, the L1 prefetches streamed Q4_0 at 88-89% of the read
// probe instead of 82%, Q4_K 95% instead of 90%, Q6_K 97-98% instead of 69% (bench/README.md).
// On Zen 4's 32 KiB L1, L1 prefetches of two groups of the larger rows evicted lines before their
// use.
CMLC_QV_INLINE void cmlc_qv_prefetch(const uint8_t* w, int64_t row_bytes, int ahead, int64_t i,
                                     int bytes, bool l1) {
  const uint8_t* p = w + (l1 ? 8 : ahead) * row_bytes + i * 4 * bytes;
  if (l1) {
#pragma GCC unroll 16
    for (int l = 0; l < 4 * bytes; l += 64) _mm_prefetch((const char*)(p + l), _MM_HINT_T0);
  } else {
#pragma GCC unroll 16
    for (int l = 0; l < 4 * bytes; l += 64) _mm_prefetch((const char*)(p + l), _MM_HINT_T1);
  }
}

//===--- Q4_0 ---===//

// One group of four blocks (or the |tail| group of fewer, zero-padded) of row |b| into |acc|.
CMLC_QV_INLINE __m512 cmlc_qv_q40_step(const uint8_t* b, bool tail, __mmask64 ma, __m512i xlo,
                                       __m512i xhi, __m512i ib, __m512 dxe, __m512 acc) {
  // Words of the group: block j at word 9j (its f16 scale), its 16 bytes of nibbles at words
  // 9j+1 .. 9j+8; words 32-35 come from the second load.
  const __m512i idx_qs =
      _mm512_set_epi16(35, 34, 33, 32, 31, 30, 29, 28, 26, 25, 24, 23, 22, 21, 20, 19, 17, 16, 15,
                       14, 13, 12, 11, 10, 8, 7, 6, 5, 4, 3, 2, 1);
  const __m512i idx_d = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 27, 27, 27,
                                         27, 18, 18, 18, 18, 9, 9, 9, 9, 0, 0, 0, 0);
  const __m512i m0f = _mm512_set1_epi8(15);
  const __m512i a = tail ? _mm512_maskz_loadu_epi8(ma, b) : _mm512_loadu_si512(b);
  const __m512i c = tail ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi8(0xFF, b + 64);
  const __m512i v = _mm512_permutex2var_epi16(a, idx_qs, c);
  __m512i dot = _mm512_dpbusd_epi32(ib, _mm512_and_si512(v, m0f), xlo);
  dot = _mm512_dpbusd_epi32(dot, _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f), xhi);
  const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx_d, a)));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, dxe), acc);
}

// Four rows of one group of four blocks (or the |tail| group): the integer dots of the four
// rows summed to lane 4j + r (block j, row r) and scaled in one vector.
CMLC_QV_INLINE __m512 cmlc_qv_q40_step4(const uint8_t* b, int64_t row_bytes, bool tail,
                                        __mmask64 ma, __m512i xlo, __m512i xhi, __m512i ib,
                                        __m512 dxe, __m512 acc) {
  const __m512i idx_qs =
      _mm512_set_epi16(35, 34, 33, 32, 31, 30, 29, 28, 26, 25, 24, 23, 22, 21, 20, 19, 17, 16, 15,
                       14, 13, 12, 11, 10, 8, 7, 6, 5, 4, 3, 2, 1);
  // Words 4j, 4j + 1: the scale of block j (word 9j) of the first and second source; words
  // 4j + 2, 4j + 3 the same (taken from the second pair of rows by the blend).
  const __m512i idx_d = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 59, 27, 59,
                                         27, 50, 18, 50, 18, 41, 9, 41, 9, 32, 0, 32, 0);
  const __m512i m0f = _mm512_set1_epi8(15);
  __m512i a[4], d[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    const uint8_t* p = b + r * row_bytes;
    a[r] = tail ? _mm512_maskz_loadu_epi8(ma, p) : _mm512_loadu_si512(p);
    const __m512i c = tail ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi8(0xFF, p + 64);
    const __m512i v = _mm512_permutex2var_epi16(a[r], idx_qs, c);
    const __m512i t = _mm512_dpbusd_epi32(ib, _mm512_and_si512(v, m0f), xlo);
    d[r] = _mm512_dpbusd_epi32(t, _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f), xhi);
  }
  const __m512i e01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
  const __m512i e23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
  const __m512i f =
      _mm512_add_epi32(_mm512_unpacklo_epi64(e01, e23), _mm512_unpackhi_epi64(e01, e23));
  const __m512i dw =
      _mm512_mask_blend_epi16(0xCCCCCCCC, _mm512_permutex2var_epi16(a[0], idx_d, a[1]),
                              _mm512_permutex2var_epi16(a[2], idx_d, a[3]));
  const __m512 sc = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(dw)), dxe);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(f), sc, acc);
}

CMLC_QV_INLINE void cmlc_qv_q40_rows(int R, const uint8_t* w, int64_t row_bytes, int64_t nb,
                                     const uint8_t* prep, bool l1, float* y) {
  __m512 acc = _mm512_setzero_ps();  // R = 4: lane 4j + r is row r
  const int64_t full = nb / 4;
  for (int64_t g = 0; g <= full; ++g) {
    const bool tail = g == full;
    if (tail && nb % 4 == 0) break;
    const __mmask64 ma = tail ? (((__mmask64)1 << (18 * (nb % 4))) - 1) : ~(__mmask64)0;
    const uint8_t* p = prep + g * 256;
    const __m512i xlo = _mm512_loadu_si512(p), xhi = _mm512_loadu_si512(p + 64);
    const __m512i ib = _mm512_loadu_si512(p + 128);
    const __m512 dxe = _mm512_loadu_ps(p + 192);
    const uint8_t* b = w + g * 72;
    if (R == 4) cmlc_qv_prefetch(w, row_bytes, 8, g, 72, l1);
    if (R == 4) {
      acc = cmlc_qv_q40_step4(b, row_bytes, tail, ma, xlo, xhi, ib, dxe, acc);
    } else {
      acc = cmlc_qv_q40_step(b, tail, ma, xlo, xhi, ib, dxe, acc);
    }
  }
  if (R == 4) {
    // Sum the four quarters: lane r is then row r.
    const __m256 h =
        _mm256_add_ps(_mm512_castps512_ps256(acc),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
    _mm_storeu_ps(y, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  } else {
    y[0] = _mm512_reduce_add_ps(acc);
  }
}

//===--- Q4_K ---===//

// A zeroed register for a vpdpwssd accumulator, made by a zeroing idiom where it is used (which
// the core resolves without an execution unit) instead of a copy of one shared zero register.
CMLC_QV_INLINE __m512i cmlc_qv_zero(void) {
  __m512i z;
  __asm__ volatile("vpxord %0, %0, %0" : "=v"(z));
  return z;
}

// One super-block of row |b| into |acc| (16 lanes, scales) and |accm| (4 lanes, mins), with
// the activations of prep |p| (|x0|..|x3|: its four 64-byte slots, |bs|: the eight sub-block
// sums, |dx4|: the super-block's activation scale in every lane). The 6-bit scales multiply the
// sub-block dots in integers (vpmaddubsw then vpdpwssd against the scales as words), so the
// super-block takes one conversion and one FMA for all eight sub-blocks; the mins' share
// (dmin dx sum_j m_j sum xq_j) is one vpmaddwd on xmm.
CMLC_QV_INLINE void cmlc_qv_q4k_step(const uint8_t* b, __m512i x0, __m512i x1, __m512i x2,
                                     __m512i x3, __m128i bs, __m128 dx4, __m512* acc,
                                     __m128* accm) {
  const __m512i m0f = _mm512_set1_epi8(15);
  // Bytes 0-15 of the block as dwords [d | dmin, u0, u1, u2] (u: scale bytes 0-3, 4-7, 8-11).
  // The eight 6-bit scales and mins (core/quant_blocks.h's cml__qb_scale_min_k4, all at once):
  // sub-blocks 0-3 in the low six bits of u0 (scales) and u1 (mins); 4-7 in the low (scales)
  // and high (mins) nibbles of u2 with the top two bits of u0 or u1 above them. Bytes of the
  // result: scales 0-7, mins 0-7.
  const __m128i raw = _mm_loadu_si128((const __m128i*)b);
  const __m128i lo = _mm_srlv_epi32(_mm_shuffle_epi32(raw, _MM_SHUFFLE(3, 2, 3, 1)),
                                    _mm_set_epi32(4, 0, 0, 0));  // u0, u2, u1, u2 >> 4
  const __m128i hi = _mm_srli_epi32(_mm_shuffle_epi32(raw, _MM_SHUFFLE(2, 2, 1, 1)), 2);
  const __m128i sm = _mm_ternarylogic_epi32(
      _mm_and_si128(lo, _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f)), hi,
      _mm_set_epi32(0x30303030, 0, 0x30303030, 0), 0xF8);  // 0xF8: A | (B & C)
  // The scales as words for the products of each x slot: slot 0 holds sub-blocks 0 (words
  // 0-15) and 2 (words 16-31), slot 1 sub-blocks 1 and 3, slot 2 4 and 6, slot 3 5 and 7
  // (vpshufb: byte index j, then a zero byte).
  const __m512i smz = _mm512_broadcast_i32x4(sm);
#define CMLC_QV_SC(a, c)                                       \
  _mm512_inserti64x4(_mm512_set1_epi16((short)(0xFF00 | (a))), \
                     _mm256_set1_epi16((short)(0xFF00 | (c))), 1)
  const __m512i sc0 = _mm512_shuffle_epi8(smz, CMLC_QV_SC(0, 2));
  const __m512i sc1 = _mm512_shuffle_epi8(smz, CMLC_QV_SC(1, 3));
  const __m512i sc2 = _mm512_shuffle_epi8(smz, CMLC_QV_SC(4, 6));
  const __m512i sc3 = _mm512_shuffle_epi8(smz, CMLC_QV_SC(5, 7));
#undef CMLC_QV_SC
  const __m512i q0 = _mm512_loadu_si512(b + 16), q1 = _mm512_loadu_si512(b + 80);
  // |pairs of q . xq| <= 2 * 15 * 127: no saturation in vpmaddubsw; every integer below is
  // exact (a lane of e sums 8 words of at most 3810 times scales of at most 63: < 2^24). One
  // chain of four vpdpwssd from a zeroing idiom: fewer operations than two chains and an add.
  const __m512i p0 = _mm512_maddubs_epi16(_mm512_and_si512(q0, m0f), x0);
  const __m512i p1 = _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(q0, 4), m0f), x1);
  const __m512i p2 = _mm512_maddubs_epi16(_mm512_and_si512(q1, m0f), x2);
  const __m512i p3 = _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(q1, 4), m0f), x3);
  const __m512i e = _mm512_dpwssd_epi32(
      _mm512_dpwssd_epi32(
          _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(cmlc_qv_zero(), p0, sc0), p1, sc1), p2, sc2),
      p3, sc3);
  // [d dx, dmin dx, -, -] (the other lanes of the conversion are not used).
  const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(raw), dx4);
  *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(e), _mm512_broadcastss_ps(dd), *acc);
  const __m128i mn = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm, sm)), bs);
  *accm = _mm_fnmadd_ps(_mm_cvtepi32_ps(mn), _mm_permute_ps(dd, 0x55), *accm);
}

CMLC_QV_INLINE void cmlc_qv_q4k_rows(int R, const uint8_t* w, int64_t row_bytes, int64_t nsb,
                                     const uint8_t* prep, bool l1, float* y) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  __m128 accm[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* p = prep + s * 320;
    const uint8_t* b = w + s * 144;
    if (R == 4) cmlc_qv_prefetch(w, row_bytes, 16, s, 144, l1);
    const __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64);
    const __m512i x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
    const __m128i bs = _mm_loadu_si128((const __m128i*)(p + 256));
    const __m128 dx4 = _mm_loadu_ps((const float*)(p + 272));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      cmlc_qv_q4k_step(b + r * row_bytes, x0, x1, x2, x3, bs, dx4, &acc[r], &accm[r]);
  }
  for (int r = 0; r < R; ++r) {
    const __m128 m = _mm_add_ps(accm[r], _mm_movehl_ps(accm[r], accm[r]));
    y[r] = _mm512_reduce_add_ps(acc[r]) + _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
  }
}

//===--- Q6_K ---===//

CMLC_QV_INLINE __m512 cmlc_qv_q6k_step(const uint8_t* b, const uint8_t* p, __m512 acc) {
  const __m512i m0f = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  // Per 256-bit half: the shifts that move bits 2u, 2u+1 of qh to bits 4, 5 (u = 0, 1 | 2, 3).
  const __m512i sh01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i sh23 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m512 d = _mm512_set1_ps(_cvtsh_ss((unsigned short)(b[208] | (b[209] << 8))));
  const __m512 s = _mm512_mul_ps(
      _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(b + 192)))), d),
      _mm512_loadu_ps((const float*)(p + 512)));
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m512i l = _mm512_loadu_si512(b + 64 * h);
    const __m512i hh =
        _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(b + 128 + 32 * h)));
    // (l & 15) | hb: 0xEA is (A & B) | C.
    const __m512i q01 =
        _mm512_ternarylogic_epi32(l, m0f, _mm512_and_si512(_mm512_sllv_epi16(hh, sh01), m30), 0xEA);
    const __m512i q23 = _mm512_ternarylogic_epi32(
        _mm512_srli_epi16(l, 4), m0f, _mm512_and_si512(_mm512_srlv_epi16(hh, sh23), m30), 0xEA);
    const __m512i d01 = _mm512_dpbusd_epi32(_mm512_loadu_si512(p + 256 + 128 * h), q01,
                                            _mm512_loadu_si512(p + 128 * h));
    const __m512i d23 = _mm512_dpbusd_epi32(_mm512_loadu_si512(p + 320 + 128 * h), q23,
                                            _mm512_loadu_si512(p + 64 + 128 * h));
    // Lane l of the products of values 64v .. 64v+63 has the scale of 16 values 4v + l/4.
    const __m512i base = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i i01 = _mm512_add_epi32(base, _mm512_set1_epi32(8 * h));
    const __m512i i23 = _mm512_add_epi32(base, _mm512_set1_epi32(8 * h + 4));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d01), _mm512_permutexvar_ps(i01, s), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d23), _mm512_permutexvar_ps(i23, s), acc);
  }
  return acc;
}

CMLC_QV_INLINE void cmlc_qv_q6k_rows(int R, const uint8_t* w, int64_t row_bytes, int64_t nsb,
                                     const uint8_t* prep, bool l1, float* y) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* p = prep + s * 576;
    const uint8_t* b = w + s * 210;
    if (R == 4) cmlc_qv_prefetch(w, row_bytes, 8, s, 210, l1);
    acc0 = cmlc_qv_q6k_step(b, p, acc0);
    if (R == 4) {
      acc1 = cmlc_qv_q6k_step(b + row_bytes, p, acc1);
      acc2 = cmlc_qv_q6k_step(b + 2 * row_bytes, p, acc2);
      acc3 = cmlc_qv_q6k_step(b + 3 * row_bytes, p, acc3);
    }
  }
  y[0] = _mm512_reduce_add_ps(acc0);
  if (R == 4) {
    y[1] = _mm512_reduce_add_ps(acc1);
    y[2] = _mm512_reduce_add_ps(acc2);
    y[3] = _mm512_reduce_add_ps(acc3);
  }
}

// All |rows| rows of |type|: four at a time, then one at a time; |l1| a constant after inlining.
CMLC_QV_INLINE void cmlc_qv_gemv(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes,
                                 int64_t rows, const cmlc_quant_act_t* act, bool l1, float* y) {
  const uint8_t* prep = act->vnni;
  int64_t r = 0;
  switch (type) {
    case CML_GGML_Q4_0:
      for (; r + 4 <= rows; r += 4)
        cmlc_qv_q40_rows(4, w + r * row_bytes, row_bytes, act->k / 32, prep, l1, y + r);
      for (; r < rows; ++r)
        cmlc_qv_q40_rows(1, w + r * row_bytes, row_bytes, act->k / 32, prep, l1, y + r);
      break;
    case CML_GGML_Q4_K:
      for (; r + 4 <= rows; r += 4)
        cmlc_qv_q4k_rows(4, w + r * row_bytes, row_bytes, act->k / 256, prep, l1, y + r);
      for (; r < rows; ++r)
        cmlc_qv_q4k_rows(1, w + r * row_bytes, row_bytes, act->k / 256, prep, l1, y + r);
      break;
    case CML_GGML_Q6_K:
      for (; r + 4 <= rows; r += 4)
        cmlc_qv_q6k_rows(4, w + r * row_bytes, row_bytes, act->k / 256, prep, l1, y + r);
      for (; r < rows; ++r)
        cmlc_qv_q6k_rows(1, w + r * row_bytes, row_bytes, act->k / 256, prep, l1, y + r);
      break;
    default:
      break;
  }
}

CMLC_QV_TARGET void cmlc_quant_gemv_vnni(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes,
                                         int64_t rows, const cmlc_quant_act_t* act, float* y) {
  if (act->prefetch_l1) {
    cmlc_qv_gemv(type, w, row_bytes, rows, act, true, y);
  } else {
    cmlc_qv_gemv(type, w, row_bytes, rows, act, false, y);
  }
}

#endif  // CMLC_HAVE_X86_64
