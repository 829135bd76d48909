// SPDX-License-Identifier: Apache-2.0
// tests/unit/attr_extremes_test.c: integer attributes at their extremes (0, ±1, INT64_MAX,
// INT64_MIN, INT64_MAX - k, 2^55 = CML_MAX_ELEMENTS, values that overflow only in an
// intermediate sum or product, values whose net output is small) for every op that has them.
// Each graph is either refused by the builder with INVALID_ARGUMENT naming the op, or it
// compiles and runs on `c` with the result of an independent naive computation in this file
// (__int128 positions, so the reference itself cannot overflow). With --xla (the
// attr_extremes_xla CTest entry, label device) every accepted graph also runs on xla:cpu and
// must give the same values: XLA must never refuse (or abort on) a graph the builder accepts.
#include <complex.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "api_common.h"
#include "test.h"

#ifdef ATTR_WITH_XLA
#include "backends/xla/xla_internal.h"
#include "cml/xla.h"
#endif

__extension__ typedef __int128 i128;

#define BIG ((int64_t)1 << 55)  // CML_MAX_ELEMENTS, the attribute bound
#define MAXI INT64_MAX
#define MINI INT64_MIN
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

// Outputs up to this many elements are executed (larger accepted graphs only compile).
#define EXEC_LIMIT 4096

static cml_backend_t* g_c;
static cml_backend_t* g_xla;  // NULL unless --xla and a CPU plugin is installed
static size_t g_refused, g_accepted, g_executed, g_xla_runs;

//===--- one case ---===//

typedef struct xc_t xc_t;
typedef cml_value_t (*xc_build_fn)(cml_function_t* f, const cml_value_t* params, const xc_t* c);
// Fills |out| (the output's dtype, |out_shape|) from the inputs; false: no reference (shape only).
typedef bool (*xc_ref_fn)(const xc_t* c, const cml_shape_t* out_shape, void* out);

struct xc_t {
  const char* op;  // the op name a refusal must name
  char label[192];
  int n_in;
  cml_shape_t in[3];
  const void* data[3];
  xc_build_fn build;
  xc_ref_fn ref;
  double tol;  // 0: exact
  // Attributes (what each op reads).
  cml_pad_axis_t pad;
  int64_t a[4][CML_MAX_RANK];
  int32_t n;
  cml_window_config_t win;
  cml_conv_config_t conv;
  cml_gather_dims_t gather;
  cml_scatter_dims_t scatter;
  cml_fft_type_t fft;
};

static char* text_i64(int64_t v, char* buf) {
  if (v > MAXI - 100) {
    snprintf(buf, 32, "MAX-%lld", (long long)(MAXI - v));
  } else if (v < MINI + 100) {
    snprintf(buf, 32, "MIN+%lld", (long long)(v - MINI));
  } else {
    snprintf(buf, 32, "%lld", (long long)v);
  }
  return buf;
}
#define T(v) text_i64((v), (char[32]){0})

static bool data_equal(const cml_shape_t* s, const void* a, const void* b, double tol) {
  int64_t n = cml_shape_element_count(s);
  if (tol == 0 || (s->dtype != CML_DTYPE_F32 && s->dtype != CML_DTYPE_C64)) {
    return memcmp(a, b, cml_shape_byte_size(s)) == 0;
  }
  int64_t m = s->dtype == CML_DTYPE_C64 ? 2 * n : n;
  for (int64_t i = 0; i < m; ++i) {
    double x = ((const float*)a)[i], y = ((const float*)b)[i];
    if (!(fabs(x - y) <= tol * (1 + fabs(y)))) return false;
  }
  return true;
}

// Builds |c| on |be|; returns the builder status (compile included) and the executable.
static cml_status_t xc_compile(cml_backend_t* be, const xc_t* c, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "attr", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t p[3];
  for (int i = 0; i < c->n_in; ++i) {
    char name[16];
    snprintf(name, sizeof name, "p%d", i);
    p[i] = cml_parameter(f, name, &c->in[i]);
  }
  cml_value_t out = c->build(f, p, c);
  cml_status_t st = cml_builder_status(b);
  if (st != CML_OK) {
    cml_builder_destroy(b);
    return st;
  }
  return api_finish(b, &out, 1, exe);
}

// Runs |exe| on |be| and compares with |want| (NULL: only runs). False on a mismatch.
static bool xc_run(int* test_failed_, cml_backend_t* be, cml_executable_t* exe, const xc_t* c,
                   const void* want) {
  const cml_shape_t* os = cml_executable_output_shape(exe, 0);
  size_t bytes = cml_shape_byte_size(os);
  void* got = calloc(1, bytes ? bytes : 1);
  cml_status_t st = api_run(be, exe, c->data, (void* const[]){got});
  bool ok = true;
  if (st != CML_OK && be == g_xla && cml_status_code(st) == CML_STATUS_RESOURCE_EXHAUSTED) {
    // XLA materializes SelectAndScatter's window (2^55 elements): a clean refusal, no abort.
    cml_status_free(st);
  } else if (st != CML_OK) {
    fprintf(stderr, "  %s on %s: execute failed (%s): %s\n", c->label, cml_backend_name(be),
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
    cml_status_free(st);
    ok = false;
  } else if (want && !data_equal(os, got, want, c->tol)) {
    fprintf(stderr, "  %s on %s: wrong values\n", c->label, cml_backend_name(be));
    ok = false;
  }
  free(got);
  if (!ok) *test_failed_ = 1;
  return ok;
}

static bool g_verbose;  // ATTR_EXTREMES_VERBOSE=1: print each case before running it

static void xc_check(int* test_failed_, const xc_t* c) {
  if (g_verbose) fprintf(stderr, "%s\n", c->label);
  cml_executable_t* exe = NULL;
  cml_status_t st = xc_compile(g_c, c, &exe);
  if (st != CML_OK) {
    ++g_refused;
    char msg[1024];
    cml_status_code_t code = api_code_msg(st, msg, sizeof msg);
    if (code != CML_STATUS_INVALID_ARGUMENT || strstr(msg, c->op) != msg) {
      fprintf(stderr, "  %s: refused with code %d, message not INVALID_ARGUMENT from %s: %s\n",
              c->label, (int)code, c->op, msg);
      *test_failed_ = 1;
    }
    return;
  }
  ++g_accepted;
  const cml_shape_t os = *cml_executable_output_shape(exe, 0);
  if (cml_shape_element_count(&os) > EXEC_LIMIT) {
    cml_executable_release(exe);
    return;
  }
  size_t bytes = cml_shape_byte_size(&os);
  void* want = calloc(1, bytes ? bytes : 1);
  bool have_ref = c->ref(c, &os, want);
  ++g_executed;
  xc_run(test_failed_, g_c, exe, c, have_ref ? want : NULL);
  cml_executable_release(exe);
  if (g_xla) {
    ++g_xla_runs;
    exe = NULL;
    st = xc_compile(g_xla, c, &exe);
    if (st != CML_OK) {
      fprintf(stderr, "  %s: accepted on c but refused on xla:cpu: %s\n", c->label,
              cml_status_message(st));
      cml_status_free(st);
      *test_failed_ = 1;
    } else {
      xc_run(test_failed_, g_xla, exe, c, have_ref ? want : NULL);
      cml_executable_release(exe);
    }
  }
  free(want);
}

static const float kX[64] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                             17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
                             33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
                             49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64};
