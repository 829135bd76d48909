// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_body.h: the batch-1 GGML row kernels (GEMV) of every format,
// included once by quant_x86_64_avx2.c and once by quant_x86_64_avx512.c with:
//   CMLC_QB_TARGET   the function target attribute of the including file;
//   CMLC_QB_ZMM      1: the f32 consumer multiplies 16 weights per zmm (else 8 per ymm);
//   CMLC_QB_VNNI     1: the int8 consumer uses vpdpbusd (else vpmaddubsw + vpmaddwd).
//
// Every format is cut into sub-blocks of 32 weights. A decoder turns one sub-block into 32 int8
// integers q in a ymm plus, per half of 16 weights, a float scale a and offset c, such that the
// weight is a * q + c exactly as ggml's dequantizer computes it (up to the order of the float
// products). Two consumers take the sub-block, in registers (nothing is stored):
//   f32:  sum a * (q . x) over the halves, with x the f32 activations (widened, converted, FMA);
//   int8: the activations quantized per 32 values (xq, scale dx): the integer dot q . xq
//         (vpdpbusd on |q| and xq with q's sign), times a * dx per half.
// Offsets multiply the sums of the activations per 16 values (xs16), computed once per call.
// Four weight rows run together, so that each activation vector is loaded once for four rows.
#include <immintrin.h>

// One decoded sub-block: 32 integers and, per half, the scale and offset of weight = a*q + c.
typedef struct cmlc_qb_sub_t {
  __m256i q;
  float a0, a1, c0, c1;
} cmlc_qb_sub_t;

static inline CMLC_QB_TARGET float cmlc_qb_half(const uint8_t* p) {
  return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

static inline CMLC_QB_TARGET __m256i cmlc_qb_load(const uint8_t* p) {
  return _mm256_loadu_si256((const __m256i*)p);
}

// The 32 nibbles of 16 bytes at |p| in ggml's order (low nibbles, then high nibbles).
static inline CMLC_QB_TARGET __m256i cmlc_qb_nibbles(const uint8_t* p) {
  __m128i b = _mm_loadu_si128((const __m128i*)p);
  __m128i m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

// Byte i = 16 where bit i of |bits| is set, else 0.
static inline CMLC_QB_TARGET __m256i cmlc_qb_bit16(uint32_t bits) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                        2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);  // byte i: 1 << i%8
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
  v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
  return _mm256_and_si256(v, _mm256_set1_epi8(16));
}

// Whether weights of |type| carry an offset (a min) besides the scale.
static inline bool cmlc_qb_has_offset(cml_ggml_type_t type) {
  return type == CML_GGML_Q4_1 || type == CML_GGML_Q5_1 || type == CML_GGML_Q2_K ||
         type == CML_GGML_Q4_K || type == CML_GGML_Q5_K;
}

// Whether both halves of a sub-block share one scale and offset (all but Q2_K, Q3_K, Q6_K).
static inline bool cmlc_qb_one_scale(cml_ggml_type_t type) {
  return type != CML_GGML_Q2_K && type != CML_GGML_Q3_K && type != CML_GGML_Q6_K;
}

