// SPDX-License-Identifier: Apache-2.0
// src/backends/c/exec.c: running a planned executable.
//
// An execution takes a context (the arena with every function's segment, and the table of value
// pointers) from the executable's free list, creating one only when none is free, so that
// steady-state executions allocate nothing but their output buffers. Arena and constant pointers
// are fixed when a context is created; parameters, captures and aliases are set as the
// functions run. Kernels run on the calling thread and split their work over the backend's
// pool themselves.
//
// Control flow: Call and If run the callee in its own segment and copy its outputs into the
// node's outputs. While keeps two copies of its state (the node's output slots are twice the
// state size): the body reads the current copy and computes its results straight into the
// other one (a result it only passes through is copied; one returned unchanged is not, and a
// state element the body returns as its own parameter has no slot: the node's output aliases
// the While's input, plan.c). Sort's
// comparator runs through cmlc_exec_call_function. One-element arithmetic, comparison and logical
// steps (SCALAR) run inline, which keeps a small loop body at a few ns per op.
//
// Cancellation and deadlines (cmlc_execute's |control|): checked before main, at every
// function entry, at every While iteration and before every kernel or fused step. A check is a
// relaxed atomic load; the clock is read every CMLC_CLOCK_EVERY checks and before heavy steps.
//
// Results: a returned kernel result was written straight into its output buffer; other
// outputs are copied into new buffers, except that an output that is a donated parameter of
// the same byte size takes over the parameter's storage.
//
// Thread-safety: many threads may execute one executable at once (each uses its own context).
#include <string.h>

#include "backends/c/engine_internal.h"
#include "backends/c/mpi_internal.h"

#if defined(__GNUC__) || defined(__clang__)
#define CMLC_NOINLINE __attribute__((noinline))
#else
#define CMLC_NOINLINE
#endif

struct cmlc_context_t {
  struct cmlc_context_t* next;
  cmlc_executable_t* exe;
  uint8_t* arena;
  size_t arena_bytes;
  void** ptrs;  // exe->pointer_count entries: value pointers, then per-function io scratch
  // Cancellation and deadline of the current execution (|controlled| false: neither).
  bool controlled;
  const int* cancelled;  // NULL: no token
  int64_t deadline_ns;   // 0: none
  uint32_t checks;       // polls since the clock was last read
  // SPMD: the execution's rendezvous (NULL outside SPMD; then |controlled| also polls it), this
  // context's device slot and the slot count.
  cmlc_rendezvous_t* rendezvous;
  int32_t replica;
  int32_t replica_count;
  // SPMD: the slot array and the rendezvous of the executions this context led (ran slot 0
  // of), kept for the next one (NULL until the first).
  void* spmd_slots;
  size_t spmd_slots_bytes;
  cmlc_rendezvous_t* spmd_rendezvous;
};

static void cmlc_context_destroy(cmlc_executable_t* exe, cmlc_context_t* ctx) {
  cml_allocator_t alloc = exe->backend->base.allocator;
  if (ctx->arena) cml_allocator_free(alloc, ctx->arena, ctx->arena_bytes);
  if (ctx->ptrs) cml_allocator_free(alloc, ctx->ptrs, sizeof(void*) * exe->pointer_count);
  if (ctx->spmd_slots) cml_allocator_free(alloc, ctx->spmd_slots, ctx->spmd_slots_bytes);
  cmlc_rendezvous_destroy(ctx->spmd_rendezvous);
  cml_allocator_free(alloc, ctx, sizeof *ctx);
}

static void* cmlc_value_fixed_pointer(const cmlc_executable_t* exe, const cmlc_context_t* ctx,
                                      uint32_t v) {
  const cmlc_value_plan_t* vp = &exe->values[v];
  switch (vp->storage) {
    case CMLC_STORAGE_ARENA:
      return ctx->arena + vp->arena_at;
    case CMLC_STORAGE_CONST:
      return vp->data ? (void*)vp->data : (void*)cmlc_empty_storage;
    case CMLC_STORAGE_EMPTY:
      return (void*)cmlc_empty_storage;
    default:
      return NULL;
  }
}

static cml_status_t cmlc_context_create(cmlc_executable_t* exe, cmlc_context_t** out_ctx) {
  cml_allocator_t alloc = exe->backend->base.allocator;
  cmlc_context_t* ctx = cml_allocator_malloc(alloc, sizeof *ctx, CMLC_ALIGNMENT);
  if (!ctx) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(ctx, 0, sizeof *ctx);
  ctx->exe = exe;
  ctx->ptrs = cml_allocator_malloc(alloc, sizeof(void*) * exe->pointer_count, CMLC_ALIGNMENT);
  if (exe->arena_size) {
    ctx->arena_bytes = exe->arena_size;
    ctx->arena = cml_allocator_malloc(alloc, exe->arena_size, CMLC_ALIGNMENT);
  }
  if (!ctx->ptrs || (exe->arena_size && !ctx->arena)) {
    cmlc_context_destroy(exe, ctx);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "c backend: cannot allocate an execution arena of %zu bytes for "
                           "module \"%s\"",
                           exe->arena_size, exe->module->name ? exe->module->name : "");
  }
  const cml_module_t* m = exe->module;
  memset(ctx->ptrs, 0, sizeof(void*) * exe->pointer_count);
  for (uint32_t v = 1; v < m->value_count; ++v)
    ctx->ptrs[v] = cmlc_value_fixed_pointer(exe, ctx, v);
  *out_ctx = ctx;
  return CML_OK;
}

