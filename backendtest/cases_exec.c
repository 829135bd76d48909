// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_exec.c: compliance cases of the "exec" group: compiling and executing,
// output buffers (aliasing, constants), argument errors, donation, buffer round trips for every
// dtype, shared buffers, device copies, concurrent and repeated execution, cancellation and
// deadlines (where the backend can interrupt an execution), and the errors the
// builder must report (code plus a message naming the op, shapes and dtypes).
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backendtest/bt.h"

//===--- helpers ---===//

static cml_value_t exec_named_param(cml_function_t* f, const char* name, cml_dtype_t dtype,
                                    int32_t rank, const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  return cml_parameter(f, name, &s);
}

static cml_buffer_t* exec_upload_f64(bt_t* t, int device, cml_dtype_t dtype, int32_t rank,
                                     const int64_t* dims, const double* values) {
  bt_tensor_t x = bt_tensor_f64(t, dtype, rank, dims, values);
  if (!x.data) return NULL;
  return bt_upload(t, device, &x);
}

// Executes and hands every output to the case. |out| has room for the executable's outputs.
static bool exec_run_owned(bt_t* t, cml_executable_t* exe, cml_buffer_t* const* inputs,
                           size_t input_count, const bool* donate, int device, cml_buffer_t** out) {
  size_t n = cml_executable_output_count(exe);
  for (size_t i = 0; i < n; ++i) out[i] = NULL;
  if (!bt_ok(t, cml_executable_execute(exe, inputs, input_count, donate, device, out),
             "cml_executable_execute")) {
    return false;
  }
  bt_count_execution(t);
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    if (!out[i]) {
      bt_fail(t, "cml_executable_execute returned OK but output %zu is NULL", i);
      ok = false;
    }
    bt_own_buffer(t, out[i]);
  }
  return ok;
}

static void exec_expect_buffer_f64(bt_t* t, const char* what, cml_buffer_t* buffer,
                                   cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                                   const double* want) {
  bt_tensor_t got;
  if (!bt_download(t, buffer, &got)) return;
  bt_expect_f64(t, what, &got, dtype, rank, dims, want, 0);
}

static bool exec_require_f32_ops(bt_t* t, cml_op_t a, cml_op_t b) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return false;
  if (a != CML_OP_INVALID && !bt_require_op(t, a)) return false;
  if (b != CML_OP_INVALID && !bt_require_op(t, b)) return false;
  return true;
}

//===--- compile and execute ---===//

// Two outputs, one of them a constant returned as is.
static void case_compile_execute_two_outputs(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_CONSTANT)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {2, 3};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 2, dims, (double[]){1, 2, 3, 4, 5, 6});
  bt_tensor_t cv = bt_tensor_f64(t, CML_DTYPE_F32, 2, dims, (double[]){0.5, -1, 2, -2, 10, 0});
  cml_value_t c = bt_const(t, f, &cv);
  cml_value_t y = cml_op_add(f, x, c);
  bt_tensor_t out[2];
  if (!bt_exec(t, (cml_value_t[]){y, c}, 2, out)) return;
  bt_expect_f64(t, "x + c", &out[0], CML_DTYPE_F32, 2, dims, (double[]){1.5, 1, 5, 2, 15, 6}, 0);
  bt_expect_equal(t, "the constant", &out[1], &cv);
}

// A scalar constant of every common dtype comes back bit-exact.
static void case_constant_scalars(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CONSTANT)) return;
  static const cml_dtype_t dtypes[] = {CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I32, CML_DTYPE_I64,
                                       CML_DTYPE_U8,   CML_DTYPE_U64, CML_DTYPE_F16, CML_DTYPE_BF16,
                                       CML_DTYPE_F32,  CML_DTYPE_F64};
  cml_function_t* f = bt_main(t);
  cml_value_t v[10];
  bt_tensor_t want[10];
  size_t n = 0;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    if (!cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtypes[i])) continue;
    want[n] =
        bt_tensor_f64(t, dtypes[i], 0, NULL,
                      (double[]){dtypes[i] == CML_DTYPE_BOOL ? 1 : -3 + 2.0 * (double)(i % 2)});
    if (cml_dtype_is_unsigned_int(dtypes[i]))
      want[n] = bt_tensor_i64(t, dtypes[i], 0, NULL, (int64_t[]){200});
    v[n] = bt_const(t, f, &want[n]);
    ++n;
  }
  if (n == 0) {
    bt_unsupported(t, "no common dtype supported");
    return;
  }
  bt_tensor_t out[10];
  if (!bt_exec(t, v, n, out)) return;
  for (size_t i = 0; i < n; ++i)
    bt_expect_equal(t, cml_dtype_name(want[i].shape.dtype), &out[i], &want[i]);
}

// A parameter returned as is comes back in a new buffer that outlives the input.
static void case_parameter_passthrough(bt_t* t) {
  if (!bt_require_op(t, CML_OP_PARAMETER) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {5};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, dims);
  cml_value_t n = exec_named_param(f, "n", CML_DTYPE_I32, 0, NULL);
  cml_executable_t* exe = bt_compile(t, (cml_value_t[]){x, n}, 2);
  if (!exe) return;
  if (cml_executable_input_count(exe) != 2 || cml_executable_output_count(exe) != 2) {
    bt_fail(t, "executable has %zu inputs and %zu outputs, want 2 and 2",
            cml_executable_input_count(exe), cml_executable_output_count(exe));
    return;
  }
  const char* name0 = cml_executable_input_name(exe, 0);
  const char* name1 = cml_executable_input_name(exe, 1);
  if (!name0 || strcmp(name0, "x") != 0 || !name1 || strcmp(name1, "n") != 0) {
    bt_fail(t, "input names are \"%s\", \"%s\", want \"x\", \"n\"", name0 ? name0 : "(null)",
            name1 ? name1 : "(null)");
  }
  cml_shape_t want_x = cml_shape_make(CML_DTYPE_F32, 1, dims);
  const cml_shape_t* s0 = cml_executable_input_shape(exe, 0);
  const cml_shape_t* o1 = cml_executable_output_shape(exe, 1);
  if (!s0 || !cml_shape_equal(s0, &want_x)) bt_fail(t, "input 0 has the wrong shape");
  if (!o1 || o1->dtype != CML_DTYPE_I32 || o1->rank != 0)
    bt_fail(t, "output 1 has the wrong shape");

  // Inputs are not case-owned: they are released before the outputs are read.
  double xv[] = {1, -2, 3.5, 0, 1e30};
  bt_tensor_t xt = bt_tensor_f64(t, CML_DTYPE_F32, 1, dims, xv);
  bt_tensor_t nt = bt_tensor_i64(t, CML_DTYPE_I32, 0, NULL, (int64_t[]){-42});
  cml_buffer_t* in[2] = {NULL, NULL};
  if (!bt_ok(t, cml_buffer_from_host(bt_backend(t), 0, &xt.shape, xt.data, xt.size, &in[0]),
             "upload x")) {
    return;
  }
  if (!bt_ok(t, cml_buffer_from_host(bt_backend(t), 0, &nt.shape, nt.data, nt.size, &in[1]),
             "upload n")) {
    cml_buffer_release(in[0]);
    return;
  }
  cml_buffer_t* out[2];
  bool ok = exec_run_owned(t, exe, in, 2, NULL, 0, out);
  if (ok && (out[0] == in[0] || out[1] == in[1] || out[0] == out[1])) {
    // Do not release the inputs: if the backend handed them back without a reference of their
    // own, releasing them here would free the outputs too. Leaking is the lesser evil.
    bt_fail(t, "an output is an input buffer or another output; outputs must be new buffers");
    return;
  }
  if (ok && !cml_buffer_is_valid(in[0])) bt_fail(t, "a non-donated input became invalid");
  cml_buffer_release(in[0]);
  cml_buffer_release(in[1]);
  if (!ok) return;
  exec_expect_buffer_f64(t, "x", out[0], CML_DTYPE_F32, 1, dims, xv);
  bt_tensor_t got_n;
  if (bt_download(t, out[1], &got_n)) bt_expect_equal(t, "n", &got_n, &nt);
}

