// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_conv_test.c: ConvGeneral's im2col + GEMM fast path (linalg_conv.c)
// called directly on hand-made IR nodes: random operands checked against an independent
// double-precision loop written here (within a summation-order bound), for many layouts,
// strides, paddings, dilations, channel and batch groups, dtypes, every ISA, several tiles per
// problem, and bit-identical results for 1 and 3 threads; plus hand-computed small cases.
#include <stdlib.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/generic/linalg_internal.h"
#include "test.h"

//===--- a one-node module ---===//

typedef struct fake_t {
  cml_ir_value_t values[4];
  uint32_t inputs[2];
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  cml_module_t module;
} fake_t;

static void fake_init(fake_t* f, const cml_shape_t* in, const cml_shape_t* ker,
                      const cml_shape_t* out) {
  memset(f, 0, sizeof *f);
  f->values[1].shape = *in;
  f->values[2].shape = *ker;
  f->values[3].shape = *out;
  f->inputs[0] = 1;
  f->inputs[1] = 2;
  f->node.op = CML_OP_CONV_GENERAL;
  f->node.input_count = 2;
  f->node.inputs = f->inputs;
  f->node.output_count = 1;
  f->node.first_output = 3;
  f->node.attrs = &f->attrs;
  f->module.node_count = 1;
  f->module.nodes = &f->node;
  f->module.value_count = 4;
  f->module.values = f->values;
  f->module.num_devices = 1;
}

static cmlc_options_t make_options(cmlc_isa_t isa, bool reference, int threads) {
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  o.isa = isa;
  o.reference = reference;
  o.threads = threads;
  o.devices = 1;
  return o;
}

// Looks the node up in the linalg group and runs it with a scratch area of the planned size
// (filled with a NaN pattern, so a read of unwritten scratch shows). With |w_run| not NULL the
// kernel |w| is a constant: entry.prepare makes its data from |w| as the engine does when the
// plan is built, and the run gets |w_run| as its kernel input (a NaN-filled copy: a run that
// read the kernel again instead of the prepared data would show). |out_prepared|: whether
// prepare made data.
static cml_status_t fake_run_ex(fake_t* f, const cmlc_options_t* opts, cmlc_pool_t* pool,
                                const void* x, const void* w, void* y, size_t* out_scratch,
                                const void* w_run, bool* out_prepared) {
  cmlc_kernel_entry_t e;
  memset(&e, 0, sizeof e);
  if (!cmlc_kernels_linalg_lookup(&f->module, &f->node, opts, &e))
    return cml_status_make(CML_STATUS_INTERNAL, "lookup failed");
  size_t size = e.scratch ? e.scratch(&f->module, &f->node, opts) : 0;
  if (out_scratch) *out_scratch = size;
  void* scratch = size ? aligned_alloc(64, (size + 63) & ~(size_t)63) : NULL;
  if (scratch) memset(scratch, 0xff, size);
  void* prepared = NULL;
  if (w_run && e.prepare) {
    const void* consts[2] = {NULL, w};
    size_t bytes = e.prepare(&f->module, &f->node, opts, consts, NULL);
    if (bytes) {
      prepared = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
      memset(prepared, 0xff, bytes);
      if (e.prepare(&f->module, &f->node, opts, consts, prepared) != bytes) {
        free(prepared);
        free(scratch);
        return cml_status_make(CML_STATUS_INTERNAL, "prepare changed its size");
      }
    }
  }
  if (out_prepared) *out_prepared = prepared != NULL;
  if (w_run) w = w_run;
  const cml_shape_t* in_shapes[2] = {&f->values[1].shape, &f->values[2].shape};
  const cml_shape_t* out_shapes[1] = {&f->values[3].shape};
  const void* inputs[2] = {x, w};
  void* outputs[1] = {y};
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &f->module;
  a.node = &f->node;
  a.options = opts;
  a.input_count = 2;
  a.input_shapes = in_shapes;
  a.inputs = inputs;
  a.output_count = 1;
  a.output_shapes = out_shapes;
  a.outputs = outputs;
  a.scratch = scratch;
  a.scratch_size = size;
  a.pool = pool;
  memcpy(a.impl, e.impl, sizeof a.impl);
  a.prepared = prepared;
  cml_status_t st = e.run(&a);
  free(scratch);
  free(prepared);
  return st;
}

static cml_status_t fake_run(fake_t* f, const cmlc_options_t* opts, cmlc_pool_t* pool,
                             const void* x, const void* w, void* y, size_t* out_scratch) {
  return fake_run_ex(f, opts, pool, x, w, y, out_scratch, NULL, NULL);
}

static bool isa_usable(cmlc_isa_t isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (isa == CMLC_ISA_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == CMLC_ISA_AVX512) return __builtin_cpu_supports("avx512f");
  return true;
#else
  return isa == CMLC_ISA_SCALAR;
#endif
}

//===--- problems and the independent reference ---===//

// A problem in canonical terms (input [N, C, S...], kernel [O, I, S...], output [N/bg, O,
// S...]) plus layouts: |*_axes[j]| is the layout position of canonical axis j (NULL-like
// all-zero arrays mean canonical, or channels last with |cl|).
typedef struct problem_t {
  int32_t s;
  int64_t n, c, o, in[3], k[3];
  int64_t stride[3], lo[3], hi[3], idil[3], kdil[3];
  int64_t groups, batch_groups;
  int64_t in_axes[5], ker_axes[5], out_axes[5];
  cml_dtype_t dtype, out_dtype;  // out_dtype INVALID: dtype
  bool cl;  // with all-zero axes: channels last (NHWC / HWIO / NHWC, NWC / WIO / NWC, ...)
  // Derived.
  int64_t out[3];
  cml_shape_t xs, ks, ys;
  int64_t xst[5], kst[5], yst[5];  // element strides per canonical axis
} problem_t;

static int64_t out_size(int64_t in, int64_t idil, int64_t lo, int64_t hi, int64_t k, int64_t kdil,
                        int64_t stride) {
  int64_t padded = (in > 0 ? (in - 1) * idil + 1 : 0) + lo + hi;
  int64_t dk = (k - 1) * kdil + 1;
  return padded < dk ? 0 : (padded - dk) / stride + 1;
}

// Shape of a layout whose canonical axis j sits at position axes[j]; strides per canonical axis.
static cml_shape_t layout_shape(cml_dtype_t dt, int32_t rank, const int64_t* cdims,
                                const int64_t* axes, int64_t* cstrides) {
  int64_t dims[5] = {0}, st[5] = {0};
  for (int32_t j = 0; j < rank; ++j) dims[axes[j]] = cdims[j];
  int64_t s = 1;
  for (int32_t a = rank - 1; a >= 0; --a) st[a] = s, s *= dims[a];
  for (int32_t j = 0; j < rank; ++j) cstrides[j] = st[axes[j]];
  return cml_shape_make(dt, rank, dims);
}

