// SPDX-License-Identifier: Apache-2.0
// kernels/generic/movement.c: kernels of the "movement" group: Reshape, Transpose,
// BroadcastInDim, Concatenate, Slice, Reverse and Pad.
//
// These ops only move elements, so they work on element sizes (1, 2, 4, 8 or 16 bytes) and
// never look at values; packed sub-byte dtypes reach Reshape only (a byte copy). Every op is
// expressed as one or more strided copies (movement_internal.h); Transpose gets a tiled path
// so that both sides are walked in cache-sized blocks.
#include <string.h>

#include "backends/c/kernels/generic/linalg_internal.h"
#include "backends/c/kernels/generic/movement_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <emmintrin.h>
#endif

//===--- Reshape ---===//

static cml_status_t cmlc_mv_reshape(const cmlc_kernel_args_t* args) {
  // The output may alias the input (in_place_input = 0): the copy is then a no-op.
  cmlc__mv_memcpy(args->pool, args->outputs[0], args->inputs[0],
                  cml_shape_byte_size(args->output_shapes[0]));
  return CML_OK;
}

//===--- Transpose ---===//

// Elements per side of a transpose tile: 32 x 32 elements of up to 16 bytes stay in L1.
#define CMLC_MV_TILE 32
// Transposes smaller than this many elements use the plain strided copy.
#define CMLC_MV_TILED_MIN_ELEMENTS 4096

typedef struct cmlc_mv_tiled_t {
  cmlc__mv_copy_t c;  // simplified; the output is contiguous
  int32_t q;          // axis whose input stride is 1 (not the last axis)
  int32_t outer_rank;
  int32_t outer_axes[CML_MAX_RANK];  // every axis but q and the last
  int64_t tiles_q, tiles_last;
  char* out;
  const char* in;
  // 4- and 2-byte elements on AVX-512: full tiles by register transposes of 16 x 16 (32-bit) or
  // 32 x 16 (16-bit) blocks.
  bool simd16;
  // 1-byte elements on a SIMD ISA: full tiles by SSE2 register transposes of 16 x 16 bytes.
  bool simd8;
} cmlc_mv_tiled_t;

