// SPDX-License-Identifier: Apache-2.0
// kernels/generic/index.c: kernels of the "index" group: DynamicSlice, DynamicUpdateSlice,
// Gather and ScatterSum/Max/Min, with XLA's semantics.
//
// - Start indices may have any integer dtype and are read with it. DynamicSlice,
//   DynamicUpdateSlice and Gather clamp each start to [0, dim - size].
// - Scatter applies an update window only when it lies fully inside the operand (XLA skips the
//   others). Windows are combined in row-major order of the update's scatter indices, on the
//   calling thread, so results never depend on the thread count. Sums run in the operand dtype
//   (integers wrap; f16/bf16 round after every addition); Max/Min propagate NaN.
#include <math.h>
#include <string.h>

#include "backends/c/kernels/generic/elementwise_internal.h"
#include "backends/c/kernels/generic/movement_internal.h"

static int64_t cmlc_ix_clamp(int64_t v, int64_t lo, int64_t hi) {
  if (hi < lo) hi = lo;
  return v < lo ? lo : (v > hi ? hi : v);
}

// The output starts as the operand: a copy of it, or, when the plan passes the one element of
// a broadcast operand instead (cmlc_opt_fold_views: a scatter into zeros, the gradient of a
// gather), that element written everywhere (the broadcast never stored). Nothing when the
// output aliases the operand (in_place_input = 0).
static void cmlc_ix_init_output(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const int64_t n = cml_shape_element_count(os);
  if (cml_shape_element_count(xs) == 1 && n != 1) {
    cmlc__mv_fill(args->pool, args->outputs[0], n, args->inputs[0], cmlc_dtype_size(os->dtype));
    return;
  }
  cmlc__mv_memcpy(args->pool, args->outputs[0], args->inputs[0], cml_shape_byte_size(os));
}

//===--- DynamicSlice / DynamicUpdateSlice ---===//

// Windows of at most this many bytes that are one contiguous run of the whole array (loop
// counters' elements, a KV cache's new row) are copied with one memcpy on the calling thread:
// the general copy's set-up and the pool cost more than the copy (a While reading w[i] per trip).
#define CMLC_IX_SMALL_WINDOW_BYTES 4096

// The window's bytes when it is small and one contiguous run of |whole| (after its leading
// size-1 dimensions, the first dimension may be partial and every later one is whole), else 0.
// Packed sub-byte dtypes (element size 0) take the general copy. Runs on every execute: no
// library calls.
static size_t cmlc_ix_small_run(const cml_shape_t* whole, const cml_shape_t* window,
                                size_t elem_size) {
  if (elem_size == 0) return 0;
  int32_t i = 0;
  while (i < window->rank && window->dims[i] == 1) ++i;
  size_t bytes = elem_size;
  for (int32_t j = i; j < window->rank; ++j) {
    const int64_t d = window->dims[j];
    if ((j > i && d != whole->dims[j]) || d > (int64_t)(CMLC_IX_SMALL_WINDOW_BYTES / bytes)) {
      return 0;
    }
    bytes *= (size_t)d;
  }
  return bytes;
}

// The element offset of the window at |starts_at| (the index operands, one per dimension,
// clamped so that the window fits).
static int64_t cmlc_ix_window_base(const cmlc_kernel_args_t* args, uint32_t starts_at,
                                   const cml_shape_t* whole, const cml_shape_t* window) {
  int64_t base = 0, stride = 1;
  for (int32_t i = whole->rank - 1; i >= 0; --i) {
    int64_t start = cmlc__mv_read_index(args->inputs[starts_at + (uint32_t)i],
                                        args->input_shapes[starts_at + (uint32_t)i]->dtype, 0);
    base += cmlc_ix_clamp(start, 0, whole->dims[i] - window->dims[i]) * stride;
    stride *= whole->dims[i];
  }
  return base;
}

static cml_status_t cmlc_ix_dynamic_slice(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  if (cml_shape_element_count(os) == 0) return CML_OK;
  const size_t elem = cmlc_dtype_size(xs->dtype);
  const size_t run = cmlc_ix_small_run(xs, os, elem);
  if (run) {
    const int64_t base = cmlc_ix_window_base(args, 1, xs, os);
    memcpy(args->outputs[0], (const char*)args->inputs[0] + base * (int64_t)elem, run);
    return CML_OK;
  }
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = xs->rank;
  c.elem_size = cmlc_dtype_size(xs->dtype);
  cmlc_row_major_strides(xs->rank, xs->dims, c.in_strides);
  cmlc_row_major_strides(os->rank, os->dims, c.out_strides);
  int64_t base = 0;
  for (int32_t i = 0; i < xs->rank; ++i) {
    int64_t start = cmlc__mv_read_index(args->inputs[1 + i], args->input_shapes[1 + i]->dtype, 0);
    start = cmlc_ix_clamp(start, 0, xs->dims[i] - os->dims[i]);
    c.dims[i] = os->dims[i];
    base += start * c.in_strides[i];
  }
  cmlc__mv_copy(args->pool, &c, args->outputs[0],
                (const char*)args->inputs[0] + base * (int64_t)c.elem_size);
  return CML_OK;
}

static cml_status_t cmlc_ix_dynamic_update_slice(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->output_shapes[0];  // the operand's shape
  const cml_shape_t* us = args->input_shapes[1];
  cmlc_ix_init_output(args);
  if (cml_shape_element_count(us) == 0) return CML_OK;
  const size_t elem = cmlc_dtype_size(xs->dtype);
  const size_t run = cmlc_ix_small_run(xs, us, elem);
  if (run) {
    const int64_t base = cmlc_ix_window_base(args, 2, xs, us);
    memmove((char*)args->outputs[0] + base * (int64_t)elem, args->inputs[1], run);
    return CML_OK;
  }
  cmlc__mv_copy_t c;
  memset(&c, 0, sizeof c);
  c.rank = xs->rank;
  c.elem_size = cmlc_dtype_size(xs->dtype);
  cmlc_row_major_strides(xs->rank, xs->dims, c.out_strides);
  cmlc_row_major_strides(us->rank, us->dims, c.in_strides);
  int64_t base = 0;
  for (int32_t i = 0; i < xs->rank; ++i) {
    int64_t start = cmlc__mv_read_index(args->inputs[2 + i], args->input_shapes[2 + i]->dtype, 0);
    start = cmlc_ix_clamp(start, 0, xs->dims[i] - us->dims[i]);
    c.dims[i] = us->dims[i];
    base += start * c.out_strides[i];
  }
  cmlc__mv_copy(args->pool, &c, (char*)args->outputs[0] + base * (int64_t)c.elem_size,
                args->inputs[1]);
  return CML_OK;
}

//===--- Gather ---===//

typedef struct cmlc_ix_gather_t {
  const cmlc_kernel_args_t* args;
  int32_t batch_rank;
  int64_t batch_dims[CML_MAX_RANK];
  int64_t batch_out_strides[CML_MAX_RANK];    // output stride of each batch axis
  int64_t batch_index_strides[CML_MAX_RANK];  // indices stride of each batch axis
  int64_t vector_stride;                      // indices stride of the index vector axis
  cmlc__mv_copy_t slice;                      // the offset dims: output <- operand
  int64_t operand_strides[CML_MAX_RANK];
  size_t run_bytes;  // > 0: the slice is one contiguous run on both sides (embedding rows)
  // cmlc_ix_gather_small_task: |coords| start indices per window (at most 4), each clamped to
  // [0, coord_limit] and scaled by coord_stride (bytes); coord_step: the index vector's stride.
  int32_t coords;
  int64_t coord_limit[4], coord_stride[4];
  // cmlc_ix_gather_small_task: a window of |lanes| runs |lane_src| / |lane_dst| bytes apart
  // (1 for contiguous windows; a strided window, e.g. a column of a signal's channels
  // gathered by frame indices, is one element per lane).
  int64_t lanes, lane_src, lane_dst;
} cmlc_ix_gather_t;

