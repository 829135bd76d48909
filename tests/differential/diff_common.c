// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_common.c: the differential test's framework (see diff_common.h).
#include "diff_common.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dt_state_t dt;

const cml_dtype_t dt_all_dtypes[] = {
    CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I16,  CML_DTYPE_I32,    CML_DTYPE_I64,  CML_DTYPE_U8,
    CML_DTYPE_U16,  CML_DTYPE_U32, CML_DTYPE_U64,  CML_DTYPE_F16,    CML_DTYPE_BF16, CML_DTYPE_F32,
    CML_DTYPE_F64,  CML_DTYPE_C64, CML_DTYPE_C128, CML_DTYPE_INVALID};

//===--- tensors ---===//

void dt_case_init(dt_case_t* c, const char* op, cml_dtype_t dtype, dt_tol_t tol) {
  memset(c, 0, sizeof *c);
  // Inputs depend only on the label, not on which other cases ran (filters keep them).
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)dtype;
  for (const char* p = op; *p; ++p) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
  dt.rng = h;
  c->op = op;
  c->dtype = dtype;
  c->tol = tol;
}

void* dt_case_input(dt_case_t* c, cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  if (c->input_count >= DT_MAX_INPUTS) {
    fprintf(stderr, "diff_test: too many inputs in %s\n", c->op);
    exit(2);
  }
  dt_tensor_t* t = &c->inputs[c->input_count++];
  t->shape = cml_shape_make(dtype, rank, dims);
  t->size = cml_shape_byte_size(&t->shape);
  t->data = calloc(1, t->size ? t->size : 1);
  if (!t->data || t->shape.dtype == CML_DTYPE_INVALID) {
    fprintf(stderr, "diff_test: bad input for %s\n", c->op);
    exit(2);
  }
  return t->data;
}

void dt_case_free(dt_case_t* c) {
  for (size_t i = 0; i < c->input_count; ++i) free(c->inputs[i].data);
  c->input_count = 0;
}

static int dt_elem_bytes(cml_dtype_t d) { return cml_dtype_bits(d) / 8; }

double dt_get_f64(cml_dtype_t d, const void* p, int64_t i) {
  switch (d) {
    case CML_DTYPE_BOOL:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_I8:
      return ((const int8_t*)p)[i];
    case CML_DTYPE_I16:
      return ((const int16_t*)p)[i];
    case CML_DTYPE_I32:
      return ((const int32_t*)p)[i];
    case CML_DTYPE_I64:
      return (double)((const int64_t*)p)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)p)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)p)[i];
    case CML_DTYPE_U64:
      return (double)((const uint64_t*)p)[i];
    case CML_DTYPE_F16:
      return cml_f16_to_f32(((const uint16_t*)p)[i]);
    case CML_DTYPE_BF16:
      return cml_bf16_to_f32(((const uint16_t*)p)[i]);
    case CML_DTYPE_F32:
      return ((const float*)p)[i];
    case CML_DTYPE_F64:
      return ((const double*)p)[i];
    case CML_DTYPE_C64:
      return ((const float*)p)[2 * i];
    case CML_DTYPE_C128:
      return ((const double*)p)[2 * i];
    default:
      return 0;
  }
}

int64_t dt_get_i64(cml_dtype_t d, const void* p, int64_t i) {
  switch (d) {
    case CML_DTYPE_BOOL:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_I8:
      return ((const int8_t*)p)[i];
    case CML_DTYPE_I16:
      return ((const int16_t*)p)[i];
    case CML_DTYPE_I32:
      return ((const int32_t*)p)[i];
    case CML_DTYPE_I64:
      return ((const int64_t*)p)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)p)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)p)[i];
    case CML_DTYPE_U64:
      return (int64_t)((const uint64_t*)p)[i];
    default:
      return (int64_t)dt_get_f64(d, p, i);
  }
}

