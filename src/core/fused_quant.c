// SPDX-License-Identifier: Apache-2.0
// src/core/fused_quant.c: FusedQuantizedDense and QuantizedEmbeddingLookup (cml/fused.h):
// operand checks, then one node when the backend advertises the op, or the decomposition into
// standard ops otherwise.
//
// The decomposition dequantizes the weights to a Float32 [N, K] (GGML) or [K, N] (Linear, NF4)
// array and runs a DotGeneral. GGML blocks are taken apart with the byte-level recipe of
// GoMLX's ml/ggml package, extended to every format: the weights are reshaped to
// [rows, blocks, bytes_per_block], each field is a Slice of the last axis, fp16 fields are a
// Bitcast of two bytes to Float16, bit fields are ShiftRightLogical and BitwiseAnd on Uint8
// (shift amounts broadcast along a new size-1 axis), nibble halves are Concatenated in ggml's
// element order, and the IQ4_NL and NF4 tables are Gathers. Every step is an op XLA has, and no
// packed dtype appears except the user's own Linear weights. The float operations happen in
// ggml's order, so the dequantized weights are bit-identical to ggml's; the sums of the dot
// product differ from a native kernel's only by summation order.
#include <string.h>

#include "core/builder_internal.h"
#include "core/fused_internal.h"
#include "core/quant_blocks.h"

//===--- small builders ---===//

static bool cml_fq_begin(cml_function_t* f, cml_op_t op, bool* out_native) {
  *out_native = false;
  if (!cml__op_begin(f, op)) return false;
  cml_builder_t* b = f->builder;
  *out_native = cml_capabilities_has_op(cml_backend_capabilities(b->backend), op);
  b->unsupported_op = CML_OP_INVALID;  // a missing fused op is decomposed, not an error
  return true;
}

static cml_value_t cml_fq_u8(cml_function_t* f, int64_t v) {
  return cml_constant_scalar_i64(f, CML_DTYPE_U8, v);
}

// A Uint8 constant of |rank| dims |dims| holding |data|.
static cml_value_t cml_fq_u8_array(cml_function_t* f, const uint8_t* data, int32_t rank,
                                   const int64_t* dims) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_U8, rank, dims);
  return cml_constant(f, &s, data);
}

static cml_value_t cml_fq_reshape(cml_function_t* f, cml_value_t v, int32_t rank,
                                  const int64_t* dims) {
  return cml_op_reshape(f, v, dims, rank);
}

// Bytes [from, to) of the last axis of |blk| [R, nb, bpb].
static cml_value_t cml_fq_bytes(cml_function_t* f, cml_value_t blk, int64_t rows, int64_t nb,
                                int64_t from, int64_t to) {
  return cml_op_slice(f, blk, (int64_t[]){0, 0, from}, (int64_t[]){rows, nb, to}, NULL, 3);
}

// The fp16 field at byte |at| of each block, as Float32 [R, nb, 1].
static cml_value_t cml_fq_half(cml_function_t* f, cml_value_t blk, int64_t rows, int64_t nb,
                               int64_t at) {
  cml_value_t h = cml_op_bitcast(f, cml_fq_bytes(f, blk, rows, nb, at, at + 2), CML_DTYPE_F16);
  h = cml_op_convert_dtype(f, h, CML_DTYPE_F32);
  return cml_fq_reshape(f, h, 3, (int64_t[]){rows, nb, 1});
}

static cml_value_t cml_fq_f32(cml_function_t* f, cml_value_t v) {
  return cml_op_convert_dtype(f, v, CML_DTYPE_F32);
}

// |v| & |mask| and |v| >> |shift| for Uint8 arrays (scalars broadcast).
static cml_value_t cml_fq_and(cml_function_t* f, cml_value_t v, int64_t mask) {
  return cml_op_bitwise_and(f, v, cml_fq_u8(f, mask));
}
static cml_value_t cml_fq_shr(cml_function_t* f, cml_value_t v, int64_t shift) {
  return cml_op_shift_right_logical(f, v, cml_fq_u8(f, shift));
}
static cml_value_t cml_fq_shl(cml_function_t* f, cml_value_t v, int64_t shift) {
  return cml_op_shift_left(f, v, cml_fq_u8(f, shift));
}

// Nibbles of |qs| [R, nb, 16]: low nibbles then high nibbles, [R, nb, 32] Uint8.
static cml_value_t cml_fq_nibbles(cml_function_t* f, cml_value_t qs) {
  cml_value_t parts[2] = {cml_fq_and(f, qs, 15), cml_fq_shr(f, qs, 4)};
  return cml_op_concatenate(f, 2, parts, 2);
}

