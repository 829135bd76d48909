// SPDX-License-Identifier: Apache-2.0
// src/backends/c/cmlc.h: the C backend's internal interfaces: kernels, their dispatch table,
// the thread pool and CPU features. Symbol prefix: cmlc_.
//
// Kernels follow IREE's ukernel rules: pure functions over pointers, no allocation, no globals,
// reentrant. A kernel gets the node (its attributes), the shapes and data pointers of its inputs
// and outputs, a scratch area sized at compile time by its scratch function, and the pool.
// Splitting work: a kernel calls cmlc_parallel_for with a range and a minimum chunk; small ops
// stay on the calling thread. Results must not depend on the thread count.
//
// Each kernel group exports one lookup function; the engine asks the groups in turn when it
// compiles a node. Files: kernels/generic/<group>.c (scalar reference), kernels/x86_64/...
// (SIMD, picked with the ISA in cmlc_kernel_args_t / at lookup).
#ifndef CML_BACKENDS_C_CMLC_H_
#define CML_BACKENDS_C_CMLC_H_

#include <math.h>
#include <stdint.h>

#include "cml/backend_impl.h"
#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- CPU features ---===//

// Defined when the x86-64 SIMD kernels (kernels/x86_64/) are compiled in: x86-64 with GCC or
// Clang. The one test of the target every kernel file uses.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CMLC_HAVE_X86_64 1
#endif

typedef enum cmlc_isa_t {
  CMLC_ISA_SCALAR = 0,
  CMLC_ISA_AVX2 = 1,    // AVX2 + FMA + F16C
  CMLC_ISA_AVX512 = 2,  // AVX-512F (+BW, VL, DQ) and everything of AVX2
} cmlc_isa_t;

typedef struct cmlc_options_t {
  cmlc_isa_t isa;              // the best ISA allowed (CPU features & GOMLX_SIMD_* & config)
  bool avx512_bf16;            // AVX-512 BF16 usable
  bool avx512_vnni;            // AVX-512 VNNI usable
  int64_t l1d_bytes;           // a core's L1 data cache with the AVX-512 ISA (0: unknown)
  bool fusion;                 // GOMLX_FUSION / config
  bool reference;              // reference=true: scalar kernels, no fusion
  bool quant_int8;             // quant_int8=true: batch-1 GGML products with int8 activations
  bool flush_denormals;        // flush_denormals=true: FTZ while kernels run
  int threads;                 // worker threads incl. the caller
  int devices;                 // virtual CPU devices (of this process)
  int dynamic_cache;           // specialized plans kept per dynamic executable (c:dynamic_cache)
  int64_t buffer_cache_bytes;  // released buffer storage kept for reuse (c:buffer_cache_mb)
  // c:distributed=mpi: this process's rank and the process count (0 and 0 or 1 otherwise).
  int process_index;
  int process_count;
} cmlc_options_t;

//===--- thread pool ---===//

typedef struct cmlc_pool_t cmlc_pool_t;

// Runs fn(ctx, begin, end, thread_index) over [0, n) in chunks of at least |min_chunk|
// (>= 1), on the pool's workers and the calling thread, and returns when all are done.
// |pool| may be NULL (runs inline as one chunk). Safe to call from several threads at once
// (callers share the workers); nested calls from inside a task run inline.
// With a pool, chunk boundaries depend only on |n| and |min_chunk| (at most 64 chunks of
// max(min_chunk, ceil(n / 64)) elements), never on the thread count, and thread_index is
// below cmlc_pool_thread_count(pool) and unique among the threads running one call's chunks.
typedef void (*cmlc_task_fn)(void* ctx, int64_t begin, int64_t end, int thread_index);
void cmlc_parallel_for(cmlc_pool_t* pool, int64_t n, int64_t min_chunk, cmlc_task_fn fn, void* ctx);
int cmlc_pool_thread_count(const cmlc_pool_t* pool);  // 1 for NULL
// Limits the jobs the calling thread publishes to |threads| threads of the pool, itself
// included (1: every range runs inline; 0: the whole pool); returns the previous share. The
// device slots of an SPMD execution split the pool this way. Chunk boundaries do not change.
int cmlc_pool_set_share(int threads);