#if defined(CMLC_HAVE_X86_64)
// Transposes the 16 x 16 bytes at |src| (rows |ld| bytes apart) into |dst| (rows |ldo| apart):
// output row j holds byte j of each input row. Four rounds of interleaving, each doubling the
// width of the units that hold consecutive input rows of one column: bytes of row pairs, then
// 16-bit units of pair pairs (4 rows), 32-bit (8 rows), and 64-bit (all 16). The byte loop ran
// one element at a time (an i8 or Bool [2048, 2048] transpose: 2.4x xla:cpu's time).
static void cmlc_mv_transpose16_b8(const uint8_t* src, int64_t ld, uint8_t* dst, int64_t ldo) {
  __m128i r[16], p[16], q[16], h[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128((const __m128i*)(const void*)(src + i * ld));
  // p[2k]: rows 2k, 2k + 1 of columns 0-7 (byte pairs); p[2k + 1]: of columns 8-15.
  for (int k = 0; k < 8; ++k) {
    p[2 * k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
    p[2 * k + 1] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
  }
  // q[4g + c]: rows 4g .. 4g + 3 of columns 4c .. 4c + 3 (32-bit units of 4 rows).
  for (int g = 0; g < 4; ++g) {
    q[4 * g + 0] = _mm_unpacklo_epi16(p[4 * g], p[4 * g + 2]);
    q[4 * g + 1] = _mm_unpackhi_epi16(p[4 * g], p[4 * g + 2]);
    q[4 * g + 2] = _mm_unpacklo_epi16(p[4 * g + 1], p[4 * g + 3]);
    q[4 * g + 3] = _mm_unpackhi_epi16(p[4 * g + 1], p[4 * g + 3]);
  }
  // h[8m + t]: rows 8m .. 8m + 7 of columns 2t and 2t + 1 (64-bit units of 8 rows).
  for (int m = 0; m < 2; ++m) {
    for (int c = 0; c < 4; ++c) {
      h[8 * m + 2 * c] = _mm_unpacklo_epi32(q[8 * m + c], q[8 * m + 4 + c]);
      h[8 * m + 2 * c + 1] = _mm_unpackhi_epi32(q[8 * m + c], q[8 * m + 4 + c]);
    }
  }
  for (int t = 0; t < 8; ++t) {
    _mm_storeu_si128((__m128i*)(void*)(dst + (2 * t) * ldo), _mm_unpacklo_epi64(h[t], h[8 + t]));
    _mm_storeu_si128((__m128i*)(void*)(dst + (2 * t + 1) * ldo),
                     _mm_unpackhi_epi64(h[t], h[8 + t]));
  }
}
#endif

#define CMLC_MV_TILE_LOOP(T)                                         \
  do {                                                               \
    T* o_ = (T*)(t->out) + ooff;                                     \
    const T* i_ = (const T*)(t->in) + ioff;                          \
    for (int64_t a = a0; a < a1; ++a) {                              \
      T* orow = o_ + a * os_q;                                       \
      const T* icol = i_ + a;                                        \
      for (int64_t b = b0; b < b1; ++b) orow[b] = icol[b * is_last]; \
    }                                                                \
  } while (0)

static void cmlc_mv_tiled_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_mv_tiled_t* t = (const cmlc_mv_tiled_t*)ctx;
  const cmlc__mv_copy_t* c = &t->c;
  const int32_t last = c->rank - 1;
  const int64_t os_q = c->out_strides[t->q], is_last = c->in_strides[last];
  const int64_t tiles_per_outer = t->tiles_q * t->tiles_last;
  for (int64_t task = begin; task < end; ++task) {
    int64_t outer = task / tiles_per_outer;
    int64_t tile = task % tiles_per_outer;
    int64_t ooff = 0, ioff = 0;
    for (int32_t k = t->outer_rank - 1; k >= 0; --k) {
      int32_t d = t->outer_axes[k];
      int64_t i = outer % c->dims[d];
      outer /= c->dims[d];
      ooff += i * c->out_strides[d];
      ioff += i * c->in_strides[d];
    }
    const int64_t a0 = (tile / t->tiles_last) * CMLC_MV_TILE;
    const int64_t b0 = (tile % t->tiles_last) * CMLC_MV_TILE;
    const int64_t a1 = a0 + CMLC_MV_TILE < c->dims[t->q] ? a0 + CMLC_MV_TILE : c->dims[t->q];
    const int64_t b1 = b0 + CMLC_MV_TILE < c->dims[last] ? b0 + CMLC_MV_TILE : c->dims[last];
    switch (c->elem_size) {
      case 1:
#if defined(CMLC_HAVE_X86_64)
        if (t->simd8 && a1 - a0 == CMLC_MV_TILE && b1 - b0 == CMLC_MV_TILE) {
          const uint8_t* i_ = (const uint8_t*)t->in + ioff;
          uint8_t* o_ = (uint8_t*)t->out + ooff;
          for (int64_t a = a0; a < a1; a += 16) {
            for (int64_t b = b0; b < b1; b += 16) {
              cmlc_mv_transpose16_b8(i_ + a + b * is_last, is_last, o_ + a * os_q + b, os_q);
            }
          }
          break;
        }
#endif
        CMLC_MV_TILE_LOOP(uint8_t);
        break;
      case 2:
#if defined(CMLC_HAVE_X86_64)
        if (t->simd16 && a1 - a0 == CMLC_MV_TILE && b1 - b0 == CMLC_MV_TILE && os_q % 2 == 0 &&
            (ooff + a0 * os_q + b0) % 2 == 0 && ((uintptr_t)t->out & 3) == 0) {
          const uint16_t* i_ = (const uint16_t*)(const void*)t->in + ioff;
          uint16_t* o_ = (uint16_t*)(void*)t->out + ooff;
          for (int64_t a = a0; a < a1; a += 16) {
            cmlc__transpose_b16_avx512(i_ + a + b0 * is_last, is_last, o_ + a * os_q + b0, os_q);
          }
          break;
        }
#endif
        CMLC_MV_TILE_LOOP(uint16_t);
        break;
      case 4:
#if defined(CMLC_HAVE_X86_64)
        if (t->simd16 && a1 - a0 == CMLC_MV_TILE && b1 - b0 == CMLC_MV_TILE) {
          const uint32_t* i_ = (const uint32_t*)(const void*)t->in + ioff;
          uint32_t* o_ = (uint32_t*)(void*)t->out + ooff;
          for (int64_t a = a0; a < a1; a += 16) {
            for (int64_t b = b0; b < b1; b += 16) {
              cmlc__transpose16_b32_avx512(i_ + a + b * is_last, is_last, o_ + a * os_q + b, os_q);
            }
          }
          break;
        }
#endif
        CMLC_MV_TILE_LOOP(uint32_t);
        break;
      case 8:
        CMLC_MV_TILE_LOOP(uint64_t);
        break;
      default: {
        // 16-byte elements (C128).
        const int64_t es = (int64_t)c->elem_size;
        for (int64_t a = a0; a < a1; ++a)
          for (int64_t b = b0; b < b1; ++b)
            memcpy(t->out + (ooff + a * os_q + b) * es, t->in + (ioff + a + b * is_last) * es,
                   (size_t)es);
        break;
      }
    }
  }
}

static cml_status_t cmlc_mv_transpose(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const cml_ir_attrs_t* at = args->node->attrs;
  int64_t xstrides[CML_MAX_RANK];
  cmlc_row_major_strides(xs->rank, xs->dims, xstrides);
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = os->rank;
  c.elem_size = cmlc_dtype_size(os->dtype);
  for (int32_t i = 0; i < os->rank; ++i) {
    c.dims[i] = os->dims[i];
    c.in_strides[i] = xstrides[at->axes[i]];
  }
  cmlc_row_major_strides(os->rank, os->dims, c.out_strides);
  cmlc__mv_copy_simplify(&c);
  const int64_t count = cmlc__mv_copy_count(&c);
  const int32_t last = c.rank - 1;
  int32_t q = -1;
  for (int32_t d = 0; d < last; ++d)
    if (c.in_strides[d] == 1) q = d;
  if (count < CMLC_MV_TILED_MIN_ELEMENTS || c.in_strides[last] == 1 || q < 0) {
    cmlc__mv_copy(args->pool, &c, args->outputs[0], args->inputs[0]);
    return CML_OK;
  }
  cmlc_mv_tiled_t t;
  memset(&t, 0, sizeof t);
  t.c = c;
  t.q = q;
  int64_t outer_count = 1;
  for (int32_t d = 0; d < last; ++d) {
    if (d == q) continue;
    t.outer_axes[t.outer_rank++] = d;
    outer_count *= c.dims[d];
  }
  t.tiles_q = (c.dims[q] + CMLC_MV_TILE - 1) / CMLC_MV_TILE;
  t.tiles_last = (c.dims[last] + CMLC_MV_TILE - 1) / CMLC_MV_TILE;
  t.out = (char*)args->outputs[0];
  t.in = (const char*)args->inputs[0];
  t.simd16 = (c.elem_size == 4 || c.elem_size == 2) && args->options && !args->options->reference &&
             args->options->isa >= CMLC_ISA_AVX512;
  t.simd8 = c.elem_size == 1 && args->options && !args->options->reference &&
            args->options->isa >= CMLC_ISA_AVX2;
  const int64_t tasks = outer_count * t.tiles_q * t.tiles_last;
  // About 16 full tiles (16K elements) per chunk.
  cmlc_parallel_for(args->pool, tasks, 16, cmlc_mv_tiled_task, &t);
  return CML_OK;
}

//===--- BroadcastInDim ---===//

static cml_status_t cmlc_mv_broadcast_in_dim(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const cml_ir_attrs_t* at = args->node->attrs;
  int64_t xstrides[CML_MAX_RANK];
  cmlc_row_major_strides(xs->rank, xs->dims, xstrides);
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = os->rank;
  c.elem_size = cmlc_dtype_size(os->dtype);
  for (int32_t i = 0; i < os->rank; ++i) c.dims[i] = os->dims[i];
  for (int32_t i = 0; i < xs->rank && i < at->axis_count; ++i) {
    int64_t d = at->axes[i];
    c.in_strides[d] = xs->dims[i] == 1 ? 0 : xstrides[i];
  }
  cmlc_row_major_strides(os->rank, os->dims, c.out_strides);
  cmlc__mv_copy(args->pool, &c, args->outputs[0], args->inputs[0]);
  return CML_OK;
}

//===--- Concatenate ---===//

static cml_status_t cmlc_mv_concatenate(const cmlc_kernel_args_t* args) {
  const cml_shape_t* os = args->output_shapes[0];
  const int64_t axis = args->node->attrs->axis;
  const size_t es = cmlc_dtype_size(os->dtype);
  int64_t ostrides[CML_MAX_RANK];
  cmlc_row_major_strides(os->rank, os->dims, ostrides);
  // Operands that are contiguous runs of the output may already be in place (the planner lets
  // their producers write there: plan.c, cmlc_plan_place_concats).
  bool runs = true;
  for (int64_t d = 0; d < axis; ++d) runs = runs && os->dims[d] == 1;
  int64_t offset = 0;
  for (uint32_t k = 0; k < args->input_count; ++k) {
    const cml_shape_t* xs = args->input_shapes[k];
    if (runs && (const char*)args->inputs[k] ==
                    (const char*)args->outputs[0] + offset * ostrides[axis] * (int64_t)es) {
      offset += xs->dims[axis];
      continue;
    }
    cmlc__mv_copy_t c;
    memset(&c, 0, sizeof c);
    c.rank = xs->rank;
    c.elem_size = es;
    for (int32_t i = 0; i < xs->rank; ++i) {
      c.dims[i] = xs->dims[i];
      c.out_strides[i] = ostrides[i];
    }
    cmlc_row_major_strides(xs->rank, xs->dims, c.in_strides);
    char* out = (char*)args->outputs[0] + offset * ostrides[axis] * (int64_t)es;
    cmlc__mv_copy(args->pool, &c, out, args->inputs[k]);
    offset += xs->dims[axis];
  }
  return CML_OK;
}

//===--- Slice ---===//

static cml_status_t cmlc_mv_slice(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const cml_ir_attrs_t* at = args->node->attrs;
  int64_t xstrides[CML_MAX_RANK];
  cmlc_row_major_strides(xs->rank, xs->dims, xstrides);
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = os->rank;
  c.elem_size = cmlc_dtype_size(os->dtype);
  int64_t base = 0;
  for (int32_t i = 0; i < os->rank; ++i) {
    int64_t stride = at->strides[i] > 0 ? at->strides[i] : 1;
    c.dims[i] = os->dims[i];
    // The stride may be huge (up to INT64_MAX) when the axis keeps one element: it is unused
    // then. With 2+ elements, stride < input dim, so the product fits.
    c.in_strides[i] = os->dims[i] > 1 ? xstrides[i] * stride : 0;
    if (os->dims[i] > 0) base += at->starts[i] * xstrides[i];
  }
  cmlc_row_major_strides(os->rank, os->dims, c.out_strides);
  if (cml_shape_element_count(os) == 0) return CML_OK;
  const char* in = (const char*)args->inputs[0] + base * (int64_t)c.elem_size;
  cmlc__mv_copy(args->pool, &c, args->outputs[0], in);
  return CML_OK;
}

//===--- Reverse ---===//

static cml_status_t cmlc_mv_reverse(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_ir_attrs_t* at = args->node->attrs;
  if (cml_shape_element_count(xs) == 0) return CML_OK;
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = xs->rank;
  c.elem_size = cmlc_dtype_size(xs->dtype);
  for (int32_t i = 0; i < xs->rank; ++i) c.dims[i] = xs->dims[i];
  cmlc_row_major_strides(xs->rank, xs->dims, c.in_strides);
  cmlc_row_major_strides(xs->rank, xs->dims, c.out_strides);
  int64_t base = 0;
  for (int32_t k = 0; k < at->axis_count; ++k) {
    int64_t d = at->axes[k];
    base += (xs->dims[d] - 1) * c.in_strides[d];
    c.in_strides[d] = -c.in_strides[d];
  }
  const char* in = (const char*)args->inputs[0] + base * (int64_t)c.elem_size;
  cmlc__mv_copy(args->pool, &c, args->outputs[0], in);
  return CML_OK;
}

//===--- Pad ---===//

// ceil(a / b) for b > 0 and a > INT64_MIN, without the "a + b - 1" that can overflow.
static int64_t cmlc_mv_ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b + (a % b != 0) : -((-a) / b);
}

