// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_avx2.c: AVX2 + FMA (+ F16C) f32 elementwise and reduction
// kernels: the 8-lane vector layer for elementwise_x86_64_body.h. Masks are vectors of
// all-ones / all-zeros lanes. Only reached when options->isa is CMLC_ISA_AVX2 or better.
#include "backends/c/kernels/generic/elementwise_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_EW_TARGET __attribute__((target("avx2,fma,f16c")))
#define CMLC_EW_FN(name) cmlc_ew_avx2_##name

enum { CMLC_V_W = 8 };
typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm;

CMLC_EW_TARGET static inline vf v_load(const float* p) { return _mm256_loadu_ps(p); }
CMLC_EW_TARGET static inline void v_store(float* p, vf v) { _mm256_storeu_ps(p, v); }
CMLC_EW_TARGET static inline vf v_set1(float x) { return _mm256_set1_ps(x); }
CMLC_EW_TARGET static inline vf v_zero(void) { return _mm256_setzero_ps(); }
CMLC_EW_TARGET static inline vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
CMLC_EW_TARGET static inline vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
CMLC_EW_TARGET static inline vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
CMLC_EW_TARGET static inline vf v_div(vf a, vf b) { return _mm256_div_ps(a, b); }
CMLC_EW_TARGET static inline vf v_fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
CMLC_EW_TARGET static inline vf v_sqrt(vf a) { return _mm256_sqrt_ps(a); }
// x86 semantics: the second operand when either is NaN or both are zero.
CMLC_EW_TARGET static inline vf v_minx(vf a, vf b) { return _mm256_min_ps(a, b); }
CMLC_EW_TARGET static inline vf v_maxx(vf a, vf b) { return _mm256_max_ps(a, b); }
CMLC_EW_TARGET static inline vf v_and(vf a, vf b) { return _mm256_and_ps(a, b); }
CMLC_EW_TARGET static inline vf v_or(vf a, vf b) { return _mm256_or_ps(a, b); }
CMLC_EW_TARGET static inline vf v_xor(vf a, vf b) { return _mm256_xor_ps(a, b); }
CMLC_EW_TARGET static inline vf v_andnot(vf a, vf b) { return _mm256_andnot_ps(a, b); }
CMLC_EW_TARGET static inline vf v_round(vf a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
CMLC_EW_TARGET static inline vf v_floor(vf a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
CMLC_EW_TARGET static inline vf v_ceil(vf a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}
CMLC_EW_TARGET static inline vi v_cvt_i32(vf a) { return _mm256_cvtps_epi32(a); }
CMLC_EW_TARGET static inline vi v_cvtt_i32(vf a) { return _mm256_cvttps_epi32(a); }
CMLC_EW_TARGET static inline vf v_cvt_f32(vi a) { return _mm256_cvtepi32_ps(a); }
CMLC_EW_TARGET static inline vi v_cast_i(vf a) { return _mm256_castps_si256(a); }
CMLC_EW_TARGET static inline vf v_cast_f(vi a) { return _mm256_castsi256_ps(a); }
CMLC_EW_TARGET static inline vi v_i_set1(int32_t x) { return _mm256_set1_epi32(x); }
CMLC_EW_TARGET static inline vi v_i_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
CMLC_EW_TARGET static inline vi v_i_sub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
CMLC_EW_TARGET static inline vi v_i_and(vi a, vi b) { return _mm256_and_si256(a, b); }
CMLC_EW_TARGET static inline vi v_i_or(vi a, vi b) { return _mm256_or_si256(a, b); }
CMLC_EW_TARGET static inline vi v_i_sra1(vi a) { return _mm256_srai_epi32(a, 1); }
CMLC_EW_TARGET static inline vi v_i_shl23(vi a) { return _mm256_slli_epi32(a, 23); }
CMLC_EW_TARGET static inline vi v_i_srl23(vi a) { return _mm256_srli_epi32(a, 23); }
CMLC_EW_TARGET static inline vi v_i_shl16(vi a) { return _mm256_slli_epi32(a, 16); }
CMLC_EW_TARGET static inline vi v_i_srl16(vi a) { return _mm256_srli_epi32(a, 16); }
CMLC_EW_TARGET static inline vm v_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
CMLC_EW_TARGET static inline vm v_neq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
CMLC_EW_TARGET static inline vm v_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
CMLC_EW_TARGET static inline vm v_le(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
CMLC_EW_TARGET static inline vm v_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
CMLC_EW_TARGET static inline vm v_ge(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
CMLC_EW_TARGET static inline vm v_unord(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
// Bit i set where lane i of |m| is.
CMLC_EW_TARGET static inline uint32_t v_mask_bits(vm m) { return (uint32_t)_mm256_movemask_ps(m); }
CMLC_EW_TARGET static inline vf v_sel(vm m, vf t, vf f) { return _mm256_blendv_ps(f, t, m); }
CMLC_EW_TARGET static inline vi v_i_sel(vm m, vi t, vi f) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(f), _mm256_castsi256_ps(t), m));
}
// Writes 8 bytes of 0/1.
CMLC_EW_TARGET static inline void v_store_bool(uint8_t* p, vm m) {
  const __m256i b = _mm256_srli_epi32(_mm256_castps_si256(m), 31);
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  _mm_storel_epi64((__m128i*)p, _mm_packs_epi16(w, w));
}
// Reads 8 bytes; nonzero is true.
CMLC_EW_TARGET static inline vm v_load_bool(const uint8_t* p) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p));
  const __m256i z = _mm256_cmpeq_epi32(c, _mm256_setzero_si256());
  return _mm256_castsi256_ps(_mm256_xor_si256(z, _mm256_set1_epi32(-1)));
}
CMLC_EW_TARGET static inline vm v_load_bool_scalar(uint8_t c) {
  return _mm256_castsi256_ps(_mm256_set1_epi32(c ? -1 : 0));
}
CMLC_EW_TARGET static inline vi v_load_u16(const uint16_t* p) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
}
// Stores the low 16 bits of each lane (the lanes hold values below 2^16).
CMLC_EW_TARGET static inline void v_store_u16(uint16_t* p, vi v) {
  const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
  _mm_storeu_si128((__m128i*)p, _mm_packus_epi32(lo, hi));
}
// An f16 store and load in registers: rounded to nearest even, widened back.
CMLC_EW_TARGET static inline vf v_f16_round(vf v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
CMLC_EW_TARGET static inline vf v_load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
CMLC_EW_TARGET static inline void v_store_f16(uint16_t* p, vf v) {
  _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
CMLC_EW_TARGET static inline vi v_load_i32(const int32_t* p) {
  return _mm256_loadu_si256((const __m256i*)p);
}
CMLC_EW_TARGET static inline void v_store_i32(int32_t* p, vi v) {
  _mm256_storeu_si256((__m256i*)p, v);
}

// Int32 quotients truncated toward zero through f64 (exact: |a| < 2^53), lanes whose divisor
// is 0 or whose quotient overflows (INT32_MIN / -1) get the conversion's 0x80000000.
CMLC_EW_TARGET static inline vi v_i_div_trunc(vi a, vi b) {
  const __m256d alo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(a));
  const __m256d ahi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(a, 1));
  const __m256d blo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(b));
  const __m256d bhi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(b, 1));
  const __m128i qlo = _mm256_cvttpd_epi32(_mm256_div_pd(alo, blo));
  const __m128i qhi = _mm256_cvttpd_epi32(_mm256_div_pd(ahi, bhi));
  return _mm256_set_m128i(qhi, qlo);
}
CMLC_EW_TARGET static inline vi v_i_mullo(vi a, vi b) { return _mm256_mullo_epi32(a, b); }
CMLC_EW_TARGET static inline vm v_i_eq(vi a, vi b) {
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b));
}
CMLC_EW_TARGET static inline vm v_i_gt(vi a, vi b) {
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b));
}

#include "backends/c/kernels/x86_64/elementwise_x86_64_body.h"

#endif  // CMLC_HAVE_X86_64