static const float kFill = -7.0f;

static bool ref_zeros(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)c;
  memset(out, 0, cml_shape_byte_size(os));
  return true;
}

static void xc_init(xc_t* c, const char* op, int64_t dim) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->n_in = 1;
  c->in[0] = cml_shape_make(CML_DTYPE_F32, 1, &dim);
  c->data[0] = kX;
}

//===--- Pad ---===//

static cml_value_t build_pad(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  cml_value_t fill = cml_constant_scalar_f64(f, CML_DTYPE_F32, kFill);
  return cml_op_pad(f, p[0], fill, &c->pad, 1);
}

static bool ref_pad(const xc_t* c, const cml_shape_t* os, void* out) {
  const i128 step = (i128)c->pad.interior + 1, d = c->in[0].dims[0];
  for (int64_t o = 0; o < os->dims[0]; ++o) {
    i128 q = (i128)o - c->pad.low;
    bool hit = q >= 0 && q % step == 0 && q / step < d;
    ((float*)out)[o] = hit ? kX[(int64_t)(q / step)] : kFill;
  }
  return true;
}

static const int64_t kEdge[] = {
    0,           1,   -1,   2,       -3,         MAXI,    MINI,       MAXI - 3,
    -(MAXI - 5), BIG, -BIG, BIG + 1, -(BIG + 1), BIG - 2, -(BIG - 2), (int64_t)1 << 62};

TEST(pad) {
  static const int64_t interiors[] = {0, 1, 2, -1, BIG, BIG + 1, MAXI, MINI, MAXI / 2};
  static const int64_t dims[] = {0, 1, 3};
  for (size_t di = 0; di < N_OF(dims); ++di) {
    for (size_t l = 0; l < N_OF(kEdge); ++l) {
      for (size_t h = 0; h < N_OF(kEdge); ++h) {
        for (size_t k = 0; k < N_OF(interiors); ++k) {
          xc_t c;
          xc_init(&c, "Pad", dims[di]);
          c.pad = (cml_pad_axis_t){kEdge[l], kEdge[h], interiors[k]};
          c.build = build_pad;
          c.ref = ref_pad;
          snprintf(c.label, sizeof c.label, "Pad d=%lld low=%s high=%s interior=%s",
                   (long long)dims[di], T(c.pad.low), T(c.pad.high), T(c.pad.interior));
          xc_check(test_failed_, &c);
        }
      }
    }
  }
  // The reported crash: low = MAX-3, high = -(MAX-5) (net output 4), and a huge interior with
  // negative edges whose net output is small.
  xc_t c;
  xc_init(&c, "Pad", 3);
  c.pad = (cml_pad_axis_t){MAXI - 3, -(MAXI - 5), 0};
  c.build = build_pad;
  c.ref = ref_pad;
  snprintf(c.label, sizeof c.label, "Pad reported");
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_CODE(xc_compile(g_c, &c, &exe), CML_STATUS_INVALID_ARGUMENT);
  // Interior-padded size 2 * (BIG/2 - 1 + 1) + 1 = BIG + 1: just past the bound.
  c.pad = (cml_pad_axis_t){-(BIG / 2 - 2), -(BIG / 2 - 2), BIG / 2 - 1};
  ASSERT_STATUS_CODE(xc_compile(g_c, &c, &exe), CML_STATUS_INVALID_ARGUMENT);
  // Interior-padded size BIG - 1, output 3: [fill, x[1], fill].
  c.pad = (cml_pad_axis_t){-(BIG / 2 - 2), -(BIG / 2 - 2), BIG / 2 - 2};
  ASSERT_STATUS_OK(xc_compile(g_c, &c, &exe));
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->dims[0], 3);
  cml_executable_release(exe);
  xc_check(test_failed_, &c);
}

//===--- Slice ---===//

static cml_value_t build_slice(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_slice(f, p[0], c->a[0], c->a[1], c->a[2], 1);
}

static bool ref_slice(const xc_t* c, const cml_shape_t* os, void* out) {
  for (int64_t o = 0; o < os->dims[0]; ++o) {
    ((float*)out)[o] = kX[(int64_t)((i128)c->a[0][0] + (i128)o * c->a[2][0])];
  }
  return true;
}

TEST(slice) {
  static const int64_t pos[] = {0, 1, 4, 5, 6, -1, MAXI, MINI, BIG};
  static const int64_t strides[] = {1, 2, 4, 5, 0, -1, MAXI, MINI, BIG, MAXI - 1};
  for (size_t s = 0; s < N_OF(pos); ++s) {
    for (size_t l = 0; l < N_OF(pos); ++l) {
      for (size_t k = 0; k < N_OF(strides); ++k) {
        xc_t c;
        xc_init(&c, "Slice", 5);
        c.a[0][0] = pos[s];
        c.a[1][0] = pos[l];
        c.a[2][0] = strides[k];
        c.build = build_slice;
        c.ref = ref_slice;
        snprintf(c.label, sizeof c.label, "Slice start=%s limit=%s stride=%s", T(pos[s]), T(pos[l]),
                 T(strides[k]));
        xc_check(test_failed_, &c);
      }
    }
  }
}

//===--- windows: ReduceWindow, SelectAndScatter, ConvGeneral ---===//