// Outputs that alias a parameter, each other, or a constant are distinct buffers with the
// right contents, independent of each other and of later executions.
static void case_output_aliasing(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_CONSTANT)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {3};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, dims);
  bt_tensor_t cv = bt_tensor_f64(t, CML_DTYPE_F32, 1, dims, (double[]){7, 8, 9});
  cml_value_t c = bt_const(t, f, &cv);
  cml_value_t y = cml_op_add(f, x, c);
  cml_value_t outs[] = {x, x, c, c, y, y};
  cml_executable_t* exe = bt_compile(t, outs, 6);
  if (!exe) return;
  cml_buffer_t* in1 = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  cml_buffer_t* in2 = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){-1, -2, -3});
  if (!in1 || !in2) return;
  cml_buffer_t* r1[6];
  cml_buffer_t* r2[6];
  if (!exec_run_owned(t, exe, &in1, 1, NULL, 0, r1)) return;
  for (int i = 0; i < 6; ++i) {
    if (r1[i] == in1) bt_fail(t, "output %d is the input buffer itself", i);
    for (int k = 0; k < i; ++k) {
      if (r1[i] == r1[k]) bt_fail(t, "outputs %d and %d are the same buffer object", k, i);
    }
  }
  if (bt_failed(t)) return;
  if (!exec_run_owned(t, exe, &in2, 1, NULL, 0, r2)) return;
  // The first run's outputs are unaffected by the second run.
  exec_expect_buffer_f64(t, "run 1 x (a)", r1[0], CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  exec_expect_buffer_f64(t, "run 1 x (b)", r1[1], CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  exec_expect_buffer_f64(t, "run 1 c (a)", r1[2], CML_DTYPE_F32, 1, dims, (double[]){7, 8, 9});
  exec_expect_buffer_f64(t, "run 1 c (b)", r1[3], CML_DTYPE_F32, 1, dims, (double[]){7, 8, 9});
  exec_expect_buffer_f64(t, "run 1 x+c (a)", r1[4], CML_DTYPE_F32, 1, dims, (double[]){8, 10, 12});
  exec_expect_buffer_f64(t, "run 1 x+c (b)", r1[5], CML_DTYPE_F32, 1, dims, (double[]){8, 10, 12});
  exec_expect_buffer_f64(t, "run 2 x", r2[1], CML_DTYPE_F32, 1, dims, (double[]){-1, -2, -3});
  exec_expect_buffer_f64(t, "run 2 c", r2[3], CML_DTYPE_F32, 1, dims, (double[]){7, 8, 9});
  exec_expect_buffer_f64(t, "run 2 x+c", r2[4], CML_DTYPE_F32, 1, dims, (double[]){6, 6, 6});
}

//===--- argument errors ---===//

static cml_executable_t* exec_compile_add(bt_t* t, const int64_t* dims, int32_t rank) {
  cml_function_t* f = bt_main(t);
  cml_value_t a = exec_named_param(f, "alpha_input", CML_DTYPE_F32, rank, dims);
  cml_value_t b = exec_named_param(f, "beta_input", CML_DTYPE_F32, rank, dims);
  cml_value_t y = cml_op_add(f, a, b);
  return bt_compile(t, &y, 1);
}

static void case_wrong_input_count(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  int64_t dims[] = {3};
  cml_executable_t* exe = exec_compile_add(t, dims, 1);
  if (!exe) return;
  cml_buffer_t* a = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  if (!a) return;
  cml_buffer_t* out[1] = {NULL};
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){a}, 1, NULL, 0, out),
                   CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"2", NULL});
  if (out[0]) bt_fail(t, "a failed execution wrote an output");
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){a, a, a}, 3, NULL, 0, out),
                   CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"3", NULL});
  if (out[0]) bt_fail(t, "a failed execution wrote an output");
  // The executable still works afterwards.
  if (!exec_run_owned(t, exe, (cml_buffer_t*[]){a, a}, 2, NULL, 0, out)) return;
  exec_expect_buffer_f64(t, "a + a", out[0], CML_DTYPE_F32, 1, dims, (double[]){2, 4, 6});
}

static void case_wrong_input_shape(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  int64_t dims[] = {3};
  cml_executable_t* exe = exec_compile_add(t, dims, 1);
  if (!exe) return;
  cml_buffer_t* good = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  cml_buffer_t* bad =
      exec_upload_f64(t, 0, CML_DTYPE_F32, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4});
  cml_buffer_t* bad2 =
      exec_upload_f64(t, 0, CML_DTYPE_F32, 2, (int64_t[]){1, 3}, (double[]){1, 2, 3});
  if (!good || !bad || !bad2) return;
  cml_buffer_t* out[1] = {NULL};
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){good, bad}, 2, NULL, 0, out),
                   CML_STATUS_INVALID_ARGUMENT,
                   (const char* const[]){"beta_input", "[4]", "[3]", NULL});
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){bad2, good}, 2, NULL, 0, out),
                   CML_STATUS_INVALID_ARGUMENT,
                   (const char* const[]){"alpha_input", "[1, 3]", NULL});
  if (out[0]) bt_fail(t, "a failed execution wrote an output");
}

static void case_wrong_input_dtype(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID) || !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  int64_t dims[] = {3};
  cml_executable_t* exe = exec_compile_add(t, dims, 1);
  if (!exe) return;
  cml_buffer_t* good = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  cml_buffer_t* bad = exec_upload_f64(t, 0, CML_DTYPE_I32, 1, dims, (double[]){1, 2, 3});
  if (!good || !bad) return;
  cml_buffer_t* out[1] = {NULL};
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){bad, good}, 2, NULL, 0, out),
                   CML_STATUS_INVALID_ARGUMENT,
                   (const char* const[]){"alpha_input", "Int32", "Float32", NULL});
  if (out[0]) bt_fail(t, "a failed execution wrote an output");
}

static void case_bad_device(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  int devices = cml_backend_device_count(bt_backend(t));
  if (devices < 1) {
    bt_fail(t, "the backend reports %d devices", devices);
    return;
  }
  int64_t dims[] = {2};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, dims);
  float data[2] = {1, 2};
  cml_buffer_t* buf = NULL;
  bt_expect_status(t, cml_buffer_from_host(bt_backend(t), devices, &s, data, sizeof data, &buf),
                   CML_STATUS_OUT_OF_RANGE, NULL);
  if (buf) bt_fail(t, "a failed cml_buffer_from_host wrote a buffer");
  bt_expect_status(t, cml_buffer_from_host(bt_backend(t), -1, &s, data, sizeof data, &buf),
                   CML_STATUS_OUT_OF_RANGE, NULL);
  cml_executable_t* exe = exec_compile_add(t, dims, 1);
  if (!exe) return;
  cml_buffer_t* a = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2});
  if (!a) return;
  cml_buffer_t* out[1] = {NULL};
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){a, a}, 2, NULL, devices, out),
                   CML_STATUS_OUT_OF_RANGE, NULL);
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){a, a}, 2, NULL, -1, out),
                   CML_STATUS_OUT_OF_RANGE, NULL);
  if (out[0]) bt_fail(t, "a failed execution wrote an output");
}

static void case_buffer_size_mismatch(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  int64_t dims[] = {3};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, dims);
  float data[4] = {1, 2, 3, 4};
  cml_buffer_t* buf = NULL;
  bt_expect_status(t, cml_buffer_from_host(bt_backend(t), 0, &s, data, sizeof data, &buf),
                   CML_STATUS_INVALID_ARGUMENT, NULL);
  if (buf) bt_fail(t, "a failed cml_buffer_from_host wrote a buffer");
  buf = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  if (!buf) return;
  bt_expect_status(t, cml_buffer_copy_to_host(buf, data, sizeof data), CML_STATUS_INVALID_ARGUMENT,
                   NULL);
  bt_expect_status(t, cml_buffer_copy_to_host(buf, data, 2 * sizeof(float)),
                   CML_STATUS_INVALID_ARGUMENT, NULL);
  if (!bt_ok(t, cml_buffer_copy_to_host(buf, data, 3 * sizeof(float)), "copy_to_host")) return;
  if (data[0] != 1 || data[1] != 2 || data[2] != 3) {
    bt_fail(t, "copy_to_host gave %g %g %g, want 1 2 3", data[0], data[1], data[2]);
  }
  if (data[3] != 4) bt_fail(t, "copy_to_host wrote past the requested size");
}

