// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_control.c: compliance cases of the "control" group: closures and their
// captures (also from a grandparent), named functions and Call, While, If, Sort (one or several
// operands, stable ties, custom comparators, 2-D axes, NaNs in total order) and control flow
// nested inside control flow. Every expected value is worked out by hand in the comments.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backendtest/bt.h"

//===--- helpers ---===//

static cml_function_t* fn_closure(bt_t* t, cml_function_t* parent) {
  cml_function_t* c = NULL;
  if (!parent) return NULL;
  if (!bt_ok(t, cml_function_new_closure(parent, &c), "cml_function_new_closure")) return NULL;
  return c;
}

static cml_function_t* fn_named(bt_t* t, const char* name) {
  cml_builder_t* b = bt_builder(t);
  cml_function_t* g = NULL;
  if (!b) return NULL;
  if (!bt_ok(t, cml_builder_new_function(b, name, &g), "cml_builder_new_function")) return NULL;
  return g;
}

static cml_value_t fn_param(cml_function_t* f, const char* name, cml_dtype_t dtype, int32_t rank,
                            const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  return cml_parameter(f, name, &s);
}

static bool fn_return(bt_t* t, cml_function_t* f, const cml_value_t* values, size_t count,
                      const char* what) {
  return bt_ok(t, cml_function_return(f, values, count), what);
}

// Checks functions support, every op in |ops| (CML_OP_INVALID-terminated) and every dtype in
// |dtypes| (CML_DTYPE_INVALID-terminated).
static bool fn_require(bt_t* t, const cml_op_t* ops, const cml_dtype_t* dtypes) {
  if (!bt_require_functions(t)) return false;
  for (const cml_op_t* op = ops; op && *op != CML_OP_INVALID; ++op) {
    if (!bt_require_op(t, *op)) return false;
  }
  for (const cml_dtype_t* d = dtypes; d && *d != CML_DTYPE_INVALID; ++d) {
    if (!bt_require_dtype(t, *d)) return false;
  }
  return true;
}

// A comparator closure for Sort over |count| operands of |dtypes|: parameters in interleaved
// order (lhs_0, rhs_0, lhs_1, rhs_1, ...), result |op|(lhs_key, rhs_key).
static cml_function_t* fn_comparator(bt_t* t, cml_function_t* parent, cml_op_t op,
                                     const cml_dtype_t* dtypes, size_t count, size_t key) {
  cml_function_t* c = fn_closure(t, parent);
  if (!c) return NULL;
  cml_value_t lhs = CML_VALUE_INVALID, rhs = CML_VALUE_INVALID;
  for (size_t i = 0; i < count; ++i) {
    cml_value_t l = fn_param(c, NULL, dtypes[i], 0, NULL);
    cml_value_t r = fn_param(c, NULL, dtypes[i], 0, NULL);
    if (i == key) {
      lhs = l;
      rhs = r;
    }
  }
  cml_value_t less = cml_op_binary(c, op, lhs, rhs);
  if (!fn_return(t, c, &less, 1, "comparator return")) return NULL;
  return c;
}

//===--- closures and Call ---===//

// A parameterless closure capturing a main parameter: c() = x + x.
static void case_closure_capture(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_ADD, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {3};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){1, 2, -3});
  cml_function_t* c = fn_closure(t, f);
  if (!c) return;
  cml_value_t twice = cml_op_add(c, x, x);
  if (!fn_return(t, c, &twice, 1, "closure return")) return;
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_call(f, c, NULL, 0, &out);  // a builder error surfaces in bt_exec
  bt_tensor_t r[1];
  if (!bt_exec(t, &out, 1, r)) return;
  bt_expect_f64(t, "x + x", &r[0], CML_DTYPE_F32, 1, dims, (double[]){2, 4, -6}, 0);
}

// A closure with a parameter and a capture, called twice: c(p) = p + x.
static void case_closure_params_and_capture(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_ADD, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {3};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  cml_value_t y = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){10, 20, 30});
  cml_function_t* c = fn_closure(t, f);
  if (!c) return;
  cml_value_t p = fn_param(c, "p", CML_DTYPE_F32, 1, dims);
  cml_value_t s = cml_op_add(c, p, x);
  if (!fn_return(t, c, &s, 1, "closure return")) return;
  cml_value_t o1 = CML_VALUE_INVALID, o2 = CML_VALUE_INVALID;
  (void)cml_op_call(f, c, &y, 1, &o1);   // y + x = [11, 22, 33]
  (void)cml_op_call(f, c, &o1, 1, &o2);  // (y + x) + x = [12, 24, 36]
  bt_tensor_t r[2];
  if (!bt_exec(t, (cml_value_t[]){o1, o2}, 2, r)) return;
  bt_expect_f64(t, "c(y)", &r[0], CML_DTYPE_F32, 1, dims, (double[]){11, 22, 33}, 0);
  bt_expect_f64(t, "c(c(y))", &r[1], CML_DTYPE_F32, 1, dims, (double[]){12, 24, 36}, 0);
}

// c2, a closure of c1 (itself a closure of main), uses main's x: c2() = x + q with q c1's
// parameter; c1(q) = c2() + c2(). main: c1(3) with x = 5 gives 2 * (5 + 3) = 16.
static void case_nested_closure_grandparent(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_ADD, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_F64, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F64, 0, NULL, (double[]){5});
  cml_value_t three = bt_param_f64(t, f, CML_DTYPE_F64, 0, NULL, (double[]){3});
  cml_function_t* c1 = fn_closure(t, f);
  if (!c1) return;
  cml_value_t q = fn_param(c1, "q", CML_DTYPE_F64, 0, NULL);
  cml_function_t* c2 = fn_closure(t, c1);
  if (!c2) return;
  cml_value_t s = cml_op_add(c2, x, q);
  if (!fn_return(t, c2, &s, 1, "c2 return")) return;
  cml_value_t r1 = CML_VALUE_INVALID, r2 = CML_VALUE_INVALID;
  (void)cml_op_call(c1, c2, NULL, 0, &r1);
  (void)cml_op_call(c1, c2, NULL, 0, &r2);
  cml_value_t sum = cml_op_add(c1, r1, r2);
  if (!fn_return(t, c1, &sum, 1, "c1 return")) return;
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_call(f, c1, &three, 1, &out);
  bt_tensor_t r[1];
  if (!bt_exec(t, &out, 1, r)) return;
  bt_expect_f64(t, "c1(3)", &r[0], CML_DTYPE_F64, 0, NULL, (double[]){16}, 0);
}

// affine(a, b) = a * b + a, called twice: o1 = affine(x, y), o2 = affine(o1, x).
// x = [1, 2, -3], y = [3, -1, 0.5]: o1 = [4, 0, -4.5]; o2 = o1 * x + o1 = [8, 0, 9].
static void case_named_function_call_twice(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_ADD, CML_OP_MUL, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {3};
  cml_function_t* g = fn_named(t, "affine");
  if (!g) return;
  if (strcmp(cml_function_name(g), "affine") != 0) {
    bt_fail(t, "cml_function_name gives \"%s\", want \"affine\"", cml_function_name(g));
  }
  if (cml_function_parent(g) != NULL) bt_fail(t, "a named function has a parent");
  cml_value_t a = fn_param(g, "a", CML_DTYPE_F32, 1, dims);
  cml_value_t b = fn_param(g, "b", CML_DTYPE_F32, 1, dims);
  cml_value_t r = cml_op_add(g, cml_op_mul(g, a, b), a);
  if (!fn_return(t, g, &r, 1, "affine return")) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){1, 2, -3});
  cml_value_t y = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){3, -1, 0.5});
  cml_value_t o1 = CML_VALUE_INVALID, o2 = CML_VALUE_INVALID;
  (void)cml_op_call(f, g, (cml_value_t[]){x, y}, 2, &o1);
  (void)cml_op_call(f, g, (cml_value_t[]){o1, x}, 2, &o2);
  bt_tensor_t out[2];
  if (!bt_exec(t, (cml_value_t[]){o1, o2}, 2, out)) return;
  bt_expect_f64(t, "affine(x, y)", &out[0], CML_DTYPE_F32, 1, dims, (double[]){4, 0, -4.5}, 0);
  bt_expect_f64(t, "affine(o1, x)", &out[1], CML_DTYPE_F32, 1, dims, (double[]){8, 0, 9}, 0);
}

