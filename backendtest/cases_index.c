// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_index.c: compliance cases of the "index" group: DynamicSlice,
// DynamicUpdateSlice, Gather and ScatterSum/Max/Min (XLA semantics: starts are clamped for
// slices and gathers; scatter windows not fully inside the operand are skipped).
//
// Each case sweeps every dtype the op accepts that the backend supports, with small integer
// values (exact in every dtype, sums included) and start indices of every integer dtype.
// Expected values come from per-element formulas written here from XLA's definitions.
#include <math.h>
#include <string.h>

#include "backendtest/bt.h"

//===--- helpers ---===//

static const cml_dtype_t ci_all_dtypes[] = {
    CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64,
    CML_DTYPE_U8,   CML_DTYPE_U16, CML_DTYPE_U32, CML_DTYPE_U64, CML_DTYPE_F16,
    CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_C64, CML_DTYPE_C128};
#define CI_DTYPE_COUNT (sizeof ci_all_dtypes / sizeof ci_all_dtypes[0])

static const cml_dtype_t ci_index_dtypes[] = {CML_DTYPE_I32, CML_DTYPE_I64, CML_DTYPE_I8,
                                              CML_DTYPE_I16, CML_DTYPE_U8,  CML_DTYPE_U16,
                                              CML_DTYPE_U32, CML_DTYPE_U64};
#define CI_INDEX_DTYPE_COUNT (sizeof ci_index_dtypes / sizeof ci_index_dtypes[0])

static bool ci_has_dtype(bt_t* t, cml_dtype_t dtype) {
  return cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtype);
}

static int64_t ci_count(int32_t rank, const int64_t* dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

static int64_t ci_flat(int32_t rank, const int64_t* dims, const int64_t* idx) {
  int64_t f = 0;
  for (int32_t d = 0; d < rank; ++d) f = f * dims[d] + idx[d];
  return f;
}

static void ci_unflat(int32_t rank, const int64_t* dims, int64_t i, int64_t* idx) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

// Host values: real (and imaginary, for complex) parts as int64, in 0..mod-1.
typedef struct ci_host_t {
  cml_dtype_t dtype;
  int32_t rank;
  int64_t dims[CML_MAX_RANK];
  int64_t* re;
  int64_t* im;
} ci_host_t;

static ci_host_t ci_host(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                         int64_t seed, int64_t mod) {
  ci_host_t h;
  memset(&h, 0, sizeof h);
  h.dtype = dtype;
  h.rank = rank;
  for (int32_t i = 0; i < rank; ++i) h.dims[i] = dims[i];
  int64_t n = ci_count(rank, dims);
  h.re = bt_alloc(t, (size_t)(n + 1) * sizeof(int64_t));
  h.im = bt_alloc(t, (size_t)(n + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) {
    h.re[i] = (i * 37 + seed * 11 + 5) % mod;
    h.im[i] = cml_dtype_is_complex(dtype) ? (i * 13 + seed) % mod : 0;
    if (dtype == CML_DTYPE_BOOL) h.re[i] %= 2;
  }
  return h;
}

static bt_tensor_t ci_tensor(bt_t* t, const ci_host_t* h) {
  int64_t n = ci_count(h->rank, h->dims);
  if (cml_dtype_is_complex(h->dtype)) {
    double* v = bt_alloc(t, (size_t)(2 * n + 2) * sizeof(double));
    for (int64_t i = 0; i < n; ++i) {
      v[2 * i] = (double)h->re[i];
      v[2 * i + 1] = (double)h->im[i];
    }
    return bt_tensor_c(t, h->dtype, h->rank, h->dims, v);
  }
  return bt_tensor_i64(t, h->dtype, h->rank, h->dims, h->re);
}

// A start index as the kernel reads it: a negative value stored in an unsigned dtype is huge.
static int64_t ci_as_read(cml_dtype_t index_dtype, int64_t v) {
  if (v >= 0 || cml_dtype_is_signed_int(index_dtype)) return v;
  return INT64_MAX;
}

static int64_t ci_clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

static cml_value_t ci_scalar_index(bt_t* t, cml_function_t* f, cml_dtype_t dtype, int64_t v) {
  // Negative values are stored two's-complement in unsigned dtypes (they read as huge).
  return bt_param_i64(t, f, dtype, 0, NULL, &v);
}

//===--- DynamicSlice ---===//

static void case_dynamic_slice_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DYNAMIC_SLICE)) return;
  int64_t dims[] = {5, 7, 11}, sizes[] = {2, 3, 4};
  int64_t starts[] = {1, 6, -2};
  for (size_t k = 0; k < CI_DTYPE_COUNT && !bt_failed(t); ++k) {
    cml_dtype_t dt = ci_all_dtypes[k];
    cml_dtype_t it = ci_index_dtypes[k % CI_INDEX_DTYPE_COUNT];
    if (!ci_has_dtype(t, dt) || !ci_has_dtype(t, it)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    ci_host_t h = ci_host(t, dt, 3, dims, 1, 97);
    bt_tensor_t x = ci_tensor(t, &h);
    cml_value_t sv[3];
    for (int i = 0; i < 3; ++i) sv[i] = ci_scalar_index(t, f, it, starts[i]);
    cml_value_t y = cml_op_dynamic_slice(f, bt_param(t, f, &x), sv, sizes, 3);
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    ci_host_t w = ci_host(t, dt, 3, sizes, 0, 1);
    int64_t s[3];
    for (int i = 0; i < 3; ++i) s[i] = ci_clamp(ci_as_read(it, starts[i]), 0, dims[i] - sizes[i]);
    for (int64_t o = 0; o < ci_count(3, sizes); ++o) {
      int64_t idx[3];
      ci_unflat(3, sizes, o, idx);
      for (int i = 0; i < 3; ++i) idx[i] += s[i];
      int64_t src = ci_flat(3, dims, idx);
      w.re[o] = h.re[src];
      w.im[o] = h.im[src];
    }
    bt_tensor_t want = ci_tensor(t, &w);
    bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
  }
}