// Moves the calling thread off CPU |cpu| when it runs there (Linux, with more than one CPU in
// its affinity mask, at most once every 200 us per |*last_move_ns|, a per-thread timestamp
// starting at 0): the mask is narrowed for a moment and restored. Returns whether it moved. A
// pool worker does this when it finds itself on its caller's CPU (see threadpool.c).
bool cmlc_pool_leave_cpu(int cpu, uint64_t* last_move_ns);

cml_status_t cmlc_pool_create(int threads, cml_allocator_t allocator, cmlc_pool_t** out_pool);
void cmlc_pool_destroy(cmlc_pool_t* pool);

//===--- SPMD rendezvous (spmd.c) ---===//
// An SPMD execution runs its N device slots concurrently, one thread each, and shares one
// rendezvous among them. A collective kernel meets the other members of its replica group in a
// *round*: every member publishes a pointer (its cmlc_kernel_args_t, through which the others
// read its inputs and write its outputs), waits until all have arrived, does its share of the
// work, and waits again in cmlc_round_finish until every member is done with everybody's data.
// A round is keyed by the node, the group and how many times this slot ran the node before
// (each While iteration is a new round).
//
// Nothing waits forever: when a slot fails, is cancelled or passes its deadline, every waiting
// slot wakes and fails; when a member of a group finished its program without reaching the
// round, or when every unfinished slot waits at a round that cannot complete, the execution
// fails with FAILED_PRECONDITION naming the op and the slots (XLA would hang there).

typedef struct cmlc_rendezvous_t cmlc_rendezvous_t;
typedef struct cmlc_round_t cmlc_round_t;

// Joins the round of |node| for group |members| (|member_count| device slots, this slot at
// |position|), publishing |contribution|, and waits until every member arrived. On success the
// caller must call cmlc_round_finish once. On failure (another slot failed, a stop, a member
// that can never come) the caller owns the returned status and must not touch the round.
CML_MUST_USE cml_status_t cmlc_round_join(cmlc_rendezvous_t* rendezvous, const cml_ir_node_t* node,
                                          int32_t slot, const int32_t* members,
                                          int32_t member_count, int32_t position,
                                          const void* contribution, cmlc_round_t** out_round);
// The contribution of the member at |position| of a joined round.
const void* cmlc_round_contribution(const cmlc_round_t* round, int32_t position);
// Waits until every member of the round called this (then the round's data may be reused).
// Never fails and never waits on a slot that is not inside the round.
void cmlc_round_finish(cmlc_rendezvous_t* rendezvous, cmlc_round_t* round);
// distributed=mpi: the stamp of the next cross-process collective that this process runs in
// the execution (|node|; called by one thread per execution, in program order): the module's
// fingerprint, the execution's number and the collective's place in it and node, mixed, so
// every process computes the same stamp for the same collective and a different one where
// they diverged. |label| (|size| bytes) receives how messages name it.
uint64_t cmlc_rendezvous_mpi_stamp(cmlc_rendezvous_t* rendezvous, const cml_ir_node_t* node,
                                   char* label, size_t size);

//===--- kernels ---===//

// An inner loop a group picks at plan time (cast back to its own type by the group's runner).
typedef void (*cmlc_impl_fn)(void);
#define CMLC_IMPL_SLOTS 3

