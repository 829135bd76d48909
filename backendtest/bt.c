// SPDX-License-Identifier: Apache-2.0
// backendtest/bt.c: the case-writing helpers of the compliance suite (see bt.h): case-owned
// resources, tensor conversions, building and running, and result comparisons.
#include "backendtest/bt.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backendtest/bt_internal.h"

// Messages longer than this are cut (a case with thousands of mismatches stays readable).
#define BT_MESSAGE_LIMIT (16 * 1024)
// Mismatching elements listed per comparison before the rest is only counted.
#define BT_MISMATCH_LINES 8

//===--- case lifetime ---===//

uint64_t bt_hash_string(const char* text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  for (const unsigned char* p = (const unsigned char*)(text ? text : ""); *p; ++p) {
    h ^= *p;
    h *= 0x100000001b3ull;  // FNV-1a prime
  }
  return h;
}

void bt_case_begin(bt_t* t, cml_backend_t* backend, const char* group, const char* name) {
  memset(t, 0, sizeof *t);
  t->backend = backend;
  t->group = group ? group : "";
  t->name = name ? name : "";
  // Seed from "<group>/<name>" so every case draws its own reproducible sequence.
  uint64_t h = bt_hash_string(t->group);
  h ^= '/';
  h *= 0x100000001b3ull;
  for (const unsigned char* p = (const unsigned char*)t->name; *p; ++p) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  t->rng_state = h ? h : 0x9e3779b97f4a7c15ull;
}

static void bt__release_resource(bt_resource_t* r) {
  switch (r->kind) {
    case BT_RES_MEMORY:
      free(r->ptr);
      break;
    case BT_RES_BUILDER:
      cml_builder_destroy((cml_builder_t*)r->ptr);
      break;
    case BT_RES_EXECUTABLE:
      cml_executable_release((cml_executable_t*)r->ptr);
      break;
    case BT_RES_BUFFER:
      cml_buffer_release((cml_buffer_t*)r->ptr);
      break;
  }
  r->ptr = NULL;
}

bt_result_t bt_case_end(bt_t* t) {
  // Buffers and executables go before the builders and memory they may refer to: reverse
  // order of acquisition gives exactly that.
  for (size_t i = t->resource_count; i > 0; --i) bt__release_resource(&t->resources[i - 1]);
  free(t->resources);
  t->resources = NULL;
  t->resource_count = t->resource_cap = 0;
  free(t->inputs);
  t->inputs = NULL;
  t->input_count = t->input_cap = 0;
  t->builder = NULL;
  if (t->out_of_memory && t->result != BT_RESULT_FAILED) {
    t->result = BT_RESULT_FAILED;
  }
  return t->result;
}

const char* bt_case_message(const bt_t* t) { return t->message ? t->message : ""; }

void bt_case_clear(bt_t* t) {
  free(t->message);
  t->message = NULL;
  t->message_len = t->message_cap = 0;
}

//===--- messages and results ---===//

static void bt__append_message_v(bt_t* t, const char* fmt, va_list args) {
  if (t->message_len >= BT_MESSAGE_LIMIT) return;
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return;
  size_t need = t->message_len + (t->message_len ? 1 : 0) + (size_t)n + 1;
  if (need > t->message_cap) {
    size_t cap = t->message_cap ? t->message_cap * 2 : 256;
    while (cap < need) cap *= 2;
    char* grown = realloc(t->message, cap);
    if (!grown) {
      t->out_of_memory = true;
      return;
    }
    t->message = grown;
    t->message_cap = cap;
  }
  if (t->message_len) t->message[t->message_len++] = '\n';
  vsnprintf(t->message + t->message_len, (size_t)n + 1, fmt, args);
  t->message_len += (size_t)n;
  if (t->message_len >= BT_MESSAGE_LIMIT) {
    static const char cut[] = "\n... (further messages cut)";
    char* grown = realloc(t->message, t->message_len + sizeof cut);
    if (grown) {
      t->message = grown;
      memcpy(t->message + t->message_len, cut, sizeof cut);
      t->message_len += sizeof cut - 1;
      t->message_cap = t->message_len + 1;
    }
  }
}

void bt_fail(bt_t* t, const char* fmt, ...) {
  t->result = BT_RESULT_FAILED;
  ++t->failure_count;
  va_list args;
  va_start(args, fmt);
  bt__append_message_v(t, fmt, args);
  va_end(args);
}

void bt_unsupported(bt_t* t, const char* fmt, ...) {
  // A failure outranks "unsupported", and the first reason is the one worth reading.
  if (t->result != BT_RESULT_OK) return;
  t->result = BT_RESULT_UNSUPPORTED;
  va_list args;
  va_start(args, fmt);
  bt__append_message_v(t, fmt, args);
  va_end(args);
}

bool bt_failed(const bt_t* t) { return t->result == BT_RESULT_FAILED; }

cml_backend_t* bt_backend(bt_t* t) { return t->backend; }

cml_backend_t* bt_set_backend(bt_t* t, cml_backend_t* backend) {
  cml_backend_t* old = t->backend;
  t->backend = backend;
  return old;
}

void bt_count_execution(bt_t* t) { ++t->executions; }

bool bt_ok(bt_t* t, cml_status_t status, const char* what) {
  if (status == CML_OK) return true;
  cml_status_code_t code = cml_status_code(status);
  if (code == CML_STATUS_UNIMPLEMENTED) {
    bt_unsupported(t, "%s: %s", what ? what : "call", cml_status_message(status));
  } else {
    bt_fail(t, "%s: %s: %s", what ? what : "call", cml_status_code_name(code),
            cml_status_message(status));
  }
  cml_status_free(status);
  return false;
}

