// SPDX-License-Identifier: Apache-2.0
// backendtest/bt.h: the internal API compliance cases are written with.
//
// A case is a function `void case_fn(bt_t* t)`. It builds with the public API, runs with
// `bt_exec`, and checks with `bt_expect_*`. Everything a case allocates through bt (builders,
// tensors, executables, buffers) is released when the case ends, so cases just `return` on
// failure. Expected values are written by hand (or derived by a plain reference loop in the
// case); never produced by the code under test.
//
// Example:
//
//   static void case_add_f32(bt_t* t) {
//     if (!bt_require_op(t, CML_OP_ADD) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
//     cml_function_t* f = bt_main(t);
//     int64_t dims[] = {3};
//     cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){1, 2, 3});
//     cml_value_t y = bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){10, 20, 30});
//     cml_value_t z = cml_op_add(f, x, y);
//     bt_tensor_t out[1];
//     if (!bt_exec(t, &z, 1, out)) return;
//     bt_expect_f64(t, "sum", &out[0], CML_DTYPE_F32, 1, dims, (double[]){11, 22, 33}, 0);
//   }
//   const bt_case_t bt_cases_elementwise[] = {{"add_f32", CML_OP_ADD, case_add_f32}, ...};
//   const size_t bt_cases_elementwise_count = sizeof bt_cases_elementwise / sizeof *...;
//
// Thread-safety: a bt_t belongs to one case on one thread.
#ifndef CML_BACKENDTEST_BT_H_
#define CML_BACKENDTEST_BT_H_

#include "cml/backend.h"
#include "cml/backendtest.h"
#include "cml/distributed.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bt_t bt_t;
typedef void (*bt_case_fn)(bt_t* t);

typedef struct bt_case_t {
  const char* name;  // unique within its group, e.g. "add_f32_broadcast"
  cml_op_t op;       // the main op covered (CML_OP_INVALID for non-op cases)
  bt_case_fn fn;
} bt_case_t;

// A host tensor owned by the case (freed at case end).
typedef struct bt_tensor_t {
  cml_shape_t shape;
  void* data;
  size_t size;  // bytes
} bt_tensor_t;

//===--- case files: each cases_<file>.c defines these two symbols ---===//
// A case's group is its op's ops.def group (cml_op_group), whatever file holds it: the runner
// matches the filter against it and reports it. The files and the groups they hold:
#define BT_DECLARE_GROUP(group)              \
  extern const bt_case_t bt_cases_##group[]; \
  extern const size_t bt_cases_##group##_count;
BT_DECLARE_GROUP(exec)                // (no op) execution, buffers, donation, concurrency, errors
BT_DECLARE_GROUP(control)             // control: closures, Call, While, If, Sort
BT_DECLARE_GROUP(elementwise_unary)   // elementwise: unary, convert, bitcast
BT_DECLARE_GROUP(elementwise_binary)  // elementwise: binary, compare, clamp, where, iota
BT_DECLARE_GROUP(elementwise_f8)      // elementwise/movement: the float8/float4 storage dtypes
BT_DECLARE_GROUP(reduce)              // reduce: Reduce*, ArgMinMax
BT_DECLARE_GROUP(movement)            // movement: reshape, transpose, broadcast, concat, slice, ...
BT_DECLARE_GROUP(index)               // index: gather, scatter, dynamic slice / update slice
BT_DECLARE_GROUP(window)              // window: reduce window, select and scatter
BT_DECLARE_GROUP(linalg_dot)          // linalg: Dot, DotGeneral
BT_DECLARE_GROUP(linalg_conv)         // linalg: ConvGeneral
BT_DECLARE_GROUP(special)             // special: RNG, FFT, BatchNorm*; control: the barriers
BT_DECLARE_GROUP(fused)               // fused: fused ops (native or decomposed), cml/fused.h
BT_DECLARE_GROUP(collective)   // collective: SPMD collectives, AutoSharding (cml/distributed.h)
BT_DECLARE_GROUP(fused_quant)  // fused: FusedQuantizedDense, QuantizedEmbeddingLookup
BT_DECLARE_GROUP(autodiff)     // gradients (cml/autodiff.h) vs finite differences, any group
BT_DECLARE_GROUP(dynamic)      // dynamic axes (cml/shape.h): compile once, run many sizes