// sumdiff(a, b) = (a + b, a - b) on Int32: (7, 3) -> (10, 4); then sumdiff(4, 10) -> (14, -6).
static void case_named_function_multi_output(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_ADD, CML_OP_SUB, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* g = fn_named(t, "sumdiff");
  if (!g) return;
  cml_value_t a = fn_param(g, "a", CML_DTYPE_I32, 0, NULL);
  cml_value_t b = fn_param(g, "b", CML_DTYPE_I32, 0, NULL);
  if (!fn_return(t, g, (cml_value_t[]){cml_op_add(g, a, b), cml_op_sub(g, a, b)}, 2,
                 "sumdiff return")) {
    return;
  }
  if (cml_function_output_count(g) != 2) {
    bt_fail(t, "sumdiff has %zu outputs, want 2", cml_function_output_count(g));
  }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){7});
  cml_value_t y = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){3});
  cml_value_t r1[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  cml_value_t r2[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_call(f, g, (cml_value_t[]){x, y}, 2, r1);
  (void)cml_op_call(f, g, (cml_value_t[]){r1[1], r1[0]}, 2, r2);
  bt_tensor_t out[4];
  if (!bt_exec(t, (cml_value_t[]){r1[0], r1[1], r2[0], r2[1]}, 4, out)) return;
  bt_expect_i64(t, "7 + 3", &out[0], CML_DTYPE_I32, 0, NULL, (int64_t[]){10});
  bt_expect_i64(t, "7 - 3", &out[1], CML_DTYPE_I32, 0, NULL, (int64_t[]){4});
  bt_expect_i64(t, "4 + 10", &out[2], CML_DTYPE_I32, 0, NULL, (int64_t[]){14});
  bt_expect_i64(t, "4 - 10", &out[3], CML_DTYPE_I32, 0, NULL, (int64_t[]){-6});
}

// A named function calling another: h(a) = a + a, g(a) = h(a) + a = 3a.
static void case_named_function_calls_named(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_ADD, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I64, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {2};
  cml_function_t* h = fn_named(t, "double_it");
  if (!h) return;
  cml_value_t ha = fn_param(h, "a", CML_DTYPE_I64, 1, dims);
  cml_value_t hs = cml_op_add(h, ha, ha);
  if (!fn_return(t, h, &hs, 1, "double_it return")) return;
  cml_function_t* g = fn_named(t, "triple_it");
  if (!g) return;
  cml_value_t ga = fn_param(g, "a", CML_DTYPE_I64, 1, dims);
  cml_value_t gh = CML_VALUE_INVALID;
  (void)cml_op_call(g, h, &ga, 1, &gh);
  cml_value_t gs = cml_op_add(g, gh, ga);
  if (!fn_return(t, g, &gs, 1, "triple_it return")) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_i64(t, f, CML_DTYPE_I64, 1, dims, (int64_t[]){5, -((int64_t)1 << 40)});
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_call(f, g, &x, 1, &out);
  bt_tensor_t r[1];
  if (!bt_exec(t, &out, 1, r)) return;
  bt_expect_i64(t, "3x", &r[0], CML_DTYPE_I64, 1, dims, (int64_t[]){15, -3 * ((int64_t)1 << 40)});
}

//===--- While ---===//

// (i, acc) = (1, 1); while i <= n: (i + 1, acc * i). n = 5 (captured by cond): (6, 120).
static void case_while_factorial(bt_t* t) {
  if (!fn_require(t,
                  (const cml_op_t[]){CML_OP_WHILE, CML_OP_LESS_OR_EQUAL, CML_OP_ADD, CML_OP_MUL,
                                     CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t n = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){5});
  cml_function_t* cond = fn_closure(t, f);
  cml_function_t* body = fn_closure(t, f);
  if (!cond || !body) return;
  cml_value_t ci = fn_param(cond, "i", CML_DTYPE_I32, 0, NULL);
  (void)fn_param(cond, "acc", CML_DTYPE_I32, 0, NULL);
  cml_value_t go = cml_op_less_or_equal(cond, ci, n);
  if (!fn_return(t, cond, &go, 1, "cond return")) return;
  cml_value_t bi = fn_param(body, "i", CML_DTYPE_I32, 0, NULL);
  cml_value_t bacc = fn_param(body, "acc", CML_DTYPE_I32, 0, NULL);
  cml_value_t one = cml_constant_scalar_i64(body, CML_DTYPE_I32, 1);
  if (!fn_return(t, body, (cml_value_t[]){cml_op_add(body, bi, one), cml_op_mul(body, bacc, bi)}, 2,
                 "body return")) {
    return;
  }
  cml_value_t init_i = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1);
  cml_value_t init_acc = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1);
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_while(f, cond, body, (cml_value_t[]){init_i, init_acc}, 2, out);
  bt_tensor_t r[2];
  if (!bt_exec(t, out, 2, r)) return;
  bt_expect_i64(t, "i", &r[0], CML_DTYPE_I32, 0, NULL, (int64_t[]){6});
  bt_expect_i64(t, "5!", &r[1], CML_DTYPE_I32, 0, NULL, (int64_t[]){120});
}