// The output and indices offsets of batch element |b| into |bidx| (its batch coordinates),
// |out_off| and |idx_off| (elements).
static void cmlc_ix_gather_start(const cmlc_ix_gather_t* g, int64_t b, int64_t* bidx,
                                 int64_t* out_off, int64_t* idx_off) {
  *out_off = *idx_off = 0;
  for (int32_t k = g->batch_rank - 1; k >= 0; --k) {
    bidx[k] = b % g->batch_dims[k];
    b /= g->batch_dims[k];
    *out_off += bidx[k] * g->batch_out_strides[k];
    *idx_off += bidx[k] * g->batch_index_strides[k];
  }
}

// Small contiguous windows (single elements, short rows: a label's logit, a graph's neighbour
// features) with I32 / I64 indices, in blocks of windows: first every window's source and
// destination offsets (the start indices read typed, the batch walked by an odometer), then the
// copies, of a size known to the compiler, in a loop of independent loads that keeps many cache
// misses in flight (the general task divides per window and calls memcpy, and a random gather
// of 65536 f32 elements from 4 MB waited on one miss at a time). The same bytes land in the same
// places.
enum { CMLC_IX_GATHER_BLOCK = 256 };

// One window's source offset (bytes) from the start indices at |idx_off|.
#define CMLC_IX_GATHER_SOURCE(IT, NC)                                \
  const IT* iv = (const IT*)args->inputs[1] + idx_off;               \
  int64_t in_off = 0;                                                \
  for (int32_t k = 0; k < (NC); ++k) {                               \
    int64_t v = (int64_t)iv[k * vs];                                 \
    v = v < 0 ? 0 : (v > g->coord_limit[k] ? g->coord_limit[k] : v); \
    in_off += v * g->coord_stride[k];                                \
  }

// The offsets of the block's |m| windows; one batch axis (the usual case) without the odometer,
// whose digits in memory made a dependency chain from window to window.
#define CMLC_IX_GATHER_OFFSETS(IT, NC)                           \
  if (g->batch_rank == 1) {                                      \
    const int64_t os = g->batch_out_strides[0] * es;             \
    const int64_t is = g->batch_index_strides[0];                \
    int64_t o = out_off * es;                                    \
    for (int64_t i = 0; i < m; ++i, o += os, idx_off += is) {    \
      CMLC_IX_GATHER_SOURCE(IT, NC)                              \
      src_off[i] = in_off;                                       \
      dst_off[i] = o;                                            \
    }                                                            \
    out_off += m * g->batch_out_strides[0];                      \
  } else {                                                       \
    for (int64_t i = 0; i < m; ++i) {                            \
      CMLC_IX_GATHER_SOURCE(IT, NC)                              \
      src_off[i] = in_off;                                       \
      dst_off[i] = out_off * es;                                 \
      for (int32_t k = g->batch_rank - 1; k >= 0; --k) {         \
        out_off += g->batch_out_strides[k];                      \
        idx_off += g->batch_index_strides[k];                    \
        if (++bidx[k] < g->batch_dims[k]) break;                 \
        out_off -= g->batch_out_strides[k] * g->batch_dims[k];   \
        idx_off -= g->batch_index_strides[k] * g->batch_dims[k]; \
        bidx[k] = 0;                                             \
      }                                                          \
    }                                                            \
  }

#define CMLC_IX_GATHER_COPY(SIZE)                                                     \
  for (int64_t s = 0; s < g->lanes; ++s) {                                            \
    char* o_ = out + s * g->lane_dst;                                                 \
    const char* x_ = x + s * g->lane_src;                                             \
    for (int64_t i = 0; i < m; ++i) memcpy(o_ + dst_off[i], x_ + src_off[i], (SIZE)); \
  }

static void cmlc_ix_gather_small_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ix_gather_t* g = (const cmlc_ix_gather_t*)ctx;
  const cmlc_kernel_args_t* args = g->args;
  const int64_t es = (int64_t)g->slice.elem_size, vs = g->vector_stride;
  const int32_t nc = g->coords;
  const size_t run = g->run_bytes;
  const bool i32 = args->input_shapes[1]->dtype == CML_DTYPE_I32;
  char* out = (char*)args->outputs[0];
  const char* x = (const char*)args->inputs[0];
  int64_t bidx[CML_MAX_RANK], out_off, idx_off;
  int64_t src_off[CMLC_IX_GATHER_BLOCK], dst_off[CMLC_IX_GATHER_BLOCK];
  cmlc_ix_gather_start(g, begin, bidx, &out_off, &idx_off);
  for (int64_t b0 = begin; b0 < end; b0 += CMLC_IX_GATHER_BLOCK) {
    const int64_t m = end - b0 < CMLC_IX_GATHER_BLOCK ? end - b0 : CMLC_IX_GATHER_BLOCK;
    if (i32 && nc == 1) {
      CMLC_IX_GATHER_OFFSETS(int32_t, 1);
    } else if (i32 && nc == 2) {
      CMLC_IX_GATHER_OFFSETS(int32_t, 2);
    } else if (i32) {
      CMLC_IX_GATHER_OFFSETS(int32_t, nc);
    } else if (nc == 1) {
      CMLC_IX_GATHER_OFFSETS(int64_t, 1);
    } else if (nc == 2) {
      CMLC_IX_GATHER_OFFSETS(int64_t, 2);
    } else {
      CMLC_IX_GATHER_OFFSETS(int64_t, nc);
    }
    switch (run) {
      case 1:
        CMLC_IX_GATHER_COPY(1);
        break;
      case 2:
        CMLC_IX_GATHER_COPY(2);
        break;
      case 4:
        CMLC_IX_GATHER_COPY(4);
        break;
      case 8:
        CMLC_IX_GATHER_COPY(8);
        break;
      case 16:
        CMLC_IX_GATHER_COPY(16);
        break;
      case 32:
        CMLC_IX_GATHER_COPY(32);
        break;
      case 64:
        CMLC_IX_GATHER_COPY(64);
        break;
      default:
        CMLC_IX_GATHER_COPY(run);
        break;
    }
  }
}
#undef CMLC_IX_GATHER_COPY
#undef CMLC_IX_GATHER_OFFSETS
#undef CMLC_IX_GATHER_SOURCE

static void cmlc_ix_gather_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ix_gather_t* g = (const cmlc_ix_gather_t*)ctx;
  const cmlc_kernel_args_t* args = g->args;
  const cml_gather_dims_t* gd = &args->node->attrs->u.gather;
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_dtype_t index_dtype = args->input_shapes[1]->dtype;
  const size_t es = g->slice.elem_size;
  for (int64_t b = begin; b < end; ++b) {
    int64_t bidx[CML_MAX_RANK], out_off, idx_off;
    cmlc_ix_gather_start(g, b, bidx, &out_off, &idx_off);
    int64_t in_off = 0;
    for (int32_t k = 0; k < gd->start_index_map_count; ++k) {
      int64_t d = gd->start_index_map[k];
      const int64_t at = idx_off + k * g->vector_stride;
      int64_t v = index_dtype == CML_DTYPE_I32
                      ? ((const int32_t*)args->inputs[1])[at]
                      : cmlc__mv_read_index(args->inputs[1], index_dtype, at);
      v = cmlc_ix_clamp(v, 0, xs->dims[d] - gd->slice_sizes[d]);
      in_off += v * g->operand_strides[d];
    }
    char* dst = (char*)args->outputs[0] + out_off * (int64_t)es;
    const char* src = (const char*)args->inputs[0] + in_off * (int64_t)es;
    if (g->run_bytes > 0 && g->run_bytes <= 128 && g->run_bytes % 16 == 0) {
      // Short rows (a grid sample's 32 channels): 16-byte moves inline, not a libc call per
      // row (longer rows, 256 and 512 bytes, were slower so).
      for (size_t off = 0; off < g->run_bytes; off += 16) memcpy(dst + off, src + off, 16);
    } else if (g->run_bytes > 0) {
      memcpy(dst, src, g->run_bytes);
    } else {
      cmlc__mv_copy_serial(&g->slice, dst, src);
    }
  }
}