static void case_dynamic_slice_scalar_and_empty(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DYNAMIC_SLICE) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  // A scalar operand takes no starts; a zero-size slice of [4] yields [0].
  cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){-0.0});
  cml_value_t y0 = cml_op_dynamic_slice(f, s, NULL, NULL, 0);
  int64_t d4[] = {4}, d0[] = {0};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, d4, (double[]){1, 2, 3, 4});
  cml_value_t st = ci_scalar_index(t, f, CML_DTYPE_I32, 9);
  cml_value_t y1 = cml_op_dynamic_slice(f, x, &st, d0, 1);
  cml_value_t outs[2] = {y0, y1};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_f64(t, "scalar", &out[0], CML_DTYPE_F32, 0, NULL, (double[]){-0.0}, 0);
  bt_expect_f64(t, "empty", &out[1], CML_DTYPE_F32, 1, d0, NULL, 0);
}

//===--- DynamicUpdateSlice ---===//

static void case_dynamic_update_slice_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DYNAMIC_UPDATE_SLICE)) return;
  int64_t dims[] = {5, 7}, udims[] = {2, 3};
  int64_t start_sets[3][2] = {{4, -1}, {1, 2}, {-100, 100}};
  for (size_t s = 0; s < 3; ++s) {
    for (size_t k = 0; k < CI_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = ci_all_dtypes[k];
      cml_dtype_t it = ci_index_dtypes[(k + s) % CI_INDEX_DTYPE_COUNT];
      if (!ci_has_dtype(t, dt) || !ci_has_dtype(t, it)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      ci_host_t h = ci_host(t, dt, 2, dims, 2, 97), u = ci_host(t, dt, 2, udims, 3, 89);
      bt_tensor_t x = ci_tensor(t, &h), ut = ci_tensor(t, &u);
      cml_value_t sv[2] = {ci_scalar_index(t, f, it, start_sets[s][0]),
                           ci_scalar_index(t, f, it, start_sets[s][1])};
      cml_value_t y =
          cml_op_dynamic_update_slice(f, bt_param(t, f, &x), bt_param(t, f, &ut), sv, 2);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      int64_t st[2];
      for (int i = 0; i < 2; ++i)
        st[i] = ci_clamp(ci_as_read(it, start_sets[s][i]), 0, dims[i] - udims[i]);
      ci_host_t w = h;
      w.re = bt_alloc(t, 36 * sizeof(int64_t));
      w.im = bt_alloc(t, 36 * sizeof(int64_t));
      for (int64_t i = 0; i < 35; ++i) {
        int64_t r = i / 7, c = i % 7;
        bool inside = r >= st[0] && r < st[0] + 2 && c >= st[1] && c < st[1] + 3;
        int64_t ui = (r - st[0]) * 3 + (c - st[1]);
        w.re[i] = inside ? u.re[ui] : h.re[i];
        w.im[i] = inside ? u.im[ui] : h.im[i];
      }
      bt_tensor_t want = ci_tensor(t, &w);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

//===--- Gather ---===//

static bool ci_contains(const int64_t* list, int32_t n, int64_t v) {
  for (int32_t i = 0; i < n; ++i)
    if (list[i] == v) return true;
  return false;
}

// The flat operand index that output element |out_idx| reads, from XLA's definition.
static int64_t ci_gather_src(const int64_t* xdims, int32_t xrank, const int64_t* idims,
                             int32_t irank, cml_dtype_t it, const int64_t* indices, int32_t orank,
                             const cml_gather_dims_t* g, const int64_t* out_idx) {
  int64_t batch[CML_MAX_RANK];
  int32_t nb = 0;
  for (int32_t d = 0; d < orank; ++d)
    if (!ci_contains(g->offset_output_axes, g->offset_output_axis_count, d))
      batch[nb++] = out_idx[d];
  int64_t in_idx[CML_MAX_RANK] = {0};
  for (int32_t k = 0; k < g->start_index_map_count; ++k) {
    int64_t pos[CML_MAX_RANK];
    int32_t b = 0;
    for (int32_t d = 0; d < irank; ++d) pos[d] = d == g->index_vector_axis ? k : batch[b++];
    int64_t a = g->start_index_map[k];
    int64_t v = ci_as_read(it, indices[ci_flat(irank, idims, pos)]);
    in_idx[a] = ci_clamp(v, 0, xdims[a] - g->slice_sizes[a]);
  }
  int32_t o = 0;
  for (int32_t d = 0; d < xrank; ++d) {
    if (ci_contains(g->collapsed_slice_axes, g->collapsed_slice_axis_count, d)) continue;
    in_idx[d] += out_idx[g->offset_output_axes[o++]];
  }
  return ci_flat(xrank, xdims, in_idx);
}

typedef struct ci_gather_case_t {
  const char* name;
  int32_t xrank, irank, orank;
  int64_t xdims[4], idims[4], odims[4];
  int64_t indices[16];
  cml_gather_dims_t g;
} ci_gather_case_t;

static void ci_run_gather(bt_t* t, const ci_gather_case_t* c, cml_dtype_t dt, cml_dtype_t it) {
  bt_new_builder(t);
  cml_function_t* f = bt_main(t);
  ci_host_t h = ci_host(t, dt, c->xrank, c->xdims, 4, 97);
  bt_tensor_t x = ci_tensor(t, &h);
  bt_tensor_t idx = bt_tensor_i64(t, it, c->irank, c->idims, c->indices);
  cml_value_t y = cml_op_gather(f, bt_param(t, f, &x), bt_param(t, f, &idx), &c->g);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  ci_host_t w = ci_host(t, dt, c->orank, c->odims, 0, 1);
  for (int64_t o = 0; o < ci_count(c->orank, c->odims); ++o) {
    int64_t oi[CML_MAX_RANK];
    ci_unflat(c->orank, c->odims, o, oi);
    int64_t s =
        ci_gather_src(c->xdims, c->xrank, c->idims, c->irank, it, c->indices, c->orank, &c->g, oi);
    w.re[o] = h.re[s];
    w.im[o] = h.im[s];
  }
  bt_tensor_t want = ci_tensor(t, &w);
  bt_expect_equal(t, c->name, &out[0], &want);
}

static void ci_gather_cases(ci_gather_case_t* cases) {
  memset(cases, 0, 3 * sizeof *cases);
  // Embedding lookup: operand [3, 4], indices [3] (implicit vector axis): rows 2, 0, 9 -> 2.
  ci_gather_case_t* e = &cases[0];
  e->name = "embedding";
  e->xrank = 2, e->irank = 1, e->orank = 2;
  e->xdims[0] = 3, e->xdims[1] = 4, e->idims[0] = 3, e->odims[0] = 3, e->odims[1] = 4;
  e->indices[0] = 2, e->indices[1] = 0, e->indices[2] = 9;
  e->g.index_vector_axis = 1;
  e->g.offset_output_axis_count = 1, e->g.offset_output_axes[0] = 1;
  e->g.collapsed_slice_axis_count = 1, e->g.collapsed_slice_axes[0] = 0;
  e->g.start_index_map_count = 1, e->g.start_index_map[0] = 0;
  e->g.slice_size_count = 2, e->g.slice_sizes[0] = 1, e->g.slice_sizes[1] = 4;
  // Windows: operand [4, 5], indices [3, 2], 2x2 slices (some starts clamped).
  ci_gather_case_t* w = &cases[1];
  w->name = "windows";
  w->xrank = 2, w->irank = 2, w->orank = 3;
  w->xdims[0] = 4, w->xdims[1] = 5, w->idims[0] = 3, w->idims[1] = 2;
  w->odims[0] = 3, w->odims[1] = 2, w->odims[2] = 2;
  int64_t wi[] = {1, 2, 3, 4, -1, 0};
  memcpy(w->indices, wi, sizeof wi);
  w->g.index_vector_axis = 1;
  w->g.offset_output_axis_count = 2, w->g.offset_output_axes[0] = 1, w->g.offset_output_axes[1] = 2;
  w->g.start_index_map_count = 2, w->g.start_index_map[0] = 0, w->g.start_index_map[1] = 1;
  w->g.slice_size_count = 2, w->g.slice_sizes[0] = 2, w->g.slice_sizes[1] = 2;
  // Mixed: operand [5, 6, 7], indices [4, 2, 2] with the vector on axis 2 mapping to operand
  // axes (2, 0); slice [1, 3, 2] with axis 0 collapsed; offset output axes {1, 3}.
  ci_gather_case_t* m = &cases[2];
  m->name = "mixed";
  m->xrank = 3, m->irank = 3, m->orank = 4;
  m->xdims[0] = 5, m->xdims[1] = 6, m->xdims[2] = 7;
  m->idims[0] = 4, m->idims[1] = 2, m->idims[2] = 2;
  m->odims[0] = 4, m->odims[1] = 3, m->odims[2] = 2, m->odims[3] = 2;
  int64_t mi[] = {0, 1, 6, 4, -2, 3, 5, 9, 2, 2, 3, -1, 100, 0, 4, 4};
  memcpy(m->indices, mi, sizeof mi);
  m->g.index_vector_axis = 2;
  m->g.offset_output_axis_count = 2, m->g.offset_output_axes[0] = 1, m->g.offset_output_axes[1] = 3;
  m->g.collapsed_slice_axis_count = 1, m->g.collapsed_slice_axes[0] = 0;
  m->g.start_index_map_count = 2, m->g.start_index_map[0] = 2, m->g.start_index_map[1] = 0;
  m->g.slice_size_count = 3, m->g.slice_sizes[0] = 1, m->g.slice_sizes[1] = 3,
  m->g.slice_sizes[2] = 2;
}

static void case_gather_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_GATHER)) return;
  ci_gather_case_t cases[3];
  ci_gather_cases(cases);
  for (size_t c = 0; c < 3; ++c) {
    for (size_t k = 0; k < CI_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = ci_all_dtypes[k];
      cml_dtype_t it = ci_index_dtypes[(k + c) % CI_INDEX_DTYPE_COUNT];
      if (!ci_has_dtype(t, dt) || !ci_has_dtype(t, it)) continue;
      ci_run_gather(t, &cases[c], dt, it);
    }
  }
}