// Table lookup: |table| (16 floats) at the Uint8 indices |q| (any shape, values < 16).
static cml_value_t cml_fq_lookup(cml_function_t* f, const float* table, cml_value_t q,
                                 const cml_shape_t* qs) {
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){16});
  cml_value_t t = cml_constant(f, &ts, table);
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = qs->rank;  // an implicit trailing size-1 index vector
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 1;
  g.start_index_map[0] = 0;
  g.slice_size_count = 1;
  g.slice_sizes[0] = 1;
  return cml_op_gather(f, t, cml_op_convert_dtype(f, q, CML_DTYPE_I32), &g);
}

// The bits 0..7 of each byte of |v| [R, nb, n] as [R, nb, n * 8] (byte t bit j at 8t + j).
static cml_value_t cml_fq_bits8(cml_function_t* f, cml_value_t v, int64_t rows, int64_t nb,
                                int64_t n) {
  static const uint8_t iota8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  cml_value_t s = cml_fq_u8_array(f, iota8, 4, (int64_t[]){1, 1, 1, 8});
  cml_value_t x = cml_fq_reshape(f, v, 4, (int64_t[]){rows, nb, n, 1});
  x = cml_fq_and(f, cml_op_shift_right_logical(f, x, s), 1);
  return cml_fq_reshape(f, x, 3, (int64_t[]){rows, nb, n * 8});
}

//===--- GGML block decoding in standard ops ---===//