static bool cmlc_ix_contains(const int64_t* list, int32_t count, int64_t v) {
  for (int32_t i = 0; i < count; ++i)
    if (list[i] == v) return true;
  return false;
}

static cml_status_t cmlc_ix_gather(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* is = args->input_shapes[1];
  const cml_shape_t* os = args->output_shapes[0];
  const cml_gather_dims_t* gd = &args->node->attrs->u.gather;
  if (cml_shape_element_count(os) == 0) return CML_OK;
  cmlc_ix_gather_t g;
  memset(&g, 0, sizeof g);
  g.args = args;
  int64_t ostrides[CML_MAX_RANK], istrides[CML_MAX_RANK];
  cmlc_row_major_strides(os->rank, os->dims, ostrides);
  cmlc_row_major_strides(is->rank, is->dims, istrides);
  cmlc_row_major_strides(xs->rank, xs->dims, g.operand_strides);
  g.vector_stride = gd->index_vector_axis < is->rank ? istrides[gd->index_vector_axis] : 0;
  // Batch axes: output axes that are not offset axes, matched in order with the indices'
  // axes other than the index vector axis.
  int32_t ia = 0;
  for (int32_t d = 0; d < os->rank; ++d) {
    if (cmlc_ix_contains(gd->offset_output_axes, gd->offset_output_axis_count, d)) continue;
    if (ia == gd->index_vector_axis) ++ia;
    g.batch_dims[g.batch_rank] = os->dims[d];
    g.batch_out_strides[g.batch_rank] = ostrides[d];
    g.batch_index_strides[g.batch_rank] = istrides[ia];
    ++g.batch_rank;
    ++ia;
  }
  // Offset axes: the i-th offset output axis walks the i-th non-collapsed operand axis.
  g.slice.elem_size = cmlc_dtype_size(xs->dtype);
  int32_t k = 0;
  for (int32_t d = 0; d < xs->rank; ++d) {
    if (cmlc_ix_contains(gd->collapsed_slice_axes, gd->collapsed_slice_axis_count, d)) continue;
    int64_t oa = gd->offset_output_axes[k];
    g.slice.dims[k] = os->dims[oa];
    g.slice.out_strides[k] = ostrides[oa];
    g.slice.in_strides[k] = g.operand_strides[d];
    ++k;
  }
  g.slice.rank = k;
  int64_t batch_count = 1;
  for (int32_t i = 0; i < g.batch_rank; ++i) batch_count *= g.batch_dims[i];
  int64_t slice_count = cmlc__mv_copy_count(&g.slice);
  cmlc__mv_copy_t simple = g.slice;
  cmlc__mv_copy_simplify(&simple);
  if (simple.rank == 1 && simple.in_strides[0] == 1 && simple.out_strides[0] == 1) {
    g.run_bytes = (size_t)simple.dims[0] * g.slice.elem_size;
  }
  int64_t min_chunk = 16384 / (slice_count > 0 ? slice_count : 1);
  if (min_chunk < 1) min_chunk = 1;
  cmlc_task_fn task = cmlc_ix_gather_task;
  g.lanes = 1;
  // A window of up to 64 elements along one strided axis (audio framing: frames[b, t, k] =
  // signal[b, idx[t, k]] keeps the signal's leading axis): the small windows' blocks, one
  // element per lane, lane by lane (the general task copied each window through a strided
  // copy: 2.8-19x xla:cpu's time).
  const bool strided =
      g.run_bytes == 0 && simple.rank == 1 && simple.dims[0] > 1 && simple.dims[0] <= 64;
  if (strided) {
    g.lanes = simple.dims[0];
    g.lane_src = simple.in_strides[0] * (int64_t)g.slice.elem_size;
    g.lane_dst = simple.out_strides[0] * (int64_t)g.slice.elem_size;
    g.run_bytes = g.slice.elem_size;
  }
  if (g.run_bytes > 0 && g.run_bytes <= 256 && gd->start_index_map_count <= 4 &&
      (is->dtype == CML_DTYPE_I32 || is->dtype == CML_DTYPE_I64)) {
    g.coords = gd->start_index_map_count;
    for (int32_t c = 0; c < g.coords; ++c) {
      const int64_t d = gd->start_index_map[c];
      const int64_t limit = xs->dims[d] - gd->slice_sizes[d];
      g.coord_limit[c] = limit > 0 ? limit : 0;
      g.coord_stride[c] = g.operand_strides[d] * (int64_t)g.slice.elem_size;
    }
    task = cmlc_ix_gather_small_task;
  } else if (strided) {  // other index dtypes: the general task's strided copy
    g.lanes = 1;
    g.run_bytes = 0;
  }
  cmlc_parallel_for(args->pool, batch_count, min_chunk, task, &g);
  return CML_OK;
}

//===--- Scatter ---===//

// Combines |n| update elements (stride |ss|) into |dst| (stride |ds|); strides in elements.
typedef void (*cmlc_ix_combine_fn)(char* dst, int64_t ds, const char* src, int64_t ss, int64_t n);

#define CMLC_IX_COMBINE(name, T, EXPR)                                                \
  static void name(char* dst_, int64_t ds, const char* src_, int64_t ss, int64_t n) { \
    T* dst = (T*)dst_;                                                                \
    const T* src = (const T*)src_;                                                    \
    if (ds == 1 && ss == 1) { /* rows: the same loop, vectorized */                   \
      for (int64_t k = 0; k < n; ++k) {                                               \
        T a = dst[k], b = src[k];                                                     \
        dst[k] = (EXPR);                                                              \
      }                                                                               \
      return;                                                                         \
    }                                                                                 \
    for (int64_t k = 0; k < n; ++k) {                                                 \
      T a = dst[k * ds], b = src[k * ss];                                             \
      dst[k * ds] = (EXPR);                                                           \
    }                                                                                 \
  }