bool bt_require_op(bt_t* t, cml_op_t op) {
  const cml_capabilities_t* caps = t->backend ? cml_backend_capabilities(t->backend) : NULL;
  if (caps && cml_capabilities_has_op(caps, op)) {
    t->op_required = true;
    return true;
  }
  bt_unsupported(t, "the backend does not support op %s", cml_op_name(op));
  return false;
}

bool bt_require_dtype(bt_t* t, cml_dtype_t dtype) {
  const cml_capabilities_t* caps = t->backend ? cml_backend_capabilities(t->backend) : NULL;
  if (caps && cml_capabilities_has_dtype(caps, dtype)) return true;
  bt_unsupported(t, "the backend does not support dtype %s", cml_dtype_name(dtype));
  return false;
}

bool bt_require_functions(bt_t* t) {
  const cml_capabilities_t* caps = t->backend ? cml_backend_capabilities(t->backend) : NULL;
  if (caps && caps->functions) return true;
  bt_unsupported(t, "the backend does not support functions (closures, Call, While, If, Sort)");
  return false;
}

//===--- owned resources ---===//

static bool bt__own(bt_t* t, bt_resource_kind_t kind, void* ptr) {
  if (!ptr) return true;
  if (t->resource_count == t->resource_cap) {
    size_t cap = t->resource_cap ? t->resource_cap * 2 : 32;
    bt_resource_t* grown = realloc(t->resources, cap * sizeof *grown);
    if (!grown) {
      // Release now rather than leak; the case fails.
      bt_resource_t r = {kind, ptr};
      bt__release_resource(&r);
      t->out_of_memory = true;
      bt_fail(t, "out of memory in the test harness");
      return false;
    }
    t->resources = grown;
    t->resource_cap = cap;
  }
  t->resources[t->resource_count].kind = kind;
  t->resources[t->resource_count].ptr = ptr;
  ++t->resource_count;
  return true;
}

void* bt_alloc(bt_t* t, size_t size) {
  void* p = calloc(1, size ? size : 1);
  if (!p) {
    t->out_of_memory = true;
    bt_fail(t, "out of memory in the test harness (%zu bytes)", size);
    return NULL;
  }
  return bt__own(t, BT_RES_MEMORY, p) ? p : NULL;
}

void bt_own_buffer(bt_t* t, cml_buffer_t* buffer) { (void)bt__own(t, BT_RES_BUFFER, buffer); }

void bt_own_executable(bt_t* t, cml_executable_t* executable) {
  (void)bt__own(t, BT_RES_EXECUTABLE, executable);
}

//===--- element encoding ---===//

// Bits of one stored component: the element for real dtypes, re or im for complex ones.
static int bt__component_bits(cml_dtype_t dtype) {
  int bits = cml_dtype_bits(dtype);
  return cml_dtype_is_complex(dtype) ? bits / 2 : bits;
}

static int bt__component_count(cml_dtype_t dtype) { return cml_dtype_is_complex(dtype) ? 2 : 1; }

// Stores the low |width| bits of |bits| as component |index| of |data| (packed little-endian
// for widths below 8).
static void bt__store_bits(void* data, int width, int64_t index, uint64_t bits) {
  uint8_t* p = (uint8_t*)data;
  switch (width) {
    case 8:
      p[index] = (uint8_t)bits;
      return;
    case 16: {
      uint16_t v = (uint16_t)bits;
      memcpy(p + index * 2, &v, 2);
      return;
    }
    case 32: {
      uint32_t v = (uint32_t)bits;
      memcpy(p + index * 4, &v, 4);
      return;
    }
    case 64:
      memcpy(p + index * 8, &bits, 8);
      return;
    default: {
      if (width <= 0 || width > 8) return;
      uint64_t bit = (uint64_t)index * (uint64_t)width;
      unsigned shift = (unsigned)(bit % 8);
      uint8_t mask = (uint8_t)(((1u << width) - 1u) << shift);
      p[bit / 8] = (uint8_t)((p[bit / 8] & ~mask) | (((unsigned)bits << shift) & mask));
      return;
    }
  }
}

static uint64_t bt__load_bits(const void* data, int width, int64_t index) {
  const uint8_t* p = (const uint8_t*)data;
  switch (width) {
    case 8:
      return p[index];
    case 16: {
      uint16_t v;
      memcpy(&v, p + index * 2, 2);
      return v;
    }
    case 32: {
      uint32_t v;
      memcpy(&v, p + index * 4, 4);
      return v;
    }
    case 64: {
      uint64_t v;
      memcpy(&v, p + index * 8, 8);
      return v;
    }
    default: {
      if (width <= 0 || width > 8) return 0;
      uint64_t bit = (uint64_t)index * (uint64_t)width;
      return (uint64_t)((p[bit / 8] >> (bit % 8)) & ((1u << width) - 1u));
    }
  }
}

static bool bt__is_float_component(cml_dtype_t component) { return cml_dtype_is_float(component); }

static uint64_t bt__float_bits(cml_dtype_t component, double value) {
  switch (component) {
    case CML_DTYPE_F16:
      return cml_f64_to_f16(value);
    case CML_DTYPE_BF16:
      return cml_f64_to_bf16(value);
    case CML_DTYPE_F32: {
      float f = (float)value;
      uint32_t u;
      memcpy(&u, &f, 4);
      return u;
    }
    case CML_DTYPE_F64: {
      uint64_t u;
      memcpy(&u, &value, 8);
      return u;
    }
    default:
      return 0;
  }
}