// Dequantizes |w| (Uint8 [rows, bytes_per_row] of |type|) to Float32 [rows, K].
static cml_value_t cml_fq_ggml_rows(cml_function_t* f, cml_value_t w, int64_t rows,
                                    int64_t bytes_per_row, cml_ggml_type_t type) {
  const int64_t bpb = cml__qb_bytes[type], vpb = cml__qb_values[type];
  const int64_t nb = bytes_per_row / bpb, k = nb * vpb;
  const int64_t R = rows;
  cml_value_t blk = cml_fq_reshape(f, w, 3, (int64_t[]){R, nb, bpb});
  cml_value_t y = CML_VALUE_INVALID;
  switch (type) {
    case CML_GGML_Q4_0:
    case CML_GGML_IQ4_NL:
    case CML_GGML_Q4_1: {
      const int64_t at = type == CML_GGML_Q4_1 ? 4 : 2;
      cml_value_t q = cml_fq_nibbles(f, cml_fq_bytes(f, blk, R, nb, at, at + 16));
      cml_value_t d = cml_fq_half(f, blk, R, nb, 0);
      if (type == CML_GGML_IQ4_NL) {
        cml_shape_t qs = cml_shape_make(CML_DTYPE_U8, 3, (int64_t[]){R, nb, 32});
        y = cml_op_mul(f, d, cml_fq_lookup(f, cml_quant_iq4nl_table(), q, &qs));
      } else if (type == CML_GGML_Q4_0) {
        cml_value_t qf =
            cml_op_sub(f, cml_fq_f32(f, q), cml_constant_scalar_f64(f, CML_DTYPE_F32, 8));
        y = cml_op_mul(f, qf, d);
      } else {
        y = cml_op_add(f, cml_op_mul(f, cml_fq_f32(f, q), d), cml_fq_half(f, blk, R, nb, 2));
      }
      break;
    }
    case CML_GGML_Q5_0:
    case CML_GGML_Q5_1: {
      const bool one = type == CML_GGML_Q5_1;
      const int64_t qh_at = one ? 4 : 2;
      cml_value_t lo = cml_fq_nibbles(f, cml_fq_bytes(f, blk, R, nb, qh_at + 4, qh_at + 20));
      cml_value_t hi = cml_fq_bits8(f, cml_fq_bytes(f, blk, R, nb, qh_at, qh_at + 4), R, nb, 4);
      cml_value_t q = cml_fq_f32(f, cml_op_bitwise_or(f, lo, cml_fq_shl(f, hi, 4)));
      cml_value_t d = cml_fq_half(f, blk, R, nb, 0);
      if (one) {
        y = cml_op_add(f, cml_op_mul(f, q, d), cml_fq_half(f, blk, R, nb, 2));
      } else {
        y = cml_op_mul(f, cml_op_sub(f, q, cml_constant_scalar_f64(f, CML_DTYPE_F32, 16)), d);
      }
      break;
    }
    case CML_GGML_Q8_0: {
      cml_value_t q = cml_op_bitcast(f, cml_fq_bytes(f, blk, R, nb, 2, 34), CML_DTYPE_I8);
      y = cml_op_mul(f, cml_fq_f32(f, q), cml_fq_half(f, blk, R, nb, 0));
      break;
    }
    case CML_GGML_Q2_K:
    case CML_GGML_Q3_K: {
      // qs [R, nb, 2, 1, 32] >> {0, 2, 4, 6} & 3 -> [R, nb, 2, 4, 32] -> 16 sub-blocks of 16.
      static const uint8_t shifts[4] = {0, 2, 4, 6};
      const bool q3 = type == CML_GGML_Q3_K;
      const int64_t qs_at = q3 ? 32 : 16;
      cml_value_t qs = cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, qs_at, qs_at + 64), 5,
                                      (int64_t[]){R, nb, 2, 1, 32});
      cml_value_t sh = cml_fq_u8_array(f, shifts, 5, (int64_t[]){1, 1, 1, 4, 1});
      cml_value_t q = cml_fq_and(f, cml_op_shift_right_logical(f, qs, sh), 3);
      q = cml_fq_reshape(f, q, 4, (int64_t[]){R, nb, 16, 16});
      if (!q3) {
        cml_value_t sc =
            cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, 0, 16), 4, (int64_t[]){R, nb, 16, 1});
        cml_value_t d =
            cml_fq_reshape(f, cml_fq_half(f, blk, R, nb, 80), 4, (int64_t[]){R, nb, 1, 1});
        cml_value_t dmin =
            cml_fq_reshape(f, cml_fq_half(f, blk, R, nb, 82), 4, (int64_t[]){R, nb, 1, 1});
        cml_value_t dl = cml_op_mul(f, d, cml_fq_f32(f, cml_fq_and(f, sc, 15)));
        cml_value_t ml = cml_op_mul(f, dmin, cml_fq_f32(f, cml_fq_shr(f, sc, 4)));
        y = cml_op_sub(f, cml_op_mul(f, dl, cml_fq_f32(f, q)), ml);
      } else {
        // High bits: hmask [R, nb, 1, 32] >> iota8 [.., 8, 1] & 1 -> [R, nb, 8, 32], row 4n+j.
        static const uint8_t iota8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        cml_value_t hm =
            cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, 0, 32), 4, (int64_t[]){R, nb, 1, 32});
        cml_value_t it = cml_fq_u8_array(f, iota8, 4, (int64_t[]){1, 1, 8, 1});
        cml_value_t h = cml_fq_and(f, cml_op_shift_right_logical(f, hm, it), 1);
        h = cml_fq_reshape(f, h, 4, (int64_t[]){R, nb, 16, 16});
        // q = q2 - 4 * (1 - h) = (q2 | h << 2) - 4, in float.
        cml_value_t qf = cml_op_sub(f, cml_fq_f32(f, cml_op_bitwise_or(f, q, cml_fq_shl(f, h, 2))),
                                    cml_constant_scalar_f64(f, CML_DTYPE_F32, 4));
        // Scales: low 4 bits Concat(s[0:8] & 15, s[0:8] >> 4), high 2 bits
        // (s[8:12] [1, 4] >> {0, 2, 4, 6} [4, 1]) & 3.
        cml_value_t s8 = cml_fq_bytes(f, blk, R, nb, 96, 104);
        cml_value_t lows[2] = {cml_fq_and(f, s8, 15), cml_fq_shr(f, s8, 4)};
        cml_value_t low = cml_op_concatenate(f, 2, lows, 2);  // [R, nb, 16]
        cml_value_t s4 =
            cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, 104, 108), 4, (int64_t[]){R, nb, 1, 4});
        cml_value_t sh4 = cml_fq_u8_array(f, shifts, 4, (int64_t[]){1, 1, 4, 1});
        cml_value_t high = cml_fq_and(f, cml_op_shift_right_logical(f, s4, sh4), 3);
        high = cml_fq_reshape(f, high, 3, (int64_t[]){R, nb, 16});
        cml_value_t sc = cml_fq_f32(f, cml_op_bitwise_or(f, low, cml_fq_shl(f, high, 4)));
        sc = cml_op_sub(f, sc, cml_constant_scalar_f64(f, CML_DTYPE_F32, 32));
        sc = cml_fq_reshape(f, sc, 4, (int64_t[]){R, nb, 16, 1});
        cml_value_t d =
            cml_fq_reshape(f, cml_fq_half(f, blk, R, nb, 108), 4, (int64_t[]){R, nb, 1, 1});
        y = cml_op_mul(f, cml_op_mul(f, d, sc), qf);
      }
      break;
    }
    case CML_GGML_Q4_K:
    case CML_GGML_Q5_K: {
      const bool five = type == CML_GGML_Q5_K;
      cml_value_t A = cml_fq_bytes(f, blk, R, nb, 4, 8);
      cml_value_t B = cml_fq_bytes(f, blk, R, nb, 8, 12);
      cml_value_t C = cml_fq_bytes(f, blk, R, nb, 12, 16);
      cml_value_t sc_parts[2] = {
          cml_fq_and(f, A, 63),
          cml_op_bitwise_or(f, cml_fq_and(f, C, 15), cml_fq_shl(f, cml_fq_shr(f, A, 6), 4))};
      cml_value_t m_parts[2] = {
          cml_fq_and(f, B, 63),
          cml_op_bitwise_or(f, cml_fq_shr(f, C, 4), cml_fq_shl(f, cml_fq_shr(f, B, 6), 4))};
      cml_value_t sc = cml_fq_reshape(f, cml_fq_f32(f, cml_op_concatenate(f, 2, sc_parts, 2)), 4,
                                      (int64_t[]){R, nb, 8, 1});
      cml_value_t mn = cml_fq_reshape(f, cml_fq_f32(f, cml_op_concatenate(f, 2, m_parts, 2)), 4,
                                      (int64_t[]){R, nb, 8, 1});
      const int64_t qs_at = five ? 48 : 16;
      static const uint8_t nib_shift[2] = {0, 4};
      cml_value_t qs = cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, qs_at, qs_at + 128), 5,
                                      (int64_t[]){R, nb, 4, 1, 32});
      cml_value_t sh = cml_fq_u8_array(f, nib_shift, 5, (int64_t[]){1, 1, 1, 2, 1});
      cml_value_t q = cml_fq_and(f, cml_op_shift_right_logical(f, qs, sh), 15);
      q = cml_fq_reshape(f, q, 4, (int64_t[]){R, nb, 8, 32});
      if (five) {
        static const uint8_t iota8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        cml_value_t qh =
            cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, 16, 48), 4, (int64_t[]){R, nb, 1, 32});
        cml_value_t it = cml_fq_u8_array(f, iota8, 4, (int64_t[]){1, 1, 8, 1});
        cml_value_t hb = cml_fq_and(f, cml_op_shift_right_logical(f, qh, it), 1);
        q = cml_op_bitwise_or(f, q, cml_fq_shl(f, hb, 4));
      }
      cml_value_t d = cml_fq_reshape(f, cml_fq_half(f, blk, R, nb, 0), 4, (int64_t[]){R, nb, 1, 1});
      cml_value_t dmin =
          cml_fq_reshape(f, cml_fq_half(f, blk, R, nb, 2), 4, (int64_t[]){R, nb, 1, 1});
      y = cml_op_sub(f, cml_op_mul(f, cml_op_mul(f, d, sc), cml_fq_f32(f, q)),
                     cml_op_mul(f, dmin, mn));
      break;
    }
    case CML_GGML_Q6_K: {
      // ql [R, nb, 2, 1, 2, 32] >> {0, 4} on the new axis & 15 -> quad u = 2 * shift + c.
      static const uint8_t nib_shift[2] = {0, 4};
      static const uint8_t shifts[4] = {0, 2, 4, 6};
      cml_value_t ql = cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, 0, 128), 6,
                                      (int64_t[]){R, nb, 2, 1, 2, 32});
      cml_value_t sh = cml_fq_u8_array(f, nib_shift, 6, (int64_t[]){1, 1, 1, 2, 1, 1});
      cml_value_t lo = cml_fq_and(f, cml_op_shift_right_logical(f, ql, sh), 15);
      lo = cml_fq_reshape(f, lo, 5, (int64_t[]){R, nb, 2, 4, 32});
      cml_value_t qh =
          cml_fq_reshape(f, cml_fq_bytes(f, blk, R, nb, 128, 192), 5, (int64_t[]){R, nb, 2, 1, 32});
      cml_value_t sh4 = cml_fq_u8_array(f, shifts, 5, (int64_t[]){1, 1, 1, 4, 1});
      cml_value_t hi = cml_fq_and(f, cml_op_shift_right_logical(f, qh, sh4), 3);
      cml_value_t q = cml_fq_f32(f, cml_op_bitwise_or(f, lo, cml_fq_shl(f, hi, 4)));
      q = cml_op_sub(f, q, cml_constant_scalar_f64(f, CML_DTYPE_F32, 32));
      q = cml_fq_reshape(f, q, 4, (int64_t[]){R, nb, 16, 16});
      cml_value_t sc = cml_op_bitcast(f, cml_fq_bytes(f, blk, R, nb, 192, 208), CML_DTYPE_I8);
      sc = cml_fq_reshape(f, cml_fq_f32(f, sc), 4, (int64_t[]){R, nb, 16, 1});
      cml_value_t d =
          cml_fq_reshape(f, cml_fq_half(f, blk, R, nb, 208), 4, (int64_t[]){R, nb, 1, 1});
      y = cml_op_mul(f, cml_op_mul(f, d, sc), q);
      break;
    }
    default:
      break;
  }
  return cml_fq_reshape(f, y, 2, (int64_t[]){R, k});
}