#define CMLC_IX_INT_COMBINES(suffix, T, U)                   \
  CMLC_IX_COMBINE(cmlc_ix_sum_##suffix, T, (T)((U)a + (U)b)) \
  CMLC_IX_COMBINE(cmlc_ix_max_##suffix, T, (b > a ? b : a))  \
  CMLC_IX_COMBINE(cmlc_ix_min_##suffix, T, (b < a ? b : a))
CMLC_IX_INT_COMBINES(i8, int8_t, uint8_t)
CMLC_IX_INT_COMBINES(i16, int16_t, uint16_t)
CMLC_IX_INT_COMBINES(i32, int32_t, uint32_t)
CMLC_IX_INT_COMBINES(i64, int64_t, uint64_t)
CMLC_IX_INT_COMBINES(u8, uint8_t, uint8_t)
CMLC_IX_INT_COMBINES(u16, uint16_t, uint16_t)
CMLC_IX_INT_COMBINES(u32, uint32_t, uint32_t)
CMLC_IX_INT_COMBINES(u64, uint64_t, uint64_t)

// NaN-propagating max/min: a NaN on either side wins (the stored value's first); -0 < +0, as
// XLA's max / min.
#define CMLC_IX_FMAX(a, b) \
  ((isnan(a) || (a) > (b)) ? (a) : (isnan(b) || (b) > (a)) ? (b) : signbit(a) ? (b) : (a))
#define CMLC_IX_FMIN(a, b) \
  ((isnan(a) || (a) < (b)) ? (a) : (isnan(b) || (b) < (a)) ? (b) : signbit(a) ? (a) : (b))
CMLC_IX_COMBINE(cmlc_ix_sum_f32, float, a + b)
CMLC_IX_COMBINE(cmlc_ix_max_f32, float, CMLC_IX_FMAX(a, b))
CMLC_IX_COMBINE(cmlc_ix_min_f32, float, CMLC_IX_FMIN(a, b))
CMLC_IX_COMBINE(cmlc_ix_sum_f64, double, a + b)
CMLC_IX_COMBINE(cmlc_ix_max_f64, double, CMLC_IX_FMAX(a, b))
CMLC_IX_COMBINE(cmlc_ix_min_f64, double, CMLC_IX_FMIN(a, b))

// The same on f16 / bf16 bits: equal values other than +-0 have equal bits, and a tie of +0
// and -0 gives +0 as the AND of the bits (Max), -0 as the OR (Min).
#define CMLC_IX_HMAX(TO_F32, a, b)                     \
  ((isnan(TO_F32(a)) || TO_F32(a) > TO_F32(b))   ? (a) \
   : (isnan(TO_F32(b)) || TO_F32(b) > TO_F32(a)) ? (b) \
                                                 : (uint16_t)((a) & (b)))
#define CMLC_IX_HMIN(TO_F32, a, b)                     \
  ((isnan(TO_F32(a)) || TO_F32(a) < TO_F32(b))   ? (a) \
   : (isnan(TO_F32(b)) || TO_F32(b) < TO_F32(a)) ? (b) \
                                                 : (uint16_t)((a) | (b)))
#define CMLC_IX_HALF_COMBINES(suffix, TO_F32, FROM_F32)                            \
  CMLC_IX_COMBINE(cmlc_ix_sum_##suffix, uint16_t, FROM_F32(TO_F32(a) + TO_F32(b))) \
  CMLC_IX_COMBINE(cmlc_ix_max_##suffix, uint16_t, CMLC_IX_HMAX(TO_F32, a, b))      \
  CMLC_IX_COMBINE(cmlc_ix_min_##suffix, uint16_t, CMLC_IX_HMIN(TO_F32, a, b))
CMLC_IX_HALF_COMBINES(f16, cml__f16_to_f32, cml__f32_to_f16)
CMLC_IX_HALF_COMBINES(bf16, cml__bf16_to_f32, cml__f32_to_bf16)

static void cmlc_ix_sum_c64(char* dst_, int64_t ds, const char* src_, int64_t ss, int64_t n) {
  cml_c64_t* dst = (cml_c64_t*)dst_;
  const cml_c64_t* src = (const cml_c64_t*)src_;
  for (int64_t k = 0; k < n; ++k) {
    dst[k * ds].re += src[k * ss].re;
    dst[k * ds].im += src[k * ss].im;
  }
}

static void cmlc_ix_sum_c128(char* dst_, int64_t ds, const char* src_, int64_t ss, int64_t n) {
  cml_c128_t* dst = (cml_c128_t*)dst_;
  const cml_c128_t* src = (const cml_c128_t*)src_;
  for (int64_t k = 0; k < n; ++k) {
    dst[k * ds].re += src[k * ss].re;
    dst[k * ds].im += src[k * ss].im;
  }
}

// Returns the combiner for |op| and |dtype|, or NULL.
static cmlc_ix_combine_fn cmlc_ix_combiner(cml_op_t op, cml_dtype_t dtype) {
  const int which = op == CML_OP_SCATTER_SUM ? 0 : (op == CML_OP_SCATTER_MAX ? 1 : 2);
#define CMLC_IX_CASE(D, suffix)                                                           \
  case D: {                                                                               \
    static const cmlc_ix_combine_fn fns[3] = {cmlc_ix_sum_##suffix, cmlc_ix_max_##suffix, \
                                              cmlc_ix_min_##suffix};                      \
    return fns[which];                                                                    \
  }
  switch (dtype) {
    CMLC_IX_CASE(CML_DTYPE_I8, i8)
    CMLC_IX_CASE(CML_DTYPE_I16, i16)
    CMLC_IX_CASE(CML_DTYPE_I32, i32)
    CMLC_IX_CASE(CML_DTYPE_I64, i64)
    CMLC_IX_CASE(CML_DTYPE_U8, u8)
    CMLC_IX_CASE(CML_DTYPE_U16, u16)
    CMLC_IX_CASE(CML_DTYPE_U32, u32)
    CMLC_IX_CASE(CML_DTYPE_U64, u64)
    CMLC_IX_CASE(CML_DTYPE_F16, f16)
    CMLC_IX_CASE(CML_DTYPE_BF16, bf16)
    CMLC_IX_CASE(CML_DTYPE_F32, f32)
    CMLC_IX_CASE(CML_DTYPE_F64, f64)
    case CML_DTYPE_C64:
      return which == 0 ? cmlc_ix_sum_c64 : NULL;
    case CML_DTYPE_C128:
      return which == 0 ? cmlc_ix_sum_c128 : NULL;
    default:
      return NULL;
  }
#undef CMLC_IX_CASE
}

// f16 / bf16 sums over contiguous rows: both rows widened (exact), added in f32 and rounded
// once per element, as the scalar combiners round after every addition; the SIMD conversions
// give cml_f32_to_f16's values (bf16 is rounded by the inline conversion, which keeps NaN
// payloads as cml_f32_to_bf16 does).
typedef struct cmlc_ix_half_sum_t {
  bool bf16;
  cmlc_ew_convert_fn widen, narrow;  // narrow: f16 only
} cmlc_ix_half_sum_t;

static void cmlc_ix_half_sum_row(const cmlc_ix_half_sum_t* h, uint16_t* dst, const uint16_t* src,
                                 int64_t n) {
  enum { BLOCK = 256 };
  float a[BLOCK], b[BLOCK];
  for (int64_t k0 = 0; k0 < n; k0 += BLOCK) {
    const int64_t m = n - k0 < BLOCK ? n - k0 : BLOCK;
    h->widen(a, dst + k0, m);
    h->widen(b, src + k0, m);
    for (int64_t k = 0; k < m; ++k) a[k] += b[k];
    if (h->bf16) {
      cmlc_f32_to_bf16_row(dst + k0, a, m);
    } else {
      h->narrow(dst + k0, a, m);
    }
  }
}

// A scatter's geometry (cmlc_ix_scatter). When the windows are one row thick along the
// operand's first axis (an embedding's gradient: rows of a table), threads split that axis:
// every task walks all the update windows in order and applies those that start in its rows,
// so each output element combines its updates in the same order as on one thread (the same
// bits for any thread count), and no two tasks touch one element.
typedef struct cmlc_ix_scatter_t {
  const cml_scatter_dims_t* sd;
  const cml_shape_t* xs;
  const cml_shape_t* is;
  const void* indices;
  cmlc_ix_combine_fn combine;
  cmlc_ix_half_sum_t hs;
  bool half_sum;
  int64_t es;
  char* out;
  const char* updates;
  int64_t xstrides[CML_MAX_RANK], vector_stride;
  int32_t scatter_rank, wr;
  int64_t sc_dims[CML_MAX_RANK], sc_ustrides[CML_MAX_RANK], sc_istrides[CML_MAX_RANK];
  int64_t window_size[CML_MAX_RANK];  // per operand axis
  int64_t w_dims[CML_MAX_RANK], w_xstrides[CML_MAX_RANK], w_ustrides[CML_MAX_RANK];
  int64_t scatter_count, window_rows;
  int64_t rows;  // of the operand's first axis per task (all of them on one thread)
  // One index per window (a single scatter axis): the operand axis it starts, the largest
  // start that fits, the axis's stride; a_axis -1: the general path. others_fit: the window
  // fits along every other axis (which starts at 0).
  int32_t a_axis;
  bool others_fit;
  int64_t a_limit, a_stride;
  // Float ScatterMax / ScatterMin rows (cmlc_ix_pick_rows).
  void (*row_max_f32)(float* o, const float* u, int64_t len);
  void (*row_min_f32)(float* o, const float* u, int64_t len);
  void (*row_max_f64)(double* o, const double* u, int64_t len);
  void (*row_min_f64)(double* o, const double* u, int64_t len);
  // Windows of one element summed by cmlc_ix_scatter_unit_fast: 1 f32, 2 f64, 3 32-bit and 4
  // 64-bit integers (wrapping), 5 bf16, 6 f16 (rounded after every addition, as the combiner);
  // combined by the max / min of the combiner: 7 / 8 f32, 9 / 10 f64, 11 / 12 Int32, 13 / 14
  // Int64; 0: the combiner. With unit_coords (1 to 4) start indices per window, coordinate k on an
  // operand axis of largest start unit_limit[k] and stride unit_stride[k].
  int unit_sum;
  int64_t unit_len;  // the window's elements, contiguous in the operand and the updates
  int32_t unit_coords;
  int64_t unit_limit[4], unit_stride[4];
  // With several tasks (scratch permitting): each window's operand offset, or -1 when it is
  // skipped, found once (cmlc_ix_scatter_offsets_task) instead of by every task.
  int64_t* x_offs;
} cmlc_ix_scatter_t;

// The least update elements for threads.
enum { CMLC_IX_SCATTER_MIN_PARALLEL = 1 << 16, CMLC_IX_SCATTER_MIN_WINDOW = 256 };

// The operand offset of the window at indices offset |i_off|, or -1 when it does not fit.
static inline int64_t cmlc_ix_scatter_window(const cmlc_ix_scatter_t* c, int64_t i_off) {
  if (c->a_axis >= 0) {
    const cml_dtype_t dt = c->is->dtype;
    const int64_t v = dt == CML_DTYPE_I32   ? ((const int32_t*)c->indices)[i_off]
                      : dt == CML_DTYPE_I64 ? ((const int64_t*)c->indices)[i_off]
                                            : cmlc__mv_read_index(c->indices, dt, i_off);
    return c->others_fit && v >= 0 && v <= c->a_limit ? v * c->a_stride : -1;
  }
  const cml_scatter_dims_t* sd = c->sd;
  int64_t start[CML_MAX_RANK] = {0};
  for (int32_t k = 0; k < sd->scatter_axes_to_operand_axes_count; ++k)
    start[sd->scatter_axes_to_operand_axes[k]] =
        cmlc__mv_read_index(c->indices, c->is->dtype, i_off + k * c->vector_stride);
  int64_t x_off = 0;
  for (int32_t d = 0; d < c->xs->rank; ++d) {
    if (start[d] < 0 || start[d] > c->xs->dims[d] - c->window_size[d]) return -1;
    x_off += start[d] * c->xstrides[d];
  }
  return x_off;
}

// Windows [begin, end): c->x_offs.
static void cmlc_ix_scatter_offsets_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ix_scatter_t* c = (const cmlc_ix_scatter_t*)ctx;
  int64_t sidx[CML_MAX_RANK] = {0}, i_off = 0, rem = begin;
  for (int32_t d = c->scatter_rank - 1; d >= 0; --d) {
    sidx[d] = rem % c->sc_dims[d];
    rem /= c->sc_dims[d];
    i_off += sidx[d] * c->sc_istrides[d];
  }
  for (int64_t s = begin; s < end; ++s) {
    c->x_offs[s] = cmlc_ix_scatter_window(c, i_off);
    for (int32_t d = c->scatter_rank - 1; d >= 0; --d) {
      i_off += c->sc_istrides[d];
      if (++sidx[d] < c->sc_dims[d]) break;
      i_off -= c->sc_istrides[d] * c->sc_dims[d];
      sidx[d] = 0;
    }
  }
}

// One-element windows, or windows of one contiguous row (a graph's neighbour features, an
// embedding's gradient), summed with I32 / I64 indices: the loop of cmlc_ix_scatter_task without
// its odometers and combiner calls (a histogram's million updates into 65536 bins, 1 thread on
// Zen 5: about 30 -> 0.5 ms), along one scatter axis or several (a (row, col) pair per update:
// bench_ops' 65536 f32 updates at random places of [1024, 1024], 1 thread of a Xeon, the
// operand's copy included: 2.2 -> 0.74 ms). Operand offsets in [lo, hi) only. Element e of a
// window is added in order, as the combiner adds it.
#define CMLC_IX_ADD(T) o[xo + e] = (T)(o[xo + e] + u[s * ustride + e])
#define CMLC_IX_ADD_BF16 \
  o[xo + e] = cml__f32_to_bf16(cml__bf16_to_f32(o[xo + e]) + cml__bf16_to_f32(u[s * ustride + e]))
#define CMLC_IX_ADD_F16 \
  o[xo + e] = cml__f32_to_f16(cml__f16_to_f32(o[xo + e]) + cml__f16_to_f32(u[s * ustride + e]))
#define CMLC_IX_MAXMIN(T, M)         \
  {                                  \
    const T a_ = o[xo + e];          \
    const T b_ = u[s * ustride + e]; \
    o[xo + e] = M(a_, b_);           \
  }
// The combiner's float max / min, the common case (two ordered, unequal values) without a
// data-dependent branch (random updates mispredicted half of the comparisons).
#define CMLC_IX_FMAX_FAST(a, b)                                                          \
  (__builtin_expect((a) == (a) && (b) == (b) && (a) != (b), 1) ? ((b) > (a) ? (b) : (a)) \
                                                               : CMLC_IX_FMAX(a, b))
#define CMLC_IX_FMIN_FAST(a, b)                                                          \
  (__builtin_expect((a) == (a) && (b) == (b) && (a) != (b), 1) ? ((b) < (a) ? (b) : (a)) \
                                                               : CMLC_IX_FMIN(a, b))
#define CMLC_IX_IMAX(a, b) ((b) > (a) ? (b) : (a))
#define CMLC_IX_IMIN(a, b) ((b) < (a) ? (b) : (a))
#define CMLC_IX_ADD_WINDOW(ADD)              \
  do {                                       \
    if (len == 1) {                          \
      const int64_t e = 0;                   \
      ADD;                                   \
    } else {                                 \
      for (int64_t e = 0; e < len; ++e) ADD; \
    }                                        \
  } while (0)

// The combiner's float max / min over a row of |len| elements, as selects that vectorize: the
// larger (smaller) of two ordered values; of equal ones the bits ANDed (ORed): +0 for max of
// -0 and +0, -0 for min, the value itself otherwise; a NaN in o kept, else a NaN in u taken.
// (Rows of 8 at random places, 1 thread on Zen 4: 13 ns a row with a branch per element.)
#define CMLC_IX_ROW_MAXMIN(name, T, U, GT, BITOP, ATTR)  \
  ATTR static void name(T* o, const T* u, int64_t len) { \
    for (int64_t e = 0; e < len; ++e) {                  \
      const T a = o[e], b = u[e];                        \
      U ab, bb;                                          \
      memcpy(&ab, &a, sizeof ab);                        \
      memcpy(&bb, &b, sizeof bb);                        \
      const U eq = ab BITOP bb;                          \
      T q;                                               \
      memcpy(&q, &eq, sizeof q);                         \
      T r = b GT a ? b : a;                              \
      r = a == b ? q : r;                                \
      o[e] = (b != b && a == a) ? b : r;                 \
    }                                                    \
  }
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_max_f32, float, uint32_t, >, &, )
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_min_f32, float, uint32_t, <, |, )
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_max_f64, double, uint64_t, >, &, )
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_min_f64, double, uint64_t, <, |, )
#if defined(CMLC_HAVE_X86_64)
// The same selects for AVX2 (and AVX-512) backends: the compiler vectorizes them there (blends
// of compares), not at the SSE2 baseline (a segment max of [65536, 64] f32 rows into 1024:
// 6-8x xla:cpu's time, one element and three branches at a time). Elementwise selects: the
// same bits on every ISA.
#define CMLC_IX_AVX2 __attribute__((target("avx2")))
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_max_f32_avx2, float, uint32_t, >, &, CMLC_IX_AVX2)
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_min_f32_avx2, float, uint32_t, <, |, CMLC_IX_AVX2)
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_max_f64_avx2, double, uint64_t, >, &, CMLC_IX_AVX2)
CMLC_IX_ROW_MAXMIN(cmlc_ix_row_min_f64_avx2, double, uint64_t, <, |, CMLC_IX_AVX2)
#undef CMLC_IX_AVX2
#endif
#undef CMLC_IX_ROW_MAXMIN

