// SPDX-License-Identifier: Apache-2.0
// src/backends/c/sort.c: Sort along an axis for N operands with a comparator closure.
//
// Each line along the axis is sorted as a permutation of indices with a stable merge sort (so
// is_stable is always honoured and results never depend on the thread count; long lines of i32
// keys take a stable radix sort, the same permutation), then every operand is gathered through
// that permutation.
//
// The comparator takes 2N scalars in interleaved order (lhs_0, rhs_0, lhs_1, rhs_1, ...) and says
// whether lhs goes before rhs. When it is a single comparison of parameters 0 and 1 (LessThan,
// GreaterThan, LessOrEqual, GreaterOrEqual or their TotalOrder forms, either operand order), the
// comparison is done directly on the typed elements of operand 0 and lines are sorted in
// parallel. NaNs are placed as XLA's CPU runtime places them: after every other value under a
// plain LessThan, before under GreaterThan (each in its stable order); TotalOrder puts -NaN first
// and +NaN last; LessOrEqual / GreaterOrEqual compare as written. A lexicographic chain of
// compares of keys (each an operand under the same Abs / Neg chain for lhs and rhs: "comparator
// programs" below) has its keys computed once per element and its compares evaluated in C inside
// the same merge sort, lines in parallel: the permutation the calls give, NaNs included (not on
// the reference backend, which calls the comparator). Any other comparator runs through
// call_function for each comparison, on the calling thread.
//
// Thread-safety: reentrant (all state in the arguments and the scratch).
#include <math.h>
#include <string.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/common.h"

typedef bool (*cmlc_before_fn)(const void* a, const void* b);

//===--- typed comparisons ---===//