static void problem_finish(problem_t* p, fake_t* f) {
  int32_t rank = p->s + 2;
  bool canon = true;
  for (int32_t j = 0; j < rank; ++j) canon &= p->in_axes[j] == 0 && p->ker_axes[j] == 0;
  if (canon && p->cl) {
    // Input and output: batch, spatial axes, channel; kernel: spatial axes, input, output.
    p->in_axes[0] = p->out_axes[0] = 0;
    p->in_axes[1] = p->out_axes[1] = p->ker_axes[0] = rank - 1;
    p->ker_axes[1] = rank - 2;
    for (int32_t d = 0; d < p->s; ++d) p->in_axes[2 + d] = p->out_axes[2 + d] = 1 + d;
    for (int32_t d = 0; d < p->s; ++d) p->ker_axes[2 + d] = d;
    canon = false;
  }
  for (int32_t j = 0; j < rank && canon; ++j) p->in_axes[j] = p->ker_axes[j] = p->out_axes[j] = j;
  if (p->groups < 1) p->groups = 1;
  if (p->batch_groups < 1) p->batch_groups = 1;
  for (int32_t d = 0; d < p->s; ++d) {
    if (!p->stride[d]) p->stride[d] = 1;
    if (!p->idil[d]) p->idil[d] = 1;
    if (!p->kdil[d]) p->kdil[d] = 1;
    p->out[d] =
        out_size(p->in[d], p->idil[d], p->lo[d], p->hi[d], p->k[d], p->kdil[d], p->stride[d]);
  }
  int64_t xd[5] = {p->n, p->c}, kd[5] = {p->o, p->c / p->groups};
  int64_t yd[5] = {p->n / p->batch_groups, p->o};
  for (int32_t d = 0; d < p->s; ++d)
    xd[2 + d] = p->in[d], kd[2 + d] = p->k[d], yd[2 + d] = p->out[d];
  cml_dtype_t odt = p->out_dtype == CML_DTYPE_INVALID ? p->dtype : p->out_dtype;
  p->xs = layout_shape(p->dtype, rank, xd, p->in_axes, p->xst);
  p->ks = layout_shape(p->dtype, rank, kd, p->ker_axes, p->kst);
  p->ys = layout_shape(odt, rank, yd, p->out_axes, p->yst);
  fake_init(f, &p->xs, &p->ks, &p->ys);
  cml_conv_config_t* c = &f->attrs.u.conv;
  c->spatial_count = p->s;
  c->input_batch_axis = p->in_axes[0], c->input_channel_axis = p->in_axes[1];
  c->kernel_output_channel_axis = p->ker_axes[0], c->kernel_input_channel_axis = p->ker_axes[1];
  c->output_batch_axis = p->out_axes[0], c->output_channel_axis = p->out_axes[1];
  for (int32_t d = 0; d < p->s; ++d) {
    c->input_spatial_axes[d] = p->in_axes[2 + d];
    c->kernel_spatial_axes[d] = p->ker_axes[2 + d];
    c->output_spatial_axes[d] = p->out_axes[2 + d];
    c->strides[d] = p->stride[d];
    c->padding_low[d] = p->lo[d];
    c->padding_high[d] = p->hi[d];
    c->input_dilations[d] = p->idil[d];
    c->kernel_dilations[d] = p->kdil[d];
  }
  c->channel_group_count = p->groups;
  c->batch_group_count = p->batch_groups;
  c->output_dtype = p->out_dtype;
}