//===--- case control ---===//

cml_backend_t* bt_backend(bt_t* t);
// Points the case at |backend| (borrowed) for what follows and returns the previous one: a case
// runs the same graph on an oracle backend this way (cases_autodiff.c, c:reference=true).
cml_backend_t* bt_set_backend(bt_t* t, cml_backend_t* backend);
// Counts an execution that returned OK: a passing case covers its op only after one (a case
// that only checks a build error passes on a backend that refuses every compile). The
// harness's own run helpers count theirs.
void bt_count_execution(bt_t* t);
// Marks the case UNSUPPORTED (and returns false) unless the backend has |op| / |dtype|.
bool bt_require_op(bt_t* t, cml_op_t op);
bool bt_require_dtype(bt_t* t, cml_dtype_t dtype);
bool bt_require_functions(bt_t* t);
void bt_unsupported(bt_t* t, const char* fmt, ...) CML_PRINTF(2, 3);
// Records a failure (the case goes on; later checks still run).
void bt_fail(bt_t* t, const char* fmt, ...) CML_PRINTF(2, 3);
bool bt_failed(const bt_t* t);
// Fails (returns false) when |status| is not OK, naming |what|; frees |status|. An
// UNIMPLEMENTED status marks the case UNSUPPORTED instead.
bool bt_ok(bt_t* t, cml_status_t status, const char* what);
// Case-owned scratch memory (zeroed), freed at case end.
void* bt_alloc(bt_t* t, size_t size);

//===--- building ---===//

// The case's builder (created on first use, named after the case) and its main function.
cml_builder_t* bt_builder(bt_t* t);
cml_function_t* bt_main(bt_t* t);
// Starts over with a fresh builder (the old one is kept until the case ends).
cml_builder_t* bt_new_builder(bt_t* t);

// Tensors from typed host data (copied). |dims| may be NULL for rank 0.
bt_tensor_t bt_tensor(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                      const void* data);
// Tensors from doubles / int64s converted to |dtype| (floats round to nearest even, ints are
// cast, Bool is value != 0, complex gets a zero imaginary part; for packed dtypes ints are
// packed little-endian).
bt_tensor_t bt_tensor_f64(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                          const double* values);
bt_tensor_t bt_tensor_i64(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                          const int64_t* values);
// Complex tensors from interleaved (re, im) doubles.
bt_tensor_t bt_tensor_c(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                        const double* re_im);

// Adds a parameter of the current builder's main function fed with |value| at bt_exec time.
cml_value_t bt_param(bt_t* t, cml_function_t* f, const bt_tensor_t* value);
cml_value_t bt_param_f64(bt_t* t, cml_function_t* f, cml_dtype_t dtype, int32_t rank,
                         const int64_t* dims, const double* values);
cml_value_t bt_param_i64(bt_t* t, cml_function_t* f, cml_dtype_t dtype, int32_t rank,
                         const int64_t* dims, const int64_t* values);
// A constant from a tensor.
cml_value_t bt_const(bt_t* t, cml_function_t* f, const bt_tensor_t* value);

//===--- running ---===//

// Returns |outputs| from main, compiles, uploads the bt_param inputs, executes on device 0 and
// downloads the results into |out| (case-owned). Returns false (case failed, or UNSUPPORTED
// when the builder or compiler said UNIMPLEMENTED) on any error.
bool bt_exec(bt_t* t, const cml_value_t* outputs, size_t count, bt_tensor_t* out);
// Same, with explicit options: run on |device| and return the executable for reuse.
bool bt_exec_ex(bt_t* t, const cml_value_t* outputs, size_t count, int device, bt_tensor_t* out,
                cml_executable_t** out_executable);

// Expects the builder's sticky error to have |code| and its message to contain every one of
// the NULL-terminated |needles| (e.g. the op name and a shape). Marks a failure otherwise.
void bt_expect_builder_error(bt_t* t, cml_status_code_t code, const char* const* needles);
// Expects |status| to have |code| and contain the needles; frees |status|.
void bt_expect_status(bt_t* t, cml_status_t status, cml_status_code_t code,
                      const char* const* needles);