static cml_status_t cmlc_context_acquire(cmlc_executable_t* exe, cmlc_context_t** out_ctx) {
  pthread_mutex_lock(&exe->mutex);
  cmlc_context_t* ctx = exe->free_contexts;
  if (ctx) exe->free_contexts = ctx->next;
  pthread_mutex_unlock(&exe->mutex);
  if (ctx) {
    *out_ctx = ctx;
    return CML_OK;
  }
  return cmlc_context_create(exe, out_ctx);
}

static void cmlc_context_release(cmlc_executable_t* exe, cmlc_context_t* ctx) {
  pthread_mutex_lock(&exe->mutex);
  ctx->next = exe->free_contexts;
  exe->free_contexts = ctx;
  pthread_mutex_unlock(&exe->mutex);
}

void cmlc_exec_free_contexts(cmlc_executable_t* exe) {
  cmlc_context_t* ctx = exe->free_contexts;
  exe->free_contexts = NULL;
  while (ctx) {
    cmlc_context_t* next = ctx->next;
    cmlc_context_destroy(exe, ctx);
    ctx = next;
  }
}

//===--- cancellation and deadlines ---===//

// The slow part of a poll: an atomic load of the token, and the clock every CMLC_CLOCK_EVERY
// polls (or now, when |read_clock|); under SPMD first whether another slot failed. |at| (may be
// NULL) is the op about to run, for the message.
static cml_status_t cmlc_poll_slow(cmlc_context_t* ctx, bool read_clock, const cml_ir_node_t* at) {
  if (ctx->rendezvous && cmlc_rendezvous_failed(ctx->rendezvous)) {
    return cml_status_make(CML_STATUS_CANCELLED,
                           "c backend: stopped because another device slot failed");
  }
  if (ctx->cancelled && __atomic_load_n(ctx->cancelled, __ATOMIC_RELAXED)) {
    return cml_status_make(CML_STATUS_CANCELLED,
                           "c backend: execution cancelled by its token%s%s%s", at ? " (at " : "",
                           at ? cml_op_name(at->op) : "", at ? ")" : "");
  }
  if (ctx->deadline_ns && (read_clock || (++ctx->checks & (CMLC_CLOCK_EVERY - 1)) == 0) &&
      cml_clock_monotonic_ns() >= ctx->deadline_ns) {
    return cml_status_make(CML_STATUS_DEADLINE_EXCEEDED,
                           "c backend: execution stopped at its deadline%s%s", at ? " before " : "",
                           at ? cml_op_name(at->op) : "");
  }
  return CML_OK;
}

// One branch when the execution has neither a token, nor a deadline, nor other device slots.
static inline cml_status_t cmlc_poll(cmlc_context_t* ctx, bool read_clock,
                                     const cml_ir_node_t* at) {
  return ctx->controlled ? cmlc_poll_slow(ctx, read_clock, at) : CML_OK;
}

//===--- running functions ---===//

// Runs function |fi|; |caller| (NULL for main and Sort's comparator) is the Call, If or While
// node running it, named when a stop is found at the function's entry.
static cml_status_t cmlc_run_function(cmlc_context_t* ctx, uint32_t fi,
                                      const cml_ir_node_t* caller);