//===--- donation ---===//

static void case_donation(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_CONSTANT)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {4};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, dims);
  cml_value_t y = cml_op_add(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0));
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  cml_buffer_t* in = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3, 4});
  if (!in) return;
  cml_buffer_t* out[1];
  if (!exec_run_owned(t, exe, &in, 1, (const bool[]){true}, 0, out)) return;
  exec_expect_buffer_f64(t, "donated x + 1", out[0], CML_DTYPE_F32, 1, dims,
                         (double[]){2, 3, 4, 5});
  if (cml_buffer_is_valid(in)) bt_fail(t, "a donated buffer is still valid");
  if (!cml_buffer_is_valid(out[0])) bt_fail(t, "the output of a donating execution is invalid");
  // Any later use of the donated buffer is FAILED_PRECONDITION.
  cml_buffer_t* again[1] = {NULL};
  bt_expect_status(t, cml_executable_execute(exe, &in, 1, NULL, 0, again),
                   CML_STATUS_FAILED_PRECONDITION, (const char* const[]){"donated", NULL});
  if (again[0]) bt_fail(t, "executing with a donated buffer wrote an output");
  float host[4];
  bt_expect_status(t, cml_buffer_copy_to_host(in, host, sizeof host),
                   CML_STATUS_FAILED_PRECONDITION, NULL);
  bt_expect_status(t, cml_executable_execute(exe, &in, 1, (const bool[]){true}, 0, again),
                   CML_STATUS_FAILED_PRECONDITION, NULL);
}

// Donating each output to the next execution: x + 1 five times.
static void case_donation_chain(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_CONSTANT)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {2, 3};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 2, dims);
  cml_value_t y = cml_op_add(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0));
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  cml_buffer_t* cur = exec_upload_f64(t, 0, CML_DTYPE_F32, 2, dims, (double[]){0, 1, 2, 3, 4, -5});
  cml_buffer_t* keep = exec_upload_f64(t, 0, CML_DTYPE_F32, 2, dims, (double[]){9, 9, 9, 9, 9, 9});
  if (!cur || !keep) return;
  for (int i = 0; i < 5; ++i) {
    cml_buffer_t* out[1];
    if (!exec_run_owned(t, exe, &cur, 1, (const bool[]){true}, 0, out)) return;
    if (cml_buffer_is_valid(cur)) bt_fail(t, "run %d: the donated buffer is still valid", i);
    cur = out[0];
  }
  exec_expect_buffer_f64(t, "x + 5", cur, CML_DTYPE_F32, 2, dims, (double[]){5, 6, 7, 8, 9, 0});
  // A non-donated buffer of the same shape is untouched by all this.
  exec_expect_buffer_f64(t, "other buffer", keep, CML_DTYPE_F32, 2, dims,
                         (double[]){9, 9, 9, 9, 9, 9});
}

// Donating a buffer that is also passed as another input is refused.
static void case_donation_duplicate_input(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  int64_t dims[] = {2};
  cml_executable_t* exe = exec_compile_add(t, dims, 1);
  if (!exe) return;
  cml_buffer_t* a = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2});
  if (!a) return;
  cml_buffer_t* out[1] = {NULL};
  bt_expect_status(
      t,
      cml_executable_execute(exe, (cml_buffer_t*[]){a, a}, 2, (const bool[]){true, false}, 0, out),
      CML_STATUS_INVALID_ARGUMENT, NULL);
  if (out[0]) bt_fail(t, "a refused execution wrote an output");
  if (!cml_buffer_is_valid(a)) bt_fail(t, "a refused donation invalidated the buffer");
  exec_expect_buffer_f64(t, "a", a, CML_DTYPE_F32, 1, dims, (double[]){1, 2});
}

//===--- buffer round trips ---===//

static void exec_round_trip(bt_t* t, cml_dtype_t dtype) {
  if (!bt_require_dtype(t, dtype)) return;
  static const int64_t shapes[][2] = {{3, 5}, {1, 1}, {0, 4}, {2, 17}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
    bt_tensor_t x = bt_tensor(t, dtype, 2, shapes[k], NULL);
    if (!x.data && x.size == 0 && cml_shape_element_count(&x.shape) != 0) return;
    unsigned char* bytes = x.data;
    for (size_t i = 0; i < x.size; ++i) {
      bytes[i] = (unsigned char)bt_rand_u64(t);
      if (dtype == CML_DTYPE_BOOL) bytes[i] &= 1;
    }
    cml_buffer_t* buf = bt_upload(t, 0, &x);
    if (!buf) return;
    const cml_shape_t* s = cml_buffer_shape(buf);
    char a[96], b[96];
    if (!s || !cml_shape_equal(s, &x.shape)) {
      bt_fail(t, "the buffer has shape %s, want %s", s ? cml_shape_format(s, a, sizeof a) : "NULL",
              cml_shape_format(&x.shape, b, sizeof b));
      return;
    }
    if (cml_buffer_device(buf) != 0)
      bt_fail(t, "the buffer is on device %d, want 0", cml_buffer_device(buf));
    if (cml_buffer_backend(buf) != bt_backend(t)) bt_fail(t, "the buffer has another backend");
    bt_tensor_t back;
    if (!bt_download(t, buf, &back)) return;
    if (cml_dtype_is_packed(dtype)) {
      bt_expect_equal(t, cml_shape_format(&x.shape, a, sizeof a), &back, &x);
      // The bits past the last element come back zero (docs/dtypes.md), not the host's.
      const uint64_t used =
          (uint64_t)cml_shape_element_count(&x.shape) * (uint64_t)cml_dtype_bits(dtype);
      if (back.size && used % 8 && (((unsigned char*)back.data)[back.size - 1] >> (used % 8))) {
        bt_fail(t, "%s: the unused bits of the last byte came back as 0x%02x (uploaded 0x%02x)",
                cml_shape_format(&x.shape, a, sizeof a), ((unsigned char*)back.data)[back.size - 1],
                bytes[x.size - 1]);
      }
    } else if (back.size != x.size || (x.size && memcmp(back.data, x.data, x.size) != 0)) {
      // Bytes, not values: a copy must not canonicalize NaNs or touch padding.
      size_t at = 0;
      while (at < x.size && at < back.size && ((unsigned char*)back.data)[at] == bytes[at]) ++at;
      bt_fail(t, "%s: round trip changed byte %zu of %zu: got 0x%02x, want 0x%02x",
              cml_shape_format(&x.shape, a, sizeof a), at, x.size,
              at < back.size ? ((unsigned char*)back.data)[at] : 0, at < x.size ? bytes[at] : 0);
    }
  }
  // A scalar too.
  bt_tensor_t sc = bt_tensor_i64(t, dtype, 0, NULL, (int64_t[]){1});
  cml_buffer_t* buf = bt_upload(t, 0, &sc);
  bt_tensor_t back;
  if (buf && bt_download(t, buf, &back)) bt_expect_equal(t, "scalar", &back, &sc);
}

#define EXEC_ROUND_TRIP_CASE(suffix, DTYPE) \
  static void case_round_trip_##suffix(bt_t* t) { exec_round_trip(t, DTYPE); }
