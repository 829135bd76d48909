// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_graph.c: the random graph builder fuzz target.
//
// The input bytes are a program: the first byte picks a backend, then each step reads an
// opcode and its operands (shapes, dtypes, axes, attributes, value picks) and calls one public
// builder function. Values are picked mostly from the current function and its ancestors
// (valid), sometimes from sibling closures, another builder, CML_VALUE_INVALID or a random id
// (invalid). Templates build the closures of While (a counter bounded by a small constant, so
// executions end), If and Sort; raw control ops use any closure. At the end main returns, the
// module is compiled, and the executable runs twice on random inputs. The top opcode bytes
// (FZ_EXTENDED_FIRST and up) build with the newer API: SPMD and AutoSharding builders (meshes,
// sharded parameters), every collective with random replica groups, FusedQuantizedDense and
// QuantizedEmbeddingLookup (often on well-formed operands), cml_gradients and StopGradient; an
// executable on N device slots runs with N inputs per parameter.
//
// Invariants checked (cml_fuzz_violation): an op returning CML_VALUE_INVALID leaves a sticky
// error; a valid value is only returned while the builder is healthy and has a shape; compile
// reports the builder's error; outputs have the executable's shapes; two executions on the same
// inputs give the same bytes; every error is a status; everything created through the backend's
// allocator is freed once the builder, executable and buffers are released.
//
// Execution is skipped when any value exceeds CML_FUZZ_EXEC_BYTES, when the window, convolution
// and contraction ops together exceed CML_FUZZ_EXEC_WORK multiply-adds (both time, not
// correctness: a ReduceWindow of 7^4 windows over [17,17,17,17] is legal and slow; at 2^24 a
// window graph of a u32 product and a SelectAndScatter took 6 s alone and 23 s on a busy
// machine under the sanitizers, past the 20 s timeout) and when a raw While (unbounded loop)
// was built. Bool inputs are 0 or 1 (other bytes are not Bool
// values).
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/autodiff.h"
#include "cml/backend.h"
#include "cml/distributed.h"
#include "cml/fused.h"
#include "cml/graph.h"
#include "cml/shape.h"
#include "tests/fuzz/fuzz_targets.h"

#define CML_FUZZ_MAX_STEPS 64
#define CML_FUZZ_MAX_VALUES 256
#define CML_FUZZ_MAX_FNS 24
#define CML_FUZZ_MAX_DEPTH 4
#define CML_FUZZ_EXEC_BYTES ((size_t)1 << 18)
#define CML_FUZZ_TOTAL_BYTES ((size_t)4 << 20)
#define CML_FUZZ_EXEC_WORK ((uint64_t)1 << 22)
#define CML_FUZZ_CONST_BYTES 1024

//===--- the byte stream ---===//

typedef struct fz_stream_t {
  const uint8_t* p;
  size_t n;
} fz_stream_t;

static uint8_t fz_u8(fz_stream_t* z) {
  if (!z->n) return 0;
  --z->n;
  return *z->p++;
}

static uint32_t fz_u32(fz_stream_t* z) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | fz_u8(z);
  return v;
}

static uint64_t fz_u64(fz_stream_t* z) { return ((uint64_t)fz_u32(z) << 32) | fz_u32(z); }

// A dimension: mostly small, sometimes 0, negative or huge.
static int64_t fz_dim(fz_stream_t* z) {
  uint8_t b = fz_u8(z);
  if (b < 200) return 1 + b % 5;
  if (b < 225) return b % 9;
  switch (b % 8) {
    case 0:
      return 0;
    case 1:
      return -1;
    case 2:
      return 1 << 20;
    case 3:
      return (int64_t)1 << 33;
    case 4:
      return INT64_MAX;
    case 5:
      return INT64_MIN;
    case 6:
      return 64;
    default:
      return 17;
  }
}

// An axis or small attribute: mostly 0..3, sometimes negative or out of range.
static int64_t fz_axis(fz_stream_t* z) {
  uint8_t b = fz_u8(z);
  if (b < 220) return b % 4;
  switch (b % 6) {
    case 0:
      return -1;
    case 1:
      return 4 + b % 13;
    case 2:
      return INT64_MIN;
    case 3:
      return INT64_MAX;
    case 4:
      return -(int64_t)(b % 5);
    default:
      return 16;
  }
}

static const cml_dtype_t fz_common_dtypes[] = {
    CML_DTYPE_F32, CML_DTYPE_F32, CML_DTYPE_I32,  CML_DTYPE_F64,  CML_DTYPE_BOOL, CML_DTYPE_I64,
    CML_DTYPE_U8,  CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_C64,  CML_DTYPE_I8,   CML_DTYPE_U32,
    CML_DTYPE_I16, CML_DTYPE_U16, CML_DTYPE_U64,  CML_DTYPE_C128, CML_DTYPE_I4,   CML_DTYPE_U4,
    CML_DTYPE_I2,  CML_DTYPE_U2,  CML_DTYPE_I1,   CML_DTYPE_U1,   CML_DTYPE_F32,  CML_DTYPE_I32,
};
#define FZ_COMMON_DTYPES (sizeof fz_common_dtypes / sizeof fz_common_dtypes[0])

static cml_dtype_t fz_dtype(fz_stream_t* z) {
  uint8_t b = fz_u8(z);
  if (b < 240) return fz_common_dtypes[b % FZ_COMMON_DTYPES];
  if (b < 250) return (cml_dtype_t)(b % 34);  // any enum value, float8 and TOKEN included
  return (cml_dtype_t)(b == 250 ? -1 : 1000 + b);
}

static int32_t fz_rank(fz_stream_t* z) {
  uint8_t b = fz_u8(z);
  if (b < 240) return b % 4;
  if (b < 250) return 4 + b % 3;
  return b == 250 ? -1 : b == 251 ? CML_MAX_RANK : CML_MAX_RANK + 1;
}

// A shape as a user could write it: fields set directly, so invalid ones reach the API.
static cml_shape_t fz_shape(fz_stream_t* z) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = fz_dtype(z);
  s.rank = fz_rank(z);
  int32_t n = s.rank < 0 ? 0 : s.rank > CML_MAX_RANK ? CML_MAX_RANK : s.rank;
  for (int32_t i = 0; i < n; ++i) s.dims[i] = fz_dim(z);
  return s;
}

// The byte size of |s| when it is a shape the library should accept (the rules of
// cml_shape_init: non-negative dims, at most CML_MAX_ELEMENTS elements with zero dims counted as
// 1), computed without overflow; SIZE_MAX otherwise.
static size_t fz_safe_bytes(const cml_shape_t* s) {
  if (!cml_dtype_is_supported(s->dtype) || s->rank < 0 || s->rank > CML_MAX_RANK) return SIZE_MAX;
  uint64_t count = 1;
  bool empty = false;
  for (int32_t i = 0; i < s->rank; ++i) {
    if (s->dims[i] < 0) return SIZE_MAX;
    if (s->dims[i] == 0) {
      empty = true;
      continue;
    }
    if ((uint64_t)s->dims[i] > (uint64_t)CML_MAX_ELEMENTS / count) return SIZE_MAX;
    count *= (uint64_t)s->dims[i];
  }
  if (empty) return 0;
  return (size_t)((count * (uint64_t)cml_dtype_bits(s->dtype) + 7) / 8);
}

//===--- the fuzz state ---===//

typedef struct fz_value_t {
  cml_value_t v;
  int fn;  // slot of the function it was made in
} fz_value_t;

typedef struct fz_fn_t {
  cml_function_t* f;
  int parent;  // slot, -1 for main and named functions
  bool returned;
} fz_fn_t;

typedef struct fz_graph_t {
  fz_stream_t z;
  cml_builder_t* b;
  cml_builder_t* other;  // a second builder: its values and functions are foreign
  cml_value_t foreign;
  fz_value_t values[CML_FUZZ_MAX_VALUES];
  int value_count;
  fz_fn_t fns[CML_FUZZ_MAX_FNS];
  int fn_count;
  int stack[CML_FUZZ_MAX_DEPTH + 1];
  int depth;       // stack[depth - 1] is the current function
  bool unbounded;  // a raw While was built: do not execute
  size_t max_bytes, total_bytes;
  uint64_t work;          // estimated element visits of the heavy ops (fz_add_work)
  bool ok_before;         // builder healthy before the current op
  cml_mesh_t* meshes[2];  // made by the AutoSharding step; destroyed after compile
  int mesh_count;
} fz_graph_t;

static int fz_cur(const fz_graph_t* g) { return g->stack[g->depth - 1]; }
static cml_function_t* fz_cur_fn(const fz_graph_t* g) { return g->fns[fz_cur(g)].f; }

static bool fz_builder_ok(const fz_graph_t* g) {
  cml_status_t st = cml_builder_status(g->b);
  if (st == CML_OK) return true;
  cml_fuzz_check_status(st, "cml_builder_status");
  return false;
}

// True when values of slot |owner| are visible in slot |fn| (same function or an ancestor).
static bool fz_visible(const fz_graph_t* g, int owner, int fn) {
  for (int s = fn; s >= 0; s = g->fns[s].parent) {
    if (s == owner) return true;
  }
  return false;
}

// Records the result of an op that returned |v| (|what| names it) and checks the invariants.
static cml_value_t fz_note(fz_graph_t* g, cml_value_t v, const char* what) {
  if (v == CML_VALUE_INVALID) {
    if (fz_builder_ok(g))
      cml_fuzz_violation("%s returned CML_VALUE_INVALID without an error", what);
    return v;
  }
  if (!g->ok_before) cml_fuzz_violation("%s returned a value after the builder failed", what);
  cml_shape_t s;
  if (!cml_builder_value_shape(g->b, v, &s)) {
    cml_fuzz_violation("%s returned value 0x%08x without a shape", what, (unsigned)v);
    return v;
  }
  size_t bytes = fz_safe_bytes(&s);
  if (bytes == SIZE_MAX) {
    cml_fuzz_violation("%s produced an invalid shape (dtype %d, rank %d)", what, (int)s.dtype,
                       (int)s.rank);
    bytes = 0;
  }
  if (bytes > g->max_bytes) g->max_bytes = bytes;
  g->total_bytes = bytes > SIZE_MAX - g->total_bytes ? SIZE_MAX : g->total_bytes + bytes;
  if (g->value_count < CML_FUZZ_MAX_VALUES) {
    g->values[g->value_count].v = v;
    g->values[g->value_count].fn = fz_cur(g);
    ++g->value_count;
  }
  return v;
}