static double bt__float_value(cml_dtype_t component, uint64_t bits) {
  switch (component) {
    case CML_DTYPE_F16:
      return cml_f16_to_f32((uint16_t)bits);
    case CML_DTYPE_BF16:
      return cml_bf16_to_f32((uint16_t)bits);
    case CML_DTYPE_F32: {
      uint32_t u = (uint32_t)bits;
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    case CML_DTYPE_F64: {
      double d;
      memcpy(&d, &bits, 8);
      return d;
    }
    default:
      return NAN;
  }
}

// Sign-extends the low |width| bits.
static int64_t bt__sign_extend(uint64_t bits, int width) {
  if (width >= 64) return (int64_t)bits;
  uint64_t sign = (uint64_t)1 << (width - 1);
  uint64_t low = bits & ((sign << 1) - 1);
  return (int64_t)(low ^ sign) - (int64_t)sign;
}

// Converts a double to int64 the way a cast does for in-range values, saturating outside the
// range (NaN gives 0), so the helpers never invoke undefined behaviour.
static int64_t bt__double_to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

static uint64_t bt__int_bits_from_double(cml_dtype_t dtype, double v) {
  if (cml_dtype_is_unsigned_int(dtype) && v >= 9223372036854775808.0) {
    return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
  }
  return (uint64_t)bt__double_to_i64(v);
}

static bool bt__make_shape(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                           cml_shape_t* out) {
  cml_status_t st = cml_shape_init(out, dtype, rank, dims);
  if (st != CML_OK) {
    bt_fail(t, "bad tensor shape in the case: %s", cml_status_message(st));
    cml_status_free(st);
    memset(out, 0, sizeof *out);
    return false;
  }
  return true;
}

// A zero-filled case-owned tensor of the given shape (data NULL on failure).
static bt_tensor_t bt__tensor_alloc(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  bt_tensor_t x;
  memset(&x, 0, sizeof x);
  if (!bt__make_shape(t, dtype, rank, dims, &x.shape)) return x;
  size_t size = cml_shape_byte_size(&x.shape);
  x.data = bt_alloc(t, size);
  x.size = x.data ? size : 0;
  return x;
}

bt_tensor_t bt_tensor(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                      const void* data) {
  bt_tensor_t x = bt__tensor_alloc(t, dtype, rank, dims);
  if (x.data && data && x.size) memcpy(x.data, data, x.size);
  return x;
}

bt_tensor_t bt_tensor_f64(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                          const double* values) {
  bt_tensor_t x = bt__tensor_alloc(t, dtype, rank, dims);
  if (!x.data || !values) return x;
  int64_t n = cml_shape_element_count(&x.shape);
  cml_dtype_t component = cml_dtype_real_part(dtype);
  int width = bt__component_bits(dtype);
  for (int64_t i = 0; i < n; ++i) {
    double v = values[i];
    if (dtype == CML_DTYPE_BOOL) {
      bt__store_bits(x.data, 8, i, v != 0 ? 1 : 0);
    } else if (cml_dtype_is_complex(dtype)) {
      bt__store_bits(x.data, width, 2 * i, bt__float_bits(component, v));
      bt__store_bits(x.data, width, 2 * i + 1, bt__float_bits(component, 0.0));
    } else if (cml_dtype_is_float(dtype)) {
      bt__store_bits(x.data, width, i, bt__float_bits(dtype, v));
    } else {
      bt__store_bits(x.data, width, i, bt__int_bits_from_double(dtype, v));
    }
  }
  return x;
}

bt_tensor_t bt_tensor_i64(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                          const int64_t* values) {
  bt_tensor_t x = bt__tensor_alloc(t, dtype, rank, dims);
  if (!x.data || !values) return x;
  int64_t n = cml_shape_element_count(&x.shape);
  cml_dtype_t component = cml_dtype_real_part(dtype);
  int width = bt__component_bits(dtype);
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = values[i];
    if (dtype == CML_DTYPE_BOOL) {
      bt__store_bits(x.data, 8, i, v != 0 ? 1 : 0);
    } else if (cml_dtype_is_complex(dtype)) {
      bt__store_bits(x.data, width, 2 * i, bt__float_bits(component, (double)v));
      bt__store_bits(x.data, width, 2 * i + 1, bt__float_bits(component, 0.0));
    } else if (dtype == CML_DTYPE_F32) {
      // One rounding, straight from the integer.
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      bt__store_bits(x.data, 32, i, u);
    } else if (cml_dtype_is_float(dtype)) {
      bt__store_bits(x.data, width, i, bt__float_bits(dtype, (double)v));
    } else {
      bt__store_bits(x.data, width, i, (uint64_t)v);
    }
  }
  return x;
}

bt_tensor_t bt_tensor_c(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                        const double* re_im) {
  if (!cml_dtype_is_complex(dtype)) {
    bt_fail(t, "bt_tensor_c: %s is not a complex dtype", cml_dtype_name(dtype));
    bt_tensor_t x;
    memset(&x, 0, sizeof x);
    return x;
  }
  bt_tensor_t x = bt__tensor_alloc(t, dtype, rank, dims);
  if (!x.data || !re_im) return x;
  int64_t n = cml_shape_element_count(&x.shape);
  cml_dtype_t component = cml_dtype_real_part(dtype);
  int width = bt__component_bits(dtype);
  for (int64_t i = 0; i < 2 * n; ++i) {
    bt__store_bits(x.data, width, i, bt__float_bits(component, re_im[i]));
  }
  return x;
}