EXEC_ROUND_TRIP_CASE(bool, CML_DTYPE_BOOL)
EXEC_ROUND_TRIP_CASE(i8, CML_DTYPE_I8)
EXEC_ROUND_TRIP_CASE(i16, CML_DTYPE_I16)
EXEC_ROUND_TRIP_CASE(i32, CML_DTYPE_I32)
EXEC_ROUND_TRIP_CASE(i64, CML_DTYPE_I64)
EXEC_ROUND_TRIP_CASE(u8, CML_DTYPE_U8)
EXEC_ROUND_TRIP_CASE(u16, CML_DTYPE_U16)
EXEC_ROUND_TRIP_CASE(u32, CML_DTYPE_U32)
EXEC_ROUND_TRIP_CASE(u64, CML_DTYPE_U64)
EXEC_ROUND_TRIP_CASE(f16, CML_DTYPE_F16)
EXEC_ROUND_TRIP_CASE(bf16, CML_DTYPE_BF16)
EXEC_ROUND_TRIP_CASE(f32, CML_DTYPE_F32)
EXEC_ROUND_TRIP_CASE(f64, CML_DTYPE_F64)
EXEC_ROUND_TRIP_CASE(c64, CML_DTYPE_C64)
EXEC_ROUND_TRIP_CASE(c128, CML_DTYPE_C128)
EXEC_ROUND_TRIP_CASE(i4, CML_DTYPE_I4)
EXEC_ROUND_TRIP_CASE(u4, CML_DTYPE_U4)
EXEC_ROUND_TRIP_CASE(i2, CML_DTYPE_I2)
EXEC_ROUND_TRIP_CASE(u2, CML_DTYPE_U2)
EXEC_ROUND_TRIP_CASE(i1, CML_DTYPE_I1)
EXEC_ROUND_TRIP_CASE(u1, CML_DTYPE_U1)

// A packed parameter passes through an executable unchanged.
static void case_packed_parameter_passthrough(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_I4)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {7};
  int64_t v[] = {-8, -1, 0, 1, 7, 3, -5};
  cml_value_t x = bt_param_i64(t, f, CML_DTYPE_I4, 1, dims, v);
  bt_tensor_t out[1];
  if (!bt_exec(t, &x, 1, out)) return;
  bt_expect_i64(t, "int4", &out[0], CML_DTYPE_I4, 1, dims, v);
}

//===--- shared buffers and devices ---===//

static void case_shared_buffer(bt_t* t) {
  if (!cml_backend_has_shared_buffers(bt_backend(t))) {
    bt_unsupported(t, "the backend has no shared buffers");
    return;
  }
  if (!exec_require_f32_ops(t, CML_OP_MUL, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {4};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, dims);
  cml_value_t y = cml_op_mul(f, x, x);
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, dims);
  cml_buffer_t* buf = NULL;
  void* data = NULL;
  if (!bt_ok(t, cml_buffer_create_shared(bt_backend(t), 0, &s, &buf, &data), "create_shared")) {
    return;
  }
  bt_own_buffer(t, buf);
  if (!data) {
    bt_fail(t, "cml_buffer_create_shared returned no data pointer");
    return;
  }
  void* again = NULL;
  if (bt_ok(t, cml_buffer_data(buf, &again), "cml_buffer_data") && again != data) {
    bt_fail(t, "cml_buffer_data gives %p, create_shared gave %p", again, data);
  }
  float* p = data;
  p[0] = 1, p[1] = 2, p[2] = -3, p[3] = 0.5f;
  cml_buffer_t* out[1];
  if (!exec_run_owned(t, exe, &buf, 1, NULL, 0, out)) return;
  exec_expect_buffer_f64(t, "first write", out[0], CML_DTYPE_F32, 1, dims,
                         (double[]){1, 4, 9, 0.25});
  p[0] = 5, p[1] = 6, p[2] = 7, p[3] = -8;
  if (!exec_run_owned(t, exe, &buf, 1, NULL, 0, out)) return;
  exec_expect_buffer_f64(t, "second write", out[0], CML_DTYPE_F32, 1, dims,
                         (double[]){25, 36, 49, 64});
  // Reading through copy_to_host sees the writes too.
  exec_expect_buffer_f64(t, "shared contents", buf, CML_DTYPE_F32, 1, dims,
                         (double[]){5, 6, 7, -8});
  // Shared buffers cannot be donated; ordinary buffers have no data pointer.
  bt_expect_status(t, cml_executable_execute(exe, &buf, 1, (const bool[]){true}, 0, out),
                   CML_STATUS_INVALID_ARGUMENT, NULL);
  cml_buffer_t* plain = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3, 4});
  if (!plain) return;
  void* none = NULL;
  bt_expect_status(t, cml_buffer_data(plain, &none), CML_STATUS_FAILED_PRECONDITION, NULL);
}

static void case_copy_to_device(bt_t* t) {
  int devices = cml_backend_device_count(bt_backend(t));
  if (devices < 2) {
    bt_unsupported(t, "the backend has %d device(s); the case needs 2", devices);
    return;
  }
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  int64_t dims[] = {3};
  cml_buffer_t* a = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  if (!a) return;
  cml_buffer_t* b = NULL;
  if (!bt_ok(t, cml_buffer_copy_to_device(a, 1, &b), "copy_to_device(1)")) return;
  bt_own_buffer(t, b);
  if (cml_buffer_device(b) != 1)
    bt_fail(t, "the copy is on device %d, want 1", cml_buffer_device(b));
  exec_expect_buffer_f64(t, "copy on device 1", b, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  cml_buffer_t* c = NULL;
  bt_expect_status(t, cml_buffer_copy_to_device(a, 0, &c), CML_STATUS_INVALID_ARGUMENT, NULL);
  bt_expect_status(t, cml_buffer_copy_to_device(a, devices, &c), CML_STATUS_OUT_OF_RANGE, NULL);
  if (c) bt_fail(t, "a failed copy wrote a buffer");
  // Execute on device 1 with the copy; a device-0 buffer there is refused.
  cml_executable_t* exe = exec_compile_add(t, dims, 1);
  if (!exe) return;
  cml_buffer_t* out[1];
  if (!exec_run_owned(t, exe, (cml_buffer_t*[]){b, b}, 2, NULL, 1, out)) return;
  if (cml_buffer_device(out[0]) != 1)
    bt_fail(t, "the output is on device %d, want 1", cml_buffer_device(out[0]));
  exec_expect_buffer_f64(t, "b + b on device 1", out[0], CML_DTYPE_F32, 1, dims,
                         (double[]){2, 4, 6});
  cml_buffer_t* refused[1] = {NULL};
  bt_expect_status(t, cml_executable_execute(exe, (cml_buffer_t*[]){a, b}, 2, NULL, 1, refused),
                   CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"alpha_input", NULL});
  // The other way back.
  cml_buffer_t* d = NULL;
  if (!bt_ok(t, cml_buffer_copy_to_device(out[0], 0, &d), "copy_to_device(0)")) return;
  bt_own_buffer(t, d);
  exec_expect_buffer_f64(t, "copy back on device 0", d, CML_DTYPE_F32, 1, dims,
                         (double[]){2, 4, 6});
}

//===--- concurrency and repetition ---===//

#define EXEC_THREADS 4
#define EXEC_THREAD_RUNS 25
#define EXEC_VECTOR 257

typedef struct exec_thread_t {
  cml_backend_t* backend;
  cml_executable_t* exe;
  int index;
  bool failed;
  char message[512];
} exec_thread_t;

static void* exec_thread_main(void* arg) {
  exec_thread_t* w = arg;
  int64_t dims[] = {EXEC_VECTOR};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, dims);
  float in[EXEC_VECTOR], out[EXEC_VECTOR];
  for (int run = 0; run < EXEC_THREAD_RUNS && !w->failed; ++run) {
    // Exactly representable inputs whose x*x + x is exact in float.
    for (int i = 0; i < EXEC_VECTOR; ++i) {
      in[i] = (float)(w->index * 8 + run) * 0.25f + (float)(i % 7) * 0.125f - 3.0f;
    }
    cml_buffer_t* buf = NULL;
    cml_buffer_t* res = NULL;
    cml_status_t st = cml_buffer_from_host(w->backend, 0, &s, in, sizeof in, &buf);
    if (st == CML_OK) st = cml_executable_execute(w->exe, &buf, 1, NULL, 0, &res);
    if (st == CML_OK) st = cml_buffer_copy_to_host(res, out, sizeof out);
    if (st != CML_OK) {
      snprintf(w->message, sizeof w->message, "thread %d run %d: %s: %s", w->index, run,
               cml_status_code_name(cml_status_code(st)), cml_status_message(st));
      cml_status_free(st);
      w->failed = true;
    }
    for (int i = 0; i < EXEC_VECTOR && !w->failed; ++i) {
      double x = in[i];
      float want = (float)(x * x + x);
      if (out[i] != want) {
        snprintf(w->message, sizeof w->message,
                 "thread %d run %d: element %d: got %.9g, want %.9g (x = %.9g)", w->index, run, i,
                 (double)out[i], (double)want, x);
        w->failed = true;
      }
    }
    cml_buffer_release(res);
    cml_buffer_release(buf);
  }
  return NULL;
}