// StableHLO's definition, in double, straight from canonical indices: |want| gets the value,
// |bound| the sum of |terms| (for the summation-order error bound), per output element
// (indexed by the output layout's offsets).
static void reference(const problem_t* p, const double* x, const double* w, double* want,
                      double* bound) {
  int32_t S = p->s;
  int64_t cg = p->c / p->groups, nout = p->n / p->batch_groups;
  int64_t osz = 1, ksz = 1;
  for (int32_t d = 0; d < S; ++d) osz *= p->out[d], ksz *= p->k[d];
  for (int64_t b = 0; b < nout; ++b)
    for (int64_t o = 0; o < p->o; ++o) {
      int64_t g = o / (p->o / p->groups);
      int64_t bin = (o / (p->o / p->batch_groups)) * nout + b;
      for (int64_t yi = 0; yi < osz; ++yi) {
        int64_t y[3], rest = yi;
        for (int32_t d = S - 1; d >= 0; --d) y[d] = rest % p->out[d], rest /= p->out[d];
        double s = 0, a = 0;
        for (int64_t ki = 0; ki < ksz; ++ki) {
          int64_t kk[3], xs[3];
          rest = ki;
          bool ok = true;
          for (int32_t d = S - 1; d >= 0; --d) {
            kk[d] = rest % p->k[d], rest /= p->k[d];
            int64_t pos = y[d] * p->stride[d] + kk[d] * p->kdil[d] - p->lo[d];
            if (pos < 0 || pos % p->idil[d] != 0 || pos / p->idil[d] >= p->in[d]) ok = false;
            xs[d] = pos / p->idil[d];
          }
          if (!ok) continue;
          for (int64_t ci = 0; ci < cg; ++ci) {
            int64_t xo = bin * p->xst[0] + (g * cg + ci) * p->xst[1];
            int64_t ko = o * p->kst[0] + ci * p->kst[1];
            for (int32_t d = 0; d < S; ++d)
              xo += xs[d] * p->xst[2 + d], ko += kk[d] * p->kst[2 + d];
            double t = x[xo] * w[ko];
            s += t;
            a += fabs(t);
          }
        }
        int64_t yo = b * p->yst[0] + o * p->yst[1];
        for (int32_t d = 0; d < S; ++d) yo += y[d] * p->yst[2 + d];
        want[yo] = s;
        bound[yo] = a;
      }
    }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

// Host values of |dtype| (f32, f64, f16, bf16) from doubles; |vals| is rounded in place to
// what the dtype holds, so the reference sees the same operands.
static void* make_data(cml_dtype_t dt, double* vals, int64_t count) {
  size_t es = (size_t)(cml_dtype_bits(dt) / 8);
  void* d = malloc(es * (size_t)(count + 1));
  for (int64_t i = 0; i < count; ++i) {
    switch (dt) {
      case CML_DTYPE_F32:
        ((float*)d)[i] = (float)vals[i];
        vals[i] = ((float*)d)[i];
        break;
      case CML_DTYPE_F64:
        ((double*)d)[i] = vals[i];
        break;
      case CML_DTYPE_F16:
        ((uint16_t*)d)[i] = cml_f64_to_f16(vals[i]);
        vals[i] = cml_f16_to_f32(((uint16_t*)d)[i]);
        break;
      case CML_DTYPE_BF16:
        ((uint16_t*)d)[i] = cml_f64_to_bf16(vals[i]);
        vals[i] = cml_bf16_to_f32(((uint16_t*)d)[i]);
        break;
      default:
        break;
    }
  }
  return d;
}

static double get_out(const void* y, cml_dtype_t dt, int64_t i) {
  switch (dt) {
    case CML_DTYPE_F32:
      return ((const float*)y)[i];
    case CML_DTYPE_F64:
      return ((const double*)y)[i];
    case CML_DTYPE_F16:
      return cml_f16_to_f32(((const uint16_t*)y)[i]);
    case CML_DTYPE_BF16:
      return cml_bf16_to_f32(((const uint16_t*)y)[i]);
    default:
      return NAN;
  }
}

// Unit roundoff of the accumulation (f32 or f64) and of the output's rounding.
static double acc_eps(cml_dtype_t in, cml_dtype_t out) {
  return (in == CML_DTYPE_F64 || out == CML_DTYPE_F64) ? 0x1p-53 : 0x1p-24;
}
static double out_eps(cml_dtype_t out) {
  switch (out) {
    case CML_DTYPE_F16:
      return 0x1p-11;
    case CML_DTYPE_BF16:
      return 0x1p-8;
    case CML_DTYPE_F32:
      return 0x1p-24;
    default:
      return 0x1p-53;
  }
}

// Runs |p| on every usable ISA with 1 thread (no pool) and 3 threads (|pool3|) and with
// reference=true; checks each against the reference within the bound
//   |got - want| <= K * u_acc * sum|terms| + u_out * |want|
// (K terms summed in any order, then one rounding to the output dtype), and that 1 and 3
// threads give identical bytes. Returns the number of failures (printed).
static int check_problem(const char* name, problem_t p, cmlc_pool_t* pool3) {
  fake_t f;
  problem_finish(&p, &f);
  int64_t nx = cml_shape_element_count(&p.xs), nk = cml_shape_element_count(&p.ks);
  int64_t ny = cml_shape_element_count(&p.ys);
  double* xv = malloc(sizeof(double) * (size_t)(nx + 1));
  double* wv = malloc(sizeof(double) * (size_t)(nk + 1));
  double* want = calloc((size_t)(ny + 1), sizeof(double));
  double* bound = calloc((size_t)(ny + 1), sizeof(double));
  for (int64_t i = 0; i < nx; ++i) xv[i] = rnd();
  for (int64_t i = 0; i < nk; ++i) wv[i] = rnd();
  void* x = make_data(p.dtype, xv, nx);
  void* w = make_data(p.dtype, wv, nk);
  reference(&p, xv, wv, want, bound);
  cml_dtype_t odt = p.ys.dtype;
  size_t ybytes = (size_t)(cml_dtype_bits(odt) / 8) * (size_t)(ny + 1);
  void* y1 = malloc(ybytes);
  void* y3 = malloc(ybytes);
  void* yp = malloc(ybytes);
  // The kernel as the run sees it when it was prepared from a constant: NaN everywhere.
  size_t kbytes = (size_t)(cml_dtype_bits(p.dtype) / 8) * (size_t)(nk + 1);
  void* w_nan = malloc(kbytes);
  memset(w_nan, 0xff, kbytes);
  int64_t kterms = p.c / p.groups;
  for (int32_t d = 0; d < p.s; ++d) kterms *= p.k[d];
  double ua = acc_eps(p.dtype, odt), uo = out_eps(odt);
  int failures = 0;
  for (int variant = 0; variant < 4; ++variant) {
    bool ref = variant == 3;
    cmlc_isa_t isa = ref ? CMLC_ISA_SCALAR : (cmlc_isa_t)variant;
    if (!isa_usable(isa)) continue;
    cmlc_options_t o1 = make_options(isa, ref, 1), o3 = make_options(isa, ref, 3);
    memset(y1, 0xee, ybytes);
    memset(y3, 0xdd, ybytes);
    cml_status_t s1 = fake_run(&f, &o1, NULL, x, w, y1, NULL);
    cml_status_t s3 = fake_run(&f, &o3, pool3, x, w, y3, NULL);
    if (s1 || s3) {
      fprintf(stderr, "%s: run failed: %s / %s\n", name, cml_status_message(s1),
              cml_status_message(s3));
      cml_status_free(s1);
      cml_status_free(s3);
      ++failures;
      continue;
    }
    if (memcmp(y1, y3, (size_t)(cml_dtype_bits(odt) / 8) * (size_t)ny) != 0) {
      fprintf(stderr, "%s: isa %d ref %d: 1 and 3 threads differ\n", name, (int)isa, ref);
      ++failures;
    }
    // The kernel as a constant, prepared once (the fast paths): the same bytes, without
    // reading the kernel input at run time.
    bool prepared = false;
    memset(yp, 0xcc, ybytes);
    cml_status_t sp = fake_run_ex(&f, &o3, pool3, x, w, yp, NULL, w_nan, &prepared);
    if (sp) {
      fprintf(stderr, "%s: prepared run failed: %s\n", name, cml_status_message(sp));
      cml_status_free(sp);
      ++failures;
    } else if (prepared && memcmp(y1, yp, (size_t)(cml_dtype_bits(odt) / 8) * (size_t)ny) != 0) {
      fprintf(stderr, "%s: isa %d ref %d: prepared kernel differs\n", name, (int)isa, ref);
      ++failures;
    } else if (!prepared && !ref && p.groups * p.batch_groups == 1 && p.dtype != CML_DTYPE_F64 &&
               kterms > 0) {
      fprintf(stderr, "%s: isa %d: nothing prepared on a fast path\n", name, (int)isa);
      ++failures;
    }
    for (int64_t i = 0; i < ny; ++i) {
      double got = get_out(y1, odt, i);
      double tol = (double)(kterms + 1) * ua * bound[i] + uo * fabs(want[i]) + 1e-300;
      if (!(fabs(got - want[i]) <= tol)) {
        fprintf(stderr, "%s: isa %d ref %d: element %lld: got %.9g want %.9g (tol %.3g)\n", name,
                (int)isa, ref, (long long)i, got, want[i], tol);
        ++failures;
        break;
      }
    }
  }
  free(xv), free(wv), free(want), free(bound), free(x), free(w), free(y1), free(y3);
  free(yp), free(w_nan);
  return failures;
}

#define NHWC \
  { 0, 3, 1, 2 }
#define HWIO \
  { 3, 2, 0, 1 }

// Short dtype names for the case tables.
#define F16 CML_DTYPE_F16
#define BF16 CML_DTYPE_BF16
#define F32 CML_DTYPE_F32
#define F64 CML_DTYPE_F64

// A named problem for check_cases.
typedef struct conv_case_t {
  const char* name;
  problem_t p;
} conv_case_t;

// Runs check_problem on |count| cases in order (1 thread and a pool of 3); with |dtypes|, all
// the cases once per dtype (dtype outermost), as that input dtype, named "<dtype> <name>".
// Returns the number of failures (printed with the case's name).
static int check_cases(const conv_case_t* cases, size_t count, const cml_dtype_t* dtypes,
                       size_t dtype_count) {
  cmlc_pool_t* pool = NULL;
  cml_status_t st = cmlc_pool_create(3, cml_allocator_system(), &pool);
  if (st) {
    fprintf(stderr, "pool: %s\n", cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  int failures = 0;
  for (size_t d = 0; d < (dtypes ? dtype_count : 1); ++d) {
    for (size_t i = 0; i < count; ++i) {
      problem_t p = cases[i].p;
      char name[96];
      snprintf(name, sizeof name, "%s", cases[i].name);
      if (dtypes) {
        p.dtype = dtypes[d];
        snprintf(name, sizeof name, "%s %s", cml_dtype_name(p.dtype), cases[i].name);
      }
      failures += check_problem(name, p, pool);
    }
  }
  cmlc_pool_destroy(pool);
  return failures;
}

#define CHECK_CASES(cases) check_cases(cases, sizeof(cases) / sizeof((cases)[0]), NULL, 0)
#define CHECK_CASES_AS(cases, dtypes)                            \
  check_cases(cases, sizeof(cases) / sizeof((cases)[0]), dtypes, \
              sizeof(dtypes) / sizeof((dtypes)[0]))

//===--- tests ---===//

// clang-format off
static const conv_case_t kLayoutCases[] = {
    // NHWC / HWIO 3x3 "same" conv: several row tiles, output written in place by the GEMM.
    {"nhwc 3x3", {.s = 2, .n = 2, .c = 8, .o = 16, .in = {13, 11}, .k = {3, 3}, .lo = {1, 1},
                  .hi = {1, 1}, .cl = true, .dtype = F32}},
    // NCHW / OIHW, stride 2, kernel dilation 2, asymmetric and negative padding.
    {"nchw strided dilated", {.s = 2, .n = 3, .c = 5, .o = 7, .in = {17, 12}, .k = {3, 2},
                              .stride = {2, 1}, .kdil = {2, 3}, .lo = {2, -1}, .hi = {0, 2},
                              .dtype = F32}},
    // Channel groups, channels-last input, NCHW-like output (scatter path).
    {"groups", {.s = 2, .n = 2, .c = 12, .o = 9, .in = {9, 10}, .k = {3, 3}, .lo = {1, 1},
                .hi = {1, 1}, .groups = 3, .in_axes = NHWC, .ker_axes = HWIO,
                .out_axes = {0, 1, 2, 3}, .dtype = F32}},
    // Depthwise with a channel multiplier of 2 (Ng = 2, Cg = 1).
    {"depthwise", {.s = 2, .n = 2, .c = 6, .o = 12, .in = {15, 15}, .k = {3, 3}, .lo = {1, 1},
                   .hi = {1, 1}, .groups = 6, .cl = true, .dtype = F32}},
    // Depthwise, multiplier 1, stride 2 (the contiguous channel-vector loop), and NCHW bf16
    // with a multiplier of 3 (strided channels, converting loads).
    {"depthwise m1", {.s = 2, .n = 3, .c = 16, .o = 16, .in = {11, 12}, .k = {3, 3},
                      .stride = {2, 2}, .lo = {1, 1}, .hi = {1, 1}, .groups = 16, .cl = true,
                      .dtype = F32}},
    {"depthwise nchw bf16", {.s = 2, .n = 2, .c = 4, .o = 12, .in = {9, 7}, .k = {3, 2},
                             .kdil = {1, 2}, .lo = {1, 0}, .hi = {1, 1}, .groups = 4,
                             .dtype = BF16}},
    // Batch groups (the weight-gradient form): batch 6 in 3 groups.
    {"batch groups", {.s = 1, .n = 6, .c = 4, .o = 6, .in = {40}, .k = {5}, .lo = {2}, .hi = {2},
                      .batch_groups = 3, .dtype = F32}},
    // Input dilation (transposed conv) in 3-D with strides and a shuffled layout.
    {"3d input dilation", {.s = 3, .n = 2, .c = 3, .o = 4, .in = {4, 5, 6}, .k = {2, 3, 2},
                           .idil = {2, 1, 2}, .stride = {1, 2, 1}, .lo = {1, 0, 1},
                           .hi = {1, 1, 0}, .in_axes = {4, 0, 1, 3, 2},
                           .ker_axes = {2, 4, 0, 1, 3}, .out_axes = {1, 4, 3, 0, 2},
                           .dtype = F32}},
    // 1x1 conv (a plain GEMM over positions) and a 1-D conv with a long kernel.
    {"1x1", {.s = 2, .n = 2, .c = 24, .o = 40, .in = {14, 14}, .k = {1, 1}, .cl = true,
             .dtype = F32}},
    // 1x1 reading the input in place, with an NCHW output (scatter); 1x1 variants that must
    // not read in place: stride 2, and a negative high padding (fewer output positions).
    {"1x1 in place, nchw out", {.s = 2, .n = 3, .c = 20, .o = 12, .in = {9, 10}, .k = {1, 1},
                                .in_axes = NHWC, .ker_axes = HWIO, .out_axes = {0, 1, 2, 3},
                                .dtype = F32}},
    {"1x1 stride 2", {.s = 2, .n = 2, .c = 20, .o = 12, .in = {9, 10}, .k = {1, 1},
                      .stride = {2, 2}, .cl = true, .dtype = F32}},
    {"1x1 negative high padding", {.s = 2, .n = 2, .c = 20, .o = 12, .in = {9, 10},
                                   .k = {1, 1}, .hi = {-1, -2}, .cl = true, .dtype = F32}},
    {"1x1 f64 in place", {.s = 1, .n = 5, .c = 7, .o = 9, .in = {40}, .k = {1}, .cl = true,
                          .dtype = F64}},
    {"1-D long kernel", {.s = 1, .n = 1, .c = 3, .o = 5, .in = {300}, .k = {31}, .lo = {15},
                         .hi = {15}, .cl = true, .dtype = F32}},
    // Large K (Cg * taps = 2700): small tiles, K blocked inside the GEMM.
    {"large K", {.s = 2, .n = 1, .c = 300, .o = 33, .in = {12, 12}, .k = {3, 3}, .cl = true,
                 .dtype = F32}},
    // One output position (M == 1) and one output channel (N == 1): the GEMV forms.
    {"single position", {.s = 2, .n = 1, .c = 7, .o = 9, .in = {3, 3}, .k = {3, 3},
                         .dtype = F32}},
    {"single channel", {.s = 2, .n = 2, .c = 5, .o = 1, .in = {20, 20}, .k = {3, 3},
                        .cl = true, .dtype = F32}},
};
// clang-format on

TEST(fast_path_layouts_strides_groups) { ASSERT_EQ_INT(CHECK_CASES(kLayoutCases), 0); }

// clang-format off
// f64, f16 and bf16 inputs: a 2-D channels-last and a 1-D grouped problem.
static const conv_case_t kDtypeCases[] = {
    {"nhwc 3x3", {.s = 2, .n = 2, .c = 6, .o = 10, .in = {11, 9}, .k = {3, 3}, .lo = {1, 0},
                  .hi = {1, 1}, .cl = true}},
    {"1-D groups", {.s = 1, .n = 4, .c = 6, .o = 4, .in = {33}, .k = {4}, .stride = {3},
                    .groups = 2}},
};
// Output dtypes other than the accumulator's: f16 -> f32, f32 -> f64 (f64 GEMM), f32 -> bf16
// (accumulates in f32, rounds once).
static const conv_case_t kOutDtypeCases[] = {
    {"f16->f32", {.s = 2, .n = 1, .c = 8, .o = 8, .in = {10, 10}, .k = {3, 3}, .dtype = F16,
                  .out_dtype = F32}},
    {"f32->f64", {.s = 2, .n = 1, .c = 8, .o = 8, .in = {10, 10}, .k = {3, 3}, .cl = true,
                  .dtype = F32, .out_dtype = F64}},
    {"f32->bf16", {.s = 2, .n = 1, .c = 8, .o = 8, .in = {10, 10}, .k = {3, 3}, .cl = true,
                   .dtype = F32, .out_dtype = BF16}},
};
// clang-format on

TEST(fast_path_dtypes) {
  static const cml_dtype_t kIn[] = {CML_DTYPE_F64, CML_DTYPE_F16, CML_DTYPE_BF16};
  int failures = CHECK_CASES_AS(kDtypeCases, kIn);
  failures += CHECK_CASES(kOutDtypeCases);
  ASSERT_EQ_INT(failures, 0);
}

TEST(hand_computed_nhwc_3x3) {
  // Input 1x3x3x1 = 1..9, kernel 3x3x1x2: channel 0 all ones, channel 1 the center tap only;
  // padding 1: channel 0 is the 3x3 neighbourhood sum, channel 1 the input itself.
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[18], y[18];
  for (int t = 0; t < 9; ++t) w[2 * t] = 1, w[2 * t + 1] = t == 4 ? 1.0f : 0.0f;
  problem_t p = {.s = 2,
                 .n = 1,
                 .c = 1,
                 .o = 2,
                 .in = {3, 3},
                 .k = {3, 3},
                 .lo = {1, 1},
                 .hi = {1, 1},
                 .cl = true,
                 .dtype = CML_DTYPE_F32};
  fake_t f;
  problem_finish(&p, &f);
  const float sums[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
  for (int isa = 0; isa < 3; ++isa) {
    if (!isa_usable((cmlc_isa_t)isa)) continue;
    cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 1);
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, x, w, y, NULL));
    for (int i = 0; i < 9; ++i) {
      ASSERT_EQ_DBL(y[2 * i], sums[i]);
      ASSERT_EQ_DBL(y[2 * i + 1], x[i]);
    }
  }
}

TEST(reference_and_integers_keep_direct_path) {
  // The direct path converts the whole input into scratch; the fast path never does. The
  // scratch size tells them apart: a 1x1 conv over a big input with a tiny kernel. f32 takes
  // the fast path; reference=true and i32 take the direct one.
  problem_t p = {.s = 2,
                 .n = 4,
                 .c = 64,
                 .o = 1,
                 .in = {64, 64},
                 .k = {1, 1},
                 .cl = true,
                 .dtype = CML_DTYPE_F32};
  fake_t f;
  problem_finish(&p, &f);
  size_t input_bytes = (size_t)cml_shape_element_count(&p.xs) * 4;
  float* x = calloc((size_t)cml_shape_element_count(&p.xs), sizeof(float));
  float w[64] = {0};
  float* y = calloc((size_t)cml_shape_element_count(&p.ys), sizeof(float));
  size_t fast = 0, ref = 0;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  cml_status_t s = fake_run(&f, &o, NULL, x, w, y, &fast);
  cmlc_options_t r = make_options(CMLC_ISA_SCALAR, true, 1);
  cml_status_t s2 = fake_run(&f, &r, NULL, x, w, y, &ref);
  size_t integer = 0;
  f.values[1].shape.dtype = f.values[2].shape.dtype = f.values[3].shape.dtype = CML_DTYPE_I32;
  cml_status_t s3 = fake_run(&f, &o, NULL, x, w, y, &integer);
  free(x), free(y);
  ASSERT_STATUS_OK(s);
  ASSERT_STATUS_OK(s2);
  ASSERT_STATUS_OK(s3);
  ASSERT_TRUE(ref >= input_bytes);
  ASSERT_TRUE(integer >= input_bytes);
  ASSERT_TRUE(fast < input_bytes / 4);
}

TEST(inexact_f32_thread_and_tile_independent) {
  // A ResNet-like block with values whose sums round: 1 and 3 threads must agree bit for bit
  // (check_problem compares them), and the result stays within the summation bound.
  // clang-format off
  static const conv_case_t kResnet[] = {
      {"resnet-like", {.s = 2, .n = 2, .c = 32, .o = 32, .in = {28, 28}, .k = {3, 3},
                       .lo = {1, 1}, .hi = {1, 1}, .cl = true, .dtype = F32}},
  };
  // clang-format on
  ASSERT_EQ_INT(CHECK_CASES(kResnet), 0);
}

// Problems the AVX-512 direct 2-D kernel takes (one group, at least two taps, small K): odd
// sizes, batch > 1, output widths that are not a multiple of its 6 pixels, channel counts that
// are not a multiple of 16 or exceed 64 (a partial block), strides, both dilations, negative
// padding, NCHW/OIHW and shuffled layouts (gathered strip, scattered row), and f16/bf16 inputs
// and outputs. check_problem runs every ISA (AVX-512 reaches the direct kernel), 1 and 3
// threads, against the double reference.
// clang-format off
static const conv_case_t kDirectCases[] = {
    // The 7x7/2 stem shape, small: 3 input channels, 64 + 6 output channels, odd input.
    {"direct stem", {.s = 2, .n = 2, .c = 3, .o = 70, .in = {23, 29}, .k = {7, 7},
                     .stride = {2, 2}, .lo = {3, 3}, .hi = {3, 2}, .cl = true, .dtype = F32}},
    // 3x3 "same" with 130 output channels (two full blocks and a 2-channel one), width 13.
    {"direct 3x3 130 channels", {.s = 2, .n = 3, .c = 19, .o = 130, .in = {7, 13},
                                 .k = {3, 3}, .lo = {1, 1}, .hi = {1, 1}, .cl = true,
                                 .dtype = F32}},
    // NCHW / OIHW / NCHW: strided strip gather and scattered output rows; stride 3 x 2,
    // kernel dilation, negative low padding on one axis, 5 output channels.
    {"direct nchw strided dilated", {.s = 2, .n = 2, .c = 4, .o = 5, .in = {19, 17},
                                     .k = {2, 3}, .stride = {3, 2}, .kdil = {2, 2},
                                     .lo = {-1, 2}, .hi = {2, 1}, .dtype = F32}},
    // NCHW with channel counts that are not multiples of the 8 channels moved together
    // between the layout and the strip (input) and back (output rows).
    {"direct nchw 19 -> 70", {.s = 2, .n = 2, .c = 19, .o = 70, .in = {9, 13}, .k = {3, 3},
                              .lo = {1, 1}, .hi = {1, 1}, .dtype = F32}},
    // Input dilation with unit strides (transposed convolutions) takes the phased kernel: the
    // 4x4/2 upsampling layer (NHWC, 70 channels), a dilation above the kernel size (phases
    // without taps: zeros), negative padding, an NCHW input and output.
    {"direct transposed 4x4/2", {.s = 2, .n = 2, .c = 19, .o = 70, .in = {7, 9}, .k = {4, 4},
                                 .idil = {2, 2}, .lo = {2, 2}, .hi = {2, 2}, .cl = true,
                                 .dtype = F32}},
    {"direct input dilation 3 over 2x2", {.s = 2, .n = 1, .c = 5, .o = 9, .in = {5, 6},
                                          .k = {2, 2}, .idil = {3, 3}, .lo = {1, 0},
                                          .hi = {1, 2}, .cl = true, .dtype = F32}},
    {"direct input dilation cropped", {.s = 2, .n = 2, .c = 6, .o = 11, .in = {6, 7},
                                       .k = {3, 3}, .idil = {2, 3}, .lo = {-1, -2},
                                       .hi = {0, 1}, .cl = true, .dtype = F32}},
    {"direct input dilation nchw", {.s = 2, .n = 2, .c = 11, .o = 13, .in = {5, 6}, .k = {3, 3},
                                    .idil = {2, 2}, .lo = {1, 1}, .hi = {1, 1}, .dtype = F32}},
    // Input dilation (transposed conv) on both axes, a shuffled layout for all three
    // operands.
    {"direct input dilation shuffled", {.s = 2, .n = 2, .c = 3, .o = 17, .in = {6, 5},
                                        .k = {3, 4}, .idil = {2, 3}, .lo = {2, 3},
                                        .hi = {2, 3}, .in_axes = {3, 0, 2, 1},
                                        .ker_axes = {1, 3, 0, 2}, .out_axes = {2, 0, 3, 1},
                                        .dtype = F32}},
};
// Half inputs (widened in the strip and the packing) and half/f32 outputs.
static const conv_case_t kDirectHalfCases[] = {
    {"direct 5x5/2", {.s = 2, .n = 2, .c = 3, .o = 33, .in = {15, 17}, .k = {5, 5},
                      .stride = {2, 2}, .lo = {2, 2}, .hi = {2, 2}, .cl = true}},
    {"direct nchw ->f32", {.s = 2, .n = 1, .c = 9, .o = 20, .in = {8, 11}, .k = {3, 3},
                           .lo = {1, 1}, .hi = {1, 1}, .out_dtype = F32}},
};
static const conv_case_t kDirectBf16Out[] = {
    {"direct f32->bf16", {.s = 2, .n = 2, .c = 5, .o = 48, .in = {9, 14}, .k = {3, 3},
                          .lo = {0, 1}, .hi = {1, 0}, .cl = true, .dtype = F32,
                          .out_dtype = BF16}},
};
// clang-format on

TEST(direct_kernel_layouts_strides_dtypes) {
  static const cml_dtype_t kHalf[] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  int failures = CHECK_CASES(kDirectCases);
  failures += CHECK_CASES_AS(kDirectHalfCases, kHalf);
  failures += CHECK_CASES(kDirectBf16Out);
  // Output width 1..7 around the 6-pixel tile.
  for (int64_t w = 1; w <= 7; ++w) {
    char name[32];
    snprintf(name, sizeof name, "direct narrow w %d", (int)w);
    // clang-format off
    const conv_case_t narrow = {name, {.s = 2, .n = 1, .c = 2, .o = 16, .in = {4, w}, .k = {2, 3},
                                       .lo = {0, 1}, .hi = {1, 1}, .cl = true, .dtype = F32}};
    // clang-format on
    failures += check_cases(&narrow, 1, NULL, 0);
  }
  ASSERT_EQ_INT(failures, 0);
}

TEST(direct_kernel_taken_on_avx512) {
  // The stem shape takes the direct kernel on AVX-512: its scratch is the packed filter (one
  // 64-channel block of K = 7*7*3 rows) plus one zero-padded input strip per thread, less than
  // the im2col path's per-thread tile. The scalar ISA keeps the GEMM path.
  if (!isa_usable(CMLC_ISA_AVX512)) return;
  problem_t p = {.s = 2,
                 .n = 1,
                 .c = 3,
                 .o = 64,
                 .in = {224, 224},
                 .k = {7, 7},
                 .stride = {2, 2},
                 .lo = {3, 3},
                 .hi = {3, 3},
                 .cl = true,
                 .dtype = CML_DTYPE_F32};
  fake_t f;
  problem_finish(&p, &f);
  ASSERT_EQ_INT(p.out[0], 112);
  float* x = calloc((size_t)cml_shape_element_count(&p.xs), sizeof(float));
  float* w = calloc((size_t)cml_shape_element_count(&p.ks), sizeof(float));
  float* y = calloc((size_t)cml_shape_element_count(&p.ys), sizeof(float));
  size_t direct = 0, gemm = 0;
  cmlc_options_t o = make_options(CMLC_ISA_AVX512, false, 2);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, x, w, y, &direct));
  cmlc_options_t o2 = make_options(CMLC_ISA_SCALAR, false, 2);
  ASSERT_STATUS_OK(fake_run(&f, &o2, NULL, x, w, y, &gemm));
  // Packed filter 147 x 64 floats; 8 output rows per task (14 tasks, at least 4 per thread),
  // so a strip of 7 * 2 + 7 input rows x (111 * 2 + 7) positions x 3 channels.
  size_t filter = (147 * 64 * 4 + 63) / 64 * 64, strip = (21 * 229 * 3 * 4 + 63) / 64 * 64;
  ASSERT_EQ_INT((int64_t)direct, (int64_t)(filter + 2 * strip));
  ASSERT_TRUE(gemm > direct);
  free(x), free(w), free(y);
}