// The window element (tap) of output |o| that reads input element |i| along one axis, or -1.
// (Looping over the few input elements, not the possibly huge window.)
static int64_t window_tap(i128 o, i128 i, i128 stride, i128 wdil, i128 low, i128 bdil,
                          i128 window) {
  i128 q = i * bdil + low - o * stride;  // the padded position relative to the window start
  if (q < 0 || q % wdil != 0 || q / wdil >= window) return -1;
  return (int64_t)(q / wdil);
}

static int64_t or1(int64_t v) { return v == 0 ? 1 : v; }

static cml_value_t build_reduce_window(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_reduce_window(f, p[0], CML_REDUCE_SUM, &c->win);
}

static bool ref_reduce_window(const xc_t* c, const cml_shape_t* os, void* out) {
  const cml_window_config_t* w = &c->win;
  int64_t stride = w->strides[0] == 0 ? w->window_dims[0] : w->strides[0];
  for (int64_t o = 0; o < os->dims[0]; ++o) {
    float sum = 0;
    for (int64_t i = 0; i < c->in[0].dims[0]; ++i) {
      int64_t k = window_tap(o, i, stride, or1(w->window_dilations[0]), w->padding_low[0],
                             or1(w->input_dilations[0]), w->window_dims[0]);
      if (k >= 0) sum += kX[i];
    }
    ((float*)out)[o] = sum;
  }
  return true;
}

static const int64_t kPads[] = {0,   1,    -1,       -4,          MAXI,   MINI,
                                BIG, -BIG, MAXI - 3, -(MAXI - 5), BIG + 1};

typedef struct win_params_t {
  int64_t window, stride, base_dil, win_dil;
} win_params_t;

static const win_params_t kWins[] = {
    {1, 1, 1, 1},       {2, 0, 0, 0},    {2, 1, 2, 3},       {0, 1, 1, 1},    {-1, 1, 1, 1},
    {MAXI, 1, 1, 1},    {BIG, 1, 1, 1},  {BIG + 1, 1, 1, 1}, {2, MAXI, 1, 1}, {2, BIG, 1, 1},
    {2, -1, 1, 1},      {2, MINI, 1, 1}, {1, 1, MAXI, 1},    {1, 1, BIG, 1},  {2, 1, BIG / 2, 1},
    {2, 1, 1, MAXI},    {2, 1, 1, BIG},  {2, 1, 1, BIG - 1}, {2, 1, -1, 1},   {2, 1, 1, MINI},
    {3, 2, MAXI / 2, 2}};

static void window_sweep(int* test_failed_, const char* op, xc_build_fn build, xc_ref_fn ref,
                         bool dilations) {
  for (size_t wi = 0; wi < N_OF(kWins); ++wi) {
    for (size_t l = 0; l < N_OF(kPads); ++l) {
      for (size_t h = 0; h < N_OF(kPads); ++h) {
        const win_params_t* wp = &kWins[wi];
        if (!dilations && (wp->base_dil > 1 || wp->win_dil > 1)) continue;
        xc_t c;
        xc_init(&c, op, 4);
        c.win.rank = 1;
        c.win.window_dims[0] = wp->window;
        c.win.strides[0] = wp->stride;
        c.win.input_dilations[0] = wp->base_dil;
        c.win.window_dilations[0] = wp->win_dil;
        c.win.padding_low[0] = kPads[l];
        c.win.padding_high[0] = kPads[h];
        c.build = build;
        c.ref = ref;
        snprintf(c.label, sizeof c.label, "%s window=%s stride=%s dil=%s,%s pad=%s,%s", op,
                 T(wp->window), T(wp->stride), T(wp->base_dil), T(wp->win_dil), T(kPads[l]),
                 T(kPads[h]));
        xc_check(test_failed_, &c);
      }
    }
  }
}

TEST(reduce_window) {
  window_sweep(test_failed_, "ReduceWindow", build_reduce_window, ref_reduce_window, true);
}

static bool ref_reduce_window_2d(const xc_t* c, const cml_shape_t* os, void* out) {
  const cml_window_config_t* w = &c->win;
  const int64_t* d = c->in[0].dims;
  if (cml_shape_element_count(os) == 0) return true;  // one axis may still be huge
  int64_t st[2];
  for (int a = 0; a < 2; ++a) st[a] = w->strides[a] == 0 ? w->window_dims[a] : w->strides[a];
  for (int64_t o0 = 0; o0 < os->dims[0]; ++o0) {
    for (int64_t o1 = 0; o1 < os->dims[1]; ++o1) {
      float sum = 0;
      for (int64_t i0 = 0; i0 < d[0]; ++i0) {
        if (window_tap(o0, i0, st[0], or1(w->window_dilations[0]), w->padding_low[0],
                       or1(w->input_dilations[0]), w->window_dims[0]) < 0) {
          continue;
        }
        for (int64_t i1 = 0; i1 < d[1]; ++i1) {
          if (window_tap(o1, i1, st[1], or1(w->window_dilations[1]), w->padding_low[1],
                         or1(w->input_dilations[1]), w->window_dims[1]) >= 0) {
            sum += kX[i0 * d[1] + i1];
          }
        }
      }
      ((float*)out)[o0 * os->dims[1] + o1] = sum;
    }
  }
  return true;
}

// Two axes, so the c kernel's tap iterator runs its outer and inner axes in every mode (dense,
// walking the window, walking the input) against a naive loop.
TEST(reduce_window_2d) {
  static const win_params_t axis_params[] = {{3, 1, 1, 1},   {2, 2, 1, 3},   {3, 1, 2, 1},
                                             {4, 1, 3, 2},   {BIG, 1, 2, 1}, {BIG, 3, 5, 7},
                                             {2, BIG, 1, 1}, {5, 2, 4, 6}};
  static const int64_t pads[] = {0, 2, -1, BIG - 20};
  for (size_t a = 0; a < N_OF(axis_params); ++a) {
    for (size_t b = 0; b < N_OF(axis_params); ++b) {
      for (size_t p = 0; p < N_OF(pads); ++p) {
        xc_t c;
        xc_init(&c, "ReduceWindow", 0);
        c.in[0] = API_SHAPE(CML_DTYPE_F32, 4, 5);
        c.win.rank = 2;
        const win_params_t* wp[2] = {&axis_params[a], &axis_params[b]};
        for (int k = 0; k < 2; ++k) {
          c.win.window_dims[k] = wp[k]->window;
          c.win.strides[k] = wp[k]->stride;
          c.win.input_dilations[k] = wp[k]->base_dil;
          c.win.window_dilations[k] = wp[k]->win_dil;
        }
        c.win.padding_low[0] = c.win.padding_high[1] = pads[p];
        c.win.padding_high[0] = c.win.padding_low[1] = 1;
        c.build = build_reduce_window;
        c.ref = ref_reduce_window_2d;
        snprintf(c.label, sizeof c.label, "ReduceWindow 2-D params %zu, %zu pad %s", a, b,
                 T(pads[p]));
        xc_check(test_failed_, &c);
      }
    }
  }
}