// Sets c's row combiners of float ScatterMax / ScatterMin for the options' ISA.
static void cmlc_ix_pick_rows(cmlc_ix_scatter_t* c, const cmlc_options_t* options) {
  c->row_max_f32 = cmlc_ix_row_max_f32;
  c->row_min_f32 = cmlc_ix_row_min_f32;
  c->row_max_f64 = cmlc_ix_row_max_f64;
  c->row_min_f64 = cmlc_ix_row_min_f64;
#if defined(CMLC_HAVE_X86_64)
  if (options && !options->reference && options->isa >= CMLC_ISA_AVX2) {
    c->row_max_f32 = cmlc_ix_row_max_f32_avx2;
    c->row_min_f32 = cmlc_ix_row_min_f32_avx2;
    c->row_max_f64 = cmlc_ix_row_max_f64_avx2;
    c->row_min_f64 = cmlc_ix_row_min_f64_avx2;
  }
#else
  (void)options;
#endif
}
// A window of ScatterMax / ScatterMin: one element through FAST, a row through ROW.
#define CMLC_IX_MAXMIN_WINDOW(T, FAST, ROW)  \
  if (len == 1) {                            \
    const T a_ = o[xo], b_ = u[s * ustride]; \
    o[xo] = FAST(a_, b_);                    \
  } else {                                   \
    ROW(o + xo, u + s * ustride, len);       \
  }