// Runs a SCALAR step: one element in, one element out, C semantics (integers wrap in unsigned
// arithmetic), exactly as the elementwise kernels compute them.
static void cmlc_run_scalar(uint16_t code, const void* a, const void* b, void* out) {
#define CMLC_SC_CASE(OP, TYPE) ((OP)*CMLC_SCALAR_TYPES + (TYPE))
#define CMLC_SC_ARITH(TYPE, T, UT)                           \
  case CMLC_SC_CASE(CMLC_SCALAR_ADD, TYPE):                  \
    *(T*)out = (T)((UT) * (const T*)a + (UT) * (const T*)b); \
    return;                                                  \
  case CMLC_SC_CASE(CMLC_SCALAR_SUB, TYPE):                  \
    *(T*)out = (T)((UT) * (const T*)a - (UT) * (const T*)b); \
    return;                                                  \
  case CMLC_SC_CASE(CMLC_SCALAR_MUL, TYPE):                  \
    *(T*)out = (T)((UT) * (const T*)a * (UT) * (const T*)b); \
    return;
#define CMLC_SC_MAXMIN(TYPE, T)                                           \
  case CMLC_SC_CASE(CMLC_SCALAR_MAX, TYPE):                               \
    *(T*)out = *(const T*)a > *(const T*)b ? *(const T*)a : *(const T*)b; \
    return;                                                               \
  case CMLC_SC_CASE(CMLC_SCALAR_MIN, TYPE):                               \
    *(T*)out = *(const T*)a < *(const T*)b ? *(const T*)a : *(const T*)b; \
    return;
#define CMLC_SC_SINT(TYPE, T, TMIN)                                         \
  case CMLC_SC_CASE(CMLC_SCALAR_DIV, TYPE): {                               \
    const T x = *(const T*)a, y = *(const T*)b;                             \
    *(T*)out = y == 0 ? (T)-1 : (x == TMIN && y == -1) ? TMIN : (T)(x / y); \
    return;                                                                 \
  }                                                                         \
  case CMLC_SC_CASE(CMLC_SCALAR_REM, TYPE): {                               \
    const T x = *(const T*)a, y = *(const T*)b;                             \
    *(T*)out = y == 0 ? x : y == -1 ? (T)0 : (T)(x % y);                    \
    return;                                                                 \
  }                                                                         \
    CMLC_SC_MAXMIN(TYPE, T)
#define CMLC_SC_UINT(TYPE, T)                                                       \
  case CMLC_SC_CASE(CMLC_SCALAR_DIV, TYPE):                                         \
    *(T*)out = *(const T*)b == 0 ? (T) ~(T)0 : (T)(*(const T*)a / *(const T*)b);    \
    return;                                                                         \
  case CMLC_SC_CASE(CMLC_SCALAR_REM, TYPE):                                         \
    *(T*)out = *(const T*)b == 0 ? *(const T*)a : (T)(*(const T*)a % *(const T*)b); \
    return;                                                                         \
    CMLC_SC_MAXMIN(TYPE, T)
#define CMLC_SC_FLOAT(TYPE, T)                                      \
  case CMLC_SC_CASE(CMLC_SCALAR_DIV, TYPE):                         \
    *(T*)out = *(const T*)a / *(const T*)b;                         \
    return;                                                         \
  case CMLC_SC_CASE(CMLC_SCALAR_REM, TYPE):                         \
    *(T*)out = (T)fmod((double)*(const T*)a, (double)*(const T*)b); \
    return;
#define CMLC_SC_COMPARE(TYPE, T)                   \
  case CMLC_SC_CASE(CMLC_SCALAR_EQ, TYPE):         \
    *(uint8_t*)out = *(const T*)a == *(const T*)b; \
    return;                                        \
  case CMLC_SC_CASE(CMLC_SCALAR_NE, TYPE):         \
    *(uint8_t*)out = *(const T*)a != *(const T*)b; \
    return;                                        \
  case CMLC_SC_CASE(CMLC_SCALAR_LT, TYPE):         \
    *(uint8_t*)out = *(const T*)a < *(const T*)b;  \
    return;                                        \
  case CMLC_SC_CASE(CMLC_SCALAR_LE, TYPE):         \
    *(uint8_t*)out = *(const T*)a <= *(const T*)b; \
    return;                                        \
  case CMLC_SC_CASE(CMLC_SCALAR_GT, TYPE):         \
    *(uint8_t*)out = *(const T*)a > *(const T*)b;  \
    return;                                        \
  case CMLC_SC_CASE(CMLC_SCALAR_GE, TYPE):         \
    *(uint8_t*)out = *(const T*)a >= *(const T*)b; \
    return;
  switch (code) {
    CMLC_SC_ARITH(CMLC_SCALAR_I32, int32_t, uint32_t)
    CMLC_SC_ARITH(CMLC_SCALAR_I64, int64_t, uint64_t)
    CMLC_SC_ARITH(CMLC_SCALAR_U32, uint32_t, uint32_t)
    CMLC_SC_ARITH(CMLC_SCALAR_U64, uint64_t, uint64_t)
    CMLC_SC_ARITH(CMLC_SCALAR_F32, float, float)
    CMLC_SC_ARITH(CMLC_SCALAR_F64, double, double)
    CMLC_SC_SINT(CMLC_SCALAR_I32, int32_t, INT32_MIN)
    CMLC_SC_SINT(CMLC_SCALAR_I64, int64_t, INT64_MIN)
    CMLC_SC_UINT(CMLC_SCALAR_U32, uint32_t)
    CMLC_SC_UINT(CMLC_SCALAR_U64, uint64_t)
    CMLC_SC_FLOAT(CMLC_SCALAR_F32, float)
    CMLC_SC_FLOAT(CMLC_SCALAR_F64, double)
    CMLC_SC_COMPARE(CMLC_SCALAR_I32, int32_t)
    CMLC_SC_COMPARE(CMLC_SCALAR_I64, int64_t)
    CMLC_SC_COMPARE(CMLC_SCALAR_U32, uint32_t)
    CMLC_SC_COMPARE(CMLC_SCALAR_U64, uint64_t)
    CMLC_SC_COMPARE(CMLC_SCALAR_F32, float)
    CMLC_SC_COMPARE(CMLC_SCALAR_F64, double)
    // Bools are read as value != 0 (as the kernels do).
    case CMLC_SC_CASE(CMLC_SCALAR_EQ, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = (*(const uint8_t*)a != 0) == (*(const uint8_t*)b != 0);
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_NE, CMLC_SCALAR_BOOL):
    case CMLC_SC_CASE(CMLC_SCALAR_LXOR, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = (*(const uint8_t*)a != 0) != (*(const uint8_t*)b != 0);
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_LT, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = (*(const uint8_t*)a != 0) < (*(const uint8_t*)b != 0);
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_LE, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = (*(const uint8_t*)a != 0) <= (*(const uint8_t*)b != 0);
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_GT, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = (*(const uint8_t*)a != 0) > (*(const uint8_t*)b != 0);
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_GE, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = (*(const uint8_t*)a != 0) >= (*(const uint8_t*)b != 0);
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_LAND, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = *(const uint8_t*)a != 0 && *(const uint8_t*)b != 0;
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_LOR, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = *(const uint8_t*)a != 0 || *(const uint8_t*)b != 0;
      return;
    case CMLC_SC_CASE(CMLC_SCALAR_LNOT, CMLC_SCALAR_BOOL):
      *(uint8_t*)out = *(const uint8_t*)a == 0;
      return;
    default:
      return;  // plan.c only makes the codes above
  }
#undef CMLC_SC_COMPARE
#undef CMLC_SC_FLOAT
#undef CMLC_SC_UINT
#undef CMLC_SC_SINT
#undef CMLC_SC_MAXMIN
#undef CMLC_SC_ARITH
#undef CMLC_SC_CASE
}

// Points a closure's captures at its parent's values (which live in the current frame).
static void cmlc_bind_captures(cmlc_context_t* ctx, const cml_ir_function_t* f) {
  for (uint32_t c = 0; c < f->capture_count; ++c) {
    ctx->ptrs[f->captures_inner[c]] = ctx->ptrs[f->captures_outer[c]];
  }
}

// Copies a value; small ones (loop counters, scalars) without a library call.
static inline void cmlc_copy_value(void* dst, const void* src, size_t bytes) {
  if (dst == src) return;
  switch (bytes) {
    case 0:
      return;
    case 1:
      memcpy(dst, src, 1);
      return;
    case 2:
      memcpy(dst, src, 2);
      return;
    case 4:
      memcpy(dst, src, 4);
      return;
    case 8:
      memcpy(dst, src, 8);
      return;
    default:
      memmove(dst, src, bytes);
  }
}

// Runs |callee| and copies its outputs into the node's outputs.
static cml_status_t cmlc_run_and_copy(cmlc_context_t* ctx, const cml_ir_node_t* n,
                                      uint32_t callee) {
  const cmlc_executable_t* exe = ctx->exe;
  const cml_ir_function_t* cf = &exe->module->functions[callee];
  cmlc_bind_captures(ctx, cf);
  CML_RETURN_IF_ERROR(cmlc_run_function(ctx, callee, n));
  uint32_t count = n->output_count < cf->output_count ? n->output_count : cf->output_count;
  for (uint32_t o = 0; o < count; ++o) {
    uint32_t v = n->first_output + o;
    cmlc_copy_value(ctx->ptrs[v], ctx->ptrs[cf->outputs[o]], exe->values[v].bytes);
  }
  return CML_OK;
}

// The second half of While state element |i|'s slot, whose first half is at |a|: an element
// updated in place (bit i of |in_place|) has a single half (plan.c), which is both.
static inline uint8_t* cmlc_while_other_half(const cmlc_value_plan_t* state, uint32_t i,
                                             uint64_t in_place, uint8_t* a) {
  return i < 64 && (in_place >> i & 1) ? a : a + state[i].size / 2;
}

static cml_status_t cmlc_run_while(cmlc_context_t* ctx, const cmlc_function_plan_t* fp,
                                   const cmlc_step_t* step) {
  const cmlc_executable_t* exe = ctx->exe;
  const cml_module_t* m = exe->module;
  const cml_ir_node_t* n = step->node;
  const uint32_t cond_fi = n->attrs->functions[0], body_fi = n->attrs->functions[1];
  const cml_ir_function_t* cond = &m->functions[cond_fi];
  const cml_ir_function_t* body = &m->functions[body_fi];
  const uint32_t count = n->output_count;
  const uint32_t cond_params = count < cond->param_count ? count : cond->param_count;
  const uint32_t body_params = count < body->param_count ? count : body->param_count;
  const cmlc_value_plan_t* state = exe->values + n->first_output;
  void** const ptrs = ctx->ptrs;
  void** cur = ptrs + fp->io_offset;
  // The state starts in the inputs themselves (alive until this node ends; nobody writes them).
  for (uint32_t i = 0; i < count; ++i) cur[i] = ptrs[n->inputs[i]];
  // Captures point into this frame, which does not change while the loop runs: bind them once.
  cmlc_bind_captures(ctx, cond);
  cmlc_bind_captures(ctx, body);
  const uint64_t in_place = step->while_in_place;
  const uint8_t* go = NULL;
  cml_status_t st = CML_OK;
  for (;;) {
    // Each iteration is a stop point (an endless loop can be cancelled).
    st = cmlc_poll(ctx, false, n);
    if (st != CML_OK) break;
    for (uint32_t i = 0; i < cond_params; ++i) ptrs[cond->params[i]] = cur[i];
    st = cmlc_run_function(ctx, cond_fi, n);
    if (st != CML_OK) break;
    go = (const uint8_t*)ptrs[cond->outputs[0]];
    if (*go == 0) break;
    for (uint32_t i = 0; i < body_params; ++i) ptrs[body->params[i]] = cur[i];
    // The body's results would live in its segment, which its next run overwrites: each one
    // the body computes into the arena is produced straight into the half of the node's double
    // slot that the current state does not use (kernels write through the pointer table), so
    // no copy is needed. Results it does not write there (a parameter or alias passed through,
    // a value returned twice) are copied below.
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t rv = body->outputs[i];
      if (exe->values[rv].storage != CMLC_STORAGE_ARENA || state[i].bytes == 0) continue;
      uint8_t* a = ctx->arena + state[i].arena_at;
      uint8_t* b = cmlc_while_other_half(state, i, in_place, a);
      // An element updated in place stays in its half (never in the While's own input).
      if (i < 64 && (in_place >> i & 1) && (cur[i] == (void*)a || cur[i] == (void*)b)) {
        ptrs[rv] = cur[i];
      } else {
        ptrs[rv] = cur[i] == (void*)a ? (void*)b : (void*)a;
      }
    }
    st = cmlc_run_function(ctx, body_fi, n);
    if (st != CML_OK) break;
    for (uint32_t i = 0; i < count; ++i) {
      void* result = ptrs[body->outputs[i]];
      if (result == cur[i]) continue;
      uint8_t* a = ctx->arena + state[i].arena_at;
      uint8_t* b = cmlc_while_other_half(state, i, in_place, a);
      void* dst = cur[i] == (void*)a ? (void*)b : (void*)a;
      if (result != dst) cmlc_copy_value(dst, result, state[i].bytes);
      cur[i] = dst;
    }
  }
  // The body's results get their own places back (the next run of this node redirects again).
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t rv = body->outputs[i];
    if (exe->values[rv].storage == CMLC_STORAGE_ARENA) {
      ptrs[rv] = cmlc_value_fixed_pointer(exe, ctx, rv);
    }
  }
  if (st != CML_OK) return st;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t v = n->first_output + i;
    if (state[i].storage == CMLC_STORAGE_ALIAS) {  // returned unchanged: still the input
      ptrs[v] = cur[i];
      continue;
    }
    uint8_t* a = ctx->arena + state[i].arena_at;
    uint8_t* b = cmlc_while_other_half(state, i, in_place, a);
    if (cur[i] != (void*)a && cur[i] != (void*)b) {
      cmlc_copy_value(a, cur[i], state[i].bytes);
      cur[i] = a;
    }
    ptrs[v] = cur[i];
  }
  return CML_OK;
}