// Adds |per_element| visits for every element of |v| (when valid) to the graph's work.
static void fz_add_work(fz_graph_t* g, cml_value_t v, uint64_t per_element) {
  cml_shape_t s;
  if (v == CML_VALUE_INVALID || !cml_builder_value_shape(g->b, v, &s)) return;
  uint64_t n = 1;
  for (int32_t i = 0; i < s.rank; ++i) {
    const uint64_t d = s.dims[i] > 0 ? (uint64_t)s.dims[i] : 0;
    n = d != 0 && n > UINT64_MAX / d ? UINT64_MAX : n * d;
  }
  const uint64_t w =
      per_element != 0 && n > UINT64_MAX / per_element ? UINT64_MAX : n * per_element;
  g->work = w > UINT64_MAX - g->work ? UINT64_MAX : g->work + w;
}

// The product of |count| sizes (1 for none, saturating; negative ones count as 1).
static uint64_t fz_product(const int64_t* dims, int32_t count) {
  uint64_t n = 1;
  for (int32_t i = 0; i < count && i < CML_MAX_RANK; ++i) {
    const uint64_t d = dims[i] > 0 ? (uint64_t)dims[i] : 1;
    n = n > UINT64_MAX / d ? UINT64_MAX : n * d;
  }
  return n;
}

static void fz_note_multi(fz_graph_t* g, bool ok, const cml_value_t* out, size_t count,
                          const char* what) {
  if (!ok) {
    if (fz_builder_ok(g)) cml_fuzz_violation("%s returned false without an error", what);
    for (size_t i = 0; i < count; ++i) {
      if (out[i] != CML_VALUE_INVALID) cml_fuzz_violation("%s: false but output %zu set", what, i);
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) fz_note(g, out[i], what);
}

// Picks an operand: usually a visible recent value, sometimes anything or an invalid id.
static cml_value_t fz_pick(fz_graph_t* g) {
  uint8_t b = fz_u8(&g->z);
  int cur = fz_cur(g);
  if (b < 200 && g->value_count > 0) {
    int skip = b % 6;
    for (int i = g->value_count - 1; i >= 0; --i) {
      if (!fz_visible(g, g->values[i].fn, cur)) continue;
      if (skip-- == 0) return g->values[i].v;
    }
    for (int i = g->value_count - 1; i >= 0; --i) {
      if (fz_visible(g, g->values[i].fn, cur)) return g->values[i].v;
    }
  }
  if (b < 236 && g->value_count > 0) return g->values[b % g->value_count].v;
  if (b < 242) return CML_VALUE_INVALID;
  if (b < 248) return g->foreign;
  return (cml_value_t)fz_u32(&g->z);
}

// Picks a visible value with the shape of |like| when there is one (else fz_pick).
static cml_value_t fz_pick_like(fz_graph_t* g, cml_value_t like, bool same_dtype) {
  cml_shape_t want;
  if (fz_u8(&g->z) < 64 || !cml_builder_value_shape(g->b, like, &want)) return fz_pick(g);
  int cur = fz_cur(g);
  int skip = fz_u8(&g->z) % 3;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = g->value_count - 1; i >= 0; --i) {
      cml_shape_t s;
      if (!fz_visible(g, g->values[i].fn, cur) ||
          !cml_builder_value_shape(g->b, g->values[i].v, &s))
        continue;
      if (!cml_shape_dims_equal(&s, &want) || (same_dtype && s.dtype != want.dtype)) continue;
      if (pass == 1 || skip-- == 0) return g->values[i].v;
    }
  }
  return like;
}

static cml_shape_t fz_shape_of(const fz_graph_t* g, cml_value_t v) {
  cml_shape_t s;
  if (!cml_builder_value_shape(g->b, v, &s)) {
    memset(&s, 0, sizeof s);
    s.dtype = CML_DTYPE_F32;
  }
  return s;
}

// A shape: a fresh random one, or the shape of a visible value (maybe with another dtype).
static cml_shape_t fz_shape_or_like(fz_graph_t* g) {
  uint8_t b = fz_u8(&g->z);
  if (b < 100 || g->value_count == 0) return fz_shape(&g->z);
  cml_shape_t s = fz_shape_of(g, fz_pick(g));
  if (b > 200) s.dtype = fz_dtype(&g->z);
  return s;
}

// Axes: |count| (from the stream, up to |max|) values from fz_axis.
static size_t fz_axes(fz_graph_t* g, int64_t* axes, size_t max) {
  size_t count = fz_u8(&g->z) % (max + 1);
  for (size_t i = 0; i < count; ++i) axes[i] = fz_axis(&g->z);
  return count;
}

// A permutation of 0..rank-1 (shuffled from the stream), sometimes broken.
static void fz_permutation(fz_graph_t* g, int64_t* perm, int32_t rank) {
  for (int32_t i = 0; i < rank; ++i) perm[i] = i;
  for (int32_t i = rank - 1; i > 0; --i) {
    int32_t j = fz_u8(&g->z) % (i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  if (rank > 0 && fz_u8(&g->z) > 240) perm[fz_u8(&g->z) % rank] = fz_axis(&g->z);
}

static cml_value_t fz_scalar(fz_graph_t* g, cml_function_t* f, cml_dtype_t dtype) {
  uint8_t b = fz_u8(&g->z);
  if (b < 128) return cml_constant_scalar_i64(f, dtype, (int64_t)(int8_t)fz_u8(&g->z));
  if (b < 200) return cml_constant_scalar_f64(f, dtype, (double)(int8_t)fz_u8(&g->z) / 4.0);
  uint64_t bits = fz_u64(&g->z);
  double d;
  memcpy(&d, &bits, sizeof d);
  return cml_constant_scalar_f64(f, dtype, d);
}

static void fz_list_ops(cml_op_kind_t kind, cml_op_t* out, int* count, int max) {
  *count = 0;
  for (int op = 0; op < CML_OP_COUNT && *count < max; ++op) {
    if (cml_op_kind((cml_op_t)op) == kind) out[(*count)++] = (cml_op_t)op;
  }
}

static cml_op_t fz_op_of_kind(fz_graph_t* g, cml_op_kind_t kind) {
  cml_op_t ops[CML_OP_COUNT];
  int n = 0;
  fz_list_ops(kind, ops, &n, CML_OP_COUNT);
  uint8_t b = fz_u8(&g->z);
  if (b >= 248 || n == 0) return (cml_op_t)(b % (CML_OP_COUNT + 3));  // wrong kinds, bad enums
  return ops[b % n];
}

//===--- functions and closures ---===//

static int fz_add_fn(fz_graph_t* g, cml_function_t* f, int parent) {
  if (g->fn_count >= CML_FUZZ_MAX_FNS) return -1;
  g->fns[g->fn_count].f = f;
  g->fns[g->fn_count].parent = parent;
  g->fns[g->fn_count].returned = false;
  return g->fn_count++;
}

// Creates a closure of the current function (not pushed). Returns its slot or -1.
static int fz_new_closure(fz_graph_t* g) {
  if (g->fn_count >= CML_FUZZ_MAX_FNS) return -1;
  cml_function_t* c = NULL;
  cml_status_t st = cml_function_new_closure(fz_cur_fn(g), &c);
  if (st != CML_OK) {
    if (c) cml_fuzz_violation("cml_function_new_closure: error with a closure");
    cml_fuzz_check_status(st, "cml_function_new_closure");
    return -1;
  }
  if (!c) {
    cml_fuzz_violation("cml_function_new_closure: OK without a closure");
    return -1;
  }
  return fz_add_fn(g, c, fz_cur(g));
}

static void fz_push(fz_graph_t* g, int slot) {
  if (slot >= 0 && g->depth <= CML_FUZZ_MAX_DEPTH) g->stack[g->depth++] = slot;
}

// Returns slot |slot|. A second Return must fail with FAILED_PRECONDITION and leave the builder
// as it was (healthy or not); other failures are sticky.
static void fz_return(fz_graph_t* g, int slot, const cml_value_t* outs, size_t count) {
  if (g->fns[slot].returned) {
    bool ok_before = fz_builder_ok(g);
    size_t out_count = cml_function_output_count(g->fns[slot].f);
    cml_status_t st = cml_function_return(g->fns[slot].f, outs, count);
    int code = cml_fuzz_check_status(st, "cml_function_return (again)");
    if (code != CML_STATUS_FAILED_PRECONDITION)
      cml_fuzz_violation("a second cml_function_return gave status code %d", code);
    if (fz_builder_ok(g) != ok_before)
      cml_fuzz_violation("a second cml_function_return changed the builder's status");
    if (cml_function_output_count(g->fns[slot].f) != out_count)
      cml_fuzz_violation("a second cml_function_return changed the outputs");
    return;
  }
  cml_status_t st = cml_function_return(g->fns[slot].f, outs, count);
  if (st == CML_OK) {
    g->fns[slot].returned = true;
    if (cml_function_output_count(g->fns[slot].f) != count)
      cml_fuzz_violation("cml_function_output_count differs from the returned count");
  } else {
    cml_fuzz_check_status(st, "cml_function_return");
    if (fz_builder_ok(g)) cml_fuzz_violation("cml_function_return failed without a sticky error");
  }
}

// Picks a returned function slot (any, so invalid callees are tried too); -1 when none.
static int fz_pick_returned(fz_graph_t* g) {
  int candidates[CML_FUZZ_MAX_FNS], n = 0;
  for (int i = 1; i < g->fn_count; ++i) {
    if (g->fns[i].returned) candidates[n++] = i;
  }
  uint8_t b = fz_u8(&g->z);
  if (n == 0 || b > 245) return -1;
  return candidates[b % n];
}

//===--- templates: bounded While, If, Sort ---===//

// While over (counter Int32, x): cond is counter < K, body is (counter + 1, op(x)).
static void fz_template_while(fz_graph_t* g) {
  cml_function_t* f = fz_cur_fn(g);
  cml_value_t x = fz_pick(g);
  cml_shape_t xs = fz_shape_of(g, x);
  int64_t k = fz_u8(&g->z) % 5;
  cml_shape_t counter_shape = cml_shape_scalar(CML_DTYPE_I32);
  int cond = fz_new_closure(g);
  if (cond < 0) return;
  cml_function_t* cf = g->fns[cond].f;
  cml_value_t ci = cml_parameter(cf, "i", &counter_shape);
  (void)cml_parameter(cf, "x", &xs);
  cml_value_t limit = cml_constant_scalar_i64(cf, CML_DTYPE_I32, k);
  cml_value_t less = cml_op_less_than(cf, ci, limit);
  fz_return(g, cond, &less, 1);
  int body = fz_new_closure(g);
  if (body < 0) return;
  cml_function_t* bf = g->fns[body].f;
  cml_value_t bi = cml_parameter(bf, "i", &counter_shape);
  cml_value_t bx = cml_parameter(bf, "x", &xs);
  cml_value_t one = cml_constant_scalar_i64(bf, CML_DTYPE_I32, 1);
  cml_value_t outs[2] = {cml_op_add(bf, bi, one), bx};
  uint8_t how = fz_u8(&g->z);
  if (how < 80) {
    outs[1] = cml_op_unary(bf, fz_op_of_kind(g, CML_OPK_UNARY), bx);
  } else if (how < 160) {
    // Uses a value of the enclosing function: an implicit capture.
    outs[1] = cml_op_binary(bf, fz_op_of_kind(g, CML_OPK_BINARY), bx, x);
  }
  fz_return(g, body, outs, 2);
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, (int64_t)(fz_u8(&g->z) % 3) - 1),
                         x};
  cml_value_t result[2] = {0, 0};
  bool ok = cml_op_while(f, g->fns[cond].f, g->fns[body].f, init, 2, result);
  fz_note_multi(g, ok, result, 2, "While (template)");
}