// (k, a, b) = (0, 0, 1); while k < 10: (k + 1, b, a + b) -> (10, fib(10) = 55, fib(11) = 89).
static void case_while_fibonacci(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_WHILE, CML_OP_LESS_THAN, CML_OP_ADD, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I64, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_function_t* cond = fn_closure(t, f);
  cml_function_t* body = fn_closure(t, f);
  if (!cond || !body) return;
  cml_value_t ck = fn_param(cond, "k", CML_DTYPE_I64, 0, NULL);
  (void)fn_param(cond, "a", CML_DTYPE_I64, 0, NULL);
  (void)fn_param(cond, "b", CML_DTYPE_I64, 0, NULL);
  cml_value_t go = cml_op_less_than(cond, ck, cml_constant_scalar_i64(cond, CML_DTYPE_I64, 10));
  if (!fn_return(t, cond, &go, 1, "cond return")) return;
  cml_value_t bk = fn_param(body, "k", CML_DTYPE_I64, 0, NULL);
  cml_value_t ba = fn_param(body, "a", CML_DTYPE_I64, 0, NULL);
  cml_value_t bb = fn_param(body, "b", CML_DTYPE_I64, 0, NULL);
  cml_value_t next[3] = {cml_op_add(body, bk, cml_constant_scalar_i64(body, CML_DTYPE_I64, 1)), bb,
                         cml_op_add(body, ba, bb)};
  if (!fn_return(t, body, next, 3, "body return")) return;
  cml_value_t init[3] = {cml_constant_scalar_i64(f, CML_DTYPE_I64, 0),
                         cml_constant_scalar_i64(f, CML_DTYPE_I64, 0),
                         bt_param_i64(t, f, CML_DTYPE_I64, 0, NULL, (int64_t[]){1})};
  cml_value_t out[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_while(f, cond, body, init, 3, out);
  bt_tensor_t r[3];
  if (!bt_exec(t, out, 3, r)) return;
  bt_expect_i64(t, "k", &r[0], CML_DTYPE_I64, 0, NULL, (int64_t[]){10});
  bt_expect_i64(t, "fib(10)", &r[1], CML_DTYPE_I64, 0, NULL, (int64_t[]){55});
  bt_expect_i64(t, "fib(11)", &r[2], CML_DTYPE_I64, 0, NULL, (int64_t[]){89});
}

// The body captures a tensor w: (i, v) = (0, 0); while i < 4: (i + 1, v + w) -> v = 4w.
static void case_while_body_captures_tensor(bt_t* t) {
  if (!fn_require(
          t, (const cml_op_t[]){CML_OP_WHILE, CML_OP_LESS_THAN, CML_OP_ADD, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {3};
  cml_function_t* f = bt_main(t);
  cml_value_t w = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){1, -2, 0.5});
  cml_value_t v0 = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){0, 0, 0});
  cml_function_t* cond = fn_closure(t, f);
  cml_function_t* body = fn_closure(t, f);
  if (!cond || !body) return;
  cml_value_t ci = fn_param(cond, "i", CML_DTYPE_I32, 0, NULL);
  (void)fn_param(cond, "v", CML_DTYPE_F32, 1, dims);
  cml_value_t go = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 4));
  if (!fn_return(t, cond, &go, 1, "cond return")) return;
  cml_value_t bi = fn_param(body, "i", CML_DTYPE_I32, 0, NULL);
  cml_value_t bv = fn_param(body, "v", CML_DTYPE_F32, 1, dims);
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         cml_op_add(body, bv, w)};
  if (!fn_return(t, body, next, 2, "body return")) return;
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_while(f, cond, body,
                     (cml_value_t[]){cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), v0}, 2, out);
  bt_tensor_t r[2];
  if (!bt_exec(t, out, 2, r)) return;
  bt_expect_i64(t, "i", &r[0], CML_DTYPE_I32, 0, NULL, (int64_t[]){4});
  bt_expect_f64(t, "4w", &r[1], CML_DTYPE_F32, 1, dims, (double[]){4, -8, 2}, 0);
}

// A loop whose condition is false at once returns the initial state unchanged.
static void case_while_zero_iterations(bt_t* t) {
  if (!fn_require(
          t, (const cml_op_t[]){CML_OP_WHILE, CML_OP_LESS_THAN, CML_OP_ADD, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {2};
  cml_function_t* f = bt_main(t);
  cml_value_t i0 = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){5});
  cml_value_t v0 = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){-1.5, 2.25});
  cml_function_t* cond = fn_closure(t, f);
  cml_function_t* body = fn_closure(t, f);
  if (!cond || !body) return;
  cml_value_t ci = fn_param(cond, "i", CML_DTYPE_I32, 0, NULL);
  (void)fn_param(cond, "v", CML_DTYPE_F32, 1, dims);
  cml_value_t go = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 0));
  if (!fn_return(t, cond, &go, 1, "cond return")) return;
  cml_value_t bi = fn_param(body, "i", CML_DTYPE_I32, 0, NULL);
  cml_value_t bv = fn_param(body, "v", CML_DTYPE_F32, 1, dims);
  cml_value_t next[2] = {cml_op_add(body, bi, bi), cml_op_add(body, bv, bv)};
  if (!fn_return(t, body, next, 2, "body return")) return;
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_while(f, cond, body, (cml_value_t[]){i0, v0}, 2, out);
  bt_tensor_t r[2];
  if (!bt_exec(t, out, 2, r)) return;
  bt_expect_i64(t, "i", &r[0], CML_DTYPE_I32, 0, NULL, (int64_t[]){5});
  bt_expect_f64(t, "v", &r[1], CML_DTYPE_F32, 1, dims, (double[]){-1.5, 2.25}, 0);
}

//===--- If ---===//

