// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_common.h: the differential test's framework (c vs xla:cpu): host
// tensors, deterministic input generators, running one graph on a backend and comparing the
// results of two backends element by element.
//
// A case is a graph-building function plus its host inputs. `dt_check` builds the same graph on
// both backends (the inputs are parameters, so no backend can constant-fold them), runs it,
// and compares every output with the case's tolerance. A case one backend answers with
// UNIMPLEMENTED (builder, compile or execute) is counted as skipped; any other error on one
// side, a shape mismatch or a value outside the tolerance is a disagreement, printed with op,
// dtype, index, inputs and both outputs.
//
// Thread-safety: single-thread (global counters).
#ifndef CML_TESTS_DIFFERENTIAL_DIFF_COMMON_H_
#define CML_TESTS_DIFFERENTIAL_DIFF_COMMON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cml/cml.h"

#define DT_MAX_INPUTS 8
#define DT_MAX_OUTPUTS 8

// A host tensor owned by the framework (freed after each case).
typedef struct dt_tensor_t {
  cml_shape_t shape;
  void* data;
  size_t size;
} dt_tensor_t;

// How two results are compared.
typedef enum dt_cmp_t {
  // Identical bits; for floats any NaN matches any NaN (sign, payload ignored); +0 != -0.
  DT_EXACT = 0,
  // Floats within |bound| ulps of the output dtype (NaN matches NaN, infinities exact).
  // Complex: normwise, |a - b| / max(|a|, |b|) in units of the component's epsilon.
  DT_ULPS = 1,
  // |a - b| / max(scale, |a|, |b|) in units of the dtype's epsilon (NaN matches NaN,
  // infinities exact). For sums, dots and other results whose rounding depends on the order
  // of operations. Integers are always compared exactly.
  DT_REL = 2,
} dt_cmp_t;

typedef struct dt_tol_t {
  dt_cmp_t kind;
  double bound;  // DT_ULPS: ulps; DT_REL: epsilons
  double scale;  // DT_REL: the magnitude below which the error is taken as absolute (>= 1)
} dt_tol_t;

// Builds the case's graph in |f| from the parameters |params| (one per case input). Writes the
// outputs to |outs| and returns their count (0 on failure: the builder holds the error).
typedef size_t (*dt_build_fn)(cml_function_t* f, const cml_value_t* params, const void* ctx,
                              cml_value_t* outs);

typedef struct dt_case_t dt_case_t;

// For a differing element |i| of output |output|: the documented reason when the difference is
// a known, accepted one (docs/differential.md, "Accepted differences"), else NULL.
typedef const char* (*dt_known_fn)(const dt_case_t* c, size_t output, int64_t i, const void* c_out,
                                   const void* xla_out);

struct dt_case_t {
  const char* op;     // label: the op name
  cml_dtype_t dtype;  // label: the main dtype
  char variant[96];   // label: what distinguishes the case ("axis=1", "F32->I8")
  dt_tol_t tol;
  size_t input_count;
  dt_tensor_t inputs[DT_MAX_INPUTS];
  dt_build_fn build;
  const void* ctx;
  // Per output, a tolerance overriding |tol| when .kind or .bound is set (0 entries: |tol|).
  dt_tol_t output_tol[DT_MAX_OUTPUTS];
  dt_known_fn known;  // may be NULL
};

//===--- global state ---===//

typedef struct dt_state_t {
  cml_backend_t* c;
  cml_backend_t* xla;
  uint64_t rng;
  int verbose;
  bool denormals_flushed;  // see dt_denormals_flushed (default true)
  const char* filter;      // substring of "<op>/<dtype>" to run, NULL for all
  size_t agreed, disagreed, skipped;
} dt_state_t;
extern dt_state_t dt;

//===--- tensors ---===//

// Starts a case: clears |c| and sets its labels.
void dt_case_init(dt_case_t* c, const char* op, cml_dtype_t dtype, dt_tol_t tol);
// Adds an input of |dtype| and |dims| with zeroed storage; returns its data pointer.
void* dt_case_input(dt_case_t* c, cml_dtype_t dtype, int32_t rank, const int64_t* dims);
// Frees the case's inputs.
void dt_case_free(dt_case_t* c);

// Element access (complex: the real part for dt_get_f64). Packed dtypes are not handled.
double dt_get_f64(cml_dtype_t d, const void* p, int64_t i);
int64_t dt_get_i64(cml_dtype_t d, const void* p, int64_t i);
void dt_set_f64(cml_dtype_t d, void* p, int64_t i, double v);
void dt_set_i64(cml_dtype_t d, void* p, int64_t i, int64_t v);
void dt_set_c(cml_dtype_t d, void* p, int64_t i, double re, double im);

//===--- random inputs ---===//

uint64_t dt_rand(void);
double dt_uniform(double lo, double hi);

typedef enum dt_fill_t {
  DT_FILL_EDGE = 0,   // special values first (NaN, ±Inf, ±0, extremes, ...), then random wide
  DT_FILL_WIDE = 1,   // random over the whole range of the dtype
  DT_FILL_SMALL = 2,  // floats uniform in [-4, 4), ints in [-8, 8] (unsigned [0, 15])
  DT_FILL_UNIT = 3,   // floats uniform in [-1, 1), ints in [-3, 3] (unsigned [0, 5])
  DT_FILL_EXACT = 4,  // small multiples of 1/4 in [-8, 8]: sums of a few stay exact
} dt_fill_t;

// Fills elements [from, from + n) of |p| (dtype |d|).
void dt_fill(cml_dtype_t d, void* p, int64_t from, int64_t n, dt_fill_t kind);
// The number of special values of |d| (the edge set).
int64_t dt_special_count(cml_dtype_t d);
// Writes special value |k| of |d| into element |i| of |p|.
void dt_set_special(cml_dtype_t d, void* p, int64_t i, int64_t k);

//===--- running and comparing ---===//

// Runs |c| on both backends and compares. Frees nothing (call dt_case_free after).
void dt_check(dt_case_t* c);

// Prints how many differences each accepted reason explained.
void dt_print_known(void);

// Records the maximum error seen for a (op, dtype) label; printed by dt_print_bounds.
void dt_print_bounds(void);

// True when the case label passes the command-line filter.
bool dt_selected(const char* op, cml_dtype_t dtype);

// True when denormals of |d| are kept out of the inputs and a denormal result matches zero
// (XLA's CPU runtime flushes them).
bool dt_denormals_flushed(cml_dtype_t d);

// Standard dtype lists.
extern const cml_dtype_t dt_all_dtypes[];  // CML_DTYPE_INVALID-terminated
double dt_eps(cml_dtype_t d);              // machine epsilon of a float (component) dtype

//===--- case groups (diff_<group>.c) ---===//
void dt_group_elementwise(void);
void dt_group_convert(void);
void dt_group_reduce(void);
void dt_group_movement(void);
void dt_group_index(void);
void dt_group_linalg(void);
void dt_group_window(void);
void dt_group_control(void);
void dt_group_special(void);

#endif  // CML_TESTS_DIFFERENTIAL_DIFF_COMMON_H_