// Runs a KERNEL step. Kept out of cmlc_run_function (never inlined) so that the frame of the
// recursion over nested functions (Call, If, While, closures) stays small: a 256-deep nest
// runs on a 256 KiB stack.
CMLC_NOINLINE static cml_status_t cmlc_run_kernel(cmlc_context_t* ctx,
                                                  const cmlc_function_plan_t* fp,
                                                  const cmlc_step_t* step, uint8_t* segment) {
  cmlc_executable_t* exe = ctx->exe;
  const cml_ir_node_t* n = step->node;
  void** ptrs = ctx->ptrs;
  void** io = ptrs + fp->io_offset;
  // The node's inputs, or (operands read in parts) the values the plan lists instead.
  const uint32_t* in_values = step->inputs ? step->inputs : n->inputs;
  const uint32_t in_count = step->input_count;
  for (uint32_t k = 0; k < in_count; ++k) io[k] = ptrs[in_values[k]];
  for (uint32_t o = 0; o < n->output_count; ++o) io[in_count + o] = ptrs[n->first_output + o];
  cmlc_kernel_args_t args = {
      .module = exe->module,
      .node = n,
      .options = &exe->backend->options,
      .input_count = in_count,
      .input_shapes = step->shapes,
      .inputs = (const void* const*)io,
      .output_count = n->output_count,
      .output_shapes = step->shapes + in_count,
      .outputs = io + in_count,
      .input_parts = step->input_parts,
      .scratch = step->scratch_size ? segment + step->scratch_offset : NULL,
      .scratch_size = step->scratch_size,
      .pool = exe->backend->pool,
      .call_function = cmlc_exec_call_function,
      .exec = ctx,
      .rendezvous = ctx->rendezvous,
      .replica = ctx->replica,
      .replica_count = ctx->replica_count,
      .prepared = step->prepared,
  };
  memcpy(args.impl, step->entry.impl, sizeof args.impl);
  cml_status_t st = step->entry.run(&args);
  if (st != CML_OK) return cml_status_annotate(st, "c backend: %s", cml_op_name(n->op));
  return CML_OK;
}