//===--- Scatter ---===//

// Scatter reference (XLA's definition, windows fully in bounds only): combines into |w|.
typedef struct ci_scatter_case_t {
  int32_t xrank, irank, urank;
  int64_t xdims[4], idims[4], udims[4];
  int64_t indices[16];
  cml_scatter_dims_t s;
} ci_scatter_case_t;

static void ci_scatter_reference(const ci_scatter_case_t* c, cml_dtype_t it, cml_op_t op,
                                 const ci_host_t* u, ci_host_t* w) {
  const cml_scatter_dims_t* s = &c->s;
  int64_t wsize[CML_MAX_RANK];
  int32_t wi = 0;
  for (int32_t d = 0; d < c->xrank; ++d)
    wsize[d] = ci_contains(s->inserted_window_axes, s->inserted_window_axis_count, d)
                   ? 1
                   : c->udims[s->update_window_axes[wi++]];
  for (int64_t e = 0; e < ci_count(c->urank, c->udims); ++e) {
    int64_t ui[CML_MAX_RANK];
    ci_unflat(c->urank, c->udims, e, ui);
    int64_t g[CML_MAX_RANK], win[CML_MAX_RANK];
    int32_t ng = 0, nw = 0;
    for (int32_t d = 0; d < c->urank; ++d) {
      if (ci_contains(s->update_window_axes, s->update_window_axis_count, d))
        win[nw++] = ui[d];
      else
        g[ng++] = ui[d];
    }
    int64_t start[CML_MAX_RANK] = {0};
    for (int32_t k = 0; k < s->scatter_axes_to_operand_axes_count; ++k) {
      int64_t pos[CML_MAX_RANK];
      int32_t b = 0;
      for (int32_t d = 0; d < c->irank; ++d) pos[d] = d == s->index_vector_axis ? k : g[b++];
      start[s->scatter_axes_to_operand_axes[k]] =
          ci_as_read(it, c->indices[ci_flat(c->irank, c->idims, pos)]);
    }
    bool ok = true;
    int64_t xi[CML_MAX_RANK];
    int32_t k = 0;
    for (int32_t d = 0; d < c->xrank; ++d) {
      if (start[d] < 0 || start[d] > c->xdims[d] - wsize[d]) ok = false;
      bool inserted = ci_contains(s->inserted_window_axes, s->inserted_window_axis_count, d);
      xi[d] = start[d] + (inserted ? 0 : win[k++]);
    }
    if (!ok) continue;
    int64_t x = ci_flat(c->xrank, c->xdims, xi);
    if (op == CML_OP_SCATTER_SUM) {
      w->re[x] += u->re[e];
      w->im[x] += u->im[e];
    } else if (op == CML_OP_SCATTER_MAX) {
      if (u->re[e] > w->re[x]) w->re[x] = u->re[e];
    } else if (u->re[e] < w->re[x]) {
      w->re[x] = u->re[e];
    }
  }
}