// Sub-block |s| (0 .. values/32 - 1) of the block of |type| at |b|.
static inline __attribute__((always_inline)) CMLC_QB_TARGET cmlc_qb_sub_t
cmlc_qb_decode(cml_ggml_type_t type, const uint8_t* b, int s) {
  cmlc_qb_sub_t r;
  r.c0 = r.c1 = 0;
  switch (type) {
    case CML_GGML_Q4_0:
      r.q = _mm256_sub_epi8(cmlc_qb_nibbles(b + 2), _mm256_set1_epi8(8));
      r.a0 = r.a1 = cmlc_qb_half(b);
      break;
    case CML_GGML_Q4_1:
      r.q = cmlc_qb_nibbles(b + 4);
      r.a0 = r.a1 = cmlc_qb_half(b);
      r.c0 = r.c1 = cmlc_qb_half(b + 2);
      break;
    case CML_GGML_Q5_0: {
      uint32_t qh;
      memcpy(&qh, b + 2, 4);
      r.q = _mm256_sub_epi8(_mm256_or_si256(cmlc_qb_nibbles(b + 6), cmlc_qb_bit16(qh)),
                            _mm256_set1_epi8(16));
      r.a0 = r.a1 = cmlc_qb_half(b);
      break;
    }
    case CML_GGML_Q5_1: {
      uint32_t qh;
      memcpy(&qh, b + 4, 4);
      r.q = _mm256_or_si256(cmlc_qb_nibbles(b + 8), cmlc_qb_bit16(qh));
      r.a0 = r.a1 = cmlc_qb_half(b);
      r.c0 = r.c1 = cmlc_qb_half(b + 2);
      break;
    }
    case CML_GGML_Q8_0:
      r.q = cmlc_qb_load(b + 2);
      r.a0 = r.a1 = cmlc_qb_half(b);
      break;
    case CML_GGML_IQ4_NL: {
      const __m256i table = _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25,
                                             38, 53, 69, 89, 113, -127, -104, -83, -65, -49, -35,
                                             -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
      r.q = _mm256_shuffle_epi8(table, cmlc_qb_nibbles(b + 2));
      r.a0 = r.a1 = cmlc_qb_half(b);
      break;
    }
    case CML_GGML_Q2_K: {
      const int n = s / 4, j = s % 4;
      const float d = cmlc_qb_half(b + 80), dmin = cmlc_qb_half(b + 82);
      r.q = _mm256_and_si256(_mm256_srli_epi16(cmlc_qb_load(b + 16 + 32 * n), 2 * j),
                             _mm256_set1_epi8(3));
      const uint8_t s0 = b[8 * n + 2 * j], s1 = b[8 * n + 2 * j + 1];
      r.a0 = d * (float)(s0 & 15);
      r.a1 = d * (float)(s1 & 15);
      r.c0 = -(dmin * (float)(s0 >> 4));
      r.c1 = -(dmin * (float)(s1 >> 4));
      break;
    }
    case CML_GGML_Q3_K: {
      const int n = s / 4, j = s % 4;
      const uint8_t* sb = b + 96;
      const int i0 = 8 * n + 2 * j, i1 = i0 + 1;
      const int l0 = i0 < 8 ? (sb[i0] & 15) : (sb[i0 - 8] >> 4);
      const int l1 = i1 < 8 ? (sb[i1] & 15) : (sb[i1 - 8] >> 4);
      const int h0 = (sb[8 + i0 % 4] >> (2 * (i0 / 4))) & 3;
      const int h1 = (sb[8 + i1 % 4] >> (2 * (i1 / 4))) & 3;
      const float d = cmlc_qb_half(b + 108);
      __m256i q = _mm256_and_si256(_mm256_srli_epi16(cmlc_qb_load(b + 32 + 32 * n), 2 * j),
                                   _mm256_set1_epi8(3));
      __m256i hbit = _mm256_set1_epi8((char)(1 << (4 * n + j)));
      __m256i unset =
          _mm256_cmpeq_epi8(_mm256_and_si256(cmlc_qb_load(b), hbit), _mm256_setzero_si256());
      r.q = _mm256_sub_epi8(q, _mm256_and_si256(unset, _mm256_set1_epi8(4)));
      r.a0 = d * (float)((l0 | (h0 << 4)) - 32);
      r.a1 = d * (float)((l1 | (h1 << 4)) - 32);
      break;
    }
    case CML_GGML_Q4_K:
    case CML_GGML_Q5_K: {
      const bool five = type == CML_GGML_Q5_K;
      const int c = s / 2, h = s % 2;
      const float d = cmlc_qb_half(b), dmin = cmlc_qb_half(b + 2);
      uint8_t sc, mn;
      cml__qb_scale_min_k4(s, b + 4, &sc, &mn);
      __m256i q =
          _mm256_and_si256(_mm256_srli_epi16(cmlc_qb_load(b + (five ? 48 : 16) + 32 * c), 4 * h),
                           _mm256_set1_epi8(15));
      if (five) {
        __m256i hb =
            _mm256_and_si256(_mm256_srli_epi16(cmlc_qb_load(b + 16), s), _mm256_set1_epi8(1));
        q = _mm256_or_si256(q, _mm256_slli_epi16(hb, 4));
      }
      r.q = q;
      r.a0 = r.a1 = d * (float)sc;
      r.c0 = r.c1 = -(dmin * (float)mn);
      break;
    }
    case CML_GGML_Q6_K: {
      const int n = s / 4, u = s % 4;
      const int8_t* sc = (const int8_t*)(b + 192);
      const float d = cmlc_qb_half(b + 208);
      __m256i lo =
          _mm256_and_si256(_mm256_srli_epi16(cmlc_qb_load(b + 64 * n + 32 * (u & 1)), 4 * (u >> 1)),
                           _mm256_set1_epi8(15));
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(cmlc_qb_load(b + 128 + 32 * n), 2 * u),
                                    _mm256_set1_epi8(3));
      r.q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), _mm256_set1_epi8(32));
      r.a0 = d * (float)sc[8 * n + 2 * u];
      r.a1 = d * (float)sc[8 * n + 2 * u + 1];
      break;
    }
    default:
      r.q = _mm256_setzero_si256();
      r.a0 = r.a1 = 0;
      break;
  }
  return r;
}