// If(pred) { unary(x) } else { x or another unary }: branches capture x.
static void fz_template_if(fz_graph_t* g) {
  cml_function_t* f = fz_cur_fn(g);
  cml_value_t x = fz_pick(g);
  cml_value_t pred;
  uint8_t b = fz_u8(&g->z);
  if (b < 100) {
    pred = cml_constant_scalar_i64(f, CML_DTYPE_BOOL, b & 1);
  } else if (b < 200) {
    pred = fz_pick(g);  // often not a scalar Bool
  } else {
    cml_value_t y = fz_pick(g);
    pred = cml_op_reduce_logical_or(f, cml_op_is_finite(f, y), NULL, 0);
  }
  int t = fz_new_closure(g);
  if (t < 0) return;
  cml_value_t out = cml_op_unary(g->fns[t].f, fz_op_of_kind(g, CML_OPK_UNARY), x);
  fz_return(g, t, &out, 1);
  int e = fz_new_closure(g);
  if (e < 0) return;
  out = fz_u8(&g->z) < 128 ? cml_op_unary(g->fns[e].f, fz_op_of_kind(g, CML_OPK_UNARY), x)
                           : cml_op_unary(g->fns[e].f, CML_OP_IDENTITY, x);
  fz_return(g, e, &out, 1);
  cml_value_t result = 0;
  bool ok = cml_op_if(f, pred, g->fns[t].f, g->fns[e].f, &result);
  fz_note_multi(g, ok, &result, 1, "If (template)");
}

// Sort of 1..3 operands with a comparator comparing one operand pair with a compare op.
static void fz_template_sort(fz_graph_t* g) {
  cml_function_t* f = fz_cur_fn(g);
  size_t count = 1 + fz_u8(&g->z) % 3;
  cml_value_t ops[3];
  ops[0] = fz_pick(g);
  for (size_t i = 1; i < count; ++i) ops[i] = fz_pick_like(g, ops[0], false);
  int c = fz_new_closure(g);
  if (c < 0) return;
  cml_function_t* cf = g->fns[c].f;
  cml_value_t params[6];
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t s = cml_shape_scalar(fz_shape_of(g, ops[i]).dtype);
    params[2 * i] = cml_parameter(cf, NULL, &s);
    params[2 * i + 1] = cml_parameter(cf, NULL, &s);
  }
  size_t key = fz_u8(&g->z) % count;
  cml_value_t less =
      cml_op_binary(cf, fz_op_of_kind(g, CML_OPK_COMPARE), params[2 * key], params[2 * key + 1]);
  fz_return(g, c, &less, 1);
  cml_value_t result[3] = {0, 0, 0};
  bool ok = cml_op_sort(f, cf, fz_axis(&g->z), fz_u8(&g->z) & 1, ops, count, result);
  fz_note_multi(g, ok, result, count, "Sort (template)");
}

//===--- steps of the newer API ---===//

// Opcode bytes from here on select fz_step_extended's steps.
#define FZ_EXTENDED_FIRST 224

enum {
  FX_SPMD,
  FX_AUTO_SHARDING,
  FX_SHARDED_PARAMETER,
  FX_ALL_REDUCE,
  FX_ALL_GATHER,
  FX_REDUCE_SCATTER,
  FX_ALL_TO_ALL,
  FX_COLLECTIVE_PERMUTE,
  FX_COLLECTIVE_BROADCAST,
  FX_IDS,
  FX_QUANT_DENSE,
  FX_QUANT_EMBEDDING,
  FX_GRADIENTS,
  FX_STOP_GRADIENT,
  FX_COUNT
};

// Replica groups: NULL (every slot), or |count| groups of |size| ids from the stream (a
// partition of 0..N-1 in some order for small N, sometimes broken). |ids| holds 16 entries.
static const cml_replica_groups_t* fz_groups(fz_graph_t* g, int32_t* ids,
                                             cml_replica_groups_t* out) {
  uint8_t b = fz_u8(&g->z);
  if (b < 96) return NULL;
  size_t count = 1 + fz_u8(&g->z) % 4, size = 1 + fz_u8(&g->z) % 4;
  if (count * size > 16) size = 16 / count;
  for (size_t i = 0; i < count * size; ++i) ids[i] = (int32_t)i;
  for (size_t i = count * size; i > 1; --i) {  // shuffled
    size_t j = fz_u8(&g->z) % i;
    int32_t t = ids[i - 1];
    ids[i - 1] = ids[j];
    ids[j] = t;
  }
  if (b > 240 && count * size > 0) ids[fz_u8(&g->z) % (count * size)] = (int32_t)fz_axis(&g->z);
  out->ids = b == 255 ? NULL : ids;
  out->group_count = b == 254 ? 0 : count;
  out->group_size = size;
  return out;
}

static cml_reduce_type_t fz_reduce_type(fz_graph_t* g) {
  uint8_t b = fz_u8(&g->z);
  return b < 250 ? (cml_reduce_type_t)(1 + b % 4) : (cml_reduce_type_t)(b % 8 - 2);
}

// A sharding of a rank-|rank| tensor on mesh |m| (axis names from a small vocabulary, so valid
// and invalid specs both happen), or a zeroed one (replicated). Returns NULL sometimes.
static const cml_sharding_t* fz_sharding(fz_graph_t* g, const cml_mesh_t* m, int32_t rank,
                                         cml_sharding_t* out) {
  static const char* const names[] = {"", "x", "y", "x,y", "y,x", "x,x", "z", ",", NULL};
  memset(out, 0, sizeof *out);
  uint8_t b = fz_u8(&g->z);
  if (b < 16) return NULL;
  if (!m || b < 48) return out;
  const char* per_axis[CML_MAX_RANK];
  size_t n = rank < 0 ? 0 : rank > CML_MAX_RANK ? CML_MAX_RANK : (size_t)rank;
  if (fz_u8(&g->z) > 240) n = fz_u8(&g->z) % (CML_MAX_RANK + 1);
  for (size_t i = 0; i < n; ++i) per_axis[i] = names[fz_u8(&g->z) % (sizeof names / sizeof *names)];
  cml_status_t st = cml_sharding_make(m, per_axis, n, out);
  if (st != CML_OK) {
    cml_fuzz_check_status(st, "cml_sharding_make");
    // A hand-made spec, so that the builder's own validation sees bad ones too.
    out->mesh = m;
    out->rank = (int32_t)(fz_u8(&g->z) % (CML_MAX_RANK + 2));
    for (int32_t d = 0; d < CML_MAX_RANK; ++d) {
      out->axis_count[d] = (int8_t)(fz_u8(&g->z) % 3);
      for (int a = 0; a < CML_MAX_MESH_AXES; ++a) out->mesh_axes[d][a] = (int8_t)(fz_u8(&g->z) % 4);
    }
  }
  return out;
}

// A quantization description from the stream; with |scale| / |zero| values when picked.
static void fz_quantization(fz_graph_t* g, cml_quantization_t* q) {
  cml_quantization_init(q);
  uint8_t b = fz_u8(&g->z);
  q->scheme = b < 250 ? (cml_quant_scheme_t)(b % 3) : (cml_quant_scheme_t)(b % 5 + 1);
  b = fz_u8(&g->z);
  q->ggml_type =
      b < 250 ? (cml_ggml_type_t)(b % CML_GGML_TYPE_COUNT) : (cml_ggml_type_t)(b % 3 + 11);
  static const int64_t sizes[] = {1, 2, 3, 4, 32, 0, -1};
  q->block_size = sizes[fz_u8(&g->z) % (sizeof sizes / sizeof *sizes)];
  q->block_axis = fz_u8(&g->z) < 240 ? 1 : fz_axis(&g->z);
}

// Parameters that make a well-formed FusedQuantizedDense (or embedding) likely: x Float32
// [m, K] and weights of the scheme's layout, plus the scale / zero point a Linear or NF4 case
// needs, all parameters of the current function.
static void fz_quant_operands(fz_graph_t* g, cml_quantization_t* q, cml_value_t* x,
                              cml_value_t* w) {
  cml_function_t* f = fz_cur_fn(g);
  int64_t m = 1 + fz_u8(&g->z) % 3, n = 1 + fz_u8(&g->z) % 5, k;
  cml_shape_t ws;
  if (q->scheme == CML_QUANT_GGML) {
    const int64_t per = cml_ggml_type_values_per_block(q->ggml_type);
    k = (per > 0 ? per : 32) * (1 + fz_u8(&g->z) % 2);
    ws = cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){n, cml_ggml_row_bytes(q->ggml_type, k)});
  } else {
    static const cml_dtype_t wd[] = {CML_DTYPE_I8, CML_DTYPE_U8, CML_DTYPE_I4,
                                     CML_DTYPE_U4, CML_DTYPE_I2, CML_DTYPE_U2};
    k = 1 + fz_u8(&g->z) % 6;
    ws = cml_shape_make(wd[fz_u8(&g->z) % 6], 2, (int64_t[]){k, n});
    const int64_t bsz = q->block_size >= 1 ? q->block_size : 1;
    cml_shape_t ss = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){k, (n + bsz - 1) / bsz});
    q->scale = fz_note(g, cml_parameter(f, NULL, &ss), "Parameter (scale)");
    if (q->scheme == CML_QUANT_LINEAR && fz_u8(&g->z) & 1) {
      q->zero_point = fz_note(g, cml_parameter(f, NULL, &ss), "Parameter (zero point)");
    }
  }
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){m, k});
  *x = fz_note(g, cml_parameter(f, NULL, &xs), "Parameter (x)");
  *w = fz_note(g, cml_parameter(f, NULL, &ws), "Parameter (weights)");
}