static void ci_scatter_cases(ci_scatter_case_t* cases) {
  memset(cases, 0, 2 * sizeof *cases);
  // Rows: operand [6, 5]; indices [3, 2, 1] (vector on axis 2 -> operand axis 0); updates
  // [3, 4, 2]: window axis 1 (size 4 along operand axis 1), scatter axes 0 and 2. Rows 6 and -1
  // are skipped; row 2 is hit twice.
  ci_scatter_case_t* r = &cases[0];
  r->xrank = 2, r->irank = 3, r->urank = 3;
  r->xdims[0] = 6, r->xdims[1] = 5;
  r->idims[0] = 3, r->idims[1] = 2, r->idims[2] = 1;
  r->udims[0] = 3, r->udims[1] = 4, r->udims[2] = 2;
  int64_t ri[] = {0, 5, 2, 2, 6, -1};
  memcpy(r->indices, ri, sizeof ri);
  r->s.index_vector_axis = 2;
  r->s.update_window_axis_count = 1, r->s.update_window_axes[0] = 1;
  r->s.inserted_window_axis_count = 1, r->s.inserted_window_axes[0] = 0;
  r->s.scatter_axes_to_operand_axes_count = 1, r->s.scatter_axes_to_operand_axes[0] = 0;
  // 2-D windows: operand [4, 5]; indices [4, 2]; updates [4, 2, 3] (window 2x3). Starts
  // (0, 1) fits, (3, 0) overflows rows, (1, 2) fits, (2, 3) overflows columns.
  ci_scatter_case_t* w = &cases[1];
  w->xrank = 2, w->irank = 2, w->urank = 3;
  w->xdims[0] = 4, w->xdims[1] = 5;
  w->idims[0] = 4, w->idims[1] = 2;
  w->udims[0] = 4, w->udims[1] = 2, w->udims[2] = 3;
  int64_t wi[] = {0, 1, 3, 0, 1, 2, 2, 3};
  memcpy(w->indices, wi, sizeof wi);
  w->s.index_vector_axis = 1;
  w->s.update_window_axis_count = 2, w->s.update_window_axes[0] = 1, w->s.update_window_axes[1] = 2;
  w->s.scatter_axes_to_operand_axes_count = 2, w->s.scatter_axes_to_operand_axes[0] = 0;
  w->s.scatter_axes_to_operand_axes[1] = 1;
}