// SelectAndScatterSum: the source is [windows] with the count this file computes (1 when the
// geometry is impossible: the builder must refuse it either way).
static cml_value_t build_select_and_scatter(cml_function_t* f, const cml_value_t* p,
                                            const xc_t* c) {
  return cml_op_select_and_scatter(f, CML_OP_SELECT_AND_SCATTER_SUM, p[0], p[1], &c->win);
}

static i128 window_count(const cml_window_config_t* w, int64_t d) {
  i128 stride = w->strides[0] == 0 ? w->window_dims[0] : w->strides[0];
  i128 padded = (i128)d + w->padding_low[0] + w->padding_high[0];
  if (stride < 1 || w->window_dims[0] < 1 || padded < 0) return -1;
  return padded < w->window_dims[0] ? 0 : (padded - w->window_dims[0]) / stride + 1;
}

static bool ref_select_and_scatter(const xc_t* c, const cml_shape_t* os, void* out) {
  const cml_window_config_t* w = &c->win;
  int64_t stride = w->strides[0] == 0 ? w->window_dims[0] : w->strides[0];
  float* y = out;
  for (int64_t i = 0; i < os->dims[0]; ++i) y[i] = 0;
  for (int64_t o = 0; o < c->in[1].dims[0]; ++o) {
    for (int64_t i = 0; i < c->in[0].dims[0]; ++i) {
      if (window_tap(o, i, stride, 1, w->padding_low[0], 1, w->window_dims[0]) >= 0) y[i] += kX[o];
    }
  }
  return true;
}

TEST(select_and_scatter) {
  // The source shape depends on the attributes, so the sweep builds each case itself.
  for (size_t wi = 0; wi < N_OF(kWins); ++wi) {
    for (size_t l = 0; l < N_OF(kPads); ++l) {
      for (size_t h = 0; h < N_OF(kPads); ++h) {
        const win_params_t* wp = &kWins[wi];
        xc_t c;
        xc_init(&c, "SelectAndScatterSum", 4);
        c.win.rank = 1;
        c.win.window_dims[0] = wp->window;
        c.win.strides[0] = wp->stride;
        c.win.input_dilations[0] = wp->base_dil;
        c.win.window_dilations[0] = wp->win_dil;
        c.win.padding_low[0] = kPads[l];
        c.win.padding_high[0] = kPads[h];
        i128 n = window_count(&c.win, 4);
        int64_t windows = n >= 0 && n <= 64 ? (int64_t)n : 1;
        c.n_in = 2;
        c.in[1] = cml_shape_make(CML_DTYPE_F32, 1, &windows);
        c.data[1] = kX;
        c.build = build_select_and_scatter;
        c.ref = ref_select_and_scatter;
        snprintf(c.label, sizeof c.label,
                 "SelectAndScatterSum window=%s stride=%s dil=%s,%s pad=%s,%s", T(wp->window),
                 T(wp->stride), T(wp->base_dil), T(wp->win_dil), T(kPads[l]), T(kPads[h]));
        xc_check(test_failed_, &c);
      }
    }
  }
}

// ConvGeneral, one spatial axis: input [1, C, 4] (batch, channel, spatial), kernel [O, I, kw]
// (output channel, input channel, spatial).
static void conv_layout(cml_conv_config_t* k) {
  k->spatial_count = 1;
  k->input_batch_axis = 0;
  k->input_channel_axis = 1;
  k->input_spatial_axes[0] = 2;
  k->kernel_output_channel_axis = 0;
  k->kernel_input_channel_axis = 1;
  k->kernel_spatial_axes[0] = 2;
  k->output_batch_axis = 0;
  k->output_channel_axis = 1;
  k->output_spatial_axes[0] = 2;
}

static cml_value_t build_conv(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_conv_general(f, p[0], p[1], &c->conv);
}

// One channel in and out (the only accepted group counts then are 0 and 1).
static bool ref_conv(const xc_t* c, const cml_shape_t* os, void* out) {
  const cml_conv_config_t* k = &c->conv;
  if (os->dims[0] * os->dims[1] == 0) return true;
  for (int64_t o = 0; o < os->dims[2]; ++o) {
    float sum = 0;
    for (int64_t i = 0; i < c->in[0].dims[2]; ++i) {
      int64_t t = window_tap(o, i, or1(k->strides[0]), or1(k->kernel_dilations[0]),
                             k->padding_low[0], or1(k->input_dilations[0]), c->in[1].dims[2]);
      if (t >= 0) sum += kX[i] * kX[t];
    }
    ((float*)out)[o] = sum;
  }
  return true;
}

static void conv_case(int* test_failed_, int64_t channels, int64_t kw, const win_params_t* wp,
                      int64_t low, int64_t high, int64_t fg, int64_t bg) {
  xc_t c;
  xc_init(&c, "ConvGeneral", 4);
  c.n_in = 2;
  c.in[0] = API_SHAPE(CML_DTYPE_F32, 1, channels, 4);
  c.in[1] = API_SHAPE(CML_DTYPE_F32, channels, channels, kw);
  c.data[1] = kX;
  conv_layout(&c.conv);
  c.conv.strides[0] = wp->stride;
  c.conv.input_dilations[0] = wp->base_dil;
  c.conv.kernel_dilations[0] = wp->win_dil;
  c.conv.padding_low[0] = low;
  c.conv.padding_high[0] = high;
  c.conv.channel_group_count = fg;
  c.conv.batch_group_count = bg;
  c.build = build_conv;
  c.ref = ref_conv;
  snprintf(c.label, sizeof c.label,
           "ConvGeneral C=%lld kw=%lld stride=%s dil=%s,%s pad=%s,%s groups=%s,%s",
           (long long)channels, (long long)kw, T(wp->stride), T(wp->base_dil), T(wp->win_dil),
           T(low), T(high), T(fg), T(bg));
  xc_check(test_failed_, &c);
}