static cml_status_t cmlc_run_function(cmlc_context_t* ctx, uint32_t fi,
                                      const cml_ir_node_t* caller) {
  cmlc_executable_t* exe = ctx->exe;
  const cml_module_t* m = exe->module;
  const cmlc_function_plan_t* fp = &exe->functions[fi];
  void** ptrs = ctx->ptrs;
  // A plan whose values all live outside the arena has no arena at all (NULL): never offset it.
  uint8_t* segment = ctx->arena ? ctx->arena + fp->arena_offset : NULL;
  // Function entry (Call, If branch, While condition and body, comparator) is a stop point.
  CML_RETURN_IF_ERROR(cmlc_poll(ctx, false, caller));
  for (uint32_t s = 0; s < fp->step_count; ++s) {
    const cmlc_step_t* step = &fp->steps[s];
    const cml_ir_node_t* n = step->node;
    // Steps that do work are stop points; cheap ones (scalar, alias, merged) need none, and
    // Call, If and While check at their callees' entry.
    if (ctx->controlled && (step->kind == CMLC_STEP_KERNEL || step->kind == CMLC_STEP_FUSED)) {
      CML_RETURN_IF_ERROR(cmlc_poll_slow(ctx, step->heavy, n));
    }
    switch (step->kind) {
      case CMLC_STEP_SCALAR:
        cmlc_run_scalar(step->scalar_code, ptrs[n->inputs[0]],
                        n->input_count > 1 ? ptrs[n->inputs[1]] : NULL, ptrs[n->first_output]);
        break;
      case CMLC_STEP_KERNEL:
        if (!step->idle) CML_RETURN_IF_ERROR(cmlc_run_kernel(ctx, fp, step, segment));
        break;
      case CMLC_STEP_ALIAS: {
        uint32_t count = n->op == CML_OP_SCHEDULING_BARRIER ? 1 : n->output_count;
        if (count > n->input_count) count = n->input_count;
        for (uint32_t o = 0; o < count; ++o) ptrs[n->first_output + o] = ptrs[n->inputs[o]];
        break;
      }
      case CMLC_STEP_MERGED: {
        const uint32_t src = step->source_node->first_output;
        for (uint32_t o = 0; o < n->output_count; ++o) ptrs[n->first_output + o] = ptrs[src + o];
        break;
      }
      case CMLC_STEP_FUSED: {
        void** io = ptrs + fp->io_offset;
        const uint32_t count = cmlc_fused_input_count(step->fused);
        const uint32_t* values = cmlc_fused_inputs(step->fused);
        for (uint32_t k = 0; k < count; ++k) io[k] = ptrs[values[k]];
        cml_status_t st = cmlc_fused_run(step->fused, (const void* const*)io, ptrs[n->first_output],
                                         &exe->backend->options, exe->backend->pool,
                                         step->scratch_size ? segment + step->scratch_offset : NULL,
                                         step->scratch_size);
        if (st != CML_OK) return cml_status_annotate(st, "c backend: fused %s", cml_op_name(n->op));
        break;
      }
      case CMLC_STEP_CALL: {
        uint32_t callee = n->attrs->functions[0];
        const cml_ir_function_t* cf = &m->functions[callee];
        for (uint32_t k = 0; k < n->input_count && k < cf->param_count; ++k) {
          ptrs[cf->params[k]] = ptrs[n->inputs[k]];
        }
        CML_RETURN_IF_ERROR(cmlc_run_and_copy(ctx, n, callee));
        break;
      }
      case CMLC_STEP_IF: {
        bool pred = *(const uint8_t*)ptrs[n->inputs[0]] != 0;
        CML_RETURN_IF_ERROR(cmlc_run_and_copy(ctx, n, n->attrs->functions[pred ? 0 : 1]));
        break;
      }
      case CMLC_STEP_WHILE:
        CML_RETURN_IF_ERROR(cmlc_run_while(ctx, fp, step));
        break;
      default:
        return cml_status_make(CML_STATUS_INTERNAL, "c backend: bad step kind %d", step->kind);
    }
  }
  return CML_OK;
}