static void case_concurrent_execute(bt_t* t) {
#if defined(__wasi__)
  // wasm32-wasi has one thread (pthread_create always fails there).
  bt_unsupported(t, "no threads on wasm32-wasi");
  return;
#endif
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_MUL)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {EXEC_VECTOR};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, dims);
  cml_value_t y = cml_op_add(f, cml_op_mul(f, x, x), x);
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  exec_thread_t workers[EXEC_THREADS];
  pthread_t threads[EXEC_THREADS];
  bool started[EXEC_THREADS];
  for (int i = 0; i < EXEC_THREADS; ++i) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].backend = bt_backend(t);
    workers[i].exe = exe;
    workers[i].index = i;
    started[i] = pthread_create(&threads[i], NULL, exec_thread_main, &workers[i]) == 0;
    if (!started[i]) bt_fail(t, "pthread_create failed for thread %d", i);
  }
  for (int i = 0; i < EXEC_THREADS; ++i) {
    if (started[i]) pthread_join(threads[i], NULL);
  }
  for (int i = 0; i < EXEC_THREADS; ++i) {
    if (workers[i].failed) {
      bt_fail(t, "%s", workers[i].message);
    } else if (started[i]) {
      bt_count_execution(t);  // its runs, on its own thread
    }
  }
}

static void case_execute_many_times(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_MUL, CML_OP_SUB)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {2, 2};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 2, dims);
  cml_value_t k = exec_named_param(f, "k", CML_DTYPE_F32, 0, NULL);
  cml_value_t y = cml_op_sub(f, cml_op_mul(f, x, k), x);  // x * (k - 1)
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  for (int run = 0; run < 100 && !bt_failed(t); ++run) {
    double xv[4] = {run, -run, 0.5 * run, 1};
    double kv = (double)(run % 5);
    bt_tensor_t in[2] = {bt_tensor_f64(t, CML_DTYPE_F32, 2, dims, xv),
                         bt_tensor_f64(t, CML_DTYPE_F32, 0, NULL, &kv)};
    bt_tensor_t out[1];
    if (!bt_run(t, exe, in, 2, 0, out, 1)) return;
    double want[4];
    for (int i = 0; i < 4; ++i) want[i] = xv[i] * kv - xv[i];
    char what[32];
    snprintf(what, sizeof what, "run %d", run);
    bt_expect_f64(t, what, &out[0], CML_DTYPE_F32, 2, dims, want, 0);
  }
}

//===--- cancellation and deadlines ---===//

// main(x: f32[3]) -> x + x, executed with a token cancelled beforehand: every backend must
// stop before running anything (the core checks the token before dispatch), with CANCELLED,
// no outputs, and a donated input left intact.
static void case_cancel_before_execute(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {3};
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, dims);
  cml_value_t y = cml_op_add(f, x, x);
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  cml_buffer_t* in = exec_upload_f64(t, 0, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
  if (!in) return;
  cml_cancel_token_t* token = NULL;
  if (!bt_ok(t, cml_cancel_token_create(cml_allocator_system(), &token), "create token")) return;
  cml_cancel_token_cancel(token);
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.cancel_token = token;
  bool donate[1] = {true};
  opts.donate = donate;
  cml_buffer_t* out[1] = {(cml_buffer_t*)&opts};
  bt_expect_status(t, cml_executable_execute_with_options(exe, &in, 1, &opts, out),
                   CML_STATUS_CANCELLED, (const char* const[]){"cancel", NULL});
  if (out[0] != NULL) bt_fail(t, "a cancelled execution wrote an output");
  cml_cancel_token_destroy(token);
  exec_expect_buffer_f64(t, "the donated input after the cancelled execution", in, CML_DTYPE_F32, 1,
                         dims, (double[]){1, 2, 3});
  // A deadline far away changes nothing.
  opts.cancel_token = NULL;
  opts.donate = NULL;
  opts.timeout_ns = 3600LL * 1000000000;
  if (!bt_ok(t, cml_executable_execute_with_options(exe, &in, 1, &opts, out),
             "execute with a deadline")) {
    return;
  }
  bt_count_execution(t);
  bt_own_buffer(t, out[0]);
  exec_expect_buffer_f64(t, "x + x", out[0], CML_DTYPE_F32, 1, dims, (double[]){2, 4, 6});
}

#if !defined(__wasi__)
typedef struct exec_cancel_thread_t {
  cml_cancel_token_t* token;
  int delay_ms;
} exec_cancel_thread_t;

static void* exec_cancel_thread_main(void* arg) {
  exec_cancel_thread_t* c = (exec_cancel_thread_t*)arg;
  struct timespec ts = {0, (long)c->delay_ms * 1000000};
  nanosleep(&ts, NULL);
  cml_cancel_token_cancel(c->token);
  return NULL;
}
#endif

// An endless While (i = 0; while (i < 1) i = i + 0): on a backend whose running executions can
// be interrupted (cml_executable_is_interruptible), a 50 ms deadline stops it with
// DEADLINE_EXCEEDED and a token cancelled from another thread with CANCELLED, without outputs.
// Other backends report the case UNSUPPORTED (they would never return).
static void case_interrupt_endless_while(bt_t* t) {
  if (!bt_require_functions(t) || !bt_require_op(t, CML_OP_WHILE) ||
      !bt_require_op(t, CML_OP_LESS_THAN) || !bt_require_op(t, CML_OP_ADD) ||
      !bt_require_dtype(t, CML_DTYPE_I32) || !bt_require_dtype(t, CML_DTYPE_BOOL)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t start = cml_parameter(f, "start", &is);
  cml_function_t *cond = NULL, *body = NULL;
  if (!bt_ok(t, cml_function_new_closure(f, &cond), "closure") ||
      !bt_ok(t, cml_function_new_closure(f, &body), "closure")) {
    return;
  }
  cml_value_t ci = cml_parameter(cond, "i", &is);
  cml_value_t go = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 1));
  if (!bt_ok(t, cml_function_return(cond, &go, 1), "return cond")) return;
  cml_value_t bi = cml_parameter(body, "i", &is);
  cml_value_t next = cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 0));
  if (!bt_ok(t, cml_function_return(body, &next, 1), "return body")) return;
  cml_value_t out_v = CML_VALUE_INVALID;
  cml_op_while(f, cond, body, &start, 1, &out_v);
  cml_executable_t* exe = bt_compile(t, &out_v, 1);
  if (!exe) return;
  if (!cml_executable_is_interruptible(exe)) {
    bt_unsupported(t, "backend \"%s\" cannot interrupt a running execution",
                   cml_backend_name(bt_backend(t)));
    return;
  }
  int32_t zero = 0;
  bt_tensor_t zt = bt_tensor(t, CML_DTYPE_I32, 0, NULL, &zero);
  cml_buffer_t* in = bt_upload(t, 0, &zt);
  if (!in) return;
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.timeout_ns = 50 * 1000000LL;
  cml_buffer_t* out[1] = {NULL};
  bt_expect_status(t, cml_executable_execute_with_options(exe, &in, 1, &opts, out),
                   CML_STATUS_DEADLINE_EXCEEDED, (const char* const[]){"deadline", NULL});
  if (out[0] != NULL) bt_fail(t, "an execution stopped at its deadline wrote an output");