typedef struct cmlc_kernel_args_t {
  const cml_module_t* module;
  const cml_ir_node_t* node;
  const cmlc_options_t* options;
  uint32_t input_count;
  const cml_shape_t* const* input_shapes;
  const void* const* inputs;
  uint32_t output_count;
  const cml_shape_t* const* output_shapes;
  void* const* outputs;  // never aliasing an input unless the kernel's entry allows in_place
  void* scratch;         // 64-byte aligned, size from the entry's scratch function
  size_t scratch_size;
  cmlc_pool_t* pool;
  // For ops that run functions (Sort's comparator): runs |function| of the module with
  // |inputs| (one pointer per parameter) writing |outputs| (one per function output).
  cml_status_t (*call_function)(void* exec, uint32_t function, const void* const* inputs,
                                void* const* outputs);
  void* exec;
  // entry.impl, copied by whoever runs the entry (the engine, the folder, a test fixture).
  cmlc_impl_fn impl[CMLC_IMPL_SLOTS];
  // What entry.prepare made from this node's constant inputs when the plan was built, or NULL
  // (no prepare, no constant input, or a runner outside the engine): the kernel must give the
  // same results either way. Read-only; shared by every execution of the executable.
  const void* prepared;
  // SPMD: this device slot (the replica id), the number of slots and the execution's
  // rendezvous (NULL, 0 and 1 outside SPMD).
  cmlc_rendezvous_t* rendezvous;
  int32_t replica;
  int32_t replica_count;
  // NULL, or per node input: how many consecutive entries of |inputs| / |input_shapes| hold it
  // (1: the value itself; n > 1: the n operands of a Concatenate that the planner left unrun
  // because this kernel reads the parts in place, see opt.c). input_count counts the entries.
  // Only kernels that ask for it (FusedScaledDotProductAttention's k and v) get it.
  const uint32_t* input_parts;
} cmlc_kernel_args_t;

typedef cml_status_t (*cmlc_kernel_fn)(const cmlc_kernel_args_t* args);
typedef size_t (*cmlc_scratch_fn)(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options);

typedef struct cmlc_kernel_entry_t {
  cmlc_kernel_fn run;
  cmlc_scratch_fn scratch;  // NULL: no scratch
  // Output 0 may share storage with input |in_place_input| (-1: never). Elementwise kernels
  // that read each element before writing it set this to let the planner reuse buffers.
  int in_place_input;
  // Every output o may share storage with input o (AllReduce of several operands: each
  // result may take its dying operand's storage).
  bool in_place_each;
  // Inner loops the group's lookup picked for options->isa, once, when the plan is made (the
  // runner never looks at the ISA): the meaning of each slot is the group's; NULL slots mean
  // "none" (e.g. no SIMD variant for this op and dtype).
  cmlc_impl_fn impl[CMLC_IMPL_SLOTS];
  // Optional (NULL: none): data the kernel derives once from inputs that are constants of the
  // module (e.g. a weight packed for the GEMM). |consts|[i] is input i's data when it is a
  // constant (a Constant or folded value), else NULL. With |dst| NULL returns the bytes it
  // needs (0: nothing to prepare); then the engine calls it again with |dst| (that many bytes,
  // 64-byte aligned, owned by the executable) to fill it, and passes |dst| to every run as
  // args->prepared. Called at plan time only.
  size_t (*prepare)(const cml_module_t* module, const cml_ir_node_t* node,
                    const cmlc_options_t* options, const void* const* consts, void* dst);
  // Call |prepare| even when no input is a constant (what it derives comes from the module's
  // structure: Sort's read prefix).
  bool prepare_always;
  // Optional (NULL: none): writes a short description of the way the kernel runs this node
  // (e.g. which convolution kernel) into |buf| (NUL-terminated, at most |size| bytes), for
  // cml_executable_dump's plan listing.
  void (*describe)(const cml_module_t* module, const cml_ir_node_t* node,
                   const cmlc_options_t* options, char* buf, size_t size);
} cmlc_kernel_entry_t;

// Group lookups: fill |out| and return true when the group implements |node| (its op and
// dtypes) for |options|. A group that does not know the op returns false; one that knows the
// op but not the dtype also returns false (the engine then reports UNIMPLEMENTED).
bool cmlc_kernels_elementwise_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                     const cmlc_options_t* options, cmlc_kernel_entry_t* out);
bool cmlc_kernels_reduce_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out);
bool cmlc_kernels_movement_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options, cmlc_kernel_entry_t* out);
bool cmlc_kernels_index_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, cmlc_kernel_entry_t* out);
bool cmlc_kernels_window_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out);
bool cmlc_kernels_linalg_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out);
bool cmlc_kernels_special_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                 const cmlc_options_t* options, cmlc_kernel_entry_t* out);
// The collectives (kernels/generic/collective.c): AllReduce, AllGather, ReduceScatter, AllToAll,
// CollectivePermute, CollectiveBroadcast over the SPMD rendezvous, ReplicaId, PartitionId.
bool cmlc_kernels_collective_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                    const cmlc_options_t* options, cmlc_kernel_entry_t* out);
// The same ops when options->process_count > 1 (c:distributed=mpi; mpi_collective.c): groups
// may span processes.
bool cmlc_mpi_collective_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out);