void dt_set_f64(cml_dtype_t d, void* p, int64_t i, double v) {
  switch (d) {
    case CML_DTYPE_F16:
      ((uint16_t*)p)[i] = cml_f64_to_f16(v);
      break;
    case CML_DTYPE_BF16:
      ((uint16_t*)p)[i] = cml_f64_to_bf16(v);
      break;
    case CML_DTYPE_F32:
      ((float*)p)[i] = (float)v;
      break;
    case CML_DTYPE_F64:
      ((double*)p)[i] = v;
      break;
    case CML_DTYPE_C64:
    case CML_DTYPE_C128:
      dt_set_c(d, p, i, v, 0);
      break;
    case CML_DTYPE_BOOL:
      ((uint8_t*)p)[i] = v != 0;
      break;
    default:
      dt_set_i64(d, p, i, isfinite(v) ? (int64_t)v : 0);
      break;
  }
}

void dt_set_i64(cml_dtype_t d, void* p, int64_t i, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (d) {
    case CML_DTYPE_BOOL:
      ((uint8_t*)p)[i] = v != 0;
      break;
    case CML_DTYPE_I8:
    case CML_DTYPE_U8:
      ((uint8_t*)p)[i] = (uint8_t)u;
      break;
    case CML_DTYPE_I16:
    case CML_DTYPE_U16:
      ((uint16_t*)p)[i] = (uint16_t)u;
      break;
    case CML_DTYPE_I32:
    case CML_DTYPE_U32:
      ((uint32_t*)p)[i] = (uint32_t)u;
      break;
    case CML_DTYPE_I64:
    case CML_DTYPE_U64:
      ((uint64_t*)p)[i] = u;
      break;
    default:
      dt_set_f64(d, p, i, (double)v);
      break;
  }
}

void dt_set_c(cml_dtype_t d, void* p, int64_t i, double re, double im) {
  if (d == CML_DTYPE_C64) {
    ((float*)p)[2 * i] = (float)re;
    ((float*)p)[2 * i + 1] = (float)im;
  } else if (d == CML_DTYPE_C128) {
    ((double*)p)[2 * i] = re;
    ((double*)p)[2 * i + 1] = im;
  } else {
    dt_set_f64(d, p, i, re);
  }
}

//===--- random inputs ---===//