static void fz_step_extended(fz_graph_t* g, uint8_t which) {
  fz_stream_t* z = &g->z;
  cml_function_t* f = fz_cur_fn(g);
  int32_t ids[16];
  cml_replica_groups_t groups;
  switch (which % FX_COUNT) {
    case FX_SPMD: {
      uint8_t b = fz_u8(z);
      int n = b < 240 ? 1 + b % 4 : (int)(b % 4) - 2;
      cml_status_t st = cml_builder_spmd(g->b, n);
      if (st != CML_OK) cml_fuzz_check_status(st, "cml_builder_spmd");
      break;
    }
    case FX_AUTO_SHARDING: {
      if (g->mesh_count < 2) {
        static const char* const names[] = {"x", "y", "x", "1bad", "_z"};
        static const int64_t sizes[] = {1, 2, 2, 4, 3, 0, -1};
        size_t axes = fz_u8(z) % 4;
        const char* an[3];
        int64_t as[3];
        for (size_t i = 0; i < axes && i < 3; ++i) {
          an[i] = names[fz_u8(z) % 5];
          as[i] = sizes[fz_u8(z) % 7];
        }
        cml_mesh_t* m = NULL;
        cml_status_t st = cml_mesh_create(fz_u8(z) & 1 ? NULL : "mesh", an, as, axes, &m);
        if (st == CML_OK) {
          g->meshes[g->mesh_count++] = m;
        } else {
          cml_fuzz_check_status(st, "cml_mesh_create");
        }
      }
      size_t count = fz_u8(z) % (size_t)(g->mesh_count + 1);
      cml_status_t st = cml_builder_auto_sharding(g->b, (const cml_mesh_t* const*)g->meshes, count);
      if (st != CML_OK) cml_fuzz_check_status(st, "cml_builder_auto_sharding");
      break;
    }
    case FX_SHARDED_PARAMETER: {
      cml_shape_t s = fz_shape_or_like(g);
      cml_sharding_t sh;
      const cml_mesh_t* m = g->mesh_count ? g->meshes[fz_u8(z) % g->mesh_count] : NULL;
      const cml_sharding_t* spec = fz_sharding(g, m, s.rank, &sh);
      // Main only: a closure gets INVALID_ARGUMENT.
      cml_function_t* target = fz_u8(z) < 230 ? g->fns[0].f : f;
      if (target == g->fns[0].f && fz_cur(g) != 0) target = f;
      fz_note(g, cml_parameter_sharded(target, NULL, &s, spec), "Parameter (sharded)");
      break;
    }
    case FX_ALL_REDUCE: {
      size_t count = 1 + fz_u8(z) % 2;
      cml_value_t ops[2], out[2] = {0, 0};
      for (size_t i = 0; i < count; ++i) ops[i] = fz_pick(g);
      cml_reduce_type_t type = fz_reduce_type(g);
      bool ok = cml_op_all_reduce(f, ops, count, type, fz_groups(g, ids, &groups), out);
      fz_note_multi(g, ok, out, count, "AllReduce");
      break;
    }
    case FX_ALL_GATHER: {
      cml_value_t x = fz_pick(g);
      int64_t axis = fz_axis(z);
      fz_note(g, cml_op_all_gather(f, x, axis, fz_groups(g, ids, &groups)), "AllGather");
      break;
    }
    case FX_REDUCE_SCATTER: {
      cml_value_t x = fz_pick(g);
      cml_reduce_type_t type = fz_reduce_type(g);
      int64_t axis = fz_axis(z);
      fz_note(g, cml_op_reduce_scatter(f, x, type, axis, fz_groups(g, ids, &groups)),
              "ReduceScatter");
      break;
    }
    case FX_ALL_TO_ALL: {
      cml_value_t x = fz_pick(g);
      int64_t split = fz_axis(z), concat = fz_axis(z);
      fz_note(g, cml_op_all_to_all(f, x, split, concat, fz_groups(g, ids, &groups)), "AllToAll");
      break;
    }
    case FX_COLLECTIVE_PERMUTE: {
      cml_value_t x = fz_pick(g);
      int32_t pairs[8];
      size_t count = fz_u8(z) % 5;
      for (size_t i = 0; i < 2 * count; ++i) {
        uint8_t b = fz_u8(z);
        pairs[i] = b < 240 ? (int32_t)(b % 4) : (int32_t)fz_axis(z);
      }
      fz_note(g, cml_op_collective_permute(f, x, count ? pairs : NULL, count), "CollectivePermute");
      break;
    }
    case FX_COLLECTIVE_BROADCAST: {
      cml_value_t x = fz_pick(g);
      fz_note(g, cml_op_collective_broadcast(f, x, fz_groups(g, ids, &groups)),
              "CollectiveBroadcast");
      break;
    }
    case FX_IDS:
      fz_note(g, fz_u8(z) & 1 ? cml_op_replica_id(f) : cml_op_partition_id(f), "ReplicaId");
      break;
    case FX_QUANT_DENSE:
    case FX_QUANT_EMBEDDING: {
      cml_quantization_t q;
      fz_quantization(g, &q);
      cml_value_t x, w;
      if (fz_u8(z) < 160) {
        fz_quant_operands(g, &q, &x, &w);
      } else {
        x = fz_pick(g);
        w = fz_pick(g);
        if (fz_u8(z) < 128) q.scale = fz_pick(g);
        if (fz_u8(z) < 64) q.zero_point = fz_pick(g);
      }
      if (which % FX_COUNT == FX_QUANT_DENSE) {
        cml_value_t bias = fz_u8(z) < 128 ? CML_VALUE_INVALID : fz_pick(g);
        uint8_t act = fz_u8(z);
        cml_activation_t a = act < 250 ? (cml_activation_t)(act % CML_ACTIVATION_COUNT)
                                       : (cml_activation_t)(act % 4 + CML_ACTIVATION_COUNT - 1);
        fz_note(g, cml_op_fused_quantized_dense(f, x, w, bias, fz_u8(z) == 255 ? NULL : &q, a),
                "FusedQuantizedDense");
      } else {
        // Embedding: the weights are the table; indices [rows..., 1] of an integer dtype.
        cml_value_t indices = fz_pick(g);
        if (fz_u8(z) < 160) {
          cml_shape_t is = cml_shape_make(fz_u8(z) & 1 ? CML_DTYPE_I32 : CML_DTYPE_I64, 2,
                                          (int64_t[]){1 + fz_u8(z) % 3, 1});
          indices = fz_note(g, cml_parameter(f, NULL, &is), "Parameter (indices)");
        }
        fz_note(g, cml_op_quantized_embedding_lookup(f, w, indices, &q),
                "QuantizedEmbeddingLookup");
      }
      break;
    }
    case FX_GRADIENTS: {
      cml_value_t loss = fz_pick(g);
      if (fz_u8(z) < 200) {  // mostly a scalar: the sum over every axis
        cml_shape_t ls = fz_shape_of(g, loss);
        int64_t axes[CML_MAX_RANK];
        int32_t r = ls.rank < 0 ? 0 : ls.rank > CML_MAX_RANK ? CML_MAX_RANK : ls.rank;
        for (int32_t i = 0; i < r; ++i) axes[i] = i;
        loss = fz_note(g, cml_op_reduce(f, CML_OP_REDUCE_SUM, loss, r ? axes : NULL, (size_t)r),
                       "ReduceSum (loss)");
      }
      size_t count = fz_u8(z) % 3;
      cml_value_t wrt[2], grads[2] = {0, 0};
      for (size_t i = 0; i < count; ++i) wrt[i] = fz_pick(g);
      cml_status_t st = cml_gradients(f, loss, count ? wrt : NULL, count, grads);
      if (st != CML_OK) {
        cml_fuzz_check_status(st, "cml_gradients");
        if (fz_builder_ok(g)) cml_fuzz_violation("cml_gradients failed without a sticky error");
        for (size_t i = 0; i < count; ++i) {
          if (grads[i] != CML_VALUE_INVALID)
            cml_fuzz_violation("cml_gradients: error but output set");
        }
      } else {
        for (size_t i = 0; i < count; ++i) fz_note(g, grads[i], "gradient");
      }
      break;
    }
    case FX_STOP_GRADIENT:
      fz_note(g, cml_op_stop_gradient(f, fz_pick(g)), "StopGradient");
      break;
    default:
      break;
  }
}

//===--- one step ---===//

enum {
  FZ_PARAMETER,
  FZ_CONSTANT,
  FZ_SCALAR,
  FZ_UNARY,
  FZ_BINARY,
  FZ_COMPARE,
  FZ_REDUCE,
  FZ_CONVERT,
  FZ_BITCAST,
  FZ_CLAMP,
  FZ_WHERE,
  FZ_RESHAPE,
  FZ_TRANSPOSE,
  FZ_BROADCAST,
  FZ_CONCAT,
  FZ_SLICE,
  FZ_REVERSE,
  FZ_IOTA,
  FZ_PAD,
  FZ_DYNAMIC_SLICE,
  FZ_DYNAMIC_UPDATE_SLICE,
  FZ_GATHER,
  FZ_SCATTER,
  FZ_CONV,
  FZ_REDUCE_WINDOW,
  FZ_SELECT_AND_SCATTER,
  FZ_DOT_GENERAL,
  FZ_DOT,
  FZ_ARG_MIN_MAX,
  FZ_RNG,
  FZ_FFT,
  FZ_BATCH_NORM,
  FZ_BARRIER,
  FZ_OPEN_CLOSURE,
  FZ_CLOSE,
  FZ_NEW_FUNCTION,
  FZ_CALL,
  FZ_WHILE_TEMPLATE,
  FZ_IF_TEMPLATE,
  FZ_SORT_TEMPLATE,
  FZ_RAW_CONTROL,
  FZ_STEP_COUNT
};