// Which block of K the direct kernel sums channel |ci| of tap |t| in: K runs in chunks of at most
// CMLC__CONV_DIRECT_K_MAX rows, contiguous in (ky, kx, ci) order (whole taps when C_in fits a
// chunk, spread evenly, else each tap's channels in equal ranges), and each chunk in blocks of
// CMLC__CONV_DIRECT_K_BLOCK rows from its start. Blocks are numbered in order.
static int64_t direct_block(const problem_t* p, int64_t t, int64_t ci) {
  const int64_t kmax = CMLC__CONV_DIRECT_K_MAX, taps = p->k[0] * p->k[1];
  const int64_t per_chunk = kmax / CMLC__CONV_DIRECT_K_BLOCK + 1;  // a bound on blocks per chunk
  int64_t chunk, offset;
  if (p->c <= kmax) {
    int64_t n = (taps * p->c + kmax - 1) / kmax, tpc = (taps + n - 1) / n;
    chunk = t / tpc;
    offset = (t - chunk * tpc) * p->c + ci;
  } else {
    int64_t nsplit = (p->c + kmax - 1) / kmax, cpc = (p->c + nsplit - 1) / nsplit;
    chunk = t * nsplit + ci / cpc;
    offset = ci % cpc;
  }
  return chunk * per_chunk + offset / CMLC__CONV_DIRECT_K_BLOCK;
}