TEST(conv_general) {
  static const int64_t kws[] = {0, 1, 2};
  for (size_t wi = 0; wi < N_OF(kWins); ++wi) {
    for (size_t kw = 0; kw < N_OF(kws); ++kw) {
      for (size_t l = 0; l < N_OF(kPads); ++l) {
        for (size_t h = 0; h < N_OF(kPads); ++h) {
          conv_case(test_failed_, 1, kws[kw], &kWins[wi], kPads[l], kPads[h], 0, 0);
        }
      }
    }
  }
  static const int64_t groups[] = {0, 1, 2, -1, MAXI, MINI, BIG, BIG + 1};
  for (size_t a = 0; a < N_OF(groups); ++a) {
    for (size_t b = 0; b < N_OF(groups); ++b) {
      conv_case(test_failed_, 1, 2, &kWins[0], 0, 0, groups[a], groups[b]);
      conv_case(test_failed_, 0, 2, &kWins[0], 0, 0, groups[a], groups[b]);
    }
  }
  // No input channels, two output channels: an all-zero output with no scratch at all (the
  // kernel once offset the NULL scratch pointer: clang UBSan's pointer-overflow check).
  for (int64_t kw = 1; kw <= 2; ++kw) {
    xc_t z;
    xc_init(&z, "ConvGeneral", 4);
    z.n_in = 2;
    z.in[0] = API_SHAPE(CML_DTYPE_F32, 1, 0, 4);
    z.in[1] = API_SHAPE(CML_DTYPE_F32, 2, 0, kw);
    z.data[1] = kX;
    conv_layout(&z.conv);
    z.build = build_conv;
    z.ref = ref_zeros;
    snprintf(z.label, sizeof z.label, "ConvGeneral no input channels kw=%lld", (long long)kw);
    xc_check(test_failed_, &z);
  }
  // A zero-size window is refused (XLA refuses it too), even over an empty input.
  xc_t c;
  xc_init(&c, "ConvGeneral", 4);
  c.n_in = 2;
  c.in[0] = API_SHAPE(CML_DTYPE_F32, 1, 1, 0);
  c.in[1] = API_SHAPE(CML_DTYPE_F32, 1, 1, 0);
  conv_layout(&c.conv);
  c.build = build_conv;
  cml_executable_t* exe = NULL;
  char msg[512];
  ASSERT_EQ_INT(api_code_msg(xc_compile(g_c, &c, &exe), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "ConvGeneral: spatial axis 0: kernel (Float32)[1, 1, 0] has size 0");
}

//===--- DynamicSlice, Gather ---===//

static const int64_t kStarts[3] = {MINI, MAXI, 2};

static cml_value_t build_dynamic_slice(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_dynamic_slice(f, p[0], &p[1], c->a[0], 1);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool ref_dynamic_slice(const xc_t* c, const cml_shape_t* os, void* out) {
  int64_t start = clamp64(*(const int64_t*)c->data[1], 0, c->in[0].dims[0] - os->dims[0]);
  for (int64_t o = 0; o < os->dims[0]; ++o) ((float*)out)[o] = kX[start + o];
  return true;
}

TEST(dynamic_slice) {
  static const int64_t sizes[] = {0, 1, 5, 6, -1, MAXI, MINI, BIG};
  for (size_t s = 0; s < N_OF(sizes); ++s) {
    for (size_t k = 0; k < N_OF(kStarts); ++k) {
      xc_t c;
      xc_init(&c, "DynamicSlice", 5);
      c.n_in = 2;
      c.in[1] = cml_shape_make(CML_DTYPE_I64, 0, NULL);
      c.data[1] = &kStarts[k];
      c.a[0][0] = sizes[s];
      c.build = build_dynamic_slice;
      c.ref = ref_dynamic_slice;
      snprintf(c.label, sizeof c.label, "DynamicSlice size=%s start=%s", T(sizes[s]),
               T(kStarts[k]));
      xc_check(test_failed_, &c);
    }
  }
}

// Gather rows of a [5, 3] operand with indices [2, 1] (values MIN and MAX: clamped).
static cml_value_t build_gather(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_gather(f, p[0], p[1], &c->gather);
}

static bool ref_gather(const xc_t* c, const cml_shape_t* os, void* out) {
  if (c->gather.index_vector_axis != 1 || c->gather.offset_output_axes[0] != 1) return false;
  const int64_t* idx = c->data[1];
  int64_t rows = c->gather.slice_sizes[0], cols = c->gather.slice_sizes[1];
  float* y = out;
  for (int64_t n = 0; n < 2; ++n) {
    int64_t start = clamp64(idx[n], 0, 5 - rows);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) *y++ = kX[(start + i) * 3 + j];
    }
  }
  (void)os;
  return true;
}

TEST(gather) {
  static const int64_t sizes[] = {0, 1, 5, 6, -1, MAXI, MINI};
  static const int64_t axes[] = {1, 0, 2, 3, -1, MAXI, MINI};
  static const int64_t idx[2] = {MINI, MAXI};
  for (size_t s = 0; s < N_OF(sizes); ++s) {
    for (size_t iv = 0; iv < N_OF(axes); ++iv) {
      for (size_t oa = 0; oa < N_OF(axes); ++oa) {
        xc_t c;
        xc_init(&c, "Gather", 15);
        c.in[0] = API_SHAPE(CML_DTYPE_F32, 5, 3);
        c.n_in = 2;
        c.in[1] = API_SHAPE(CML_DTYPE_I64, 2, 1);
        c.data[1] = idx;
        cml_gather_dims_t* g = &c.gather;
        g->index_vector_axis = axes[iv] == 0 ? 1 : axes[iv];  // 1 is the valid one
        g->offset_output_axis_count = 2;
        g->offset_output_axes[0] = axes[oa];
        g->offset_output_axes[1] = 2;
        g->start_index_map_count = 1;
        g->start_index_map[0] = 0;
        g->slice_size_count = 2;
        g->slice_sizes[0] = sizes[s];
        g->slice_sizes[1] = 3;
        c.build = build_gather;
        // Only the standard layout has a reference here; anything else must be refused.
        c.ref = ref_gather;
        snprintf(c.label, sizeof c.label, "Gather size=%s index_vector_axis=%s offset_axis=%s",
                 T(sizes[s]), T(g->index_vector_axis), T(axes[oa]));
        xc_check(test_failed_, &c);
      }
    }
  }
}

// ScatterSum of [2, 3] updates into a [5, 3] operand at rows MIN and MAX: both out of bounds,
// so skipped (the output is the operand).
static cml_value_t build_scatter(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_scatter_sum(f, p[0], p[1], p[2], &c->scatter);
}