// The eight sub-block scales a = d * sc and offsets c = -(dmin * m) of a Q4_K / Q5_K block at
// |b|, unpacked from its 12 scale bytes for all eight sub-blocks at once (four 32-bit masks and
// shifts instead of cml__qb_scale_min_k4 per sub-block and row), with the same conversions and
// products as cmlc_qb_decode, so the values are the same bits. Done once per block and row.
typedef struct cmlc_qb_kscales_t {
  float a[8], c[8];
} cmlc_qb_kscales_t;

static inline bool cmlc_qb_kquant(cml_ggml_type_t type) {
  return type == CML_GGML_Q4_K || type == CML_GGML_Q5_K;
}

static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_kscales(
    const uint8_t* b, cmlc_qb_kscales_t* out) {
  uint32_t u0, u1, u2;  // scale bytes 0-3, 4-7, 8-11
  memcpy(&u0, b + 4, 4);
  memcpy(&u1, b + 8, 4);
  memcpy(&u2, b + 12, 4);
  // Sub-blocks 0-3: the low six bits of bytes 0-3 (scales) and 4-7 (mins); 4-7: the nibbles of
  // bytes 8-11 with the top two bits of bytes 0-3 (scales) or 4-7 (mins) above them.
  const uint32_t sc_lo = u0 & 0x3F3F3F3Fu, m_lo = u1 & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (u2 & 0x0F0F0F0Fu) | (((u0 >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((u2 >> 4) & 0x0F0F0F0Fu) | (((u1 >> 6) & 0x03030303u) << 4);
  const __m128i v = _mm_setr_epi32((int)sc_lo, (int)sc_hi, (int)m_lo, (int)m_hi);
  const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
  const __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
  _mm256_storeu_ps(out->a, _mm256_mul_ps(_mm256_set1_ps(cmlc_qb_half(b)), sc));
  _mm256_storeu_ps(out->c, _mm256_mul_ps(_mm256_set1_ps(-cmlc_qb_half(b + 2)), mn));
}

static inline CMLC_QB_TARGET float cmlc_qb_hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#if CMLC_QB_ZMM
typedef __m512 cmlc_qb_vf;
#define CMLC_QB_VZERO() _mm512_setzero_ps()
#define CMLC_QB_VADD(a, b) _mm512_add_ps(a, b)
#define CMLC_QB_VSUM(v) _mm512_reduce_add_ps(v)
#else
typedef __m256 cmlc_qb_vf;
#define CMLC_QB_VZERO() _mm256_setzero_ps()
#define CMLC_QB_VADD(a, b) _mm256_add_ps(a, b)
#define CMLC_QB_VSUM(v) cmlc_qb_hsum8(v)
#endif

#if CMLC_QB_ZMM
// Whether the f32 consumer decodes |type| straight to floats: formats whose 32 integers of a
// sub-block are 4-bit indices (16 bytes of nibbles, or nibbles of 32 bytes) with one scale and
// offset per sub-block. vpermps looks each index up in a 16-float table (it reads the low four
// bits of each lane only, so no masking), which replaces the sign extension and int-to-float
// conversion of the generic consumer: about 1.4x fewer vector operations per weight.
static inline bool cmlc_qb_table4(cml_ggml_type_t type) {
  return type == CML_GGML_Q4_0 || type == CML_GGML_IQ4_NL || type == CML_GGML_Q4_1 ||
         type == CML_GGML_Q4_K;
}

// The weights (in units of the sub-block's scale) of sub-block |s| of the block at |b|:
// values 0-15 in |lo|, 16-31 in |hi|; the same integers as cmlc_qb_decode's q.
static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_decode_f32(
    cml_ggml_type_t type, const uint8_t* b, int s, __m512* lo, __m512* hi) {
  __m512 table;
  __m512i z0, z1;
  if (type == CML_GGML_Q4_K) {
    const uint8_t* p = b + 16 + 32 * (s / 2);
    z0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p));
    z1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p + 16)));
    if (s % 2) {
      z0 = _mm512_srli_epi32(z0, 4);
      z1 = _mm512_srli_epi32(z1, 4);
    }
  } else {
    z0 = _mm512_cvtepu8_epi32(
        _mm_loadu_si128((const __m128i*)(b + (type == CML_GGML_Q4_1 ? 4 : 2))));
    z1 = _mm512_srli_epi32(z0, 4);
  }
  if (type == CML_GGML_Q4_0) {
    table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  } else if (type == CML_GGML_IQ4_NL) {
    table =
        _mm512_setr_ps(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
  } else {
    table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  *lo = _mm512_permutexvar_ps(z0, table);
  *hi = _mm512_permutexvar_ps(z1, table);
}
#endif

// f32 consumer: acc0 += a0 * (q[0..15] . x[0..15]), acc1 += a1 * (q[16..31] . x[16..31]);
// for the table formats (one scale per sub-block) acc0 += a0 * (q . x) over all 32.
static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_f32(
    cml_ggml_type_t type, const uint8_t* blk, int s, const cmlc_qb_sub_t* d, const float* x,
    cmlc_qb_vf* acc0, cmlc_qb_vf* acc1) {
#if CMLC_QB_ZMM
  if (cmlc_qb_table4(type)) {
    __m512 qlo, qhi;
    cmlc_qb_decode_f32(type, blk, s, &qlo, &qhi);
    const __m512 p =
        _mm512_fmadd_ps(qhi, _mm512_loadu_ps(x + 16), _mm512_mul_ps(qlo, _mm512_loadu_ps(x)));
    *acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d->a0), p, *acc0);
    return;
  }