static void ci_run_scatter_sweep(bt_t* t, cml_op_t op) {
  if (!bt_require_op(t, op)) return;
  ci_scatter_case_t cases[2];
  ci_scatter_cases(cases);
  for (size_t c = 0; c < 2; ++c) {
    for (size_t k = 0; k < CI_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = ci_all_dtypes[k];
      cml_dtype_t it = ci_index_dtypes[(k + c) % CI_INDEX_DTYPE_COUNT];
      if (!(cml_op_dtypes(op) & CML_DTYPE_BIT(dt))) continue;
      if (!ci_has_dtype(t, dt) || !ci_has_dtype(t, it)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      // Values below 16: sums of a few stay exact in every dtype (f16 and bf16 included).
      ci_host_t h = ci_host(t, dt, cases[c].xrank, cases[c].xdims, 5, 16);
      ci_host_t u = ci_host(t, dt, cases[c].urank, cases[c].udims, 6, 16);
      bt_tensor_t x = ci_tensor(t, &h), ut = ci_tensor(t, &u);
      bt_tensor_t idx = bt_tensor_i64(t, it, cases[c].irank, cases[c].idims, cases[c].indices);
      cml_value_t y = cml_op_scatter(f, op, bt_param(t, f, &x), bt_param(t, f, &idx),
                                     bt_param(t, f, &ut), &cases[c].s);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      ci_host_t w = ci_host(t, dt, cases[c].xrank, cases[c].xdims, 5, 16);
      ci_scatter_reference(&cases[c], it, op, &u, &w);
      bt_tensor_t want = ci_tensor(t, &w);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

static void case_scatter_sum_all_dtypes(bt_t* t) { ci_run_scatter_sweep(t, CML_OP_SCATTER_SUM); }
static void case_scatter_max_all_dtypes(bt_t* t) { ci_run_scatter_sweep(t, CML_OP_SCATTER_MAX); }
static void case_scatter_min_all_dtypes(bt_t* t) { ci_run_scatter_sweep(t, CML_OP_SCATTER_MIN); }

// 1-D scatter of scalars into [n]: indices [k] (implicit vector axis).
static cml_value_t ci_scatter_1d(bt_t* t, cml_function_t* f, cml_op_t op, cml_value_t x,
                                 const int64_t* indices, int64_t k, cml_value_t updates) {
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.inserted_window_axis_count = 1;
  s.scatter_axes_to_operand_axes_count = 1;
  cml_value_t idx = bt_param_i64(t, f, CML_DTYPE_I32, 1, &k, indices);
  return cml_op_scatter(f, op, x, idx, updates, &s);
}

static void case_scatter_edges(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SCATTER_SUM) || !bt_require_op(t, CML_OP_SCATTER_MAX) ||
      !bt_require_op(t, CML_OP_SCATTER_MIN) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_I8))
    return;
  cml_function_t* f = bt_main(t);
  int64_t n3[] = {3}, k4 = 4;
  int64_t idx[] = {0, 0, 1, 2};
  // NaN propagates through Max and Min, from either side.
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, n3, (double[]){1, 5, NAN});
  cml_value_t u = bt_param_f64(t, f, CML_DTYPE_F32, 1, &k4, (double[]){3, NAN, 4, -INFINITY});
  cml_value_t ymax = ci_scatter_1d(t, f, CML_OP_SCATTER_MAX, x, idx, k4, u);
  cml_value_t ymin = ci_scatter_1d(t, f, CML_OP_SCATTER_MIN, x, idx, k4, u);
  // Integer sums wrap: 127 + 1 + 1 = -127 in i8; out-of-range indices are skipped.
  int64_t idx2[] = {0, 0, 3, -1};
  cml_value_t xi = bt_param_i64(t, f, CML_DTYPE_I8, 1, n3, (int64_t[]){127, -128, 0});
  cml_value_t ui = bt_param_i64(t, f, CML_DTYPE_I8, 1, &k4, (int64_t[]){1, 1, 50, 60});
  cml_value_t ysum = ci_scatter_1d(t, f, CML_OP_SCATTER_SUM, xi, idx2, k4, ui);
  cml_value_t outs[3] = {ymax, ymin, ysum};
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  bt_expect_f64(t, "max", &out[0], CML_DTYPE_F32, 1, n3, (double[]){NAN, 5, NAN}, 0);
  bt_expect_f64(t, "min", &out[1], CML_DTYPE_F32, 1, n3, (double[]){NAN, 4, NAN}, 0);
  bt_expect_i64(t, "sum", &out[2], CML_DTYPE_I8, 1, n3, (int64_t[]){-127, -128, 0});
}

