// SPDX-License-Identifier: Apache-2.0
// kernels/generic/window.c: kernels of the "window" group: ReduceWindow and
// SelectAndScatterMax/Min/Sum, with XLA's semantics.
//
// Geometry (per axis): the input is dilated by the base dilation (holes between elements),
// padded by padding_low/high, and the window (dilated by the window dilation) moves with the
// stride. Window element k of output position o reads padded position
// p = o * stride + k * window_dilation - padding_low, which is an input element when
// p >= 0, p % base_dilation == 0 and p / base_dilation < dim; padding and holes are neither
// read nor selected (for ReduceWindow they hold the reduction's identity).
//
// - ReduceWindow: integers wrap (sums and products in unsigned arithmetic); floats accumulate
//   in their own precision, f16/bf16 in f32 rounded once; Max/Min propagate NaN. Parallel over
//   output elements, so results do not depend on the thread count.
// - SelectAndScatterMax/Min: the selection walks the window in row-major order and moves to a
//   candidate when !(current >= candidate) (<= for Min), as XLA's `ge` select function does:
//   the first maximum wins ties. The output starts at 0 and the source elements are added in
//   row-major order of the source (integers wrap; f16/bf16 accumulate in f32, rounded once).
// - SelectAndScatterSum: each source element is added to every input element of its window.
#include <math.h>
#include <string.h>

#include "backends/c/kernels/generic/elementwise_internal.h"
#include "backends/c/kernels/generic/movement_internal.h"

typedef struct cmlc_wn_geom_t {
  int32_t rank;
  int64_t in_dims[CML_MAX_RANK];
  int64_t in_strides[CML_MAX_RANK];
  int64_t out_dims[CML_MAX_RANK];
  int64_t window[CML_MAX_RANK];
  int64_t stride[CML_MAX_RANK];
  int64_t base_dil[CML_MAX_RANK];
  int64_t win_dil[CML_MAX_RANK];
  int64_t pad_lo[CML_MAX_RANK];
} cmlc_wn_geom_t;

static int64_t cmlc_wn_or_one(int64_t v) { return v > 0 ? v : 1; }

// Fills |g| from the operand shape, the window-positions shape and the node's window config.
static void cmlc_wn_geom_init(cmlc_wn_geom_t* g, const cml_shape_t* in, const cml_shape_t* out,
                              const cml_window_config_t* w) {
  memset(g, 0, sizeof *g);
  if (in->rank == 0) {
    g->rank = 1;
    g->in_dims[0] = g->out_dims[0] = g->in_strides[0] = 1;
    g->window[0] = g->stride[0] = g->base_dil[0] = g->win_dil[0] = 1;
    return;
  }
  g->rank = in->rank;
  cmlc_row_major_strides(in->rank, in->dims, g->in_strides);
  for (int32_t d = 0; d < in->rank; ++d) {
    g->in_dims[d] = in->dims[d];
    g->out_dims[d] = out->dims[d];
    g->window[d] = w->window_dims[d];
    g->stride[d] = w->strides[d] > 0 ? w->strides[d] : cmlc_wn_or_one(w->window_dims[d]);
    g->base_dil[d] = cmlc_wn_or_one(w->input_dilations[d]);
    g->win_dil[d] = cmlc_wn_or_one(w->window_dilations[d]);
    g->pad_lo[d] = w->padding_low[d];
  }
}

// Whether axis |d| passes through the window (window 1, stride 1, no dilation or padding:
// output position o reads input o alone).
static bool cmlc_wn_passes(const cmlc_wn_geom_t* g, const cml_window_config_t* w, int32_t d) {
  return g->window[d] == 1 && g->stride[d] == 1 && g->base_dil[d] == 1 && g->pad_lo[d] == 0 &&
         w->padding_high[d] == 0;
}

// Decodes the row-major output position |i| into |o|.
static inline __attribute__((always_inline)) void cmlc_wn_decode(const cmlc_wn_geom_t* g, int64_t i,
                                                                 int64_t* o) {
  for (int32_t d = g->rank - 1; d >= 0; --d) {
    o[d] = i % g->out_dims[d];
    i /= g->out_dims[d];
  }
}

// The taps of one axis for one output position: the window elements that read an input
// element (not padding, not a base-dilation hole), in increasing window order. Only those are
// visited, so a huge window (up to 2^55, see CML__ATTR_MAX) over a small input costs what the
// input costs. It walks the window elements or the input elements, whichever range is shorter;
// window element k reads padded position p = base + k * win_dil, input element i sits at
// p = i * base_dil. Shape inference bounds every size and padding by 2^55, so no overflow.
typedef struct cmlc_wn_axis_t {
  int64_t cur, last;  // the current and the last candidate (window or input index)
  bool by_input;
  bool dense;  // base dilation 1, walking the window: every candidate is a tap
  int64_t base, win_dil, base_dil;
  int64_t input;  // the input index of the current tap
} cmlc_wn_axis_t;

static int64_t cmlc_wn_floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t cmlc_wn_ceil_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// Whether the current candidate is a tap; sets it->input.
static inline bool cmlc_wn_axis_hit(cmlc_wn_axis_t* it) {
  if (it->by_input) {
    it->input = it->cur;
    return (it->cur * it->base_dil - it->base) % it->win_dil == 0;
  }
  const int64_t p = it->base + it->cur * it->win_dil;
  it->input = p / it->base_dil;
  return p % it->base_dil == 0;
}

// Advances to the next tap; false past the last one.
static inline bool cmlc_wn_axis_next(cmlc_wn_axis_t* it) {
  if (it->dense) {
    it->input += it->win_dil;
    return ++it->cur <= it->last;
  }
  while (++it->cur <= it->last) {
    if (cmlc_wn_axis_hit(it)) return true;
  }
  return false;
}

// Starts |it| at the first tap of output position |o| along axis |d|; false when there is none.
static inline bool cmlc_wn_axis_first(cmlc_wn_axis_t* it, const struct cmlc_wn_geom_t* g, int32_t d,
                                      int64_t o) {
  const int64_t base = o * g->stride[d] - g->pad_lo[d];
  const int64_t wdil = g->win_dil[d], bdil = g->base_dil[d], dim = g->in_dims[d];
  it->base = base;
  it->win_dil = wdil;
  it->base_dil = bdil;
  if (dim == 0) return false;
  // Window elements whose position lies in [0, (dim - 1) * bdil].
  const int64_t in_last = (dim - 1) * bdil;
  int64_t k0 = wdil == 1 ? -base : cmlc_wn_ceil_div(-base, wdil);
  int64_t k1 = wdil == 1 ? in_last - base : cmlc_wn_floor_div(in_last - base, wdil);
  if (k0 < 0) k0 = 0;
  if (k1 > g->window[d] - 1) k1 = g->window[d] - 1;
  if (k1 < k0) return false;
  if (bdil == 1) {  // every such element reads one
    it->dense = true;
    it->by_input = false;
    it->cur = k0;
    it->last = k1;
    it->input = base + k0 * wdil;
    return true;
  }
  // Input elements inside the window's span.
  int64_t i0 = cmlc_wn_ceil_div(base, bdil);
  int64_t i1 = cmlc_wn_floor_div(base + (g->window[d] - 1) * wdil, bdil);
  if (i0 < 0) i0 = 0;
  if (i1 > dim - 1) i1 = dim - 1;
  if (i1 < i0) return false;
  it->dense = false;
  it->by_input = i1 - i0 < k1 - k0;
  it->cur = it->by_input ? i0 : k0;
  it->last = it->by_input ? i1 : k1;
  return cmlc_wn_axis_hit(it) || cmlc_wn_axis_next(it);
}

// The input elements of the window at one output position, in row-major window order, as runs:
// a run is |count| elements at operand offsets start, start + step, ... One run covers a whole
// row of the last axis when that axis has no base dilation, otherwise one element. Usage:
//
//   cmlc_wn_runs_t r;
//   int64_t at, step, n;
//   cmlc_wn_runs_start(&r, g, o);
//   while (cmlc_wn_runs_next(&r, &at, &step, &n)) {
//     for (; n > 0; --n, at += step) ... element at operand offset |at| ...
//   }
typedef struct cmlc_wn_runs_t {
  const cmlc_wn_geom_t* g;
  const int64_t* o;  // the output position (g->rank indices)
  cmlc_wn_axis_t it[CML_MAX_RANK];
  bool more;        // the axes hold a tap not yet returned
  int64_t row_off;  // when |more|: the operand offset of the current row (axes 0..rank-2)
} cmlc_wn_runs_t;

// Sets r->row_off from the taps of axes 0..rank-2.
static inline __attribute__((always_inline)) void cmlc_wn_runs_row_off(cmlc_wn_runs_t* r) {
  const cmlc_wn_geom_t* g = r->g;
  int64_t off = 0;
  for (int32_t d = 0; d < g->rank - 1; ++d) off += r->it[d].input * g->in_strides[d];
  r->row_off = off;
}

static inline __attribute__((always_inline)) void cmlc_wn_runs_start(cmlc_wn_runs_t* r,
                                                                     const cmlc_wn_geom_t* g,
                                                                     const int64_t* o) {
  r->g = g;
  r->o = o;
  bool more = true;
  for (int32_t d = 0; d < g->rank && more; ++d) more = cmlc_wn_axis_first(&r->it[d], g, d, o[d]);
  r->more = more;
  if (more) cmlc_wn_runs_row_off(r);
}

// Moves to the first tap of the next row (odometer over axes 0..rank-2); clears r->more past the
// last one.
static inline __attribute__((always_inline)) void cmlc_wn_runs_next_row(cmlc_wn_runs_t* r) {
  const cmlc_wn_geom_t* g = r->g;
  const int32_t rank = g->rank;
  int32_t d = rank - 2;
  while (d >= 0 && !cmlc_wn_axis_next(&r->it[d])) --d;
  r->more = d >= 0;
  if (!r->more) return;
  for (int32_t e = d + 1; e < rank - 1; ++e) cmlc_wn_axis_first(&r->it[e], g, e, r->o[e]);
  cmlc_wn_axis_first(&r->it[rank - 1], g, rank - 1, r->o[rank - 1]);
  cmlc_wn_runs_row_off(r);
}