#if !defined(__wasi__)
  cml_cancel_token_t* token = NULL;
  if (!bt_ok(t, cml_cancel_token_create(cml_allocator_system(), &token), "create token")) return;
  exec_cancel_thread_t canceller = {token, 20};
  pthread_t thread;
  if (pthread_create(&thread, NULL, exec_cancel_thread_main, &canceller) != 0) {
    bt_fail(t, "pthread_create failed");
    cml_cancel_token_destroy(token);
    return;
  }
  cml_execute_options_init(&opts);
  opts.cancel_token = token;
  bt_expect_status(t, cml_executable_execute_with_options(exe, &in, 1, &opts, out),
                   CML_STATUS_CANCELLED, (const char* const[]){"cancel", NULL});
  pthread_join(thread, NULL);
  cml_cancel_token_destroy(token);
  if (out[0] != NULL) bt_fail(t, "a cancelled execution wrote an output");
#endif
}

//===--- builder errors ---===//

// Every error case first checks that the failing op produced an invalid value.
static void exec_expect_invalid(bt_t* t, cml_value_t v, const char* op) {
  if (v != CML_VALUE_INVALID) bt_fail(t, "%s with bad arguments returned a valid value", op);
}

static void case_error_add_shapes(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_value_t b = exec_named_param(f, "b", CML_DTYPE_F32, 2, (int64_t[]){3, 2});
  cml_value_t y = cml_op_add(f, a, b);
  exec_expect_invalid(t, y, "Add");
  const char* const needles[] = {"Add", "[2, 3]", "[3, 2]", NULL};
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, needles);
  // The first error surfaces again at return and compile.
  bt_expect_status(t, cml_function_return(f, &y, 1), CML_STATUS_INVALID_ARGUMENT, needles);
  cml_executable_t* exe = NULL;
  bt_expect_status(t, cml_builder_compile(bt_builder(t), &exe), CML_STATUS_INVALID_ARGUMENT,
                   needles);
  if (exe) {
    bt_own_executable(t, exe);
    bt_fail(t, "compile succeeded after a builder error");
  }
}

static void case_error_add_rank_broadcast(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  // Restricted broadcasting: no implicit rank extension.
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t b = exec_named_param(f, "b", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  exec_expect_invalid(t, cml_op_add(f, a, b), "Add");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Add", "[3]", "[2, 3]", NULL});
}

static void case_error_add_dtypes(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID) || !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t b = exec_named_param(f, "b", CML_DTYPE_I32, 1, (int64_t[]){3});
  exec_expect_invalid(t, cml_op_add(f, a, b), "Add");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Add", "Float32", "Int32", NULL});
}

static void case_error_unary_dtype(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SIN) || !bt_require_dtype(t, CML_DTYPE_I32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_I32, 1, (int64_t[]){2});
  exec_expect_invalid(t, cml_op_sin(f, a), "Sin");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Sin", "Int32", NULL});
}

static void case_error_where_shapes(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_WHERE, CML_OP_INVALID) ||
      !bt_require_dtype(t, CML_DTYPE_BOOL)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t c = exec_named_param(f, "c", CML_DTYPE_BOOL, 1, (int64_t[]){3});
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_value_t b = exec_named_param(f, "b", CML_DTYPE_F32, 1, (int64_t[]){4});
  exec_expect_invalid(t, cml_op_where(f, c, a, b), "Where");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Where", "[3]", "[4]", NULL});
}

static void case_error_where_cond_dtype(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_WHERE, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t c = exec_named_param(f, "c", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 1, (int64_t[]){3});
  exec_expect_invalid(t, cml_op_where(f, c, a, a), "Where");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Where", "Float32", NULL});
}

static void case_error_where_branch_dtypes(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_WHERE, CML_OP_INVALID) ||
      !bt_require_dtype(t, CML_DTYPE_F64) || !bt_require_dtype(t, CML_DTYPE_BOOL)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t c = exec_named_param(f, "c", CML_DTYPE_BOOL, 1, (int64_t[]){3});
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t b = exec_named_param(f, "b", CML_DTYPE_F64, 1, (int64_t[]){3});
  exec_expect_invalid(t, cml_op_where(f, c, a, b), "Where");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Where", "Float32", "Float64", NULL});
}

static void case_error_clamp_shapes(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_CLAMP, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t lo = exec_named_param(f, "lo", CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t hi = exec_named_param(f, "hi", CML_DTYPE_F32, 0, NULL);
  exec_expect_invalid(t, cml_op_clamp(f, lo, x, hi), "Clamp");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Clamp", "[2]", "[3]", NULL});
}

static void case_error_clamp_dtypes(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_CLAMP, CML_OP_INVALID) ||
      !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t lo = exec_named_param(f, "lo", CML_DTYPE_I32, 0, NULL);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t hi = exec_named_param(f, "hi", CML_DTYPE_F32, 0, NULL);
  exec_expect_invalid(t, cml_op_clamp(f, lo, x, hi), "Clamp");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Clamp", "Int32", "Float32", NULL});
}

static void case_error_reduce_axis(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_REDUCE_SUM, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  exec_expect_invalid(t, cml_op_reduce_sum(f, x, (int64_t[]){2}, 1), "ReduceSum");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"ReduceSum", "[2, 3]", NULL});
  // Duplicate axes are just as wrong (fresh builder: the first error sticks).
  cml_builder_t* b2 = bt_new_builder(t);
  if (!b2) return;
  f = cml_builder_main(b2);
  x = exec_named_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  exec_expect_invalid(t, cml_op_reduce_sum(f, x, (int64_t[]){1, 1}, 2), "ReduceSum");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"ReduceSum", NULL});
}

static void case_error_transpose_permutation(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_TRANSPOSE, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  exec_expect_invalid(t, cml_op_transpose(f, x, (int64_t[]){0, 0}, 2), "Transpose");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Transpose", "[2, 3]", NULL});
  cml_builder_t* b2 = bt_new_builder(t);
  if (!b2) return;
  f = cml_builder_main(b2);
  x = exec_named_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  exec_expect_invalid(t, cml_op_transpose(f, x, (int64_t[]){1, 0, 2}, 3), "Transpose");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Transpose", NULL});
}

static void case_error_reshape_size(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_RESHAPE, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  exec_expect_invalid(t, cml_op_reshape(f, x, (int64_t[]){4, 2}, 2), "Reshape");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Reshape", "[2, 3]", "[4, 2]", NULL});
}