static bool bt__tensor_readable(const bt_tensor_t* x, int64_t i) {
  if (!x || !x->data || !cml_dtype_is_valid(x->shape.dtype)) return false;
  if (i < 0 || i >= cml_shape_element_count(&x->shape)) return false;
  return x->size >= cml_shape_byte_size(&x->shape);
}

double bt_get_f64(const bt_tensor_t* x, int64_t i) {
  if (!bt__tensor_readable(x, i)) return NAN;
  cml_dtype_t dtype = x->shape.dtype;
  cml_dtype_t component = cml_dtype_real_part(dtype);
  int width = bt__component_bits(dtype);
  int64_t index = cml_dtype_is_complex(dtype) ? 2 * i : i;
  uint64_t bits = bt__load_bits(x->data, width, index);
  if (bt__is_float_component(component)) return bt__float_value(component, bits);
  if (dtype == CML_DTYPE_BOOL) return bits != 0 ? 1.0 : 0.0;
  if (cml_dtype_is_signed_int(dtype)) return (double)bt__sign_extend(bits, width);
  return (double)bits;
}

int64_t bt_get_i64(const bt_tensor_t* x, int64_t i) {
  if (!bt__tensor_readable(x, i)) return 0;
  cml_dtype_t dtype = x->shape.dtype;
  cml_dtype_t component = cml_dtype_real_part(dtype);
  int width = bt__component_bits(dtype);
  int64_t index = cml_dtype_is_complex(dtype) ? 2 * i : i;
  uint64_t bits = bt__load_bits(x->data, width, index);
  if (bt__is_float_component(component)) {
    return bt__double_to_i64(bt__float_value(component, bits));
  }
  if (dtype == CML_DTYPE_BOOL) return bits != 0;
  if (cml_dtype_is_signed_int(dtype)) return bt__sign_extend(bits, width);
  return (int64_t)bits;
}

//===--- building ---===//

cml_builder_t* bt_builder(bt_t* t) {
  if (t->builder) return t->builder;
  return bt_new_builder(t);
}

cml_builder_t* bt_new_builder(bt_t* t) {
  if (!t->backend) {
    bt_fail(t, "no backend to build for");
    return NULL;
  }
  cml_builder_t* b = NULL;
  if (!bt_ok(t, cml_builder_create(t->backend, t->name, &b), "cml_builder_create")) return NULL;
  if (!bt__own(t, BT_RES_BUILDER, b)) return NULL;
  t->builder = b;
  return b;
}

cml_function_t* bt_main(bt_t* t) {
  cml_builder_t* b = bt_builder(t);
  return b ? cml_builder_main(b) : NULL;
}

cml_value_t bt_param(bt_t* t, cml_function_t* f, const bt_tensor_t* value) {
  if (!f || !value) {
    bt_fail(t, "bt_param: %s", f ? "no value" : "no function");
    return CML_VALUE_INVALID;
  }
  cml_builder_t* b = cml_function_builder(f);
  if (!b || cml_builder_main(b) != f) {
    bt_fail(t, "bt_param: parameters fed by bt_exec belong to a builder's main function");
    return CML_VALUE_INVALID;
  }
  if (t->input_count == t->input_cap) {
    size_t cap = t->input_cap ? t->input_cap * 2 : 8;
    bt_input_t* grown = realloc(t->inputs, cap * sizeof *grown);
    if (!grown) {
      t->out_of_memory = true;
      bt_fail(t, "out of memory in the test harness");
      return CML_VALUE_INVALID;
    }
    t->inputs = grown;
    t->input_cap = cap;
  }
  // Keep a private copy of the data: the caller's storage may not outlive bt_exec.
  bt_input_t* in = &t->inputs[t->input_count];
  in->builder = b;
  in->value = *value;
  size_t size = value->size;
  if (value->data && size) {
    in->value.data = bt_alloc(t, size);
    if (!in->value.data) return CML_VALUE_INVALID;
    memcpy(in->value.data, value->data, size);
  }
  ++t->input_count;
  return cml_parameter(f, NULL, &value->shape);
}

cml_value_t bt_param_f64(bt_t* t, cml_function_t* f, cml_dtype_t dtype, int32_t rank,
                         const int64_t* dims, const double* values) {
  bt_tensor_t x = bt_tensor_f64(t, dtype, rank, dims, values);
  return bt_param(t, f, &x);
}

cml_value_t bt_param_i64(bt_t* t, cml_function_t* f, cml_dtype_t dtype, int32_t rank,
                         const int64_t* dims, const int64_t* values) {
  bt_tensor_t x = bt_tensor_i64(t, dtype, rank, dims, values);
  return bt_param(t, f, &x);
}

cml_value_t bt_const(bt_t* t, cml_function_t* f, const bt_tensor_t* value) {
  if (!f || !value) {
    bt_fail(t, "bt_const: %s", f ? "no value" : "no function");
    return CML_VALUE_INVALID;
  }
  return cml_constant(f, &value->shape, value->data);
}

//===--- running ---===//

cml_executable_t* bt_compile(bt_t* t, const cml_value_t* outputs, size_t count) {
  cml_builder_t* b = bt_builder(t);
  if (!b) return NULL;
  if (!bt_ok(t, cml_function_return(cml_builder_main(b), outputs, count), "cml_function_return")) {
    return NULL;
  }
  cml_executable_t* exe = NULL;
  if (!bt_ok(t, cml_builder_compile(b, &exe), "cml_builder_compile")) return NULL;
  if (!bt__own(t, BT_RES_EXECUTABLE, exe)) return NULL;
  return exe;
}