#else
  (void)type, (void)blk, (void)s;
#endif
  __m128i lo = _mm256_castsi256_si128(d->q), hi = _mm256_extracti128_si256(d->q, 1);
#if CMLC_QB_ZMM
  __m512 p0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), _mm512_loadu_ps(x));
  __m512 p1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), _mm512_loadu_ps(x + 16));
  *acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d->a0), p0, *acc0);
  *acc1 = _mm512_fmadd_ps(_mm512_set1_ps(d->a1), p1, *acc1);
#else
  __m256 p0 = _mm256_fmadd_ps(
      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), _mm256_loadu_ps(x + 8),
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), _mm256_loadu_ps(x)));
  __m256 p1 = _mm256_fmadd_ps(
      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), _mm256_loadu_ps(x + 24),
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), _mm256_loadu_ps(x + 16)));
  *acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d->a0), p0, *acc0);
  *acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d->a1), p1, *acc1);
#endif
}

// int8 consumer: acc += (a0 * dx lanes 0-3, a1 * dx lanes 4-7) * (q . xq per 4 values). The
// integer products take q unsigned and xq signed: formats with an offset have q >= 0 already;
// the others move q's sign onto xq (|xq| <= 127, so no overflow).
static inline __attribute__((always_inline)) CMLC_QB_TARGET __m256
cmlc_qb_i8(cml_ggml_type_t type, const cmlc_qb_sub_t* d, __m256i xq, float dx, __m256 acc) {
  __m256i ux = d->q, sx = xq;
  if (!cmlc_qb_has_offset(type)) {
    ux = _mm256_abs_epi8(d->q);
    sx = _mm256_sign_epi8(xq, d->q);
  }
#if CMLC_QB_VNNI
  __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ux, sx);
