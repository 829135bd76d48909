// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_tile.h: the register-resident runner of fused-loop programs
// (cmlc_ew_tile_prog_t, kernels/generic/elementwise_internal.h). Included at the end of
// elementwise_x86_64_body.h, so each ISA gets its own runner over its vector layer.
//
// The accumulator A is a tile of CMLC_TL_T vectors (AVX-512: 16 zmm, 256 elements; AVX2: 8
// ymm, 64 elements) that the compiler keeps in registers across the switch: every instruction
// applies one vector function to all of them, so one dispatch serves 16 (8) vector operations
// and nothing goes through memory but the operands and the spills. Each case is the member
// kernel's own expression (the same vector function, the same operand order), so the lanes get
// the kernels' bits; a tail shorter than a vector runs on zero-padded copies, as the kernels'
// tails do.
#ifndef CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_TILE_H_
#define CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_TILE_H_

enum { CMLC_TL_T = CMLC_V_W == 16 ? 16 : 8 };

#define CMLC_TL_EACH _Pragma("GCC unroll 16") for (int k = 0; k < T; ++k)

// The binary cases of one op: A = VOP(A, operand) and A = VOP(operand, A), for each kind.
#define CMLC_TL_BIN_CASES(NAME, KERNEL, VFN)                   \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + CMLC_TL_MEM:         \
    CMLC_TL_EACH a[k] = VFN(a[k], mem[q->arg * T + k]);        \
    break;                                                     \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + CMLC_TL_VEC: {       \
    const float* x = (const float*)in[q->arg] + i;             \
    CMLC_TL_EACH a[k] = VFN(a[k], v_load(x + k * CMLC_V_W));   \
    break;                                                     \
  }                                                            \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + CMLC_TL_SPLAT: {     \
    const vf s = v_set1(*(const float*)in[q->arg]);            \
    CMLC_TL_EACH a[k] = VFN(a[k], s);                          \
    break;                                                     \
  }                                                            \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + CMLC_TL_ACC:         \
    CMLC_TL_EACH a[k] = VFN(a[k], a[k]);                       \
    break;                                                     \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + 4 + CMLC_TL_MEM:     \
    CMLC_TL_EACH a[k] = VFN(mem[q->arg * T + k], a[k]);        \
    break;                                                     \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + 4 + CMLC_TL_VEC: {   \
    const float* x = (const float*)in[q->arg] + i;             \
    CMLC_TL_EACH a[k] = VFN(v_load(x + k * CMLC_V_W), a[k]);   \
    break;                                                     \
  }                                                            \
  case CMLC_TL_BIN + 8 * CMLC_TL_##NAME + 4 + CMLC_TL_SPLAT: { \
    const vf s = v_set1(*(const float*)in[q->arg]);            \
    CMLC_TL_EACH a[k] = VFN(s, a[k]);                          \
    break;                                                     \
  }
#define CMLC_TL_UN_CASE(NAME, KERNEL, VFN) \
  case CMLC_TL_UN + CMLC_TL_##NAME:        \
    CMLC_TL_EACH a[k] = VFN(a[k]);         \
    break;