static cml_status_t cmlc_mv_pad(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const cml_ir_attrs_t* at = args->node->attrs;
  const size_t es = cmlc_dtype_size(os->dtype);
  cmlc__mv_fill(args->pool, args->outputs[0], cml_shape_element_count(os), args->inputs[1], es);
  if (cml_shape_element_count(xs) == 0 || cml_shape_element_count(os) == 0) return CML_OK;
  int64_t xstrides[CML_MAX_RANK], ostrides[CML_MAX_RANK];
  cmlc_row_major_strides(xs->rank, xs->dims, xstrides);
  cmlc_row_major_strides(os->rank, os->dims, ostrides);
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = xs->rank;
  c.elem_size = es;
  int64_t in_base = 0, out_base = 0;
  for (int32_t i = 0; i < xs->rank; ++i) {
    // Input element j lands at low + j * (interior + 1); keep those inside [0, out_dim). Shape
    // inference bounds low, high, interior and the interior-padded size by CML__ATTR_MAX
    // (2^55), so -low, out_dim - low and j0 * step below cannot overflow.
    const int64_t step = at->pads[i].interior + 1;
    const int64_t low = at->pads[i].low;
    int64_t j0 = low < 0 ? cmlc_mv_ceil_div(-low, step) : 0;
    int64_t j1 = cmlc_mv_ceil_div(os->dims[i] - low, step);  // first j past the end
    if (j1 > xs->dims[i]) j1 = xs->dims[i];
    if (j1 <= j0) return CML_OK;  // every input element is cropped away
    c.dims[i] = j1 - j0;
    c.in_strides[i] = xstrides[i];
    c.out_strides[i] = ostrides[i] * step;
    in_base += j0 * xstrides[i];
    out_base += (low + j0 * step) * ostrides[i];
  }
  cmlc__mv_copy(args->pool, &c, (char*)args->outputs[0] + out_base * (int64_t)es,
                (const char*)args->inputs[0] + in_base * (int64_t)es);
  return CML_OK;
}