#else
  __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(ux, sx), _mm256_set1_epi16(1));
#endif
  __m256 sc = cmlc_qb_one_scale(type)
                  ? _mm256_set1_ps(d->a0 * dx)
                  : _mm256_set_m128(_mm_set1_ps(d->a1 * dx), _mm_set1_ps(d->a0 * dx));
  return _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(dot), acc);
}

// The offsets' share of one sub-block: c0 * (sum of x over its first half) + c1 * (second).
#define CMLC_QB_TAIL(d)                                                           \
  (cmlc_qb_one_scale(type) ? (d).c0 * (act->xs16[2 * sb] + act->xs16[2 * sb + 1]) \
                           : (d).c0 * act->xs16[2 * sb] + (d).c1 * act->xs16[2 * sb + 1])

// Prefetches the group of four rows after the next (the 4 * |row_bytes| starting 8 rows after
// |w|), a 4 * |bpb| slice per block |b| of the current group, so that it arrives linearly, two
// groups ahead (18-35 KB at K = 4096; one group ahead and four were slower in bench_quant).
// Rows are short streams (2-4 KB at K = 4096) that the hardware prefetchers, which stop at
// 4 KiB pages, train on too late. Past the matrix's end a prefetch is harmless. The lines go
// to L2 (prefetcht1), not L1, unless |l1| (the activation row's prefetch_l1: an L1 data cache
// of at least CMLC_QUANT_PREFETCH_L1_MIN): two groups of Q8_0 or Q6_K rows (35 KB) do not fit
// Zen 4's 32 KiB L1, and prefetching them there evicted lines before their use (Q8_0 int8
// streamed at 45% of the read probe with prefetcht0, 86% with prefetcht1; bench/README.md,
// "Quantized GEMV"). Into Zen 5's 48 KiB L1 the Q8_0 int8 kernel streamed 8-10% faster.
static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_prefetch(
    const uint8_t* w, int64_t row_bytes, int64_t b, int bpb, bool l1) {
  const uint8_t* p = w + 8 * row_bytes + b * 4 * bpb;
  if (l1) {
#pragma GCC unroll 16
    for (int l = 0; l < 4 * bpb; l += 64) _mm_prefetch((const char*)(p + l), _MM_HINT_T0);
  } else {
#pragma GCC unroll 16
    for (int l = 0; l < 4 * bpb; l += 64) _mm_prefetch((const char*)(p + l), _MM_HINT_T1);
  }
}

// One step of row |r|: decode sub-block |s| of block |b| and feed it to a consumer. The rows
// are written out (not looped over) so that their accumulators stay in registers.
#define CMLC_QB_I8_STEP(r)                                                        \
  do {                                                                            \
    cmlc_qb_sub_t d = cmlc_qb_decode(type, w + (r)*row_bytes + b * bpb, s);       \
    if (cmlc_qb_kquant(type)) d.a0 = d.a1 = ks##r.a[s], d.c0 = d.c1 = ks##r.c[s]; \
    acc##r = cmlc_qb_i8(type, &d, xq, dx, acc##r);                                \
    if (off && !cmlc_qb_kquant(type)) tail##r += CMLC_QB_TAIL(d);                 \
  } while (0)