// Runs the program on the T vectors at element |i| (T a constant once inlined). |mem| holds the
// spilled tiles, T vectors each.
CMLC_EW_TARGET static inline __attribute__((always_inline)) void CMLC_EW_FN(tile_step)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, int64_t i, vf* mem, void* out,
    const int T) {
  vf a[CMLC_TL_T];
  CMLC_TL_EACH a[k] = v_zero();  // (every program loads first)
  for (const cmlc_ew_tile_ins_t* q = p->ins;; ++q) {
    switch (q->code) {
      case CMLC_TL_LD + CMLC_TL_MEM:
        CMLC_TL_EACH a[k] = mem[q->arg * T + k];
        break;
      case CMLC_TL_LD + CMLC_TL_VEC: {
        const float* x = (const float*)in[q->arg] + i;
        CMLC_TL_EACH a[k] = v_load(x + k * CMLC_V_W);
        break;
      }
      case CMLC_TL_LD + CMLC_TL_SPLAT: {
        const vf s = v_set1(*(const float*)in[q->arg]);
        CMLC_TL_EACH a[k] = s;
        break;
      }
      case CMLC_TL_LD + CMLC_TL_VEC_BF16: {
        const uint16_t* x = (const uint16_t*)in[q->arg] + i;
        CMLC_TL_EACH a[k] = v_bf16_to_f32(x + k * CMLC_V_W);
        break;
      }
      case CMLC_TL_LD + CMLC_TL_VEC_F16: {
        const uint16_t* x = (const uint16_t*)in[q->arg] + i;
        CMLC_TL_EACH a[k] = v_load_f16(x + k * CMLC_V_W);
        break;
      }
      case CMLC_TL_ST:
        CMLC_TL_EACH mem[q->arg * T + k] = a[k];
        break;
      case CMLC_TL_OUT_F32: {
        float* y = (float*)out + i;
        CMLC_TL_EACH v_store(y + k * CMLC_V_W, a[k]);
        return;
      }
      case CMLC_TL_OUT_BF16: {
        uint16_t* y = (uint16_t*)out + i;
        CMLC_TL_EACH v_store_u16(y + k * CMLC_V_W, v_f32_to_bf16_bits(a[k]));
        return;
      }
      case CMLC_TL_OUT_F16: {
        uint16_t* y = (uint16_t*)out + i;
        CMLC_TL_EACH v_store_f16(y + k * CMLC_V_W, v_canonical_nan(a[k]));
        return;
      }
        CMLC_EW_TILE_UNARY(CMLC_TL_UN_CASE)
        CMLC_EW_TILE_BINARY(CMLC_TL_BIN_CASES)
      default:
        return;  // (not built: cmlc_fused_tile_build emits these codes only)
    }
  }
}

#undef CMLC_TL_UN_CASE
#undef CMLC_TL_BIN_CASES

CMLC_EW_TARGET __attribute__((noinline)) static void CMLC_EW_FN(tile_full)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, int64_t i, vf* mem, void* out) {
  CMLC_EW_FN(tile_step)(p, in, i, mem, out, CMLC_TL_T);
}

CMLC_EW_TARGET __attribute__((noinline)) static void CMLC_EW_FN(tile_one)(
    const cmlc_ew_tile_prog_t* p, const void* const* in, int64_t i, vf* mem, void* out) {
  CMLC_EW_FN(tile_step)(p, in, i, mem, out, 1);
}

CMLC_EW_TARGET void CMLC_EW_FN(tile_run)(const cmlc_ew_tile_prog_t* p, const void* const* in,
                                         void* out, int64_t n) {
  vf mem[CMLC_EW_TILE_MAX_MEM * CMLC_TL_T];
  int64_t i = 0;
  for (; i + CMLC_TL_T * CMLC_V_W <= n; i += CMLC_TL_T * CMLC_V_W)
    CMLC_EW_FN(tile_full)(p, in, i, mem, out);
  for (; i + CMLC_V_W <= n; i += CMLC_V_W) CMLC_EW_FN(tile_one)(p, in, i, mem, out);
  if (i == n) return;
  // The last partial vector: the inputs read as vectors copied into zero-padded vectors.
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
  CMLC_EW_FN(tile_one)(p, at, 0, mem, tail);
  memcpy((uint8_t*)out + (size_t)i * p->out_size, tail, count * p->out_size);
}

#define CMLC_TL_MATCH(NAME, KERNEL, VFN) \
  if (fn == CMLC_EW_FN(KERNEL)) return CMLC_TL_##NAME;
int CMLC_EW_FN(tile_unary)(cmlc_ew_fn fn) {
  CMLC_EW_TILE_UNARY(CMLC_TL_MATCH)
  return -1;
}
int CMLC_EW_FN(tile_binary)(cmlc_ew_fn fn) {
  CMLC_EW_TILE_BINARY(CMLC_TL_MATCH)
  return -1;
}
#undef CMLC_TL_MATCH
#undef CMLC_TL_EACH

#endif  // CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_TILE_H_
