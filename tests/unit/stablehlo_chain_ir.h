// SPDX-License-Identifier: Apache-2.0
// tests/unit/stablehlo_chain_ir.h: hand-built IR modules for the StableHLO emitter's nesting
// tests, made without the builder (so they do not depend on the core's own depth limit):
// - a Call chain: main(x) = f1(x), f_i(x) = f_{i+1}(x) + 1, f_depth(x) = x + x, so the result
//   is 2x + depth - 1 (depth >= 1);
// - nested If closures: level i (main is level 0) is
//   `If(true, level i+1, else_i) + 1` and the innermost level returns x + x, where x is main's
//   parameter captured level by level; the result is 2x + depth.
// Both nest |depth| functions deep (main excluded). A chain module can also be made cyclic
// (the last function calls the first again) to test recursion.
#ifndef CML_TESTS_UNIT_STABLEHLO_CHAIN_IR_H_
#define CML_TESTS_UNIT_STABLEHLO_CHAIN_IR_H_

#include <stdlib.h>
#include <string.h>

#include "cml/ir.h"

typedef struct chain_ir_t {
  cml_module_t module;
  cml_ir_node_t* nodes;
  cml_ir_value_t* values;
  cml_ir_function_t* functions;
  cml_ir_attrs_t* attrs;  // one per node
  uint32_t* lists;        // every index list (inputs, node lists, params, captures, outputs)
  size_t list_used, list_cap;
  uint32_t node_cap, value_cap, function_cap;
  uint8_t* constants;  // constant data: 64 bytes per node
} chain_ir_t;

static uint32_t* chain_ir_list(chain_ir_t* ir, uint32_t count) {
  uint32_t* p = ir->lists + ir->list_used;
  ir->list_used += count ? count : 1;
  return p;
}

// Adds a node with |input_count| inputs (copied) and one output of |shape|; returns its value.
static uint32_t chain_ir_node(chain_ir_t* ir, uint32_t fi, cml_op_t op, const uint32_t* inputs,
                              uint32_t input_count, const cml_shape_t* shape) {
  uint32_t n = ir->module.node_count++;
  uint32_t v = ir->module.value_count++;
  cml_ir_node_t* node = &ir->nodes[n];
  memset(node, 0, sizeof *node);
  node->op = op;
  node->function = fi;
  uint32_t* in = chain_ir_list(ir, input_count);
  for (uint32_t i = 0; i < input_count; ++i) in[i] = inputs[i];
  node->inputs = in;
  node->input_count = input_count;
  node->output_count = 1;
  node->first_output = v;
  node->attrs = &ir->attrs[n];
  node->data = ir->constants + 64 * (size_t)n;
  ir->values[v].node = n;
  ir->values[v].output = 0;
  ir->values[v].shape = *shape;
  cml_ir_function_t* f = &ir->functions[fi];
  ((uint32_t*)f->nodes)[f->node_count++] = n;
  return v;
}

static void chain_ir_destroy(chain_ir_t* ir) {
  free(ir->nodes);
  free(ir->values);
  free(ir->functions);
  free(ir->attrs);
  free(ir->lists);
  free(ir->constants);
  memset(ir, 0, sizeof *ir);
}

static bool chain_ir_alloc(chain_ir_t* ir, uint32_t functions, uint32_t nodes_per_function) {
  memset(ir, 0, sizeof *ir);
  ir->function_cap = functions;
  ir->node_cap = functions * nodes_per_function;
  ir->value_cap = ir->node_cap + 1;
  ir->list_cap = (size_t)ir->node_cap * 8 + (size_t)functions * (nodes_per_function + 8);
  ir->nodes = calloc(ir->node_cap, sizeof *ir->nodes);
  ir->values = calloc(ir->value_cap, sizeof *ir->values);
  ir->functions = calloc(functions, sizeof *ir->functions);
  ir->attrs = calloc(ir->node_cap, sizeof *ir->attrs);
  ir->lists = calloc(ir->list_cap, sizeof *ir->lists);
  ir->constants = calloc(ir->node_cap, 64);
  if (!ir->nodes || !ir->values || !ir->functions || !ir->attrs || !ir->lists || !ir->constants) {
    chain_ir_destroy(ir);
    return false;
  }
  ir->module.name = "chain";
  ir->module.nodes = ir->nodes;
  ir->module.values = ir->values;
  ir->module.functions = ir->functions;
  ir->module.value_count = 1;  // values[0] is unused
  ir->module.num_devices = 1;
  for (uint32_t fi = 0; fi < functions; ++fi) {
    ir->functions[fi].nodes = chain_ir_list(ir, nodes_per_function);
    ir->functions[fi].parent = -1;
    ir->functions[fi].name = fi == 0 ? "main" : "";
  }
  ir->module.function_count = functions;
  return true;
}

// A Float32 scalar constant |value| in function |fi|.
static uint32_t chain_ir_const_f32(chain_ir_t* ir, uint32_t fi, float value) {
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  uint32_t v = chain_ir_node(ir, fi, CML_OP_CONSTANT, NULL, 0, &s);
  cml_ir_node_t* n = &ir->nodes[ir->values[v].node];
  memcpy((void*)n->data, &value, sizeof value);
  n->data_size = sizeof value;
  return v;
}