#define CMLC_QB_F32_STEP(r)                                                       \
  do {                                                                            \
    const uint8_t* blk = w + (r)*row_bytes + b * bpb;                             \
    cmlc_qb_sub_t d = cmlc_qb_decode(type, blk, s);                               \
    if (cmlc_qb_kquant(type)) d.a0 = d.a1 = ks##r.a[s], d.c0 = d.c1 = ks##r.c[s]; \
    cmlc_qb_f32(type, blk, s, &d, x, &acc##r, &bcc##r);                           \
    if (off && !cmlc_qb_kquant(type)) tail##r += CMLC_QB_TAIL(d);                 \
  } while (0)

// The k-quant scales of block |b| of each row (cmlc_qb_kscales; declared for every format,
// filled and read only for Q4_K and Q5_K).
#define CMLC_QB_KSCALES()                                 \
  cmlc_qb_kscales_t ks0, ks1, ks2, ks3;                   \
  if (cmlc_qb_kquant(type)) {                             \
    cmlc_qb_kscales(w + b * bpb, &ks0);                   \
    if (R == 4) {                                         \
      cmlc_qb_kscales(w + row_bytes + b * bpb, &ks1);     \
      cmlc_qb_kscales(w + 2 * row_bytes + b * bpb, &ks2); \
      cmlc_qb_kscales(w + 3 * row_bytes + b * bpb, &ks3); \
    }                                                     \
  }                                                       \
  (void)ks1, (void)ks2, (void)ks3;                        \
  CMLC_QB_KTAIL()

// The k-quants' offsets for block |b| of each row, one vector FMA per row and block instead of
// one scalar product per sub-block: tv##r += c[0..7] * (sums of x per sub-block of 32), the
// sums made from xs16 once per block for the four rows (hadd gives sub-blocks 0,1,4,5,2,3,6,7;
// the 64-bit permutation puts them in order).
#define CMLC_QB_KTAIL()                                                                         \
  if (cmlc_qb_kquant(type)) {                                                                   \
    const float* xs = act->xs16 + 16 * b;                                                       \
    const __m256 x32 = _mm256_castpd_ps(_mm256_permute4x64_pd(                                  \
        _mm256_castps_pd(_mm256_hadd_ps(_mm256_loadu_ps(xs), _mm256_loadu_ps(xs + 8))), 0xD8)); \
    tv0 = _mm256_fmadd_ps(_mm256_loadu_ps(ks0.c), x32, tv0);                                    \
    if (R == 4) {                                                                               \
      tv1 = _mm256_fmadd_ps(_mm256_loadu_ps(ks1.c), x32, tv1);                                  \
      tv2 = _mm256_fmadd_ps(_mm256_loadu_ps(ks2.c), x32, tv2);                                  \
      tv3 = _mm256_fmadd_ps(_mm256_loadu_ps(ks3.c), x32, tv3);                                  \
    }                                                                                           \
  }

// y[0..3] = rows 0..3 (|row_bytes| apart) of |type| at |w| times the activations (R = 4), or
// y[0] = row 0 (R = 1).
static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_rows(
    cml_ggml_type_t type, int R, const uint8_t* w, int64_t row_bytes, const cmlc_quant_act_t* act,
    float* y) {
  const int vpb = cml__qb_values[type], bpb = cml__qb_bytes[type], subs = vpb / 32;
  const int64_t nb = act->k / vpb;
  const bool off = cmlc_qb_has_offset(type);
  float tail0 = 0, tail1 = 0, tail2 = 0, tail3 = 0;
  __m256 tv0 = _mm256_setzero_ps(), tv1 = tv0, tv2 = tv0, tv3 = tv0;  // CMLC_QB_KTAIL
  if (act->xq) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t b = 0; b < nb; ++b) {
      if (R == 4) cmlc_qb_prefetch(w, row_bytes, b, bpb, act->prefetch_l1);
      CMLC_QB_KSCALES();
#pragma GCC unroll 8
      for (int s = 0; s < subs; ++s) {
        const int64_t sb = b * subs + s;
        const __m256i xq = _mm256_loadu_si256((const __m256i*)(act->xq + 32 * sb));
        const float dx = act->xd[sb];
        CMLC_QB_I8_STEP(0);
        if (R == 4) {
          CMLC_QB_I8_STEP(1);
          CMLC_QB_I8_STEP(2);
          CMLC_QB_I8_STEP(3);
        }
      }
    }
    if (cmlc_qb_kquant(type)) {
      tail0 += cmlc_qb_hsum8(tv0);
      tail1 += cmlc_qb_hsum8(tv1);
      tail2 += cmlc_qb_hsum8(tv2);
      tail3 += cmlc_qb_hsum8(tv3);
    }
    y[0] = cmlc_qb_hsum8(acc0) + tail0;
    if (R == 4) {
      y[1] = cmlc_qb_hsum8(acc1) + tail1;
      y[2] = cmlc_qb_hsum8(acc2) + tail2;
      y[3] = cmlc_qb_hsum8(acc3) + tail3;
    }
    return;
  }
  cmlc_qb_vf acc0 = CMLC_QB_VZERO(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  cmlc_qb_vf bcc0 = acc0, bcc1 = acc0, bcc2 = acc0, bcc3 = acc0;
  for (int64_t b = 0; b < nb; ++b) {
    if (R == 4) cmlc_qb_prefetch(w, row_bytes, b, bpb, act->prefetch_l1);
    CMLC_QB_KSCALES();
#pragma GCC unroll 8
    for (int s = 0; s < subs; ++s) {
      const int64_t sb = b * subs + s;
      const float* x = act->x + 32 * sb;
      CMLC_QB_F32_STEP(0);
      if (R == 4) {
        CMLC_QB_F32_STEP(1);
        CMLC_QB_F32_STEP(2);
        CMLC_QB_F32_STEP(3);
      }
    }
  }
  if (cmlc_qb_kquant(type)) {
    tail0 += cmlc_qb_hsum8(tv0);
    tail1 += cmlc_qb_hsum8(tv1);
    tail2 += cmlc_qb_hsum8(tv2);
    tail3 += cmlc_qb_hsum8(tv3);
  }
  y[0] = CMLC_QB_VSUM(CMLC_QB_VADD(acc0, bcc0)) + tail0;
  if (R == 4) {
    y[1] = CMLC_QB_VSUM(CMLC_QB_VADD(acc1, bcc1)) + tail1;
    y[2] = CMLC_QB_VSUM(CMLC_QB_VADD(acc2, bcc2)) + tail2;
    y[3] = CMLC_QB_VSUM(CMLC_QB_VADD(acc3, bcc3)) + tail3;
  }
}