// One executable, both branches: true -> (x + x, 7), false -> (x * x, -3); x = [1.5, -2].
static void case_if_both_branches(bt_t* t) {
  if (!fn_require(
          t, (const cml_op_t[]){CML_OP_IF, CML_OP_ADD, CML_OP_MUL, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {2};
  cml_function_t* f = bt_main(t);
  bt_tensor_t pred_true = bt_tensor_i64(t, CML_DTYPE_BOOL, 0, NULL, (int64_t[]){1});
  bt_tensor_t pred_false = bt_tensor_i64(t, CML_DTYPE_BOOL, 0, NULL, (int64_t[]){0});
  bt_tensor_t xv = bt_tensor_f64(t, CML_DTYPE_F32, 1, dims, (double[]){1.5, -2});
  cml_value_t p = bt_param(t, f, &pred_true);
  cml_value_t x = bt_param(t, f, &xv);
  cml_function_t* tb = fn_closure(t, f);
  cml_function_t* fb = fn_closure(t, f);
  if (!tb || !fb) return;
  if (!fn_return(
          t, tb,
          (cml_value_t[]){cml_op_add(tb, x, x), cml_constant_scalar_i64(tb, CML_DTYPE_I32, 7)}, 2,
          "true branch return") ||
      !fn_return(
          t, fb,
          (cml_value_t[]){cml_op_mul(fb, x, x), cml_constant_scalar_i64(fb, CML_DTYPE_I32, -3)}, 2,
          "false branch return")) {
    return;
  }
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_if(f, p, tb, fb, out);
  bt_tensor_t r[2];
  cml_executable_t* exe = NULL;
  if (!bt_exec_ex(t, out, 2, 0, r, &exe)) return;
  bt_expect_f64(t, "true: x + x", &r[0], CML_DTYPE_F32, 1, dims, (double[]){3, -4}, 0);
  bt_expect_i64(t, "true: 7", &r[1], CML_DTYPE_I32, 0, NULL, (int64_t[]){7});
  if (!bt_run(t, exe, (bt_tensor_t[]){pred_false, xv}, 2, 0, r, 2)) return;
  bt_expect_f64(t, "false: x * x", &r[0], CML_DTYPE_F32, 1, dims, (double[]){2.25, 4}, 0);
  bt_expect_i64(t, "false: -3", &r[1], CML_DTYPE_I32, 0, NULL, (int64_t[]){-3});
}

// Branches that capture different values and return a tensor computed from both captures.
static void case_if_captures(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_IF, CML_OP_SUB, CML_OP_GREATER_THAN, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_F64, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {3};
  cml_function_t* f = bt_main(t);
  bt_tensor_t av = bt_tensor_f64(t, CML_DTYPE_F64, 0, NULL, (double[]){2});
  bt_tensor_t bv = bt_tensor_f64(t, CML_DTYPE_F64, 0, NULL, (double[]){1});
  bt_tensor_t uv = bt_tensor_f64(t, CML_DTYPE_F64, 1, dims, (double[]){10, 20, 30});
  bt_tensor_t wv = bt_tensor_f64(t, CML_DTYPE_F64, 1, dims, (double[]){1, 2, 3});
  cml_value_t a = bt_param(t, f, &av);
  cml_value_t b = bt_param(t, f, &bv);
  cml_value_t u = bt_param(t, f, &uv);
  cml_value_t w = bt_param(t, f, &wv);
  cml_value_t pred = cml_op_greater_than(f, a, b);  // the predicate is computed
  cml_function_t* tb = fn_closure(t, f);
  cml_function_t* fb = fn_closure(t, f);
  if (!tb || !fb) return;
  cml_value_t tr = cml_op_sub(tb, u, w);  // [9, 18, 27]
  cml_value_t fr = cml_op_sub(fb, w, u);  // [-9, -18, -27]
  if (!fn_return(t, tb, &tr, 1, "true branch return") ||
      !fn_return(t, fb, &fr, 1, "false branch return")) {
    return;
  }
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_if(f, pred, tb, fb, &out);
  bt_tensor_t r[1];
  cml_executable_t* exe = NULL;
  if (!bt_exec_ex(t, &out, 1, 0, r, &exe)) return;
  bt_expect_f64(t, "2 > 1: u - w", &r[0], CML_DTYPE_F64, 1, dims, (double[]){9, 18, 27}, 0);
  if (!bt_run(t, exe, (bt_tensor_t[]){bv, av, uv, wv}, 4, 0, r, 1)) return;
  bt_expect_f64(t, "1 > 2: w - u", &r[0], CML_DTYPE_F64, 1, dims, (double[]){-9, -18, -27}, 0);
}

//===--- Sort ---===//

static void fn_sort_1d(bt_t* t, cml_op_t cmp_op, cml_dtype_t dtype, const double* in,
                       const double* want, size_t n, bool stable) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, cmp_op, CML_OP_INVALID},
                  (const cml_dtype_t[]){dtype, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {(int64_t)n};
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, dtype, 1, dims, in);
  cml_function_t* cmp = fn_comparator(t, f, cmp_op, &dtype, 1, 0);
  if (!cmp) return;
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_sort(f, cmp, 0, stable, &x, 1, &out);
  bt_tensor_t r[1];
  if (!bt_exec(t, &out, 1, r)) return;
  bt_expect_f64(t, "sorted", &r[0], dtype, 1, dims, want, 0);
}

static void case_sort_ascending(bt_t* t) {
  fn_sort_1d(t, CML_OP_LESS_THAN, CML_DTYPE_F32, (double[]){3, 1, 2, 5, 4, -1, 0.5},
             (double[]){-1, 0.5, 1, 2, 3, 4, 5}, 7, false);
}

static void case_sort_descending(bt_t* t) {
  fn_sort_1d(t, CML_OP_GREATER_THAN, CML_DTYPE_I32, (double[]){3, 1, 2, 5, 4, -1, 3},
             (double[]){5, 4, 3, 3, 2, 1, -1}, 7, false);
}

// Three operands sorted by the first (Int32 keys): the others follow their key.
static void case_sort_multiple_operands(bt_t* t) {
  const cml_dtype_t dtypes[3] = {CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_I64};
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_I64, CML_DTYPE_BOOL,
                                        CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {5};
  cml_function_t* f = bt_main(t);
  cml_value_t in[3] = {
      bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, (int64_t[]){3, 1, 4, 0, 2}),
      bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){30, 10, 40, 0, 20}),
      bt_param_i64(t, f, CML_DTYPE_I64, 1, dims, (int64_t[]){0, 1, 2, 3, 4}),
  };
  cml_function_t* cmp = fn_comparator(t, f, CML_OP_LESS_THAN, dtypes, 3, 0);
  if (!cmp) return;
  cml_value_t out[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_sort(f, cmp, 0, false, in, 3, out);
  bt_tensor_t r[3];
  if (!bt_exec(t, out, 3, r)) return;
  bt_expect_i64(t, "keys", &r[0], CML_DTYPE_I32, 1, dims, (int64_t[]){0, 1, 2, 3, 4});
  bt_expect_f64(t, "values", &r[1], CML_DTYPE_F32, 1, dims, (double[]){0, 10, 20, 30, 40}, 0);
  bt_expect_i64(t, "positions", &r[2], CML_DTYPE_I64, 1, dims, (int64_t[]){3, 1, 4, 0, 2});
}

// The key is the second operand: the comparator reads parameters 2 and 3 (interleaved order).
static void case_sort_by_second_operand(bt_t* t) {
  const cml_dtype_t dtypes[2] = {CML_DTYPE_F32, CML_DTYPE_I32};
  if (!fn_require(
          t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {4};
  cml_function_t* f = bt_main(t);
  cml_value_t in[2] = {
      bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){0.5, 1.5, 2.5, 3.5}),
      bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, (int64_t[]){40, -10, 30, 20}),
  };
  cml_function_t* cmp = fn_comparator(t, f, CML_OP_LESS_THAN, dtypes, 2, 1);
  if (!cmp) return;
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_sort(f, cmp, 0, false, in, 2, out);
  bt_tensor_t r[2];
  if (!bt_exec(t, out, 2, r)) return;
  bt_expect_f64(t, "payload", &r[0], CML_DTYPE_F32, 1, dims, (double[]){1.5, 3.5, 2.5, 0.5}, 0);
  bt_expect_i64(t, "keys", &r[1], CML_DTYPE_I32, 1, dims, (int64_t[]){-10, 20, 30, 40});
}

// A stable sort keeps ties in input order: keys [2, 1, 2, 1, 0, 2] with positions 0..5 give
// keys [0, 1, 1, 2, 2, 2] and positions [4, 1, 3, 0, 2, 5].
static void case_sort_stable_ties(bt_t* t) {
  const cml_dtype_t dtypes[2] = {CML_DTYPE_I32, CML_DTYPE_I32};
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {6};
  cml_function_t* f = bt_main(t);
  cml_value_t in[2] = {
      bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, (int64_t[]){2, 1, 2, 1, 0, 2}),
      bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, (int64_t[]){0, 1, 2, 3, 4, 5}),
  };
  cml_function_t* cmp = fn_comparator(t, f, CML_OP_LESS_THAN, dtypes, 2, 0);
  if (!cmp) return;
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_sort(f, cmp, 0, true, in, 2, out);
  bt_tensor_t r[2];
  if (!bt_exec(t, out, 2, r)) return;
  bt_expect_i64(t, "keys", &r[0], CML_DTYPE_I32, 1, dims, (int64_t[]){0, 1, 1, 2, 2, 2});
  bt_expect_i64(t, "positions", &r[1], CML_DTYPE_I32, 1, dims, (int64_t[]){4, 1, 3, 0, 2, 5});
}

// A custom comparator: |lhs| < |rhs|. [-3, 1, -2, 0.5, 4] -> [0.5, 1, -2, -3, 4].
static void case_sort_custom_abs(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_ABS, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {5};
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){-3, 1, -2, 0.5, 4});
  cml_function_t* cmp = fn_closure(t, f);
  if (!cmp) return;
  cml_value_t l = fn_param(cmp, "l", CML_DTYPE_F32, 0, NULL);
  cml_value_t r = fn_param(cmp, "r", CML_DTYPE_F32, 0, NULL);
  cml_value_t less = cml_op_less_than(cmp, cml_op_abs(cmp, l), cml_op_abs(cmp, r));
  if (!fn_return(t, cmp, &less, 1, "comparator return")) return;
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_sort(f, cmp, 0, true, &x, 1, &out);
  bt_tensor_t res[1];
  if (!bt_exec(t, &out, 1, res)) return;
  bt_expect_f64(t, "by |x|", &res[0], CML_DTYPE_F32, 1, dims, (double[]){0.5, 1, -2, -3, 4}, 0);
}