cml_buffer_t* bt_upload(bt_t* t, int device, const bt_tensor_t* value) {
  if (!t->backend || !value) {
    bt_fail(t, "bt_upload: %s", t->backend ? "no value" : "no backend");
    return NULL;
  }
  char what[96];
  char shape_text[96];
  snprintf(what, sizeof what, "cml_buffer_from_host(%s, device %d)",
           cml_shape_format(&value->shape, shape_text, sizeof shape_text), device);
  cml_buffer_t* buf = NULL;
  if (!bt_ok(
          t,
          cml_buffer_from_host(t->backend, device, &value->shape, value->data, value->size, &buf),
          what)) {
    return NULL;
  }
  return bt__own(t, BT_RES_BUFFER, buf) ? buf : NULL;
}

bool bt_download(bt_t* t, cml_buffer_t* buffer, bt_tensor_t* out) {
  memset(out, 0, sizeof *out);
  if (!buffer) {
    bt_fail(t, "bt_download: no buffer");
    return false;
  }
  const cml_shape_t* shape = cml_buffer_shape(buffer);
  if (!shape) {
    bt_fail(t, "bt_download: the buffer has no shape");
    return false;
  }
  bt_tensor_t x = bt__tensor_alloc(t, shape->dtype, shape->rank, shape->dims);
  if (!x.data) return false;
  char what[96];
  char shape_text[80];
  snprintf(what, sizeof what, "cml_buffer_copy_to_host(%s)",
           cml_shape_format(shape, shape_text, sizeof shape_text));
  if (!bt_ok(t, cml_buffer_copy_to_host(buffer, x.data, x.size), what)) return false;
  *out = x;
  return true;
}

// Whether a result's |shape| is |declared|: equal, or concrete where |declared| has dynamic
// axes (cml/shape.h) with the same dtype, rank and static dims.
static bool bt_shape_matches(const cml_shape_t* declared, const cml_shape_t* shape) {
  if (!cml_shape_is_dynamic(declared)) return cml_shape_equal(declared, shape);
  cml_axis_bindings_t b;
  cml_axis_bindings_init(&b);
  cml_status_t st = cml_shape_extract_bindings(declared, shape, &b);
  bool ok = st == CML_OK;
  cml_status_free(st);
  return ok;
}

bool bt_run(bt_t* t, cml_executable_t* exe, const bt_tensor_t* inputs, size_t input_count,
            int device, bt_tensor_t* out, size_t out_count) {
  for (size_t i = 0; i < out_count; ++i) memset(&out[i], 0, sizeof out[i]);
  if (!exe) {
    bt_fail(t, "bt_run: no executable");
    return false;
  }
  size_t want_inputs = cml_executable_input_count(exe);
  if (want_inputs != input_count) {
    bt_fail(t, "the executable takes %zu inputs but the case supplied %zu", want_inputs,
            input_count);
    return false;
  }
  size_t n_out = cml_executable_output_count(exe);
  if (n_out != out_count) {
    bt_fail(t, "the executable has %zu outputs, want %zu", n_out, out_count);
    return false;
  }
  cml_buffer_t** args = bt_alloc(t, (input_count + 1) * sizeof *args);
  cml_buffer_t** results = bt_alloc(t, (n_out + 1) * sizeof *results);
  if (!args || !results) return false;
  for (size_t i = 0; i < input_count; ++i) {
    args[i] = bt_upload(t, device, &inputs[i]);
    if (!args[i]) return false;
  }
  char what[64];
  snprintf(what, sizeof what, "cml_executable_execute(device %d)", device);
  if (!bt_ok(t, cml_executable_execute(exe, args, input_count, NULL, device, results), what)) {
    return false;
  }
  ++t->executions;
  bool ok = true;
  for (size_t i = 0; i < n_out; ++i) {
    if (!results[i]) {
      bt_fail(t, "execute returned OK but output %zu is NULL", i);
      ok = false;
      continue;
    }
    if (!bt__own(t, BT_RES_BUFFER, results[i])) {
      // bt__own released it already; release the rest too.
      for (size_t k = i + 1; k < n_out; ++k) cml_buffer_release(results[k]);
      return false;
    }
  }
  if (!ok) return false;
  for (size_t i = 0; i < n_out; ++i) {
    if (!bt_download(t, results[i], &out[i])) return false;
    const cml_shape_t* declared = cml_executable_output_shape(exe, i);
    if (declared && !bt_shape_matches(declared, &out[i].shape)) {
      char a[96], b[96];
      bt_fail(t, "output %zu has shape %s but the executable declares %s", i,
              cml_shape_format(&out[i].shape, a, sizeof a),
              cml_shape_format(declared, b, sizeof b));
      return false;
    }
  }
  // No input was donated: each must still hold what was uploaded (a backend may not write its
  // results, or scratch, into an input it was not given).
  for (size_t i = 0; i < input_count; ++i) {
    bt_tensor_t back;
    if (!bt_download(t, args[i], &back)) return false;
    size_t at = 0;
    while (at < back.size && at < inputs[i].size &&
           ((const uint8_t*)back.data)[at] == ((const uint8_t*)inputs[i].data)[at]) {
      ++at;
    }
    if (at < back.size || back.size != inputs[i].size) {
      char a[96];
      bt_fail(t,
              "input %zu %s changed during execute though it was not donated (first difference "
              "at byte %zu of %zu)",
              i, cml_shape_format(&inputs[i].shape, a, sizeof a), at, inputs[i].size);
      return false;
    }
  }
  return true;
}