// Ops each group supports, for the backend's capability table: every op of the group in ops.def
// (cmlc_kernels_group_capabilities); the group's lookup must find a kernel for each of them and
// each dtype of its ops.def dtype set (tests/unit/op_table_test.c checks it).
void cmlc_kernels_group_capabilities(cml_capabilities_t* caps, cml_op_group_t group);
void cmlc_kernels_elementwise_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_reduce_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_movement_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_index_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_window_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_linalg_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_special_capabilities(cml_capabilities_t* caps);
void cmlc_kernels_collective_capabilities(cml_capabilities_t* caps);
// The fused group (kernels/generic/fused.c): advertises FusedSoftmax, FusedGelu,
// FusedLayerNorm and FusedDense only when |options| enable fusion and not the reference kernels
// (otherwise the builder decomposes them into standard ops).
bool cmlc_kernels_fused_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, cmlc_kernel_entry_t* out);
void cmlc_kernels_fused_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options);

// A group's lookup, as the dispatch table (src/backends/c/dispatch.c) holds it.
typedef bool (*cmlc_group_lookup_fn)(const cml_module_t* module, const cml_ir_node_t* node,
                                     const cmlc_options_t* options, cmlc_kernel_entry_t* out);
// The kernel for |node| from the group ops.def gives its op (false: none for its op or dtypes).
bool cmlc_dispatch_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                          const cmlc_options_t* options, cmlc_kernel_entry_t* out);
// Every op the backend runs with |options|, from the same table: the kernel groups' ops, the
// engine's groups (sources, control flow) and the fused ops |options| enable.
void cmlc_dispatch_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options);

//===--- small shared helpers ---===//
// (Strides and the dtype traits table: kernels/common.h.)

// Float -> integer as ConvertDType does it (XLA's semantics): truncation toward zero,
// saturating at [lo, hi] (or [0, hi] for unsigned), NaN -> 0. Shared by the conversion kernels
// and by DotGeneral/ConvGeneral outputs of integer dtype.
static inline int64_t cmlc_f64_to_signed(double d, int64_t lo, int64_t hi) {
  if (isnan(d)) return 0;
  if (d <= (double)lo) return lo;
  if (d >= (double)hi) return hi;  // (double)INT64_MAX is 2^63: out of range exactly there
  return (int64_t)d;
}
static inline uint64_t cmlc_f64_to_unsigned(double d, uint64_t hi) {
  if (isnan(d) || d <= 0) return 0;
  if (d >= (double)hi) return hi;
  return (uint64_t)d;
}

// Scratch and arena sizes that saturate at SIZE_MAX instead of wrapping. On wasm32 (32-bit
// size_t) a scratch of 4 GiB or more wrapped to a small size, the kernel's own check computed
// the same wrapped size and passed, and the kernel wrote past its scratch (a trap). A saturated
// size makes the planner's arena SIZE_MAX, whose allocation fails with RESOURCE_EXHAUSTED
// before any kernel runs. |count| < 0 counts as 0.
static inline size_t cmlc_size_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}
static inline size_t cmlc_size_mul(size_t a, size_t b) {
  return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}
// |count| elements of |bytes| each (count an int64_t element count or product of dims).
static inline size_t cmlc_size_of(int64_t count, size_t bytes) {
  if (count <= 0) return 0;
  return (uint64_t)count > (uint64_t)SIZE_MAX ? SIZE_MAX : cmlc_size_mul((size_t)count, bytes);
}
// |n| rounded up to a multiple of |align| (a power of two), SIZE_MAX when that overflows.
static inline size_t cmlc_size_align(size_t n, size_t align) {
  return n > SIZE_MAX - (align - 1) ? SIZE_MAX : (n + align - 1) & ~(align - 1);
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_CMLC_H_