//===--- operand checks ---===//

static bool cml_fq_is_weight_dtype(cml_quant_scheme_t scheme, cml_dtype_t dt) {
  switch (dt) {
    case CML_DTYPE_I8:
    case CML_DTYPE_U8:
    case CML_DTYPE_I4:
    case CML_DTYPE_U4:
      return true;
    case CML_DTYPE_I2:
    case CML_DTYPE_U2:
      return scheme == CML_QUANT_LINEAR;
    default:
      return false;
  }
}

// Checks |q|'s enums; |op_name| prefixes the messages, which name |what| (the weights or the
// data) with its shape where it is a valid value.
static bool cml_fq_check_quant(cml_builder_t* b, const char* op_name, const cml_quantization_t* q,
                               const char* what, cml_value_t w) {
  if (!q) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: NULL quantization", op_name);
    return false;
  }
  if ((int)q->scheme < 0 || q->scheme >= CML_QUANT_SCHEME_COUNT) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: unknown quantization scheme %d", op_name,
              (int)q->scheme);
    return false;
  }
  if (q->scheme == CML_QUANT_GGML &&
      ((int)q->ggml_type < 0 || q->ggml_type >= CML_GGML_TYPE_COUNT)) {
    char t[CML__SHAPE_TEXT] = "";
    cml_shape_t ws;
    if (cml_builder_value_shape(b, w, &ws)) cml__shape_text(&ws, t);
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s(GGML): unknown GGML type %d for %s %s (known: 0 to %d, cml_ggml_type_t)", op_name,
              (int)q->ggml_type, what, t[0] ? t : "(invalid value)", (int)CML_GGML_TYPE_COUNT - 1);
    return false;
  }
  return true;
}