// A lexicographic comparator with a transformed second key: Int32 k1 ascending, ties by
// |k2| (Float32) descending, ties of both in input order (is_stable), with the positions
// (Int32) as a third operand: Or(LessThan(a1, b1), And(Equal(a1, b1),
// GreaterThan(Abs(a2), Abs(b2)))). k2 holds -0 and +0 (equal magnitudes) and opposite values;
// no NaN (which would leave the comparator no strict weak order). [rows, cols] sorted along
// |axis|; the expected order comes from an insertion sort here.
static void fn_sort_lexicographic(bt_t* t, int64_t rows, int64_t cols, int64_t axis) {
  if (!fn_require(
          t,
          (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_EQUAL, CML_OP_GREATER_THAN,
                             CML_OP_ABS, CML_OP_LOGICAL_AND, CML_OP_LOGICAL_OR, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  const int64_t n = rows * cols, len = axis == 0 ? rows : cols, lines = n / len;
  double* k1 = malloc(sizeof(double) * (size_t)n);
  double* k2 = malloc(sizeof(double) * (size_t)n);
  int64_t* pos = malloc(sizeof(int64_t) * (size_t)n);
  int64_t* want_pos = malloc(sizeof(int64_t) * (size_t)n);
  double* want_k1 = malloc(sizeof(double) * (size_t)n);
  double* want_k2 = malloc(sizeof(double) * (size_t)n);
  int64_t* line = malloc(sizeof(int64_t) * (size_t)len);
  if (!k1 || !k2 || !pos || !want_pos || !want_k1 || !want_k2 || !line) {
    bt_fail(t, "out of memory");
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t h = (uint32_t)i * 2654435761u >> 7;
      k1[i] = (double)(h % 7u);
      k2[i] = h % 11u == 0 ? -0.0 : h % 13u == 0 ? 0.0 : (double)((int)(h % 9u) - 4) / 4.0;
      pos[i] = i;
    }
    for (int64_t l = 0; l < lines; ++l) {
      for (int64_t p = 0; p < len; ++p) line[p] = axis == 0 ? p * cols + l : l * cols + p;
      for (int64_t p = 1; p < len; ++p) {
        for (int64_t q = p; q > 0; --q) {
          const int64_t a = line[q], b = line[q - 1];
          const bool before = k1[a] < k1[b] || (k1[a] == k1[b] && fabs(k2[a]) > fabs(k2[b]));
          if (!before) break;
          line[q] = b;
          line[q - 1] = a;
        }
      }
      for (int64_t p = 0; p < len; ++p) {
        const int64_t at = axis == 0 ? p * cols + l : l * cols + p;
        want_pos[at] = line[p];
        want_k1[at] = k1[line[p]];
        want_k2[at] = k2[line[p]];
      }
    }
    int64_t dims[] = {rows, cols};
    cml_function_t* f = bt_main(t);
    cml_value_t in[3] = {bt_param_f64(t, f, CML_DTYPE_I32, 2, dims, k1),
                         bt_param_f64(t, f, CML_DTYPE_F32, 2, dims, k2),
                         bt_param_i64(t, f, CML_DTYPE_I32, 2, dims, pos)};
    cml_function_t* cmp = fn_closure(t, f);
    if (cmp) {
      cml_value_t a1 = fn_param(cmp, "a1", CML_DTYPE_I32, 0, NULL);
      cml_value_t b1 = fn_param(cmp, "b1", CML_DTYPE_I32, 0, NULL);
      cml_value_t a2 = fn_param(cmp, "a2", CML_DTYPE_F32, 0, NULL);
      cml_value_t b2 = fn_param(cmp, "b2", CML_DTYPE_F32, 0, NULL);
      fn_param(cmp, "a3", CML_DTYPE_I32, 0, NULL);
      fn_param(cmp, "b3", CML_DTYPE_I32, 0, NULL);
      cml_value_t res = cml_op_logical_or(
          cmp, cml_op_less_than(cmp, a1, b1),
          cml_op_logical_and(cmp, cml_op_equal(cmp, a1, b1),
                             cml_op_greater_than(cmp, cml_op_abs(cmp, a2), cml_op_abs(cmp, b2))));
      cml_value_t out[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
      bt_tensor_t r[3];
      if (fn_return(t, cmp, &res, 1, "comparator return") &&
          cml_op_sort(f, cmp, axis, true, in, 3, out) && bt_exec(t, out, 3, r)) {
        bt_expect_f64(t, "k1", &r[0], CML_DTYPE_I32, 2, dims, want_k1, 0);
        bt_expect_f64(t, "k2", &r[1], CML_DTYPE_F32, 2, dims, want_k2, 0);
        bt_expect_i64(t, "positions", &r[2], CML_DTYPE_I32, 2, dims, want_pos);
      }
    }
  }
  free(k1), free(k2), free(pos), free(want_pos), free(want_k1), free(want_k2), free(line);
}

// Long lines (c: the radix sort of encoded keys) and short ones along axis 0.
static void case_sort_lexicographic_rows(bt_t* t) { fn_sort_lexicographic(t, 3, 1500, 1); }
static void case_sort_lexicographic_axis_0(bt_t* t) { fn_sort_lexicographic(t, 45, 3, 0); }

// Comparators that are not strict weak orders (l != r; the constant true), stable and not, on
// 100 Int32 keys: the result must be a permutation of the input (which order is the backend's
// business), never a read past the array or an endless sort (XLA's CPU runtime did both for
// is_stable = false from 17 elements on).
static void case_sort_comparator_not_a_strict_weak_order(bt_t* t) {
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, CML_OP_NOT_EQUAL, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  enum { kN = 100 };
  double in[kN];
  for (int i = 0; i < kN; ++i) in[i] = (double)((i * 37) % kN);  // a permutation of 0..99
  int64_t dims[] = {kN};
  for (int variant = 0; variant < 4; ++variant) {
    const bool constant_true = variant & 1, stable = variant & 2;
    if (variant > 0) bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    cml_value_t x = bt_param_f64(t, f, CML_DTYPE_I32, 1, dims, in);
    cml_function_t* cmp = fn_closure(t, f);
    if (!cmp) return;
    cml_value_t l = fn_param(cmp, "l", CML_DTYPE_I32, 0, NULL);
    cml_value_t r = fn_param(cmp, "r", CML_DTYPE_I32, 0, NULL);
    cml_value_t res = constant_true ? cml_constant_scalar_i64(cmp, CML_DTYPE_BOOL, 1)
                                    : cml_op_not_equal(cmp, l, r);
    if (!fn_return(t, cmp, &res, 1, "comparator return")) return;
    cml_value_t out = CML_VALUE_INVALID;
    (void)cml_op_sort(f, cmp, 0, stable, &x, 1, &out);
    bt_tensor_t got[1];
    if (!bt_exec(t, &out, 1, got)) return;
    bool seen[kN] = {false};
    for (int i = 0; i < kN; ++i) {
      const double v = bt_get_f64(&got[0], i);
      if (v < 0 || v >= kN || v != (double)(int)v || seen[(int)v]) {
        bt_fail(t, "comparator %s, is_stable %s: element %d is %g: not a permutation of 0..99",
                constant_true ? "true" : "l != r", stable ? "true" : "false", i, v);
        return;
      }
      seen[(int)v] = true;
    }
  }
}

// A comparator that uses a value of main (a parameter, not a constant): |l - p| < |r - p| with
// p = 2.5 sorts [10, -1, 3, 0.5, 2] by distance to p: [3, 2, 0.5, -1, 10]. Two operands (the
// keys' positions follow).
static void case_sort_comparator_captures_scalar(bt_t* t) {
  if (!fn_require(
          t,
          (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_ABS, CML_OP_SUB, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {5};
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){10, -1, 3, 0.5, 2});
  cml_value_t pos = bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, (int64_t[]){0, 1, 2, 3, 4});
  cml_value_t p = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){2.5});
  cml_function_t* cmp = fn_closure(t, f);
  if (!cmp) return;
  cml_value_t l = fn_param(cmp, "l", CML_DTYPE_F32, 0, NULL);
  cml_value_t r = fn_param(cmp, "r", CML_DTYPE_F32, 0, NULL);
  (void)fn_param(cmp, "li", CML_DTYPE_I32, 0, NULL);
  (void)fn_param(cmp, "ri", CML_DTYPE_I32, 0, NULL);
  cml_value_t less = cml_op_less_than(cmp, cml_op_abs(cmp, cml_op_sub(cmp, l, p)),
                                      cml_op_abs(cmp, cml_op_sub(cmp, r, p)));
  if (!fn_return(t, cmp, &less, 1, "comparator return")) return;
  cml_value_t in[2] = {x, pos}, out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_sort(f, cmp, 0, true, in, 2, out);
  bt_tensor_t res[2];
  if (!bt_exec(t, out, 2, res)) return;
  bt_expect_f64(t, "by |x - p|", &res[0], CML_DTYPE_F32, 1, dims, (double[]){3, 2, 0.5, -1, 10}, 0);
  bt_expect_i64(t, "positions", &res[1], CML_DTYPE_I32, 1, dims, (int64_t[]){2, 4, 3, 1, 0});
}

// [[3, 1, 2], [1, 5, 0]] sorted along |axis|.
static void fn_sort_2d(bt_t* t, int64_t axis, const double* want) {
  cml_dtype_t dtype = CML_DTYPE_F64;
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_INVALID},
                  (const cml_dtype_t[]){dtype, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {2, 3};
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, dtype, 2, dims, (double[]){3, 1, 2, 1, 5, 0});
  cml_function_t* cmp = fn_comparator(t, f, CML_OP_LESS_THAN, &dtype, 1, 0);
  if (!cmp) return;
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_sort(f, cmp, axis, false, &x, 1, &out);
  bt_tensor_t r[1];
  if (!bt_exec(t, &out, 1, r)) return;
  bt_expect_f64(t, axis ? "rows sorted" : "columns sorted", &r[0], dtype, 2, dims, want, 0);
}