// The next run (see cmlc_wn_runs_t), or false when every element was returned.
static inline __attribute__((always_inline)) bool cmlc_wn_runs_next(cmlc_wn_runs_t* r,
                                                                    int64_t* start, int64_t* step,
                                                                    int64_t* count) {
  if (!r->more) return false;
  const cmlc_wn_geom_t* g = r->g;
  cmlc_wn_axis_t* last = &r->it[g->rank - 1];
  const int64_t lst = g->in_strides[g->rank - 1];
  *start = r->row_off + last->input * lst;
  if (last->dense) {  // the whole row at once
    *step = last->win_dil * lst;
    *count = last->last - last->cur + 1;
    cmlc_wn_runs_next_row(r);
    return true;
  }
  *step = 0;
  *count = 1;
  if (!cmlc_wn_axis_next(last)) cmlc_wn_runs_next_row(r);
  return true;
}

//===--- ReduceWindow ---===//

typedef struct cmlc_wn_rw_t {
  cmlc_wn_geom_t g;
  const void* in;
  void* out;
} cmlc_wn_rw_t;

// One reduce-window kernel: T element type, A accumulator, LOAD(T) -> A, STORE(A) -> T.
#define CMLC_WN_RW_FN(name, T, A, INIT, LOAD, STORE, COMBINE)                 \
  static void name(void* ctx, int64_t begin, int64_t end, int thread_index) { \
    (void)thread_index;                                                       \
    const cmlc_wn_rw_t* c_ = (const cmlc_wn_rw_t*)ctx;                        \
    const cmlc_wn_geom_t* g_ = &c_->g;                                        \
    const T* in_ = (const T*)c_->in;                                          \
    T* out_ = (T*)c_->out;                                                    \
    int64_t o_[CML_MAX_RANK];                                                 \
    for (int64_t i_ = begin; i_ < end; ++i_) {                                \
      cmlc_wn_decode(g_, i_, o_);                                             \
      A acc = (INIT);                                                         \
      cmlc_wn_runs_t r_;                                                      \
      int64_t at_, step_, n_;                                                 \
      cmlc_wn_runs_start(&r_, g_, o_);                                        \
      while (cmlc_wn_runs_next(&r_, &at_, &step_, &n_)) {                     \
        for (; n_ > 0; --n_, at_ += step_) {                                  \
          const A v = LOAD(in_[at_]);                                         \
          COMBINE(acc, v);                                                    \
        }                                                                     \
      }                                                                       \
      out_[i_] = STORE(acc);                                                  \
    }                                                                         \
  }

#define CMLC_WN_ID(x) (x)
#define CMLC_WN_TO_U64(x) ((uint64_t)(x))
#define CMLC_WN_ADD(acc, v) ((acc) += (v))
#define CMLC_WN_MUL(acc, v) ((acc) *= (v))
#define CMLC_WN_IMAX(acc, v) ((acc) = (v) > (acc) ? (v) : (acc))
#define CMLC_WN_IMIN(acc, v) ((acc) = (v) < (acc) ? (v) : (acc))
// NaN-propagating: once the accumulator is NaN it stays NaN. -0 < +0, as XLA's max / min: a
// tie keeps the accumulator unless its sign decides (Max replaces a -0, Min keeps it). Written
// with copysign rather than signbit so that the row loops still vectorize at the baseline ISA
// (SSE2 has no 64-bit compare for a double's sign bit).
#define CMLC_WN_NEGATIVE(x) \
  (_Generic((x), float : copysignf(1.0f, (float)(x)), default : copysign(1.0, (double)(x))) < 0)
#define CMLC_WN_FMAX(acc, v)                         \
  ((acc) = ((v) != (v) || (v) > (acc))       ? (v)   \
           : ((acc) != (acc) || (v) < (acc)) ? (acc) \
           : CMLC_WN_NEGATIVE(acc)           ? (v)   \
                                             : (acc))
#define CMLC_WN_FMIN(acc, v)                         \
  ((acc) = ((v) != (v) || (v) < (acc))       ? (v)   \
           : ((acc) != (acc) || (v) > (acc)) ? (acc) \
           : CMLC_WN_NEGATIVE(acc)           ? (acc) \
                                             : (v))