static inline uint32_t cmlc_sort_key_f32(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static inline uint64_t cmlc_sort_key_f64(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
static inline uint16_t cmlc_sort_key_h16(uint16_t b) {
  return (uint16_t)((b & 0x8000u) ? (uint16_t)~b : (uint16_t)(b | 0x8000u));
}

// The comparisons, on loaded values.
#define CMLC_SORT_LT(x, y) ((x) < (y))
#define CMLC_SORT_GT(x, y) ((x) > (y))
#define CMLC_SORT_LE(x, y) ((x) <= (y))
#define CMLC_SORT_GE(x, y) ((x) >= (y))
// Floating-point keys under a plain LessThan / GreaterThan: a NaN is after (LessThan) or before
// (GreaterThan) every other value and equal to every NaN, as XLA's CPU runtime sorts them (its
// sort of a single LessThan or GreaterThan of operand 0). The comparison alone would find a NaN
// neither before nor after anything, which is no strict weak order: the line would come out in
// an order that depends on the sort algorithm. LessOrEqual / GreaterOrEqual stay as written.
// In two comparisons: "x < y, or y is NaN and x is not" is "not y <= x, and x is not NaN"
// (y <= x is false when either is NaN).
#define CMLC_SORT_LT_F(x, y) (!((y) <= (x)) && (x) == (x))
#define CMLC_SORT_GT_F(x, y) (!((x) <= (y)) && (y) == (y))

// cmlc_sort_<kind>_<name>: |BEFORE| on two elements of type T loaded by |LOAD|.
#define CMLC_SORT_FN(kind, name, T, LOAD, BEFORE)                       \
  static bool cmlc_sort_##kind##_##name(const void* a, const void* b) { \
    T x, y;                                                             \
    memcpy(&x, a, sizeof x);                                            \
    memcpy(&y, b, sizeof y);                                            \
    return BEFORE(LOAD(x), LOAD(y));                                    \
  }
#define CMLC_SORT_PLAIN(name, T, LOAD)          \
  CMLC_SORT_FN(lt, name, T, LOAD, CMLC_SORT_LT) \
  CMLC_SORT_FN(gt, name, T, LOAD, CMLC_SORT_GT) \
  CMLC_SORT_FN(le, name, T, LOAD, CMLC_SORT_LE) \
  CMLC_SORT_FN(ge, name, T, LOAD, CMLC_SORT_GE)
#define CMLC_SORT_FLOAT(name, T, LOAD)            \
  CMLC_SORT_FN(lt, name, T, LOAD, CMLC_SORT_LT_F) \
  CMLC_SORT_FN(gt, name, T, LOAD, CMLC_SORT_GT_F) \
  CMLC_SORT_FN(le, name, T, LOAD, CMLC_SORT_LE)   \
  CMLC_SORT_FN(ge, name, T, LOAD, CMLC_SORT_GE)

#define CMLC_SORT_ID(x) (x)
CMLC_SORT_PLAIN(pred, uint8_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(i8, int8_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(i16, int16_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(i32, int32_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(i64, int64_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(u8, uint8_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(u16, uint16_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(u32, uint32_t, CMLC_SORT_ID)
CMLC_SORT_PLAIN(u64, uint64_t, CMLC_SORT_ID)
CMLC_SORT_FLOAT(f32, float, CMLC_SORT_ID)
CMLC_SORT_FLOAT(f64, double, CMLC_SORT_ID)
CMLC_SORT_FLOAT(f16, uint16_t, cml_f16_to_f32)
CMLC_SORT_FLOAT(bf16, uint16_t, cml_bf16_to_f32)
// Total order: compare keys.
CMLC_SORT_PLAIN(f32_total, float, cmlc_sort_key_f32)
CMLC_SORT_PLAIN(f64_total, double, cmlc_sort_key_f64)
CMLC_SORT_PLAIN(h16_total, uint16_t, cmlc_sort_key_h16)

typedef struct cmlc_sort_fns_t {
  cmlc_before_fn lt, gt, le, ge;
} cmlc_sort_fns_t;

#define CMLC_SORT_FNS(name) \
  { cmlc_sort_lt_##name, cmlc_sort_gt_##name, cmlc_sort_le_##name, cmlc_sort_ge_##name }

static bool cmlc_sort_typed_fns(cml_dtype_t dtype, bool total, cmlc_sort_fns_t* out) {
  static const cmlc_sort_fns_t bool_fns = CMLC_SORT_FNS(pred), i8_fns = CMLC_SORT_FNS(i8),
                               i16_fns = CMLC_SORT_FNS(i16), i32_fns = CMLC_SORT_FNS(i32),
                               i64_fns = CMLC_SORT_FNS(i64), u8_fns = CMLC_SORT_FNS(u8),
                               u16_fns = CMLC_SORT_FNS(u16), u32_fns = CMLC_SORT_FNS(u32),
                               u64_fns = CMLC_SORT_FNS(u64), f32_fns = CMLC_SORT_FNS(f32),
                               f64_fns = CMLC_SORT_FNS(f64), f16_fns = CMLC_SORT_FNS(f16),
                               bf16_fns = CMLC_SORT_FNS(bf16), f32t_fns = CMLC_SORT_FNS(f32_total),
                               f64t_fns = CMLC_SORT_FNS(f64_total),
                               h16t_fns = CMLC_SORT_FNS(h16_total);
  if (total) {
    switch (dtype) {
      case CML_DTYPE_F32:
        *out = f32t_fns;
        return true;
      case CML_DTYPE_F64:
        *out = f64t_fns;
        return true;
      case CML_DTYPE_F16:
      case CML_DTYPE_BF16:
        *out = h16t_fns;
        return true;
      default:
        return false;
    }
  }
  switch (dtype) {
    case CML_DTYPE_BOOL:
      *out = bool_fns;
      return true;
    case CML_DTYPE_I8:
      *out = i8_fns;
      return true;
    case CML_DTYPE_I16:
      *out = i16_fns;
      return true;
    case CML_DTYPE_I32:
      *out = i32_fns;
      return true;
    case CML_DTYPE_I64:
      *out = i64_fns;
      return true;
    case CML_DTYPE_U8:
      *out = u8_fns;
      return true;
    case CML_DTYPE_U16:
      *out = u16_fns;
      return true;
    case CML_DTYPE_U32:
      *out = u32_fns;
      return true;
    case CML_DTYPE_U64:
      *out = u64_fns;
      return true;
    case CML_DTYPE_F32:
      *out = f32_fns;
      return true;
    case CML_DTYPE_F64:
      *out = f64_fns;
      return true;
    case CML_DTYPE_F16:
      *out = f16_fns;
      return true;
    case CML_DTYPE_BF16:
      *out = bf16_fns;
      return true;
    default:
      return false;
  }
}

// The direct comparison for a comparator that is a single compare of params 0 and 1, or NULL.
static cmlc_before_fn cmlc_sort_fast_comparator(const cml_module_t* m, const cml_ir_node_t* node) {
  static const struct {
    cml_op_t op;
    bool total;
    int kind;  // 0 lt, 1 gt, 2 le, 3 ge
  } kinds[] = {
      {CML_OP_LESS_THAN, false, 0},
      {CML_OP_GREATER_THAN, false, 1},
      {CML_OP_LESS_OR_EQUAL, false, 2},
      {CML_OP_GREATER_OR_EQUAL, false, 3},
      {CML_OP_LESS_THAN_TOTAL_ORDER, true, 0},
      {CML_OP_GREATER_THAN_TOTAL_ORDER, true, 1},
      {CML_OP_LESS_OR_EQUAL_TOTAL_ORDER, true, 2},
      {CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER, true, 3},
  };
  const cml_op_t op = cml_ir_plain_comparator(m, node->attrs->functions[0]);
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    if (kinds[i].op != op) continue;
    cmlc_sort_fns_t fns;
    if (!cmlc_sort_typed_fns(m->values[node->inputs[0]].shape.dtype, kinds[i].total, &fns)) {
      return NULL;
    }
    const cmlc_before_fn by_kind[4] = {fns.lt, fns.gt, fns.le, fns.ge};
    return by_kind[kinds[i].kind];
  }
  return NULL;
}

// Bytes per element from the kernels' dtype table (1 for the dtypes it has no size for).
static size_t cmlc_sort_elem_size(cml_dtype_t dtype) {
  const size_t size = cmlc_dtype_size(dtype);
  return size != 0 ? size : 1;
}

//===--- comparator programs: lexicographic compares of per-element keys ---===//
// A comparator that is a lexicographic chain of compares, each of the same elementwise function
// (a chain of Abs / Neg, or nothing) of lhs_i and rhs_i,
//   S_0 || (E_0 && (S_1 || (E_1 && ... F))),
// (the Or and And operands in either order, each compare's operands in either order), is run
// as a program: the keys are computed once per element (len evaluations, not one per
// comparison), and each comparison evaluates the compares on them in C, with the operators the
// elementwise kernels use, in the order the expression's short circuit gives. Each compare gives
// the same bool as the comparator's node on the same elements (NaNs, -0 and ties included), so
// the merge sort makes the same moves: the same permutation as the calls, bit for bit.

enum {
  CMLC_SORT_MAX_LEVELS = 8,                            // S_i / E_i pairs
  CMLC_SORT_MAX_TERMS = 2 * CMLC_SORT_MAX_LEVELS + 1,  // compares
  CMLC_SORT_MAX_CHAIN = 4,                             // Abs / Neg steps of a key
};

// How a key is stored: the compare's operands converted without loss (f16 / bf16 to f32, the
// integers to int64 or uint64, bool to 0 / 1), or a total-order key (the TotalOrder compares).
typedef enum cmlc_sort_key_class_t {
  CMLC_SORT_KEY_F32,
  CMLC_SORT_KEY_F64,
  CMLC_SORT_KEY_I64,
  CMLC_SORT_KEY_U64,
} cmlc_sort_key_class_t;

typedef enum cmlc_sort_cmp_op_t {
  CMLC_SORT_OP_EQ,
  CMLC_SORT_OP_NE,
  CMLC_SORT_OP_LT,
  CMLC_SORT_OP_LE,
  CMLC_SORT_OP_GT,
  CMLC_SORT_OP_GE,
} cmlc_sort_cmp_op_t;

// A key: operand |operand| with |chain| applied (CML_OP_ABS / CML_OP_NEG, innermost first).
typedef struct cmlc_sort_key_t {
  uint32_t operand;
  uint32_t chain_length;
  cml_op_t chain[CMLC_SORT_MAX_CHAIN];
  bool total;  // a total-order key (a float operand, no chain)
  cmlc_sort_key_class_t key_class;
  // The encoding (cmlc_sort_encode): bits of the operand dtype, and whether it is a signed
  // integer.
  uint32_t bits;
  bool signed_int;
} cmlc_sort_key_t;

// One compare of key |key| of lhs (i) and rhs (j).
typedef struct cmlc_sort_term_t {
  uint8_t op;          // cmlc_sort_cmp_op_t
  uint8_t key_class;   // cmlc_sort_key_class_t
  uint32_t key;        // index into cmlc_sort_program_t.keys
  const void* values;  // the key's values along the line (set per line)
} cmlc_sort_term_t;

// terms[2 * l] is S_l, terms[2 * l + 1] is E_l, terms[2 * level_count] is F.
typedef struct cmlc_sort_program_t {
  uint32_t level_count, key_count;
  // A plain lexicographic order: every S_l is LessThan / GreaterThan of the key E_l compares
  // with Equal, F is LessThan / GreaterThan, and the keys' bits (of S_0 ... S_{n-1}, F) add up to
  // at most 64 (cmlc_sort_encode).
  bool encodable;
  cmlc_sort_term_t terms[CMLC_SORT_MAX_TERMS];
  cmlc_sort_key_t keys[CMLC_SORT_MAX_TERMS];
} cmlc_sort_program_t;

// The node that defines value |v|.
static const cml_ir_node_t* cmlc_sort_def(const cml_module_t* m, uint32_t v) {
  return &m->nodes[m->values[v].node];
}

// Parses value |v| of comparator |f| as a key (a parameter under a chain of Abs / Neg) into
// |*param| and |*key| (operand and total left to the caller).
static bool cmlc_sort_parse_key(const cml_module_t* m, const cml_ir_function_t* f, uint32_t v,
                                uint32_t* param, cmlc_sort_key_t* key) {
  cml_op_t outer_first[CMLC_SORT_MAX_CHAIN];
  uint32_t length = 0;
  for (;;) {
    const cml_ir_node_t* n = cmlc_sort_def(m, v);
    if (n->op == CML_OP_PARAMETER) break;
    if ((n->op != CML_OP_ABS && n->op != CML_OP_NEG) || n->input_count != 1) return false;
    if (length == CMLC_SORT_MAX_CHAIN) return false;
    outer_first[length++] = n->op;
    v = n->inputs[0];
  }
  for (uint32_t p = 0; p < f->param_count; ++p) {
    if (f->params[p] != v) continue;
    *param = p;
    key->chain_length = length;
    for (uint32_t s = 0; s < length; ++s) key->chain[s] = outer_first[length - 1 - s];
    return true;
  }
  return false;
}

// The storage class of a key of |dtype|, or false for dtypes the programs do not handle.
static bool cmlc_sort_key_class_of(cml_dtype_t dtype, bool total, cmlc_sort_key_class_t* out) {
  if (total) {
    // TotalOrder compares of f32 / f64 keys of the raw bits (f16 / bf16 go through the calls).
    if (dtype != CML_DTYPE_F32 && dtype != CML_DTYPE_F64) return false;
    *out = CMLC_SORT_KEY_U64;
    return true;
  }
  switch (dtype) {
    case CML_DTYPE_F32:
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16:
      *out = CMLC_SORT_KEY_F32;
      return true;
    case CML_DTYPE_F64:
      *out = CMLC_SORT_KEY_F64;
      return true;
    case CML_DTYPE_BOOL:
    case CML_DTYPE_I8:
    case CML_DTYPE_I16:
    case CML_DTYPE_I32:
    case CML_DTYPE_I64:
    case CML_DTYPE_U8:
    case CML_DTYPE_U16:
    case CML_DTYPE_U32:
      *out = CMLC_SORT_KEY_I64;
      return true;
    case CML_DTYPE_U64:
      *out = CMLC_SORT_KEY_U64;
      return true;
    default:
      return false;
  }
}

// Parses value |v| as a compare of one key of lhs and rhs into term |t| of |prog|.
static bool cmlc_sort_parse_term(const cml_module_t* m, const cml_ir_node_t* sort,
                                 const cml_ir_function_t* f, uint32_t v, cmlc_sort_program_t* prog,
                                 uint32_t t) {
  static const struct {
    cml_op_t op;
    cmlc_sort_cmp_op_t cmp, mirrored;
    bool total;
  } compares[] = {
      {CML_OP_EQUAL, CMLC_SORT_OP_EQ, CMLC_SORT_OP_EQ, false},
      {CML_OP_NOT_EQUAL, CMLC_SORT_OP_NE, CMLC_SORT_OP_NE, false},
      {CML_OP_LESS_THAN, CMLC_SORT_OP_LT, CMLC_SORT_OP_GT, false},
      {CML_OP_LESS_OR_EQUAL, CMLC_SORT_OP_LE, CMLC_SORT_OP_GE, false},
      {CML_OP_GREATER_THAN, CMLC_SORT_OP_GT, CMLC_SORT_OP_LT, false},
      {CML_OP_GREATER_OR_EQUAL, CMLC_SORT_OP_GE, CMLC_SORT_OP_LE, false},
      {CML_OP_EQUAL_TOTAL_ORDER, CMLC_SORT_OP_EQ, CMLC_SORT_OP_EQ, true},
      {CML_OP_NOT_EQUAL_TOTAL_ORDER, CMLC_SORT_OP_NE, CMLC_SORT_OP_NE, true},
      {CML_OP_LESS_THAN_TOTAL_ORDER, CMLC_SORT_OP_LT, CMLC_SORT_OP_GT, true},
      {CML_OP_LESS_OR_EQUAL_TOTAL_ORDER, CMLC_SORT_OP_LE, CMLC_SORT_OP_GE, true},
      {CML_OP_GREATER_THAN_TOTAL_ORDER, CMLC_SORT_OP_GT, CMLC_SORT_OP_LT, true},
      {CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER, CMLC_SORT_OP_GE, CMLC_SORT_OP_LE, true},
  };
  const cml_ir_node_t* n = cmlc_sort_def(m, v);
  size_t c = 0;
  while (c < sizeof compares / sizeof compares[0] && compares[c].op != n->op) ++c;
  if (c == sizeof compares / sizeof compares[0] || n->input_count != 2) return false;
  cmlc_sort_key_t x, y;
  uint32_t px, py;
  if (!cmlc_sort_parse_key(m, f, n->inputs[0], &px, &x) ||
      !cmlc_sort_parse_key(m, f, n->inputs[1], &py, &y)) {
    return false;
  }
  // lhs_i and rhs_i are parameters 2i and 2i + 1: (lhs, rhs) as written, or mirrored.
  if (px / 2 != py / 2 || px == py || x.chain_length != y.chain_length) return false;
  for (uint32_t s = 0; s < x.chain_length; ++s) {
    if (x.chain[s] != y.chain[s]) return false;
  }
  x.operand = px / 2;
  x.total = compares[c].total;
  if (x.operand >= sort->input_count || (x.total && x.chain_length != 0)) return false;
  const cml_dtype_t dtype = m->values[sort->inputs[x.operand]].shape.dtype;
  if (!cmlc_sort_key_class_of(dtype, x.total, &x.key_class)) return false;
  // Abs / Neg of an unsigned operand do not type-check; of bool neither.
  if (x.chain_length != 0 && dtype == CML_DTYPE_BOOL) return false;
  x.bits = dtype == CML_DTYPE_BOOL ? 1
           : x.key_class == CMLC_SORT_KEY_F32 && dtype != CML_DTYPE_F32
               ? 32
               : (uint32_t)cml_dtype_bits(dtype);
  x.signed_int = dtype == CML_DTYPE_I8 || dtype == CML_DTYPE_I16 || dtype == CML_DTYPE_I32 ||
                 dtype == CML_DTYPE_I64;
  uint32_t k = 0;
  for (; k < prog->key_count; ++k) {
    const cmlc_sort_key_t* o = &prog->keys[k];
    bool same = o->operand == x.operand && o->total == x.total && o->chain_length == x.chain_length;
    for (uint32_t s = 0; same && s < x.chain_length; ++s) same = o->chain[s] == x.chain[s];
    if (same) break;
  }
  if (k == prog->key_count) prog->keys[prog->key_count++] = x;
  prog->terms[t].op = (uint8_t)(px % 2 == 0 ? compares[c].cmp : compares[c].mirrored);
  prog->terms[t].key_class = (uint8_t)x.key_class;
  prog->terms[t].key = k;
  prog->terms[t].values = NULL;
  return true;
}

// Parses value |v| as the chain from level |level| on: F, or Or(S, And(E, rest)).
static bool cmlc_sort_parse_chain(const cml_module_t* m, const cml_ir_node_t* sort,
                                  const cml_ir_function_t* f, uint32_t v, uint32_t level,
                                  cmlc_sort_program_t* prog) {
  const cml_ir_node_t* n = cmlc_sort_def(m, v);
  const uint32_t keys = prog->key_count;
  if (n->op != CML_OP_LOGICAL_OR) {
    prog->level_count = level;
    return cmlc_sort_parse_term(m, sort, f, v, prog, 2 * level);
  }
  if (n->input_count != 2 || level == CMLC_SORT_MAX_LEVELS) return false;
  // Which operand of the Or is S, and which of the And is E: try each assignment.
  for (int s = 0; s < 2; ++s) {
    const cml_ir_node_t* a = cmlc_sort_def(m, n->inputs[1 - s]);
    if (a->op != CML_OP_LOGICAL_AND || a->input_count != 2) continue;
    for (int e = 0; e < 2; ++e) {
      prog->key_count = keys;
      if (cmlc_sort_parse_term(m, sort, f, n->inputs[s], prog, 2 * level) &&
          cmlc_sort_parse_term(m, sort, f, a->inputs[e], prog, 2 * level + 1) &&
          cmlc_sort_parse_chain(m, sort, f, a->inputs[1 - e], level + 1, prog)) {
        return true;
      }
    }
  }
  prog->key_count = keys;
  return false;
}

// The program of Sort |node|'s comparator into |prog|, or false (it is not one: the comparator
// is called). Every node of the comparator must be a parameter, a compare, LogicalAnd /
// LogicalOr or Abs / Neg, so that nothing the program skips could fail or matter.
static bool cmlc_sort_parse_program(const cml_module_t* m, const cml_ir_node_t* node,
                                    cmlc_sort_program_t* prog) {
  const uint32_t fi = node->attrs->functions[0];
  if (fi >= m->function_count) return false;
  const cml_ir_function_t* f = &m->functions[fi];
  if (f->output_count != 1 || f->capture_count != 0 || f->param_count != 2 * node->input_count) {
    return false;
  }
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_op_t op = m->nodes[f->nodes[i]].op;
    if (cml_op_kind(op) == CML_OPK_COMPARE) continue;  // the twelve compares
    if (op != CML_OP_PARAMETER && op != CML_OP_ABS && op != CML_OP_NEG &&
        op != CML_OP_LOGICAL_AND && op != CML_OP_LOGICAL_OR) {
      return false;
    }
  }
  memset(prog, 0, sizeof *prog);
  if (!cmlc_sort_parse_chain(m, node, f, f->outputs[0], 0, prog)) return false;
  uint32_t bits = 0;
  prog->encodable = true;
  for (uint32_t l = 0; l <= prog->level_count; ++l) {
    const cmlc_sort_term_t* st = &prog->terms[2 * l];
    prog->encodable &= st->op == CMLC_SORT_OP_LT || st->op == CMLC_SORT_OP_GT;
    if (l < prog->level_count) {
      prog->encodable &= st[1].op == CMLC_SORT_OP_EQ && st[1].key == st->key;
    }
    bits += prog->keys[st->key].bits;
  }
  prog->encodable &= bits <= 64;
  return true;
}

// |v| (an integer of |dtype| widened to int64) negated in |dtype|'s width, wrapping as the
// elementwise kernels do (Neg and Abs of the most negative value give it back).
static int64_t cmlc_sort_neg_int(int64_t v, cml_dtype_t dtype) {
  const uint64_t r = (uint64_t)0 - (uint64_t)v;
  switch (dtype) {
    case CML_DTYPE_I8:
      return (int8_t)(uint8_t)r;
    case CML_DTYPE_I16:
      return (int16_t)(uint16_t)r;
    case CML_DTYPE_I32:
      return (int32_t)(uint32_t)r;
    default:
      return (int64_t)r;
  }
}

// Computes key |key| of the |len| elements at |base| (|stride| bytes apart, operand dtype
// |dtype|) into |out| (len 8-byte slots).
static void cmlc_sort_compute_key(const cmlc_sort_key_t* key, cml_dtype_t dtype,
                                  const uint8_t* base, int64_t stride, int64_t len, void* out) {
  for (int64_t p = 0; p < len; ++p) {
    const uint8_t* e = base + p * stride;
    switch (key->key_class) {
      case CMLC_SORT_KEY_F32: {
        float x;
        if (dtype == CML_DTYPE_F32) {
          memcpy(&x, e, sizeof x);
        } else {
          uint16_t h;
          memcpy(&h, e, sizeof h);
          x = dtype == CML_DTYPE_F16 ? cml_f16_to_f32(h) : cml_bf16_to_f32(h);
        }
        for (uint32_t s = 0; s < key->chain_length; ++s)
          x = key->chain[s] == CML_OP_ABS ? fabsf(x) : -x;
        ((float*)out)[p] = x;
        break;
      }
      case CMLC_SORT_KEY_F64: {
        double x;
        memcpy(&x, e, sizeof x);
        for (uint32_t s = 0; s < key->chain_length; ++s)
          x = key->chain[s] == CML_OP_ABS ? fabs(x) : -x;
        ((double*)out)[p] = x;
        break;
      }
      case CMLC_SORT_KEY_I64: {
        int64_t x;
        switch (dtype) {
          case CML_DTYPE_BOOL:
            x = e[0] != 0;
            break;
          case CML_DTYPE_I8:
            x = (int8_t)e[0];
            break;
          case CML_DTYPE_U8:
            x = e[0];
            break;
          case CML_DTYPE_I16: {
            int16_t t;
            memcpy(&t, e, sizeof t);
            x = t;
            break;
          }
          case CML_DTYPE_U16: {
            uint16_t t;
            memcpy(&t, e, sizeof t);
            x = t;
            break;
          }
          case CML_DTYPE_I32: {
            int32_t t;
            memcpy(&t, e, sizeof t);
            x = t;
            break;
          }
          case CML_DTYPE_U32: {
            uint32_t t;
            memcpy(&t, e, sizeof t);
            x = t;
            break;
          }
          default:
            memcpy(&x, e, sizeof x);
            break;
        }
        for (uint32_t s = 0; s < key->chain_length; ++s) {
          if (key->chain[s] == CML_OP_NEG || x < 0) x = cmlc_sort_neg_int(x, dtype);
        }
        ((int64_t*)out)[p] = x;
        break;
      }
      case CMLC_SORT_KEY_U64: {
        uint64_t x;
        if (!key->total) {
          memcpy(&x, e, sizeof x);  // a u64 operand (no chain)
        } else if (dtype == CML_DTYPE_F32) {
          float f;
          memcpy(&f, e, sizeof f);
          x = cmlc_sort_key_f32(f);
        } else {
          double d;
          memcpy(&d, e, sizeof d);
          x = cmlc_sort_key_f64(d);
        }
        ((uint64_t*)out)[p] = x;
        break;
      }
    }
  }
}

#define CMLC_SORT_COMPARE(OP, x, y)       \
  ((OP) == CMLC_SORT_OP_EQ   ? (x) == (y) \
   : (OP) == CMLC_SORT_OP_NE ? (x) != (y) \
   : (OP) == CMLC_SORT_OP_LT ? (x) < (y)  \
   : (OP) == CMLC_SORT_OP_LE ? (x) <= (y) \
   : (OP) == CMLC_SORT_OP_GT ? (x) > (y)  \
                             : (x) >= (y))

// Term |t| on elements |i| (lhs) and |j| (rhs) of the line.
static inline bool cmlc_sort_term_eval(const cmlc_sort_term_t* t, int64_t i, int64_t j) {
  switch (t->key_class) {
    case CMLC_SORT_KEY_F32: {
      const float x = ((const float*)t->values)[i], y = ((const float*)t->values)[j];
      return CMLC_SORT_COMPARE(t->op, x, y);
    }
    case CMLC_SORT_KEY_F64: {
      const double x = ((const double*)t->values)[i], y = ((const double*)t->values)[j];
      return CMLC_SORT_COMPARE(t->op, x, y);
    }
    case CMLC_SORT_KEY_I64: {
      const int64_t x = ((const int64_t*)t->values)[i], y = ((const int64_t*)t->values)[j];
      return CMLC_SORT_COMPARE(t->op, x, y);
    }
    default: {
      const uint64_t x = ((const uint64_t*)t->values)[i], y = ((const uint64_t*)t->values)[j];
      return CMLC_SORT_COMPARE(t->op, x, y);
    }
  }
}

// The comparator's result on elements |i| (lhs) and |j| (rhs): S_0 || (E_0 && (... F)).
static inline bool cmlc_sort_program_before(const cmlc_sort_program_t* prog, int64_t i, int64_t j) {
  const cmlc_sort_term_t* t = prog->terms;
  for (uint32_t l = 0; l < prog->level_count; ++l, t += 2) {
    if (cmlc_sort_term_eval(&t[0], i, j)) return true;
    if (!cmlc_sort_term_eval(&t[1], i, j)) return false;
  }
  return cmlc_sort_term_eval(t, i, j);
}

// Computes |prog|'s keys for the line at |line_offset| into |keys| (key_count * len 8-byte
// slots) and points the terms at them.
static void cmlc_sort_program_bind(cmlc_sort_program_t* prog, const cmlc_kernel_args_t* args,
                                   int64_t line_offset, int64_t inner, int64_t len,
                                   uint64_t* keys) {
  for (uint32_t k = 0; k < prog->key_count; ++k) {
    const uint32_t operand = prog->keys[k].operand;
    const cml_dtype_t dtype = args->input_shapes[operand]->dtype;
    const size_t es = cmlc_sort_elem_size(dtype);
    const uint8_t* base = (const uint8_t*)args->inputs[operand] + (size_t)line_offset * es;
    cmlc_sort_compute_key(&prog->keys[k], dtype, base, (int64_t)((size_t)inner * es), len,
                          keys + (size_t)k * (size_t)len);
  }
  for (uint32_t t = 0; t <= 2 * prog->level_count; ++t) {
    prog->terms[t].values = keys + (size_t)prog->terms[t].key * (size_t)len;
  }
}

// The int64 slots per element before a program's keys: a permutation and its merge buffer, or
// the encoded sort's two buffers of 16-byte pairs.
static int64_t cmlc_sort_program_slots(const cmlc_sort_program_t* prog) {
  return prog->encodable ? 4 : 2;
}

// The int64 slots per element a program adds to a sort's permutation and merge buffer.
static uint32_t cmlc_sort_program_extra(const cmlc_sort_program_t* prog) {
  return (uint32_t)cmlc_sort_program_slots(prog) - 2 + prog->key_count;
}

//===--- stable merge sort of an index permutation ---===//

typedef struct cmlc_sort_cmp_t {
  // Fast path.
  cmlc_before_fn before;
  const uint8_t* base;  // operand 0's line
  int64_t stride;       // bytes between elements of a line
  // Program path.
  const cmlc_sort_program_t* prog;
  // General path.
  const cmlc_kernel_args_t* args;
  const uint8_t** line_bases;  // each operand's line
  const int64_t* strides;
  const void** call_inputs;  // 2N
  cml_status_t status;
} cmlc_sort_cmp_t;

static bool cmlc_sort_is_before(cmlc_sort_cmp_t* c, int64_t i, int64_t j) {
  if (c->before) return c->before(c->base + i * c->stride, c->base + j * c->stride);
  if (c->prog) return cmlc_sort_program_before(c->prog, i, j);
  if (c->status != CML_OK) return false;
  const cmlc_kernel_args_t* a = c->args;
  for (uint32_t k = 0; k < a->input_count; ++k) {
    c->call_inputs[2 * k] = c->line_bases[k] + i * c->strides[k];
    c->call_inputs[2 * k + 1] = c->line_bases[k] + j * c->strides[k];
  }
  uint8_t result = 0;
  void* outs[1] = {&result};
  c->status = a->call_function(a->exec, a->node->attrs->functions[0],
                               (const void* const*)c->call_inputs, outs);
  return c->status == CML_OK && result != 0;
}

static void cmlc_sort_merge_sort(cmlc_sort_cmp_t* c, int64_t* a, int64_t* tmp, int64_t n) {
  if (n <= 16) {
    for (int64_t i = 1; i < n; ++i) {
      int64_t x = a[i], j = i;
      while (j > 0 && cmlc_sort_is_before(c, x, a[j - 1])) {
        a[j] = a[j - 1];
        --j;
      }
      a[j] = x;
    }
    return;
  }
  int64_t half = n / 2;
  cmlc_sort_merge_sort(c, a, tmp, half);
  cmlc_sort_merge_sort(c, a + half, tmp, n - half);
  // Already in order: nothing to merge.
  if (!cmlc_sort_is_before(c, a[half], a[half - 1])) return;
  memcpy(tmp, a, (size_t)half * sizeof *a);
  int64_t i = 0, j = half, k = 0;
  while (i < half && j < n) {
    if (cmlc_sort_is_before(c, a[j], tmp[i])) {
      a[k++] = a[j++];
    } else {
      a[k++] = tmp[i++];
    }
  }
  while (i < half) a[k++] = tmp[i++];
}

//===--- typed merge sorts ---===//
// The same merge sort with the comparison inlined, for the comparators models use most (a plain
// LessThan / GreaterThan on f32 or i32 keys): it sorts (key, index) pairs, so comparisons read
// keys in order instead of through the permutation, and makes the same comparisons in the same
// order, so the same permutation (NaNs included) without an indirect call per comparison.

// cmlc_sort_pairs_<name>: the merge sort of |n| pairs of type |PAIR| (key, index) by BEFORE on
// the keys, with |tmp| (n / 2 pairs at least).
#define CMLC_SORT_PAIRS_FN(name, PAIR, BEFORE)                        \
  static void cmlc_sort_pairs_##name(PAIR* a, PAIR* tmp, int64_t n) { \
    if (n <= 16) {                                                    \
      for (int64_t i = 1; i < n; ++i) {                               \
        const PAIR x = a[i];                                          \
        int64_t j = i;                                                \
        while (j > 0 && BEFORE(x.key, a[j - 1].key)) {                \
          a[j] = a[j - 1];                                            \
          --j;                                                        \
        }                                                             \
        a[j] = x;                                                     \
      }                                                               \
      return;                                                         \
    }                                                                 \
    int64_t half = n / 2;                                             \
    cmlc_sort_pairs_##name(a, tmp, half);                             \
    cmlc_sort_pairs_##name(a + half, tmp, n - half);                  \
    if (!BEFORE(a[half].key, a[half - 1].key)) return;                \
    memcpy(tmp, a, (size_t)half * sizeof *a);                         \
    int64_t i = 0, j = half, k = 0;                                   \
    while (i < half && j < n) {                                       \
      if (BEFORE(a[j].key, tmp[i].key)) {                             \
        a[k++] = a[j++];                                              \
      } else {                                                        \
        a[k++] = tmp[i++];                                            \
      }                                                               \
    }                                                                 \
    while (i < half) a[k++] = tmp[i++];                               \
  }
#define CMLC_SORT_PAIRS(name, T, BEFORE) \
  typedef struct cmlc_sort_pair_##name { \
    T key;                               \
    int32_t index;                       \
  } cmlc_sort_pair_##name;               \
  CMLC_SORT_PAIRS_FN(name, cmlc_sort_pair_##name, BEFORE)
#define CMLC_SORT_TYPED(name, T, BEFORE)                                                   \
  CMLC_SORT_PAIRS(name, T, BEFORE)                                                         \
  /* Sorts the line at |base| (|stride| bytes apart) into |perm| (|len| entries), using    \
     |scratch| (2 * len * sizeof(int64_t) bytes; perm is its second half). */              \
  static void cmlc_sort_line_##name(const uint8_t* base, int64_t stride, int64_t* scratch, \
                                    int64_t len, int64_t** out_perm) {                     \
    cmlc_sort_pair_##name* a = (cmlc_sort_pair_##name*)scratch;                            \
    cmlc_sort_pair_##name* tmp = a + len;                                                  \
    for (int64_t p = 0; p < len; ++p) {                                                    \
      memcpy(&a[p].key, base + p * stride, sizeof(T));                                     \
      a[p].index = (int32_t)p;                                                             \
    }                                                                                      \
    cmlc_sort_pairs_##name(a, tmp, len);                                                   \
    int64_t* perm = scratch + len;                                                         \
    for (int64_t p = 0; p < len; ++p) perm[p] = a[p].index;                                \
    *out_perm = perm;                                                                      \
  }

CMLC_SORT_TYPED(lt_f32_t, float, CMLC_SORT_LT_F)
CMLC_SORT_TYPED(gt_f32_t, float, CMLC_SORT_GT_F)
CMLC_SORT_TYPED(lt_i32_t, int32_t, CMLC_SORT_LT)
CMLC_SORT_TYPED(gt_i32_t, int32_t, CMLC_SORT_GT)

typedef void (*cmlc_sort_typed_fn)(const uint8_t* base, int64_t stride, int64_t* scratch,
                                   int64_t len, int64_t** out_perm);

// Long lines of i32 or f32 keys: a stable LSD radix sort of (key, index) pairs, a byte per pass,
// so the stable merge sort's permutation (keys equal under the comparison get equal radix keys,
// and both sorts keep their order) in four linear passes instead of log2(len) merge levels; a
// pass whose byte is the same in every key is skipped. Keys are mapped to unsigned order (and
// complemented for GreaterThan).
// A flat sort of 1M ids, 1 thread on Zen 5: 76-79 -> 6.4 ms (xla:cpu 40).
enum { CMLC_SORT_RADIX_MIN = 4096 };

// |f32|: the keys are f32 (else i32). f32 keys map to unsigned order with -0 and +0 equal
// (a plain LessThan finds neither before the other) and every NaN to the largest key (after
// everything under LessThan, before everything under GreaterThan's complemented keys, equal
// among themselves: the merge sort's placement).
static void cmlc_sort_radix_32(const uint8_t* base, int64_t stride, int64_t* scratch, int64_t len,
                               int64_t** out_perm, uint32_t flip, bool f32) {
  typedef struct {
    uint32_t key;
    int32_t index;
  } pair_t;
  pair_t* a = (pair_t*)scratch;
  pair_t* b = a + len;
  uint32_t counts[4][256];
  memset(counts, 0, sizeof counts);
  for (int64_t p = 0; p < len; ++p) {
    uint32_t v;
    memcpy(&v, base + p * stride, sizeof v);
    uint32_t k;
    if (f32) {
      k = (v & 0x7FFFFFFFu) > 0x7F800000u ? 0xFFFFFFFFu  // NaN
          : (v & 0x7FFFFFFFu) == 0        ? 0x80000000u
          : (v & 0x80000000u)             ? ~v
                                          : v | 0x80000000u;
    } else {
      k = v ^ 0x80000000u;
    }
    k ^= flip;
    a[p].key = k;
    a[p].index = (int32_t)p;
    for (int d = 0; d < 4; ++d) ++counts[d][(k >> (8 * d)) & 255u];
  }
  for (int d = 0; d < 4; ++d) {
    const uint32_t first = (a[0].key >> (8 * d)) & 255u;
    if (counts[d][first] == (uint32_t)len) continue;  // one value of this byte: order kept
    uint32_t at[256], sum = 0;
    for (int v = 0; v < 256; ++v) {
      at[v] = sum;
      sum += counts[d][v];
    }
    for (int64_t p = 0; p < len; ++p) b[at[(a[p].key >> (8 * d)) & 255u]++] = a[p];
    pair_t* t = a;
    a = b;
    b = t;
  }
  // The pairs end in either half of the scratch: the permutation goes to the other one.
  int64_t* perm = (pair_t*)scratch == a ? scratch + len : scratch;
  for (int64_t p = 0; p < len; ++p) perm[p] = a[p].index;
  *out_perm = perm;
}

static void cmlc_sort_line_lt_i32_radix(const uint8_t* base, int64_t stride, int64_t* scratch,
                                        int64_t len, int64_t** out_perm) {
  cmlc_sort_radix_32(base, stride, scratch, len, out_perm, 0, false);
}

static void cmlc_sort_line_gt_i32_radix(const uint8_t* base, int64_t stride, int64_t* scratch,
                                        int64_t len, int64_t** out_perm) {
  cmlc_sort_radix_32(base, stride, scratch, len, out_perm, 0xFFFFFFFFu, false);
}

static void cmlc_sort_line_lt_f32_radix(const uint8_t* base, int64_t stride, int64_t* scratch,
                                        int64_t len, int64_t** out_perm) {
  cmlc_sort_radix_32(base, stride, scratch, len, out_perm, 0, true);
}

static void cmlc_sort_line_gt_f32_radix(const uint8_t* base, int64_t stride, int64_t* scratch,
                                        int64_t len, int64_t** out_perm) {
  cmlc_sort_radix_32(base, stride, scratch, len, out_perm, 0xFFFFFFFFu, true);
}

static cmlc_sort_typed_fn cmlc_sort_u64_typed(cmlc_before_fn before);
enum { CMLC_SORT_ENCODED_RADIX_MIN = 1024 };

// The typed sort of a fast comparator for lines of |len|, or NULL (the comparator is called).
// |reference|: the reference backend, whose merge sort through the typed comparisons is the
// oracle the u64 keys are tested against (it keeps the f32 / i32 radix sorts, tested as ever).
static cmlc_sort_typed_fn cmlc_sort_typed(cmlc_before_fn before, int64_t len, bool reference) {
  // Pairs of a key and an int32 index, two per line element in the scratch (the u64 keys' four:
  // cmlc_sort_typed_extra).
  if (len > INT32_MAX) return NULL;
  if (!reference && len >= CMLC_SORT_ENCODED_RADIX_MIN && cmlc_sort_u64_typed(before)) {
    return cmlc_sort_u64_typed(before);
  }
  if (before == cmlc_sort_lt_f32) {
    return len >= CMLC_SORT_RADIX_MIN ? cmlc_sort_line_lt_f32_radix : cmlc_sort_line_lt_f32_t;
  }
  if (before == cmlc_sort_gt_f32) {
    return len >= CMLC_SORT_RADIX_MIN ? cmlc_sort_line_gt_f32_radix : cmlc_sort_line_gt_f32_t;
  }
  if (before == cmlc_sort_lt_i32) {
    return len >= CMLC_SORT_RADIX_MIN ? cmlc_sort_line_lt_i32_radix : cmlc_sort_line_lt_i32_t;
  }
  if (before == cmlc_sort_gt_i32) {
    return len >= CMLC_SORT_RADIX_MIN ? cmlc_sort_line_gt_i32_radix : cmlc_sort_line_gt_i32_t;
  }
  return NULL;
}

//===--- encoded programs: one u64 key per element ---===//
// A program that is a plain lexicographic order (cmlc_sort_program_t.encodable) on a line with
// no NaN in its float keys is a strict weak order: each key maps to an unsigned integer of its
// width that orders as the compares do (-0 and +0 to one value, complemented for GreaterThan),
// and the comparator is "the concatenation of the levels' integers is smaller". A stable sort
// under a strict weak order has one result, so sorting (u64, index) pairs stably (the merge sort
// on the integers, or an LSD radix sort for long lines) gives the calls' permutation. Lines with
// a NaN are no strict weak order: their permutation is the merge sort's own. With one level (a
// single compare, F), a NaN key becomes CMLC_SORT_NAN_KEY, above every other, and the pairs
// take the same merge sort with "x < y and y is not NaN" (the compare is false when either is
// NaN): the same comparisons in the same order as the program's, so its permutation. Lines of
// several levels with a NaN run the program's compares. (flush_denormals flushes results, not
// the compares' operands, and Abs / Neg are exact: subnormal keys stay distinct from 0 in the
// calls too.)

CMLC_SORT_PAIRS(u64, uint64_t, CMLC_SORT_LT)
// A single level's NaN key: its other keys have 32 bits, or are f64 keys below it.
#define CMLC_SORT_NAN_KEY UINT64_MAX
#define CMLC_SORT_LT_NAN_KEY(x, y) ((x) < (y) && (y) != CMLC_SORT_NAN_KEY)
CMLC_SORT_PAIRS_FN(u64_nan, cmlc_sort_pair_u64, CMLC_SORT_LT_NAN_KEY)

// Lines at least CMLC_SORT_ENCODED_RADIX_MIN long take the radix sort (8 byte passes at most,
// constant bytes skipped).

// |x| (no NaN) in unsigned order, -0 as +0.
static inline uint32_t cmlc_sort_order_f32(float x) {
  if (x == 0) x = 0;
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static inline uint64_t cmlc_sort_order_f64(double x) {
  if (x == 0) x = 0;
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}

typedef enum cmlc_sort_encoding_t {
  CMLC_SORT_ENCODED,      // no NaN: a strict weak order on the keys
  CMLC_SORT_ENCODED_NAN,  // one level with NaN keys (CMLC_SORT_NAN_KEY)
  CMLC_SORT_NOT_ENCODED,  // several levels with a NaN key
} cmlc_sort_encoding_t;

// Writes the (key, index) pairs of the bound program |prog| (|len| elements) to |pairs|.
static cmlc_sort_encoding_t cmlc_sort_encode(const cmlc_sort_program_t* prog, int64_t len,
                                             cmlc_sort_pair_u64* pairs) {
  cmlc_sort_encoding_t result = CMLC_SORT_ENCODED;
  for (int64_t p = 0; p < len; ++p) {
    pairs[p].key = 0;
    pairs[p].index = (int32_t)p;
  }
  for (uint32_t l = 0; l <= prog->level_count; ++l) {
    const cmlc_sort_term_t* t = &prog->terms[2 * l];
    const cmlc_sort_key_t* key = &prog->keys[t->key];
    const uint32_t bits = key->bits;
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    const uint64_t flip = t->op == CMLC_SORT_OP_GT ? mask : 0;
    const uint64_t sign = key->signed_int ? 1ull << (bits - 1) : 0;
    for (int64_t p = 0; p < len; ++p) {
      uint64_t u;
      switch (t->key_class) {
        case CMLC_SORT_KEY_F32: {
          const float x = ((const float*)t->values)[p];
          if (x != x) goto nan;
          u = cmlc_sort_order_f32(x);
          break;
        }
        case CMLC_SORT_KEY_F64: {
          const double x = ((const double*)t->values)[p];
          if (x != x) goto nan;
          u = cmlc_sort_order_f64(x);
          break;
        }
        case CMLC_SORT_KEY_I64:
          u = ((uint64_t)((const int64_t*)t->values)[p] ^ sign) & mask;
          break;
        default:
          u = ((const uint64_t*)t->values)[p];
          break;
      }
      // Shifting by 64 is undefined: a 64-bit level is the only one.
      pairs[p].key = (bits == 64 ? 0 : pairs[p].key << bits) | (u ^ flip);
      continue;
    nan:
      if (prog->level_count != 0) return CMLC_SORT_NOT_ENCODED;
      pairs[p].key = CMLC_SORT_NAN_KEY;
      result = CMLC_SORT_ENCODED_NAN;
    }
  }
  return result;
}

// A stable LSD radix sort of |a| (|len| pairs) by key, with |b| as the other buffer; returns the
// buffer that holds the result.
static cmlc_sort_pair_u64* cmlc_sort_radix_u64(cmlc_sort_pair_u64* a, cmlc_sort_pair_u64* b,
                                               int64_t len) {
  uint32_t counts[8][256];
  memset(counts, 0, sizeof counts);
  for (int64_t p = 0; p < len; ++p) {
    const uint64_t k = a[p].key;
    for (int d = 0; d < 8; ++d) ++counts[d][(k >> (8 * d)) & 255u];
  }
  for (int d = 0; d < 8; ++d) {
    const uint32_t first = (uint32_t)(a[0].key >> (8 * d)) & 255u;
    if (counts[d][first] == (uint32_t)len) continue;  // one value of this byte: order kept
    uint32_t at[256], sum = 0;
    for (int v = 0; v < 256; ++v) {
      at[v] = sum;
      sum += counts[d][v];
    }
    for (int64_t p = 0; p < len; ++p) b[at[(a[p].key >> (8 * d)) & 255u]++] = a[p];
    cmlc_sort_pair_u64* t = a;
    a = b;
    b = t;
  }
  return a;
}

// Sorts the bound program's line through encoded pairs into a permutation in |slot| (4 * len
// int64 slots before the keys); false (nothing sorted) when the line has a NaN key under several
// levels or is too long for int32 indices.
static bool cmlc_sort_encoded(const cmlc_sort_program_t* prog, int64_t len, int64_t* slot,
                              int64_t** out_perm) {
  cmlc_sort_pair_u64* a = (cmlc_sort_pair_u64*)(void*)slot;
  cmlc_sort_pair_u64* b = a + len;
  // The pairs hold int32 indices.
  if (len > INT32_MAX) return false;
  const cmlc_sort_encoding_t encoding = cmlc_sort_encode(prog, len, a);
  if (encoding == CMLC_SORT_NOT_ENCODED) return false;
  cmlc_sort_pair_u64* sorted = a;
  if (encoding == CMLC_SORT_ENCODED_NAN) {
    cmlc_sort_pairs_u64_nan(a, b, len);
  } else if (len >= CMLC_SORT_ENCODED_RADIX_MIN) {
    sorted = cmlc_sort_radix_u64(a, b, len);
  } else {
    cmlc_sort_pairs_u64(a, b, len);
  }
  // The permutation goes to the buffer the pairs are not in.
  int64_t* perm = sorted == a ? (int64_t*)(void*)b : (int64_t*)(void*)a;
  for (int64_t p = 0; p < len; ++p) perm[p] = sorted[p].index;
  *out_perm = perm;
  return true;
}

//===--- plain comparators of the other dtypes: one u64 key per element ---===//
// A single LessThan / GreaterThan of operand 0 for keys other than f32 / i32 (which have their
// 32-bit radix above): bool, the other integers, f64, f16 and bf16. Their typed comparisons
// are strict weak orders (a NaN after every other value under LessThan, before under
// GreaterThan, equal among NaNs; -0 equal to +0), so each key maps to an unsigned integer that
// orders the same (complemented for GreaterThan) and a stable LSD radix sort of (key, index)
// pairs gives the merge sort's permutation, in up to 8 byte passes (constant bytes skipped)
// instead of log2(len) merge levels through a comparison call. A sort of 1M u32, i64 or f64
// keys, 1 thread on Zen 4: 171, 317, 324 ms -> 20, 43, 54 ms (xla:cpu 50-57, 57, 115 ms).

typedef enum cmlc_sort_u64_kind_t {
  CMLC_SORT_U64_UNSIGNED8,
  CMLC_SORT_U64_UNSIGNED16,
  CMLC_SORT_U64_UNSIGNED32,
  CMLC_SORT_U64_UNSIGNED64,
  CMLC_SORT_U64_SIGNED8,
  CMLC_SORT_U64_SIGNED16,
  CMLC_SORT_U64_SIGNED64,
  CMLC_SORT_U64_F64,
  CMLC_SORT_U64_F16,
  CMLC_SORT_U64_BF16,
} cmlc_sort_u64_kind_t;

// The unsigned-order key of the element at |e|; NaN is UINT64_MAX, above every other key
// (f64's largest other key is +inf's, 0xFFF0...; f16 / bf16 keys have 32 bits).
static inline uint64_t cmlc_sort_u64_key(const uint8_t* e, cmlc_sort_u64_kind_t kind) {
  switch (kind) {
    case CMLC_SORT_U64_UNSIGNED8:
      return e[0];
    case CMLC_SORT_U64_UNSIGNED16: {
      uint16_t v;
      memcpy(&v, e, sizeof v);
      return v;
    }
    case CMLC_SORT_U64_UNSIGNED32: {
      uint32_t v;
      memcpy(&v, e, sizeof v);
      return v;
    }
    case CMLC_SORT_U64_UNSIGNED64: {
      uint64_t v;
      memcpy(&v, e, sizeof v);
      return v;
    }
    case CMLC_SORT_U64_SIGNED8:
      return (uint64_t)(int64_t)(int8_t)e[0] ^ 0x8000000000000000ull;
    case CMLC_SORT_U64_SIGNED16: {
      int16_t v;
      memcpy(&v, e, sizeof v);
      return (uint64_t)(int64_t)v ^ 0x8000000000000000ull;
    }
    case CMLC_SORT_U64_SIGNED64: {
      int64_t v;
      memcpy(&v, e, sizeof v);
      return (uint64_t)v ^ 0x8000000000000000ull;
    }
    case CMLC_SORT_U64_F64: {
      double v;
      memcpy(&v, e, sizeof v);
      return v != v ? UINT64_MAX : cmlc_sort_order_f64(v);
    }
    default: {
      uint16_t h;
      memcpy(&h, e, sizeof h);
      const float v = kind == CMLC_SORT_U64_F16 ? cml_f16_to_f32(h) : cml_bf16_to_f32(h);
      return v != v ? UINT64_MAX : cmlc_sort_order_f32(v);
    }
  }
}

// Sorts the line at |base| (|stride| bytes apart) into a permutation; |scratch| holds 4 * len
// int64 (two buffers of pairs; the permutation goes to the one the result is not in).
static void cmlc_sort_line_u64(const uint8_t* base, int64_t stride, int64_t* scratch, int64_t len,
                               int64_t** out_perm, cmlc_sort_u64_kind_t kind, bool gt) {
  cmlc_sort_pair_u64* a = (cmlc_sort_pair_u64*)(void*)scratch;
  cmlc_sort_pair_u64* b = a + len;
  const uint64_t flip = gt ? UINT64_MAX : 0;
  for (int64_t p = 0; p < len; ++p) {
    a[p].key = cmlc_sort_u64_key(base + p * stride, kind) ^ flip;
    a[p].index = (int32_t)p;
  }
  cmlc_sort_pair_u64* sorted = cmlc_sort_radix_u64(a, b, len);
  int64_t* perm = sorted == a ? (int64_t*)(void*)b : (int64_t*)(void*)a;
  for (int64_t p = 0; p < len; ++p) perm[p] = sorted[p].index;
  *out_perm = perm;
}

#define CMLC_SORT_U64_LINE(name, KIND)                                                            \
  static void cmlc_sort_line_lt_##name##_u64(const uint8_t* base, int64_t stride,                 \
                                             int64_t* scratch, int64_t len, int64_t** out_perm) { \
    cmlc_sort_line_u64(base, stride, scratch, len, out_perm, KIND, false);                        \
  }                                                                                               \
  static void cmlc_sort_line_gt_##name##_u64(const uint8_t* base, int64_t stride,                 \
                                             int64_t* scratch, int64_t len, int64_t** out_perm) { \
    cmlc_sort_line_u64(base, stride, scratch, len, out_perm, KIND, true);                         \
  }
CMLC_SORT_U64_LINE(pred, CMLC_SORT_U64_UNSIGNED8)
CMLC_SORT_U64_LINE(u8, CMLC_SORT_U64_UNSIGNED8)
CMLC_SORT_U64_LINE(u16, CMLC_SORT_U64_UNSIGNED16)
CMLC_SORT_U64_LINE(u32, CMLC_SORT_U64_UNSIGNED32)
CMLC_SORT_U64_LINE(u64, CMLC_SORT_U64_UNSIGNED64)
CMLC_SORT_U64_LINE(i8, CMLC_SORT_U64_SIGNED8)
CMLC_SORT_U64_LINE(i16, CMLC_SORT_U64_SIGNED16)
CMLC_SORT_U64_LINE(i64, CMLC_SORT_U64_SIGNED64)
CMLC_SORT_U64_LINE(f64, CMLC_SORT_U64_F64)
CMLC_SORT_U64_LINE(f16, CMLC_SORT_U64_F16)
CMLC_SORT_U64_LINE(bf16, CMLC_SORT_U64_BF16)

// The u64-key line sort of fast comparator |before|, or NULL (f32 / i32, LessOrEqual /
// GreaterOrEqual, the total orders: their own paths).
static cmlc_sort_typed_fn cmlc_sort_u64_typed(cmlc_before_fn before) {
  static const struct {
    cmlc_before_fn before;
    cmlc_sort_typed_fn line;
  } table[] = {
      {cmlc_sort_lt_pred, cmlc_sort_line_lt_pred_u64},
      {cmlc_sort_gt_pred, cmlc_sort_line_gt_pred_u64},
      {cmlc_sort_lt_u8, cmlc_sort_line_lt_u8_u64},
      {cmlc_sort_gt_u8, cmlc_sort_line_gt_u8_u64},
      {cmlc_sort_lt_u16, cmlc_sort_line_lt_u16_u64},
      {cmlc_sort_gt_u16, cmlc_sort_line_gt_u16_u64},
      {cmlc_sort_lt_u32, cmlc_sort_line_lt_u32_u64},
      {cmlc_sort_gt_u32, cmlc_sort_line_gt_u32_u64},
      {cmlc_sort_lt_u64, cmlc_sort_line_lt_u64_u64},
      {cmlc_sort_gt_u64, cmlc_sort_line_gt_u64_u64},
      {cmlc_sort_lt_i8, cmlc_sort_line_lt_i8_u64},
      {cmlc_sort_gt_i8, cmlc_sort_line_gt_i8_u64},
      {cmlc_sort_lt_i16, cmlc_sort_line_lt_i16_u64},
      {cmlc_sort_gt_i16, cmlc_sort_line_gt_i16_u64},
      {cmlc_sort_lt_i64, cmlc_sort_line_lt_i64_u64},
      {cmlc_sort_gt_i64, cmlc_sort_line_gt_i64_u64},
      {cmlc_sort_lt_f64, cmlc_sort_line_lt_f64_u64},
      {cmlc_sort_gt_f64, cmlc_sort_line_gt_f64_u64},
      {cmlc_sort_lt_f16, cmlc_sort_line_lt_f16_u64},
      {cmlc_sort_gt_f16, cmlc_sort_line_gt_f16_u64},
      {cmlc_sort_lt_bf16, cmlc_sort_line_lt_bf16_u64},
      {cmlc_sort_gt_bf16, cmlc_sort_line_gt_bf16_u64},
  };
  if (!before) return NULL;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (table[i].before == before) return table[i].line;
  }
  return NULL;
}

// int64 slots per line element beyond the merge sort's two that the typed sort of |before|
// needs for lines of |len|: the u64 pairs take four in all.
static uint32_t cmlc_sort_typed_extra(cmlc_before_fn before, int64_t len,
                                      const cmlc_options_t* options) {
  if ((options && options->reference) || len < CMLC_SORT_ENCODED_RADIX_MIN || len > INT32_MAX) {
    return 0;
  }
  return cmlc_sort_u64_typed(before) ? 2 : 0;
}

//===--- the first elements only: Sorts read through Slices (top-k) ---===//

// The prefix of the sorted axis that the module reads: the largest limit along the axis over
// the Slices that read the results, when Slices are their only readers (not a function's
// result, not captured by a closure); otherwise the whole axis. Sampling's top-k, written as a
// Sort of (values, indices) and a Slice of the first k, reads k of each line.
static int64_t cmlc_sort_read_prefix(const cml_module_t* m, const cml_ir_node_t* node) {
  const int64_t axis = node->attrs->axis;
  const int64_t len = m->values[node->inputs[0]].shape.dims[axis];
  const uint32_t first = node->first_output, last = node->first_output + node->output_count;
  for (uint32_t fi = 0; fi < m->function_count; ++fi) {
    const cml_ir_function_t* f = &m->functions[fi];
    for (uint32_t i = 0; i < f->output_count; ++i) {
      if (f->outputs[i] >= first && f->outputs[i] < last) return len;
    }
    for (uint32_t i = 0; i < f->capture_count; ++i) {
      if (f->captures_outer[i] >= first && f->captures_outer[i] < last) return len;
    }
  }
  int64_t prefix = 0;
  for (uint32_t ni = 0; ni < m->node_count; ++ni) {
    const cml_ir_node_t* n = &m->nodes[ni];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (n->inputs[k] < first || n->inputs[k] >= last) continue;
      if (n->op != CML_OP_SLICE) return len;
      if (n->attrs->limits[axis] > prefix) prefix = n->attrs->limits[axis];
    }
  }
  return prefix < len ? prefix : len;
}

// The positions of the first |k| (>= 1) elements of the stable sort of the line under a plain
// LessThan / GreaterThan of f32 or i32 keys (NaNs placed as the sorts place them), in order,
// into |perm| (room for 2 * k int64 values: the positions, then the keys): each element enters
// a sorted buffer of the best k so far after the ones it is not before (ties keep their order,
// as the stable sort does), and most elements of a long line leave after one comparison with
// the buffer's last.
#define CMLC_SORT_SELECT_TYPED(name, T, BEFORE)                                                    \
  static void cmlc_sort_select_##name(const uint8_t* base, int64_t stride, int64_t len, int64_t k, \
                                      int64_t* perm) {                                             \
    T* keys = (T*)(void*)(perm + k);                                                               \
    int64_t count = 0;                                                                             \
    for (int64_t p = 0; p < len; ++p) {                                                            \
      T x;                                                                                         \
      memcpy(&x, base + p * stride, sizeof x);                                                     \
      if (count == k && !BEFORE(x, keys[k - 1])) continue;                                         \
      int64_t lo = 0, hi = count;                                                                  \
      while (lo < hi) {                                                                            \
        const int64_t mid = lo + (hi - lo) / 2;                                                    \
        if (BEFORE(x, keys[mid])) {                                                                \
          hi = mid;                                                                                \
        } else {                                                                                   \
          lo = mid + 1;                                                                            \
        }                                                                                          \
      }                                                                                            \
      if (count < k) ++count;                                                                      \
      memmove(perm + lo + 1, perm + lo, (size_t)(count - 1 - lo) * sizeof *perm);                  \
      memmove(keys + lo + 1, keys + lo, (size_t)(count - 1 - lo) * sizeof *keys);                  \
      perm[lo] = p;                                                                                \
      keys[lo] = x;                                                                                \
    }                                                                                              \
  }
CMLC_SORT_SELECT_TYPED(lt_f32, float, CMLC_SORT_LT_F)
CMLC_SORT_SELECT_TYPED(gt_f32, float, CMLC_SORT_GT_F)
CMLC_SORT_SELECT_TYPED(lt_i32, int32_t, CMLC_SORT_LT)
CMLC_SORT_SELECT_TYPED(gt_i32, int32_t, CMLC_SORT_GT)

typedef void (*cmlc_sort_select_fn)(const uint8_t* base, int64_t stride, int64_t len, int64_t k,
                                    int64_t* perm);

// The selection of a fast comparator, or NULL (lines are sorted whole).
static cmlc_sort_select_fn cmlc_sort_select_typed(cmlc_before_fn before) {
  if (before == cmlc_sort_lt_f32) return cmlc_sort_select_lt_f32;
  if (before == cmlc_sort_gt_f32) return cmlc_sort_select_gt_f32;
  if (before == cmlc_sort_lt_i32) return cmlc_sort_select_lt_i32;
  if (before == cmlc_sort_gt_i32) return cmlc_sort_select_gt_i32;
  return NULL;
}

// Lines at most this many times the prefix long are sorted whole (the selection makes up to
// prefix moves per element it keeps).
enum { CMLC_SORT_SELECT_MAX = 256, CMLC_SORT_SELECT_RATIO = 4 };

// entry.prepare (run at plan time for every Sort): the read prefix, when the kernel selects
// it instead of sorting whole lines (a comparator with a selection, a prefix of at most
// CMLC_SORT_SELECT_MAX and at most 1/CMLC_SORT_SELECT_RATIO of the axis); 0 bytes otherwise.
size_t cmlc_sort_prepare(const cml_module_t* module, const cml_ir_node_t* node,
                         const cmlc_options_t* options, const void* const* consts, void* dst) {
  (void)consts;
  // The reference backend, the oracle of the tests and benchmarks, sorts whole lines.
  if (options && options->reference) return 0;
  const cml_shape_t* s = &module->values[node->inputs[0]].shape;
  const int64_t axis = node->attrs->axis;
  if (axis < 0 || axis >= s->rank || node->input_count == 0) return 0;
  if (!cmlc_sort_select_typed(cmlc_sort_fast_comparator(module, node))) return 0;
  const int64_t len = s->dims[axis], prefix = cmlc_sort_read_prefix(module, node);
  if (prefix > CMLC_SORT_SELECT_MAX || prefix * CMLC_SORT_SELECT_RATIO > len) return 0;
  if (dst) memcpy(dst, &prefix, sizeof prefix);
  return sizeof prefix;
}

//===--- the kernel ---===//

typedef struct cmlc_sort_job_t {
  const cmlc_kernel_args_t* args;
  cmlc_before_fn before;
  cmlc_sort_typed_fn typed;  // the same sort on (key, index) pairs, or NULL
  int64_t len, inner;
  int64_t prefix;  // < len: only the first |prefix| of each line are read (cmlc_sort_prepare)
  cmlc_sort_select_fn select;       // the typed selection of the prefix, or NULL
  const cmlc_sort_program_t* prog;  // the comparator's program (before is NULL), or NULL
  int64_t* index_scratch;           // per thread: slot_elements
  size_t slot_elements;             // cmlc_sort_program_slots + key count, times len
} cmlc_sort_job_t;

// Gathers every operand's line through |perm|.
static void cmlc_sort_gather(const cmlc_kernel_args_t* args, int64_t line_offset, int64_t inner,
                             const int64_t* perm, int64_t len) {
  for (uint32_t k = 0; k < args->input_count; ++k) {
    size_t es = cmlc_sort_elem_size(args->input_shapes[k]->dtype);
    const uint8_t* src = (const uint8_t*)args->inputs[k] + (size_t)line_offset * es;
    uint8_t* dst = (uint8_t*)args->outputs[k] + (size_t)line_offset * es;
    size_t stride = (size_t)inner * es;
    switch (es) {
      case 1:
        for (int64_t p = 0; p < len; ++p) dst[(size_t)p * stride] = src[(size_t)perm[p] * stride];
        break;
      case 4:
        for (int64_t p = 0; p < len; ++p) {
          memcpy(dst + (size_t)p * stride, src + (size_t)perm[p] * stride, 4);
        }
        break;
      default:
        for (int64_t p = 0; p < len; ++p) {
          memcpy(dst + (size_t)p * stride, src + (size_t)perm[p] * stride, es);
        }
        break;
    }
  }
}

static void cmlc_sort_lines_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_sort_job_t* job = (cmlc_sort_job_t*)ctx;
  const cmlc_kernel_args_t* args = job->args;
  int64_t len = job->len, inner = job->inner;
  int64_t* perm = job->index_scratch + (size_t)thread_index * job->slot_elements;
  int64_t* tmp = perm + len;
  size_t es = cmlc_sort_elem_size(args->input_shapes[0]->dtype);
  // This thread's copy of the program: bound to its keys line by line.
  cmlc_sort_program_t prog;
  if (job->prog) prog = *job->prog;
  for (int64_t line = begin; line < end; ++line) {
    int64_t o = line / inner, in = line % inner;
    int64_t line_offset = o * len * inner + in;
    cmlc_sort_cmp_t c = {0};
    c.before = job->before;
    c.base = (const uint8_t*)args->inputs[0] + (size_t)line_offset * es;
    c.stride = (int64_t)((size_t)inner * es);
    if (job->prefix == 0) continue;
    if (job->prefix < len) {
      job->select(c.base, c.stride, len, job->prefix, perm);
      cmlc_sort_gather(args, line_offset, inner, perm, job->prefix);
      continue;
    }
    if (job->prog) {
      cmlc_sort_program_bind(&prog, args, line_offset, inner, len,
                             (uint64_t*)(perm + cmlc_sort_program_slots(&prog) * len));
      int64_t* sorted = NULL;
      if (prog.encodable && cmlc_sort_encoded(&prog, len, perm, &sorted)) {
        cmlc_sort_gather(args, line_offset, inner, sorted, len);
        continue;
      }
      c.before = NULL;
      c.prog = &prog;
      for (int64_t p = 0; p < len; ++p) perm[p] = p;
      cmlc_sort_merge_sort(&c, perm, tmp, len);
      cmlc_sort_gather(args, line_offset, inner, perm, len);
      continue;
    }
    if (job->typed) {
      int64_t* sorted = NULL;
      job->typed(c.base, c.stride, perm, len, &sorted);
      cmlc_sort_gather(args, line_offset, inner, sorted, len);
      continue;
    }
    for (int64_t p = 0; p < len; ++p) perm[p] = p;
    cmlc_sort_merge_sort(&c, perm, tmp, len);
    cmlc_sort_gather(args, line_offset, inner, perm, len);
  }
}

