// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_tile.h: the register-resident runner of fused-loop programs
// (cmlc_ew_tile_prog_t, kernels/generic/elementwise_internal.h). Included at the end of
// elementwise_x86_64_body.h, so each ISA gets its own runner over its vector layer.
//
// The accumulator A is a tile of CMLC_TL_T vectors (AVX-512: 16 zmm, 256 elements; AVX2: 8
// ymm, 64 elements) that the compiler keeps in registers across the switch: every instruction
// applies one vector function to all of them, so one dispatch serves 16 (8) vector operations
// and nothing goes through memory but the operands and the spills. Each case is the member
// kernel's own expression (the same vector function, the same operand order; loads and stores
// convert as the conversion kernels do), so the lanes get the kernels' bits; a tail shorter
// than a vector runs on zero-padded copies, as the kernels' tails do.
#ifndef CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_TILE_H_
#define CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_TILE_H_

enum { CMLC_TL_T = CMLC_V_W == 16 ? 16 : 8, CMLC_TL_AHEAD = 2048 };

#define CMLC_TL_EACH _Pragma("GCC unroll 16") for (int k = 0; k < T; ++k)

// Operands of the combining instructions, by kind: set-up (named after |v|), then the k-th
// vector.
#define CMLC_TL_SETUP_MEM(v, ARG)
#define CMLC_TL_SETUP_VEC(v, ARG) const float* v##_p = (const float*)in[ARG] + i;
#define CMLC_TL_SETUP_SPLAT(v, ARG) const vf v##_s = v_set1(*(const float*)in[ARG]);
#define CMLC_TL_GET_MEM(v, ARG) mem[(ARG)*T + k]
#define CMLC_TL_GET_VEC(v, ARG) v_load(v##_p + k * CMLC_V_W)
#define CMLC_TL_GET_SPLAT(v, ARG) v##_s