cml_status_t cmlc_exec_call_function(void* exec, uint32_t function, const void* const* inputs,
                                     void* const* outputs) {
  cmlc_context_t* ctx = (cmlc_context_t*)exec;
  const cmlc_executable_t* exe = ctx->exe;
  const cml_module_t* m = exe->module;
  if (function >= m->function_count || !exe->functions[function].planned) {
    return cml_status_make(CML_STATUS_INTERNAL, "c backend: function %u was not planned", function);
  }
  const cml_ir_function_t* f = &m->functions[function];
  for (uint32_t k = 0; k < f->param_count; ++k) ctx->ptrs[f->params[k]] = (void*)inputs[k];
  cmlc_bind_captures(ctx, f);
  CML_RETURN_IF_ERROR(cmlc_run_function(ctx, function, NULL));
  for (uint32_t o = 0; o < f->output_count; ++o) {
    cmlc_copy_value(outputs[o], ctx->ptrs[f->outputs[o]], exe->values[f->outputs[o]].bytes);
  }
  return CML_OK;
}

//===--- execute ---===//

// One device slot of an execution: its context, inputs and results.
typedef struct cmlc_slot_t {
  cmlc_executable_t* exe;
  cmlc_context_t* ctx;  // NULL until acquired
  cml_buffer_t* const* inputs;
  const bool* donate;
  int device;  // the backend device its buffers live on
  cml_buffer_t** out_results;
  int32_t index;  // the slot (replica id)
  pthread_t thread;
  bool started;  // |thread| runs it
  bool remote;   // distributed=mpi: another process runs it (nothing of it exists here)
} cmlc_slot_t;

// Takes a context for |slot|, binds its parameters and creates the output buffers the kernels
// write into directly.
static cml_status_t cmlc_slot_prepare(cmlc_slot_t* slot, const cml_execute_control_t* control,
                                      cmlc_rendezvous_t* rendezvous, int32_t replica_count) {
  cmlc_executable_t* exe = slot->exe;
  const cml_module_t* m = exe->module;
  const cml_ir_function_t* main_fn = &m->functions[0];
  for (size_t o = 0; o < main_fn->output_count; ++o) slot->out_results[o] = NULL;
  if (!slot->ctx) CML_RETURN_IF_ERROR(cmlc_context_acquire(exe, &slot->ctx));
  cmlc_context_t* ctx = slot->ctx;
  ctx->cancelled = control ? control->cancelled : NULL;
  ctx->deadline_ns = control ? control->deadline_ns : 0;
  ctx->rendezvous = rendezvous;
  ctx->replica = slot->index;
  ctx->replica_count = replica_count;
  ctx->controlled = ctx->cancelled != NULL || ctx->deadline_ns != 0 || rendezvous != NULL;
  ctx->checks = 0;
  void** ptrs = ctx->ptrs;
  for (uint32_t k = 0; k < main_fn->param_count; ++k) {
    cmlc_buffer_t* b = (cmlc_buffer_t*)slot->inputs[k];
    ptrs[main_fn->params[k]] = b->data ? b->data : (void*)cmlc_empty_storage;
  }
  for (size_t o = 0; o < main_fn->output_count; ++o) {
    uint32_t v = main_fn->outputs[o];
    uint32_t r = v;
    while (exe->values[r].storage == CMLC_STORAGE_ALIAS) r = exe->values[r].index;
    if (exe->values[r].storage != CMLC_STORAGE_OUTPUT || exe->values[r].index != o) continue;
    cmlc_buffer_t* b = NULL;
    CML_RETURN_IF_ERROR(
        cmlc_buffer_create(exe->backend, slot->device, &m->values[v].shape, false, &b));
    slot->out_results[o] = &b->base;
    ptrs[r] = b->data;
  }
  // Concatenate operands computed in place in an output buffer.
  for (uint32_t k = 0; k < exe->out_part_count; ++k) {
    const cmlc_value_plan_t* vp = &exe->values[exe->out_parts[k]];
    ptrs[exe->out_parts[k]] = (uint8_t*)ptrs[vp->index] + vp->offset;
  }
  return CML_OK;
}

// Runs main in |slot|'s context, in the kernels' floating-point environment.
static cml_status_t cmlc_slot_run(cmlc_slot_t* slot) {
  CML_RETURN_IF_ERROR(cmlc_poll(slot->ctx, true, NULL));
  const uint32_t fpenv = cml__fpenv_enter(cmlc_fpenv_of(&slot->exe->backend->options));
  cml_status_t st = cmlc_run_function(slot->ctx, 0, NULL);
  cml__fpenv_leave(fpenv);
  return st;
}