//===--- checking ---===//

// Exact comparison: same shape and dtype, identical bytes, except that for floating types any
// NaN matches any NaN (sign and payload ignored). +0 and -0 differ.
void bt_expect_equal(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want);
// Floating comparison within |max_ulps| units in the last place of the output dtype (NaN
// matches NaN, infinities must match exactly). Complex: per component. Integers: exact.
void bt_expect_ulps(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want,
                    int64_t max_ulps);
// |got| must equal (max_ulps 0) or be close to values given as doubles, in shape |dims|.
void bt_expect_f64(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dtype,
                   int32_t rank, const int64_t* dims, const double* values, int64_t max_ulps);
void bt_expect_i64(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dtype,
                   int32_t rank, const int64_t* dims, const int64_t* values);
// Absolute/relative tolerance: |got - want| <= atol + rtol * |want| (NaN matches NaN).
void bt_expect_close(bt_t* t, const char* what, const bt_tensor_t* got, const bt_tensor_t* want,
                     double rtol, double atol);

// Element access for hand checks (converted to double / int64; complex: real part).
double bt_get_f64(const bt_tensor_t* x, int64_t i);
int64_t bt_get_i64(const bt_tensor_t* x, int64_t i);

// Deterministic pseudo-random numbers for sweeps (xorshift, seeded per case).
uint64_t bt_rand_u64(bt_t* t);
double bt_rand_uniform(bt_t* t, double lo, double hi);

//===--- lower-level running (for cases that drive executables and buffers themselves) ---===//

// Hands |buffer| / |executable| (one reference) to the case: released at case end.
void bt_own_buffer(bt_t* t, cml_buffer_t* buffer);
void bt_own_executable(bt_t* t, cml_executable_t* executable);
// Returns |outputs| from the current builder's main function and compiles it. The executable
// is case-owned. NULL on error (failed, or UNSUPPORTED for UNIMPLEMENTED).
cml_executable_t* bt_compile(bt_t* t, const cml_value_t* outputs, size_t count);
// Uploads |value| to |device| (case-owned buffer; NULL on error).
cml_buffer_t* bt_upload(bt_t* t, int device, const bt_tensor_t* value);
// Copies |buffer| into a new case-owned tensor of the buffer's shape.
bool bt_download(bt_t* t, cml_buffer_t* buffer, bt_tensor_t* out);
// Uploads |inputs| to |device|, executes |exe| there and downloads |out_count| outputs
// (the count must match the executable's).
bool bt_run(bt_t* t, cml_executable_t* exe, const bt_tensor_t* inputs, size_t input_count,
            int device, bt_tensor_t* out, size_t out_count);

//===--- many devices (cml/distributed.h) ---===//

// Marks the case UNSUPPORTED (skipped, with the reason) and returns false unless the backend
// runs |distribution| (its capabilities' distribution bit) on at least |devices| devices.
bool bt_require_devices(bt_t* t, cml_distribution_t distribution, int devices);
// Starts the case's builder as SPMD over |devices| / AutoSharding over |meshes| (after
// bt_require_devices). False on error (UNIMPLEMENTED: UNSUPPORTED).
bool bt_spmd(bt_t* t, int devices);
bool bt_auto_sharding(bt_t* t, const cml_mesh_t* const* meshes, size_t mesh_count);
// Returns |outputs| from main with |shardings| (NULL: plain return) and compiles; as bt_compile.
cml_executable_t* bt_compile_sharded(bt_t* t, const cml_value_t* outputs, size_t count,
                                     const cml_sharding_t* shardings);
// Runs a multi-device executable: |inputs| holds N * P tensors, device-major (input i of slot j
// is inputs[j * P + i], N = cml_executable_num_devices, P = its input count); slot j's inputs
// are uploaded to device |devices[j]| (NULL: j). |out| receives N * R tensors, device-major,
// each checked against the executable's per-device output shape.
bool bt_run_devices(bt_t* t, cml_executable_t* exe, const bt_tensor_t* inputs,
                    const int32_t* devices, bt_tensor_t* out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDTEST_BT_H_