static bool ref_scatter(const xc_t* c, const cml_shape_t* os, void* out) {
  const cml_scatter_dims_t* d = &c->scatter;
  if (d->index_vector_axis != 1 || d->update_window_axes[0] != 1 ||
      d->inserted_window_axes[0] != 0 || d->scatter_axes_to_operand_axes[0] != 0) {
    return false;
  }
  memcpy(out, kX, cml_shape_byte_size(os));
  return true;
}

TEST(scatter) {
  static const int64_t axes[] = {0, 1, 2, -1, MAXI, MINI};
  static const int64_t idx[2] = {MINI, MAXI};
  for (size_t iv = 0; iv < N_OF(axes); ++iv) {
    for (size_t uw = 0; uw < N_OF(axes); ++uw) {
      for (size_t in = 0; in < N_OF(axes); ++in) {
        for (size_t so = 0; so < N_OF(axes); ++so) {
          xc_t c;
          xc_init(&c, "ScatterSum", 15);
          c.in[0] = API_SHAPE(CML_DTYPE_F32, 5, 3);
          c.n_in = 3;
          c.in[1] = API_SHAPE(CML_DTYPE_I64, 2, 1);
          c.data[1] = idx;
          c.in[2] = API_SHAPE(CML_DTYPE_F32, 2, 3);
          c.data[2] = kX;
          cml_scatter_dims_t* d = &c.scatter;
          d->index_vector_axis = axes[iv] == 0 ? 1 : axes[iv];
          d->update_window_axis_count = 1;
          d->update_window_axes[0] = axes[uw];
          d->inserted_window_axis_count = 1;
          d->inserted_window_axes[0] = axes[in];
          d->scatter_axes_to_operand_axes_count = 1;
          d->scatter_axes_to_operand_axes[0] = axes[so];
          c.build = build_scatter;
          c.ref = ref_scatter;
          snprintf(c.label, sizeof c.label,
                   "ScatterSum index_vector_axis=%s window=%s inserted=%s to_operand=%s",
                   T(d->index_vector_axis), T(axes[uw]), T(axes[in]), T(axes[so]));
          xc_check(test_failed_, &c);
        }
      }
    }
  }
}

//===--- FFT ---===//

static cml_value_t build_fft(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_fft(f, p[0], c->fft, c->a[0], 1);
}

static const float kZ[16] = {1, 0.5f, -2, 1, 3, -1, 0.25f, 2, 1, 1, -1, 0, 2, 2, 0.5f, -3};

// Naive DFTs (double precision).
static bool ref_fft(const xc_t* c, const cml_shape_t* os, void* out) {
  const double pi = 3.14159265358979323846;
  int64_t len = c->a[0][0], n_out = os->dims[0];
  float* y = out;
  for (int64_t k = 0; k < n_out; ++k) {
    double re = 0, im = 0;
    for (int64_t j = 0; j < len; ++j) {
      double complex v;
      double sign = c->fft == CML_FFT_FORWARD || c->fft == CML_FFT_FORWARD_REAL ? -1 : 1;
      if (c->fft == CML_FFT_FORWARD_REAL) {
        v = kZ[j];
      } else if (c->fft == CML_FFT_INVERSE_REAL) {  // Hermitian extension of len/2+1 inputs
        int64_t m = j <= len / 2 ? j : len - j;
        v = kZ[2 * m] + I * kZ[2 * m + 1];
        if (j > len / 2) v = conj(v);
        if (j == 0 || (len % 2 == 0 && j == len / 2)) v = creal(v);
      } else {
        v = kZ[2 * j] + I * kZ[2 * j + 1];
      }
      double complex t = v * cexp(I * sign * 2 * pi * (double)(j * k) / (double)len);
      re += creal(t);
      im += cimag(t);
    }
    if (c->fft == CML_FFT_INVERSE || c->fft == CML_FFT_INVERSE_REAL) {
      re /= (double)len;
      im /= (double)len;
    }
    if (c->fft == CML_FFT_INVERSE_REAL) {
      y[k] = (float)re;
    } else {
      y[2 * k] = (float)re;
      y[2 * k + 1] = (float)im;
    }
  }
  return true;
}

TEST(fft) {
  static const int64_t lengths[] = {0, 1, 3, 4, 5, 6, -1, MAXI, MINI, MAXI - 1, BIG};
  static const int64_t dims[] = {0, 1, 3, 4};
  static const cml_fft_type_t types[] = {CML_FFT_FORWARD, CML_FFT_INVERSE, CML_FFT_FORWARD_REAL,
                                         CML_FFT_INVERSE_REAL};
  for (size_t t = 0; t < N_OF(types); ++t) {
    for (size_t d = 0; d < N_OF(dims); ++d) {
      for (size_t l = 0; l < N_OF(lengths); ++l) {
        xc_t c;
        xc_init(&c, "FFT", dims[d]);
        if (types[t] != CML_FFT_FORWARD_REAL) c.in[0].dtype = CML_DTYPE_C64;
        c.data[0] = kZ;
        c.fft = types[t];
        c.a[0][0] = lengths[l];
        c.tol = 1e-4;
        c.build = build_fft;
        c.ref = ref_fft;
        snprintf(c.label, sizeof c.label, "FFT type=%d d=%lld length=%s", (int)types[t],
                 (long long)dims[d], T(lengths[l]));
        xc_check(test_failed_, &c);
      }
    }
  }
  // A length-0 real FFT of an empty axis would give one output from no input: refused.
  xc_t c;
  xc_init(&c, "FFT", 0);
  c.fft = CML_FFT_FORWARD_REAL;
  c.build = build_fft;
  cml_executable_t* exe = NULL;
  char msg[512];
  ASSERT_EQ_INT(api_code_msg(xc_compile(g_c, &c, &exe), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "FFT: length 0 in [0] must be positive (operand (Float32)[0])");
}

//===--- shape ops: Iota, Reshape, BroadcastInDim, Concatenate, Transpose, axes ---===//

static cml_value_t build_iota(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  (void)p;
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = CML_DTYPE_F32;
  s.rank = 1;
  s.dims[0] = c->a[0][0];
  return cml_op_iota(f, &s, c->a[1][0]);
}

static bool ref_iota(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)c;
  for (int64_t i = 0; i < os->dims[0]; ++i) ((float*)out)[i] = (float)i;
  return true;
}

