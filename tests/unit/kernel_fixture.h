// SPDX-License-Identifier: Apache-2.0
// tests/unit/kernel_fixture.h: a one-node module for the C backend's kernel tests, which call a
// kernel group directly on a hand-made IR node (no builder, no plan, no engine).
//
// A test file defines KT_LOOKUP as the group's lookup function before it includes this header:
//
//   #define KT_LOOKUP cmlc_kernels_movement_lookup
//   #include "kernel_fixture.h"
//
//   int64_t xd[] = {2, 3}, od[] = {3, 2};
//   cml_shape_t xs = kt_shape(CML_DTYPE_F32, 2, xd), os = kt_shape(CML_DTYPE_F32, 2, od);
//   kt_t k;
//   kt_init(&k, CML_OP_TRANSPOSE, 1, &xs, &os);
//   /* ...set the op's attributes in k.attrs... */
//   ASSERT_STATUS_OK(kt_run(&k, NULL, (const void*[]){x}, y));
//
// The helpers are `static inline` so a test that does not use one does not warn.
#ifndef CML_TESTS_UNIT_KERNEL_FIXTURE_H_
#define CML_TESTS_UNIT_KERNEL_FIXTURE_H_

#include <stdlib.h>
#include <string.h>

#include "backends/c/cmlc.h"
#include "cml/backend.h"

#ifndef KT_LOOKUP
#error "define KT_LOOKUP as the kernel group's lookup function before including kernel_fixture.h"
#endif

#define KT_MAX_INPUTS 8

// The module holds values 1..input_count (the inputs) and input_count + 1 (the one output);
// value 0 stays the invalid id, as in a real module.
typedef struct kt_t {
  cml_ir_value_t values[KT_MAX_INPUTS + 2];
  uint32_t inputs[KT_MAX_INPUTS];
  cml_module_t module;
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  cmlc_options_t options;
} kt_t;

// Makes |k| a module with one |op| node of |input_count| (<= KT_MAX_INPUTS) inputs of
// |in_shapes| and one output of |out_shape|. The attributes start zeroed; 4 threads, 1 device.
static inline void kt_init(kt_t* k, cml_op_t op, uint32_t input_count, const cml_shape_t* in_shapes,
                           const cml_shape_t* out_shape) {
  memset(k, 0, sizeof *k);
  for (uint32_t i = 0; i < input_count; ++i) {
    k->values[1 + i].shape = in_shapes[i];
    k->inputs[i] = 1 + i;
  }
  k->values[1 + input_count].shape = *out_shape;
  k->module.value_count = input_count + 2;
  k->module.values = k->values;
  k->module.node_count = 1;
  k->module.nodes = &k->node;
  k->module.num_devices = 1;
  k->node.op = op;
  k->node.input_count = input_count;
  k->node.inputs = k->inputs;
  k->node.output_count = 1;
  k->node.first_output = 1 + input_count;
  k->node.attrs = &k->attrs;
  k->options.threads = 4;
  k->options.devices = 1;
}

// Looks the node up with KT_LOOKUP and runs it with |pool| (may be NULL) and a scratch area of
// the size the kernel asks for. Returns UNIMPLEMENTED when the group does not take the node,
// otherwise the kernel's status.
static inline cml_status_t kt_run(kt_t* k, cmlc_pool_t* pool, const void* const* inputs,
                                  void* output) {
  cmlc_kernel_entry_t e;
  if (!KT_LOOKUP(&k->module, &k->node, &k->options, &e))
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "lookup failed for %s",
                           cml_op_name(k->node.op));
  const cml_shape_t* in_shapes[KT_MAX_INPUTS];
  for (uint32_t i = 0; i < k->node.input_count; ++i) in_shapes[i] = &k->values[1 + i].shape;
  const cml_shape_t* out_shapes[1] = {&k->values[k->node.first_output].shape};
  void* outputs[1] = {output};
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &k->module;
  a.node = &k->node;
  a.options = &k->options;
  a.input_count = k->node.input_count;
  a.input_shapes = in_shapes;
  a.inputs = inputs;
  a.output_count = 1;
  a.output_shapes = out_shapes;
  a.outputs = outputs;
  a.pool = pool;
  size_t scratch_size = e.scratch ? e.scratch(&k->module, &k->node, &k->options) : 0;
  void* scratch = scratch_size ? aligned_alloc(64, (scratch_size + 63) / 64 * 64) : NULL;
  a.scratch = scratch;
  a.scratch_size = scratch_size;
  memcpy(a.impl, e.impl, sizeof a.impl);
  cml_status_t st = e.run(&a);
  free(scratch);
  return st;
}

static inline cml_shape_t kt_shape(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = dtype;
  s.rank = rank;
  for (int32_t i = 0; i < rank; ++i) s.dims[i] = dims[i];
  return s;
}

static inline int64_t kt_count(const cml_shape_t* s) {
  int64_t n = 1;
  for (int32_t i = 0; i < s->rank; ++i) n *= s->dims[i];
  return n;
}

// Fills |n| elements of |es| bytes with a pattern in which neighbouring elements and the bytes
// inside an element differ, so a misplaced or torn element shows.
static inline void kt_pattern(void* data, int64_t n, size_t es) {
  unsigned char* p = (unsigned char*)data;
  for (int64_t i = 0; i < n; ++i)
    for (size_t b = 0; b < es; ++b)
      p[i * (int64_t)es + (int64_t)b] = (unsigned char)(i * 7 + b * 31 + (i >> 8));
}

#endif  // CML_TESTS_UNIT_KERNEL_FIXTURE_H_