// Ends a block of a blocked sum: the first block's sum is stored as it is, each later one is
// added to the total in f32.
static void chunk_end(float* total, float* partial, bool* first) {
  *total = *first ? *partial : *total + *partial;
  *partial = 0;
  *first = false;
}

// The direct kernel's exact order: each output sums every block of K (direct_block) as one chain
// of f32 fused multiply-adds from 0 over (ky, kx, ci), zero where a tap reads padding or a
// dilation hole, and adds the blocks' sums in order. |x| and |w| hold the operands' f32 values
// at their layout offsets.
static void fma_order_reference(const problem_t* p, const double* x, const double* w, float* y) {
  int64_t osz = p->out[0] * p->out[1];
  for (int64_t b = 0; b < p->n; ++b)
    for (int64_t o = 0; o < p->o; ++o)
      for (int64_t yi = 0; yi < osz; ++yi) {
        int64_t y0 = yi / p->out[1], y1 = yi % p->out[1];
        float acc = 0, total = 0;
        bool first = true;
        int64_t block = 0;
        for (int64_t ky = 0; ky < p->k[0]; ++ky)
          for (int64_t kx = 0; kx < p->k[1]; ++kx) {
            int64_t pos0 = y0 * p->stride[0] + ky * p->kdil[0] - p->lo[0];
            int64_t pos1 = y1 * p->stride[1] + kx * p->kdil[1] - p->lo[1];
            bool ok = pos0 >= 0 && pos0 % p->idil[0] == 0 && pos0 / p->idil[0] < p->in[0] &&
                      pos1 >= 0 && pos1 % p->idil[1] == 0 && pos1 / p->idil[1] < p->in[1];
            for (int64_t ci = 0; ci < p->c; ++ci) {
              int64_t id = direct_block(p, ky * p->k[1] + kx, ci);
              if (id != block) {
                chunk_end(&total, &acc, &first);
                block = id;
              }
              float xv = 0;
              if (ok)
                xv = (float)x[b * p->xst[0] + ci * p->xst[1] + pos0 / p->idil[0] * p->xst[2] +
                              pos1 / p->idil[1] * p->xst[3]];
              float wv = (float)w[o * p->kst[0] + ci * p->kst[1] + ky * p->kst[2] + kx * p->kst[3]];
              acc = fmaf(xv, wv, acc);
            }
          }
        chunk_end(&total, &acc, &first);
        y[b * p->yst[0] + o * p->yst[1] + y0 * p->yst[2] + y1 * p->yst[3]] = total;
      }
}