static void case_sort_axis_1(bt_t* t) { fn_sort_2d(t, 1, (double[]){1, 2, 3, 0, 1, 5}); }

static void case_sort_axis_0(bt_t* t) { fn_sort_2d(t, 0, (double[]){1, 1, 0, 3, 5, 2}); }

// Total order puts -NaN first and +NaN last, and -0 before +0:
// [NaN, 1, -Inf, -0, 0, -NaN, 2, -1] -> [-NaN, -Inf, -1, -0, 0, 1, 2, NaN].
static void case_sort_nan_total_order(bt_t* t) {
  cml_dtype_t dtype = CML_DTYPE_F32;
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN_TOTAL_ORDER, CML_OP_INVALID},
                  (const cml_dtype_t[]){dtype, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {8};
  cml_function_t* f = bt_main(t);
  cml_value_t x =
      bt_param_f64(t, f, dtype, 1, dims, (double[]){NAN, 1, -INFINITY, -0.0, 0.0, -NAN, 2, -1});
  cml_function_t* cmp = fn_comparator(t, f, CML_OP_LESS_THAN_TOTAL_ORDER, &dtype, 1, 0);
  if (!cmp) return;
  cml_value_t out = CML_VALUE_INVALID;
  (void)cml_op_sort(f, cmp, 0, true, &x, 1, &out);
  bt_tensor_t r[1];
  if (!bt_exec(t, &out, 1, r)) return;
  // Exact comparison: -0 must precede +0; NaNs match NaNs.
  bt_expect_f64(t, "total order", &r[0], dtype, 1, dims,
                (double[]){-NAN, -INFINITY, -1, -0.0, 0.0, 1, 2, NAN}, 0);
  double first = bt_get_f64(&r[0], 0), last = bt_get_f64(&r[0], 7);
  if (!isnan(first) || !signbit(first)) bt_fail(t, "element 0 is %g, want -NaN", first);
  if (!isnan(last) || signbit(last)) bt_fail(t, "element 7 is %g, want +NaN", last);
}

// A comparator that is a single LessThan (GreaterThan) of the key operand puts NaNs after
// (before) every other value, in their stable order, as XLA's CPU runtime does; the comparison
// alone would find a NaN neither before nor after anything. Keys: small integers (exact in
// every float dtype), -0 and +0 (equal: stable order), +-inf, and NaNs of both signs at fixed
// positions; an Int32 payload of positions checks the permutation. Lengths 12, 40 and 5000
// (c's typed merge sort, its generic one, and its radix sort), and a top-k read through a
// Slice (c's selection of a prefix).
static double sort_nan_value(int64_t i) {
  if (i % 7 == 3) return NAN;
  if (i % 11 == 5) return -NAN;
  if (i % 13 == 4) return (i & 1) ? -0.0 : 0.0;
  if (i % 17 == 9) return (i & 1) ? -INFINITY : INFINITY;
  return (double)((i * 37 + 11) % 61) - 30;
}

// The stable order of v[0..n) under LessThan (or GreaterThan) with NaNs last (first).
static void sort_nan_expect(int64_t n, bool descending, double* keys, int64_t* pos) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = sort_nan_value(i);
    int64_t j = i;
    while (j > 0) {
      const double y = keys[j - 1];
      const bool before =
          descending ? (x > y || (isnan(x) && !isnan(y))) : (x < y || (isnan(y) && !isnan(x)));
      if (!before) break;
      keys[j] = keys[j - 1];
      pos[j] = pos[j - 1];
      --j;
    }
    keys[j] = x;
    pos[j] = i;
  }
}

