// SPDX-License-Identifier: Apache-2.0
// src/backends/c/loop_fusion.c: fused elementwise loops: one pass over the output for a group
// of elementwise ops, so that the group's intermediates never touch the arena. (The c backend's
// loop fusion, not the fused ops of cml/fused.h: those are src/core/fused.c and
// kernels/generic/fused.c.)
//
// A group's program is a list of ops over registers: blocks of CMLC_FUSED_BLOCK elements that
// stay in L1. For each block every op runs in schedule order through the very inner loops the
// unfused kernels use (the SIMD loop the options pick, or the scalar reference loop, and the
// ConvertDType runner), reading registers, the group's inputs at the block's position, or a
// gathered copy of a broadcast input; the root op writes the output directly. Every element
// therefore goes through the same sequence of IEEE operations as without fusion and the results
// are bit-identical (the kernels compute each element independently of where a loop starts).
//
// Inputs are used in three ways: FULL (the output's dims: element i at i), SCALAR (one element,
// stride 0) and BCAST (size-1 axes, restricted broadcasting: gathered per block). Blocks are
// split over the pool in chunks that depend only on the element count.
//
// Thread-safety: a program is immutable once built; runs share nothing but it.
#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/elementwise_internal.h"

enum {
  CMLC_FUSED_BLOCK = 256,
  CMLC_FUSED_MAX_REGS = 12,
  CMLC_FUSED_MAX_INPUTS = 16,
  CMLC_FUSED_MAX_BCAST = 6,
  CMLC_FUSED_MAX_OPS = 32,
  CMLC_FUSED_MIN_CHUNK_BLOCKS = 64,  // 16384 elements, as the unfused loops
  CMLC_FUSED_MAX_ELEMENT = 8,        // f64
};

typedef enum cmlc_fused_mode_t {
  CMLC_FUSED_FULL = 0,
  CMLC_FUSED_SCALAR,
  CMLC_FUSED_BCAST,
} cmlc_fused_mode_t;

typedef struct cmlc_fused_op_t {
  const cml_ir_node_t* node;
  cmlc_ew_fn fn;  // NULL: ConvertDType from |from| to |to|
  cml_dtype_t from, to;
  cmlc_impl_fn convert_impl;  // ConvertDType: the SIMD loop its lookup picked (may be NULL)
  int arg_count;
  int16_t args[3];  // >= 0: register; < 0: input -(arg + 1)
  int16_t dst;      // register, or -1: the output
} cmlc_fused_op_t;

struct cmlc_fused_t {
  uint32_t op_count, input_count, reg_count, bcast_count;
  cmlc_fused_op_t ops[CMLC_FUSED_MAX_OPS];
  uint32_t inputs[CMLC_FUSED_MAX_INPUTS];  // value indices
  uint8_t mode[CMLC_FUSED_MAX_INPUTS];     // cmlc_fused_mode_t
  uint8_t bcast_slot[CMLC_FUSED_MAX_INPUTS];
  size_t in_size[CMLC_FUSED_MAX_INPUTS];
  int64_t in_strides[CMLC_FUSED_MAX_INPUTS][CML_MAX_RANK];  // BCAST: 0 on broadcast axes
  int32_t rank;
  int64_t dims[CML_MAX_RANK];
  int64_t n;
  size_t out_size;
  int in_place_input;
};

//===--- op support ---===//

static bool cmlc_fused_dtype_ok(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F32 || dtype == CML_DTYPE_F64 || dtype == CML_DTYPE_BF16 ||
         dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BOOL;
}