// 1x1 kernels (read in place when their taps stay inside an f32 input with channel stride 1,
// else through the strip) and K above the chunk limit of 1280 (whole-tap chunks, or a tap's
// channels split in ranges), against the double reference on every ISA, 1 and 3 threads.
// clang-format off
static const conv_case_t kDirect1x1SplitKCases[] = {
    // In place: stride 1, 70 output channels (a 6-channel second block), odd width.
    {"direct 1x1 in place", {.s = 2, .n = 2, .c = 40, .o = 70, .in = {5, 7}, .k = {1, 1},
                             .cl = true, .dtype = F32}},
    // In place: stride 2 x 3 with negative low padding (the taps skip the first row/column).
    {"direct 1x1 in place strided", {.s = 2, .n = 3, .c = 9, .o = 17, .in = {11, 13},
                                     .k = {1, 1}, .stride = {2, 3}, .lo = {-1, -2},
                                     .hi = {0, 1}, .cl = true, .dtype = F32}},
    // Strip: padding around a 1x1 kernel (zero rows and columns of output), NCHW output.
    {"direct 1x1 padded nchw out", {.s = 2, .n = 1, .c = 5, .o = 20, .in = {6, 8}, .k = {1, 1},
                                    .lo = {1, 2}, .hi = {2, 1}, .in_axes = NHWC,
                                    .ker_axes = HWIO, .out_axes = {0, 1, 2, 3}, .dtype = F32}},
    // Strip: NCHW input (channel stride != 1) and an f16 input.
    {"direct 1x1 nchw", {.s = 2, .n = 2, .c = 12, .o = 33, .in = {6, 5}, .k = {1, 1},
                         .dtype = F32}},
    {"direct 1x1 f16", {.s = 2, .n = 2, .c = 12, .o = 33, .in = {6, 5}, .k = {1, 1},
                        .cl = true, .dtype = F16}},
    // K = 9 x 300 = 2700: three chunks of 3 taps; batch 2, padding, 20 channels.
    {"direct split K taps", {.s = 2, .n = 2, .c = 300, .o = 20, .in = {5, 6}, .k = {3, 3},
                             .lo = {1, 1}, .hi = {1, 1}, .cl = true, .dtype = F32}},
    // K = 7 x 200 = 1400 over a 1x7 kernel with stride and kernel dilation: chunks of 4 and
    // 3 taps that break a kernel row; bf16 input and output.
    {"direct split K 1x7 bf16", {.s = 2, .n = 1, .c = 200, .o = 9, .in = {3, 19}, .k = {1, 7},
                                 .stride = {1, 2}, .kdil = {1, 2}, .lo = {0, 3}, .hi = {0, 3},
                                 .cl = true, .dtype = BF16}},
    // C_in = 1500 > 1280: every tap split into two channel ranges (750 each); in place 1x1
    // and a 2x2 with padding through the strip, 65 output channels.
    {"direct split channels 1x1", {.s = 2, .n = 1, .c = 1500, .o = 65, .in = {4, 4},
                                   .k = {1, 1}, .cl = true, .dtype = F32}},
    {"direct split channels 2x2", {.s = 2, .n = 2, .c = 1500, .o = 7, .in = {3, 4},
                                   .k = {2, 2}, .lo = {1, 0}, .hi = {0, 1}, .cl = true,
                                   .dtype = F32}},
};
// clang-format on