// Checks GGML weights / data |ws| (Uint8 [rows, whole blocks]) and derives K.
static bool cml_fq_check_ggml_rows(cml_builder_t* b, const char* op_name, const char* what,
                                   const cml_shape_t* ws, cml_ggml_type_t type, int64_t* out_k) {
  char t[CML__SHAPE_TEXT];
  const char* tn = cml_ggml_type_name(type);
  if (ws->dtype != CML_DTYPE_U8 || ws->rank != 2) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s(GGML %s): %s must be [rows, bytes_per_row] Uint8, got %s", op_name, tn, what,
              cml__shape_text(ws, t));
    return false;
  }
  const int64_t bpb = cml__qb_bytes[type];
  if (ws->dims[1] % bpb != 0 || ws->dims[1] == 0) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s(GGML %s): %s %s: bytes_per_row %lld is not a positive multiple of the %lld "
              "bytes of a %s block",
              op_name, tn, what, cml__shape_text(ws, t), (long long)ws->dims[1], (long long)bpb,
              tn);
    return false;
  }
  *out_k = ws->dims[1] / bpb * cml__qb_values[type];
  return true;
}

//===--- FusedQuantizedDense ---===//

cml_value_t cml_op_fused_quantized_dense(cml_function_t* f, cml_value_t x, cml_value_t weights,
                                         cml_value_t bias, const cml_quantization_t* quantization,
                                         cml_activation_t activation) {
  return cml__fused_quantized_dense_build(f, x, weights, bias, quantization, activation, true);
}