static cml_value_t build_reshape(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_reshape(f, p[0], c->a[0], c->n);
}

static bool ref_same_data(const xc_t* c, const cml_shape_t* os, void* out) {
  memcpy(out, c->data[0], cml_shape_byte_size(os));
  return true;
}

static cml_value_t build_broadcast(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_broadcast_in_dim(f, p[0], c->a[0], 1, c->a[1], 1);
}

static bool ref_broadcast(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)c;
  for (int64_t i = 0; i < os->dims[0]; ++i) ((float*)out)[i] = kX[0];
  return true;
}

static cml_value_t build_concatenate(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_concatenate(f, c->a[0][0], (cml_value_t[]){p[0], p[1]}, 2);
}

static bool ref_concatenate(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)c;
  for (int64_t i = 0; i < os->dims[0]; ++i) ((float*)out)[i] = kX[i % 3];
  return true;
}

static cml_value_t build_transpose(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_transpose(f, p[0], c->a[0], 2);
}

static bool ref_transpose(const xc_t* c, const cml_shape_t* os, void* out) {
  bool swap = c->a[0][0] == 1;
  for (int64_t i = 0; i < os->dims[0]; ++i) {
    for (int64_t j = 0; j < os->dims[1]; ++j) {
      ((float*)out)[i * os->dims[1] + j] = swap ? kX[j * 3 + i] : kX[i * 3 + j];
    }
  }
  return true;
}

static cml_value_t build_reverse(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_reverse(f, p[0], c->a[0], 1);
}

static bool ref_reverse(const xc_t* c, const cml_shape_t* os, void* out) {
  for (int64_t i = 0; i < os->dims[0]; ++i) ((float*)out)[i] = kX[c->in[0].dims[0] - 1 - i];
  return true;
}

static cml_value_t build_reduce(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_reduce(f, CML_OP_REDUCE_SUM, p[0], c->a[0], 1);
}

static bool ref_reduce(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)os;
  float s = 0;
  for (int64_t i = 0; i < c->in[0].dims[0]; ++i) s += kX[i];
  *(float*)out = s;
  return true;
}

static cml_value_t build_arg_max(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  return cml_op_arg_min_max(f, p[0], c->a[0][0], CML_DTYPE_I32, false);
}

static bool ref_arg_max(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)os;
  *(int32_t*)out = (int32_t)c->in[0].dims[0] - 1;
  return true;
}

// Sort of a [4] operand along axis a[0][0] with a descending comparator.
static cml_value_t build_sort(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  cml_function_t* cmp = NULL;
  cml_status_t st = cml_function_new_closure(f, &cmp);
  if (st != CML_OK) {
    cml_status_free(st);
    return CML_VALUE_INVALID;
  }
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t l = cml_parameter(cmp, "l", &sc), r = cml_parameter(cmp, "r", &sc);
  cml_value_t gt = cml_op_greater_than(cmp, l, r);
  cml_status_free(cml_function_return(cmp, &gt, 1));
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_sort(f, cmp, c->a[0][0], true, &p[0], 1, &out);
  return out;
}

static bool ref_sort(const xc_t* c, const cml_shape_t* os, void* out) {
  for (int64_t i = 0; i < os->dims[0]; ++i) ((float*)out)[i] = kX[c->in[0].dims[0] - 1 - i];
  return true;
}

// RNGBitGenerator with an output shape of dims a[0][0..1]: only the shape is checked.
static cml_value_t build_rng(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = CML_DTYPE_U32;
  s.rank = 2;
  s.dims[0] = c->a[0][0];
  s.dims[1] = c->a[0][1];
  cml_value_t state = CML_VALUE_INVALID, values = CML_VALUE_INVALID;
  (void)cml_op_rng_bit_generator(f, p[0], &s, &state, &values);
  return values;
}

static bool ref_none(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)c;
  (void)os;
  (void)out;
  return false;
}

static void axis_case(int* test_failed_, const char* op, xc_build_fn build, xc_ref_fn ref,
                      int64_t axis) {
  xc_t c;
  xc_init(&c, op, 4);
  c.a[0][0] = axis;
  c.build = build;
  c.ref = ref;
  snprintf(c.label, sizeof c.label, "%s axis=%s", op, T(axis));
  xc_check(test_failed_, &c);
}

TEST(shape_ops) {
  static const int64_t vals[] = {0, 1, 2, 3, -1, MAXI, MINI, BIG, BIG + 1, MAXI - 1};
  for (size_t i = 0; i < N_OF(vals); ++i) {
    for (size_t j = 0; j < N_OF(vals); ++j) {
      xc_t c;
      xc_init(&c, "Iota", 1);
      c.n_in = 0;
      c.a[0][0] = vals[i];
      c.a[1][0] = vals[j];
      c.build = build_iota;
      c.ref = ref_iota;
      snprintf(c.label, sizeof c.label, "Iota dim=%s axis=%s", T(vals[i]), T(vals[j]));
      xc_check(test_failed_, &c);

      xc_init(&c, "Reshape", 6);
      c.a[0][0] = vals[i];
      c.a[0][1] = vals[j];
      c.n = 2;
      c.build = build_reshape;
      c.ref = ref_same_data;
      snprintf(c.label, sizeof c.label, "Reshape [6] to [%s, %s]", T(vals[i]), T(vals[j]));
      xc_check(test_failed_, &c);
      xc_init(&c, "Reshape", 0);
      c.a[0][0] = vals[i];
      c.a[0][1] = vals[j];
      c.n = 2;
      c.build = build_reshape;
      c.ref = ref_same_data;
      snprintf(c.label, sizeof c.label, "Reshape [0] to [%s, %s]", T(vals[i]), T(vals[j]));
      xc_check(test_failed_, &c);

      xc_init(&c, "BroadcastInDim", 1);
      c.a[0][0] = vals[i];
      c.a[1][0] = vals[j];
      c.build = build_broadcast;
      c.ref = ref_broadcast;
      snprintf(c.label, sizeof c.label, "BroadcastInDim [1] to [%s] axes [%s]", T(vals[i]),
               T(vals[j]));
      xc_check(test_failed_, &c);

      xc_init(&c, "Transpose", 6);
      c.in[0] = API_SHAPE(CML_DTYPE_F32, 2, 3);
      c.a[0][0] = vals[i];
      c.a[0][1] = vals[j];
      c.build = build_transpose;
      c.ref = ref_transpose;
      snprintf(c.label, sizeof c.label, "Transpose [2, 3] by [%s, %s]", T(vals[i]), T(vals[j]));
      xc_check(test_failed_, &c);
    }
    xc_t c;
    xc_init(&c, "Concatenate", 3);
    c.n_in = 2;
    c.in[1] = c.in[0];
    c.data[1] = kX;
    c.a[0][0] = vals[i];
    c.build = build_concatenate;
    c.ref = ref_concatenate;
    snprintf(c.label, sizeof c.label, "Concatenate axis=%s", T(vals[i]));
    xc_check(test_failed_, &c);
    axis_case(test_failed_, "Reverse", build_reverse, ref_reverse, vals[i]);
    axis_case(test_failed_, "ReduceSum", build_reduce, ref_reduce, vals[i]);
    axis_case(test_failed_, "ArgMinMax", build_arg_max, ref_arg_max, vals[i]);
    axis_case(test_failed_, "Sort", build_sort, ref_sort, vals[i]);
    for (size_t j = 0; j < N_OF(vals); ++j) {
      static const uint64_t state[3] = {1, 2, 3};
      xc_init(&c, "RNGBitGenerator", 3);
      c.in[0].dtype = CML_DTYPE_U64;
      c.data[0] = state;
      c.a[0][0] = vals[i];
      c.a[0][1] = vals[j];
      c.build = build_rng;
      c.ref = ref_none;
      snprintf(c.label, sizeof c.label, "RNGBitGenerator shape [%s, %s]", T(vals[i]), T(vals[j]));
      xc_check(test_failed_, &c);
    }
  }
}