TEST(direct_kernel_1x1_and_split_k) { ASSERT_EQ_INT(CHECK_CASES(kDirect1x1SplitKCases), 0); }

typedef void (*fma_reference_fn)(const problem_t* p, const double* x, const double* w, float* y);

// Runs |count| f32 problems on AVX-512 and AVX2 (whose kernels share the order), 1 and 2
// threads, against |order| bit for bit (NaN against NaN when |inf_weight|: one weight is
// made infinite, and some outputs must stay finite). Returns the failures; *checked counts runs.
static int check_fma_order(const problem_t* cases, size_t count, fma_reference_fn order,
                           bool inf_weight, int* checked) {
  cmlc_pool_t* pool = NULL;
  cml_status_t st = cmlc_pool_create(2, cml_allocator_system(), &pool);
  if (st != CML_OK) {
    cml_status_free(st);
    return 1;
  }
  int failures = 0;
  for (size_t i = 0; i < count && failures == 0; ++i) {
    problem_t p = cases[i];
    fake_t f;
    problem_finish(&p, &f);
    int64_t nx = cml_shape_element_count(&p.xs), nk = cml_shape_element_count(&p.ks);
    int64_t ny = cml_shape_element_count(&p.ys);
    double* xv = malloc(sizeof(double) * (size_t)nx);
    double* wv = malloc(sizeof(double) * (size_t)nk);
    for (int64_t j = 0; j < nx; ++j) xv[j] = rnd();
    for (int64_t j = 0; j < nk; ++j) wv[j] = rnd();
    if (inf_weight) wv[nk / 2] = INFINITY;
    float* x = make_data(CML_DTYPE_F32, xv, nx);
    float* w = make_data(CML_DTYPE_F32, wv, nk);
    float* want = malloc(sizeof(float) * (size_t)ny);
    float* got = malloc(sizeof(float) * (size_t)ny);
    order(&p, xv, wv, want);
    if (inf_weight) {
      int64_t finite = 0;
      for (int64_t j = 0; j < ny; ++j) finite += isfinite(want[j]) ? 1 : 0;
      if (finite == 0 || finite == ny) {
        fprintf(stderr, "case %zu: %lld of %lld outputs finite\n", i, (long long)finite,
                (long long)ny);
        ++failures;
      }
    }
    for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512 && failures == 0; ++isa) {
      if (!isa_usable((cmlc_isa_t)isa)) continue;
      for (int threads = 1; threads <= 2 && failures == 0; ++threads) {
        cmlc_options_t o = make_options((cmlc_isa_t)isa, false, threads);
        memset(got, 0xee, sizeof(float) * (size_t)ny);
        st = fake_run(&f, &o, threads > 1 ? pool : NULL, x, w, got, NULL);
        if (st != CML_OK) {
          fprintf(stderr, "case %zu: %s\n", i, cml_status_message(st));
          cml_status_free(st);
          ++failures;
          break;
        }
        for (int64_t j = 0; j < ny; ++j) {
          if (memcmp(&got[j], &want[j], sizeof(float)) != 0 &&
              !(inf_weight && isnan(got[j]) && isnan(want[j]))) {
            fprintf(stderr, "case %zu isa %d threads %d: element %lld: %.9g, fma order %.9g\n", i,
                    isa, threads, (long long)j, (double)got[j], (double)want[j]);
            ++failures;
            break;
          }
        }
        ++*checked;
      }
    }
    free(xv), free(wv), free(x), free(w), free(want), free(got);
  }
  cmlc_pool_destroy(pool);
  return failures;
}

TEST(direct_kernel_split_k_bit_identical) {
  // A K split into chunks gives a blocked sum: each chunk one chain of fmaf from 0 in (ky, kx,
  // ci) order, added to the f32 sums the chunks before stored. Checked bit for bit against that
  // order, on AVX-512 and AVX2 (whose kernels share it), 1 and 2 threads, for whole-tap chunks
  // (K = 2700), channel-range chunks (C_in = 1500) and K under the limit.
  // clang-format off
  static const problem_t cases[] = {
      {.s = 2, .n = 2, .c = 300, .o = 70, .in = {5, 6}, .k = {3, 3}, .lo = {1, 1}, .hi = {1, 1},
       .cl = true, .dtype = F32},
      {.s = 2, .n = 1, .c = 1500, .o = 20, .in = {4, 5}, .k = {2, 2}, .lo = {1, 0}, .hi = {0, 1},
       .cl = true, .dtype = F32},
      {.s = 2, .n = 1, .c = 1500, .o = 20, .in = {4, 4}, .k = {1, 1}, .cl = true, .dtype = F32},
      {.s = 2, .n = 2, .c = 7, .o = 33, .in = {9, 8}, .k = {3, 3}, .stride = {2, 1},
       .lo = {1, 1}, .hi = {1, 1}, .dtype = F32},
  };
  // clang-format on
  int checked = 0;
  ASSERT_EQ_INT(
      check_fma_order(cases, sizeof cases / sizeof cases[0], fma_order_reference, false, &checked),
      0);
  // On x86-64 with AVX2 at least one ISA ran every case.
  if (isa_usable(CMLC_ISA_AVX2)) ASSERT_TRUE(checked >= 8);
}

// The phased kernel's order (input dilation, unit strides): each output sums the taps that do
// not fall into an input-dilation hole (taps in padding read zeros and are multiplied) in chunks
// of CMLC__CONV_DIRECT_K_MAX / C_in such taps, each chunk in blocks of CMLC__CONV_DIRECT_K_BLOCK
// rows, each block one chain of f32 fused multiply-adds from 0 over (ky, kx, ci), the blocks'
// sums added in order.
static void fma_order_phased_reference(const problem_t* p, const double* x, const double* w,
                                       float* y) {
  int64_t osz = p->out[0] * p->out[1];
  const int64_t tpc = CMLC__CONV_DIRECT_K_MAX / p->c;
  for (int64_t b = 0; b < p->n; ++b)
    for (int64_t o = 0; o < p->o; ++o)
      for (int64_t yi = 0; yi < osz; ++yi) {
        int64_t y0 = yi / p->out[1], y1 = yi % p->out[1];
        float acc = 0, total = 0;
        bool first = true;
        int64_t live = 0, block = 0;  // taps of this output's phase so far, the current block
        for (int64_t ky = 0; ky < p->k[0]; ++ky)
          for (int64_t kx = 0; kx < p->k[1]; ++kx) {
            int64_t pos0 = y0 + ky - p->lo[0], pos1 = y1 + kx - p->lo[1];
            if (pos0 % p->idil[0] != 0 || pos1 % p->idil[1] != 0) continue;  // a hole
            const int64_t chunk = live / tpc, tap_at = (live % tpc) * p->c;
            ++live;
            bool ok = pos0 >= 0 && pos0 / p->idil[0] < p->in[0] && pos1 >= 0 &&
                      pos1 / p->idil[1] < p->in[1];
            for (int64_t ci = 0; ci < p->c; ++ci) {
              const int64_t id = chunk * (CMLC__CONV_DIRECT_K_MAX / CMLC__CONV_DIRECT_K_BLOCK + 1) +
                                 (tap_at + ci) / CMLC__CONV_DIRECT_K_BLOCK;
              if (id != block) {
                chunk_end(&total, &acc, &first);
                block = id;
              }
              float xv = 0;
              if (ok)
                xv = (float)x[b * p->xst[0] + ci * p->xst[1] + pos0 / p->idil[0] * p->xst[2] +
                              pos1 / p->idil[1] * p->xst[3]];
              float wv = (float)w[o * p->kst[0] + ci * p->kst[1] + ky * p->kst[2] + kx * p->kst[3]];
              acc = fmaf(xv, wv, acc);
            }
          }
        chunk_end(&total, &acc, &first);
        y[b * p->yst[0] + o * p->yst[1] + y0 * p->yst[2] + y1 * p->yst[3]] = total;
      }
}