cml_value_t cml__fused_quantized_dense_build(cml_function_t* f, cml_value_t x, cml_value_t weights,
                                             cml_value_t bias,
                                             const cml_quantization_t* quantization,
                                             cml_activation_t activation, bool allow_native) {
  const cml_op_t op = CML_OP_FUSED_QUANTIZED_DENSE;
  const char* on = "FusedQuantizedDense";
  bool native;
  if (!cml_fq_begin(f, op, &native)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  if (!cml_fq_check_quant(b, on, quantization, "weights", weights)) return CML_VALUE_INVALID;
  const cml_quantization_t q = *quantization;
  const char* scheme = cml_quant_scheme_name(q.scheme);
  const char* fmt = q.scheme == CML_QUANT_GGML ? cml_ggml_type_name(q.ggml_type) : scheme;
  if ((int)activation < 0 || activation >= CML_ACTIVATION_COUNT) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s(%s): unknown activation %d", on, fmt,
                     (int)activation);
  }
  char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT], t3[CML__SHAPE_TEXT];
  uint32_t in[5];
  uint32_t in_count = 2, present = 0;
  cml_shape_t xs, ws;
  if (!cml__op_input(f, op, x, 0, &in[0], &xs) || !cml__op_input(f, op, weights, 1, &in[1], &ws))
    return CML_VALUE_INVALID;
  if (xs.dtype != CML_DTYPE_F32 || xs.rank < 1) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "%s(%s): x %s must be Float32 of rank >= 1 (weights %s)", on, fmt,
                     cml__shape_text(&xs, t1), cml__shape_text(&ws, t2));
  }
  const int64_t k = xs.dims[xs.rank - 1];
  int64_t n = 0;
  cml_shape_t ss;
  memset(&ss, 0, sizeof ss);
  if (q.scheme == CML_QUANT_GGML) {
    int64_t wk;
    if (!cml_fq_check_ggml_rows(b, on, "weights", &ws, q.ggml_type, &wk)) return CML_VALUE_INVALID;
    n = ws.dims[0];
    if (wk != k) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(GGML %s): x %s: last dim %lld must match K=%lld derived from weights %s",
                       on, fmt, cml__shape_text(&xs, t1), (long long)k, (long long)wk,
                       cml__shape_text(&ws, t2));
    }
    if (q.zero_point != CML_VALUE_INVALID || q.scale != CML_VALUE_INVALID) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(GGML %s): scale and zero_point must be CML_VALUE_INVALID for the GGML "
                       "scheme (the scales are inside the blocks; weights %s)",
                       on, fmt, cml__shape_text(&ws, t1));
    }
  } else {
    if (!cml_fq_is_weight_dtype(q.scheme, ws.dtype) || ws.rank != 2 || ws.dims[0] != k) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(%s): weights %s must be [%lld, N] of %s (x %s)", on, fmt,
                       cml__shape_text(&ws, t1), (long long)k,
                       q.scheme == CML_QUANT_NF4 ? "Int4, Uint4, Int8 or Uint8"
                                                 : "Int8, Uint8, Int4, Uint4, Int2 or Uint2",
                       cml__shape_text(&xs, t2));
    }
    n = ws.dims[1];
    if (q.block_size < 1) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(%s): block_size %lld must be >= 1 (weights %s)", on, fmt,
                       (long long)q.block_size, cml__shape_text(&ws, t1));
    }
    if (q.block_axis != 1) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(%s): only block_axis=1 is supported, got %lld (weights %s)", on, fmt,
                       (long long)q.block_axis, cml__shape_text(&ws, t1));
    }
    // ceil(N / block_size) without forming N + block_size - 1, which overflows for block sizes
    // near INT64_MAX.
    const int64_t nb = n == 0 ? 0 : (n - 1) / q.block_size + 1;
    if (q.scale == CML_VALUE_INVALID) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(%s): a scale Float32[%lld, %lld] is required (weights %s)", on, fmt,
                       (long long)k, (long long)nb, cml__shape_text(&ws, t1));
    }
    if (!cml__op_input(f, op, q.scale, 2, &in[in_count], &ss)) return CML_VALUE_INVALID;
    if (ss.dtype != CML_DTYPE_F32 || ss.rank != 2 || ss.dims[0] != k || ss.dims[1] != nb) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(%s): scale %s must be Float32[%lld, %lld] for weights %s and "
                       "block_size %lld",
                       on, fmt, cml__shape_text(&ss, t1), (long long)k, (long long)nb,
                       cml__shape_text(&ws, t2), (long long)q.block_size);
    }
    present |= 1u;
    ++in_count;
    if (q.zero_point != CML_VALUE_INVALID) {
      if (q.scheme == CML_QUANT_NF4) {
        return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                         "%s(NF4): zero_point must be CML_VALUE_INVALID for the NF4 scheme "
                         "(weights %s)",
                         on, cml__shape_text(&ws, t1));
      }
      cml_shape_t zs;
      if (!cml__op_input(f, op, q.zero_point, 3, &in[in_count], &zs)) return CML_VALUE_INVALID;
      if (zs.dtype != CML_DTYPE_F32 || !cml_shape_equal(&zs, &ss)) {
        return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                         "%s(%s): zero_point %s must have the scale's shape %s (weights %s)", on,
                         fmt, cml__shape_text(&zs, t1), cml__shape_text(&ss, t2),
                         cml__shape_text(&ws, t3));
      }
      present |= 2u;
      ++in_count;
    }
  }
  if (bias != CML_VALUE_INVALID) {
    cml_shape_t bs;
    if (!cml__op_input(f, op, bias, 4, &in[in_count], &bs)) return CML_VALUE_INVALID;
    if (bs.dtype != CML_DTYPE_F32 || bs.rank != 1 || bs.dims[0] != n) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "%s(%s): bias %s must be Float32[%lld] (weights %s)", on, fmt,
                       cml__shape_text(&bs, t1), (long long)n, cml__shape_text(&ws, t2));
    }
    present |= 4u;
    ++in_count;
  }
  cml_shape_t out = xs;
  out.dims[xs.rank - 1] = n;
  if (native && allow_native) {
    cml_ir_attrs_t attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.fused.activation = (int32_t)activation;
    attrs.fused.optional_inputs = present;
    attrs.fused.quant_scheme = (int32_t)q.scheme;
    attrs.fused.quant_ggml_type = q.scheme == CML_QUANT_GGML ? (int32_t)q.ggml_type : 0;
    attrs.fused.quant_block_size = q.scheme == CML_QUANT_GGML ? 0 : q.block_size;
    return cml__op_add_node(f, op, in, in_count, &out, 1, &attrs);
  }

  // Decomposition.
  cml_dot_config_t dc;
  memset(&dc, 0, sizeof dc);
  dc.lhs_contracting_count = 1;
  dc.lhs_contracting_axes[0] = xs.rank - 1;
  dc.rhs_contracting_count = 1;
  cml_value_t y;
  if (q.scheme == CML_QUANT_GGML) {
    cml_value_t wd = cml_fq_ggml_rows(f, weights, n, ws.dims[1], q.ggml_type);  // [N, K]
    dc.rhs_contracting_axes[0] = 1;
    y = cml_op_dot_general(f, x, wd, &dc);
  } else {
    cml_value_t wf;
    if (q.scheme == CML_QUANT_NF4) {
      cml_value_t idx = cml_op_convert_dtype(f, weights, CML_DTYPE_I32);
      idx = cml_op_bitwise_and(f, idx, cml_constant_scalar_i64(f, CML_DTYPE_I32, 15));
      cml_gather_dims_t g;
      memset(&g, 0, sizeof g);
      g.index_vector_axis = 2;
      g.collapsed_slice_axis_count = 1;
      g.start_index_map_count = 1;
      g.slice_size_count = 1;
      g.slice_sizes[0] = 1;
      cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){16});
      wf = cml_op_gather(f, cml_constant(f, &ts, cml_quant_nf4_table()), idx, &g);
    } else {
      wf = cml_op_convert_dtype(f, weights, CML_DTYPE_F32);
    }
    // Scales [K, nb] -> [K, nb, B] -> [K, nb * B] -> the first N columns. A block of B >= N
    // columns is the only block (nb = 1) and covers them all, so B is clamped to N: the
    // broadcast then holds at most K * (N + B - 1) values whatever the block size (B = 2^62
    // with N = 10 would otherwise ask for a [K, 1, 2^62] array).
    const int64_t nb = ss.dims[1], bsz = q.block_size < n ? q.block_size : n;
    const int64_t full[3] = {k, nb, bsz};
    const int64_t axes[2] = {0, 1};
    cml_value_t parts[2] = {q.scale, q.zero_point};
    for (int i = 0; i < (q.zero_point != CML_VALUE_INVALID ? 2 : 1); ++i) {
      cml_value_t e = cml_op_broadcast_in_dim(f, parts[i], full, 3, axes, 2);
      e = cml_fq_reshape(f, e, 2, (int64_t[]){k, nb * bsz});
      if (nb * bsz != n) e = cml_op_slice(f, e, (int64_t[]){0, 0}, (int64_t[]){k, n}, NULL, 2);
      wf = i == 0 ? cml_op_mul(f, wf, e) : cml_op_add(f, wf, e);
    }
    dc.rhs_contracting_axes[0] = 0;
    y = cml_op_dot_general(f, x, wf, &dc);
  }
  if (bias != CML_VALUE_INVALID) {
    int64_t bd[CML_MAX_RANK];
    for (int32_t d = 0; d < out.rank; ++d) bd[d] = 1;
    bd[out.rank - 1] = n;
    y = cml_op_add(f, y, cml_fq_reshape(f, bias, out.rank, bd));
  }
  return cml__fused_activation_ops(f, y, CML_DTYPE_F32, activation);
}