static void chain_ir_return(chain_ir_t* ir, uint32_t fi, uint32_t v) {
  uint32_t* out = chain_ir_list(ir, 1);
  out[0] = v;
  ir->functions[fi].outputs = out;
  ir->functions[fi].output_count = 1;
}

static uint32_t chain_ir_param(chain_ir_t* ir, uint32_t fi, const char* name) {
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  uint32_t v = chain_ir_node(ir, fi, CML_OP_PARAMETER, NULL, 0, &s);
  ir->nodes[ir->values[v].node].name = name;
  uint32_t* p = chain_ir_list(ir, 1);
  p[0] = v;
  ir->functions[fi].params = p;
  ir->functions[fi].param_count = 1;
  return v;
}

// The Call chain described above; |cyclic|: f_depth calls f_1 instead of adding.
static bool chain_ir_make_calls(chain_ir_t* ir, uint32_t depth, bool cyclic) {
  if (!chain_ir_alloc(ir, depth + 1, 4)) return false;
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  for (uint32_t fi = 0; fi <= depth; ++fi) {
    if (fi > 0) {
      // Names that must not matter: "main", names that map to one identifier, generated-looking
      // ones, quotes and spaces.
      static const char* const kNames[] = {"main", "f.x", "f_x", "fn2", "closure1", "a \"b\"", ""};
      ir->functions[fi].name = kNames[fi % (sizeof kNames / sizeof kNames[0])];
    }
    uint32_t x = chain_ir_param(ir, fi, fi == 0 ? "x" : "a");
    uint32_t r;
    if (fi < depth || cyclic) {
      r = chain_ir_node(ir, fi, CML_OP_CALL, &x, 1, &s);
      ir->attrs[ir->values[r].node].functions[0] = fi < depth ? fi + 1 : 1;
      if (fi > 0) {
        uint32_t one = chain_ir_const_f32(ir, fi, 1.0f);
        uint32_t in[2] = {r, one};
        r = chain_ir_node(ir, fi, CML_OP_ADD, in, 2, &s);
      }
    } else {
      uint32_t in[2] = {x, x};
      r = chain_ir_node(ir, fi, CML_OP_ADD, in, 2, &s);
    }
    chain_ir_return(ir, fi, r);
  }
  return true;
}

// The nested If closures described above. Functions: main (0), then level i's true branch is
// function 2i - 1 and its false branch 2i (i = 1..depth).
static bool chain_ir_make_ifs(chain_ir_t* ir, uint32_t depth) {
  if (!chain_ir_alloc(ir, 2 * depth + 1, 6)) return false;
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32), b = cml_shape_scalar(CML_DTYPE_BOOL);
  uint32_t x = chain_ir_param(ir, 0, "x");
  // Level by level: |fi| is the function of the level, |xv| its value standing for x.
  uint32_t fi = 0, xv = x;
  for (uint32_t level = 0; level <= depth; ++level) {
    uint32_t r;
    if (level == depth) {
      uint32_t in[2] = {xv, xv};
      r = chain_ir_node(ir, fi, CML_OP_ADD, in, 2, &s);
    } else {
      uint32_t t = 2 * level + 1, e = 2 * level + 2;
      for (uint32_t k = 0; k < 2; ++k) {
        // Both branches capture xv (one capture each).
        uint32_t bf = k == 0 ? t : e;
        ir->functions[bf].parent = (int32_t)fi;
        uint32_t inner = chain_ir_node(ir, bf, CML_OP_CAPTURED_VALUE, NULL, 0, &s);
        ir->nodes[ir->values[inner].node].index = 0;
        uint32_t* outer = chain_ir_list(ir, 1);
        uint32_t* in_list = chain_ir_list(ir, 1);
        outer[0] = xv;
        in_list[0] = inner;
        ir->functions[bf].captures_outer = outer;
        ir->functions[bf].captures_inner = in_list;
        ir->functions[bf].capture_count = 1;
        if (k == 1) chain_ir_return(ir, bf, inner);  // else: x
      }
      uint32_t pred = chain_ir_node(ir, fi, CML_OP_CONSTANT, NULL, 0, &b);
      cml_ir_node_t* pn = &ir->nodes[ir->values[pred].node];
      ((uint8_t*)pn->data)[0] = 1;
      pn->data_size = 1;
      r = chain_ir_node(ir, fi, CML_OP_IF, &pred, 1, &s);
      ir->attrs[ir->values[r].node].functions[0] = t;
      ir->attrs[ir->values[r].node].functions[1] = e;
      uint32_t one = chain_ir_const_f32(ir, fi, 1.0f);
      uint32_t in[2] = {r, one};
      r = chain_ir_node(ir, fi, CML_OP_ADD, in, 2, &s);
      chain_ir_return(ir, fi, r);
      fi = t;
      xv = ir->functions[t].captures_inner[0];
      continue;
    }
    chain_ir_return(ir, fi, r);
  }
  return true;
}

#endif  // CML_TESTS_UNIT_STABLEHLO_CHAIN_IR_H_