// The kernels of one generator |GEN| (CMLC_WN_RW_FN or CMLC_WN_SCAN_FN) for every dtype and
// reduction: |pre|_{sum,prod,max,min}_|suffix|.
#define CMLC_WN_INT_KERNELS(GEN, pre, suffix, T, TMIN, TMAX)                 \
  GEN(pre##_sum_##suffix, T, uint64_t, 0, CMLC_WN_TO_U64, (T), CMLC_WN_ADD)  \
  GEN(pre##_prod_##suffix, T, uint64_t, 1, CMLC_WN_TO_U64, (T), CMLC_WN_MUL) \
  GEN(pre##_max_##suffix, T, T, TMIN, CMLC_WN_ID, CMLC_WN_ID, CMLC_WN_IMAX)  \
  GEN(pre##_min_##suffix, T, T, TMAX, CMLC_WN_ID, CMLC_WN_ID, CMLC_WN_IMIN)
#define CMLC_WN_FLOAT_KERNELS(GEN, pre, suffix, T, A, LOAD, STORE)         \
  GEN(pre##_sum_##suffix, T, A, (A)0, LOAD, STORE, CMLC_WN_ADD)            \
  GEN(pre##_prod_##suffix, T, A, (A)1, LOAD, STORE, CMLC_WN_MUL)           \
  GEN(pre##_max_##suffix, T, A, (A)(-INFINITY), LOAD, STORE, CMLC_WN_FMAX) \
  GEN(pre##_min_##suffix, T, A, (A)INFINITY, LOAD, STORE, CMLC_WN_FMIN)
#define CMLC_WN_ALL_KERNELS(GEN, pre)                                                   \
  CMLC_WN_INT_KERNELS(GEN, pre, i8, int8_t, INT8_MIN, INT8_MAX)                         \
  CMLC_WN_INT_KERNELS(GEN, pre, i16, int16_t, INT16_MIN, INT16_MAX)                     \
  CMLC_WN_INT_KERNELS(GEN, pre, i32, int32_t, INT32_MIN, INT32_MAX)                     \
  CMLC_WN_INT_KERNELS(GEN, pre, i64, int64_t, INT64_MIN, INT64_MAX)                     \
  CMLC_WN_INT_KERNELS(GEN, pre, u8, uint8_t, 0, UINT8_MAX)                              \
  CMLC_WN_INT_KERNELS(GEN, pre, u16, uint16_t, 0, UINT16_MAX)                           \
  CMLC_WN_INT_KERNELS(GEN, pre, u32, uint32_t, 0, UINT32_MAX)                           \
  CMLC_WN_INT_KERNELS(GEN, pre, u64, uint64_t, 0, UINT64_MAX)                           \
  CMLC_WN_FLOAT_KERNELS(GEN, pre, f32, float, float, CMLC_WN_ID, CMLC_WN_ID)            \
  CMLC_WN_FLOAT_KERNELS(GEN, pre, f64, double, double, CMLC_WN_ID, CMLC_WN_ID)          \
  CMLC_WN_FLOAT_KERNELS(GEN, pre, f16, uint16_t, float, cml_f16_to_f32, cml_f32_to_f16) \
  CMLC_WN_FLOAT_KERNELS(GEN, pre, bf16, uint16_t, float, cml_bf16_to_f32, cml_f32_to_bf16)
// The table of one kernel family: rows in cmlc_wn_dtype_slot's order, columns Sum, Product,
// Max, Min.
#define CMLC_WN_ROW(pre, suffix) \
  { pre##_sum_##suffix, pre##_prod_##suffix, pre##_max_##suffix, pre##_min_##suffix }
#define CMLC_WN_TABLE(pre)                                                                         \
  {                                                                                                \
    CMLC_WN_ROW(pre, i8), CMLC_WN_ROW(pre, i16), CMLC_WN_ROW(pre, i32), CMLC_WN_ROW(pre, i64),     \
        CMLC_WN_ROW(pre, u8), CMLC_WN_ROW(pre, u16), CMLC_WN_ROW(pre, u32), CMLC_WN_ROW(pre, u64), \
        CMLC_WN_ROW(pre, f32), CMLC_WN_ROW(pre, f64), CMLC_WN_ROW(pre, f16),                       \
        CMLC_WN_ROW(pre, bf16)                                                                     \
  }
enum { CMLC_WN_DTYPE_SLOTS = 12 };

// The row of |dtype| in a kernel table, or -1.
static int cmlc_wn_dtype_slot(cml_dtype_t dtype) {
  static const cml_dtype_t order[CMLC_WN_DTYPE_SLOTS] = {
      CML_DTYPE_I8,  CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64, CML_DTYPE_U8,  CML_DTYPE_U16,
      CML_DTYPE_U32, CML_DTYPE_U64, CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16, CML_DTYPE_BF16};
  for (int i = 0; i < CMLC_WN_DTYPE_SLOTS; ++i) {
    if (order[i] == dtype) return i;
  }
  return -1;
}

// |table|'s kernel for |dtype| and |type|, or NULL.
static cmlc_task_fn cmlc_wn_pick(const cmlc_task_fn (*table)[4], cml_dtype_t dtype,
                                 cml_reduce_type_t type) {
  const int slot = cmlc_wn_dtype_slot(dtype);
  if (slot < 0 || type < CML_REDUCE_SUM || type > CML_REDUCE_MIN) return NULL;
  return table[slot][(int)type - (int)CML_REDUCE_SUM];
}

CMLC_WN_ALL_KERNELS(CMLC_WN_RW_FN, cmlc_wn_rw)
static const cmlc_task_fn cmlc_wn_rw_table[CMLC_WN_DTYPE_SLOTS][4] = CMLC_WN_TABLE(cmlc_wn_rw);

//===--- ReduceWindow as a running scan: windows that all start before the input ---===//

// One axis whose windows all start at or before its first element (padding_low >= the output
// positions - 1) with stride and dilations 1, every other axis passed through: output
// position o combines inputs 0 .. o + shift (shift = window - 1 - padding_low) in that order
// from the identity, as the per-element kernel does (cumulative sums, products, maxima, as
// hand-written and TPU-style scans express them). The running result adds each input once
// instead of once per window, and its bits are the per-element kernel's.
typedef struct cmlc_wn_scan_t {
  const void* in;
  void* out;
  int64_t n, out_n;  // elements and output positions along the axis
  int64_t shift;
  int64_t inner;   // elements per position (the axes after it)
  int64_t outer;   // lines (the product of the axes before it)
  int64_t blocks;  // blocks of CMLC_WN_SCAN_BLOCK inner elements per outer index
} cmlc_wn_scan_t;
enum { CMLC_WN_SCAN_BLOCK = 64, CMLC_WN_SCAN_LINES = 8 };

// Task t: with inner > 1, outer index t / blocks and the inner elements of block t % blocks
// (lanes along the row); with inner 1, the CMLC_WN_SCAN_LINES lines from t * that (lanes
// across lines, so that the dependent combines of several lines overlap).
#define CMLC_WN_SCAN_FN(name, T, A, INIT, LOAD, STORE, COMBINE)                                 \
  static void name(void* ctx, int64_t begin, int64_t end, int thread_index) {                   \
    (void)thread_index;                                                                         \
    const cmlc_wn_scan_t* c_ = (const cmlc_wn_scan_t*)ctx;                                      \
    const int64_t inner_ = c_->inner, n_ = c_->n, out_n_ = c_->out_n;                           \
    for (int64_t t_ = begin; t_ < end; ++t_) {                                                  \
      int64_t j_ = 0; /* inputs combined so far */                                              \
      if (inner_ == 1) {                                                                        \
        const int64_t r0_ = t_ * CMLC_WN_SCAN_LINES;                                            \
        const int64_t m_ =                                                                      \
            c_->outer - r0_ < CMLC_WN_SCAN_LINES ? c_->outer - r0_ : CMLC_WN_SCAN_LINES;        \
        const T* src_[CMLC_WN_SCAN_LINES];                                                      \
        A acc_[CMLC_WN_SCAN_LINES];                                                             \
        for (int r_ = 0; r_ < CMLC_WN_SCAN_LINES; ++r_) { /* lines past the end repeat one */   \
          src_[r_] = (const T*)c_->in + (r0_ + (r_ < m_ ? r_ : m_ - 1)) * n_;                   \
          acc_[r_] = (INIT);                                                                    \
        }                                                                                       \
        T* out_ = (T*)c_->out + r0_ * out_n_;                                                   \
        for (int64_t o_ = 0; o_ < out_n_; ++o_) {                                               \
          const int64_t last_ = o_ + c_->shift < n_ - 1 ? o_ + c_->shift : n_ - 1;              \
          for (; j_ <= last_; ++j_) {                                                           \
            for (int r_ = 0; r_ < CMLC_WN_SCAN_LINES; ++r_) {                                   \
              const A v_ = LOAD(src_[r_][j_]);                                                  \
              COMBINE(acc_[r_], v_);                                                            \
            }                                                                                   \
          }                                                                                     \
          for (int64_t r_ = 0; r_ < m_; ++r_) out_[r_ * out_n_ + o_] = STORE(acc_[r_]);         \
        }                                                                                       \
        continue;                                                                               \
      }                                                                                         \
      const int64_t outer_ = t_ / c_->blocks, i0_ = (t_ % c_->blocks) * CMLC_WN_SCAN_BLOCK;     \
      const int64_t m_ = inner_ - i0_ < CMLC_WN_SCAN_BLOCK ? inner_ - i0_ : CMLC_WN_SCAN_BLOCK; \
      const T* in_ = (const T*)c_->in + outer_ * n_ * inner_ + i0_;                             \
      T* out_ = (T*)c_->out + outer_ * out_n_ * inner_ + i0_;                                   \
      A acc_[CMLC_WN_SCAN_BLOCK];                                                               \
      for (int64_t l_ = 0; l_ < m_; ++l_) acc_[l_] = (INIT);                                    \
      for (int64_t o_ = 0; o_ < out_n_; ++o_) {                                                 \
        const int64_t last_ = o_ + c_->shift < n_ - 1 ? o_ + c_->shift : n_ - 1;                \
        for (; j_ <= last_; ++j_) {                                                             \
          const T* row_ = in_ + j_ * inner_;                                                    \
          for (int64_t l_ = 0; l_ < m_; ++l_) {                                                 \
            const A v_ = LOAD(row_[l_]);                                                        \
            COMBINE(acc_[l_], v_);                                                              \
          }                                                                                     \
        }                                                                                       \
        T* dst_ = out_ + o_ * inner_;                                                           \
        for (int64_t l_ = 0; l_ < m_; ++l_) dst_[l_] = STORE(acc_[l_]);                         \
      }                                                                                         \
    }                                                                                           \
  }
CMLC_WN_ALL_KERNELS(CMLC_WN_SCAN_FN, cmlc_wn_scan)
static const cmlc_task_fn cmlc_wn_scan_table[CMLC_WN_DTYPE_SLOTS][4] = CMLC_WN_TABLE(cmlc_wn_scan);

// Runs the scan kernels when the window is a running scan along one axis (cmlc_wn_scan_t);
// false otherwise.
static bool cmlc_wn_scan(const cmlc_kernel_args_t* args, const cmlc_wn_geom_t* g) {
  const cml_window_config_t* w = &args->node->attrs->u.window;
  int32_t axis = -1;
  for (int32_t d = 0; d < g->rank; ++d) {
    if (cmlc_wn_passes(g, w, d)) continue;
    if (axis >= 0 || g->stride[d] != 1 || g->base_dil[d] != 1 || g->win_dil[d] != 1 ||
        g->pad_lo[d] < g->out_dims[d] - 1) {
      return false;
    }
    axis = d;
  }
  cmlc_task_fn fn = cmlc_wn_pick(cmlc_wn_scan_table, args->input_shapes[0]->dtype,
                                 args->node->attrs->reduce_type);
  if (axis < 0 || fn == NULL) return false;
  cmlc_wn_scan_t c;
  c.in = args->inputs[0];
  c.out = args->outputs[0];
  c.n = g->in_dims[axis];
  c.out_n = g->out_dims[axis];
  c.shift = g->window[axis] - 1 - g->pad_lo[axis];
  c.inner = 1;
  for (int32_t d = axis + 1; d < g->rank; ++d) c.inner *= g->in_dims[d];
  c.outer = 1;
  for (int32_t d = 0; d < axis; ++d) c.outer *= g->in_dims[d];
  c.blocks = (c.inner + CMLC_WN_SCAN_BLOCK - 1) / CMLC_WN_SCAN_BLOCK;
  int64_t tasks = c.outer * c.blocks,
          lanes = c.inner < CMLC_WN_SCAN_BLOCK ? c.inner : CMLC_WN_SCAN_BLOCK;
  if (c.inner == 1) {
    tasks = (c.outer + CMLC_WN_SCAN_LINES - 1) / CMLC_WN_SCAN_LINES;
    lanes = CMLC_WN_SCAN_LINES;
  }
  const int64_t per_task = (c.n + c.out_n) * lanes;
  const int64_t chunk = 16384 / (per_task > 0 ? per_task : 1);
  cmlc_parallel_for(args->pool, tasks, chunk < 1 ? 1 : chunk, fn, &c);
  return true;
}

//===--- ReduceWindow over rows: trailing axes the window passes through ---===//

// When the trailing axes have window 1, stride 1 and no padding or dilation (NHWC pooling: the
// channels), every tap of an output position is a whole contiguous row of |len| elements (the
// product of those axes): the kernel combines rows, |len| lanes at a time, instead of walking
// the window per element. |lead| is the geometry of the other axes with one trailing axis of
// |len| elements and window 1 (its taps' offsets are the rows' starts).
typedef struct cmlc_wn_rows_t {
  cmlc_wn_geom_t lead;
  int64_t len;
  const void* in;
  void* out;
  // f16 / bf16: the storage dtype, the reduction, and the SIMD conversions (NULL: scalar).
  cml_dtype_t dtype;
  cml_reduce_type_t type;
  cmlc_ew_convert_fn widen, narrow;
} cmlc_wn_rows_t;

// Lanes of f32 accumulators per pass for f16 / bf16 rows (on the stack).
enum { CMLC_WN_ROW_BLOCK = 256 };

// The accumulator of a row kernel: CMLC_WN_ROW_BLOCK lanes placed in |buf| (CMLC_WN_ACC_SPAN
// bytes) at the 512-byte offset, modulo 4 KiB, farthest from the window positions' input
// addresses that |first| (the row's first position) stands for. An accumulator stored and
// reloaded once per window position runs several times slower when its address matches an
// input row's in the low 12 bits (store/load address aliasing), and where the stack sits is
// chance; the rows of one output differ by whole input rows and columns, so their low bits
// are close to the first one's, which the accumulator avoids by half a page.
enum { CMLC_WN_ACC_SPAN = 4096 + CMLC_WN_ROW_BLOCK * 8 + 64 };
static inline void* cmlc_wn_acc_place(void* buf, const void* first) {
  const uintptr_t b = ((uintptr_t)buf + 63) & ~(uintptr_t)63;
  const uintptr_t want = ((uintptr_t)first + 2048) & 4095;
  const uintptr_t shift = (want - (b & 4095)) & 4095 & ~(uintptr_t)63;
  return (void*)(b + shift);
}

// One row kernel: T storage, A accumulator (T itself for f32 / f64, f32 for halves: then
// passes of CMLC_WN_ROW_BLOCK lanes), INIT the identity, COMBINE as the per-element kernels.
// The accumulator is placed away from the input rows' addresses (cmlc_wn_acc_place).
#define CMLC_WN_ROWS_FN(name, T, A, INIT, LOAD, STORE, COMBINE)                             \
  static void name(void* ctx, int64_t begin, int64_t end, int thread_index) {               \
    (void)thread_index;                                                                     \
    const cmlc_wn_rows_t* c_ = (const cmlc_wn_rows_t*)ctx;                                  \
    const cmlc_wn_geom_t* g_ = &c_->lead;                                                   \
    const T* in_ = (const T*)c_->in;                                                        \
    T* out_ = (T*)c_->out;                                                                  \
    const int64_t len_ = c_->len;                                                           \
    _Alignas(64) unsigned char acc_buf_[CMLC_WN_ACC_SPAN];                                  \
    int64_t o_[CML_MAX_RANK];                                                               \
    for (int64_t i_ = begin; i_ < end; ++i_) {                                              \
      cmlc_wn_decode(g_, i_* len_, o_); /* the row's first element */                       \
      for (int64_t j0_ = 0; j0_ < len_; j0_ += CMLC_WN_ROW_BLOCK) {                         \
        const int64_t n_ = len_ - j0_ < CMLC_WN_ROW_BLOCK ? len_ - j0_ : CMLC_WN_ROW_BLOCK; \
        cmlc_wn_runs_t r_;                                                                  \
        int64_t at_, step_, cnt_;                                                           \
        cmlc_wn_runs_start(&r_, g_, o_);                                                    \
        A* acc_ = NULL;                                                                     \
        while (cmlc_wn_runs_next(&r_, &at_, &step_, &cnt_)) {                               \
          const T* row_ = in_ + at_ + j0_;                                                  \
          if (!acc_) {                                                                      \
            acc_ = (A*)cmlc_wn_acc_place(acc_buf_, row_);                                   \
            for (int64_t j_ = 0; j_ < n_; ++j_) acc_[j_] = (INIT);                          \
          }                                                                                 \
          for (int64_t j_ = 0; j_ < n_; ++j_) {                                             \
            const A v = LOAD(row_[j_]);                                                     \
            COMBINE(acc_[j_], v);                                                           \
          }                                                                                 \
        }                                                                                   \
        T* dst_ = out_ + i_ * len_ + j0_;                                                   \
        if (!acc_) {                                                                        \
          for (int64_t j_ = 0; j_ < n_; ++j_) dst_[j_] = STORE((A)(INIT));                  \
          continue;                                                                         \
        }                                                                                   \
        for (int64_t j_ = 0; j_ < n_; ++j_) dst_[j_] = STORE(acc_[j_]);                     \
      }                                                                                     \
    }                                                                                       \
  }

// The row loops' max / min (they vectorize): CMLC_WN_FMAX / CMLC_WN_FMIN.
#define CMLC_WN_VMAX(acc, v) CMLC_WN_FMAX(acc, v)
#define CMLC_WN_VMIN(acc, v) CMLC_WN_FMIN(acc, v)

#define CMLC_WN_ROWS_FLOAT(suffix, T, A, LOAD, STORE)                                         \
  CMLC_WN_ROWS_FN(cmlc_wn_rows_sum_##suffix, T, A, (A)0, LOAD, STORE, CMLC_WN_ADD)            \
  CMLC_WN_ROWS_FN(cmlc_wn_rows_prod_##suffix, T, A, (A)1, LOAD, STORE, CMLC_WN_MUL)           \
  CMLC_WN_ROWS_FN(cmlc_wn_rows_max_##suffix, T, A, (A)(-INFINITY), LOAD, STORE, CMLC_WN_VMAX) \
  CMLC_WN_ROWS_FN(cmlc_wn_rows_min_##suffix, T, A, (A)INFINITY, LOAD, STORE, CMLC_WN_VMIN)
CMLC_WN_ROWS_FLOAT(f32, float, float, CMLC_WN_ID, CMLC_WN_ID)
CMLC_WN_ROWS_FLOAT(f64, double, double, CMLC_WN_ID, CMLC_WN_ID)

// f16 / bf16 rows: each tap's block widened to f32 (the SIMD conversion when there is one:
// exact, NaNs quieted, which the rounding below quiets anyway), combined in f32 and rounded
// once as cml_f32_to_f16 / cml_f32_to_bf16 round (bf16 inline; f16 through the SIMD
// conversion, which rounds the same way and gives NaN as sign | 0x7E00 as well).
static void cmlc_wn_rows_half(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_wn_rows_t* c = (const cmlc_wn_rows_t*)ctx;
  const cmlc_wn_geom_t* g = &c->lead;
  const uint16_t* in = (const uint16_t*)c->in;
  uint16_t* out = (uint16_t*)c->out;
  const int64_t len = c->len;
  const bool bf = c->dtype == CML_DTYPE_BF16;
  const cml_reduce_type_t type = c->type;
  float row[CMLC_WN_ROW_BLOCK];
  _Alignas(64) unsigned char acc_buf[CMLC_WN_ACC_SPAN];  // the accumulator (cmlc_wn_acc_place)
  int64_t o[CML_MAX_RANK];
  for (int64_t i = begin; i < end; ++i) {
    cmlc_wn_decode(g, i * len, o);
    for (int64_t j0 = 0; j0 < len; j0 += CMLC_WN_ROW_BLOCK) {
      const int64_t n = len - j0 < CMLC_WN_ROW_BLOCK ? len - j0 : CMLC_WN_ROW_BLOCK;
      const float init = type == CML_REDUCE_SUM       ? 0.0f
                         : type == CML_REDUCE_PRODUCT ? 1.0f
                         : type == CML_REDUCE_MAX     ? -INFINITY
                                                      : INFINITY;
      float* acc = NULL;  // placed at the first window position (cmlc_wn_acc_place)
      cmlc_wn_runs_t r;
      int64_t at, step, cnt;
      cmlc_wn_runs_start(&r, g, o);
      while (cmlc_wn_runs_next(&r, &at, &step, &cnt)) {
        const uint16_t* src = in + at + j0;
        if (!acc) {
          acc = (float*)cmlc_wn_acc_place(acc_buf, src);
          for (int64_t j = 0; j < n; ++j) acc[j] = init;
        }
        if (c->widen) {
          c->widen(row, src, n);
        } else if (bf) {
          for (int64_t j = 0; j < n; ++j) row[j] = cml__bf16_to_f32(src[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) row[j] = cml__f16_to_f32(src[j]);
        }
        switch (type) {
          case CML_REDUCE_SUM:
            for (int64_t j = 0; j < n; ++j) CMLC_WN_ADD(acc[j], row[j]);
            break;
          case CML_REDUCE_PRODUCT:
            for (int64_t j = 0; j < n; ++j) CMLC_WN_MUL(acc[j], row[j]);
            break;
          case CML_REDUCE_MAX:
            for (int64_t j = 0; j < n; ++j) CMLC_WN_VMAX(acc[j], row[j]);
            break;
          default:
            for (int64_t j = 0; j < n; ++j) CMLC_WN_VMIN(acc[j], row[j]);
            break;
        }
      }
      if (!acc) {  // no window position: the identity
        acc = (float*)cmlc_wn_acc_place(acc_buf, in);
        for (int64_t j = 0; j < n; ++j) acc[j] = init;
      }
      uint16_t* dst = out + i * len + j0;
      if (bf) {
        cmlc_f32_to_bf16_row(dst, acc, n);
      } else if (c->narrow) {
        c->narrow(dst, acc, n);
      } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = cml__f32_to_f16(acc[j]);
      }
    }
  }
}

static cmlc_task_fn cmlc_wn_rows_fn(cml_dtype_t dtype, cml_reduce_type_t type) {
  if (type < CML_REDUCE_SUM || type > CML_REDUCE_MIN) return NULL;
  if (dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16) return cmlc_wn_rows_half;
  const int which = (int)type - (int)CML_REDUCE_SUM;
#define CMLC_WN_CASE(D, suffix)                                                                \
  case D: {                                                                                    \
    static const cmlc_task_fn fns[4] = {cmlc_wn_rows_sum_##suffix, cmlc_wn_rows_prod_##suffix, \
                                        cmlc_wn_rows_max_##suffix, cmlc_wn_rows_min_##suffix}; \
    return fns[which];                                                                         \
  }
  switch (dtype) {
    CMLC_WN_CASE(CML_DTYPE_F32, f32)
    CMLC_WN_CASE(CML_DTYPE_F64, f64)
    default:
      return NULL;
  }
#undef CMLC_WN_CASE
}

// Builds the row geometry of |g| into |c| when at least |min_len| trailing elements pass
// through the window (see cmlc_wn_rows_t); false otherwise.
static bool cmlc_wn_rows_plan(const cmlc_wn_geom_t* g, const cml_window_config_t* w,
                              int64_t min_len, cmlc_wn_rows_t* c) {
  int32_t lead = g->rank;
  int64_t len = 1;
  while (lead > 0) {
    const int32_t d = lead - 1;
    if (!cmlc_wn_passes(g, w, d)) break;
    len *= g->in_dims[d];
    --lead;
  }
  if (lead == g->rank || len < min_len) return false;
  c->lead = *g;
  c->lead.rank = lead + 1;
  c->lead.in_dims[lead] = c->lead.out_dims[lead] = len;
  c->lead.in_strides[lead] = 1;
  c->lead.window[lead] = c->lead.stride[lead] = 1;
  c->lead.base_dil[lead] = c->lead.win_dil[lead] = 1;
  c->lead.pad_lo[lead] = 0;
  c->len = len;
  return true;
}

//===--- ReduceWindow over planes: a window on the last two axes only (NCHW pooling) ---===//

// For each plane (the leading axes pass through) and output row, the taps in the window's
// row-major order (rows kh, then columns kw), each combined into the whole output row at once:
// output element ow reads input column ow * stride + kw * dilation - padding_low where that
// lies inside the row. Every output element sees its taps in the same order as the
// per-element kernel, so the results are the same bits.
enum {
  CMLC_WN_PLANE_MAX_ROW = 4096,  // the longest rows of the f16 / bf16 row buffers
  CMLC_WN_PLANE_RUN = 512,       // strided positions of few channels copied at a time
  CMLC_WN_PLANE_BLOCK = 2048,    // output elements that take all column taps in turn
  CMLC_WN_PLANE_VEC = 64,        // elements kept in registers across the taps (stride 1)
};

typedef struct cmlc_wn_planes_t {
  cmlc_wn_geom_t g;  // the geometry without a channel axis (axes rank-2 and rank-1: the window's)
  int64_t ch;        // elements per position: a trailing axis that passes through (NHWC), or 1
  int64_t planes;
  cml_dtype_t dtype;
  cml_reduce_type_t type;
  const void* in;
  void* out;
  cmlc_ew_convert_fn widen, narrow;  // f16 / bf16 (narrow: f16 only)
} cmlc_wn_planes_t;

// The output columns [*lo, *hi) whose input column for tap |kw| lies inside the row.
static void cmlc_wn_cols_for_tap(const cmlc_wn_geom_t* g, int64_t kw, int64_t* lo, int64_t* hi) {
  const int32_t d = g->rank - 1;
  const int64_t off = kw * g->win_dil[d] - g->pad_lo[d], s = g->stride[d], w = g->in_dims[d];
  int64_t a = off >= 0 ? 0 : cmlc_wn_ceil_div(-off, s);
  int64_t b = w - 1 - off < 0 ? -1 : cmlc_wn_floor_div(w - 1 - off, s);
  if (b > g->out_dims[d] - 1) b = g->out_dims[d] - 1;
  *lo = a;
  *hi = b + 1 > a ? b + 1 : a;
}

// One output row |acc| (f32 or f64, A) combined with input row |row| (A) for every tap column;
// a position holds |ch| elements.
#define CMLC_WN_PLANE_ROW(A, COMBINE)                                               \
  for (int64_t b0 = 0; b0 < g->out_dims[d1]; b0 += blk) {                           \
    /* Stride 1: the elements every column tap reads take their taps in */          \
    /* registers, CMLC_WN_PLANE_REGS at a time, [f0, f1) (element units). */        \
    int64_t f0 = 0, f1 = 0;                                                         \
    if (g->stride[d1] == 1) CMLC_WN_PLANE_REGS(A, COMBINE);                         \
    for (int64_t kw = 0; kw < g->window[d1]; ++kw) {                                \
      int64_t lo, hi;                                                               \
      cmlc_wn_cols_for_tap(g, kw, &lo, &hi);                                        \
      if (lo < b0) lo = b0;                                                         \
      if (hi > b0 + blk) hi = b0 + blk;                                             \
      const int64_t off = kw * g->win_dil[d1] - g->pad_lo[d1];                      \
      const int64_t s = g->stride[d1];                                              \
      if (s == 1) {                                                                 \
        const A* r = row + off * ch;                                                \
        const int64_t e_lo = lo * ch, e_hi = hi * ch;                               \
        const int64_t cut = f0 < e_hi ? (f0 > e_lo ? f0 : e_lo) : e_hi;             \
        for (int64_t e = e_lo; e < cut; ++e) COMBINE(acc[e], r[e]);                 \
        for (int64_t e = f1 > cut ? f1 : cut; e < e_hi; ++e) COMBINE(acc[e], r[e]); \
      } else if (ch >= 16) {                                                        \
        for (int64_t ow = lo; ow < hi; ++ow) {                                      \
          const A* r = row + (ow * s + off) * ch;                                   \
          A* a = acc + ow * ch;                                                     \
          for (int64_t e = 0; e < ch; ++e) COMBINE(a[e], r[e]);                     \
        }                                                                           \
      } else {                                                                      \
        /* Few channels: the tap's positions copied into a run first, so that */    \
        /* the combining loop vectorizes (Max / Min branch per element else). */    \
        A run_[CMLC_WN_PLANE_RUN];                                                  \
        const int64_t per = CMLC_WN_PLANE_RUN / ch;                                 \
        for (int64_t o0 = lo; o0 < hi; o0 += per) {                                 \
          const int64_t m = hi - o0 < per ? hi - o0 : per;                          \
          const A* r0 = row + (o0 * s + off) * ch;                                  \
          if (ch == 1) {                                                            \
            CMLC_WN_PLANE_GATHER(1);                                                \
          } else if (ch == 3) {                                                     \
            CMLC_WN_PLANE_GATHER(3);                                                \
          } else if (ch == 4) {                                                     \
            CMLC_WN_PLANE_GATHER(4);                                                \
          } else if (ch == 2) {                                                     \
            CMLC_WN_PLANE_GATHER(2);                                                \
          } else {                                                                  \
            CMLC_WN_PLANE_GATHER(ch);                                               \
          }                                                                         \
          A* a = acc + o0 * ch;                                                     \
          for (int64_t e = 0; e < m * ch; ++e) COMBINE(a[e], run_[e]);              \
        }                                                                           \
      }                                                                             \
    }                                                                               \
  }
// Stride 1 along the row, block [b0, b0 + blk) of output positions: the positions every
// column tap reads inside the row ([the largest first, the smallest end) over the taps) are
// combined CMLC_WN_PLANE_VEC elements at a time, each group holding its partial results in
// registers across all taps and storing them once (the per-tap loop stores the accumulator
// row once per tap: a 64-wide sliding sum was bound by those stores). Each element still
// takes its taps in increasing order, so the bits are those of the per-tap loop, which does
// the rest ([f0, f1) is what this did, in element units).
#define CMLC_WN_PLANE_REGS(A, COMBINE)                                             \
  do {                                                                             \
    int64_t p0 = b0, p1 = b0 + blk < g->out_dims[d1] ? b0 + blk : g->out_dims[d1]; \
    for (int64_t kw = 0; kw < g->window[d1]; ++kw) {                               \
      int64_t lo, hi;                                                              \
      cmlc_wn_cols_for_tap(g, kw, &lo, &hi);                                       \
      if (lo > p0) p0 = lo;                                                        \
      if (hi < p1) p1 = hi;                                                        \
    }                                                                              \
    if (p1 - p0 < 1 || (p1 - p0) * ch < CMLC_WN_PLANE_VEC) break;                  \
    f0 = p0 * ch;                                                                  \
    f1 = f0 + ((p1 - p0) * ch / CMLC_WN_PLANE_VEC) * CMLC_WN_PLANE_VEC;            \
    const int64_t tap0 = -g->pad_lo[d1] * ch, tap_step = g->win_dil[d1] * ch;      \
    for (int64_t e = f0; e < f1; e += CMLC_WN_PLANE_VEC) {                         \
      A t_[CMLC_WN_PLANE_VEC];                                                     \
      for (int j = 0; j < CMLC_WN_PLANE_VEC; ++j) t_[j] = acc[e + j];              \
      const A* r = row + e + tap0;                                                 \
      for (int64_t kw = 0; kw < g->window[d1]; ++kw, r += tap_step) {              \
        for (int j = 0; j < CMLC_WN_PLANE_VEC; ++j) COMBINE(t_[j], r[j]);          \
      }                                                                            \
      for (int j = 0; j < CMLC_WN_PLANE_VEC; ++j) acc[e + j] = t_[j];              \
    }                                                                              \
  } while (0)
// |m| positions of |CH| elements, |s| positions apart from r0, into run_.
#define CMLC_WN_PLANE_GATHER(CH)                                                  \
  for (int64_t q = 0; q < m; ++q) {                                               \
    for (int64_t e = 0; e < (CH); ++e) run_[q * (CH) + e] = r0[q * s * (CH) + e]; \
  }

#define CMLC_WN_PLANES_FN(name, T, A, ATTR)                                                       \
  ATTR static void name(void* ctx, int64_t begin, int64_t end, int thread_index) {                \
    (void)thread_index;                                                                           \
    const cmlc_wn_planes_t* c = (const cmlc_wn_planes_t*)ctx;                                     \
    const cmlc_wn_geom_t* g = &c->g;                                                              \
    const int32_t d0 = g->rank - 2, d1 = g->rank - 1;                                             \
    const int64_t ih_n = g->in_dims[d0], iw_n = g->in_dims[d1];                                   \
    const int64_t oh_n = g->out_dims[d0], ch = c->ch, ow_n = g->out_dims[d1] * ch;                \
    const bool half = sizeof(T) == 2;                                                             \
    const bool bf = c->dtype == CML_DTYPE_BF16;                                                   \
    const A init = c->type == CML_REDUCE_SUM       ? (A)0                                         \
                   : c->type == CML_REDUCE_PRODUCT ? (A)1                                         \
                   : c->type == CML_REDUCE_MAX     ? (A)(-INFINITY)                               \
                                                   : (A)INFINITY;                                     \
    A accbuf[half ? CMLC_WN_PLANE_MAX_ROW : 1], rowbuf[half ? CMLC_WN_PLANE_MAX_ROW : 1];         \
    const int64_t blk = CMLC_WN_PLANE_BLOCK / ch > 0 ? CMLC_WN_PLANE_BLOCK / ch : 1;              \
    for (int64_t t = begin; t < end; ++t) { /* t = (plane, output row) */                         \
      const int64_t plane = t / oh_n, oh = t % oh_n;                                              \
      const T* in = (const T*)c->in + plane * ih_n * iw_n * ch;                                   \
      T* out_row = (T*)c->out + (plane * oh_n + oh) * ow_n;                                       \
      A* acc = half ? accbuf : (A*)(void*)out_row;                                                \
      for (int64_t ow = 0; ow < ow_n; ++ow) acc[ow] = init;                                       \
      cmlc_wn_axis_t it;                                                                          \
      for (bool more = cmlc_wn_axis_first(&it, g, d0, oh); more; more = cmlc_wn_axis_next(&it)) { \
        const T* src = in + it.input * iw_n * ch;                                                 \
        const A* row = (const A*)(const void*)src;                                                \
        if (half) {                                                                               \
          c->widen(rowbuf, src, iw_n* ch);                                                        \
          row = rowbuf;                                                                           \
        }                                                                                         \
        switch (c->type) {                                                                        \
          case CML_REDUCE_SUM:                                                                    \
            CMLC_WN_PLANE_ROW(A, CMLC_WN_ADD)                                                     \
            break;                                                                                \
          case CML_REDUCE_PRODUCT:                                                                \
            CMLC_WN_PLANE_ROW(A, CMLC_WN_MUL)                                                     \
            break;                                                                                \
          case CML_REDUCE_MAX:                                                                    \
            CMLC_WN_PLANE_ROW(A, CMLC_WN_VMAX)                                                    \
            break;                                                                                \
          default:                                                                                \
            CMLC_WN_PLANE_ROW(A, CMLC_WN_VMIN)                                                    \
            break;                                                                                \
        }                                                                                         \
      }                                                                                           \
      if (half) {                                                                                 \
        uint16_t* o = (uint16_t*)(void*)out_row;                                                  \
        if (bf) {                                                                                 \
          cmlc_f32_to_bf16_row(o, (const float*)(const void*)acc, ow_n);                          \
        } else {                                                                                  \
          c->narrow(o, acc, ow_n);                                                                \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }
CMLC_WN_PLANES_FN(cmlc_wn_planes_f32, float, float, )
CMLC_WN_PLANES_FN(cmlc_wn_planes_f64, double, double, )
CMLC_WN_PLANES_FN(cmlc_wn_planes_half, uint16_t, float, )
#if defined(CMLC_HAVE_X86_64)
// The same loops compiled for AVX2 and AVX-512: the baseline build has SSE2, 4 lanes, where a
// stride-1 window along a long row spends its time (a 64-wide sliding sum over rows of 16384
// f32: 2.5x xla:cpu's time). Each output element combines its taps in the same order on every
// ISA (elementwise combines, no reassociation), so the bits are the same.
#define CMLC_WN_AVX2 __attribute__((target("avx2")))
#define CMLC_WN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
CMLC_WN_PLANES_FN(cmlc_wn_planes_f32_avx2, float, float, CMLC_WN_AVX2)
CMLC_WN_PLANES_FN(cmlc_wn_planes_f64_avx2, double, double, CMLC_WN_AVX2)
CMLC_WN_PLANES_FN(cmlc_wn_planes_half_avx2, uint16_t, float, CMLC_WN_AVX2)
CMLC_WN_PLANES_FN(cmlc_wn_planes_f32_avx512, float, float, CMLC_WN_AVX512)
CMLC_WN_PLANES_FN(cmlc_wn_planes_f64_avx512, double, double, CMLC_WN_AVX512)
CMLC_WN_PLANES_FN(cmlc_wn_planes_half_avx512, uint16_t, float, CMLC_WN_AVX512)
#endif

// The plane kernel for |dt| (f32, f64, or f16 / bf16 as "half") on the options' ISA.
static cmlc_task_fn cmlc_wn_planes_fn(const cmlc_options_t* options, cml_dtype_t dt) {
  const int slot = dt == CML_DTYPE_F32 ? 0 : dt == CML_DTYPE_F64 ? 1 : 2;
  static const cmlc_task_fn scalar[3] = {cmlc_wn_planes_f32, cmlc_wn_planes_f64,
                                         cmlc_wn_planes_half};
#if defined(CMLC_HAVE_X86_64)
  static const cmlc_task_fn avx2[3] = {cmlc_wn_planes_f32_avx2, cmlc_wn_planes_f64_avx2,
                                       cmlc_wn_planes_half_avx2};
  static const cmlc_task_fn avx512[3] = {cmlc_wn_planes_f32_avx512, cmlc_wn_planes_f64_avx512,
                                         cmlc_wn_planes_half_avx512};
  if (options && !options->reference && options->isa == CMLC_ISA_AVX512) return avx512[slot];
  if (options && !options->reference && options->isa == CMLC_ISA_AVX2) return avx2[slot];
#else
  (void)options;
#endif
  return scalar[slot];
}

// Windows that cover whole planes with one output per plane (global pooling in NCHW: no
// padding, no dilation): each plane's elements combined in row-major order from the identity,
// the order of the plane kernel above, so the same bits; 8 planes at a time as independent
// chains (one plane's chain is bound by the latency of its additions; the tap loop above spent
// 4 ns per element: 11-14x xla:cpu's time).
enum { CMLC_WN_GLOBAL_LANES = 8 };
#define CMLC_WN_GLOBAL_FN(name, A, INIT, COMBINE)                                     \
  static void name(void* ctx, int64_t begin, int64_t end, int thread_index) {         \
    (void)thread_index;                                                               \
    const cmlc_wn_planes_t* c = (const cmlc_wn_planes_t*)ctx;                         \
    const int64_t n = c->g.in_dims[c->g.rank - 2] * c->g.in_dims[c->g.rank - 1];      \
    const A* in = (const A*)c->in;                                                    \
    A* out = (A*)c->out;                                                              \
    int64_t p0 = begin;                                                               \
    for (; p0 + CMLC_WN_GLOBAL_LANES <= end; p0 += CMLC_WN_GLOBAL_LANES) {            \
      A acc[CMLC_WN_GLOBAL_LANES];                                                    \
      for (int l = 0; l < CMLC_WN_GLOBAL_LANES; ++l) acc[l] = (INIT);                 \
      const A* x = in + p0 * n;                                                       \
      for (int64_t i = 0; i < n; ++i) {                                               \
        for (int l = 0; l < CMLC_WN_GLOBAL_LANES; ++l) COMBINE(acc[l], x[l * n + i]); \
      }                                                                               \
      for (int l = 0; l < CMLC_WN_GLOBAL_LANES; ++l) out[p0 + l] = acc[l];            \
    }                                                                                 \
    for (; p0 < end; ++p0) {                                                          \
      A acc = (INIT);                                                                 \
      for (int64_t i = 0; i < n; ++i) COMBINE(acc, in[p0 * n + i]);                   \
      out[p0] = acc;                                                                  \
    }                                                                                 \
  }
CMLC_WN_GLOBAL_FN(cmlc_wn_global_sum_f32, float, 0.0f, CMLC_WN_ADD)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_prod_f32, float, 1.0f, CMLC_WN_MUL)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_max_f32, float, -INFINITY, CMLC_WN_VMAX)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_min_f32, float, INFINITY, CMLC_WN_VMIN)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_sum_f64, double, 0.0, CMLC_WN_ADD)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_prod_f64, double, 1.0, CMLC_WN_MUL)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_max_f64, double, -INFINITY, CMLC_WN_VMAX)
CMLC_WN_GLOBAL_FN(cmlc_wn_global_min_f64, double, INFINITY, CMLC_WN_VMIN)
#undef CMLC_WN_GLOBAL_FN
// f16 / bf16: each plane widened CMLC_WN_GLOBAL_CHUNK elements at a time, combined in f32 in the
// same order, rounded once (as the plane kernel's rows).
enum { CMLC_WN_GLOBAL_CHUNK = 256 };
#define CMLC_WN_GLOBAL_HALF_FN(name, INIT, COMBINE)                                        \
  static void name(void* ctx, int64_t begin, int64_t end, int thread_index) {              \
    (void)thread_index;                                                                    \
    const cmlc_wn_planes_t* c = (const cmlc_wn_planes_t*)ctx;                              \
    const int64_t n = c->g.in_dims[c->g.rank - 2] * c->g.in_dims[c->g.rank - 1];           \
    const uint16_t* in = (const uint16_t*)c->in;                                           \
    uint16_t* out = (uint16_t*)c->out;                                                     \
    float buf[CMLC_WN_GLOBAL_LANES][CMLC_WN_GLOBAL_CHUNK];                                 \
    for (int64_t p0 = begin; p0 < end; p0 += CMLC_WN_GLOBAL_LANES) {                       \
      const int64_t k = end - p0 < CMLC_WN_GLOBAL_LANES ? end - p0 : CMLC_WN_GLOBAL_LANES; \
      float acc[CMLC_WN_GLOBAL_LANES];                                                     \
      for (int l = 0; l < CMLC_WN_GLOBAL_LANES; ++l) acc[l] = (INIT);                      \
      for (int64_t i0 = 0; i0 < n; i0 += CMLC_WN_GLOBAL_CHUNK) {                           \
        const int64_t m = n - i0 < CMLC_WN_GLOBAL_CHUNK ? n - i0 : CMLC_WN_GLOBAL_CHUNK;   \
        for (int64_t l = 0; l < k; ++l) c->widen(buf[l], in + (p0 + l) * n + i0, m);       \
        for (int64_t i = 0; i < m; ++i) {                                                  \
          for (int64_t l = 0; l < k; ++l) COMBINE(acc[l], buf[l][i]);                      \
        }                                                                                  \
      }                                                                                    \
      if (c->dtype == CML_DTYPE_BF16) {                                                    \
        cmlc_f32_to_bf16_row(out + p0, acc, k);                                            \
      } else {                                                                             \
        c->narrow(out + p0, acc, k);                                                       \
      }                                                                                    \
    }                                                                                      \
  }
CMLC_WN_GLOBAL_HALF_FN(cmlc_wn_global_sum_half, 0.0f, CMLC_WN_ADD)
CMLC_WN_GLOBAL_HALF_FN(cmlc_wn_global_prod_half, 1.0f, CMLC_WN_MUL)
CMLC_WN_GLOBAL_HALF_FN(cmlc_wn_global_max_half, -INFINITY, CMLC_WN_VMAX)
CMLC_WN_GLOBAL_HALF_FN(cmlc_wn_global_min_half, INFINITY, CMLC_WN_VMIN)
#undef CMLC_WN_GLOBAL_HALF_FN

// The global kernel of |dt| and |type| when the window of |g| on its last two axes covers them
// whole (one output each, no padding or dilation), or NULL. f16 / bf16 need c->widen (and
// c->narrow for f16), which cmlc_wn_planes sets before it asks.
static cmlc_task_fn cmlc_wn_global_fn(const cmlc_wn_geom_t* g, cml_dtype_t dt,
                                      cml_reduce_type_t type) {
  for (int32_t d = g->rank - 2; d < g->rank; ++d) {
    if (g->out_dims[d] != 1 || g->window[d] != g->in_dims[d] || g->pad_lo[d] != 0 ||
        g->win_dil[d] != 1 || g->in_dims[d] < 1) {
      return NULL;
    }
  }
  // Rows f32, f64, f16 / bf16; columns Sum, Product, Max, Min (cml_reduce_type_t's order).
  static const cmlc_task_fn table[3][4] = {{cmlc_wn_global_sum_f32, cmlc_wn_global_prod_f32,
                                            cmlc_wn_global_max_f32, cmlc_wn_global_min_f32},
                                           {cmlc_wn_global_sum_f64, cmlc_wn_global_prod_f64,
                                            cmlc_wn_global_max_f64, cmlc_wn_global_min_f64},
                                           {cmlc_wn_global_sum_half, cmlc_wn_global_prod_half,
                                            cmlc_wn_global_max_half, cmlc_wn_global_min_half}};
  const int row = dt == CML_DTYPE_F32                           ? 0
                  : dt == CML_DTYPE_F64                         ? 1
                  : dt == CML_DTYPE_F16 || dt == CML_DTYPE_BF16 ? 2
                                                                : -1;
  if (row < 0 || type < CML_REDUCE_SUM || type > CML_REDUCE_MIN) return NULL;
  return table[row][type - CML_REDUCE_SUM];
}

// Runs the plane kernels when the window covers only the last two axes (the others pass
// through), or the two before a last axis that passes through (NHWC pooling of fewer channels
// than the row kernels take: an image's 3), without base dilation, for a float dtype; false
// otherwise.
static bool cmlc_wn_planes(const cmlc_kernel_args_t* args, const cmlc_wn_geom_t* full,
                           int64_t count) {
  const cml_dtype_t dt = args->input_shapes[0]->dtype;
  const cml_window_config_t* w = &args->node->attrs->u.window;
  if ((args->options && args->options->reference) || full->rank < 2) return false;
  cmlc_wn_planes_t c;
  c.g = *full;
  c.ch = 1;
  if (full->rank >= 3 && cmlc_wn_passes(full, w, full->rank - 1) &&
      !cmlc_wn_passes(full, w, full->rank - 2)) {
    c.ch = full->in_dims[full->rank - 1];
    --c.g.rank;
  }
  const cmlc_wn_geom_t* g = &c.g;
  for (int32_t d = 0; d < g->rank; ++d) {
    if (g->base_dil[d] != 1) return false;
    if (d < g->rank - 2 && !cmlc_wn_passes(g, w, d)) return false;
  }
  const int32_t d0 = g->rank - 2, d1 = g->rank - 1;
  if (g->out_dims[d0] == 0 || g->out_dims[d1] == 0 || g->in_dims[d1] == 0 || c.ch == 0) {
    return false;
  }
  c.dtype = dt;
  c.type = args->node->attrs->reduce_type;
  c.in = args->inputs[0];
  c.out = args->outputs[0];
  c.widen = c.narrow = NULL;
  cmlc_task_fn fn = NULL;
  if (dt == CML_DTYPE_F32 || dt == CML_DTYPE_F64) fn = cmlc_wn_planes_fn(args->options, dt);
  if (dt == CML_DTYPE_F16 || dt == CML_DTYPE_BF16) {
    if (g->in_dims[d1] * c.ch > CMLC_WN_PLANE_MAX_ROW ||
        g->out_dims[d1] * c.ch > CMLC_WN_PLANE_MAX_ROW) {
      return false;
    }
    c.widen = cmlc_ew_simd_convert_fn(args->options, dt, CML_DTYPE_F32);
    c.narrow = cmlc_ew_simd_convert_fn(args->options, CML_DTYPE_F32, CML_DTYPE_F16);
    if (!c.widen || (dt == CML_DTYPE_F16 && !c.narrow)) return false;
    fn = cmlc_wn_planes_fn(args->options, dt);
  }
  if (!fn || c.type < CML_REDUCE_SUM || c.type > CML_REDUCE_MIN) return false;
  cmlc_task_fn global = c.ch == 1 ? cmlc_wn_global_fn(g, dt, c.type) : NULL;
  if (global) {
    const int64_t plane = g->in_dims[d0] * g->in_dims[d1];
    cmlc_parallel_for(args->pool, count, 16384 / plane + 1, global, &c);
    return true;
  }
  const int64_t rows = count / (g->out_dims[d1] * c.ch);
  const int64_t row_work = g->out_dims[d1] * c.ch * g->window[d0] * g->window[d1];
  int64_t chunk = 16384 / (row_work > 0 ? row_work : 1);
  cmlc_parallel_for(args->pool, rows, chunk < 1 ? 1 : chunk, fn, &c);
  return true;
}

static cml_status_t cmlc_wn_reduce_window(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const cml_ir_attrs_t* at = args->node->attrs;
  cmlc_task_fn fn = cmlc_wn_pick(cmlc_wn_rw_table, xs->dtype, at->reduce_type);
  if (fn == NULL) {
    char text[160];
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "ReduceWindow: the c backend has no %s kernel for dtype %s (operand %s)",
                           cml_reduce_type_name(at->reduce_type), cml_dtype_name(xs->dtype),
                           cml_shape_format(xs, text, sizeof text));
  }
  const int64_t count = cml_shape_element_count(os);
  if (count == 0) return CML_OK;
  cmlc_wn_rw_t c;
  cmlc_wn_geom_init(&c.g, xs, os, &at->u.window);
  c.in = args->inputs[0];
  c.out = args->outputs[0];
  int64_t window_size = 1;
  for (int32_t d = 0; d < c.g.rank; ++d) window_size *= cmlc_wn_or_one(c.g.window[d]);
  if (!(args->options && args->options->reference) && cmlc_wn_scan(args, &c.g)) return CML_OK;
  // The plane kernels before the row kernels: NHWC pooling walks whole output rows per tap
  // there, where the row kernels start every output position's taps anew (a 2x2/2 sum pool of
  // [4, 64, 64, 64], 1 thread on Zen 4: 0.39 -> 0.14 ms).
  if (cmlc_wn_planes(args, &c.g, count)) return CML_OK;
  cmlc_wn_rows_t rows;
  cmlc_task_fn rows_fn = args->options && args->options->reference
                             ? NULL
                             : cmlc_wn_rows_fn(xs->dtype, at->reduce_type);
  if (rows_fn && cmlc_wn_rows_plan(&c.g, &at->u.window, 8, &rows)) {
    rows.in = c.in;
    rows.out = c.out;
    rows.dtype = xs->dtype;
    rows.type = at->reduce_type;
    rows.widen = rows.narrow = NULL;
    if (xs->dtype == CML_DTYPE_F16 || xs->dtype == CML_DTYPE_BF16) {
      rows.widen = cmlc_ew_simd_convert_fn(args->options, xs->dtype, CML_DTYPE_F32);
      if (xs->dtype == CML_DTYPE_F16) {
        rows.narrow = cmlc_ew_simd_convert_fn(args->options, CML_DTYPE_F32, CML_DTYPE_F16);
      }
    }
    int64_t row_chunk = 16384 / (window_size * rows.len);
    cmlc_parallel_for(args->pool, count / rows.len, row_chunk < 1 ? 1 : row_chunk, rows_fn, &rows);
    return CML_OK;
  }
  int64_t min_chunk = 16384 / window_size;
  if (min_chunk < 1) min_chunk = 1;
  cmlc_parallel_for(args->pool, count, min_chunk, fn, &c);
  return CML_OK;
}

//===--- SelectAndScatter ---===//

// One select-and-scatter kernel over |T| (compared as C via TO_C). |acc| is the output (A = T)
// or, for f16/bf16, an f32 scratch; ADD(acc_element, source_element).
#define CMLC_WN_SAS_FN(suffix, T, C, TO_C, A, ADD)                                                 \
  static void cmlc_wn_sas_##suffix(const cmlc_wn_geom_t* g, cml_op_t op, const T* x, const T* src, \
                                   int64_t src_count, A* acc) {                                    \
    int64_t o[CML_MAX_RANK];                                                                       \
    for (int64_t i = 0; i < src_count; ++i) {                                                      \
      cmlc_wn_decode(g, i, o);                                                                     \
      const T s = src[i];                                                                          \
      cmlc_wn_runs_t r;                                                                            \
      int64_t at, step, n;                                                                         \
      cmlc_wn_runs_start(&r, g, o);                                                                \
      if (op == CML_OP_SELECT_AND_SCATTER_SUM) {                                                   \
        while (cmlc_wn_runs_next(&r, &at, &step, &n)) {                                            \
          for (; n > 0; --n, at += step) ADD(acc[at], s);                                          \
        }                                                                                          \
        continue;                                                                                  \
      }                                                                                            \
      const bool is_max = op == CML_OP_SELECT_AND_SCATTER_MAX;                                     \
      int64_t sel = -1;                                                                            \
      C cur = (C)0;                                                                                \
      while (cmlc_wn_runs_next(&r, &at, &step, &n)) {                                              \
        for (; n > 0; --n, at += step) {                                                           \
          const C v = TO_C(x[at]);                                                                 \
          if (sel < 0 || (is_max ? !(cur >= v) : !(cur <= v))) {                                   \
            sel = at;                                                                              \
            cur = v;                                                                               \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      if (sel >= 0) ADD(acc[sel], s);                                                              \
    }                                                                                              \
  }

#define CMLC_WN_SAS_INT(suffix, T, U)                                            \
  static inline void cmlc_wn_add_##suffix(T* a, T b) { *a = (T)((U)*a + (U)b); } \
  CMLC_WN_SAS_FN(suffix, T, T, CMLC_WN_ID, T, CMLC_WN_ADD_##suffix)
#define CMLC_WN_ADD_i8(a, b) cmlc_wn_add_i8(&(a), (b))
#define CMLC_WN_ADD_i16(a, b) cmlc_wn_add_i16(&(a), (b))
#define CMLC_WN_ADD_i32(a, b) cmlc_wn_add_i32(&(a), (b))
#define CMLC_WN_ADD_i64(a, b) cmlc_wn_add_i64(&(a), (b))
#define CMLC_WN_ADD_u8(a, b) cmlc_wn_add_u8(&(a), (b))
#define CMLC_WN_ADD_u16(a, b) cmlc_wn_add_u16(&(a), (b))
#define CMLC_WN_ADD_u32(a, b) cmlc_wn_add_u32(&(a), (b))
#define CMLC_WN_ADD_u64(a, b) cmlc_wn_add_u64(&(a), (b))
CMLC_WN_SAS_INT(i8, int8_t, uint8_t)
CMLC_WN_SAS_INT(i16, int16_t, uint16_t)
CMLC_WN_SAS_INT(i32, int32_t, uint32_t)
CMLC_WN_SAS_INT(i64, int64_t, uint64_t)
CMLC_WN_SAS_INT(u8, uint8_t, uint8_t)
CMLC_WN_SAS_INT(u16, uint16_t, uint16_t)
CMLC_WN_SAS_INT(u32, uint32_t, uint32_t)
CMLC_WN_SAS_INT(u64, uint64_t, uint64_t)
CMLC_WN_SAS_FN(f32, float, float, CMLC_WN_ID, float, CMLC_WN_ADD)
CMLC_WN_SAS_FN(f64, double, double, CMLC_WN_ID, double, CMLC_WN_ADD)
#define CMLC_WN_ADD_F16(a, b) ((a) += cml__f16_to_f32(b))
#define CMLC_WN_ADD_BF16(a, b) ((a) += cml__bf16_to_f32(b))
CMLC_WN_SAS_FN(f16, uint16_t, float, cml_f16_to_f32, float, CMLC_WN_ADD_F16)
CMLC_WN_SAS_FN(bf16, uint16_t, float, cml_bf16_to_f32, float, CMLC_WN_ADD_BF16)

//===--- SelectAndScatter over rows: trailing axes the window passes through ---===//

// NHWC pooling's gradient: every tap is a contiguous row of |len| channels (cmlc_wn_rows_plan
// on the operand and source shapes), so each channel selects among its own taps with the
// scalar kernel's predicate, in the same window order, and adds its source element at the
// selected tap; each output element receives its additions in row-major source order, as in
// the per-element kernel, so the results are the same bits. Channels never share an output
// element: tasks are blocks of channels.
enum {
  CMLC_WN_SAS_BLOCK = 256,  // the most channels per task
  CMLC_WN_SAS_TAPS = 256,   // the most taps per window of the row kernels
};

typedef struct cmlc_wn_sas_rows_t {
  cmlc_wn_geom_t lead;  // over the operand, positions of the source
  int64_t len, src_rows;
  int64_t block;  // channels per task (at most CMLC_WN_SAS_BLOCK)
  cml_op_t op;
  const void *x, *src;
  void* acc;  // the output (f32 / f64) or the f32 scratch (f16 / bf16)
  cmlc_ew_convert_fn widen;
} cmlc_wn_sas_rows_t;

// One block of channels [j0, j0 + n) for T operands with A accumulators (A = T, or f32 for
// halves, whose rows WIDEN widens into A buffers). The selection keeps, per channel, the best
// value and the ordinal of its tap (32-bit, so that compare and select vectorize together);
// the taps' offsets are recorded as they are walked (at most CMLC_WN_SAS_TAPS of them).
#define CMLC_WN_SAS_ROWS_FN(name, T, A, HALF)                                  \
  static void name(void* ctx, int64_t begin, int64_t end, int thread_index) {  \
    (void)thread_index;                                                        \
    const cmlc_wn_sas_rows_t* c = (const cmlc_wn_sas_rows_t*)ctx;              \
    const cmlc_wn_geom_t* g = &c->lead;                                        \
    const int64_t len = c->len;                                                \
    const T* x = (const T*)c->x;                                               \
    const T* src = (const T*)c->src;                                           \
    A* acc = (A*)c->acc;                                                       \
    const bool is_sum = c->op == CML_OP_SELECT_AND_SCATTER_SUM;                \
    const bool is_max = c->op == CML_OP_SELECT_AND_SCATTER_MAX;                \
    A best[CMLC_WN_SAS_BLOCK], sv[CMLC_WN_SAS_BLOCK], wide[CMLC_WN_SAS_BLOCK]; \
    int32_t sel[CMLC_WN_SAS_BLOCK];                                            \
    int64_t taps[CMLC_WN_SAS_TAPS];                                            \
    int64_t o[CML_MAX_RANK];                                                   \
    for (int64_t blk = begin; blk < end; ++blk) {                              \
      const int64_t j0 = blk * c->block;                                       \
      const int64_t n = len - j0 < c->block ? len - j0 : c->block;             \
      for (int64_t i = 0; i < c->src_rows; ++i) {                              \
        const T* srow = src + i * len + j0;                                    \
        if (HALF) {                                                            \
          c->widen(sv, srow, n);                                               \
        } else {                                                               \
          for (int64_t j = 0; j < n; ++j) sv[j] = (A)srow[j];                  \
        }                                                                      \
        cmlc_wn_decode(g, i* len, o);                                          \
        cmlc_wn_runs_t r;                                                      \
        int64_t at, step, cnt;                                                 \
        cmlc_wn_runs_start(&r, g, o);                                          \
        int32_t t = 0;                                                         \
        while (cmlc_wn_runs_next(&r, &at, &step, &cnt)) {                      \
          if (is_sum) {                                                        \
            A* dst = acc + at + j0;                                            \
            for (int64_t j = 0; j < n; ++j) dst[j] += sv[j];                   \
            continue;                                                          \
          }                                                                    \
          taps[t] = at;                                                        \
          const A* v = (const A*)(const void*)(x + at + j0);                   \
          if (HALF) {                                                          \
            c->widen(wide, x + at + j0, n);                                    \
            v = wide;                                                          \
          }                                                                    \
          if (t == 0) {                                                        \
            for (int64_t j = 0; j < n; ++j) best[j] = v[j], sel[j] = 0;        \
          } else if (is_max) {                                                 \
            for (int64_t j = 0; j < n; ++j) {                                  \
              const bool move = !(best[j] >= v[j]);                            \
              best[j] = move ? v[j] : best[j];                                 \
              sel[j] = move ? t : sel[j];                                      \
            }                                                                  \
          } else {                                                             \
            for (int64_t j = 0; j < n; ++j) {                                  \
              const bool move = !(best[j] <= v[j]);                            \
              best[j] = move ? v[j] : best[j];                                 \
              sel[j] = move ? t : sel[j];                                      \
            }                                                                  \
          }                                                                    \
          ++t;                                                                 \
        }                                                                      \
        if (!is_sum && t > 0) {                                                \
          for (int64_t j = 0; j < n; ++j) acc[taps[sel[j]] + j0 + j] += sv[j]; \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }
CMLC_WN_SAS_ROWS_FN(cmlc_wn_sas_rows_f32, float, float, false)
CMLC_WN_SAS_ROWS_FN(cmlc_wn_sas_rows_f64, double, double, false)
CMLC_WN_SAS_ROWS_FN(cmlc_wn_sas_rows_half, uint16_t, float, true)

// Runs the row kernels when they apply (a float dtype, channels passing through, not the
// reference kernels); false otherwise. |acc| as in cmlc_wn_sas_rows_t, zeroed by the caller.
static bool cmlc_wn_sas_rows(const cmlc_kernel_args_t* args, const cmlc_wn_geom_t* g,
                             int64_t src_count, void* acc) {
  const cml_dtype_t dt = args->input_shapes[0]->dtype;
  if (args->options && args->options->reference) return false;
  cmlc_task_fn fn = dt == CML_DTYPE_F32                             ? cmlc_wn_sas_rows_f32
                    : dt == CML_DTYPE_F64                           ? cmlc_wn_sas_rows_f64
                    : (dt == CML_DTYPE_F16 || dt == CML_DTYPE_BF16) ? cmlc_wn_sas_rows_half
                                                                    : NULL;
  if (!fn) return false;
  cmlc_wn_sas_rows_t c;
  cmlc_wn_rows_t plan;
  if (!cmlc_wn_rows_plan(g, &args->node->attrs->u.window, 8, &plan)) return false;
  int64_t taps = 1;
  for (int32_t d = 0; d < g->rank; ++d) taps *= cmlc_wn_or_one(g->window[d]);
  if (taps > CMLC_WN_SAS_TAPS) return false;
  c.widen = NULL;
  if (fn == cmlc_wn_sas_rows_half) {
    c.widen = cmlc_ew_simd_convert_fn(args->options, dt, CML_DTYPE_F32);
    if (!c.widen) return false;
  }
  c.lead = plan.lead;
  c.len = plan.len;
  c.src_rows = src_count / plan.len;
  c.op = args->node->op;
  c.x = args->inputs[0];
  c.src = args->inputs[1];
  c.acc = acc;
  // Blocks of 16 channels or more (a vector), about two per thread, at most the buffers' size.
  const int threads =
      cmlc_pool_thread_count(args->pool) > 0 ? cmlc_pool_thread_count(args->pool) : 1;
  int64_t block = (plan.len + 2 * threads - 1) / (2 * threads);
  block = (block + 15) / 16 * 16;
  c.block = block < 16 ? 16 : block > CMLC_WN_SAS_BLOCK ? CMLC_WN_SAS_BLOCK : block;
  const int64_t blocks = (plan.len + c.block - 1) / c.block;
  cmlc_parallel_for(args->pool, blocks, 1, fn, &c);
  return true;
}

static bool cmlc_wn_sas_dtype_ok(cml_dtype_t dtype) {
  return (cml_dtype_is_int(dtype) && !cml_dtype_is_packed(dtype)) || cml_dtype_is_float(dtype);
}

static size_t cmlc_wn_sas_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options) {
  (void)options;
  const cml_shape_t* xs = &module->values[node->inputs[0]].shape;
  if (xs->dtype != CML_DTYPE_F16 && xs->dtype != CML_DTYPE_BF16) return 0;
  return cmlc_size_of(cml_shape_element_count(xs), sizeof(float));  // saturating
}

static cml_status_t cmlc_wn_select_and_scatter(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* ss = args->input_shapes[1];
  const cml_ir_attrs_t* at = args->node->attrs;
  const cml_op_t op = args->node->op;
  const int64_t n = cml_shape_element_count(xs);
  memset(args->outputs[0], 0, cml_shape_byte_size(xs));
  const int64_t src_count = cml_shape_element_count(ss);
  if (n == 0 || src_count == 0) return CML_OK;
  cmlc_wn_geom_t g;
  cmlc_wn_geom_init(&g, xs, ss, &at->u.window);
  const void* x = args->inputs[0];
  const void* src = args->inputs[1];
  void* out = args->outputs[0];
  if ((xs->dtype == CML_DTYPE_F32 || xs->dtype == CML_DTYPE_F64) &&
      cmlc_wn_sas_rows(args, &g, src_count, out)) {
    return CML_OK;
  }
  switch (xs->dtype) {
#define CMLC_WN_SAS_CASE(D, suffix, T)                                            \
  case D:                                                                         \
    cmlc_wn_sas_##suffix(&g, op, (const T*)x, (const T*)src, src_count, (T*)out); \
    break;
    CMLC_WN_SAS_CASE(CML_DTYPE_I8, i8, int8_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_I16, i16, int16_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_I32, i32, int32_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_I64, i64, int64_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_U8, u8, uint8_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_U16, u16, uint16_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_U32, u32, uint32_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_U64, u64, uint64_t)
    CMLC_WN_SAS_CASE(CML_DTYPE_F32, f32, float)
    CMLC_WN_SAS_CASE(CML_DTYPE_F64, f64, double)
#undef CMLC_WN_SAS_CASE
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16: {
      const size_t want = cmlc_size_of(n, sizeof(float));
      if (args->scratch == NULL || want == SIZE_MAX || args->scratch_size < want) {
        return cml_status_make(CML_STATUS_INTERNAL, "%s: scratch of %zu bytes, want %zu",
                               cml_op_name(op), args->scratch_size, want);
      }
      float* acc = (float*)args->scratch;
      memset(acc, 0, (size_t)n * sizeof(float));
      uint16_t* o = (uint16_t*)out;
      if (cmlc_wn_sas_rows(args, &g, src_count, acc)) {
        if (xs->dtype == CML_DTYPE_F16) {
          cmlc_ew_convert_fn narrow =
              cmlc_ew_simd_convert_fn(args->options, CML_DTYPE_F32, CML_DTYPE_F16);
          if (narrow) {
            narrow(o, acc, n);
          } else {
            for (int64_t i = 0; i < n; ++i) o[i] = cml__f32_to_f16(acc[i]);
          }
        } else {
          cmlc_f32_to_bf16_row(o, acc, n);
        }
      } else if (xs->dtype == CML_DTYPE_F16) {
        cmlc_wn_sas_f16(&g, op, (const uint16_t*)x, (const uint16_t*)src, src_count, acc);
        for (int64_t i = 0; i < n; ++i) o[i] = cml__f32_to_f16(acc[i]);
      } else {
        cmlc_wn_sas_bf16(&g, op, (const uint16_t*)x, (const uint16_t*)src, src_count, acc);
        for (int64_t i = 0; i < n; ++i) o[i] = cml__f32_to_bf16(acc[i]);
      }
      break;
    }
    default: {
      char text[160];
      return cml_status_make(
          CML_STATUS_UNIMPLEMENTED, "%s: the c backend has no kernel for dtype %s (operand %s)",
          cml_op_name(op), cml_dtype_name(xs->dtype), cml_shape_format(xs, text, sizeof text));
    }
  }
  return CML_OK;
}

//===--- dispatch ---===//

bool cmlc_kernels_window_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)options;
  if (module == NULL || node == NULL || out == NULL || node->input_count < 1) return false;
  const cml_dtype_t dtype = module->values[node->inputs[0]].shape.dtype;
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  switch (node->op) {
    case CML_OP_REDUCE_WINDOW:
      if (cmlc_wn_pick(cmlc_wn_rw_table, dtype, node->attrs->reduce_type) == NULL) return false;
      e.run = cmlc_wn_reduce_window;
      break;
    case CML_OP_SELECT_AND_SCATTER_MAX:
    case CML_OP_SELECT_AND_SCATTER_MIN:
    case CML_OP_SELECT_AND_SCATTER_SUM:
      if (!cmlc_wn_sas_dtype_ok(dtype) || node->input_count < 2) return false;
      e.run = cmlc_wn_select_and_scatter;
      e.scratch = cmlc_wn_sas_scratch;
      break;
    default:
      return false;
  }
  *out = e;
  return true;
}

void cmlc_kernels_window_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_WINDOW);
}