// Sorts (x, positions) of length |n| by x under |op| (LessThan / GreaterThan); |k| > 0 reads
// only the first k through a Slice.
static void fn_sort_nan(bt_t* t, cml_op_t op, cml_dtype_t dtype, int64_t n, int64_t k) {
  const cml_dtype_t dtypes[2] = {dtype, CML_DTYPE_I32};
  if (!fn_require(t, (const cml_op_t[]){CML_OP_SORT, op, CML_OP_SLICE, CML_OP_INVALID},
                  (const cml_dtype_t[]){dtype, CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  double* v = malloc((size_t)n * sizeof *v);
  double* keys = malloc((size_t)n * sizeof *keys);
  int64_t* iota = malloc((size_t)n * sizeof *iota);
  int64_t* pos = malloc((size_t)n * sizeof *pos);
  if (!v || !keys || !iota || !pos) {
    bt_fail(t, "out of memory");
  } else {
    for (int64_t i = 0; i < n; ++i) {
      v[i] = sort_nan_value(i);
      iota[i] = i;
    }
    sort_nan_expect(n, op == CML_OP_GREATER_THAN, keys, pos);
    int64_t dims[] = {n}, out_dims[] = {k > 0 ? k : n};
    cml_function_t* f = bt_main(t);
    cml_value_t in[2] = {bt_param_f64(t, f, dtype, 1, dims, v),
                         bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, iota)};
    cml_function_t* cmp = fn_comparator(t, f, op, dtypes, 2, 0);
    cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
    if (cmp) (void)cml_op_sort(f, cmp, 0, true, in, 2, out);
    if (cmp && k > 0) {
      for (int i = 0; i < 2; ++i) {
        out[i] = cml_op_slice(f, out[i], (int64_t[]){0}, out_dims, NULL, 1);
      }
    }
    bt_tensor_t r[2];
    if (cmp && bt_exec(t, out, 2, r)) {
      bt_expect_f64(t, "keys", &r[0], dtype, 1, out_dims, keys, 0);
      bt_expect_i64(t, "positions", &r[1], CML_DTYPE_I32, 1, out_dims, pos);
    }
  }
  free(v);
  free(keys);
  free(iota);
  free(pos);
}

static void case_sort_nan_less_than(bt_t* t) {
  fn_sort_nan(t, CML_OP_LESS_THAN, CML_DTYPE_F32, 12, 0);
}
static void case_sort_nan_greater_than(bt_t* t) {
  fn_sort_nan(t, CML_OP_GREATER_THAN, CML_DTYPE_F32, 12, 0);
}
static void case_sort_nan_less_than_f64(bt_t* t) {
  fn_sort_nan(t, CML_OP_LESS_THAN, CML_DTYPE_F64, 40, 0);
}
static void case_sort_nan_greater_than_bf16(bt_t* t) {
  fn_sort_nan(t, CML_OP_GREATER_THAN, CML_DTYPE_BF16, 40, 0);
}
static void case_sort_nan_long_row(bt_t* t) {
  fn_sort_nan(t, CML_OP_LESS_THAN, CML_DTYPE_F32, 5000, 0);
}
static void case_sort_nan_top_k(bt_t* t) {
  fn_sort_nan(t, CML_OP_GREATER_THAN, CML_DTYPE_F32, 64, 12);
}

// Three operands (xla:cpu runs the comparator as written from three on, and NaNs fell anywhere):
// keys, positions and the positions again as Float64, under LessThan and GreaterThan.
static void case_sort_nan_three_operands(bt_t* t) {
  const int64_t n = 40;
  const cml_dtype_t dtypes[3] = {CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_F64};
  if (!fn_require(
          t, (const cml_op_t[]){CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_GREATER_THAN, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_F64, CML_DTYPE_BOOL,
                                CML_DTYPE_INVALID})) {
    return;
  }
  double v[40], keys[2][40], pos_f[2][40];
  int64_t iota[40], pos[2][40];
  for (int64_t i = 0; i < n; ++i) {
    v[i] = sort_nan_value(i);
    iota[i] = i;
  }
  int64_t dims[] = {n};
  cml_function_t* f = bt_main(t);
  cml_value_t in[3] = {bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, v),
                       bt_param_i64(t, f, CML_DTYPE_I32, 1, dims, iota), CML_VALUE_INVALID};
  in[2] = cml_op_convert_dtype(f, in[1], CML_DTYPE_F64);
  cml_value_t out[6];
  for (int d = 0; d < 2; ++d) {
    sort_nan_expect(n, d == 1, keys[d], pos[d]);
    for (int64_t i = 0; i < n; ++i) pos_f[d][i] = (double)pos[d][i];
    cml_function_t* cmp =
        fn_comparator(t, f, d ? CML_OP_GREATER_THAN : CML_OP_LESS_THAN, dtypes, 3, 0);
    if (!cmp) return;
    (void)cml_op_sort(f, cmp, 0, true, in, 3, out + 3 * d);
  }
  bt_tensor_t r[6];
  if (!bt_exec(t, out, 6, r)) return;
  for (int d = 0; d < 2; ++d) {
    bt_expect_f64(t, d ? "descending keys" : "keys", &r[3 * d], CML_DTYPE_F32, 1, dims, keys[d], 0);
    bt_expect_i64(t, "positions", &r[3 * d + 1], CML_DTYPE_I32, 1, dims, pos[d]);
    bt_expect_f64(t, "positions as Float64", &r[3 * d + 2], CML_DTYPE_F64, 1, dims, pos_f[d], 0);
  }
}

//===--- nested control flow ---===//

// g(x, n) = If(n > 0, { While(i < n) (i + 1, v * 2) from (0, x); v }, { x - 1 }): the loop's
// cond and body are closures of the true branch and capture n from g, their grandparent.
// main: g(3, 3) = 24, g(3, 0) = 2, g(1.5, -2) = 0.5.
static void case_nested_control_flow(bt_t* t) {
  if (!fn_require(
          t,
          (const cml_op_t[]){CML_OP_CALL, CML_OP_IF, CML_OP_WHILE, CML_OP_GREATER_THAN,
                             CML_OP_LESS_THAN, CML_OP_ADD, CML_OP_MUL, CML_OP_SUB, CML_OP_INVALID},
          (const cml_dtype_t[]){CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* g = fn_named(t, "repeat_double");
  if (!g) return;
  cml_value_t gx = fn_param(g, "x", CML_DTYPE_F32, 0, NULL);
  cml_value_t gn = fn_param(g, "n", CML_DTYPE_I32, 0, NULL);
  cml_value_t positive = cml_op_greater_than(g, gn, cml_constant_scalar_i64(g, CML_DTYPE_I32, 0));

  cml_function_t* tb = fn_closure(t, g);
  cml_function_t* fb = fn_closure(t, g);
  if (!tb || !fb) return;
  cml_function_t* cond = fn_closure(t, tb);
  cml_function_t* body = fn_closure(t, tb);
  if (!cond || !body) return;
  cml_value_t ci = fn_param(cond, "i", CML_DTYPE_I32, 0, NULL);
  (void)fn_param(cond, "v", CML_DTYPE_F32, 0, NULL);
  cml_value_t go = cml_op_less_than(cond, ci, gn);  // n comes from the grandparent g
  if (!fn_return(t, cond, &go, 1, "cond return")) return;
  cml_value_t bi = fn_param(body, "i", CML_DTYPE_I32, 0, NULL);
  cml_value_t bv = fn_param(body, "v", CML_DTYPE_F32, 0, NULL);
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         cml_op_mul(body, bv, cml_constant_scalar_f64(body, CML_DTYPE_F32, 2))};
  if (!fn_return(t, body, next, 2, "body return")) return;
  cml_value_t loop[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_while(tb, cond, body,
                     (cml_value_t[]){cml_constant_scalar_i64(tb, CML_DTYPE_I32, 0), gx}, 2, loop);
  if (!fn_return(t, tb, &loop[1], 1, "true branch return")) return;
  cml_value_t dec = cml_op_sub(fb, gx, cml_constant_scalar_f64(fb, CML_DTYPE_F32, 1));
  if (!fn_return(t, fb, &dec, 1, "false branch return")) return;
  cml_value_t gr = CML_VALUE_INVALID;
  (void)cml_op_if(g, positive, tb, fb, &gr);
  if (!fn_return(t, g, &gr, 1, "repeat_double return")) return;

  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){3});
  cml_value_t x2 = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){1.5});
  cml_value_t n3 = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){3});
  cml_value_t n0 = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){0});
  cml_value_t nm = bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){-2});
  cml_value_t o[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_call(f, g, (cml_value_t[]){x, n3}, 2, &o[0]);
  (void)cml_op_call(f, g, (cml_value_t[]){x, n0}, 2, &o[1]);
  (void)cml_op_call(f, g, (cml_value_t[]){x2, nm}, 2, &o[2]);
  bt_tensor_t r[3];
  if (!bt_exec(t, o, 3, r)) return;
  bt_expect_f64(t, "g(3, 3)", &r[0], CML_DTYPE_F32, 0, NULL, (double[]){24}, 0);
  bt_expect_f64(t, "g(3, 0)", &r[1], CML_DTYPE_F32, 0, NULL, (double[]){2}, 0);
  bt_expect_f64(t, "g(1.5, -2)", &r[2], CML_DTYPE_F32, 0, NULL, (double[]){0.5}, 0);
}