//===--- DotGeneral ---===//

static cml_value_t build_dot(cml_function_t* f, const cml_value_t* p, const xc_t* c) {
  cml_dot_config_t d;
  memset(&d, 0, sizeof d);
  d.lhs_contracting_count = d.rhs_contracting_count = 1;
  d.lhs_contracting_axes[0] = c->a[0][0];
  d.rhs_contracting_axes[0] = c->a[0][1];
  return cml_op_dot_general(f, p[0], p[1], &d);
}

// lhs [2, 3] x rhs [3, 2], contracting lhs 1 with rhs 0.
static bool ref_dot(const xc_t* c, const cml_shape_t* os, void* out) {
  (void)c;
  (void)os;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k) s += kX[i * 3 + k] * kX[k * 2 + j];
      ((float*)out)[i * 2 + j] = s;
    }
  }
  return true;
}

TEST(dot_general) {
  static const int64_t axes[] = {0, 1, 2, -1, MAXI, MINI};
  for (size_t i = 0; i < N_OF(axes); ++i) {
    for (size_t j = 0; j < N_OF(axes); ++j) {
      if (axes[i] == 0 && axes[j] == 1) continue;  // [2,3]·[3,2] over axes 0/1: no reference
      xc_t c;
      xc_init(&c, "DotGeneral", 6);
      c.in[0] = API_SHAPE(CML_DTYPE_F32, 2, 3);
      c.n_in = 2;
      c.in[1] = API_SHAPE(CML_DTYPE_F32, 3, 2);
      c.data[1] = kX;
      c.a[0][0] = axes[i];
      c.a[0][1] = axes[j];
      c.build = build_dot;
      c.ref = ref_dot;
      snprintf(c.label, sizeof c.label, "DotGeneral contracting %s, %s", T(axes[i]), T(axes[j]));
      xc_check(test_failed_, &c);
    }
  }
  // An empty contraction: [2, 0] x [0, 2] is all zeros (no scratch for the operands).
  xc_t c;
  xc_init(&c, "DotGeneral", 0);
  c.in[0] = API_SHAPE(CML_DTYPE_F32, 2, 0);
  c.n_in = 2;
  c.in[1] = API_SHAPE(CML_DTYPE_F32, 0, 2);
  c.data[1] = kX;
  c.a[0][0] = 1;
  c.a[0][1] = 0;
  c.build = build_dot;
  c.ref = ref_zeros;
  snprintf(c.label, sizeof c.label, "DotGeneral empty contraction");
  xc_check(test_failed_, &c);
}

int main(int argc, char** argv) {
  bool want_xla = argc > 1 && strcmp(argv[1], "--xla") == 0;
  g_verbose = getenv("ATTR_EXTREMES_VERBOSE") != NULL;
  setvbuf(stdout, NULL, _IONBF, 0);
  cml_status_t st = cml_backend_new_with_config("c", &g_c);
  if (st != CML_OK) {
    fprintf(stderr, "backend c: %s\n", cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  if (want_xla) {
#ifdef ATTR_WITH_XLA
    cml_xla_enable_auto_install(false);  // tests never download
    cml__xla_search_t search;
    cml__xla_search_from_env(&search);
    char* path = NULL;
    st = cml__xla_find_plugin(&search, "cpu", &path);
    if (st == CML_OK) {
      free(path);
      st = cml_backend_new_with_config("xla:cpu", &g_xla);
    }
    if (st != CML_OK) {
      printf("skipped: no XLA CPU plugin (%s)\n", cml_status_message(st));
      cml_status_free(st);
      cml_backend_release(g_c);
      return 77;
    }
#else
    printf("skipped: built without the XLA backend\n");
    cml_backend_release(g_c);
    return 77;
#endif
  }
  static const test_entry_t tests[] = {TEST_ENTRY(pad),
                                       TEST_ENTRY(slice),
                                       TEST_ENTRY(reduce_window),
                                       TEST_ENTRY(reduce_window_2d),
                                       TEST_ENTRY(select_and_scatter),
                                       TEST_ENTRY(conv_general),
                                       TEST_ENTRY(dynamic_slice),
                                       TEST_ENTRY(gather),
                                       TEST_ENTRY(scatter),
                                       TEST_ENTRY(fft),
                                       TEST_ENTRY(shape_ops),
                                       TEST_ENTRY(dot_general)};
  const char* only = argc > 1 && !want_xla ? argv[1] : NULL;
  int failures = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    if (only && strcmp(only, tests[i].name) != 0) continue;
    int failed = 0;
    tests[i].fn(&failed);
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  int rc = failures ? 1 : 0;
  printf("attr_extremes: %zu refused, %zu accepted, %zu executed on c, %zu on xla:cpu\n", g_refused,
         g_accepted, g_executed, g_xla_runs);
  if (g_xla) cml_backend_release(g_xla);
  cml_backend_release(g_c);
  return rc;
}