// All |rows| rows of one format: four at a time, then one at a time.
static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_gemv_type(
    cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
    const cmlc_quant_act_t* act, float* y) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) cmlc_qb_rows(type, 4, w + r * row_bytes, row_bytes, act, y + r);
  for (; r < rows; ++r) cmlc_qb_rows(type, 1, w + r * row_bytes, row_bytes, act, y + r);
}

// The dispatcher on the format: each case is its own specialized copy of the loops.
static CMLC_QB_TARGET void cmlc_qb_gemv(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes,
                                        int64_t rows, const cmlc_quant_act_t* act, float* y) {
  switch (type) {
#define CMLC_QB_CASE(t)                               \
  case t:                                             \
    cmlc_qb_gemv_type(t, w, row_bytes, rows, act, y); \
    break;
    CMLC_QB_CASE(CML_GGML_Q4_0)
    CMLC_QB_CASE(CML_GGML_Q8_0)
    CMLC_QB_CASE(CML_GGML_IQ4_NL)
    CMLC_QB_CASE(CML_GGML_Q2_K)
    CMLC_QB_CASE(CML_GGML_Q3_K)
    CMLC_QB_CASE(CML_GGML_Q4_K)
    CMLC_QB_CASE(CML_GGML_Q5_K)
    CMLC_QB_CASE(CML_GGML_Q6_K)
    CMLC_QB_CASE(CML_GGML_Q4_1)
    CMLC_QB_CASE(CML_GGML_Q5_0)
    CMLC_QB_CASE(CML_GGML_Q5_1)
#undef CMLC_QB_CASE
    default:
      break;
  }
}