// A value of another builder is rejected (never silently mistaken for a local value).
static void case_error_foreign_value(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  cml_builder_t* b1 = bt_builder(t);
  if (!b1) return;
  cml_function_t* f1 = cml_builder_main(b1);
  cml_value_t a = exec_named_param(f1, "a", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t a2 = cml_op_add(f1, a, a);
  cml_builder_t* b2 = bt_new_builder(t);
  if (!b2) return;
  cml_function_t* f2 = cml_builder_main(b2);
  cml_value_t p = exec_named_param(f2, "p", CML_DTYPE_F32, 1, (int64_t[]){3});
  exec_expect_invalid(t, cml_op_add(f2, p, a), "Add of a foreign value");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Add", NULL});
  cml_builder_t* b3 = bt_new_builder(t);
  if (!b3) return;
  cml_function_t* f3 = cml_builder_main(b3);
  cml_value_t q = exec_named_param(f3, "q", CML_DTYPE_F32, 1, (int64_t[]){3});
  (void)q;
  bt_expect_status(t, cml_function_return(f3, &a2, 1), CML_STATUS_INVALID_ARGUMENT, NULL);
}

// A value of a function that is not an ancestor cannot be used.
static void case_error_value_of_other_function(bt_t* t) {
  if (!bt_require_functions(t) || !exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  cml_builder_t* b = bt_builder(t);
  if (!b) return;
  cml_function_t* g = NULL;
  if (!bt_ok(t, cml_builder_new_function(b, "helper", &g), "new_function")) return;
  cml_value_t gp = exec_named_param(g, "gp", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  exec_expect_invalid(t, cml_op_add(f, x, gp), "Add across functions");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Add", NULL});
}

static void case_error_return_twice(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  if (!bt_ok(t, cml_function_return(f, &x, 1), "first return")) return;
  if (cml_function_output_count(f) != 1) {
    bt_fail(t, "output count after return is %zu, want 1", cml_function_output_count(f));
  }
  bt_expect_status(t, cml_function_return(f, &x, 1), CML_STATUS_FAILED_PRECONDITION, NULL);
}

static void case_error_return_nothing(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  (void)exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  bt_expect_status(t, cml_function_return(f, NULL, 0), CML_STATUS_INVALID_ARGUMENT, NULL);
  bt_expect_status(t, cml_function_return(f, (cml_value_t[]){CML_VALUE_INVALID}, 1),
                   CML_STATUS_INVALID_ARGUMENT, NULL);
}

static void case_error_compile_without_return(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  (void)exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_executable_t* exe = NULL;
  bt_expect_status(t, cml_builder_compile(bt_builder(t), &exe), CML_STATUS_FAILED_PRECONDITION,
                   NULL);
  if (exe) {
    bt_own_executable(t, exe);
    bt_fail(t, "compile without a return produced an executable");
  }
}

static void case_error_ops_after_compile(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_INVALID)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){3});
  if (!bt_compile(t, &x, 1)) return;
  exec_expect_invalid(t, cml_op_add(f, x, x), "Add after compile");
  bt_expect_builder_error(t, CML_STATUS_FAILED_PRECONDITION, NULL);
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_compile(bt_builder(t), &exe);
  if (st == CML_OK) {
    bt_own_executable(t, exe);
    bt_fail(t, "a builder compiled twice");
  }
  cml_status_free(st);
}

// The first error sticks: later errors and invalid values do not overwrite it.
static void case_error_first_error_sticks(bt_t* t) {
  if (!exec_require_f32_ops(t, CML_OP_ADD, CML_OP_TRANSPOSE) || !bt_require_op(t, CML_OP_NEG)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t a = exec_named_param(f, "a", CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_value_t b = exec_named_param(f, "b", CML_DTYPE_F32, 1, (int64_t[]){5});
  cml_value_t bad = cml_op_add(f, a, b);
  exec_expect_invalid(t, bad, "Add");
  exec_expect_invalid(t, cml_op_neg(f, bad), "Neg of an invalid value");
  exec_expect_invalid(t, cml_op_transpose(f, a, (int64_t[]){3}, 1), "Transpose");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"Add", "[5]", NULL});
  cml_status_t st = cml_builder_status(bt_builder(t));
  if (strstr(cml_status_message(st), "Transpose")) {
    bt_fail(t, "a later error overwrote the first one: %s", cml_status_message(st));
  }
  cml_status_free(st);
}

static cml_function_t* exec_closure(bt_t* t, cml_function_t* parent) {
  cml_function_t* c = NULL;
  if (!bt_ok(t, cml_function_new_closure(parent, &c), "cml_function_new_closure")) return NULL;
  return c;
}

static void case_error_sort_comparator(bt_t* t) {
  if (!bt_require_functions(t) || !exec_require_f32_ops(t, CML_OP_SORT, CML_OP_LESS_THAN) ||
      !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  // Comparator parameters of the wrong dtype.
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_function_t* cmp = exec_closure(t, f);
  if (!cmp) return;
  cml_value_t l = exec_named_param(cmp, "l", CML_DTYPE_I32, 0, NULL);
  cml_value_t r = exec_named_param(cmp, "r", CML_DTYPE_I32, 0, NULL);
  cml_value_t lt = cml_op_less_than(cmp, l, r);
  if (!bt_ok(t, cml_function_return(cmp, &lt, 1), "comparator return")) return;
  cml_value_t out[1];
  if (cml_op_sort(f, cmp, 0, false, &x, 1, out))
    bt_fail(t, "Sort accepted an Int32 comparator for Float32");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Sort", NULL});

  // A comparator with one parameter instead of two.
  cml_builder_t* b2 = bt_new_builder(t);
  if (!b2) return;
  f = cml_builder_main(b2);
  x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){4});
  cmp = exec_closure(t, f);
  if (!cmp) return;
  l = exec_named_param(cmp, "l", CML_DTYPE_F32, 0, NULL);
  lt = cml_op_less_than(cmp, l, l);
  if (!bt_ok(t, cml_function_return(cmp, &lt, 1), "comparator return")) return;
  if (cml_op_sort(f, cmp, 0, false, &x, 1, out))
    bt_fail(t, "Sort accepted a 1-parameter comparator");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Sort", NULL});

  // A comparator that returns Float32 instead of Bool.
  cml_builder_t* b3 = bt_new_builder(t);
  if (!b3) return;
  f = cml_builder_main(b3);
  x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){4});
  cmp = exec_closure(t, f);
  if (!cmp) return;
  l = exec_named_param(cmp, "l", CML_DTYPE_F32, 0, NULL);
  r = exec_named_param(cmp, "r", CML_DTYPE_F32, 0, NULL);
  if (!bt_ok(t, cml_function_return(cmp, &l, 1), "comparator return")) return;
  if (cml_op_sort(f, cmp, 0, false, &x, 1, out))
    bt_fail(t, "Sort accepted a Float32 comparator result");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Sort", NULL});

  // A bad axis.
  cml_builder_t* b4 = bt_new_builder(t);
  if (!b4) return;
  f = cml_builder_main(b4);
  x = exec_named_param(f, "x", CML_DTYPE_F32, 1, (int64_t[]){4});
  cmp = exec_closure(t, f);
  if (!cmp) return;
  l = exec_named_param(cmp, "l", CML_DTYPE_F32, 0, NULL);
  r = exec_named_param(cmp, "r", CML_DTYPE_F32, 0, NULL);
  lt = cml_op_less_than(cmp, l, r);
  if (!bt_ok(t, cml_function_return(cmp, &lt, 1), "comparator return")) return;
  if (cml_op_sort(f, cmp, 1, false, &x, 1, out)) bt_fail(t, "Sort accepted axis 1 of a vector");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Sort", NULL});
}

static void case_error_while_body_shape(bt_t* t) {
  if (!bt_require_functions(t) || !exec_require_f32_ops(t, CML_OP_WHILE, CML_OP_LESS_THAN) ||
      !bt_require_op(t, CML_OP_RESHAPE)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 0, NULL);
  cml_function_t* cond = exec_closure(t, f);
  cml_function_t* body = exec_closure(t, f);
  if (!cond || !body) return;
  cml_value_t cs = exec_named_param(cond, "s", CML_DTYPE_F32, 0, NULL);
  cml_value_t pred = cml_op_less_than(cond, cs, cml_constant_scalar_f64(cond, CML_DTYPE_F32, 0));
  if (!bt_ok(t, cml_function_return(cond, &pred, 1), "cond return")) return;
  // The body turns the scalar state into a [1] vector.
  cml_value_t bs = exec_named_param(body, "s", CML_DTYPE_F32, 0, NULL);
  cml_value_t wrong = cml_op_reshape(body, bs, (int64_t[]){1}, 1);
  if (!bt_ok(t, cml_function_return(body, &wrong, 1), "body return")) return;
  cml_value_t out[1];
  if (cml_op_while(f, cond, body, &x, 1, out)) {
    bt_fail(t, "While accepted a body that changes the state shape");
  }
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"While", NULL});
}