// If inside a While body: sum of the even numbers below 10 (0 + 2 + 4 + 6 + 8 = 20), with the
// parity test as an If whose branches capture the body's state.
static void case_if_inside_while(bt_t* t) {
  if (!fn_require(t,
                  (const cml_op_t[]){CML_OP_WHILE, CML_OP_IF, CML_OP_LESS_THAN, CML_OP_EQUAL,
                                     CML_OP_REM, CML_OP_ADD, CML_OP_INVALID},
                  (const cml_dtype_t[]){CML_DTYPE_I32, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_function_t* cond = fn_closure(t, f);
  cml_function_t* body = fn_closure(t, f);
  if (!cond || !body) return;
  cml_value_t ci = fn_param(cond, "i", CML_DTYPE_I32, 0, NULL);
  (void)fn_param(cond, "s", CML_DTYPE_I32, 0, NULL);
  cml_value_t go = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 10));
  if (!fn_return(t, cond, &go, 1, "cond return")) return;
  cml_value_t bi = fn_param(body, "i", CML_DTYPE_I32, 0, NULL);
  cml_value_t bs = fn_param(body, "s", CML_DTYPE_I32, 0, NULL);
  cml_value_t even =
      cml_op_equal(body, cml_op_rem(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 2)),
                   cml_constant_scalar_i64(body, CML_DTYPE_I32, 0));
  cml_function_t* add_it = fn_closure(t, body);
  cml_function_t* keep_it = fn_closure(t, body);
  if (!add_it || !keep_it) return;
  cml_value_t added = cml_op_add(add_it, bs, bi);
  if (!fn_return(t, add_it, &added, 1, "add branch return")) return;
  if (!fn_return(t, keep_it, &bs, 1, "keep branch return")) return;
  cml_value_t ns = CML_VALUE_INVALID;
  (void)cml_op_if(body, even, add_it, keep_it, &ns);
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), ns};
  if (!fn_return(t, body, next, 2, "body return")) return;
  cml_value_t out[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_while(f, cond, body,
                     (cml_value_t[]){bt_param_i64(t, f, CML_DTYPE_I32, 0, NULL, (int64_t[]){0}),
                                     cml_constant_scalar_i64(f, CML_DTYPE_I32, 0)},
                     2, out);
  bt_tensor_t r[2];
  if (!bt_exec(t, out, 2, r)) return;
  bt_expect_i64(t, "i", &r[0], CML_DTYPE_I32, 0, NULL, (int64_t[]){10});
  bt_expect_i64(t, "sum of evens", &r[1], CML_DTYPE_I32, 0, NULL, (int64_t[]){20});
}

// A Sort inside a named function, called on two different inputs.
static void case_sort_in_called_function(bt_t* t) {
  cml_dtype_t dtype = CML_DTYPE_I32;
  if (!fn_require(t, (const cml_op_t[]){CML_OP_CALL, CML_OP_SORT, CML_OP_LESS_THAN, CML_OP_INVALID},
                  (const cml_dtype_t[]){dtype, CML_DTYPE_BOOL, CML_DTYPE_INVALID})) {
    return;
  }
  int64_t dims[] = {4};
  cml_function_t* g = fn_named(t, "sorted");
  if (!g) return;
  cml_value_t gx = fn_param(g, "x", dtype, 1, dims);
  cml_function_t* cmp = fn_comparator(t, g, CML_OP_LESS_THAN, &dtype, 1, 0);
  if (!cmp) return;
  cml_value_t gs = CML_VALUE_INVALID;
  (void)cml_op_sort(g, cmp, 0, false, &gx, 1, &gs);
  if (!fn_return(t, g, &gs, 1, "sorted return")) return;
  cml_function_t* f = bt_main(t);
  cml_value_t a = bt_param_i64(t, f, dtype, 1, dims, (int64_t[]){4, -1, 3, 0});
  cml_value_t b = bt_param_i64(t, f, dtype, 1, dims, (int64_t[]){7, 7, -7, 1});
  cml_value_t o[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_call(f, g, &a, 1, &o[0]);
  (void)cml_op_call(f, g, &b, 1, &o[1]);
  bt_tensor_t r[2];
  if (!bt_exec(t, o, 2, r)) return;
  bt_expect_i64(t, "sorted(a)", &r[0], dtype, 1, dims, (int64_t[]){-1, 0, 3, 4});
  bt_expect_i64(t, "sorted(b)", &r[1], dtype, 1, dims, (int64_t[]){-7, 1, 7, 7});
}

const bt_case_t bt_cases_control[] = {
    {"closure_capture", CML_OP_CALL, case_closure_capture},
    {"closure_params_and_capture", CML_OP_CALL, case_closure_params_and_capture},
    {"nested_closure_grandparent", CML_OP_CALL, case_nested_closure_grandparent},
    {"named_function_call_twice", CML_OP_CALL, case_named_function_call_twice},
    {"named_function_multi_output", CML_OP_CALL, case_named_function_multi_output},
    {"named_function_calls_named", CML_OP_CALL, case_named_function_calls_named},
    {"while_factorial", CML_OP_WHILE, case_while_factorial},
    {"while_fibonacci", CML_OP_WHILE, case_while_fibonacci},
    {"while_body_captures_tensor", CML_OP_WHILE, case_while_body_captures_tensor},
    {"while_zero_iterations", CML_OP_WHILE, case_while_zero_iterations},
    {"if_both_branches", CML_OP_IF, case_if_both_branches},
    {"if_captures", CML_OP_IF, case_if_captures},
    {"sort_ascending", CML_OP_SORT, case_sort_ascending},
    {"sort_descending", CML_OP_SORT, case_sort_descending},
    {"sort_multiple_operands", CML_OP_SORT, case_sort_multiple_operands},
    {"sort_by_second_operand", CML_OP_SORT, case_sort_by_second_operand},
    {"sort_stable_ties", CML_OP_SORT, case_sort_stable_ties},
    {"sort_custom_abs", CML_OP_SORT, case_sort_custom_abs},
    {"sort_lexicographic_rows", CML_OP_SORT, case_sort_lexicographic_rows},
    {"sort_lexicographic_axis_0", CML_OP_SORT, case_sort_lexicographic_axis_0},
    {"sort_comparator_not_a_strict_weak_order", CML_OP_SORT,
     case_sort_comparator_not_a_strict_weak_order},
    {"sort_comparator_captures_scalar", CML_OP_SORT, case_sort_comparator_captures_scalar},
    {"sort_axis_1", CML_OP_SORT, case_sort_axis_1},
    {"sort_axis_0", CML_OP_SORT, case_sort_axis_0},
    {"sort_nan_total_order", CML_OP_SORT, case_sort_nan_total_order},
    {"sort_nan_less_than", CML_OP_SORT, case_sort_nan_less_than},
    {"sort_nan_greater_than", CML_OP_SORT, case_sort_nan_greater_than},
    {"sort_nan_less_than_f64", CML_OP_SORT, case_sort_nan_less_than_f64},
    {"sort_nan_greater_than_bf16", CML_OP_SORT, case_sort_nan_greater_than_bf16},
    {"sort_nan_long_row", CML_OP_SORT, case_sort_nan_long_row},
    {"sort_nan_top_k", CML_OP_SORT, case_sort_nan_top_k},
    {"sort_nan_three_operands", CML_OP_SORT, case_sort_nan_three_operands},
    {"nested_control_flow", CML_OP_IF, case_nested_control_flow},
    {"if_inside_while", CML_OP_WHILE, case_if_inside_while},
    {"sort_in_called_function", CML_OP_SORT, case_sort_in_called_function},
};
const size_t bt_cases_control_count = sizeof bt_cases_control / sizeof bt_cases_control[0];