// Fills |op|'s inner loop and returns whether the node can be fused. The loop is the one the
// elementwise group's lookup picked for the unfused node (one place picks SIMD variants).
static bool cmlc_fused_pick(const cml_module_t* m, const cml_ir_node_t* n,
                            const cmlc_options_t* options, cmlc_fused_op_t* op) {
  if (n->output_count != 1 || n->input_count == 0 || n->input_count > 3) return false;
  const cml_shape_t* os = &m->values[n->first_output].shape;
  if (!cmlc_fused_dtype_ok(os->dtype)) return false;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    // Broadcast inputs are gathered into blocks of CMLC_FUSED_MAX_ELEMENT-byte elements.
    const size_t size = cmlc_dtype_size(m->values[n->inputs[k]].shape.dtype);
    if (size == 0 || size > CMLC_FUSED_MAX_ELEMENT) return false;
  }
  switch (n->op) {
    case CML_OP_IDENTITY:
    case CML_OP_BITCAST:
    case CML_OP_IOTA:
      return false;
    default:
      break;
  }
  const cml_op_kind_t kind = cml_op_kind(n->op);
  const bool plain = n->op == CML_OP_CONVERT_DTYPE || n->op == CML_OP_CLAMP ||
                     n->op == CML_OP_WHERE || kind == CML_OPK_UNARY || kind == CML_OPK_BINARY ||
                     kind == CML_OPK_COMPARE;
  if (!plain) return false;
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  if (!cmlc_kernels_elementwise_lookup(m, n, options, &e) || !e.run) return false;
  memset(op, 0, sizeof *op);
  op->node = n;
  op->arg_count = (int)n->input_count;
  if (n->op == CML_OP_CONVERT_DTYPE) {
    if (n->input_count != 1) return false;
    op->from = m->values[n->inputs[0]].shape.dtype;
    op->to = os->dtype;
    op->convert_impl = e.impl[0];
    return true;
  }
  op->fn = (cmlc_ew_fn)e.impl[0];
  return op->fn != NULL;
}

bool cmlc_fused_node_supported(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options) {
  cmlc_fused_op_t op;
  return cmlc_fused_pick(module, node, options, &op);
}

//===--- building ---===//

static cml_status_t cmlc_fused_refuse(const char* why) {
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "fusion: %s", why);
}

cml_status_t cmlc_fused_build(const cml_module_t* m, const cmlc_options_t* options,
                              const uint32_t* members, uint32_t member_count,
                              cml_allocator_t allocator, cmlc_fused_t** out) {
  *out = NULL;
  if (member_count == 0 || member_count > CMLC_FUSED_MAX_OPS) {
    return cmlc_fused_refuse("group size");
  }
  cmlc_fused_t* f = cml_allocator_malloc(allocator, sizeof *f, CMLC_ALIGNMENT);
  if (!f) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(f, 0, sizeof *f);
  f->in_place_input = -1;
  const cml_ir_node_t* root = &m->nodes[members[member_count - 1]];
  const cml_shape_t* os = &m->values[root->first_output].shape;
  f->rank = os->rank;
  for (int32_t d = 0; d < os->rank; ++d) f->dims[d] = os->dims[d];
  f->n = cml_shape_element_count(os);
  f->out_size = cmlc_dtype_size(os->dtype);
  // Register of each member's output (-1 before it is computed), and the last op reading it.
  int16_t reg_of[CMLC_FUSED_MAX_OPS];
  uint32_t last_reader[CMLC_FUSED_MAX_OPS];
  bool reg_busy[CMLC_FUSED_MAX_REGS] = {false};
  for (uint32_t i = 0; i < member_count; ++i) {
    reg_of[i] = -1;
    last_reader[i] = i;
  }
  for (uint32_t i = 0; i < member_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[members[i]];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      for (uint32_t j = 0; j < i; ++j) {
        if (m->nodes[members[j]].first_output == n->inputs[k]) last_reader[j] = i;
      }
    }
  }
  const char* why = NULL;
  for (uint32_t i = 0; i < member_count && !why; ++i) {
    const cml_ir_node_t* n = &m->nodes[members[i]];
    cmlc_fused_op_t* op = &f->ops[i];
    if (!cmlc_fused_pick(m, n, options, op)) {
      why = "unsupported member";
      break;
    }
    for (uint32_t k = 0; k < n->input_count && !why; ++k) {
      const uint32_t v = n->inputs[k];
      int32_t member = -1;
      for (uint32_t j = 0; j < i; ++j) {
        if (m->nodes[members[j]].first_output == v) member = (int32_t)j;
      }
      if (member >= 0) {
        op->args[k] = reg_of[member];
        continue;
      }
      uint32_t slot = f->input_count;
      for (uint32_t j = 0; j < f->input_count; ++j) {
        if (f->inputs[j] == v) slot = j;
      }
      if (slot == f->input_count) {
        if (f->input_count == CMLC_FUSED_MAX_INPUTS) {
          why = "too many inputs";
          break;
        }
        const cml_shape_t* is = &m->values[v].shape;
        f->inputs[slot] = v;
        f->in_size[slot] = cmlc_dtype_size(is->dtype);
        if (cml_shape_element_count(is) == 1) {
          f->mode[slot] = CMLC_FUSED_SCALAR;
        } else if (cml_shape_dims_equal(is, os)) {
          f->mode[slot] = CMLC_FUSED_FULL;
        } else if (is->rank == os->rank && f->bcast_count < CMLC_FUSED_MAX_BCAST) {
          f->mode[slot] = CMLC_FUSED_BCAST;
          f->bcast_slot[slot] = (uint8_t)f->bcast_count++;
          int64_t strides[CML_MAX_RANK];
          cmlc_shape_strides(is, strides);
          for (int32_t d = 0; d < os->rank; ++d) {
            if (is->dims[d] != os->dims[d] && is->dims[d] != 1) why = "bad broadcast";
            f->in_strides[slot][d] = is->dims[d] == 1 ? 0 : strides[d];
          }
        } else {
          why = "broadcast input";
        }
        ++f->input_count;
      }
      op->args[k] = (int16_t)(-(int32_t)slot - 1);
    }
    if (why) break;
    if (i + 1 == member_count) {
      op->dst = -1;
    } else {
      int16_t r = -1;
      for (int16_t c = 0; c < CMLC_FUSED_MAX_REGS && r < 0; ++c) {
        if (!reg_busy[c]) r = c;
      }
      if (r < 0) {
        why = "too many registers";
        break;
      }
      reg_busy[r] = true;
      reg_of[i] = r;
      op->dst = r;
      if ((uint32_t)r + 1 > f->reg_count) f->reg_count = (uint32_t)r + 1;
    }
    // Registers whose last reader is this op are free again (after |dst| was taken, so an op
    // never writes a register it reads).
    for (uint32_t j = 0; j < i; ++j) {
      if (reg_of[j] >= 0 && last_reader[j] == i) reg_busy[reg_of[j]] = false;
    }
  }
  if (!why) {
    // Every non-root member must be read by a later member.
    for (uint32_t j = 0; j + 1 < member_count; ++j) {
      if (last_reader[j] == j) why = "unread member";
    }
  }
  if (why) {
    cmlc_fused_destroy(allocator, f);
    return cmlc_fused_refuse(why);
  }
  f->op_count = member_count;
  for (uint32_t j = 0; j < f->input_count; ++j) {
    if (f->mode[j] == CMLC_FUSED_FULL && f->in_size[j] == f->out_size) {
      f->in_place_input = (int)j;
      break;
    }
  }
  *out = f;
  return CML_OK;
}