uint64_t dt_rand(void) {  // splitmix64
  uint64_t z = (dt.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double dt_uniform(double lo, double hi) {
  return lo + (hi - lo) * ((double)(dt_rand() >> 11) * 0x1p-53);
}

typedef struct dt_float_info_t {
  double max, min_normal, denorm_min, eps;
  int emin, emax, mant_bits;
} dt_float_info_t;

static dt_float_info_t dt_float_info(cml_dtype_t d) {
  switch (cml_dtype_real_part(d)) {
    case CML_DTYPE_F16:
      return (dt_float_info_t){65504.0, 0x1p-14, 0x1p-24, 0x1p-10, -14, 15, 10};
    case CML_DTYPE_BF16:
      return (dt_float_info_t){0x1.FEp127, 0x1p-126, 0x1p-133, 0x1p-7, -126, 127, 7};
    case CML_DTYPE_F32:
      return (dt_float_info_t){FLT_MAX, FLT_MIN, 0x1p-149, 0x1p-23, -126, 127, 23};
    default:
      return (dt_float_info_t){DBL_MAX, DBL_MIN, 0x1p-1074, 0x1p-52, -1022, 1023, 52};
  }
}

double dt_eps(cml_dtype_t d) { return dt_float_info(d).eps; }

// XLA's CPU runtime runs with denormals flushed to zero (FTZ and DAZ), a platform choice the
// c backend does not copy (docs/differential.md): unless --denormals is given, float inputs are
// kept normal for the dtypes whose denormals are denormal in f32 (bf16, f32, f64; f16 is
// computed in f32, where its denormals are normal numbers), and a denormal result on one side
// matches a zero on the other.
bool dt_denormals_flushed(cml_dtype_t d) {
  if (!dt.denormals_flushed) return false;
  cml_dtype_t r = cml_dtype_real_part(d);
  return r == CML_DTYPE_BF16 || r == CML_DTYPE_F32 || r == CML_DTYPE_F64;
}

static double dt_float_special(cml_dtype_t d, int64_t k) {
  dt_float_info_t fi = dt_float_info(d);
  const double v[] = {NAN,
                      -NAN,
                      INFINITY,
                      -INFINITY,
                      0.0,
                      -0.0,
                      1.0,
                      -1.0,
                      0.5,
                      -0.5,
                      1.5,
                      -1.5,
                      2.5,
                      -2.5,
                      3.0,
                      0.1,
                      -7.25,
                      100.0,
                      fi.max,
                      -fi.max,
                      fi.min_normal,
                      -fi.min_normal,
                      dt_denormals_flushed(d) ? 4 * fi.min_normal : fi.denorm_min,
                      dt_denormals_flushed(d) ? -3 * fi.min_normal : -fi.denorm_min};
  return v[k % (int64_t)(sizeof v / sizeof v[0])];
}
#define DT_FLOAT_SPECIALS 24

static int64_t dt_int_special(cml_dtype_t d, int64_t k) {
  int bits = cml_dtype_bits(d);
  if (cml_dtype_is_signed_int(d)) {
    int64_t mx = bits == 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
    int64_t mn = -mx - 1;
    const int64_t v[] = {mn, mn + 1, -65, -64,      -9,   -2,       -1,  0,      1,
                         2,  3,      7,   bits - 1, bits, bits + 1, 100, mx - 1, mx};
    return v[k % (int64_t)(sizeof v / sizeof v[0])];
  }
  uint64_t mx = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  const uint64_t v[] = {
      0,   1,      2,          3,      7, (uint64_t)bits - 1, (uint64_t)bits, (uint64_t)bits + 1,
      100, mx / 2, mx / 2 + 1, mx - 1, mx};
  return (int64_t)v[k % (int64_t)(sizeof v / sizeof v[0])];
}

// Complex specials: a grid of finite components plus a few infinities and NaNs.
static void dt_complex_special(int64_t k, double* re, double* im) {
  static const double grid[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0};
  const int64_t g = 7;
  if (k < g * g) {
    *re = grid[k / g];
    *im = grid[k % g];
    return;
  }
  static const double extra[][2] = {{INFINITY, 0}, {0, INFINITY}, {-INFINITY, 1},
                                    {NAN, 0},      {0, NAN},      {INFINITY, INFINITY},
                                    {1e30, -1e30}, {1e-30, 2e-30}};
  int64_t e = (k - g * g) % 8;
  *re = extra[e][0];
  *im = extra[e][1];
}

int64_t dt_special_count(cml_dtype_t d) {
  if (d == CML_DTYPE_BOOL) return 2;
  if (cml_dtype_is_complex(d)) return 49 + 8;
  if (cml_dtype_is_float(d)) return DT_FLOAT_SPECIALS;
  return cml_dtype_is_signed_int(d) ? 18 : 13;
}

void dt_set_special(cml_dtype_t d, void* p, int64_t i, int64_t k) {
  if (d == CML_DTYPE_BOOL) {
    ((uint8_t*)p)[i] = (uint8_t)(k & 1);
  } else if (cml_dtype_is_complex(d)) {
    double re, im;
    dt_complex_special(k, &re, &im);
    dt_set_c(d, p, i, re, im);
  } else if (cml_dtype_is_float(d)) {
    dt_set_f64(d, p, i, dt_float_special(d, k));
  } else {
    dt_set_i64(d, p, i, dt_int_special(d, k));
  }
}

static double dt_random_wide_float(cml_dtype_t d) {
  dt_float_info_t fi = dt_float_info(d);
  int lowest = dt_denormals_flushed(d) ? fi.emin : fi.emin - fi.mant_bits;
  int span = fi.emax - lowest + 1;
  int e = lowest + (int)(dt_rand() % (uint64_t)span);
  double m = 1.0 + dt_uniform(0, 1);
  double v = ldexp(m, e);
  if (v > fi.max) v = fi.max;
  return (dt_rand() & 1) ? -v : v;
}

static double dt_random_float(cml_dtype_t d, dt_fill_t kind) {
  switch (kind) {
    case DT_FILL_SMALL:
      return dt_uniform(-4, 4);
    case DT_FILL_UNIT:
      return dt_uniform(-1, 1);
    case DT_FILL_EXACT:
      return (double)((int64_t)(dt_rand() % 65) - 32) / 4.0;
    default: {
      // Half wide, a quarter moderate, a quarter small: transcendentals need all ranges.
      uint64_t r = dt_rand() % 4;
      if (r == 0) return dt_uniform(-10, 10);
      if (r == 1) return dt_uniform(-1, 1);
      return dt_random_wide_float(d);
    }
  }
}

static int64_t dt_random_int(cml_dtype_t d, dt_fill_t kind) {
  bool is_signed = cml_dtype_is_signed_int(d);
  switch (kind) {
    case DT_FILL_SMALL:
      return is_signed ? (int64_t)(dt_rand() % 17) - 8 : (int64_t)(dt_rand() % 16);
    case DT_FILL_UNIT:
    case DT_FILL_EXACT:
      return is_signed ? (int64_t)(dt_rand() % 7) - 3 : (int64_t)(dt_rand() % 6);
    default: {
      uint64_t r = dt_rand();
      if (dt_rand() % 3 == 0) return is_signed ? (int64_t)(r % 41) - 20 : (int64_t)(r % 41);
      return (int64_t)r;  // truncated to the width by dt_set_i64
    }
  }
}

void dt_fill(cml_dtype_t d, void* p, int64_t from, int64_t n, dt_fill_t kind) {
  int64_t specials = kind == DT_FILL_EDGE ? dt_special_count(d) : 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = from + k;
    if (k < specials) {
      dt_set_special(d, p, i, k);
    } else if (d == CML_DTYPE_BOOL) {
      ((uint8_t*)p)[i] = (uint8_t)(dt_rand() & 1);
    } else if (cml_dtype_is_complex(d)) {
      dt_fill_t part = kind == DT_FILL_EDGE || kind == DT_FILL_WIDE ? DT_FILL_SMALL : kind;
      double re = dt_random_float(d, part), im = dt_random_float(d, part);
      if (kind == DT_FILL_WIDE || (kind == DT_FILL_EDGE && (dt_rand() & 3) == 0)) {
        double scale = ldexp(1.0, (int)(dt_rand() % 60) - 30);
        re *= scale;
        im *= scale;
      }
      dt_set_c(d, p, i, re, im);
    } else if (cml_dtype_is_float(d)) {
      dt_set_f64(d, p, i, dt_random_float(d, kind));
    } else {
      dt_set_i64(d, p, i, dt_random_int(d, kind));
    }
  }
}

//===--- running ---===//

bool dt_selected(const char* op, cml_dtype_t dtype) {
  if (!dt.filter) return true;
  char label[160];
  snprintf(label, sizeof label, "%s/%s", op, cml_dtype_name(dtype));
  return strstr(label, dt.filter) != NULL;
}

typedef struct dt_result_t {
  cml_status_t status;
  const char* stage;  // "build", "compile", "execute", ...
  size_t count;
  dt_tensor_t outputs[DT_MAX_OUTPUTS];
} dt_result_t;

static void dt_result_free(dt_result_t* r) {
  cml_status_free(r->status);
  for (size_t i = 0; i < r->count; ++i) free(r->outputs[i].data);
  memset(r, 0, sizeof *r);
}

static void dt_run(cml_backend_t* be, const dt_case_t* c, dt_result_t* r) {
  memset(r, 0, sizeof *r);
  cml_builder_t* b = NULL;
  cml_executable_t* exe = NULL;
  cml_buffer_t* in[DT_MAX_INPUTS] = {0};
  cml_buffer_t* out[DT_MAX_OUTPUTS] = {0};
  r->stage = "build";
  cml_status_t st = cml_builder_create(be, c->op, &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t params[DT_MAX_INPUTS];
    for (size_t i = 0; i < c->input_count; ++i) {
      params[i] = cml_parameter(f, NULL, &c->inputs[i].shape);
    }
    cml_value_t outs[DT_MAX_OUTPUTS] = {0};
    size_t n = c->build(f, params, c->ctx, outs);
    st = cml_builder_status(b);
    if (st == CML_OK && n == 0) {
      st = cml_status_make(CML_STATUS_INTERNAL, "the case built no outputs");
    }
    if (st == CML_OK) st = cml_function_return(f, outs, n);
    if (st == CML_OK) {
      r->stage = "compile";
      st = cml_builder_compile(b, &exe);
    }
  }
  cml_builder_destroy(b);
  if (st == CML_OK) {
    r->stage = "upload";
    for (size_t i = 0; i < c->input_count && st == CML_OK; ++i) {
      st = cml_buffer_from_host(be, 0, &c->inputs[i].shape, c->inputs[i].data, c->inputs[i].size,
                                &in[i]);
    }
  }
  size_t out_count = exe ? cml_executable_output_count(exe) : 0;
  if (st == CML_OK && out_count > DT_MAX_OUTPUTS) {
    st = cml_status_make(CML_STATUS_INTERNAL, "too many outputs");
  }
  if (st == CML_OK) {
    r->stage = "execute";
    st = cml_executable_execute(exe, in, c->input_count, NULL, 0, out);
  }
  if (st == CML_OK) {
    r->stage = "download";
    for (size_t i = 0; i < out_count && st == CML_OK; ++i) {
      dt_tensor_t* t = &r->outputs[i];
      t->shape = *cml_buffer_shape(out[i]);
      t->size = cml_shape_byte_size(&t->shape);
      t->data = calloc(1, t->size ? t->size : 1);
      r->count = i + 1;
      if (!t->data) {
        st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      } else {
        st = cml_buffer_copy_to_host(out[i], t->data, t->size);
      }
    }
  }
  for (size_t i = 0; i < DT_MAX_INPUTS; ++i) cml_buffer_release(in[i]);
  for (size_t i = 0; i < DT_MAX_OUTPUTS; ++i) cml_buffer_release(out[i]);
  cml_executable_release(exe);
  r->status = st;
}

//===--- comparing ---===//

// Maximum observed error per (op, dtype, tolerance kind).
typedef struct dt_bound_t {
  char op[48];
  cml_dtype_t dtype;
  dt_cmp_t kind;
  double bound;
  double max_seen;
  size_t cases;
} dt_bound_t;
static dt_bound_t dt_bounds[1024];
static size_t dt_bound_count;

static dt_bound_t* dt_bound_slot(const char* op, cml_dtype_t dtype, dt_tol_t tol) {
  for (size_t i = 0; i < dt_bound_count; ++i) {
    dt_bound_t* b = &dt_bounds[i];
    if (b->dtype == dtype && b->kind == tol.kind && strcmp(b->op, op) == 0) return b;
  }
  if (dt_bound_count == sizeof dt_bounds / sizeof dt_bounds[0]) return NULL;
  dt_bound_t* b = &dt_bounds[dt_bound_count++];
  snprintf(b->op, sizeof b->op, "%s", op);
  b->dtype = dtype;
  b->kind = tol.kind;
  b->bound = tol.bound;
  return b;
}

void dt_print_bounds(void) {
  printf("-- observed maximum errors (op, output dtype, comparison, bound, max seen, cases)\n");
  for (size_t i = 0; i < dt_bound_count; ++i) {
    const dt_bound_t* b = &dt_bounds[i];
    if (b->kind == DT_EXACT) continue;
    printf("   %-28s %-10s %-5s bound %-8g max %-10.4g (%zu)\n", b->op, cml_dtype_name(b->dtype),
           b->kind == DT_ULPS ? "ulps" : "rel", b->bound, b->max_seen, b->cases);
  }
}

// Bit-pattern ordering for ulp distances: maps a float to an integer that grows with it.
static int64_t dt_ordered(cml_dtype_t d, const void* p, int64_t i) {
  switch (d) {
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16: {
      int16_t s = ((const int16_t*)p)[i];
      return s < 0 ? INT16_MIN - (int64_t)s : s;
    }
    case CML_DTYPE_F32:
    case CML_DTYPE_C64: {
      int32_t s;
      memcpy(&s, (const char*)p + 4 * i, 4);
      return s < 0 ? INT32_MIN - (int64_t)s : s;
    }
    default: {
      int64_t s;
      memcpy(&s, (const char*)p + 8 * i, 8);
      return s < 0 ? INT64_MIN - s : s;  // no overflow: s in [INT64_MIN, -1]
    }
  }
}

// The distance in ulps of element |i| of |a| and |b| (exact in integers, then rounded).
static double dt_ulp_distance(cml_dtype_t d, const void* a, const void* b, int64_t i) {
  int64_t x = dt_ordered(d, a, i), y = dt_ordered(d, b, i);
  uint64_t diff = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
  return (double)diff;
}

static bool dt_is_nan_bits(cml_dtype_t d, const void* p, int64_t i) {
  return isnan(dt_get_f64(d, p, i));
}

// Formats element |i| of a tensor: value and, for floats, the bit pattern.
static void dt_format(cml_dtype_t d, const void* p, int64_t i, char* buf, size_t size) {
  if (cml_dtype_is_complex(d)) {
    double re, im;
    if (d == CML_DTYPE_C64) {
      re = ((const float*)p)[2 * i];
      im = ((const float*)p)[2 * i + 1];
      snprintf(buf, size, "(%.9g, %.9g)", re, im);
    } else {
      re = ((const double*)p)[2 * i];
      im = ((const double*)p)[2 * i + 1];
      snprintf(buf, size, "(%.17g, %.17g)", re, im);
    }
  } else if (cml_dtype_is_float(d)) {
    uint64_t bits = 0;
    memcpy(&bits, (const char*)p + (size_t)dt_elem_bytes(d) * (size_t)i, (size_t)dt_elem_bytes(d));
    snprintf(buf, size, "%.17g [0x%0*" PRIx64 "]", dt_get_f64(d, p, i), dt_elem_bytes(d) * 2, bits);
  } else if (cml_dtype_is_unsigned_int(d)) {
    snprintf(buf, size, "%" PRIu64, (uint64_t)dt_get_i64(d, p, i));
  } else {
    snprintf(buf, size, "%" PRId64, dt_get_i64(d, p, i));
  }
}

// The error of element |i| (>= 0), or INFINITY when the two can never agree (NaN vs number,
// different infinities, different integers). For exact comparison 0 or INFINITY.
static double dt_element_error(cml_dtype_t d, const void* a, const void* b, int64_t i,
                               dt_tol_t tol) {
  if (!cml_dtype_is_float(d) && !cml_dtype_is_complex(d)) {
    int bytes = dt_elem_bytes(d);
    return memcmp((const char*)a + (size_t)bytes * (size_t)i,
                  (const char*)b + (size_t)bytes * (size_t)i, (size_t)bytes) == 0
               ? 0
               : INFINITY;
  }
  if (cml_dtype_is_complex(d)) {
    cml_dtype_t r = cml_dtype_real_part(d);
    double ar = dt_get_f64(r, a, 2 * i), ai = dt_get_f64(r, a, 2 * i + 1);
    double br = dt_get_f64(r, b, 2 * i), bi = dt_get_f64(r, b, 2 * i + 1);
    if (tol.kind == DT_EXACT) {
      double e1 = dt_element_error(r, a, b, 2 * i, tol);
      double e2 = dt_element_error(r, a, b, 2 * i + 1, tol);
      return e1 > e2 ? e1 : e2;
    }
    bool an = isnan(ar) || isnan(ai), bn = isnan(br) || isnan(bi);
    if (an || bn) return an == bn ? 0 : INFINITY;
    bool ainf = isinf(ar) || isinf(ai), binf = isinf(br) || isinf(bi);
    if (ainf || binf) {  // infinite components must match; finite ones are compared alone
      double e1 = dt_element_error(r, a, b, 2 * i, tol);
      double e2 = dt_element_error(r, a, b, 2 * i + 1, tol);
      return e1 > e2 ? e1 : e2;
    }
    double diff = hypot(ar - br, ai - bi);
    if (diff == 0) return 0;
    double mag = fmax(hypot(ar, ai), hypot(br, bi));
    if (tol.kind == DT_REL) mag = fmax(mag, tol.scale);
    double denom = fmax(mag * dt_eps(r), dt_float_info(r).denorm_min);
    return diff / denom;
  }
  bool an = dt_is_nan_bits(d, a, i), bn = dt_is_nan_bits(d, b, i);
  if (an || bn) return an == bn ? 0 : INFINITY;
  double av = dt_get_f64(d, a, i), bv = dt_get_f64(d, b, i);
  if (dt.denormals_flushed) {  // a result flushed to zero on one side (any float dtype)
    double tiny = dt_float_info(d).min_normal;
    if ((av == 0 && fabs(bv) < tiny) || (bv == 0 && fabs(av) < tiny)) return 0;
  }
  if (tol.kind == DT_EXACT) {
    return dt_ordered(d, a, i) == dt_ordered(d, b, i) ? 0 : INFINITY;
  }
  if (isinf(av) || isinf(bv)) return av == bv ? 0 : INFINITY;
  if (tol.kind == DT_ULPS) return dt_ulp_distance(d, a, b, i);
  double diff = fabs(av - bv);
  if (diff == 0) return 0;
  double mag = fmax(fmax(fabs(av), fabs(bv)), tol.scale > 0 ? tol.scale : 1.0);
  return diff / (mag * dt_eps(d));
}

// Accepted differences, by reason.
typedef struct dt_known_count_t {
  const char* reason;
  size_t elements, cases;
} dt_known_count_t;
static dt_known_count_t dt_known_counts[64];
static size_t dt_known_reason_count;

static void dt_known_add(const char* reason, bool first_in_case) {
  for (size_t i = 0; i < dt_known_reason_count; ++i) {
    if (strcmp(dt_known_counts[i].reason, reason) == 0) {
      ++dt_known_counts[i].elements;
      if (first_in_case) ++dt_known_counts[i].cases;
      return;
    }
  }
  if (dt_known_reason_count < sizeof dt_known_counts / sizeof dt_known_counts[0]) {
    dt_known_counts[dt_known_reason_count++] = (dt_known_count_t){reason, 1, 1};
  }
}

void dt_print_known(void) {
  if (dt_known_reason_count == 0) return;
  printf("-- accepted differences (docs/differential.md): elements, cases, reason\n");
  for (size_t i = 0; i < dt_known_reason_count; ++i) {
    printf("   %6zu %4zu  %s\n", dt_known_counts[i].elements, dt_known_counts[i].cases,
           dt_known_counts[i].reason);
  }
}

static void dt_print_label(const dt_case_t* c) {
  printf("%s %s%s%s", c->op, cml_dtype_name(c->dtype), c->variant[0] ? " " : "", c->variant);
}

void dt_check(dt_case_t* c) {
  if (!dt_selected(c->op, c->dtype)) return;
  dt_result_t rc, rx;
  dt_run(dt.c, c, &rc);
  dt_run(dt.xla, c, &rx);
  cml_status_code_t cc = cml_status_code(rc.status), xc = cml_status_code(rx.status);
  if (cc == CML_STATUS_UNIMPLEMENTED || xc == CML_STATUS_UNIMPLEMENTED) {
    ++dt.skipped;
    if (dt.verbose) {
      printf("skip ");
      dt_print_label(c);
      printf(": %s\n", cml_status_message(cc == CML_STATUS_UNIMPLEMENTED ? rc.status : rx.status));
    }
    dt_result_free(&rc);
    dt_result_free(&rx);
    return;
  }
  // The core's builder rejecting the combination on both sides (e.g. a Bitcast it does not
  // allow) involves no backend: skipped, not compared.
  if (cc != CML_STATUS_OK && cc == xc && strcmp(rc.stage, "build") == 0 &&
      strcmp(rx.stage, "build") == 0) {
    ++dt.skipped;
    if (dt.verbose) {
      printf("skip ");
      dt_print_label(c);
      printf(": rejected by the builder on both backends: %s\n", cml_status_message(rc.status));
    }
    dt_result_free(&rc);
    dt_result_free(&rx);
    return;
  }
  bool agree = true;
  if (cc != CML_STATUS_OK || xc != CML_STATUS_OK) {
    agree = false;
    printf("DISAGREE ");
    dt_print_label(c);
    printf(": error\n    c   (%s): %s\n    xla (%s): %s\n", rc.stage,
           cc ? cml_status_message(rc.status) : "ok", rx.stage,
           xc ? cml_status_message(rx.status) : "ok");
  } else if (rc.count != rx.count) {
    agree = false;
    printf("DISAGREE ");
    dt_print_label(c);
    printf(": output count c %zu, xla %zu\n", rc.count, rx.count);
  }
  for (size_t o = 0; agree && o < rc.count; ++o) {
    const dt_tensor_t* a = &rc.outputs[o];
    const dt_tensor_t* b = &rx.outputs[o];
    if (!cml_shape_equal(&a->shape, &b->shape)) {
      char sa[128], sb[128];
      printf("DISAGREE ");
      dt_print_label(c);
      printf(": output %zu shape c %s, xla %s\n", o, cml_shape_format(&a->shape, sa, sizeof sa),
             cml_shape_format(&b->shape, sb, sizeof sb));
      agree = false;
      break;
    }
    dt_tol_t tol = c->output_tol[o].kind || c->output_tol[o].bound ? c->output_tol[o] : c->tol;
    cml_dtype_t d = a->shape.dtype;
    bool exact_only = !cml_dtype_is_float(d) && !cml_dtype_is_complex(d);
    if (exact_only) tol.kind = DT_EXACT;
    int64_t n = cml_shape_element_count(&a->shape);
    double worst = 0;
    int64_t bad = 0;
    size_t known_in_case = 0;
    for (int64_t i = 0; i < n; ++i) {
      double e = dt_element_error(d, a->data, b->data, i, tol);
      bool ok = tol.kind == DT_EXACT ? e == 0 : e <= tol.bound;
      const char* reason = NULL;
      if (!ok && c->known) reason = c->known(c, o, i, a->data, b->data);
      if (!reason && isfinite(e) && e > worst) worst = e;
      if (ok) continue;
      if (reason) {
        dt_known_add(reason, known_in_case++ == 0);
        if (dt.verbose >= 3) {
          char va[96], vb[96];
          dt_format(d, a->data, i, va, sizeof va);
          dt_format(d, b->data, i, vb, sizeof vb);
          printf("known ");
          dt_print_label(c);
          printf(" [%" PRId64 "] c=%s xla=%s: %s\n", i, va, vb, reason);
        }
        continue;
      }
      if (bad++ == 0) {
        printf("DISAGREE ");
        dt_print_label(c);
        printf(" (output %zu, %s", o, tol.kind == DT_EXACT ? "exact" : "");
        if (tol.kind != DT_EXACT) {
          printf("%s <= %g", tol.kind == DT_ULPS ? "ulps" : "rel", tol.bound);
        }
        printf(")\n");
      }
      if (bad <= 8 || dt.verbose >= 3) {
        char va[96], vb[96];
        dt_format(d, a->data, i, va, sizeof va);
        dt_format(d, b->data, i, vb, sizeof vb);
        printf("    [%" PRId64 "]", i);
        for (size_t k = 0; k < c->input_count; ++k) {
          const dt_tensor_t* in = &c->inputs[k];
          if (cml_shape_element_count(&in->shape) == n) {
            char vi[96];
            dt_format(in->shape.dtype, in->data, i, vi, sizeof vi);
            printf(" in%zu=%s", k, vi);
          } else if (cml_shape_element_count(&in->shape) == 1) {
            char vi[96];
            dt_format(in->shape.dtype, in->data, 0, vi, sizeof vi);
            printf(" in%zu=%s", k, vi);
          }
        }
        printf("\n        c=%s xla=%s", va, vb);
        if (tol.kind != DT_EXACT && isfinite(e)) printf(" (err %.3g)", e);
        printf("\n");
      }
    }
    if (bad) {
      printf("    %" PRId64 " of %" PRId64 " elements differ\n", bad, n);
      agree = false;
    }
    if (tol.kind != DT_EXACT) {
      dt_bound_t* slot = dt_bound_slot(c->op, d, tol);
      if (slot) {
        if (worst > slot->max_seen) slot->max_seen = worst;
        ++slot->cases;
      }
    }
  }
  if (agree) {
    ++dt.agreed;
    if (dt.verbose >= 2) {
      printf("ok   ");
      dt_print_label(c);
      printf("\n");
    }
  } else {
    ++dt.disagreed;
  }
  dt_result_free(&rc);
  dt_result_free(&rx);
}