#define CMLC_IX_UNIT_SUM(T, IT, ADD)                               \
  {                                                                \
    T* o = (T*)(void*)c->out;                                      \
    const T* u = (const T*)(const void*)c->updates;                \
    const IT* ix = (const IT*)c->indices;                          \
    if (nc == 1) {                                                 \
      const int64_t limit = c->unit_limit[0];                      \
      const int64_t astride = c->unit_stride[0];                   \
      for (int64_t s = 0; s < n; ++s) {                            \
        const int64_t v = ix[s * istride];                         \
        if (v < 0 || v > limit) continue;                          \
        const int64_t xo = v * astride;                            \
        if (xo >= lo && xo < hi) CMLC_IX_ADD_WINDOW(ADD);          \
      }                                                            \
      return true;                                                 \
    }                                                              \
    for (int64_t s = 0; s < n; ++s) {                              \
      const IT* iv = ix + s * istride;                             \
      int64_t xo = 0;                                              \
      int32_t k = 0;                                               \
      for (; k < nc; ++k) {                                        \
        const int64_t v = iv[k * vstride];                         \
        if (v < 0 || v > c->unit_limit[k]) break;                  \
        xo += v * c->unit_stride[k];                               \
      }                                                            \
      if (k == nc && xo >= lo && xo < hi) CMLC_IX_ADD_WINDOW(ADD); \
    }                                                              \
    return true;                                                   \
  }

// CMLC_IX_UNIT_SUM's loops with |WINDOW| a statement for the whole window.
#define CMLC_IX_UNIT_ROWS(T, IT, WINDOW)            \
  {                                                 \
    T* o = (T*)(void*)c->out;                       \
    const T* u = (const T*)(const void*)c->updates; \
    const IT* ix = (const IT*)c->indices;           \
    for (int64_t s = 0; s < n; ++s) {               \
      const IT* iv = ix + s * istride;              \
      int64_t xo = 0;                               \
      int32_t k = 0;                                \
      for (; k < nc; ++k) {                         \
        const int64_t v = iv[k * vstride];          \
        if (v < 0 || v > c->unit_limit[k]) break;   \
        xo += v * c->unit_stride[k];                \
      }                                             \
      if (k == nc && xo >= lo && xo < hi) {         \
        WINDOW                                      \
      }                                             \
    }                                               \
    return true;                                    \
  }

// Float ScatterMax / ScatterMin: rows through ROW, one-element windows through FAST.
#define CMLC_IX_FLOAT_MAXMIN(T, IT, FAST, ROW)                               \
  if (len > 1) CMLC_IX_UNIT_ROWS(T, IT, CMLC_IX_MAXMIN_WINDOW(T, FAST, ROW)) \
  CMLC_IX_UNIT_SUM(T, IT, CMLC_IX_MAXMIN(T, FAST))

#define CMLC_IX_UNIT_SUMS(IT)                                              \
  switch (c->unit_sum) {                                                   \
    case 1:                                                                \
      CMLC_IX_UNIT_SUM(float, IT, CMLC_IX_ADD(float))                      \
    case 2:                                                                \
      CMLC_IX_UNIT_SUM(double, IT, CMLC_IX_ADD(double))                    \
    case 3:                                                                \
      CMLC_IX_UNIT_SUM(uint32_t, IT, CMLC_IX_ADD(uint32_t))                \
    case 4:                                                                \
      CMLC_IX_UNIT_SUM(uint64_t, IT, CMLC_IX_ADD(uint64_t))                \
    case 5:                                                                \
      CMLC_IX_UNIT_SUM(uint16_t, IT, CMLC_IX_ADD_BF16)                     \
    case 6:                                                                \
      CMLC_IX_UNIT_SUM(uint16_t, IT, CMLC_IX_ADD_F16)                      \
    case 7:                                                                \
      CMLC_IX_FLOAT_MAXMIN(float, IT, CMLC_IX_FMAX_FAST, c->row_max_f32)   \
    case 8:                                                                \
      CMLC_IX_FLOAT_MAXMIN(float, IT, CMLC_IX_FMIN_FAST, c->row_min_f32)   \
    case 9:                                                                \
      CMLC_IX_FLOAT_MAXMIN(double, IT, CMLC_IX_FMAX_FAST, c->row_max_f64)  \
    case 10:                                                               \
      CMLC_IX_FLOAT_MAXMIN(double, IT, CMLC_IX_FMIN_FAST, c->row_min_f64)  \
    case 11:                                                               \
      CMLC_IX_UNIT_SUM(int32_t, IT, CMLC_IX_MAXMIN(int32_t, CMLC_IX_IMAX)) \
    case 12:                                                               \
      CMLC_IX_UNIT_SUM(int32_t, IT, CMLC_IX_MAXMIN(int32_t, CMLC_IX_IMIN)) \
    case 13:                                                               \
      CMLC_IX_UNIT_SUM(int64_t, IT, CMLC_IX_MAXMIN(int64_t, CMLC_IX_IMAX)) \
    default:                                                               \
      CMLC_IX_UNIT_SUM(int64_t, IT, CMLC_IX_MAXMIN(int64_t, CMLC_IX_IMIN)) \
  }