static void fz_step(fz_graph_t* g) {
  fz_stream_t* z = &g->z;
  cml_function_t* f = fz_cur_fn(g);
  const uint8_t raw = fz_u8(z);
  g->ok_before = fz_builder_ok(g);
  // The top opcode bytes pick the steps of the newer API (distribution, collectives, quantized
  // ops, autodiff); the others keep their meaning (the corpus decodes as before).
  if (raw >= FZ_EXTENDED_FIRST) {
    fz_step_extended(g, raw - FZ_EXTENDED_FIRST);
    return;
  }
  uint8_t opcode = raw % FZ_STEP_COUNT;
  int64_t a0[CML_MAX_RANK + 2], a1[CML_MAX_RANK + 2], a2[CML_MAX_RANK + 2];
  memset(a0, 0, sizeof a0);
  memset(a1, 0, sizeof a1);
  memset(a2, 0, sizeof a2);
  switch (opcode) {
    case FZ_PARAMETER: {
      cml_shape_t s = fz_shape_or_like(g);
      uint8_t b = fz_u8(z);
      char name[8];
      snprintf(name, sizeof name, "p%d", b % 6);
      fz_note(g, cml_parameter(f, b < 128 ? NULL : name, &s), "Parameter");
      break;
    }
    case FZ_CONSTANT: {
      cml_shape_t s = fz_shape_or_like(g);
      uint8_t data[CML_FUZZ_CONST_BYTES];
      for (size_t i = 0; i < sizeof data; ++i) data[i] = (uint8_t)(i * 37u + 11u);
      size_t take = fz_u8(z) % 64;  // read before measuring what is left
      size_t n = z->n < sizeof data ? z->n : sizeof data;
      if (take > n) take = n;
      memcpy(data, z->p, take);
      z->p += take;
      z->n -= take;
      size_t bytes = fz_safe_bytes(&s);
      if (s.dtype == CML_DTYPE_BOOL) {
        for (size_t i = 0; i < sizeof data; ++i) data[i] &= 1;
      }
      fz_note(g, cml_constant(f, &s, bytes <= sizeof data ? data : NULL), "Constant");
      break;
    }
    case FZ_SCALAR:
      fz_note(g, fz_scalar(g, f, fz_dtype(z)), "Constant scalar");
      break;
    case FZ_UNARY: {
      cml_op_t op = fz_op_of_kind(g, CML_OPK_UNARY);
      fz_note(g, cml_op_unary(f, op, fz_pick(g)), "unary");
      break;
    }
    case FZ_BINARY:
    case FZ_COMPARE: {
      cml_op_t op = fz_op_of_kind(g, opcode == FZ_BINARY ? CML_OPK_BINARY : CML_OPK_COMPARE);
      cml_value_t x = fz_pick(g);
      fz_note(g, cml_op_binary(f, op, x, fz_pick_like(g, x, true)), "binary");
      break;
    }
    case FZ_REDUCE: {
      cml_op_t op = fz_op_of_kind(g, CML_OPK_REDUCE);
      cml_value_t x = fz_pick(g);
      size_t n = fz_axes(g, a0, 4);
      fz_note(g, cml_op_reduce(f, op, x, n ? a0 : NULL, n), "reduce");
      break;
    }
    case FZ_CONVERT: {
      cml_value_t x = fz_pick(g);
      fz_note(g, cml_op_convert_dtype(f, x, fz_dtype(z)), "ConvertDType");
      break;
    }
    case FZ_BITCAST: {
      cml_value_t x = fz_pick(g);
      fz_note(g, cml_op_bitcast(f, x, fz_dtype(z)), "Bitcast");
      break;
    }
    case FZ_CLAMP: {
      cml_value_t x = fz_pick(g);
      cml_value_t lo = fz_u8(z) < 128 ? fz_scalar(g, f, fz_shape_of(g, x).dtype) : fz_pick(g);
      cml_value_t hi =
          fz_u8(z) < 128 ? fz_scalar(g, f, fz_shape_of(g, x).dtype) : fz_pick_like(g, x, true);
      fz_note(g, cml_op_clamp(f, lo, x, hi), "Clamp");
      break;
    }
    case FZ_WHERE: {
      cml_value_t x = fz_pick(g);
      cml_value_t y = fz_pick_like(g, x, true);
      cml_value_t cond =
          fz_u8(z) < 160 ? cml_op_binary(f, fz_op_of_kind(g, CML_OPK_COMPARE), x, y) : fz_pick(g);
      fz_note(g, cml_op_where(f, cond, x, y), "Where");
      break;
    }
    case FZ_RESHAPE: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      int32_t rank;
      uint8_t b = fz_u8(z);
      if (b < 160) {
        // A valid reshape: the element count split into [n / d, d] or [n] or [1, n, 1].
        int64_t n = cml_shape_element_count(&s);
        int64_t d = s.rank > 0 ? s.dims[s.rank - 1] : 1;
        if (b % 3 == 0 && d > 0) {
          a0[0] = n / d;
          a0[1] = d;
          rank = 2;
        } else if (b % 3 == 1) {
          a0[0] = n;
          rank = 1;
        } else {
          a0[0] = 1;
          a0[1] = n;
          a0[2] = 1;
          rank = 3;
        }
      } else {
        rank = fz_rank(z);
        for (int32_t i = 0; i < rank && i < CML_MAX_RANK; ++i) a0[i] = fz_dim(z);
      }
      fz_note(g, cml_op_reshape(f, x, a0, rank), "Reshape");
      break;
    }
    case FZ_TRANSPOSE: {
      cml_value_t x = fz_pick(g);
      int32_t rank = fz_shape_of(g, x).rank;
      if (fz_u8(z) > 240) rank = fz_rank(z);
      if (rank < 0 || rank > CML_MAX_RANK) rank = rank < 0 ? -1 : CML_MAX_RANK + 1;
      fz_permutation(g, a0, rank > CML_MAX_RANK ? CML_MAX_RANK : rank < 0 ? 0 : rank);
      fz_note(g, cml_op_transpose(f, x, a0, rank), "Transpose");
      break;
    }
    case FZ_BROADCAST: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      // Insert up to 2 new axes at random places; x's axes keep their order.
      int32_t extra = fz_u8(z) % 3;
      int32_t out_rank = s.rank + extra;
      if (out_rank > CML_MAX_RANK) out_rank = CML_MAX_RANK;
      int32_t xi = 0;
      for (int32_t o = 0; o < out_rank; ++o) {
        bool take_x = xi < s.rank && (out_rank - o == s.rank - xi || fz_u8(z) < 128);
        if (take_x) {
          a1[xi] = o;
          a0[o] = s.dims[xi] == 1 && fz_u8(z) < 64 ? fz_dim(z) : s.dims[xi];
          ++xi;
        } else {
          a0[o] = fz_dim(z);
        }
      }
      int32_t axis_count = xi;
      if (fz_u8(z) > 235) {
        axis_count = (int32_t)fz_axes(g, a1, 5);
        if (fz_u8(z) & 1) out_rank = fz_rank(z) % (CML_MAX_RANK + 1);
      }
      fz_note(g, cml_op_broadcast_in_dim(f, x, a0, out_rank, a1, axis_count), "BroadcastInDim");
      break;
    }
    case FZ_CONCAT: {
      size_t count = fz_u8(z) % 5;
      cml_value_t ops[4] = {0, 0, 0, 0};
      if (count > 0) ops[0] = fz_pick(g);
      for (size_t i = 1; i < count; ++i) ops[i] = fz_u8(z) < 128 ? ops[0] : fz_pick(g);
      fz_note(g, cml_op_concatenate(f, fz_axis(z), count ? ops : NULL, count), "Concatenate");
      break;
    }
    case FZ_SLICE: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      int32_t rank = s.rank;
      for (int32_t i = 0; i < rank; ++i) {
        int64_t d = s.dims[i];
        a0[i] = d > 0 ? fz_u8(z) % (d + 1) : 0;
        a1[i] = a0[i] + (d - a0[i] > 0 ? fz_u8(z) % (d - a0[i] + 1) : 0);
        a2[i] = 1 + fz_u8(z) % 3;
      }
      if (fz_u8(z) > 230 && rank > 0) {
        int32_t i = fz_u8(z) % rank;
        a0[i] = fz_axis(z);
        a1[i] = fz_dim(z);
        a2[i] = fz_axis(z);
      }
      if (fz_u8(z) > 245) rank = fz_rank(z);
      fz_note(g, cml_op_slice(f, x, a0, a1, fz_u8(z) < 128 ? NULL : a2, rank), "Slice");
      break;
    }
    case FZ_REVERSE: {
      cml_value_t x = fz_pick(g);
      size_t n = fz_axes(g, a0, 4);
      fz_note(g, cml_op_reverse(f, x, n ? a0 : NULL, n), "Reverse");
      break;
    }
    case FZ_IOTA: {
      cml_shape_t s = fz_shape_or_like(g);
      fz_note(g, cml_op_iota(f, &s, fz_axis(z)), "Iota");
      break;
    }
    case FZ_PAD: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      cml_value_t fill = fz_u8(z) < 200 ? fz_scalar(g, f, s.dtype) : fz_pick(g);
      cml_pad_axis_t pads[CML_MAX_RANK + 1];
      size_t n = fz_u8(z) < 200 ? (size_t)s.rank : fz_u8(z) % (CML_MAX_RANK + 2);
      if (n > CML_MAX_RANK + 1) n = CML_MAX_RANK + 1;
      for (size_t i = 0; i < n; ++i) {
        uint8_t b = fz_u8(z);
        pads[i].low = (int64_t)(b % 5) - 2;
        pads[i].high = (int64_t)((b / 5) % 5) - 2;
        pads[i].interior = b > 250 ? -1 : (b / 25) % 3;
      }
      fz_note(g, cml_op_pad(f, x, fill, n ? pads : NULL, n), "Pad");
      break;
    }
    case FZ_DYNAMIC_SLICE:
    case FZ_DYNAMIC_UPDATE_SLICE: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      cml_value_t starts[CML_MAX_RANK];
      cml_dtype_t sd = fz_u8(z) < 200 ? CML_DTYPE_I32 : fz_dtype(z);
      int32_t rank = s.rank;
      for (int32_t i = 0; i < rank; ++i) {
        starts[i] = cml_constant_scalar_i64(f, sd, (int64_t)(int8_t)fz_u8(z));
        a0[i] = s.dims[i] > 0 ? fz_u8(z) % (s.dims[i] + 1) : 0;
      }
      if (fz_u8(z) > 240) {
        rank = fz_rank(z);
        if (rank > CML_MAX_RANK) rank = CML_MAX_RANK;  // |starts| holds CML_MAX_RANK values
        for (int32_t i = s.rank; i < rank; ++i) starts[i] = fz_pick(g);
      }
      if (opcode == FZ_DYNAMIC_SLICE) {
        fz_note(g, cml_op_dynamic_slice(f, x, rank > 0 ? starts : NULL, a0, rank), "DynamicSlice");
      } else {
        cml_value_t update = x;
        if (fz_u8(z) < 128)
          update = cml_op_slice(f, x, a1, a0, NULL, s.rank);
        else
          update = fz_pick(g);
        fz_note(g, cml_op_dynamic_update_slice(f, x, update, rank > 0 ? starts : NULL, rank),
                "DynamicUpdateSlice");
      }
      break;
    }
    case FZ_GATHER: {
      cml_value_t operand = fz_pick(g);
      cml_shape_t os = fz_shape_of(g, operand);
      int32_t r = os.rank;
      int32_t m = r > 0 ? 1 + fz_u8(z) % r : 0;
      int64_t k = 1 + fz_u8(z) % 4;
      cml_gather_dims_t d;
      memset(&d, 0, sizeof d);
      cml_shape_t is =
          cml_shape_make(fz_u8(z) < 200 ? CML_DTYPE_I32 : fz_dtype(z), 2, (int64_t[]){k, m});
      int32_t start = fz_u8(z) % (r - m + 1 > 0 ? r - m + 1 : 1);
      d.index_vector_axis = 1;
      d.start_index_map_count = m;
      d.collapsed_slice_axis_count = m;
      for (int32_t i = 0; i < m; ++i) {
        d.start_index_map[i] = start + i;
        d.collapsed_slice_axes[i] = start + i;
      }
      d.slice_size_count = r;
      int32_t o = 0;
      for (int32_t i = 0; i < r; ++i) {
        bool collapsed = i >= start && i < start + m;
        d.slice_sizes[i] = collapsed ? 1 : (os.dims[i] > 0 ? 1 + fz_u8(z) % os.dims[i] : 0);
        if (!collapsed) {
          d.offset_output_axes[o] = 1 + o;
          ++o;
        }
      }
      d.offset_output_axis_count = o;
      d.indices_are_sorted = fz_u8(z) & 1;
      if (fz_u8(z) > 220) {  // break one field
        switch (fz_u8(z) % 5) {
          case 0:
            d.index_vector_axis = fz_axis(z);
            break;
          case 1:
            d.slice_sizes[fz_u8(z) % CML_MAX_RANK] = fz_dim(z);
            break;
          case 2:
            d.collapsed_slice_axes[0] = fz_axis(z);
            break;
          case 3:
            d.offset_output_axis_count = (int32_t)fz_axis(z);
            break;
          default:
            d.start_index_map_count = (int32_t)fz_axis(z);
            break;
        }
      }
      int64_t idx[64];
      size_t n = (size_t)(k * m);
      for (size_t i = 0; i < n && i < 64; ++i) idx[i] = (int64_t)(int8_t)fz_u8(z);
      cml_value_t indices;
      if (is.dtype == CML_DTYPE_I32 && n <= 64) {
        int32_t idx32[64];
        for (size_t i = 0; i < n; ++i) idx32[i] = (int32_t)idx[i];
        indices = cml_constant(f, &is, idx32);
      } else {
        indices = cml_op_iota(f, &is, 0);
      }
      if (fz_u8(z) > 230) indices = fz_pick(g);
      fz_note(g, cml_op_gather(f, operand, indices, &d), "Gather");
      break;
    }
    case FZ_SCATTER: {
      cml_value_t operand = fz_pick(g);
      cml_shape_t os = fz_shape_of(g, operand);
      int32_t r = os.rank;
      int64_t k = 1 + fz_u8(z) % 4;
      int32_t axis = r > 0 ? fz_u8(z) % r : 0;
      cml_scatter_dims_t d;
      memset(&d, 0, sizeof d);
      d.index_vector_axis = 1;
      d.inserted_window_axis_count = r > 0 ? 1 : 0;
      d.inserted_window_axes[0] = axis;
      d.scatter_axes_to_operand_axes_count = r > 0 ? 1 : 0;
      d.scatter_axes_to_operand_axes[0] = axis;
      cml_shape_t us;
      memset(&us, 0, sizeof us);
      us.dtype = os.dtype;
      us.rank = r > 0 ? r : 1;
      us.dims[0] = k;
      int32_t u = 1;
      for (int32_t i = 0; i < r; ++i) {
        if (i == axis) continue;
        us.dims[u] = os.dims[i] > 0 ? 1 + fz_u8(z) % os.dims[i] : 0;
        d.update_window_axes[u - 1] = u;
        ++u;
      }
      d.update_window_axis_count = u - 1;
      d.indices_are_sorted = fz_u8(z) & 1;
      d.unique_indices = fz_u8(z) & 1;
      if (fz_u8(z) > 220) {
        switch (fz_u8(z) % 4) {
          case 0:
            d.index_vector_axis = fz_axis(z);
            break;
          case 1:
            d.inserted_window_axes[0] = fz_axis(z);
            break;
          case 2:
            d.update_window_axis_count = (int32_t)fz_axis(z);
            break;
          default:
            d.scatter_axes_to_operand_axes[0] = fz_axis(z);
            break;
        }
      }
      int32_t idx[8];
      for (int64_t i = 0; i < k; ++i) idx[i] = (int32_t)(int8_t)fz_u8(z);
      cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){k, 1});
      cml_value_t indices = cml_constant(f, &is, idx);
      cml_value_t updates = fz_u8(z) < 200 ? cml_op_iota(f, &us, 0) : fz_pick(g);
      cml_op_t op = fz_u8(z) < 240 ? (cml_op_t)(CML_OP_SCATTER_MAX + fz_u8(z) % 3)
                                   : fz_op_of_kind(g, CML_OPK_OTHER);
      fz_note(g, cml_op_scatter(f, op, operand, indices, updates, &d), "Scatter");
      break;
    }
    case FZ_CONV: {
      cml_value_t input = fz_pick(g);
      cml_shape_t in = fz_shape_of(g, input);
      cml_conv_config_t c;
      memset(&c, 0, sizeof c);
      int32_t sp = in.rank > 2 ? in.rank - 2 : 1;
      c.spatial_count = sp;
      c.input_batch_axis = 0;
      c.input_channel_axis = 1;
      c.kernel_output_channel_axis = 0;
      c.kernel_input_channel_axis = 1;
      c.output_batch_axis = 0;
      c.output_channel_axis = 1;
      cml_shape_t ks;
      memset(&ks, 0, sizeof ks);
      ks.dtype = in.dtype;
      ks.rank = sp + 2;
      int64_t groups = 1 + fz_u8(z) % 2;
      int64_t in_ch = in.rank > 1 ? in.dims[1] : 1;
      ks.dims[0] = (1 + fz_u8(z) % 3) * groups;
      ks.dims[1] = in_ch % groups == 0 ? in_ch / groups : in_ch;
      for (int32_t i = 0; i < sp && i < CML_MAX_RANK - 2; ++i) {
        c.input_spatial_axes[i] = 2 + i;
        c.kernel_spatial_axes[i] = 2 + i;
        c.output_spatial_axes[i] = 2 + i;
        int64_t w = in.rank > 2 + i ? in.dims[2 + i] : 1;
        ks.dims[2 + i] = w > 0 ? 1 + fz_u8(z) % w : 1;
        c.strides[i] = fz_u8(z) % 3;
        c.padding_low[i] = fz_u8(z) % 2;
        c.padding_high[i] = fz_u8(z) % 2;
        c.input_dilations[i] = fz_u8(z) % 3;
        c.kernel_dilations[i] = fz_u8(z) % 3;
      }
      c.channel_group_count = groups;
      c.batch_group_count = fz_u8(z) > 240 ? 2 : 1;
      c.output_dtype = fz_u8(z) > 240 ? fz_dtype(z) : CML_DTYPE_INVALID;
      if (fz_u8(z) > 220) {
        switch (fz_u8(z) % 5) {
          case 0:
            c.spatial_count = (int32_t)fz_axis(z);
            break;
          case 1:
            c.input_channel_axis = fz_axis(z);
            break;
          case 2:
            c.kernel_spatial_axes[0] = fz_axis(z);
            break;
          case 3:
            c.strides[0] = -(int64_t)fz_u8(z);
            break;
          default:
            c.padding_low[0] = -(int64_t)(fz_u8(z) % 8);
            break;
        }
      }
      cml_value_t kernel = fz_u8(z) < 200 ? cml_op_iota(f, &ks, fz_u8(z) % 2) : fz_pick(g);
      cml_value_t conv = fz_note(g, cml_op_conv_general(f, input, kernel, &c), "ConvGeneral");
      const cml_shape_t kshape = fz_shape_of(g, kernel);
      fz_add_work(g, conv, fz_product(kshape.dims, kshape.rank));
      break;
    }
    case FZ_REDUCE_WINDOW:
    case FZ_SELECT_AND_SCATTER: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      cml_window_config_t w;
      memset(&w, 0, sizeof w);
      w.rank = s.rank;
      for (int32_t i = 0; i < s.rank; ++i) {
        w.window_dims[i] = s.dims[i] > 0 ? 1 + fz_u8(z) % s.dims[i] : 1;
        w.strides[i] = fz_u8(z) % 3;
        if (opcode == FZ_REDUCE_WINDOW) {
          w.input_dilations[i] = fz_u8(z) % 3;
          w.window_dilations[i] = fz_u8(z) % 3;
        }
        w.padding_low[i] = fz_u8(z) % 2;
        w.padding_high[i] = fz_u8(z) % 2;
      }
      if (fz_u8(z) > 225) {
        switch (fz_u8(z) % 4) {
          case 0:
            w.rank = fz_rank(z);
            break;
          case 1:
            w.window_dims[0] = fz_dim(z);
            break;
          case 2:
            w.strides[0] = -(int64_t)fz_u8(z);
            break;
          default:
            w.padding_high[0] = -(int64_t)(fz_u8(z) % 9);
            break;
        }
      }
      cml_reduce_type_t type = (cml_reduce_type_t)(fz_u8(z) % (CML_REDUCE_TYPE_COUNT + 1));
      cml_value_t r = cml_op_reduce_window(f, x, type, &w);
      const uint64_t window = fz_product(w.window_dims, w.rank);
      fz_add_work(g, r, window);
      if (opcode == FZ_REDUCE_WINDOW) {
        fz_note(g, r, "ReduceWindow");
      } else {
        cml_op_t op = (cml_op_t)(CML_OP_SELECT_AND_SCATTER_MAX + fz_u8(z) % 3);
        cml_value_t source = fz_u8(z) < 220 ? r : fz_pick(g);
        fz_add_work(g, source, window);
        fz_note(g, cml_op_select_and_scatter(f, op, x, source, &w), "SelectAndScatter");
      }
      break;
    }
    case FZ_DOT_GENERAL: {
      cml_value_t lhs = fz_pick(g);
      cml_value_t rhs = fz_pick_like(g, lhs, true);
      cml_shape_t ls = fz_shape_of(g, lhs);
      cml_dot_config_t c;
      memset(&c, 0, sizeof c);
      uint8_t b = fz_u8(z);
      if (b < 200 && ls.rank >= 1) {
        // Batch over leading axes, contract the last one of each.
        int32_t batch = fz_u8(z) % ls.rank;
        c.lhs_batch_count = c.rhs_batch_count = batch;
        for (int32_t i = 0; i < batch; ++i) c.lhs_batch_axes[i] = c.rhs_batch_axes[i] = i;
        c.lhs_contracting_count = c.rhs_contracting_count = 1;
        c.lhs_contracting_axes[0] = ls.rank - 1;
        c.rhs_contracting_axes[0] = fz_shape_of(g, rhs).rank - 1 - (fz_u8(z) % 2);
      } else {
        c.lhs_contracting_count = (int32_t)fz_axes(g, c.lhs_contracting_axes, 3);
        c.rhs_contracting_count = (int32_t)fz_axes(g, c.rhs_contracting_axes, 3);
        c.lhs_batch_count = (int32_t)fz_axes(g, c.lhs_batch_axes, 2);
        c.rhs_batch_count = (int32_t)fz_axes(g, c.rhs_batch_axes, 2);
      }
      if (fz_u8(z) > 200) c.accumulator_dtype = fz_dtype(z);
      if (fz_u8(z) > 200) c.output_dtype = fz_dtype(z);
      cml_value_t dot = fz_note(g, cml_op_dot_general(f, lhs, rhs, &c), "DotGeneral");
      int64_t contracted[CML_MAX_RANK];
      int32_t nc = 0;
      for (int32_t i = 0; i < c.lhs_contracting_count && i < CML_MAX_RANK; ++i) {
        const int64_t a = c.lhs_contracting_axes[i];
        contracted[nc++] = a >= 0 && a < ls.rank ? ls.dims[a] : 1;
      }
      fz_add_work(g, dot, fz_product(contracted, nc));
      break;
    }
    case FZ_DOT: {
      cml_value_t lhs = fz_pick(g);
      const cml_shape_t ls = fz_shape_of(g, lhs);
      cml_value_t dot = fz_note(g, cml_op_dot(f, lhs, fz_pick(g)), "Dot");
      fz_add_work(g, dot, ls.rank > 0 ? fz_product(&ls.dims[ls.rank - 1], 1) : 1);
      break;
    }
    case FZ_ARG_MIN_MAX: {
      cml_value_t x = fz_pick(g);
      int64_t axis = fz_axis(z);
      cml_dtype_t dtype = fz_u8(z) < 200 ? CML_DTYPE_I32 : fz_dtype(z);
      fz_note(g, cml_op_arg_min_max(f, x, axis, dtype, fz_u8(z) & 1), "ArgMinMax");
      break;
    }
    case FZ_RNG: {
      cml_value_t state;
      if (fz_u8(z) < 220) {
        uint64_t words[3] = {fz_u64(z), fz_u64(z), fz_u64(z)};
        cml_shape_t ss = cml_shape_make(CML_DTYPE_U64, 1, (int64_t[]){3});
        state = cml_constant(f, &ss, words);
      } else {
        state = fz_pick(g);
      }
      cml_shape_t s = fz_shape_or_like(g);
      cml_value_t out[2] = {0, 0};
      bool ok = cml_op_rng_bit_generator(f, state, &s, &out[0], &out[1]);
      fz_note_multi(g, ok, out, 2, "RNGBitGenerator");
      break;
    }
    case FZ_FFT: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      cml_fft_type_t type = (cml_fft_type_t)(fz_u8(z) % (CML_FFT_TYPE_COUNT + 1));
      size_t n = 1 + fz_u8(z) % 3;
      for (size_t i = 0; i < n; ++i) {
        int64_t axis = s.rank - (int64_t)n + (int64_t)i;
        a0[i] = axis >= 0 && axis < s.rank ? s.dims[axis] : 1;
        if (type == CML_FFT_INVERSE_REAL && i == n - 1) a0[i] = (a0[i] - 1) * 2;
      }
      if (fz_u8(z) > 230) a0[0] = fz_dim(z);
      if (fz_u8(z) > 245) n = fz_u8(z) % 5;
      fz_note(g, cml_op_fft(f, x, type, n ? a0 : NULL, n), "FFT");
      break;
    }
    case FZ_BATCH_NORM: {
      cml_value_t x = fz_pick(g);
      cml_shape_t s = fz_shape_of(g, x);
      int64_t axis = s.rank > 0 ? fz_u8(z) % s.rank : fz_axis(z);
      if (fz_u8(z) > 235) axis = fz_axis(z);
      cml_shape_t ps =
          cml_shape_make(s.dtype, 1, (int64_t[]){axis >= 0 && axis < s.rank ? s.dims[axis] : 1});
      cml_value_t p[4];
      for (int i = 0; i < 4; ++i) p[i] = fz_u8(z) < 230 ? cml_op_iota(f, &ps, 0) : fz_pick(g);
      float eps = fz_u8(z) < 200 ? 1e-3f : -1.0f;
      uint8_t kind = fz_u8(z) % 3;
      if (kind == 0) {
        fz_note(g, cml_op_batch_norm_inference(f, x, p[0], p[1], p[2], p[3], eps, axis),
                "BatchNormInference");
      } else {
        cml_value_t out[3] = {0, 0, 0};
        bool ok = kind == 1 ? cml_op_batch_norm_training(f, x, p[0], p[1], eps, axis, out)
                            : cml_op_batch_norm_gradient(f, x, p[0], p[1], p[2],
                                                         fz_pick_like(g, x, true), eps, axis, out);
        fz_note_multi(g, ok, out, 3, kind == 1 ? "BatchNormTraining" : "BatchNormGradient");
      }
      break;
    }
    case FZ_BARRIER: {
      size_t count = 1 + fz_u8(z) % 3;
      cml_value_t ops[3], out[3] = {0, 0, 0};
      for (size_t i = 0; i < count; ++i) ops[i] = fz_pick(g);
      if (fz_u8(z) < 128) {
        bool ok = cml_op_optimization_barrier(f, ops, count, out);
        fz_note_multi(g, ok, out, count, "OptimizationBarrier");
      } else {
        fz_note(g, cml_op_scheduling_barrier(f, ops[0], ops + 1, count - 1), "SchedulingBarrier");
      }
      break;
    }
    case FZ_OPEN_CLOSURE: {
      if (g->depth > CML_FUZZ_MAX_DEPTH - 1) break;
      int slot = fz_new_closure(g);
      if (slot < 0) break;
      fz_push(g, slot);
      size_t params = fz_u8(z) % 3;
      for (size_t i = 0; i < params; ++i) {
        cml_shape_t s = fz_shape_or_like(g);
        fz_note(g, cml_parameter(g->fns[slot].f, NULL, &s), "Parameter (closure)");
      }
      break;
    }
    case FZ_CLOSE: {
      if (g->depth <= 1) {  // nothing open: Return a returned function again
        int slot = fz_pick_returned(g);
        cml_value_t out = fz_pick(g);
        if (slot >= 0) fz_return(g, slot, &out, 1);
        break;
      }
      int slot = fz_cur(g);
      size_t count = 1 + fz_u8(z) % 3;
      cml_value_t outs[3];
      for (size_t i = 0; i < count; ++i) outs[i] = fz_pick(g);
      fz_return(g, slot, outs, count);
      --g->depth;
      break;
    }
    case FZ_NEW_FUNCTION: {
      if (g->depth > CML_FUZZ_MAX_DEPTH - 1 || g->fn_count >= CML_FUZZ_MAX_FNS) break;
      char name[16];
      uint8_t b = fz_u8(z);
      if (b < 200) {
        snprintf(name, sizeof name, "fn%d", b % 8);
      } else {
        for (size_t i = 0; i < sizeof name - 1; ++i) name[i] = (char)fz_u8(z);
        name[sizeof name - 1] = '\0';
      }
      cml_function_t* nf = NULL;
      cml_status_t st = cml_builder_new_function(g->b, b == 255 ? "main" : name, &nf);
      if (st != CML_OK) {
        cml_fuzz_check_status(st, "cml_builder_new_function");
        break;
      }
      int slot = fz_add_fn(g, nf, -1);
      fz_push(g, slot);
      size_t params = fz_u8(z) % 3;
      for (size_t i = 0; i < params && slot >= 0; ++i) {
        cml_shape_t s = fz_shape_or_like(g);
        fz_note(g, cml_parameter(nf, NULL, &s), "Parameter (function)");
      }
      break;
    }
    case FZ_CALL: {
      int slot = fz_pick_returned(g);
      cml_function_t* callee = slot >= 0 ? g->fns[slot].f : cml_builder_main(g->other);
      size_t count = fz_u8(z) % 4;
      cml_value_t inputs[3];
      for (size_t i = 0; i < count && i < 3; ++i) inputs[i] = fz_pick(g);
      if (count > 3) count = 3;
      cml_value_t out[8];
      size_t out_count = cml_function_output_count(callee);
      if (out_count > 8) break;
      bool ok = cml_op_call(f, callee, count ? inputs : NULL, count, out);
      fz_note_multi(g, ok, out, out_count, "Call");
      break;
    }
    case FZ_WHILE_TEMPLATE:
      fz_template_while(g);
      break;
    case FZ_IF_TEMPLATE:
      fz_template_if(g);
      break;
    case FZ_SORT_TEMPLATE:
      fz_template_sort(g);
      break;
    case FZ_RAW_CONTROL: {
      int s0 = fz_pick_returned(g), s1 = fz_pick_returned(g);
      cml_function_t* c0 = s0 >= 0 ? g->fns[s0].f : NULL;
      cml_function_t* c1 = s1 >= 0 ? g->fns[s1].f : cml_builder_main(g->other);
      size_t count = 1 + fz_u8(z) % 3;
      cml_value_t ops[3], out[8] = {0};
      for (size_t i = 0; i < count; ++i) ops[i] = fz_pick(g);
      uint8_t which = fz_u8(z) % 3;
      if (which == 0) {
        g->unbounded = true;  // nothing bounds this loop
        bool ok = cml_op_while(f, c0, c1, ops, count, out);
        fz_note_multi(g, ok, out, count, "While (raw)");
      } else if (which == 1) {
        size_t n = c0 ? cml_function_output_count(c0) : 0;
        if (n > 8) break;
        bool ok = cml_op_if(f, ops[0], c0, c1, out);
        fz_note_multi(g, ok, out, n, "If (raw)");
      } else {
        bool ok = cml_op_sort(f, c0, fz_axis(z), fz_u8(z) & 1, ops, count, out);
        fz_note_multi(g, ok, out, count, "Sort (raw)");
      }
      break;
    }
    default:
      break;
  }
}