static int cmlc_sort_threads(const cmlc_options_t* options) {
  return options && options->threads > 1 ? options->threads : 1;
}

// The program of Sort |node|'s comparator when the kernel runs it (the comparator is neither a
// single compare nor off the program grammar, and the backend is not the reference, whose
// sorts call the comparator: the oracle the programs are tested against), into |prog|.
static bool cmlc_sort_program_of(const cml_module_t* m, const cml_ir_node_t* node,
                                 const cmlc_options_t* options, cmlc_sort_program_t* prog) {
  if ((options && options->reference) || cmlc_sort_fast_comparator(m, node)) return false;
  return cmlc_sort_parse_program(m, node, prog);
}

// The scratch of a Sort of |s| along |axis| with |n| operands: the general comparator's
// arrays first (|*general| bytes, a multiple of 8), then |*slots| index slots of |*index_bytes|
// each (a permutation, its merge buffer and |extra| more int64 per element for a program:
// cmlc_sort_program_extra). The fast comparators and
// the programs sort lines in parallel, one slot per thread, when there are at least as many
// lines as threads; with fewer lines (one long line: the slots would be most of the memory)
// and with the general comparator, one slot and one thread.
static size_t cmlc_sort_layout(const cml_shape_t* s, int64_t axis, uint32_t n, bool fast,
                               uint32_t extra, const cmlc_options_t* options, size_t* general,
                               size_t* index_bytes, int* slots) {
  int64_t len = (axis >= 0 && axis < s->rank) ? s->dims[axis] : 1;
  int64_t lines = 1;
  for (int32_t d = 0; d < s->rank; ++d) lines = d == axis ? lines : lines * s->dims[d];
  *general = cmlc_size_align(n * (3 * sizeof(void*) + sizeof(int64_t)) + 64, 8);
  *index_bytes = cmlc_size_of(len, (2 + (size_t)extra) * sizeof(int64_t));
  const int threads = cmlc_sort_threads(options);
  *slots = !fast || lines < threads ? 1 : threads;
  return cmlc_size_add(*general, cmlc_size_mul(*index_bytes, (size_t)*slots));
}