static void case_error_if_branches(bt_t* t) {
  if (!bt_require_functions(t) || !exec_require_f32_ops(t, CML_OP_IF, CML_OP_INVALID) ||
      !bt_require_dtype(t, CML_DTYPE_BOOL) || !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t p = exec_named_param(f, "p", CML_DTYPE_BOOL, 0, NULL);
  cml_function_t* tb = exec_closure(t, f);
  cml_function_t* fb = exec_closure(t, f);
  if (!tb || !fb) return;
  cml_value_t tv = cml_constant_scalar_f64(tb, CML_DTYPE_F32, 1);
  cml_value_t fv = cml_constant_scalar_i64(fb, CML_DTYPE_I32, 1);
  if (!bt_ok(t, cml_function_return(tb, &tv, 1), "true branch return") ||
      !bt_ok(t, cml_function_return(fb, &fv, 1), "false branch return")) {
    return;
  }
  cml_value_t out[1];
  if (cml_op_if(f, p, tb, fb, out)) bt_fail(t, "If accepted branches of different dtypes");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"If", NULL});

  // A non-scalar predicate.
  cml_builder_t* b2 = bt_new_builder(t);
  if (!b2) return;
  f = cml_builder_main(b2);
  p = exec_named_param(f, "p", CML_DTYPE_BOOL, 1, (int64_t[]){2});
  tb = exec_closure(t, f);
  fb = exec_closure(t, f);
  if (!tb || !fb) return;
  tv = cml_constant_scalar_f64(tb, CML_DTYPE_F32, 1);
  fv = cml_constant_scalar_f64(fb, CML_DTYPE_F32, 2);
  if (!bt_ok(t, cml_function_return(tb, &tv, 1), "true branch return") ||
      !bt_ok(t, cml_function_return(fb, &fv, 1), "false branch return")) {
    return;
  }
  if (cml_op_if(f, p, tb, fb, out)) bt_fail(t, "If accepted a vector predicate");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"If", NULL});
}

static void case_error_call_arity(bt_t* t) {
  if (!bt_require_functions(t) || !exec_require_f32_ops(t, CML_OP_CALL, CML_OP_ADD)) return;
  cml_builder_t* b = bt_builder(t);
  if (!b) return;
  cml_function_t* g = NULL;
  if (!bt_ok(t, cml_builder_new_function(b, "sum2", &g), "new_function")) return;
  cml_value_t u = exec_named_param(g, "u", CML_DTYPE_F32, 0, NULL);
  cml_value_t v = exec_named_param(g, "v", CML_DTYPE_F32, 0, NULL);
  cml_value_t s = cml_op_add(g, u, v);
  if (!bt_ok(t, cml_function_return(g, &s, 1), "sum2 return")) return;
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = exec_named_param(f, "x", CML_DTYPE_F32, 0, NULL);
  cml_value_t out[1];
  if (cml_op_call(f, g, &x, 1, out)) bt_fail(t, "Call accepted 1 input for a 2-parameter function");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Call", NULL});
}

const bt_case_t bt_cases_exec[] = {
    {"compile_execute_two_outputs", CML_OP_CONSTANT, case_compile_execute_two_outputs},
    {"constant_scalars", CML_OP_CONSTANT, case_constant_scalars},
    {"parameter_passthrough", CML_OP_PARAMETER, case_parameter_passthrough},
    {"output_aliasing", CML_OP_INVALID, case_output_aliasing},
    {"wrong_input_count", CML_OP_INVALID, case_wrong_input_count},
    {"wrong_input_shape", CML_OP_INVALID, case_wrong_input_shape},
    {"wrong_input_dtype", CML_OP_INVALID, case_wrong_input_dtype},
    {"bad_device", CML_OP_INVALID, case_bad_device},
    {"buffer_size_mismatch", CML_OP_INVALID, case_buffer_size_mismatch},
    {"donation", CML_OP_INVALID, case_donation},
    {"donation_chain", CML_OP_INVALID, case_donation_chain},
    {"donation_duplicate_input", CML_OP_INVALID, case_donation_duplicate_input},
    {"round_trip_bool", CML_OP_INVALID, case_round_trip_bool},
    {"round_trip_i8", CML_OP_INVALID, case_round_trip_i8},
    {"round_trip_i16", CML_OP_INVALID, case_round_trip_i16},
    {"round_trip_i32", CML_OP_INVALID, case_round_trip_i32},
    {"round_trip_i64", CML_OP_INVALID, case_round_trip_i64},
    {"round_trip_u8", CML_OP_INVALID, case_round_trip_u8},
    {"round_trip_u16", CML_OP_INVALID, case_round_trip_u16},
    {"round_trip_u32", CML_OP_INVALID, case_round_trip_u32},
    {"round_trip_u64", CML_OP_INVALID, case_round_trip_u64},
    {"round_trip_f16", CML_OP_INVALID, case_round_trip_f16},
    {"round_trip_bf16", CML_OP_INVALID, case_round_trip_bf16},
    {"round_trip_f32", CML_OP_INVALID, case_round_trip_f32},
    {"round_trip_f64", CML_OP_INVALID, case_round_trip_f64},
    {"round_trip_c64", CML_OP_INVALID, case_round_trip_c64},
    {"round_trip_c128", CML_OP_INVALID, case_round_trip_c128},
    {"round_trip_i4", CML_OP_INVALID, case_round_trip_i4},
    {"round_trip_u4", CML_OP_INVALID, case_round_trip_u4},
    {"round_trip_i2", CML_OP_INVALID, case_round_trip_i2},
    {"round_trip_u2", CML_OP_INVALID, case_round_trip_u2},
    {"round_trip_i1", CML_OP_INVALID, case_round_trip_i1},
    {"round_trip_u1", CML_OP_INVALID, case_round_trip_u1},
    {"packed_parameter_passthrough", CML_OP_PARAMETER, case_packed_parameter_passthrough},
    {"shared_buffer", CML_OP_INVALID, case_shared_buffer},
    {"copy_to_device", CML_OP_INVALID, case_copy_to_device},
    {"concurrent_execute", CML_OP_INVALID, case_concurrent_execute},
    {"execute_many_times", CML_OP_INVALID, case_execute_many_times},
    {"cancel_before_execute", CML_OP_INVALID, case_cancel_before_execute},
    {"interrupt_endless_while", CML_OP_WHILE, case_interrupt_endless_while},
    {"error_add_shapes", CML_OP_INVALID, case_error_add_shapes},
    {"error_add_rank_broadcast", CML_OP_INVALID, case_error_add_rank_broadcast},
    {"error_add_dtypes", CML_OP_INVALID, case_error_add_dtypes},
    {"error_unary_dtype", CML_OP_INVALID, case_error_unary_dtype},
    {"error_where_shapes", CML_OP_INVALID, case_error_where_shapes},
    {"error_where_cond_dtype", CML_OP_INVALID, case_error_where_cond_dtype},
    {"error_where_branch_dtypes", CML_OP_INVALID, case_error_where_branch_dtypes},
    {"error_clamp_shapes", CML_OP_INVALID, case_error_clamp_shapes},
    {"error_clamp_dtypes", CML_OP_INVALID, case_error_clamp_dtypes},
    {"error_reduce_axis", CML_OP_INVALID, case_error_reduce_axis},
    {"error_transpose_permutation", CML_OP_INVALID, case_error_transpose_permutation},
    {"error_reshape_size", CML_OP_INVALID, case_error_reshape_size},
    {"error_foreign_value", CML_OP_INVALID, case_error_foreign_value},
    {"error_value_of_other_function", CML_OP_INVALID, case_error_value_of_other_function},
    {"error_return_twice", CML_OP_INVALID, case_error_return_twice},
    {"error_return_nothing", CML_OP_INVALID, case_error_return_nothing},
    {"error_compile_without_return", CML_OP_INVALID, case_error_compile_without_return},
    {"error_ops_after_compile", CML_OP_INVALID, case_error_ops_after_compile},
    {"error_first_error_sticks", CML_OP_INVALID, case_error_first_error_sticks},
    {"error_sort_comparator", CML_OP_INVALID, case_error_sort_comparator},
    {"error_while_body_shape", CML_OP_INVALID, case_error_while_body_shape},
    {"error_if_branches", CML_OP_INVALID, case_error_if_branches},
    {"error_call_arity", CML_OP_INVALID, case_error_call_arity},
};
const size_t bt_cases_exec_count = sizeof bt_cases_exec / sizeof bt_cases_exec[0];