bool bt_exec_ex(bt_t* t, const cml_value_t* outputs, size_t count, int device, bt_tensor_t* out,
                cml_executable_t** out_executable) {
  if (out_executable) *out_executable = NULL;
  for (size_t i = 0; i < count && out; ++i) memset(&out[i], 0, sizeof out[i]);
  cml_builder_t* b = bt_builder(t);
  if (!b) return false;
  cml_executable_t* exe = bt_compile(t, outputs, count);
  if (!exe) return false;
  // The bt_param inputs of this builder, in declaration order.
  size_t n = 0;
  for (size_t i = 0; i < t->input_count; ++i) n += t->inputs[i].builder == b;
  bt_tensor_t* inputs = bt_alloc(t, (n + 1) * sizeof *inputs);
  if (!inputs) return false;
  n = 0;
  for (size_t i = 0; i < t->input_count; ++i) {
    if (t->inputs[i].builder == b) inputs[n++] = t->inputs[i].value;
  }
  if (out_executable) *out_executable = exe;
  bt_tensor_t* results = out;
  if (!results) {
    results = bt_alloc(t, (count + 1) * sizeof *results);
    if (!results) return false;
  }
  return bt_run(t, exe, inputs, n, device, results, count);
}

bool bt_exec(bt_t* t, const cml_value_t* outputs, size_t count, bt_tensor_t* out) {
  return bt_exec_ex(t, outputs, count, 0, out, NULL);
}

//===--- expected errors ---===//

static void bt__check_status(bt_t* t, const char* what, cml_status_t status, cml_status_code_t code,
                             const char* const* needles) {
  cml_status_code_t got = cml_status_code(status);
  const char* message = cml_status_message(status);
  if (got != code) {
    if (got == CML_STATUS_UNIMPLEMENTED) {
      bt_unsupported(t, "%s: want %s but the backend answered UNIMPLEMENTED: %s", what,
                     cml_status_code_name(code), message);
    } else {
      bt_fail(t, "%s: want status %s, got %s: %s", what, cml_status_code_name(code),
              cml_status_code_name(got), message);
    }
    return;
  }
  for (const char* const* n = needles; n && *n; ++n) {
    if (!strstr(message, *n)) {
      bt_fail(t, "%s: the %s message does not mention \"%s\": %s", what, cml_status_code_name(code),
              *n, message);
    }
  }
}

void bt_expect_builder_error(bt_t* t, cml_status_code_t code, const char* const* needles) {
  ++t->checks;
  cml_builder_t* b = bt_builder(t);
  if (!b) return;
  cml_status_t st = cml_builder_status(b);
  bt__check_status(t, "builder error", st, code, needles);
  cml_status_free(st);
}

void bt_expect_status(bt_t* t, cml_status_t status, cml_status_code_t code,
                      const char* const* needles) {
  ++t->checks;
  bt__check_status(t, "status", status, code, needles);
  cml_status_free(status);
}

//===--- comparisons ---===//

typedef enum bt_compare_mode_t {
  BT_CMP_EXACT,
  BT_CMP_ULPS,
  BT_CMP_CLOSE,
} bt_compare_mode_t;

typedef struct bt_compare_t {
  bt_compare_mode_t mode;
  int64_t max_ulps;
  double rtol, atol;
} bt_compare_t;

static void bt__format_index(const cml_shape_t* shape, int64_t flat, char* buf, size_t size) {
  int64_t idx[CML_MAX_RANK];
  for (int32_t a = shape->rank - 1; a >= 0; --a) {
    int64_t d = shape->dims[a] > 0 ? shape->dims[a] : 1;
    idx[a] = flat % d;
    flat /= d;
  }
  size_t len = 0;
  len += (size_t)snprintf(buf + len, size - len, "[");
  for (int32_t a = 0; a < shape->rank && len < size; ++a) {
    len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, a ? ", " : "", idx[a]);
  }
  if (len < size) snprintf(buf + len, size - len, "]");
}

static void bt__format_component(cml_dtype_t dtype, uint64_t bits, char* buf, size_t size) {
  cml_dtype_t component = cml_dtype_real_part(dtype);
  int width = bt__component_bits(dtype);
  if (bt__is_float_component(component)) {
    snprintf(buf, size, "%.17g (0x%0*" PRIx64 ")", bt__float_value(component, bits), width / 4,
             bits);
  } else if (dtype == CML_DTYPE_BOOL) {
    if (bits <= 1) {
      snprintf(buf, size, "%s", bits ? "true" : "false");
    } else {
      snprintf(buf, size, "0x%02" PRIx64 " (not 0 or 1)", bits);
    }
  } else if (cml_dtype_is_signed_int(dtype)) {
    snprintf(buf, size, "%" PRId64, bt__sign_extend(bits, width));
  } else {
    snprintf(buf, size, "%" PRIu64, bits);
  }
}