// A = VFN(A, operand), A = VFN(operand, A) (reversed), each kind; RES wraps the result (the
// compares' 1 / 0).
#define CMLC_TL_COMBINE(BASE, NAME, VFN, RES, KIND)      \
  case BASE + 8 * CMLC_TL_##NAME + CMLC_TL_##KIND: {     \
    CMLC_TL_SETUP_##KIND(o, q->arg) CMLC_TL_EACH a[k] =  \
        RES(VFN(a[k], CMLC_TL_GET_##KIND(o, q->arg)));   \
    break;                                               \
  }                                                      \
  case BASE + 8 * CMLC_TL_##NAME + 4 + CMLC_TL_##KIND: { \
    CMLC_TL_SETUP_##KIND(o, q->arg) CMLC_TL_EACH a[k] =  \
        RES(VFN(CMLC_TL_GET_##KIND(o, q->arg), a[k]));   \
    break;                                               \
  }
#define CMLC_TL_COMBINE_ALL(BASE, NAME, VFN, RES) \
  CMLC_TL_COMBINE(BASE, NAME, VFN, RES, MEM)      \
  CMLC_TL_COMBINE(BASE, NAME, VFN, RES, VEC)      \
  CMLC_TL_COMBINE(BASE, NAME, VFN, RES, SPLAT)    \
  case BASE + 8 * CMLC_TL_##NAME + CMLC_TL_ACC:   \
    CMLC_TL_EACH a[k] = RES(VFN(a[k], a[k]));     \
    break;
// Int32 compares of the operands' bits, as 1 / 0 (the compare ops' names of
// CMLC_EW_TILE_COMPARE).
CMLC_EW_TARGET static inline vf CMLC_EW_FN(t_ieq)(vf a, vf b) {
  return v_sel(v_i_eq(v_cast_i(a), v_cast_i(b)), v_set1(1.0f), v_zero());
}
CMLC_EW_TARGET static inline vf CMLC_EW_FN(t_ine)(vf a, vf b) {
  return v_sel(v_i_eq(v_cast_i(a), v_cast_i(b)), v_zero(), v_set1(1.0f));
}
CMLC_EW_TARGET static inline vf CMLC_EW_FN(t_igt)(vf a, vf b) {
  return v_sel(v_i_gt(v_cast_i(a), v_cast_i(b)), v_set1(1.0f), v_zero());
}
CMLC_EW_TARGET static inline vf CMLC_EW_FN(t_ile)(vf a, vf b) {
  return v_sel(v_i_gt(v_cast_i(a), v_cast_i(b)), v_zero(), v_set1(1.0f));
}
CMLC_EW_TARGET static inline vf CMLC_EW_FN(t_ilt)(vf a, vf b) { return CMLC_EW_FN(t_igt)(b, a); }
CMLC_EW_TARGET static inline vf CMLC_EW_FN(t_ige)(vf a, vf b) { return CMLC_EW_FN(t_ile)(b, a); }
#define CMLC_TL_ICMP_EQ CMLC_EW_FN(t_ieq)
#define CMLC_TL_ICMP_NE CMLC_EW_FN(t_ine)
#define CMLC_TL_ICMP_LT CMLC_EW_FN(t_ilt)
#define CMLC_TL_ICMP_LE CMLC_EW_FN(t_ile)
#define CMLC_TL_ICMP_GT CMLC_EW_FN(t_igt)
#define CMLC_TL_ICMP_GE CMLC_EW_FN(t_ige)

#define CMLC_TL_AS_IS(x) x
#define CMLC_TL_AS_01(m) v_sel((m), one, zero)
#define CMLC_TL_BIN_CASES(NAME, KERNEL, VFN) \
  CMLC_TL_COMBINE_ALL(CMLC_TL_BIN, NAME, VFN, CMLC_TL_AS_IS)
#define CMLC_TL_CMP_CASES(NAME, KERNEL, VFN) \
  CMLC_TL_COMBINE_ALL(CMLC_TL_CMP, NAME, VFN, CMLC_TL_AS_01)
#define CMLC_TL_ICMP_CASES(NAME, KERNEL, VFN) \
  CMLC_TL_COMBINE_ALL(CMLC_TL_ICMP, NAME, CMLC_TL_ICMP_##NAME, CMLC_TL_AS_IS)
// The long vector functions (exp, log, tanh, ...) leave the interpreter: A goes to |acc|, the
// step returns the instruction's index, and the caller runs the function one vector at a time,
// as its kernel does. Inline, or as a call inside the switch, their constants and temporaries
// beside the 16 accumulators made the compiler spill the tile in every case (a log-softmax's
// loops 20-40% slower than the kernel calls).
#define CMLC_TL_UN_CASE(NAME, KERNEL, VFN, LONG) \
  case CMLC_TL_UN + CMLC_TL_##NAME:              \
    if (LONG) {                                  \
      CMLC_TL_EACH acc[k] = a[k];                \
      return (int)(q - p->ins);                  \
    }                                            \
    CMLC_TL_EACH a[k] = VFN(a[k]);               \
    break;

// Where (A is the condition) and Clamp (A is x) with two operands of kinds MEM..SPLAT.
#define CMLC_TL_WHERE_CLAMP(K1, K2)                                                              \
  case CMLC_TL_WHERE + 4 * CMLC_TL_##K1 + CMLC_TL_##K2: {                                        \
    CMLC_TL_SETUP_##K1(t, q->arg) CMLC_TL_SETUP_##K2(f, q->arg2) CMLC_TL_EACH a[k] =             \
        v_sel(v_neq(a[k], zero), CMLC_TL_GET_##K1(t, q->arg), CMLC_TL_GET_##K2(f, q->arg2));     \
    break;                                                                                       \
  }                                                                                              \
  case CMLC_TL_CLAMP + 4 * CMLC_TL_##K1 + CMLC_TL_##K2: {                                        \
    CMLC_TL_SETUP_##K1(lo, q->arg) CMLC_TL_SETUP_##K2(hi, q->arg2) CMLC_TL_EACH a[k] =           \
        v_min_nan(v_max_nan(a[k], CMLC_TL_GET_##K1(lo, q->arg)), CMLC_TL_GET_##K2(hi, q->arg2)); \
    break;                                                                                       \
  }
#define CMLC_TL_WHERE_CLAMP_ROW(K1) \
  CMLC_TL_WHERE_CLAMP(K1, MEM) CMLC_TL_WHERE_CLAMP(K1, VEC) CMLC_TL_WHERE_CLAMP(K1, SPLAT)

// Loads of every kind into A (LD) or into a spill tile (LDM): DST(k) is the k-th vector.
#define CMLC_TL_DST_A(k) a[k]
#define CMLC_TL_DST_M(k) mem[q->arg2 * T + (k)]
#define CMLC_TL_LOADS(BASE, DST)                                                          \
  case BASE + CMLC_TL_MEM:                                                                \
    CMLC_TL_EACH DST(k) = mem[q->arg * T + k];                                            \
    break;                                                                                \
  case BASE + CMLC_TL_VEC: {                                                              \
    const float* x = (const float*)in[q->arg] + i;                                        \
    CMLC_TL_EACH DST(k) = v_load(x + k * CMLC_V_W);                                       \
    break;                                                                                \
  }                                                                                       \
  case BASE + CMLC_TL_SPLAT: {                                                            \
    const vf s = v_set1(*(const float*)in[q->arg]);                                       \
    CMLC_TL_EACH DST(k) = s;                                                              \
    break;                                                                                \
  }                                                                                       \
  case BASE + CMLC_TL_VEC_BF16: {                                                         \
    const uint16_t* x = (const uint16_t*)in[q->arg] + i;                                  \
    CMLC_TL_EACH DST(k) = v_bf16_to_f32(x + k * CMLC_V_W);                                \
    break;                                                                                \
  }                                                                                       \
  case BASE + CMLC_TL_VEC_F16: {                                                          \
    const uint16_t* x = (const uint16_t*)in[q->arg] + i;                                  \
    CMLC_TL_EACH DST(k) = v_load_f16(x + k * CMLC_V_W);                                   \
    break;                                                                                \
  }                                                                                       \
  case BASE + CMLC_TL_SPLAT_BF16:                                                         \
  case BASE + CMLC_TL_SPLAT_F16: {                                                        \
    /* (One element widened as the kernels widen a broadcast one: a vector of it.) */     \
    uint16_t h[CMLC_V_W];                                                                 \
    for (int j = 0; j < CMLC_V_W; ++j) h[j] = *(const uint16_t*)in[q->arg];               \
    const vf s = q->code == BASE + CMLC_TL_SPLAT_BF16 ? v_bf16_to_f32(h) : v_load_f16(h); \
    CMLC_TL_EACH DST(k) = s;                                                              \
    break;                                                                                \
  }                                                                                       \
  case BASE + CMLC_TL_VEC_BOOL: {                                                         \
    const uint8_t* x = (const uint8_t*)in[q->arg] + i;                                    \
    CMLC_TL_EACH DST(k) = v_sel(v_load_bool(x + k * CMLC_V_W), one, zero);                \
    break;                                                                                \
  }                                                                                       \
  case BASE + CMLC_TL_SPLAT_BOOL: {                                                       \
    const vf s = v_sel(v_load_bool_scalar(*(const uint8_t*)in[q->arg]), one, zero);       \
    CMLC_TL_EACH DST(k) = s;                                                              \
    break;                                                                                \
  }

// The loops of the long unary functions over |n| vectors in place (CMLC_TL_UN_CASE).
#define CMLC_TL_MAP(NAME, KERNEL, VFN, LONG)                                                \
  CMLC_EW_TARGET __attribute__((noinline, unused)) static void CMLC_EW_FN(tile_map_##NAME)( \
      vf * v, int n) {                                                                      \
    for (int k = 0; k < n; ++k) v[k] = VFN(v[k]);                                           \
  }
CMLC_EW_TILE_UNARY(CMLC_TL_MAP)
#undef CMLC_TL_MAP
#define CMLC_TL_MAP_ENTRY(NAME, KERNEL, VFN, LONG) CMLC_EW_FN(tile_map_##NAME),
static void (*const CMLC_EW_FN(tile_maps)[])(vf*, int) = {CMLC_EW_TILE_UNARY(CMLC_TL_MAP_ENTRY)};
#undef CMLC_TL_MAP_ENTRY

// Runs the program on the T vectors at element |i| (T a constant once inlined) from
// instruction |pc| (after the first, A comes from |acc|) until it stores the output (returns
// -1) or reaches a long unary function (returns its index, A in |acc|). |mem| holds the
// spilled tiles, T vectors each.
CMLC_EW_TARGET static inline __attribute__((always_inline)) int CMLC_EW_FN(tile_step)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, int64_t i, vf* mem, void* out, const int T,
    int pc, vf* acc) {
  const vf one = v_set1(1.0f), zero = v_zero();
  vf a[CMLC_TL_T];
  CMLC_TL_EACH a[k] = pc > 0 ? acc[k] : zero;  // (every program loads first)
  for (const cmlc_ew_tile_ins_t* q = p->ins + pc;; ++q) {
    switch (q->code) {
      CMLC_TL_LOADS(CMLC_TL_LD, CMLC_TL_DST_A)
      CMLC_TL_LOADS(CMLC_TL_LDM, CMLC_TL_DST_M)
      case CMLC_TL_ST:
        CMLC_TL_EACH mem[q->arg * T + k] = a[k];
        break;
      case CMLC_TL_OUT_F32: {
        float* y = (float*)out + i;
        CMLC_TL_EACH v_store(y + k * CMLC_V_W, a[k]);
        return -1;
      }
      case CMLC_TL_OUT_BF16: {
        uint16_t* y = (uint16_t*)out + i;
        CMLC_TL_EACH v_store_u16(y + k * CMLC_V_W, v_f32_to_bf16_bits(a[k]));
        return -1;
      }
      case CMLC_TL_OUT_F16: {
        uint16_t* y = (uint16_t*)out + i;
        CMLC_TL_EACH v_store_f16(y + k * CMLC_V_W, v_canonical_nan(a[k]));
        return -1;
      }
      case CMLC_TL_OUT_BOOL: {
        uint8_t* y = (uint8_t*)out + i;
        CMLC_TL_EACH v_store_bool(y + k * CMLC_V_W, v_neq(a[k], zero));
        return -1;
      }
      case CMLC_TL_IS_FINITE:
        CMLC_TL_EACH a[k] = v_sel(v_lt(v_abs(a[k]), v_set1(INFINITY)), one, zero);
        break;
      case CMLC_TL_TO_BOOL:
        CMLC_TL_EACH a[k] = v_sel(v_neq(a[k], zero), one, zero);
        break;
      case CMLC_TL_I32_TO_F32:
        CMLC_TL_EACH a[k] = v_cvt_f32(v_cast_i(a[k]));
        break;
      case CMLC_TL_ROUND_BF16:
        // (v_bf16_to_f32 on the stored bits: widened, NaNs quieted.)
        CMLC_TL_EACH {
          const vf x = v_cast_f(v_i_shl16(v_f32_to_bf16_bits(a[k])));
          a[k] = v_sel(v_unord(x, x), v_or(x, v_cast_f(v_i_set1(0x00400000))), x);
        }
        break;
      case CMLC_TL_ROUND_F16:
        CMLC_TL_EACH a[k] = v_f16_round(v_canonical_nan(a[k]));
        break;
        CMLC_EW_TILE_UNARY(CMLC_TL_UN_CASE)
        CMLC_EW_TILE_BINARY(CMLC_TL_BIN_CASES)
        CMLC_EW_TILE_COMPARE(CMLC_TL_CMP_CASES)
        CMLC_EW_TILE_COMPARE(CMLC_TL_ICMP_CASES)
        CMLC_TL_WHERE_CLAMP_ROW(MEM)
        CMLC_TL_WHERE_CLAMP_ROW(VEC)
        CMLC_TL_WHERE_CLAMP_ROW(SPLAT)
      default:
        return -1;  // (not built: cmlc_fused_tile_build emits the codes above only)
    }
  }
}

#undef CMLC_TL_LOADS
#undef CMLC_TL_DST_A
#undef CMLC_TL_DST_M
#undef CMLC_TL_WHERE_CLAMP_ROW
#undef CMLC_TL_WHERE_CLAMP
#undef CMLC_TL_UN_CASE
#undef CMLC_TL_CMP_CASES
#undef CMLC_TL_ICMP_CASES
#undef CMLC_TL_BIN_CASES
#undef CMLC_TL_AS_01
#undef CMLC_TL_AS_IS
#undef CMLC_TL_COMBINE_ALL
#undef CMLC_TL_COMBINE
#undef CMLC_TL_GET_SPLAT
#undef CMLC_TL_GET_VEC
#undef CMLC_TL_GET_MEM
#undef CMLC_TL_SETUP_SPLAT
#undef CMLC_TL_SETUP_VEC
#undef CMLC_TL_SETUP_MEM

CMLC_EW_TARGET __attribute__((noinline)) static int CMLC_EW_FN(tile_full)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, int64_t i, vf* mem, void* out, int pc,
    vf* acc) {
  return CMLC_EW_FN(tile_step)(p, in, i, mem, out, CMLC_TL_T, pc, acc);
}

CMLC_EW_TARGET __attribute__((noinline)) static int CMLC_EW_FN(tile_one)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, int64_t i, vf* mem, void* out, int pc,
    vf* acc) {
  return CMLC_EW_FN(tile_step)(p, in, i, mem, out, 1, pc, acc);
}

// One tile (|full|) or one vector at element |i|, the long functions run between the steps.
CMLC_EW_TARGET static void CMLC_EW_FN(tile_at)(const cmlc_ew_tile_prog_t* p, const void* const* in,
                                               int64_t i, vf* mem, void* out, bool full) {
  vf* acc = mem + CMLC_EW_TILE_MAX_MEM * CMLC_TL_T;  // (the scratch's last tile)
  int pc = 0;
  for (;;) {
    pc = full ? CMLC_EW_FN(tile_full)(p, in, i, mem, out, pc, acc)
              : CMLC_EW_FN(tile_one)(p, in, i, mem, out, pc, acc);
    if (pc < 0) return;
    CMLC_EW_FN(tile_maps)[p->ins[pc].code - CMLC_TL_UN](acc, full ? CMLC_TL_T : 1);
    ++pc;
  }
}

// The last partial vector at element |i| (|n| - |i| < W): the inputs read as vectors copied
// into zero-padded vectors.
CMLC_EW_TARGET __attribute__((noinline)) static void CMLC_EW_FN(tile_tail)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, void* out, int64_t i, int64_t n, vf* mem) {
  _Alignas(64) uint8_t pad[CMLC_EW_TILE_MAX_IN][CMLC_V_W * sizeof(float)];
  _Alignas(64) uint8_t tail[CMLC_V_W * sizeof(float)];
  const void* at[CMLC_EW_TILE_MAX_IN];
  const size_t count = (size_t)(n - i);
  for (uint32_t j = 0; j < p->input_count; ++j) {
    const size_t es = p->vec_size[j];
    at[j] = in[j];
    if (es == 0) continue;
    memset(pad[j], 0, sizeof pad[j]);
    memcpy(pad[j], (const uint8_t*)in[j] + (size_t)i * es, count * es);
    at[j] = pad[j];
  }
  CMLC_EW_FN(tile_at)(p, at, 0, mem, tail, false);
  memcpy((uint8_t*)out + (size_t)i * p->out_size, tail, count * p->out_size);
}