//===--- QuantizedEmbeddingLookup ---===//

cml_value_t cml_op_quantized_embedding_lookup(cml_function_t* f, cml_value_t data,
                                              cml_value_t indices,
                                              const cml_quantization_t* quantization) {
  const cml_op_t op = CML_OP_QUANTIZED_EMBEDDING_LOOKUP;
  const char* on = "QuantizedEmbeddingLookup";
  bool native;
  if (!cml_fq_begin(f, op, &native)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  if (!cml_fq_check_quant(b, on, quantization, "data", data)) return CML_VALUE_INVALID;
  const cml_quantization_t q = *quantization;
  char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT];
  uint32_t in[2];
  cml_shape_t ds, is;
  if (!cml__op_input(f, op, data, 0, &in[0], &ds) || !cml__op_input(f, op, indices, 1, &in[1], &is))
    return CML_VALUE_INVALID;
  if (q.scheme != CML_QUANT_GGML) {
    return cml__fail(b, CML_STATUS_UNIMPLEMENTED,
                     "%s: only the GGML scheme is supported, got %s (data %s)", on,
                     cml_quant_scheme_name(q.scheme), cml__shape_text(&ds, t1));
  }
  const char* fmt = cml_ggml_type_name(q.ggml_type);
  int64_t k;
  if (!cml_fq_check_ggml_rows(b, on, "data", &ds, q.ggml_type, &k)) return CML_VALUE_INVALID;
  if (q.zero_point != CML_VALUE_INVALID || q.scale != CML_VALUE_INVALID) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "%s(GGML %s): scale and zero_point must be CML_VALUE_INVALID for the GGML "
                     "scheme (data %s)",
                     on, fmt, cml__shape_text(&ds, t1));
  }
  if (!cml_dtype_is_int(is.dtype) || cml_dtype_is_packed(is.dtype) || is.rank < 1 ||
      is.dims[is.rank - 1] != 1) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "%s(GGML %s): indices %s must have an integer dtype (8 bits or more) and "
                     "rank >= 1 with last dim 1 (data %s)",
                     on, fmt, cml__shape_text(&is, t1), cml__shape_text(&ds, t2));
  }
  // Rows looked up (the indices' leading dims; the last is 1).
  int64_t rows = 1;
  for (int32_t d = 0; d + 1 < is.rank; ++d) rows *= is.dims[d];
  if (ds.dims[0] == 0 && rows > 0) {
    // No row to read or clamp to: the c kernel would fail every index at run time and Gather
    // (the decomposition) cannot slice a row of an empty table, so every backend rejects it here.
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "%s(GGML %s): data %s has no rows, so indices %s cannot be looked up", on, fmt,
                     cml__shape_text(&ds, t1), cml__shape_text(&is, t2));
  }
  cml_shape_t out = is;
  out.dtype = CML_DTYPE_F32;
  out.dims[is.rank - 1] = k;
  if (native) {
    cml_ir_attrs_t attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.fused.quant_scheme = (int32_t)q.scheme;
    attrs.fused.quant_ggml_type = (int32_t)q.ggml_type;
    return cml__op_add_node(f, op, in, 2, &out, 1, &attrs);
  }
  if (rows == 0) {
    // An empty lookup reads nothing; Gather would still need a row of data to slice (there may
    // be none), so the empty result is built directly.
    return cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0), out.dims,
                                   out.rank, NULL, 0);
  }
  // Gather the raw rows, then dequantize only those.
  cml_value_t idx = indices;
  if (is.dtype == CML_DTYPE_U64) {
    // Uint64 indices of 2^63 and above would wrap to negative Int64 values, which Gather clamps
    // to row 0; as unsigned values they are past the last row. Clamped to INT64_MAX first, they
    // stay past it, and Gather clamps them to the last row as it does for Uint64 indices.
    idx = cml_op_min(f, idx, cml_constant_scalar_i64(f, CML_DTYPE_U64, INT64_MAX));
  }
  if (is.dtype != CML_DTYPE_I32 && is.dtype != CML_DTYPE_I64) {
    idx = cml_op_convert_dtype(f, idx, CML_DTYPE_I64);
  }
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = is.rank - 1;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = is.rank - 1;
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 1;
  g.start_index_map[0] = 0;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = ds.dims[1];
  cml_value_t raw = cml_op_gather(f, data, idx, &g);  // [batch..., bytes_per_row]
  raw = cml_fq_reshape(f, raw, 2, (int64_t[]){rows, ds.dims[1]});
  cml_value_t y = cml_fq_ggml_rows(f, raw, rows, ds.dims[1], q.ggml_type);
  return cml_op_reshape(f, y, out.dims, out.rank);
}