// Maps float bits onto integers so that adjacent floats are adjacent integers (+0 and -0 both
// map to 0).
static int64_t bt__ordered(uint64_t bits, int width) {
  uint64_t sign = (uint64_t)1 << (width - 1);
  int64_t magnitude = (int64_t)(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

static uint64_t bt__ulp_distance(uint64_t a, uint64_t b, int width) {
  int64_t x = bt__ordered(a, width), y = bt__ordered(b, width);
  return x >= y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

// Returns true when component values |g| and |w| (raw bits) match under |cmp|.
static bool bt__component_match(cml_dtype_t dtype, uint64_t g, uint64_t w,
                                const bt_compare_t* cmp) {
  cml_dtype_t component = cml_dtype_real_part(dtype);
  if (!bt__is_float_component(component)) {
    if (cmp->mode == BT_CMP_CLOSE && dtype != CML_DTYPE_BOOL) {
      double gv = cml_dtype_is_signed_int(dtype) ? (double)bt__sign_extend(g, cml_dtype_bits(dtype))
                                                 : (double)g;
      double wv = cml_dtype_is_signed_int(dtype) ? (double)bt__sign_extend(w, cml_dtype_bits(dtype))
                                                 : (double)w;
      return fabs(gv - wv) <= cmp->atol + cmp->rtol * fabs(wv);
    }
    return g == w;
  }
  double gv = bt__float_value(component, g), wv = bt__float_value(component, w);
  if (isnan(gv) || isnan(wv)) return isnan(gv) && isnan(wv);
  // Two real zeros match only with the same sign, in every mode: a tolerance (or the ulp
  // distance, which is 0 between them) must not accept Tanh(-0) = +0. (The parts of a complex
  // result are sums of products whose zero signs depend on the formula: not compared.)
  if (component == dtype && gv == 0 && wv == 0 && signbit(gv) != signbit(wv)) return false;
  switch (cmp->mode) {
    case BT_CMP_EXACT:
      return g == w;
    case BT_CMP_ULPS:
      if (isinf(gv) || isinf(wv)) return g == w;
      return bt__ulp_distance(g, w, bt__component_bits(dtype)) <= (uint64_t)cmp->max_ulps;
    case BT_CMP_CLOSE:
      if (isinf(gv) || isinf(wv)) return gv == wv;
      return fabs(gv - wv) <= cmp->atol + cmp->rtol * fabs(wv);
  }
  return false;
}

static void bt__compare(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want,
                        const bt_compare_t* cmp) {
  ++t->checks;
  if (!what) what = "result";
  if (!got || !want) {
    bt_fail(t, "%s: missing tensor", what);
    return;
  }
  char gs[128], ws[128];
  if (!cml_shape_equal(&got->shape, &want->shape)) {
    bt_fail(t, "%s: shape mismatch: got %s, want %s", what,
            cml_shape_format(&got->shape, gs, sizeof gs),
            cml_shape_format(&want->shape, ws, sizeof ws));
    return;
  }
  cml_dtype_t dtype = got->shape.dtype;
  int64_t n = cml_shape_element_count(&got->shape);
  size_t bytes = cml_shape_byte_size(&got->shape);
  if (n > 0 && (!got->data || got->size < bytes || !want->data || want->size < bytes)) {
    bt_fail(t, "%s: tensor of shape %s has no data (got %zu bytes, want %zu)", what,
            cml_shape_format(&got->shape, gs, sizeof gs), got->data ? got->size : 0, bytes);
    return;
  }
  int width = bt__component_bits(dtype);
  int comps = bt__component_count(dtype);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < comps; ++c) {
      int64_t k = i * comps + c;
      uint64_t g = bt__load_bits(got->data, width, k);
      uint64_t w = bt__load_bits(want->data, width, k);
      if (bt__component_match(dtype, g, w, cmp)) continue;
      if (mismatches++ < BT_MISMATCH_LINES) {
        char idx[160], gv[80], wv[80];
        bt__format_index(&got->shape, i, idx, sizeof idx);
        bt__format_component(dtype, g, gv, sizeof gv);
        bt__format_component(dtype, w, wv, sizeof wv);
        char extra[64] = "";
        if (cmp->mode == BT_CMP_ULPS && bt__is_float_component(cml_dtype_real_part(dtype))) {
          snprintf(extra, sizeof extra, " (%" PRIu64 " ulps, max %" PRId64 ")",
                   bt__ulp_distance(g, w, width), cmp->max_ulps);
        } else if (cmp->mode == BT_CMP_CLOSE) {
          snprintf(extra, sizeof extra, " (rtol %g, atol %g)", cmp->rtol, cmp->atol);
        }
        bt_fail(t, "%s: %s at %s%s (element %" PRId64 "): got %s, want %s%s", what,
                cml_shape_format(&got->shape, gs, sizeof gs), idx,
                comps == 2 ? (c ? ".im" : ".re") : "", i, gv, wv, extra);
      }
    }
  }
  if (mismatches > BT_MISMATCH_LINES) {
    bt_fail(t, "%s: %" PRId64 " mismatches in all, of %" PRId64 " elements", what, mismatches, n);
  }
}

void bt_expect_equal(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want) {
  bt_compare_t cmp = {BT_CMP_EXACT, 0, 0, 0};
  bt__compare(t, what, got, want, &cmp);
}

void bt_expect_ulps(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want,
                    int64_t max_ulps) {
  bt_compare_t cmp = {BT_CMP_ULPS, max_ulps < 0 ? 0 : max_ulps, 0, 0};
  bt__compare(t, what, got, want, &cmp);
}

void bt_expect_close(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want,
                     double rtol, double atol) {
  bt_compare_t cmp = {BT_CMP_CLOSE, 0, rtol, atol};
  bt__compare(t, what, got, want, &cmp);
}

void bt_expect_f64(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dtype,
                   int32_t rank, const int64_t* dims, const double* values, int64_t max_ulps) {
  bt_tensor_t want = bt_tensor_f64(t, dtype, rank, dims, values);
  if (!want.data && want.shape.dtype == CML_DTYPE_INVALID) return;  // already failed
  if (max_ulps <= 0) {
    bt_expect_equal(t, what, got, &want);
  } else {
    bt_expect_ulps(t, what, got, &want, max_ulps);
  }
}

void bt_expect_i64(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dtype,
                   int32_t rank, const int64_t* dims, const int64_t* values) {
  bt_tensor_t want = bt_tensor_i64(t, dtype, rank, dims, values);
  if (!want.data && want.shape.dtype == CML_DTYPE_INVALID) return;
  bt_expect_equal(t, what, got, &want);
}

//===--- random numbers ---===//

uint64_t bt_rand_u64(bt_t* t) {
  // xorshift64* (Vigna): a full-period generator over non-zero states.
  uint64_t x = t->rng_state ? t->rng_state : 0x9e3779b97f4a7c15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t->rng_state = x;
  return x * 0x2545f4914f6cdd1dull;
}

double bt_rand_uniform(bt_t* t, double lo, double hi) {
  double unit = (double)(bt_rand_u64(t) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return lo + (hi - lo) * unit;
}

//===--- many devices ---===//

bool bt_require_devices(bt_t* t, cml_distribution_t distribution, int devices) {
  const cml_capabilities_t* caps = t->backend ? cml_backend_capabilities(t->backend) : NULL;
  uint32_t bits = caps ? caps->distributions : 0;
  if (!(bits & (1u << distribution))) {
    bt_unsupported(t, "needs the %s distribution strategy, which backend \"%s\" does not run",
                   cml_distribution_name(distribution), cml_backend_name(t->backend));
    return false;
  }
  int have = cml_backend_device_count(t->backend);
  if (have < devices) {
    bt_unsupported(t, "needs %d devices, backend \"%s\" has %d", devices,
                   cml_backend_name(t->backend), have);
    return false;
  }
  return true;
}

bool bt_spmd(bt_t* t, int devices) {
  cml_builder_t* b = bt_builder(t);
  return b && bt_ok(t, cml_builder_spmd(b, devices), "cml_builder_spmd");
}

bool bt_auto_sharding(bt_t* t, const cml_mesh_t* const* meshes, size_t mesh_count) {
  cml_builder_t* b = bt_builder(t);
  return b &&
         bt_ok(t, cml_builder_auto_sharding(b, meshes, mesh_count), "cml_builder_auto_sharding");
}

cml_executable_t* bt_compile_sharded(bt_t* t, const cml_value_t* outputs, size_t count,
                                     const cml_sharding_t* shardings) {
  cml_builder_t* b = bt_builder(t);
  if (!b) return NULL;
  if (!bt_ok(t, cml_function_return_sharded(cml_builder_main(b), outputs, count, shardings),
             "cml_function_return_sharded")) {
    return NULL;
  }
  cml_executable_t* exe = NULL;
  if (!bt_ok(t, cml_builder_compile(b, &exe), "cml_builder_compile")) return NULL;
  if (!bt__own(t, BT_RES_EXECUTABLE, exe)) return NULL;
  return exe;
}

bool bt_run_devices(bt_t* t, cml_executable_t* exe, const bt_tensor_t* inputs,
                    const int32_t* devices, bt_tensor_t* out) {
  if (!exe) {
    bt_fail(t, "bt_run_devices: no executable");
    return false;
  }
  size_t n = (size_t)cml_executable_num_devices(exe);
  size_t p = cml_executable_input_count(exe), r = cml_executable_output_count(exe);
  for (size_t i = 0; i < n * r; ++i) memset(&out[i], 0, sizeof out[i]);
  cml_buffer_t** args = bt_alloc(t, (n * p + 1) * sizeof *args);
  cml_buffer_t** results = bt_alloc(t, (n * r + 1) * sizeof *results);
  if (!args || !results) return false;
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < p; ++i) {
      args[j * p + i] = bt_upload(t, devices ? devices[j] : (int)j, &inputs[j * p + i]);
      if (!args[j * p + i]) return false;
    }
  }
  char what[96];
  snprintf(what, sizeof what, "cml_executable_execute(%zu devices x %zu inputs)", n, p);
  if (!bt_ok(t, cml_executable_execute(exe, args, n * p, NULL, 0, results), what)) return false;
  ++t->executions;
  for (size_t i = 0; i < n * r; ++i) {
    if (!results[i]) {
      bt_fail(t, "execute returned OK but output %zu is NULL", i);
      for (size_t k = i + 1; k < n * r; ++k) cml_buffer_release(results[k]);
      return false;
    }
    if (!bt__own(t, BT_RES_BUFFER, results[i])) {
      for (size_t k = i + 1; k < n * r; ++k) cml_buffer_release(results[k]);
      return false;
    }
  }
  for (size_t j = 0; j < n; ++j) {
    for (size_t k = 0; k < r; ++k) {
      cml_buffer_t* buf = results[j * r + k];
      int want_device = devices ? devices[j] : (int)j;
      if (cml_buffer_device(buf) != want_device) {
        bt_fail(t, "output %zu of device slot %zu is on device %d, want %d", k, j,
                cml_buffer_device(buf), want_device);
        return false;
      }
      if (!bt_download(t, buf, &out[j * r + k])) return false;
      const cml_shape_t* declared = cml_executable_output_shape(exe, k);
      if (declared && !cml_shape_equal(declared, &out[j * r + k].shape)) {
        char a[96], b[96];
        bt_fail(t, "output %zu of device slot %zu has shape %s but the executable declares %s", k,
                j, cml_shape_format(&out[j * r + k].shape, a, sizeof a),
                cml_shape_format(declared, b, sizeof b));
        return false;
      }
    }
  }
  return true;
}