// Unsigned starts past INT64_MAX (and past INT32_MAX) clamp to the end like any start past it:
// row 5 of {10, ..., 15}, with the operand and the starts constants (which XLA's constant folders
// once read as signed, gathering row 0) and with the starts as a parameter.
// Dimension numbers that gather single elements of a 1-D operand at indices [N, 1].
static cml_gather_dims_t ci_gather_elements_1d(void) {
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 1;
  g.collapsed_slice_axis_count = 1;
  g.start_index_map_count = 1;
  g.slice_size_count = 1;
  g.slice_sizes[0] = 1;
  return g;
}

static void case_gather_unsigned_starts_past_the_signed_range(bt_t* t) {
  if (!bt_require_op(t, CML_OP_GATHER) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_U64) || !bt_require_dtype(t, CML_DTYPE_U32))
    return;
  cml_function_t* f = bt_main(t);
  static const float x[6] = {10, 11, 12, 13, 14, 15};
  static const uint64_t big64[2] = {UINT64_MAX, (uint64_t)1 << 63};
  static const uint32_t big32[2] = {UINT32_MAX, 0x80000000u};
  const int64_t n6 = 6, n2[2] = {2, 1};
  const cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 1, &n6);
  const cml_shape_t s64 = cml_shape_make(CML_DTYPE_U64, 2, n2);
  const cml_shape_t s32 = cml_shape_make(CML_DTYPE_U32, 2, n2);
  const cml_gather_dims_t g = ci_gather_elements_1d();
  const cml_value_t xc = cml_constant(f, &xs, x);
  cml_value_t outs[3] = {
      cml_op_gather(f, xc, cml_constant(f, &s64, big64), &g),
      cml_op_gather(f, xc, cml_constant(f, &s32, big32), &g),
      cml_op_gather(f, xc, bt_param_i64(t, f, CML_DTYPE_U64, 2, n2, (int64_t[]){-1, INT64_MIN}),
                    &g)};
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  const int64_t n2v = 2;
  bt_expect_f64(t, "u64 constants", &out[0], CML_DTYPE_F32, 1, &n2v, (double[]){15, 15}, 0);
  bt_expect_f64(t, "u32 constants", &out[1], CML_DTYPE_F32, 1, &n2v, (double[]){15, 15}, 0);
  bt_expect_f64(t, "u64 parameter", &out[2], CML_DTYPE_F32, 1, &n2v, (double[]){15, 15}, 0);
}