//===--- batch N: rows decoded to floats for the panel GEMMs ---===//

static inline __attribute__((always_inline)) CMLC_QB_TARGET void cmlc_qb_decode_row_type(
    cml_ggml_type_t type, const uint8_t* row, int64_t k, float* out) {
  const int vpb = cml__qb_values[type], bpb = cml__qb_bytes[type], subs = vpb / 32;
  for (int64_t b = 0; b < k / vpb; ++b) {
#pragma GCC unroll 8
    for (int s = 0; s < subs; ++s) {
      const cmlc_qb_sub_t d = cmlc_qb_decode(type, row + b * bpb, s);
      float* o = out + b * vpb + 32 * s;
      __m128i lo = _mm256_castsi256_si128(d.q), hi = _mm256_extracti128_si256(d.q, 1);
#if CMLC_QB_ZMM
      const __m512 a0 = _mm512_set1_ps(d.a0), a1 = _mm512_set1_ps(d.a1);
      const __m512 c0 = _mm512_set1_ps(d.c0), c1 = _mm512_set1_ps(d.c1);
      _mm512_storeu_ps(
          o, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), a0), c0));
      _mm512_storeu_ps(
          o + 16,
          _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), a1), c1));
#else
      const __m256 a0 = _mm256_set1_ps(d.a0), a1 = _mm256_set1_ps(d.a1);
      const __m256 c0 = _mm256_set1_ps(d.c0), c1 = _mm256_set1_ps(d.c1);
      _mm256_storeu_ps(
          o, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), a0), c0));
      _mm256_storeu_ps(
          o + 8,
          _mm256_add_ps(
              _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), a0),
              c0));
      _mm256_storeu_ps(
          o + 16,
          _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), a1), c1));
      _mm256_storeu_ps(
          o + 24,
          _mm256_add_ps(
              _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), a1),
              c1));
#endif
    }
  }
}

// One weight row of |type| (|k| values) decoded to |out|: a * q + c per value (ggml's values up
// to the rounding of the product, which ggml computes in other orders per format).
static CMLC_QB_TARGET void cmlc_qb_decode_row(cml_ggml_type_t type, const uint8_t* row, int64_t k,
                                              float* out) {
  switch (type) {
#define CMLC_QB_CASE(t)                      \
  case t:                                    \
    cmlc_qb_decode_row_type(t, row, k, out); \
    break;
    CMLC_QB_CASE(CML_GGML_Q4_0)
    CMLC_QB_CASE(CML_GGML_Q8_0)
    CMLC_QB_CASE(CML_GGML_IQ4_NL)
    CMLC_QB_CASE(CML_GGML_Q2_K)
    CMLC_QB_CASE(CML_GGML_Q3_K)
    CMLC_QB_CASE(CML_GGML_Q4_K)
    CMLC_QB_CASE(CML_GGML_Q5_K)
    CMLC_QB_CASE(CML_GGML_Q6_K)
    CMLC_QB_CASE(CML_GGML_Q4_1)
    CMLC_QB_CASE(CML_GGML_Q5_0)
    CMLC_QB_CASE(CML_GGML_Q5_1)
#undef CMLC_QB_CASE
    default:
      memset(out, 0, sizeof(float) * (size_t)k);
      break;
  }
}