// The outputs main did not write into their buffers: take a donated parameter's storage, or
// copy.
static cml_status_t cmlc_slot_collect(cmlc_slot_t* slot) {
  cmlc_executable_t* exe = slot->exe;
  const cml_module_t* m = exe->module;
  const cml_ir_function_t* main_fn = &m->functions[0];
  void** ptrs = slot->ctx->ptrs;
  for (size_t o = 0; o < main_fn->output_count; ++o) {
    if (slot->out_results[o]) continue;
    uint32_t v = main_fn->outputs[o];
    uint32_t r = v;
    while (exe->values[r].storage == CMLC_STORAGE_ALIAS) r = exe->values[r].index;
    const cml_shape_t* shape = &m->values[v].shape;
    size_t bytes = cml_shape_byte_size(shape);
    cmlc_buffer_t* b = NULL;
    if (exe->values[r].storage == CMLC_STORAGE_PARAM && slot->donate) {
      uint32_t p = exe->values[r].index;
      cmlc_buffer_t* in = (cmlc_buffer_t*)slot->inputs[p];
      if (slot->donate[p] && !in->base.shared && in->data && in->data == ptrs[v] &&
          cml_shape_byte_size(&in->base.shape) == bytes) {
        CML_RETURN_IF_ERROR(
            cmlc_buffer_wrap(exe->backend, slot->device, shape, in->data, in->size, &b));
        in->data = NULL;  // the storage moved to the output (back if the execution fails)
        b->donor = in;
      }
    }
    if (!b) {
      CML_RETURN_IF_ERROR(cmlc_buffer_create(exe->backend, slot->device, shape, false, &b));
      if (bytes) memcpy(b->data, ptrs[v], bytes);
    }
    slot->out_results[o] = &b->base;
  }
  return CML_OK;
}

// Returns the context to the free list and, when the execution failed, frees the outputs.
static void cmlc_slot_release(cmlc_slot_t* slot, bool ok) {
  const size_t out_count = slot->exe->module->functions[0].output_count;
  if (slot->ctx) {
    slot->ctx->rendezvous = NULL;
    cmlc_context_release(slot->exe, slot->ctx);
    slot->ctx = NULL;
  }
  for (size_t o = 0; o < out_count; ++o) {
    cmlc_buffer_t* b = (cmlc_buffer_t*)slot->out_results[o];
    if (!b) continue;
    if (!ok && b->donor) {
      // A donated input's storage taken by this output goes back: the core hands a failed
      // execution's donated inputs back valid, and they must hold what they held.
      b->donor->data = b->data;
      b->data = NULL;
    }
    b->donor = NULL;
    if (ok) continue;
    cmlc_buffer_free(&b->base);
    slot->out_results[o] = NULL;
  }
}

// A slot thread (or the caller, for slot 0): runs the program and reports to the rendezvous.
// Its kernels use its share of the pool: threads / slots, the first threads % slots slots one
// more (at least 1), so that the slots together never run more threads than the pool has.
static void* cmlc_slot_main(void* arg) {
  cmlc_slot_t* slot = (cmlc_slot_t*)arg;
  cmlc_rendezvous_t* rendezvous = slot->ctx->rendezvous;
  const int threads = cmlc_pool_thread_count(slot->exe->backend->pool);
  const int slots = slot->ctx->replica_count > 0 ? slot->ctx->replica_count : 1;
  int share = threads / slots + (slot->index < threads % slots ? 1 : 0);
  const int saved_share = cmlc_pool_set_share(share < 1 ? 1 : share);
  cml_status_t st = cmlc_slot_run(slot);
  (void)cmlc_pool_set_share(saved_share);
  if (st != CML_OK) {
    cmlc_rendezvous_fail(rendezvous, slot->index, st);
  } else {
    cmlc_rendezvous_slot_done(rendezvous, slot->index);
  }
  return NULL;
}

// The least stack a slot thread gets (functions nest by recursion on it; see docs/engine.md).
#define CMLC_SLOT_STACK_BYTES ((size_t)8 << 20)