//===--- dispatch ---===//

bool cmlc_kernels_movement_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)options;
  if (module == NULL || node == NULL || out == NULL) return false;
  const cml_dtype_t dtype = module->values[node->first_output].shape.dtype;
  const size_t es = cmlc_dtype_size(dtype);
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  switch (node->op) {
    case CML_OP_RESHAPE:
      // Any dtype, packed ones included: a byte copy.
      if (!cml_dtype_is_valid(dtype)) return false;
      e.run = cmlc_mv_reshape;
      e.in_place_input = 0;
      break;
    case CML_OP_TRANSPOSE:
      e.run = cmlc_mv_transpose;
      break;
    case CML_OP_BROADCAST_IN_DIM:
      e.run = cmlc_mv_broadcast_in_dim;
      break;
    case CML_OP_CONCATENATE:
      e.run = cmlc_mv_concatenate;
      break;
    case CML_OP_SLICE:
      e.run = cmlc_mv_slice;
      break;
    case CML_OP_REVERSE:
      e.run = cmlc_mv_reverse;
      break;
    case CML_OP_PAD:
      e.run = cmlc_mv_pad;
      break;
    default:
      return false;
  }
  if (node->op != CML_OP_RESHAPE && es == 0) return false;
  *out = e;
  return true;
}

void cmlc_kernels_movement_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_MOVEMENT);
}