void cmlc_fused_destroy(cml_allocator_t allocator, cmlc_fused_t* fused) {
  if (fused) cml_allocator_free(allocator, fused, sizeof *fused);
}

uint32_t cmlc_fused_input_count(const cmlc_fused_t* fused) { return fused->input_count; }
const uint32_t* cmlc_fused_inputs(const cmlc_fused_t* fused) { return fused->inputs; }
int cmlc_fused_in_place_input(const cmlc_fused_t* fused) { return fused->in_place_input; }

//===--- running ---===//

typedef struct cmlc_fused_ctx_t {
  const cmlc_fused_t* f;
  const void* const* inputs;
  char* output;
  const cmlc_options_t* options;
} cmlc_fused_ctx_t;

// Copies the |len| elements of broadcast input |j| that line up with output elements
// [start, start + len) into |dst|.
static void cmlc_fused_gather(const cmlc_fused_t* f, uint32_t j, const char* base, int64_t start,
                              int64_t len, char* dst) {
  const int32_t rank = f->rank;
  const int64_t* strides = f->in_strides[j];
  int64_t idx[CML_MAX_RANK];
  int64_t rest = start, off = 0;
  for (int32_t d = rank - 1; d >= 0; --d) {
    idx[d] = rest % f->dims[d];
    rest /= f->dims[d];
    off += idx[d] * strides[d];
  }
  const size_t es = f->in_size[j];
  const int32_t last = rank - 1;
  const int64_t inner = f->dims[last], inner_stride = strides[last];
  int64_t k = 0;
  while (k < len) {
    // A run along the innermost axis.
    int64_t run = inner - idx[last];
    if (run > len - k) run = len - k;
    if (es == 4) {
      const uint32_t* s = (const uint32_t*)base;
      uint32_t* o = (uint32_t*)dst + k;
      for (int64_t r = 0; r < run; ++r) o[r] = s[off + r * inner_stride];
    } else if (es == 8) {
      const uint64_t* s = (const uint64_t*)base;
      uint64_t* o = (uint64_t*)dst + k;
      for (int64_t r = 0; r < run; ++r) o[r] = s[off + r * inner_stride];
    } else {
      for (int64_t r = 0; r < run; ++r) {
        memcpy(dst + (size_t)(k + r) * es, base + (size_t)(off + r * inner_stride) * es, es);
      }
    }
    k += run;
    off += run * inner_stride;
    idx[last] += run;
    // Carry into the outer axes.
    for (int32_t d = last; d > 0 && idx[d] == f->dims[d]; --d) {
      off -= idx[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += strides[d - 1];
    }
  }
}

static void cmlc_fused_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fused_ctx_t* c = (const cmlc_fused_ctx_t*)ctx;
  const cmlc_fused_t* f = c->f;
  _Alignas(64) uint8_t regs[CMLC_FUSED_MAX_REGS][CMLC_FUSED_BLOCK * CMLC_FUSED_MAX_ELEMENT];
  _Alignas(64) uint8_t bcast[CMLC_FUSED_MAX_BCAST][CMLC_FUSED_BLOCK * CMLC_FUSED_MAX_ELEMENT];
  for (int64_t blk = begin; blk < end; ++blk) {
    const int64_t start = blk * CMLC_FUSED_BLOCK;
    const int64_t len = f->n - start < CMLC_FUSED_BLOCK ? f->n - start : CMLC_FUSED_BLOCK;
    for (uint32_t j = 0; j < f->input_count; ++j) {
      if (f->mode[j] == CMLC_FUSED_BCAST) {
        cmlc_fused_gather(f, j, (const char*)c->inputs[j], start, len,
                          (char*)bcast[f->bcast_slot[j]]);
      }
    }
    for (uint32_t i = 0; i < f->op_count; ++i) {
      const cmlc_fused_op_t* op = &f->ops[i];
      const void* in[3] = {NULL, NULL, NULL};
      int64_t stride[3] = {0, 0, 0};
      for (int a = 0; a < op->arg_count; ++a) {
        const int16_t arg = op->args[a];
        stride[a] = 1;
        if (arg >= 0) {
          in[a] = regs[arg];
          continue;
        }
        const uint32_t j = (uint32_t)(-arg - 1);
        switch (f->mode[j]) {
          case CMLC_FUSED_FULL:
            in[a] = (const char*)c->inputs[j] + (size_t)start * f->in_size[j];
            break;
          case CMLC_FUSED_SCALAR:
            in[a] = c->inputs[j];
            stride[a] = 0;
            break;
          default:
            in[a] = bcast[f->bcast_slot[j]];
            break;
        }
      }
      void* dst =
          op->dst >= 0 ? (void*)regs[op->dst] : (void*)(c->output + (size_t)start * f->out_size);
      if (op->fn) {
        op->fn(dst, in, stride, len);
        continue;
      }
      // ConvertDType: the SIMD loop its lookup picked, straight on this block (the input is a
      // register or the block's slice of a full input: a member has the group's dims), else
      // the runner's generic path on this block alone (inline, no pool).
      if (op->convert_impl) {
        ((cmlc_ew_convert_fn)op->convert_impl)(dst, in[0], len);
        continue;
      }
      int64_t dims[1] = {len};
      cml_shape_t si = cml_shape_make(op->from, 1, dims);
      cml_shape_t so = cml_shape_make(op->to, 1, dims);
      const cml_shape_t* is[1] = {&si};
      const cml_shape_t* oshape[1] = {&so};
      void* outs[1] = {dst};
      cmlc_kernel_args_t args = {
          .node = op->node,
          .options = c->options,
          .input_count = 1,
          .input_shapes = is,
          .inputs = in,
          .output_count = 1,
          .output_shapes = oshape,
          .outputs = outs,
          .impl = {op->convert_impl},
      };
      // Checked when the program was built (cmlc_ew_convert_supported): cannot fail.
      cml_status_free(cmlc_ew_run_convert(&args));
    }
  }
}

void cmlc_fused_run(const cmlc_fused_t* fused, const void* const* inputs, void* output,
                    const cmlc_options_t* options, cmlc_pool_t* pool) {
  if (fused->n == 0) return;
  cmlc_fused_ctx_t c = {fused, inputs, (char*)output, options};
  const int64_t blocks = (fused->n + CMLC_FUSED_BLOCK - 1) / CMLC_FUSED_BLOCK;
  if (blocks == 1) {
    cmlc_fused_task(&c, 0, 1, 0);
    return;
  }
  cmlc_parallel_for(pool, blocks, CMLC_FUSED_MIN_CHUNK_BLOCKS, cmlc_fused_task, &c);
}