// Runs the module's num_devices slots concurrently: slot 0 on the calling thread, the others on
// the backend's persistent slot threads (crew.c), or on threads started for this execution when
// another execution holds them (slots block at collectives, so they cannot be pool tasks; their
// kernels share the backend's pool). Inputs and results are device-major. The first slot that
// runs here holds the lead context: it keeps the slot array and the rendezvous for its next
// execution. Under distributed=mpi only the slots of this process's devices run (the first on
// the calling thread); the others count as finished for the rendezvous, their entries stay
// NULL, and a failure is announced to the other processes.
static cml_status_t cmlc_execute_spmd(cmlc_executable_t* exe, cml_buffer_t* const* inputs,
                                      const bool* donate, const cml_execute_control_t* control,
                                      cml_buffer_t** out_results) {
  const cml_module_t* m = exe->module;
  const cml_ir_function_t* main_fn = &m->functions[0];
  const int32_t n = m->num_devices;
  const size_t in_count = main_fn->param_count, out_count = main_fn->output_count;
  cml_allocator_t alloc = exe->backend->base.allocator;
  for (size_t o = 0; o < (size_t)n * out_count; ++o) out_results[o] = NULL;
  cmlc_context_t* lead = NULL;
  CML_RETURN_IF_ERROR(cmlc_context_acquire(exe, &lead));
  cml_status_t st = CML_OK;
  if (!lead->spmd_slots) {
    lead->spmd_slots = cml_allocator_malloc(alloc, sizeof(cmlc_slot_t) * (size_t)n, CMLC_ALIGNMENT);
    if (lead->spmd_slots) lead->spmd_slots_bytes = sizeof(cmlc_slot_t) * (size_t)n;
  }
  if (!lead->spmd_rendezvous) {
    st = cmlc_rendezvous_create(exe, control, &lead->spmd_rendezvous);
  } else {
    cmlc_rendezvous_reset(lead->spmd_rendezvous, control);
  }
  if (st == CML_OK && !lead->spmd_slots) {
    st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  if (st != CML_OK) {
    cmlc_context_release(exe, lead);
    return st;
  }
  cmlc_slot_t* slots = (cmlc_slot_t*)lead->spmd_slots;
  cmlc_rendezvous_t* rendezvous = lead->spmd_rendezvous;
  if (exe->backend->options.process_count > 1) {
    cmlc_rendezvous_set_launch(rendezvous,
                               __atomic_fetch_add(&exe->mpi_launches, 1, __ATOMIC_RELAXED));
  }
  memset(slots, 0, sizeof *slots * (size_t)n);
  const cmlc_options_t* options = &exe->backend->options;
  int32_t first = -1;  // the first slot that runs here; it holds the lead context
  for (int32_t j = 0; j < n; ++j) {
    cmlc_slot_t* slot = &slots[j];
    slot->exe = exe;
    slot->index = j;
    slot->inputs = inputs ? inputs + (size_t)j * in_count : NULL;  // NULL with no inputs
    slot->donate = donate ? donate + (size_t)j * in_count : NULL;
    slot->device = m->device_assignment ? m->device_assignment[j] : j;
    slot->remote = options->process_count > 1 &&
                   cmlc_mpi_device_process(options, slot->device) != options->process_index;
    if (slot->remote) {
      if (st == CML_OK) cmlc_rendezvous_slot_done(rendezvous, j);
      continue;
    }
    if (first < 0) {
      first = j;
      slot->ctx = lead;
    }
    slot->out_results = out_results + (size_t)j * out_count;
    if (st == CML_OK) st = cmlc_slot_prepare(slot, control, rendezvous, n);
  }
  if (st == CML_OK && first >= 0) {
    // The backend's persistent slot threads when they are free, else threads of our own.
    void* jobs_local[16];
    void** jobs =
        n - 1 <= 16 ? jobs_local
                    : cml_allocator_malloc(alloc, sizeof(void*) * (size_t)(n - 1), CMLC_ALIGNMENT);
    bool crew = false;
    int32_t job_count = 0;
    if (jobs) {
      for (int32_t j = first + 1; j < n; ++j) {
        if (!slots[j].remote) jobs[job_count++] = &slots[j];
      }
      crew = job_count == 0 ||
             cmlc_crew_start(exe->backend->crew, cmlc_slot_main, jobs, (int)job_count);
    }
    if (!crew) {
      for (int32_t j = first + 1; j < n; ++j) {
        if (slots[j].remote) continue;
        int rc =
            cmlc_thread_start(&slots[j].thread, cmlc_slot_main, &slots[j], CMLC_SLOT_STACK_BYTES);
        if (rc != 0) {
          // The slots already running stop at their next poll or wait.
          cmlc_rendezvous_fail(
              rendezvous, j,
              cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                              "cannot start a thread for the slot: %s", strerror(rc)));
          break;
        }
        slots[j].started = true;
      }
    }
    if (!cmlc_rendezvous_failed(rendezvous)) cmlc_slot_main(&slots[first]);
    if (crew && job_count > 0) cmlc_crew_wait(exe->backend->crew);
    for (int32_t j = 1; j < n; ++j) {
      if (slots[j].started) pthread_join(slots[j].thread, NULL);
    }
    if (jobs && jobs != jobs_local) {
      cml_allocator_free(alloc, jobs, sizeof(void*) * (size_t)(n - 1));
    }
    st = cmlc_rendezvous_take_failure(rendezvous);
  }
  // Every slot thread has ended: the contexts and buffers may go; the lead's last, since the
  // slot array is its own (another execution may take it as soon as it is released).
  for (int32_t j = 0; st == CML_OK && j < n; ++j) {
    if (!slots[j].remote) st = cmlc_slot_collect(&slots[j]);
  }
  cmlc_mpi_execution_failed(exe->backend, st);  // the other processes stop too
  if (first < 0) {
    cmlc_context_release(exe, lead);
    return st;
  }
  for (int32_t j = n - 1; j >= 0; --j) {
    if (j != first && slots[j].out_results) cmlc_slot_release(&slots[j], st == CML_OK);
  }
  cmlc_slot_t lead_slot = slots[first];
  cmlc_slot_release(&lead_slot, st == CML_OK);
  return st;
}

cml_status_t cmlc_execute(cmlc_executable_t* exe, cml_buffer_t* const* inputs, const bool* donate,
                          int device, const cml_execute_control_t* control,
                          cml_buffer_t** out_results) {
  if (exe->module->num_devices > 1) {
    return cmlc_execute_spmd(exe, inputs, donate, control, out_results);
  }
  cmlc_slot_t slot = {
      .exe = exe,
      .inputs = inputs,
      .donate = donate,
      .device = device,
      .out_results = out_results,
  };
  cml_status_t st = cmlc_slot_prepare(&slot, control, NULL, 1);
  if (st == CML_OK) st = cmlc_slot_run(&slot);
  if (st == CML_OK) st = cmlc_slot_collect(&slot);
  cmlc_slot_release(&slot, st == CML_OK);
  return st;
}