//===--- compile and execute ---===//

static void fz_fill(fz_stream_t* z, const cml_shape_t* s, uint8_t* data, size_t bytes) {
  uint8_t seed = fz_u8(z);
  for (size_t i = 0; i < bytes; ++i) {
    data[i] = z->n ? fz_u8(z) : (uint8_t)(seed + i * 131u);
  }
  if (s->dtype == CML_DTYPE_BOOL) {
    for (size_t i = 0; i < bytes; ++i) data[i] &= 1;
  }
}

static void fz_release_all(cml_buffer_t** buffers, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    cml_buffer_release(buffers[i]);
    buffers[i] = NULL;
  }
}

static void fz_execute(fz_graph_t* g, cml_backend_t* backend, cml_executable_t* exe) {
  fz_stream_t* z = &g->z;
  // An executable on N device slots (SPMD, AutoSharding) takes N * inputs, device-major, each
  // on its slot's device (the default assignment: slot j on device j), and gives N * outputs.
  const int num_devices = cml_executable_num_devices(exe);
  const size_t slots = num_devices > 1 ? (size_t)num_devices : 1;
  const size_t params = cml_executable_input_count(exe);
  const size_t results = cml_executable_output_count(exe);
  if (params > 31 || results > 32 || slots * params > 31 || slots * results > 32 || results == 0) {
    return;
  }
  const size_t in_count = slots * params, out_count = slots * results;
  cml_buffer_t* inputs[32] = {0};
  cml_buffer_t* outs[2][32];
  memset(outs, 0, sizeof outs);
  bool donate[32] = {0};
  bool ok = true;
  for (size_t i = 0; i < in_count && ok; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i % params);
    size_t bytes = s ? cml_shape_byte_size(s) : 0;
    if (!s || bytes > CML_FUZZ_EXEC_BYTES) {
      ok = false;
      break;
    }
    uint8_t* data = (uint8_t*)malloc(bytes ? bytes : 1);
    if (!data) {
      ok = false;
      break;
    }
    fz_fill(z, s, data, bytes);
    cml_status_t st = cml_buffer_from_host(backend, (int)(i / params), s, data, bytes, &inputs[i]);
    free(data);
    if (st != CML_OK) {
      cml_fuzz_check_status(st, "cml_buffer_from_host");
      ok = false;
    }
  }
  if (ok) {
    uint8_t how = fz_u8(z);
    int device = how < 240 ? 0 : (int)(how % 4) - 1;
    size_t count = how == 239 ? in_count + 1 : in_count;  // a wrong count, now and then
    for (int run = 0; run < 2; ++run) {
      // Donation only on the second run, so the first one's results can be compared.
      if (run == 1) {
        for (size_t i = 0; i < in_count; ++i) donate[i] = fz_u8(z) > 200;
      }
      cml_status_t st =
          cml_executable_execute(exe, inputs, count, run ? donate : NULL, device, outs[run]);
      if (st != CML_OK) {
        cml_fuzz_check_status(st, "cml_executable_execute");
        for (size_t i = 0; i < out_count; ++i) {
          if (outs[run][i]) cml_fuzz_violation("execute failed but left output %zu", i);
        }
        break;
      }
      for (size_t i = 0; i < out_count; ++i) {
        const cml_shape_t* want = cml_executable_output_shape(exe, i % results);
        if (!outs[run][i] || !cml_shape_equal(cml_buffer_shape(outs[run][i]), want)) {
          cml_fuzz_violation("output %zu is missing or has the wrong shape", i);
        }
      }
    }
    // Both runs succeeded: same inputs, same bytes (NaN payloads included).
    for (size_t i = 0; i < out_count && outs[0][i] && outs[1][i]; ++i) {
      size_t bytes = cml_shape_byte_size(cml_buffer_shape(outs[0][i]));
      uint8_t* a = (uint8_t*)malloc(bytes ? bytes : 1);
      uint8_t* c = (uint8_t*)malloc(bytes ? bytes : 1);
      if (a && c) {
        cml_status_t s1 = cml_buffer_copy_to_host(outs[0][i], a, bytes);
        cml_status_t s2 = cml_buffer_copy_to_host(outs[1][i], c, bytes);
        if (s1 != CML_OK || s2 != CML_OK) {
          cml_fuzz_violation("copy_to_host of output %zu failed: %s / %s", i,
                             cml_status_message(s1), cml_status_message(s2));
        } else if (bytes && memcmp(a, c, bytes) != 0) {
          cml_fuzz_violation("output %zu differs between two runs on the same inputs", i);
        }
        cml_status_free(s1);
        cml_status_free(s2);
        // A wrong size is an error, not an overflow.
        cml_status_t s3 = cml_buffer_copy_to_host(outs[0][i], a, bytes ? bytes - 1 : 1);
        if (s3 == CML_OK) cml_fuzz_violation("copy_to_host accepted a wrong size");
        cml_fuzz_check_status(s3, "cml_buffer_copy_to_host");
      }
      free(a);
      free(c);
    }
    // Donated inputs are dead now: using one again is an error.
    bool any_donated = false;
    for (size_t i = 0; i < in_count; ++i) any_donated = any_donated || donate[i];
    if (any_donated && outs[1][0]) {
      cml_buffer_t* again[32] = {0};
      cml_status_t st = cml_executable_execute(exe, inputs, in_count, NULL, 0, again);
      if (st == CML_OK) {
        cml_fuzz_violation("execute accepted a donated input");
        fz_release_all(again, out_count);
      }
      cml_fuzz_check_status(st, "execute with a donated input");
    }
  }
  fz_release_all(outs[0], out_count);
  fz_release_all(outs[1], out_count);
  fz_release_all(inputs, in_count);
}