// Constant starts at the top of U8, U16, U32 and U64 (255, 65535, 2^32 - 1, 2^64 - 1): clamped
// to the last position, as every unsigned value is taken as it is (xla:cpu's constant folders
// read them as signed, -1, and sliced or gathered from the start). DynamicSlice of 4 of
// [10..15] gives 12..15; a one-element Gather gives 15.
static void case_unsigned_constant_starts(bt_t* t) {
  static const cml_dtype_t dts[] = {CML_DTYPE_U8, CML_DTYPE_U16, CML_DTYPE_U32, CML_DTYPE_U64};
  if (!bt_require_op(t, CML_OP_GATHER) || !bt_require_op(t, CML_OP_DYNAMIC_SLICE) ||
      !bt_require_dtype(t, CML_DTYPE_F32))
    return;
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; ++d) {
    if (!cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dts[d])) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    static const float x[6] = {10, 11, 12, 13, 14, 15};
    const uint64_t top = dts[d] == CML_DTYPE_U64   ? UINT64_MAX
                         : dts[d] == CML_DTYPE_U32 ? UINT32_MAX
                         : dts[d] == CML_DTYPE_U16 ? UINT16_MAX
                                                   : UINT8_MAX;
    unsigned char bytes[8];
    memcpy(bytes, &top, sizeof bytes);  // little-endian: the low bytes hold the value
    const int64_t n6 = 6, n1[2] = {1, 1}, four = 4;
    const cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 1, &n6);
    const cml_shape_t ss = cml_shape_scalar(dts[d]);
    const cml_shape_t is = cml_shape_make(dts[d], 2, n1);
    const cml_gather_dims_t g = ci_gather_elements_1d();
    const cml_value_t xc = cml_constant(f, &xs, x);
    const cml_value_t start = cml_constant(f, &ss, bytes);
    cml_value_t outs[2] = {cml_op_dynamic_slice(f, xc, &start, &four, 1),
                           cml_op_gather(f, xc, cml_constant(f, &is, bytes), &g)};
    bt_tensor_t out[2];
    if (!bt_exec(t, outs, 2, out)) return;
    const int64_t one = 1;
    bt_expect_f64(t, cml_dtype_name(dts[d]), &out[0], CML_DTYPE_F32, 1, &four,
                  (double[]){12, 13, 14, 15}, 0);
    bt_expect_f64(t, cml_dtype_name(dts[d]), &out[1], CML_DTYPE_F32, 1, &one, (double[]){15}, 0);
  }
}

// Max and Min order -0 below +0 (XLA's maximum / minimum), whichever side the zero comes from:
// operand {-0, +0, -0, +0} with updates {+0, -0, +0, -0} gives +0 everywhere for Max and -0
// for Min, on every float dtype the backend has.
static void case_scatter_signed_zeros(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SCATTER_MAX) || !bt_require_op(t, CML_OP_SCATTER_MIN)) return;
  static const cml_dtype_t dts[] = {CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64};
  int64_t n4 = 4, idx[] = {0, 1, 2, 3};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; ++d) {
    if (!cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dts[d])) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    cml_value_t x = bt_param_f64(t, f, dts[d], 1, &n4, (double[]){-0.0, 0.0, -0.0, 0.0});
    cml_value_t u = bt_param_f64(t, f, dts[d], 1, &n4, (double[]){0.0, -0.0, 0.0, -0.0});
    cml_value_t outs[2] = {ci_scatter_1d(t, f, CML_OP_SCATTER_MAX, x, idx, n4, u),
                           ci_scatter_1d(t, f, CML_OP_SCATTER_MIN, x, idx, n4, u)};
    bt_tensor_t out[2];
    if (!bt_exec(t, outs, 2, out)) return;
    bt_expect_f64(t, "max", &out[0], dts[d], 1, &n4, (double[]){0.0, 0.0, 0.0, 0.0}, 0);
    bt_expect_f64(t, "min", &out[1], dts[d], 1, &n4, (double[]){-0.0, -0.0, -0.0, -0.0}, 0);
  }
}