static bool cmlc_ix_scatter_unit_fast(const cmlc_ix_scatter_t* c, int64_t lo, int64_t hi) {
  if (c->unit_sum == 0 || c->unit_coords == 0 || c->scatter_rank != 1 || c->x_offs) return false;
  const cml_dtype_t it = c->is->dtype;
  if (it != CML_DTYPE_I32 && it != CML_DTYPE_I64) return false;
  if (!c->others_fit) return true;  // no window fits
  const int64_t n = c->scatter_count, istride = c->sc_istrides[0], ustride = c->sc_ustrides[0];
  const int64_t vstride = c->vector_stride;
  const int32_t nc = c->unit_coords;
  const int64_t len = c->unit_len;
  if (it == CML_DTYPE_I32) CMLC_IX_UNIT_SUMS(int32_t)
  CMLC_IX_UNIT_SUMS(int64_t)
}
#undef CMLC_IX_UNIT_SUMS
#undef CMLC_IX_UNIT_ROWS
#undef CMLC_IX_FLOAT_MAXMIN
#undef CMLC_IX_MAXMIN_WINDOW
#undef CMLC_IX_UNIT_SUM
#undef CMLC_IX_ADD_WINDOW
#undef CMLC_IX_IMIN
#undef CMLC_IX_IMAX
#undef CMLC_IX_FMIN_FAST
#undef CMLC_IX_FMAX_FAST
#undef CMLC_IX_MAXMIN
#undef CMLC_IX_ADD_F16
#undef CMLC_IX_ADD_BF16
#undef CMLC_IX_ADD

// Tasks [begin, end) of the operand's first axis (c->rows each): every window that starts
// there, in order.
static void cmlc_ix_scatter_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ix_scatter_t* c = (const cmlc_ix_scatter_t*)ctx;
  const int32_t wr = c->wr;
  const int64_t es = c->es, last = c->w_dims[wr - 1];
  const int64_t r0 = begin * c->rows, r1 = end * c->rows;  // of the operand's first axis
  // The same range as offsets (a fitting window's offset / xstrides[0] is its first row).
  const int64_t lo = r0 * c->xstrides[0], hi = r1 * c->xstrides[0];
  if (cmlc_ix_scatter_unit_fast(c, lo, hi)) return;
  int64_t sidx[CML_MAX_RANK] = {0};
  int64_t u_off = 0, i_off = 0;
  for (int64_t s = 0; s < c->scatter_count; ++s) {
    const int64_t x_off = c->x_offs ? c->x_offs[s] : cmlc_ix_scatter_window(c, i_off);
    if (x_off >= 0 && (c->xs->rank == 0 || (x_off >= lo && x_off < hi))) {
      // Walk the window rows (all window axes but the last) with an odometer (only its
      // wr - 1 used digits zeroed: a full zeroing per window cost more than one-element
      // windows' work).
      int64_t widx[CML_MAX_RANK];
      for (int32_t d = 0; d + 1 < wr; ++d) widx[d] = 0;
      int64_t xo = x_off, uo = u_off;
      for (int64_t row = 0; row < c->window_rows; ++row) {
        // (Rows shorter than a vector take the scalar combiner, the same bits: the row
        // conversions' tails cost more than the sums there.)
        if (c->half_sum && last >= 16 && c->w_xstrides[wr - 1] == 1 && c->w_ustrides[wr - 1] == 1) {
          cmlc_ix_half_sum_row(&c->hs, (uint16_t*)(void*)(c->out + xo * es),
                               (const uint16_t*)(const void*)(c->updates + uo * es), last);
        } else {
          c->combine(c->out + xo * es, c->w_xstrides[wr - 1], c->updates + uo * es,
                     c->w_ustrides[wr - 1], last);
        }
        for (int32_t d = wr - 2; d >= 0; --d) {
          xo += c->w_xstrides[d];
          uo += c->w_ustrides[d];
          if (++widx[d] < c->w_dims[d]) break;
          xo -= c->w_xstrides[d] * c->w_dims[d];
          uo -= c->w_ustrides[d] * c->w_dims[d];
          widx[d] = 0;
        }
      }
    }
    for (int32_t d = c->scatter_rank - 1; d >= 0; --d) {
      u_off += c->sc_ustrides[d];
      i_off += c->sc_istrides[d];
      if (++sidx[d] < c->sc_dims[d]) break;
      u_off -= c->sc_ustrides[d] * c->sc_dims[d];
      i_off -= c->sc_istrides[d] * c->sc_dims[d];
      sidx[d] = 0;
    }
  }
}