TEST(direct_kernel_phases_bit_identical) {
  // Input dilation with unit strides: the phased kernel skips the holes and keeps the order of
  // the remaining terms, in chunks of whole taps when a phase's sub-filter is long (C_in 700:
  // one tap per chunk, the chunks' sums added). Against that order on AVX-512 and AVX2, 1 and 2
  // threads.
  // clang-format off
  static const problem_t cases[] = {
      {.s = 2, .n = 2, .c = 19, .o = 70, .in = {7, 9}, .k = {4, 4}, .idil = {2, 2},
       .lo = {2, 2}, .hi = {2, 2}, .cl = true, .dtype = F32},
      {.s = 2, .n = 1, .c = 700, .o = 20, .in = {3, 4}, .k = {4, 4}, .idil = {2, 2},
       .lo = {2, 1}, .hi = {2, 3}, .cl = true, .dtype = F32},
      {.s = 2, .n = 1, .c = 5, .o = 9, .in = {5, 6}, .k = {2, 2}, .idil = {3, 3}, .lo = {1, 0},
       .hi = {1, 2}, .cl = true, .dtype = F32},
      {.s = 2, .n = 2, .c = 11, .o = 13, .in = {5, 6}, .k = {3, 3}, .idil = {2, 2},
       .lo = {-1, 1}, .hi = {1, 0}, .dtype = F32},
  };
  // clang-format on
  int checked = 0;
  ASSERT_EQ_INT(check_fma_order(cases, sizeof cases / sizeof cases[0], fma_order_phased_reference,
                                true, &checked),
                0);
  if (isa_usable(CMLC_ISA_AVX2)) ASSERT_TRUE(checked >= 8);
}

TEST(direct_kernel_taken_for_1x1_and_large_k) {
  // The scratch shows the path: the direct kernel's is the packed filter plus, per thread, the
  // strip (none when a 1x1 reads in place); the GEMM path's adds per-thread tiles and packing
  // buffers. ResNet's 1x1 projection [1,56,56,64] -> 256 reads in place: only the filter
  // (4 blocks x 64 x 64 floats). A 1x1 over [N,1,1,C] (a dense layer) keeps the GEMM.
  if (!isa_usable(CMLC_ISA_AVX2)) return;
  for (int isa = CMLC_ISA_AVX2; isa <= CMLC_ISA_AVX512; ++isa) {
    if (!isa_usable((cmlc_isa_t)isa)) continue;
    cmlc_options_t o = make_options((cmlc_isa_t)isa, false, 2);
    problem_t p = {.s = 2,
                   .n = 1,
                   .c = 64,
                   .o = 256,
                   .in = {56, 56},
                   .k = {1, 1},
                   .cl = true,
                   .dtype = CML_DTYPE_F32};
    fake_t f;
    problem_finish(&p, &f);
    float* x = calloc((size_t)cml_shape_element_count(&p.xs), sizeof(float));
    float* w = calloc((size_t)cml_shape_element_count(&p.ks), sizeof(float));
    float* y = calloc((size_t)cml_shape_element_count(&p.ys), sizeof(float));
    size_t bytes = 0;
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, x, w, y, &bytes));
    ASSERT_EQ_INT((int64_t)bytes, 4 * 64 * 64 * 4);
    free(x), free(w), free(y);
    // Stage 3's 3x3 on 256 channels (K = 2304, two chunks): filter 4 blocks x 2304 x 64 floats
    // plus one strip per thread (one output row per task for 4 tasks per thread: 3 input
    // rows x 16 x 256 floats).
    problem_t q = {.s = 2,
                   .n = 1,
                   .c = 256,
                   .o = 256,
                   .in = {14, 14},
                   .k = {3, 3},
                   .lo = {1, 1},
                   .hi = {1, 1},
                   .cl = true,
                   .dtype = CML_DTYPE_F32};
    problem_finish(&q, &f);
    x = calloc((size_t)cml_shape_element_count(&q.xs), sizeof(float));
    w = calloc((size_t)cml_shape_element_count(&q.ks), sizeof(float));
    y = calloc((size_t)cml_shape_element_count(&q.ys), sizeof(float));
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, x, w, y, &bytes));
    ASSERT_EQ_INT((int64_t)bytes, 4 * 2304 * 64 * 4 + 2 * 3 * 16 * 256 * 4);
    free(x), free(w), free(y);
    // A dense layer as a 1x1 conv over [8, 1, 1, 96] -> 40: the GEMM path (more scratch than
    // the 40 x 96 filter block alone).
    problem_t r = {.s = 2,
                   .n = 8,
                   .c = 96,
                   .o = 40,
                   .in = {1, 1},
                   .k = {1, 1},
                   .cl = true,
                   .dtype = CML_DTYPE_F32};
    problem_finish(&r, &f);
    float xr[8 * 96] = {0}, wr[96 * 40] = {0}, yr[8 * 40];
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, xr, wr, yr, &bytes));
    ASSERT_TRUE(bytes != (size_t)(96 * 64 * 4));
  }
}

TEST(zero_input_channels_and_empty_output) {
  // Cin = 0: every output is an empty sum (0); zero batch: nothing to write.
  problem_t p = {.s = 1, .n = 2, .c = 0, .o = 3, .in = {5}, .k = {2}, .dtype = CML_DTYPE_F32};
  fake_t f;
  problem_finish(&p, &f);
  float x[1] = {0}, w[1] = {0}, y[24];  // output [2, 3, 4]
  for (int i = 0; i < 24; ++i) y[i] = 7;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, x, w, y, NULL));
  for (int i = 0; i < 24; ++i) ASSERT_EQ_DBL(y[i], 0);
  problem_t q = {.s = 1, .n = 0, .c = 2, .o = 3, .in = {5}, .k = {2}, .dtype = CML_DTYPE_F32};
  problem_finish(&q, &f);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, x, w, y, NULL));
}

TEST_MAIN(TEST_ENTRY(fast_path_layouts_strides_groups), TEST_ENTRY(fast_path_dtypes),
          TEST_ENTRY(hand_computed_nhwc_3x3), TEST_ENTRY(reference_and_integers_keep_direct_path),
          TEST_ENTRY(inexact_f32_thread_and_tile_independent),
          TEST_ENTRY(direct_kernel_layouts_strides_dtypes),
          TEST_ENTRY(direct_kernel_taken_on_avx512), TEST_ENTRY(direct_kernel_1x1_and_split_k),
          TEST_ENTRY(direct_kernel_split_k_bit_identical),
          TEST_ENTRY(direct_kernel_phases_bit_identical),
          TEST_ENTRY(direct_kernel_taken_for_1x1_and_large_k),
          TEST_ENTRY(zero_input_channels_and_empty_output))