size_t cmlc_sort_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                         const cmlc_options_t* options) {
  size_t general, index_bytes;
  int slots;
  cmlc_sort_program_t prog;
  const bool program = cmlc_sort_program_of(module, node, options, &prog);
  const cml_shape_t* s = &module->values[node->inputs[0]].shape;
  const int64_t axis = node->attrs->axis;
  const cmlc_before_fn before = cmlc_sort_fast_comparator(module, node);
  const uint32_t extra =
      program
          ? cmlc_sort_program_extra(&prog)
          : cmlc_sort_typed_extra(before, axis >= 0 && axis < s->rank ? s->dims[axis] : 1, options);
  return cmlc_sort_layout(s, axis, node->input_count, program || before != NULL, extra, options,
                          &general, &index_bytes, &slots);
}

cml_status_t cmlc_sort_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* s = args->input_shapes[0];
  int64_t axis = args->node->attrs->axis;
  if (axis < 0 || axis >= s->rank || args->input_count == 0 ||
      args->output_count != args->input_count) {
    char text[128];
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "c backend: Sort of %s along axis %lld with %u operands, %u results",
                           cml_shape_format(s, text, sizeof text), (long long)axis,
                           args->input_count, args->output_count);
  }
  int64_t len = s->dims[axis], outer = 1, inner = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= s->dims[d];
  for (int32_t d = (int32_t)axis + 1; d < s->rank; ++d) inner *= s->dims[d];
  int64_t lines = outer * inner;
  if (lines == 0 || len == 0) return CML_OK;
  cmlc_before_fn before = cmlc_sort_fast_comparator(args->module, args->node);
  cmlc_sort_program_t prog;
  const bool program = cmlc_sort_program_of(args->module, args->node, args->options, &prog);
  size_t general, index_bytes;
  int slots;
  const size_t need = cmlc_sort_layout(
      s, axis, args->input_count, before != NULL || program,
      program ? cmlc_sort_program_extra(&prog) : cmlc_sort_typed_extra(before, len, args->options),
      args->options, &general, &index_bytes, &slots);
  if (!args->scratch || index_bytes == SIZE_MAX || need == SIZE_MAX || args->scratch_size < need) {
    return cml_status_make(CML_STATUS_INTERNAL, "c backend: Sort scratch of %zu bytes is too small",
                           args->scratch_size);
  }
  int64_t* index_scratch = (int64_t*)((uint8_t*)args->scratch + general);
  if (before || program) {
    cmlc_sort_job_t job = {
        .args = args,
        .before = before,
        .typed =
            before ? cmlc_sort_typed(before, len, args->options && args->options->reference) : NULL,
        .len = len,
        .inner = inner,
        .prefix = len,
        .prog = program ? &prog : NULL,
        .index_scratch = index_scratch,
        .slot_elements = index_bytes / sizeof(int64_t)};
    job.select = before ? cmlc_sort_select_typed(before) : NULL;
    if (args->prepared && job.select) memcpy(&job.prefix, args->prepared, sizeof job.prefix);
    // Every thread of the pool needs a slot (fewer lines than threads: one thread sorts them).
    const bool fits = cmlc_pool_thread_count(args->pool) <= slots;
    int64_t work = len < 16 ? 16 : len;
    int64_t min_chunk = (int64_t)(32768 / work) + 1;
    cmlc_parallel_for(fits ? args->pool : NULL, lines, min_chunk, cmlc_sort_lines_task, &job);
    return CML_OK;
  }
  // General comparator: one call per comparison, on this thread.
  uint32_t n = args->input_count;
  uint8_t* extra = (uint8_t*)args->scratch;
  const void** call_inputs = (const void**)extra;
  const uint8_t** line_bases = (const uint8_t**)(extra + 2 * n * sizeof(void*));
  int64_t* strides = (int64_t*)(extra + 3 * n * sizeof(void*));
  int64_t* perm = index_scratch;
  int64_t* tmp = perm + len;
  for (int64_t line = 0; line < lines; ++line) {
    int64_t o = line / inner, in = line % inner;
    int64_t line_offset = o * len * inner + in;
    cmlc_sort_cmp_t c = {0};
    c.args = args;
    c.line_bases = line_bases;
    c.strides = strides;
    c.call_inputs = call_inputs;
    for (uint32_t k = 0; k < n; ++k) {
      size_t es = cmlc_sort_elem_size(args->input_shapes[k]->dtype);
      line_bases[k] = (const uint8_t*)args->inputs[k] + (size_t)line_offset * es;
      strides[k] = (int64_t)((size_t)inner * es);
    }
    for (int64_t p = 0; p < len; ++p) perm[p] = p;
    cmlc_sort_merge_sort(&c, perm, tmp, len);
    if (c.status != CML_OK) return cml_status_annotate(c.status, "Sort comparator");
    cmlc_sort_gather(args, line_offset, inner, perm, len);
  }
  return CML_OK;
}