//===--- the target ---===//

// Backends kept between inputs (creating a thread pool per input would dominate the run).
// buffer_cache_mb=0: released storage is freed at once, so that every input must return to the
// baseline count of live allocations (the cache itself is checked in c_engine_test).
static const char* const fz_backend_configs[] = {
    "c:threads=2,buffer_cache_mb=0", "c:reference=true,threads=1,buffer_cache_mb=0",
    "c:fusion=false,threads=2,devices=2,buffer_cache_mb=0", "null"};
#define FZ_BACKENDS (sizeof fz_backend_configs / sizeof fz_backend_configs[0])
static cml_backend_t* fz_backends[FZ_BACKENDS];
static cml_fuzz_counter_t fz_counters[FZ_BACKENDS];
static long long fz_baseline[FZ_BACKENDS];

void cml_fuzz_teardown(void) {
  for (size_t i = 0; i < FZ_BACKENDS; ++i) {
    cml_backend_release(fz_backends[i]);
    fz_backends[i] = NULL;
    if (fz_counters[i].live != 0) {
      cml_fuzz_violation("backend \"%s\": %lld allocations left after release",
                         fz_backend_configs[i], (long long)fz_counters[i].live);
    }
  }
}

// Runs one SPMD execution on every device of |backend| (a backend with several): the c backend
// starts the threads of its device slots at the first one and keeps them (src/backends/c/crew.c),
// which must not count as an input's leak.
static void fz_warm_up_spmd(cml_backend_t* backend) {
  const int n = cml_backend_device_count(backend);
  if (n < 2 || n > 32) return;
  cml_builder_t* b = NULL;
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_create(backend, "warm_up", &b);
  if (st == CML_OK) st = cml_builder_spmd(b, n);
  if (st == CML_OK) {
    cml_value_t id = cml_op_replica_id(cml_builder_main(b));
    st = cml_function_return(cml_builder_main(b), &id, 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  cml_buffer_t* outs[32] = {0};
  if (st == CML_OK) st = cml_executable_execute(exe, NULL, 0, NULL, 0, outs);
  for (int i = 0; i < n; ++i) cml_buffer_release(outs[i]);
  cml_executable_release(exe);
  if (st != CML_OK && cml_status_code(st) != CML_STATUS_UNIMPLEMENTED) {
    cml_fuzz_violation("SPMD warm-up on %d devices: %s", n, cml_status_message(st));
  }
  cml_status_free(st);
}

static cml_backend_t* fz_backend(size_t i) {
  if (!fz_backends[i]) {
    cml_status_t st = cml_backend_create(
        fz_backend_configs[i], cml_fuzz_counting_allocator(&fz_counters[i]), &fz_backends[i]);
    if (st != CML_OK) {
      cml_fuzz_violation("cannot create backend \"%s\": %s", fz_backend_configs[i],
                         cml_status_message(st));
      cml_status_free(st);
      return NULL;
    }
    fz_warm_up_spmd(fz_backends[i]);
    fz_baseline[i] = fz_counters[i].live;
  }
  return fz_backends[i];
}

int cml_fuzz_graph(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  size_t which = data[0] % FZ_BACKENDS;
  cml_backend_t* backend = fz_backend(which);
  if (!backend) return 0;
  fz_graph_t* g = (fz_graph_t*)calloc(1, sizeof *g);
  if (!g) return 0;
  g->z.p = data + 1;
  g->z.n = size - 1;
  cml_status_t st = cml_builder_create(backend, "fuzz", &g->b);
  if (st == CML_OK) st = cml_builder_create(backend, "other", &g->other);
  if (st != CML_OK) {
    cml_fuzz_violation("cml_builder_create: %s", cml_status_message(st));
    cml_status_free(st);
    cml_builder_destroy(g->b);
    free(g);
    return 0;
  }
  cml_shape_t fs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  g->foreign = cml_parameter(cml_builder_main(g->other), "foreign", &fs);
  fz_add_fn(g, cml_builder_main(g->b), -1);
  g->stack[0] = 0;
  g->depth = 1;

  for (int step = 0; step < CML_FUZZ_MAX_STEPS && g->z.n > 0; ++step) fz_step(g);

  // Main returns 1..3 values of its own (or, sometimes, anything).
  while (g->depth > 1) --g->depth;
  g->ok_before = fz_builder_ok(g);
  if (!g->fns[0].returned) {
    size_t count = 1 + fz_u8(&g->z) % 3;
    cml_value_t outs[3];
    for (size_t i = 0; i < count; ++i) outs[i] = fz_pick(g);
    fz_return(g, 0, outs, count);
  }
  bool healthy = fz_builder_ok(g);
  cml_executable_t* exe = NULL;
  st = cml_builder_compile(g->b, &exe);
  if (st == CML_OK) {
    if (!healthy) cml_fuzz_violation("compile succeeded although the builder had an error");
    if (!exe) cml_fuzz_violation("compile: OK without an executable");
  } else {
    if (exe) cml_fuzz_violation("compile failed but returned an executable");
    if (getenv("CML_FUZZ_VERBOSE")) {
      fprintf(stderr, "fuzz graph: compile: %s\n", cml_status_message(st));
    }
    cml_fuzz_check_status(st, "cml_builder_compile");
  }
  // The builder refuses more work after compile, without crashing.
  cml_value_t late = cml_constant_scalar_f64(cml_builder_main(g->b), CML_DTYPE_F32, 1.0);
  if (late != CML_VALUE_INVALID) cml_fuzz_violation("an op succeeded after compile");
  cml_builder_destroy(g->b);
  cml_builder_destroy(g->other);
  for (int i = 0; i < g->mesh_count; ++i) cml_mesh_destroy(g->meshes[i]);
  if (exe) {
    if (!g->unbounded && g->max_bytes <= CML_FUZZ_EXEC_BYTES && g->work <= CML_FUZZ_EXEC_WORK &&
        g->total_bytes <= CML_FUZZ_TOTAL_BYTES) {
      fz_execute(g, backend, exe);
      if (getenv("CML_FUZZ_VERBOSE")) fprintf(stderr, "fuzz graph: executed\n");
    }
    cml_executable_release(exe);
  }
  if (fz_counters[which].live != fz_baseline[which]) {
    cml_fuzz_violation("backend \"%s\": %lld allocations left after the input (baseline %lld)",
                       fz_backend_configs[which], (long long)fz_counters[which].live,
                       fz_baseline[which]);
    fz_baseline[which] = fz_counters[which].live;  // report each leak once
  }
  free(g);
  return 0;
}