// (No aligned locals here or in tile_at: a frame realigned per call of 256 elements showed as
// stalls at their entries.)
CMLC_EW_TARGET void CMLC_EW_FN(tile_run)(const cmlc_ew_tile_prog_t* p, const void* const* in,
                                         void* out, int64_t n, void* scratch) {
  vf* mem = (vf*)scratch;
  int64_t i = 0;
  for (; i + CMLC_TL_T * CMLC_V_W <= n; i += CMLC_TL_T * CMLC_V_W) {
    // The inputs' next tiles, CMLC_TL_AHEAD elements on: a loop of a few members over two
    // streams (a Huber loss of [4M]) waited on memory 25% longer than the kernel calls did.
    if (i + CMLC_TL_AHEAD < n) {
      for (uint32_t j = 0; j < p->input_count; ++j) {
        const size_t es = p->vec_size[j];
        if (es == 0) continue;
        const char* at = (const char*)in[j] + (size_t)(i + CMLC_TL_AHEAD) * es;
        for (size_t b = 0; b < CMLC_TL_T * CMLC_V_W * es; b += 64) __builtin_prefetch(at + b);
      }
    }
    CMLC_EW_FN(tile_at)(p, in, i, mem, out, true);
  }
  for (; i + CMLC_V_W <= n; i += CMLC_V_W) CMLC_EW_FN(tile_at)(p, in, i, mem, out, false);
  if (i < n) CMLC_EW_FN(tile_tail)(p, in, out, i, n, mem);
}