static cml_status_t cmlc_ix_scatter(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->output_shapes[0];  // the operand's shape
  const cml_shape_t* is = args->input_shapes[1];
  const cml_shape_t* us = args->input_shapes[2];
  cmlc_ix_scatter_t c;
  memset(&c, 0, sizeof c);
  cmlc_ix_pick_rows(&c, args->options);
  const cml_scatter_dims_t* sd = c.sd = &args->node->attrs->u.scatter;
  c.xs = xs;
  c.is = is;
  c.indices = args->inputs[1];
  c.combine = cmlc_ix_combiner(args->node->op, xs->dtype);
  c.hs.bf16 = xs->dtype == CML_DTYPE_BF16;
  if (args->node->op == CML_OP_SCATTER_SUM &&
      (xs->dtype == CML_DTYPE_BF16 || xs->dtype == CML_DTYPE_F16)) {
    c.hs.widen = cmlc_ew_simd_convert_fn(args->options, xs->dtype, CML_DTYPE_F32);
    if (xs->dtype == CML_DTYPE_F16) {
      c.hs.narrow = cmlc_ew_simd_convert_fn(args->options, CML_DTYPE_F32, CML_DTYPE_F16);
    }
  }
  c.half_sum = c.hs.widen && (c.hs.bf16 || c.hs.narrow);
  c.es = (int64_t)cmlc_dtype_size(xs->dtype);
  c.out = (char*)args->outputs[0];
  c.updates = (const char*)args->inputs[2];
  cmlc_ix_init_output(args);
  if (cml_shape_element_count(us) == 0 || cml_shape_element_count(xs) == 0) return CML_OK;

  int64_t istrides[CML_MAX_RANK], ustrides[CML_MAX_RANK];
  cmlc_row_major_strides(xs->rank, xs->dims, c.xstrides);
  cmlc_row_major_strides(is->rank, is->dims, istrides);
  cmlc_row_major_strides(us->rank, us->dims, ustrides);
  c.vector_stride = sd->index_vector_axis < is->rank ? istrides[sd->index_vector_axis] : 0;

  // Scatter axes of the updates (not window axes), matched in order with the indices' axes
  // other than the index vector axis.
  int32_t ia = 0;
  for (int32_t d = 0; d < us->rank; ++d) {
    if (cmlc_ix_contains(sd->update_window_axes, sd->update_window_axis_count, d)) continue;
    if (ia == sd->index_vector_axis) ++ia;
    c.sc_dims[c.scatter_rank] = us->dims[d];
    c.sc_ustrides[c.scatter_rank] = ustrides[d];
    c.sc_istrides[c.scatter_rank] = istrides[ia];
    ++c.scatter_rank;
    ++ia;
  }
  // Window: the i-th update window axis walks the i-th operand axis that is not inserted.
  for (int32_t d = 0; d < xs->rank; ++d) {
    if (cmlc_ix_contains(sd->inserted_window_axes, sd->inserted_window_axis_count, d)) {
      c.window_size[d] = 1;
      continue;
    }
    int64_t ua = sd->update_window_axes[c.wr];
    c.window_size[d] = us->dims[ua];
    c.w_dims[c.wr] = us->dims[ua];
    c.w_xstrides[c.wr] = c.xstrides[d];
    c.w_ustrides[c.wr] = ustrides[ua];
    ++c.wr;
  }
  if (c.wr == 0) {
    c.w_dims[0] = 1;
    c.w_xstrides[0] = c.w_ustrides[0] = 1;
    c.wr = 1;
  }
  c.scatter_count = 1;
  for (int32_t i = 0; i < c.scatter_rank; ++i) c.scatter_count *= c.sc_dims[i];
  c.window_rows = 1;
  for (int32_t i = 0; i < c.wr - 1; ++i) c.window_rows *= c.w_dims[i];
  c.a_axis = -1;
  if (sd->scatter_axes_to_operand_axes_count == 1) {
    const int64_t a = sd->scatter_axes_to_operand_axes[0];
    c.a_axis = (int32_t)a;
    c.a_limit = xs->dims[a] - c.window_size[a];
    c.a_stride = c.xstrides[a];
    c.others_fit = true;
    for (int32_t d = 0; d < xs->rank; ++d)
      if (d != a && c.window_size[d] > xs->dims[d]) c.others_fit = false;
  }
  if (sd->scatter_axes_to_operand_axes_count >= 1 && sd->scatter_axes_to_operand_axes_count <= 4) {
    // The one-element windows' coordinates (cmlc_ix_scatter_unit_fast); others_fit as above.
    c.unit_coords = sd->scatter_axes_to_operand_axes_count;
    c.others_fit = true;
    for (int32_t d = 0; d < xs->rank; ++d) {
      bool scattered = false;
      for (int32_t k = 0; k < c.unit_coords; ++k) {
        const int64_t a = sd->scatter_axes_to_operand_axes[k];
        if (a == d) scattered = true;
        c.unit_limit[k] = xs->dims[a] - c.window_size[a];
        c.unit_stride[k] = c.xstrides[a];
      }
      if (!scattered && c.window_size[d] > xs->dims[d]) c.others_fit = false;
    }
  }
  // One element, or one contiguous row (half rows of 16 and more keep the widening row sums).
  c.unit_len = c.w_dims[c.wr - 1];
  const bool half = xs->dtype == CML_DTYPE_BF16 || xs->dtype == CML_DTYPE_F16;
  if (args->node->op == CML_OP_SCATTER_SUM && c.window_rows == 1 &&
      (c.unit_len == 1 || (c.w_xstrides[c.wr - 1] == 1 && c.w_ustrides[c.wr - 1] == 1 &&
                           (!half || c.unit_len < 16)))) {
    switch (xs->dtype) {
      case CML_DTYPE_BF16:
        c.unit_sum = 5;
        break;
      case CML_DTYPE_F16:
        c.unit_sum = 6;
        break;
      case CML_DTYPE_F32:
        c.unit_sum = 1;
        break;
      case CML_DTYPE_F64:
        c.unit_sum = 2;
        break;
      case CML_DTYPE_I32:
      case CML_DTYPE_U32:
        c.unit_sum = 3;
        break;
      case CML_DTYPE_I64:
      case CML_DTYPE_U64:
        c.unit_sum = 4;
        break;
      default:
        break;
    }
  }
  // ScatterMax / ScatterMin of such windows (the combiner's max / min, element by element in
  // order: 262144 single elements into [100000] took 6.9x xla:cpu's time through the combiner).
  const bool max = args->node->op == CML_OP_SCATTER_MAX;
  if ((max || args->node->op == CML_OP_SCATTER_MIN) && c.window_rows == 1 &&
      (c.unit_len == 1 || (c.w_xstrides[c.wr - 1] == 1 && c.w_ustrides[c.wr - 1] == 1))) {
    switch (xs->dtype) {
      case CML_DTYPE_F32:
        c.unit_sum = max ? 7 : 8;
        break;
      case CML_DTYPE_F64:
        c.unit_sum = max ? 9 : 10;
        break;
      case CML_DTYPE_I32:
        c.unit_sum = max ? 11 : 12;
        break;
      case CML_DTYPE_I64:
        c.unit_sum = max ? 13 : 14;
        break;
      default:
        break;
    }
  }
  // Threads split the operand's first axis when the windows are one row thick there and long
  // enough: each task reads the updates of its rows only, out of order, which short windows pay
  // for in latency (a graph layer's 65536 windows of 64 floats on 2 threads: 5.2 ms split, 3.1
  // on one; an embedding gradient's 2048 windows of 512: 1.3 split, 1.4-1.7 on one).
  const int threads = cmlc_pool_thread_count(args->pool);
  const int64_t first = xs->rank > 0 ? xs->dims[0] : 1;  // a scalar operand: one "row"
  const int64_t window = c.scatter_count ? cml_shape_element_count(us) / c.scatter_count : 0;
  int64_t tasks = 1;
  if (threads > 1 && xs->rank > 0 && c.window_size[0] == 1 &&
      window >= CMLC_IX_SCATTER_MIN_WINDOW &&
      cml_shape_element_count(us) >= CMLC_IX_SCATTER_MIN_PARALLEL) {
    tasks = first < 2 * (int64_t)threads ? first : 2 * (int64_t)threads;
  }
  c.rows = (first + tasks - 1) / tasks;
  tasks = (first + c.rows - 1) / c.rows;
  if (tasks > 1 && args->scratch &&
      args->scratch_size >= cmlc_size_of(c.scatter_count, sizeof(int64_t))) {
    c.x_offs = (int64_t*)args->scratch;
    cmlc_parallel_for(args->pool, c.scatter_count, 4096, cmlc_ix_scatter_offsets_task, &c);
  }
  cmlc_parallel_for(tasks > 1 ? args->pool : NULL, tasks, 1, cmlc_ix_scatter_task, &c);
  return CML_OK;
}

// Scratch of a Scatter that threads may split: the windows' offsets (cmlc_ix_scatter_t).
static size_t cmlc_ix_scatter_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                      const cmlc_options_t* options) {
  if (!options || options->threads < 2 || node->input_count < 3) return 0;
  const cml_shape_t* us = &module->values[node->inputs[2]].shape;
  const cml_scatter_dims_t* sd = &node->attrs->u.scatter;
  if (cml_shape_element_count(us) < CMLC_IX_SCATTER_MIN_PARALLEL) return 0;
  int64_t windows = 1;
  for (int32_t d = 0; d < us->rank; ++d) {
    if (!cmlc_ix_contains(sd->update_window_axes, sd->update_window_axis_count, d)) {
      windows *= us->dims[d];
    }
  }
  if (windows == 0 || cml_shape_element_count(us) / windows < CMLC_IX_SCATTER_MIN_WINDOW) return 0;
  return cmlc_size_of(windows, sizeof(int64_t));  // saturating
}

//===--- dispatch ---===//

bool cmlc_kernels_index_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)options;
  if (module == NULL || node == NULL || out == NULL || node->input_count < 1) return false;
  const cml_dtype_t dtype = module->values[node->inputs[0]].shape.dtype;
  if (cmlc_dtype_size(dtype) == 0) return false;
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  // Index operands must be integers.
  uint32_t first_index = 1, index_count = 0;
  switch (node->op) {
    case CML_OP_DYNAMIC_SLICE:
      e.run = cmlc_ix_dynamic_slice;
      first_index = 1;
      index_count = node->input_count - 1;
      break;
    case CML_OP_DYNAMIC_UPDATE_SLICE:
      e.run = cmlc_ix_dynamic_update_slice;
      e.in_place_input = 0;
      first_index = 2;
      index_count = node->input_count >= 2 ? node->input_count - 2 : 0;
      break;
    case CML_OP_GATHER:
      e.run = cmlc_ix_gather;
      index_count = 1;
      break;
    case CML_OP_SCATTER_SUM:
    case CML_OP_SCATTER_MAX:
    case CML_OP_SCATTER_MIN:
      if (cmlc_ix_combiner(node->op, dtype) == NULL) return false;
      e.run = cmlc_ix_scatter;
      e.scratch = cmlc_ix_scatter_scratch;
      e.in_place_input = 0;
      index_count = 1;
      break;
    default:
      return false;
  }
  for (uint32_t i = first_index; i < first_index + index_count && i < node->input_count; ++i) {
    cml_dtype_t d = module->values[node->inputs[i]].shape.dtype;
    if (!cml_dtype_is_int(d) || cml_dtype_is_packed(d)) return false;
  }
  *out = e;
  return true;
}

void cmlc_kernels_index_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_INDEX);
}