// Narrow index dtypes into axes longer than the dtype's range: Int8 / Uint8 / Int16 / Uint16
// indices {1, max} into a zero [max + 2] with updates {1, 2}, and an Int8 row index 1 into
// [2, 300] with a window of 100 columns (300 - 100 is more than Int8's maximum). xla:cpu checked
// the windows' bounds in the index dtype and dropped these in-range updates.
static void case_scatter_narrow_indices_into_long_axes(bt_t* t) {
  static const cml_dtype_t dts[] = {CML_DTYPE_I8, CML_DTYPE_U8, CML_DTYPE_I16, CML_DTYPE_U16};
  if (!bt_require_op(t, CML_OP_SCATTER_SUM) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; ++d) {
    if (!cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dts[d])) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t top = dts[d] == CML_DTYPE_I8    ? INT8_MAX
                        : dts[d] == CML_DTYPE_U8  ? UINT8_MAX
                        : dts[d] == CML_DTYPE_I16 ? INT16_MAX
                                                  : UINT16_MAX;
    const int64_t n = top + 2, two = 2;
    double* want = bt_alloc(t, (size_t)n * sizeof(double));
    if (!want) return;
    for (int64_t i = 0; i < n; ++i) want[i] = i == 1 ? 1 : i == top ? 2 : 0;
    cml_value_t x =
        cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0), &n, 1, NULL, 0);
    cml_value_t u = bt_param_f64(t, f, CML_DTYPE_F32, 1, &two, (double[]){1, 2});
    cml_scatter_dims_t s;
    memset(&s, 0, sizeof s);
    s.index_vector_axis = 1;
    s.inserted_window_axis_count = 1;
    s.scatter_axes_to_operand_axes_count = 1;
    cml_value_t idx = bt_param_i64(t, f, dts[d], 1, &two, (int64_t[]){1, top});
    cml_value_t outs[1] = {cml_op_scatter(f, CML_OP_SCATTER_SUM, x, idx, u, &s)};
    if (dts[d] == CML_DTYPE_I8) {
      // [2, 300] <- row 1, columns [0, 100).
      const int64_t xd[2] = {2, 300}, ud[2] = {1, 100}, one = 1;
      cml_value_t rows =
          cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0), xd, 2, NULL, 0);
      cml_value_t ones =
          cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1), ud, 2, NULL, 0);
      cml_scatter_dims_t w;
      memset(&w, 0, sizeof w);
      w.index_vector_axis = 1;
      w.update_window_axis_count = 1;
      w.update_window_axes[0] = 1;
      w.inserted_window_axis_count = 1;
      w.scatter_axes_to_operand_axes_count = 1;
      cml_value_t row = bt_param_i64(t, f, CML_DTYPE_I8, 1, &one, (int64_t[]){1});
      cml_value_t y = cml_op_scatter(f, CML_OP_SCATTER_SUM, rows, row, ones, &w);
      bt_tensor_t out[2];
      cml_value_t both[2] = {outs[0], y};
      if (!bt_exec(t, both, 2, out)) return;
      bt_expect_f64(t, cml_dtype_name(dts[d]), &out[0], CML_DTYPE_F32, 1, &n, want, 0);
      double* rw = bt_alloc(t, 600 * sizeof(double));
      if (!rw) return;
      for (int i = 0; i < 600; ++i) rw[i] = i >= 300 && i < 400 ? 1 : 0;
      bt_expect_f64(t, "Int8 row window", &out[1], CML_DTYPE_F32, 2, xd, rw, 0);
      continue;
    }
    bt_tensor_t out[1];
    if (!bt_exec(t, outs, 1, out)) return;
    bt_expect_f64(t, cml_dtype_name(dts[d]), &out[0], CML_DTYPE_F32, 1, &n, want, 0);
  }
}

//===--- table ---===//

const bt_case_t bt_cases_index[] = {
    {"dynamic_slice_all_dtypes", CML_OP_DYNAMIC_SLICE, case_dynamic_slice_all_dtypes},
    {"dynamic_slice_scalar_and_empty", CML_OP_DYNAMIC_SLICE, case_dynamic_slice_scalar_and_empty},
    {"dynamic_update_slice_all_dtypes", CML_OP_DYNAMIC_UPDATE_SLICE,
     case_dynamic_update_slice_all_dtypes},
    {"gather_all_dtypes", CML_OP_GATHER, case_gather_all_dtypes},
    {"gather_unsigned_starts_past_the_signed_range", CML_OP_GATHER,
     case_gather_unsigned_starts_past_the_signed_range},
    {"unsigned_constant_starts", CML_OP_DYNAMIC_SLICE, case_unsigned_constant_starts},
    {"scatter_sum_all_dtypes", CML_OP_SCATTER_SUM, case_scatter_sum_all_dtypes},
    {"scatter_max_all_dtypes", CML_OP_SCATTER_MAX, case_scatter_max_all_dtypes},
    {"scatter_min_all_dtypes", CML_OP_SCATTER_MIN, case_scatter_min_all_dtypes},
    {"scatter_edges", CML_OP_SCATTER_SUM, case_scatter_edges},
    {"scatter_signed_zeros", CML_OP_SCATTER_MAX, case_scatter_signed_zeros},
    {"scatter_narrow_indices_into_long_axes", CML_OP_SCATTER_SUM,
     case_scatter_narrow_indices_into_long_axes},
};
const size_t bt_cases_index_count = sizeof bt_cases_index / sizeof bt_cases_index[0];