int CMLC_EW_FN(tile_kernel)(cmlc_ew_fn fn, cmlc_ew_tile_class_t* cls) {
#define CMLC_TL_MATCH(NAME, KERNEL, VFN) \
  if (fn == CMLC_EW_FN(KERNEL)) {        \
    *cls = CMLC_TL_MATCH_CLASS;          \
    return CMLC_TL_##NAME;               \
  }
#define CMLC_TL_MATCH4(NAME, KERNEL, VFN, LONG) CMLC_TL_MATCH(NAME, KERNEL, VFN)
#define CMLC_TL_MATCH_CLASS CMLC_TL_CLASS_UNARY
  CMLC_EW_TILE_UNARY(CMLC_TL_MATCH4)
#undef CMLC_TL_MATCH4
#undef CMLC_TL_MATCH_CLASS
#define CMLC_TL_MATCH_CLASS CMLC_TL_CLASS_BINARY
  CMLC_EW_TILE_BINARY(CMLC_TL_MATCH)
#undef CMLC_TL_MATCH_CLASS
#define CMLC_TL_MATCH_CLASS CMLC_TL_CLASS_COMPARE
  CMLC_EW_TILE_COMPARE(CMLC_TL_MATCH)
#undef CMLC_TL_MATCH_CLASS
#undef CMLC_TL_MATCH
  // The bf16 / f16 twins.
  for (int h = 0; h < 2; ++h) {
    const cml_dtype_t dt = h ? CML_DTYPE_F16 : CML_DTYPE_BF16;
    for (int u = 0; u < CMLC_TL_UNARY_COUNT; ++u) {
      if (fn == CMLC_EW_FN(half_unary_fn)(cmlc_ew_tile_unary_ops[u], dt)) {
        *cls = CMLC_TL_CLASS_UNARY;
        return u;
      }
    }
    for (int b = 0; b < CMLC_TL_BINARY_COUNT; ++b) {
      if (fn == CMLC_EW_FN(half_binary_fn)(cmlc_ew_tile_binary_ops[b], dt)) {
        *cls = CMLC_TL_CLASS_BINARY;
        return b;
      }
    }
    for (int c = 0; c < CMLC_TL_COMPARE_COUNT; ++c) {
      if (fn == CMLC_EW_FN(half_binary_fn)(cmlc_ew_tile_compare_ops[c], dt)) {
        *cls = CMLC_TL_CLASS_COMPARE;
        return c;
      }
    }
    if (fn == CMLC_EW_FN(half_binary_fn)(CML_OP_CLAMP, dt)) {
      *cls = CMLC_TL_CLASS_CLAMP;
      return 0;
    }
    if (fn == CMLC_EW_FN(half_unary_fn)(CML_OP_IS_FINITE, dt)) {
      *cls = CMLC_TL_CLASS_IS_FINITE;
      return 0;
    }
  }
  *cls = fn == CMLC_EW_FN(is_finite_f32) ? CMLC_TL_CLASS_IS_FINITE
         : fn == CMLC_EW_FN(where_4)     ? CMLC_TL_CLASS_WHERE
         : fn == CMLC_EW_FN(clamp_f32)   ? CMLC_TL_CLASS_CLAMP
                                         : CMLC_TL_CLASS_NONE;
  return *cls == CMLC_TL_CLASS_NONE ? -1 : 0;
}
#undef CMLC_TL_EACH

#endif  // CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_TILE_H_
