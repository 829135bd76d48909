// SPDX-License-Identifier: Apache-2.0
// src/backends/c/engine_internal.h: internals of the C backend's engine (backend object, buffers,
// compiled plans, optimizations, execution contexts) shared by backend.c, plan.c, opt.c,
// loop_fusion.c, exec.c, sort.c, cpu.c and threadpool.c. Kernel groups never include this file;
// they only see cmlc.h.
//
// Thread-safety: a cmlc_backend_t and a cmlc_executable_t are thread-safe once created (the
// executable is immutable except for its mutex-protected free list of execution contexts); an
// execution context belongs to one execute call at a time.
#ifndef CML_BACKENDS_C_ENGINE_INTERNAL_H_
#define CML_BACKENDS_C_ENGINE_INTERNAL_H_

#include <pthread.h>

#include "backends/c/cmlc.h"
#include "base/base_internal.h"

#ifdef __cplusplus
extern "C" {
#endif
// Starts a thread running fn(arg) with a stack of at least |min_stack| bytes (the libc default
// when larger). Returns 0 or an errno value; ENOTSUP on targets without threads (wasm32-wasi).
// Every thread the c backend starts (pool workers, SPMD slots) goes through here.
int cmlc_thread_start(pthread_t* thread, void* (*fn)(void*), void* arg, size_t min_stack);
// Names the calling thread (at most 15 characters; Linux with glibc, else nothing), so that
// profilers and debuggers tell the backend's threads apart: "cml-pool", "cml-device".
void cmlc_thread_name(const char* name);

// Alignment of buffers, arena segments and every arena slot.
#define CMLC_ALIGNMENT 64

// The "c" backend's factory (registered by the core's register_builtin.c).
extern const cml_backend_factory_t cml_c_backend_factory;

// The floating-point control bits kernels run with (base_internal.h): IEEE, or with denormal
// results flushed to zero under c:flush_denormals=true (FTZ, as XLA's CPU runtime; XLA also
// reads denormal inputs as zero, DAZ, which would make the kernels' exact handling of denormal
// inputs, such as log's scaling by 2^23, compute from a zero). x86-64 only: elsewhere the
// option is refused (backend.c).
static inline uint32_t cmlc_fpenv_of(const cmlc_options_t* options) {
  return CML__FPENV_IEEE | (options->flush_denormals ? CML__FPENV_FTZ : 0u);
}

//===--- CPU features (cpu.c) ---===//

typedef struct cmlc_cpu_features_t {
  bool avx2_fma;      // AVX2 and FMA
  bool f16c;          // F16C (the elementwise SIMD kernels' f16 conversions need it)
  bool avx512;        // AVX-512 F, BW, VL and DQ
  bool avx512_bf16;   // AVX-512 BF16
  bool avx512_vnni;   // AVX-512 VNNI
  int64_t l1d_bytes;  // a core's L1 data cache (0: unknown)
} cmlc_cpu_features_t;

// Detects the features of the CPU this process runs on (cheap; no global state).
void cmlc_cpu_detect(cmlc_cpu_features_t* out_features);

// Picks options.isa / avx512_bf16 / avx512_vnni from |features| and what the user allows
// (|allow_avx512|, |allow_avx2|, |reference|): the best ISA the CPU has and the user allows;
// reference mode is always scalar.
void cmlc_options_select_isa(const cmlc_cpu_features_t* features, bool allow_avx512,
                             bool allow_avx2, bool reference, cmlc_options_t* options);

// "avx512", "avx2" or "scalar".
const char* cmlc_isa_name(cmlc_isa_t isa);

// Number of online CPUs (>= 1).
int cmlc_cpu_count(void);

//===--- backend and buffers (backend.c) ---===//

// Freed buffer storage kept for the next buffer of the same size (backend.c): a loop that
// executes and releases its results gets warm, already mapped memory back instead of fresh
// pages from the kernel (a page fault and a page clear per 4 KiB, or per 2 MiB huge page).
enum {
  CMLC_STORAGE_CACHE_SLOTS = 16,
  CMLC_STORAGE_CACHE_DEFAULT_MB = 256,  // c:buffer_cache_mb
};
typedef struct cmlc_storage_cache_t {
  pthread_mutex_t mutex;
  int count;                              // entries in use: [0, count), oldest first
  size_t bytes;                           // their total size
  void* data[CMLC_STORAGE_CACHE_SLOTS];   // storage, CMLC_ALIGNMENT-aligned
  size_t size[CMLC_STORAGE_CACHE_SLOTS];  // its allocated size
} cmlc_storage_cache_t;

typedef struct cmlc_backend_t {
  cml_backend_t base;  // must stay first
  cmlc_options_t options;
  cmlc_pool_t* pool;
  char** device_descriptions;  // options.devices entries
  struct cmlc_crew_t* crew;    // slot threads of SPMD executions (NULL with one device)
  cmlc_storage_cache_t storage_cache;
  bool storage_cache_ready;  // its mutex was initialized
  // The process that created it (0 on wasm32-wasi): a child of fork() has none of its threads,
  // so compiles and executions there are refused and destroy leaves the threads' state alone.
  long pid;
  // distributed=mpi: the backend's own MPI communicator (src/distributed/mpi_comm.h), so that
  // two backends' collectives run side by side and never meet; NULL otherwise.
  struct cml__mpi_channel_t* mpi_channel;
} cmlc_backend_t;

typedef struct cmlc_buffer_t {
  cml_buffer_t base;  // must stay first
  void* data;         // CMLC_ALIGNMENT-aligned, NULL once the storage was taken by donation
  size_t size;        // bytes allocated at |data| (0 for empty shapes)
  // An execution's output that took a donated input's storage: that input, until the execution
  // ends. If it fails, the storage goes back to the input (donation consumes only on success).
  struct cmlc_buffer_t* donor;
} cmlc_buffer_t;

// Allocates a buffer object with uninitialized storage for |shape| on |device|.
CML_MUST_USE cml_status_t cmlc_buffer_create(cmlc_backend_t* backend, int device,
                                             const cml_shape_t* shape, bool shared,
                                             cmlc_buffer_t** out_buffer);
// Wraps existing storage (taken from a donated buffer) in a new buffer object; on success the
// new buffer owns |data| (|size| bytes).
CML_MUST_USE cml_status_t cmlc_buffer_wrap(cmlc_backend_t* backend, int device,
                                           const cml_shape_t* shape, void* data, size_t size,
                                           cmlc_buffer_t** out_buffer);
void cmlc_buffer_free(cml_buffer_t* buffer);

// A zero-size, CMLC_ALIGNMENT-aligned object that empty values point to (never written).
extern const uint8_t cmlc_empty_storage[CMLC_ALIGNMENT];

//===--- plans (plan.c) ---===//

// How a value's storage is found at run time.
typedef enum cmlc_storage_t {
  CMLC_STORAGE_NONE = 0,  // dead value (never read) or a value of a function not planned
  CMLC_STORAGE_ARENA,     // |offset| into its function's arena segment
  CMLC_STORAGE_PARAM,     // the function's parameter |index| (set at function entry)
  CMLC_STORAGE_CONST,     // the node's constant data
  CMLC_STORAGE_CAPTURE,   // a closure capture (set at function entry from the parent frame)
  CMLC_STORAGE_ALIAS,     // the storage of value |index| (set when the node runs)
  CMLC_STORAGE_OUTPUT,    // main only: written straight into output buffer |index|
  CMLC_STORAGE_EMPTY,     // zero bytes: points at cmlc_empty_storage
  CMLC_STORAGE_PART,      // main only: |offset| bytes into output value |index|'s buffer (a
                          // Concatenate operand computed where the Concatenate puts it)
} cmlc_storage_t;

typedef struct cmlc_value_plan_t {
  uint8_t storage;   // cmlc_storage_t
  uint32_t index;    // PARAM: parameter; CAPTURE: capture; ALIAS: source value; OUTPUT: output
  size_t offset;     // ARENA: byte offset in the function's segment
  size_t size;       // bytes (While outputs: two copies, see exec.c)
  const void* data;  // CONST: the bytes (a Constant node's data, or a folded result)
  size_t bytes;      // cml_shape_byte_size of the value (exact; precomputed for exec.c)
  size_t arena_at;   // ARENA: offset in the whole context arena (segment offset + |offset|)
} cmlc_value_plan_t;

typedef enum cmlc_step_kind_t {
  CMLC_STEP_KERNEL = 0,  // call |entry.run|
  CMLC_STEP_ALIAS,       // outputs alias inputs (Identity, Reshape, Bitcast, barriers)
  CMLC_STEP_CALL,
  CMLC_STEP_WHILE,
  CMLC_STEP_IF,
  CMLC_STEP_MERGED,  // CSE: outputs alias the outputs of |source_node| (same count)
  CMLC_STEP_FUSED,   // a fused elementwise group (|fused|), reading |fused|'s inputs
  CMLC_STEP_SCALAR,  // a one-element elementwise op run inline (|scalar_code|, exec.c)
} cmlc_step_kind_t;

// Scalar fast path: one-element Add/Sub/Mul/Div/Rem, integer Max/Min, comparisons and logical
// ops on a few dtypes run
// inline in the engine (no kernel call, no pool), bit-identical to the kernels (C semantics,
// integers wrap). A code is op * CMLC_SCALAR_TYPES + type; 0 means "not a scalar step".
typedef enum cmlc_scalar_op_t {
  CMLC_SCALAR_NONE = 0,
  CMLC_SCALAR_ADD,
  CMLC_SCALAR_SUB,
  CMLC_SCALAR_MUL,
  CMLC_SCALAR_DIV,  // integers: x / 0 = -1 (all ones unsigned), INT_MIN / -1 = INT_MIN
  CMLC_SCALAR_REM,  // integers: x % 0 = x, x % -1 = 0; floats: fmod
  CMLC_SCALAR_MAX,  // integers only (float Max/Min keep their NaN rules in the kernels)
  CMLC_SCALAR_MIN,
  CMLC_SCALAR_EQ,
  CMLC_SCALAR_NE,
  CMLC_SCALAR_LT,
  CMLC_SCALAR_LE,
  CMLC_SCALAR_GT,
  CMLC_SCALAR_GE,
  CMLC_SCALAR_LAND,
  CMLC_SCALAR_LOR,
  CMLC_SCALAR_LXOR,
  CMLC_SCALAR_LNOT,
  CMLC_SCALAR_OP_COUNT
} cmlc_scalar_op_t;
typedef enum cmlc_scalar_type_t {
  CMLC_SCALAR_I32 = 0,
  CMLC_SCALAR_I64,
  CMLC_SCALAR_U32,
  CMLC_SCALAR_U64,
  CMLC_SCALAR_F32,
  CMLC_SCALAR_F64,
  CMLC_SCALAR_BOOL,
  CMLC_SCALAR_TYPES
} cmlc_scalar_type_t;

typedef struct cmlc_fused_t cmlc_fused_t;

typedef struct cmlc_step_t {
  uint8_t kind;  // cmlc_step_kind_t
  const cml_ir_node_t* node;
  cmlc_kernel_entry_t entry;
  size_t scratch_offset;  // in the function's segment
  size_t scratch_size;
  const cml_shape_t** shapes;        // input_count input shapes, then output_count output shapes
  const cml_ir_node_t* source_node;  // MERGED: the node whose outputs this one reuses
  cmlc_fused_t* fused;               // FUSED: the program (owned by the step)
  uint16_t scalar_code;              // SCALAR: op * CMLC_SCALAR_TYPES + type
  const void* prepared;              // KERNEL: entry.prepare's data (in exe->folded), or NULL
  // KERNEL with operands in parts (exe->parts_of): the values passed, their count and the parts
  // per node input (args->input_parts); NULL / 0: the node's own inputs.
  const uint32_t* inputs;
  uint32_t input_count;
  const uint32_t* input_parts;
  bool heavy;  // reads or writes enough bytes that reading the clock before it is cheap
  // A kernel step whose outputs are all empty (not a collective): nothing to run, prepare or
  // size scratch for (an FFT or a Sort along an axis of 2^40 over an empty batch sized its
  // scratch by that axis).
  bool idle;
  // WHILE: the state elements (of the first 64) its body updates in place
  // (cmlc_plan_while_in_place, plan.c).
  uint64_t while_in_place;
} cmlc_step_t;

typedef struct cmlc_function_plan_t {
  bool planned;  // false for functions no live node reaches (never run)
  uint32_t step_count;
  uint32_t step_capacity;
  cmlc_step_t* steps;
  size_t arena_size;    // this function's segment size
  size_t arena_offset;  // offset of its segment in the context's arena
  uint32_t max_io;      // most inputs + outputs of one step (size of its pointer scratch)
  size_t io_offset;     // offset of its pointer scratch in the context's pointer block
} cmlc_function_plan_t;

// What the compile-time optimizations did (for tests and `cml info`-style reports).
typedef struct cmlc_opt_stats_t {
  uint32_t folded;         // nodes evaluated at compile time (their results became constants)
  uint32_t merged;         // nodes merged into an identical earlier node (CSE)
  uint32_t fused_groups;   // fused elementwise loops
  uint32_t fused_nodes;    // nodes inside those loops (roots included)
  uint32_t fused_reduces;  // loops that are reductions of a group never stored
  uint32_t fused_tiled;    // loops run register-resident (loop_fusion.c, cmlc_fused_tiled)
  uint32_t prepared;       // kernel steps with data prepared from constant inputs (entry.prepare)
  uint32_t segmented;      // Concatenates never run: their consumer reads the operands in place
  uint32_t transposes_folded;  // Transpose operands of Dot/DotGeneral read in place
  uint32_t broadcasts_filled;  // Scatter/DUS broadcast operands written, not copied
  uint32_t concat_placed;      // Concatenate operands computed in place in its output
} cmlc_opt_stats_t;

// A block of folded constant data owned by an executable (data follows the header).
typedef struct cmlc_folded_t {
  struct cmlc_folded_t* next;
  size_t bytes;  // the whole allocation, header included
} cmlc_folded_t;

typedef struct cmlc_executable_t {
  cml_executable_t base;  // must stay first
  cmlc_backend_t* backend;
  const cml_module_t* module;
  cmlc_value_plan_t* values;  // module->value_count entries
  cmlc_function_plan_t* functions;
  size_t arena_size;     // all segments
  size_t pointer_count;  // value pointers + io scratch pointers in one context
  cmlc_opt_stats_t stats;
  cmlc_folded_t* folded;    // folded constants' storage
  cmlc_fused_t** fused_of;  // per node: the fused program of a FUSED_ROOT (NULL: no fusion)
  // Per node: the inputs of a kernel node that reads some operands in parts (NULL: none; the
  // array itself is NULL without fusion).
  struct cmlc_parts_t** parts_of;
  // Per node: the node the plan runs in its place (a Dot/DotGeneral reading a Transpose's
  // operand directly, cmlc_opt_fold_transposes; stored in |folded|), or NULL: the module's own.
  // NULL when nothing was rewritten.
  const cml_ir_node_t** node_view;
  // SPMD: a dense index per collective node (UINT32_MAX for other nodes; NULL when the module
  // has no collective), which keys the rendezvous' per-slot round counters.
  uint32_t* collective_index;
  uint32_t collective_count;
  // distributed=mpi: the module's fingerprint (cmlc_mpi_agree_module) and the count of SPMD
  // executions started (atomic), which with the node and its place in the execution make each
  // cross-process collective's stamp (cmlc_rendezvous_mpi_stamp).
  uint64_t mpi_fingerprint;
  uint64_t mpi_launches;
  // Main's PART values (pointers set once the output buffers exist; NULL: none).
  uint32_t* out_parts;
  uint32_t out_part_count;
  // Free list of execution contexts (guarded by |mutex|).
  pthread_mutex_t mutex;
  struct cmlc_context_t* free_contexts;
  // A module with dynamic axes is not planned: each execution runs the plan specialized for
  // its binding set, from this cache (core/dynamic.h; NULL for static modules).
  struct cml__dynamic_cache_t* dynamic;
} cmlc_executable_t;

// Plans |module| for |backend| into |exe| (whose base is already initialized). On failure
// everything plan.c allocated is freed again by cmlc_plan_deinit.
CML_MUST_USE cml_status_t cmlc_plan_build(cmlc_backend_t* backend, const cml_module_t* module,
                                          cmlc_executable_t* exe);
void cmlc_plan_deinit(cmlc_executable_t* exe);

//===--- planner internals (plan.c, opt.c) ---===//

// What the optimizations decided for a node (plan.c then schedules it accordingly).
typedef enum cmlc_node_state_t {
  CMLC_NODE_PLAIN = 0,    // scheduled as it is
  CMLC_NODE_FOLDED,       // evaluated at compile time: its outputs are CONST values
  CMLC_NODE_MERGED,       // CSE: reuses the outputs of node |link| (a MERGED step)
  CMLC_NODE_FUSED_INNER,  // computed inside the fused loop of node |link|, never stored
  CMLC_NODE_FUSED_ROOT,   // runs the fused loop |fused_of| (its output is the group's)
  CMLC_NODE_SEGMENTED,    // a Concatenate whose operands node |link| reads in place, never run
} cmlc_node_state_t;

// The inputs a kernel node reads when some of its operands are Concatenates it reads in parts
// (CMLC_NODE_SEGMENTED): the node's inputs with each such operand replaced by the
// Concatenate's operands. One allocation: the struct, then |values| and |parts|.
typedef struct cmlc_parts_t {
  size_t bytes;      // the allocation
  uint32_t count;    // entries of |values|
  uint32_t* values;  // the values passed, in order
  uint32_t* parts;   // per node input: how many entries of |values| it spans
} cmlc_parts_t;

typedef struct cmlc_block_t {
  size_t offset, size;
} cmlc_block_t;

typedef struct cmlc_layout_t {
  cmlc_block_t* free_blocks;  // sorted by offset, never adjacent (coalesced)
  size_t count, capacity;
  size_t top;  // high-water mark
} cmlc_layout_t;

typedef struct cmlc_planner_t {
  cmlc_backend_t* backend;
  const cml_module_t* module;
  cmlc_executable_t* exe;
  cml_allocator_t alloc;
  // Module-wide scratch (functions own disjoint nodes and values).
  bool* needed;        // node is live
  uint32_t* root;      // value -> the value owning its storage
  uint32_t* last_use;  // root value -> position of its last use (node_count = "returned")
  bool* released;      // root value's block was freed or handed over
  uint32_t* queue;     // functions to plan
  bool* queued;
  cmlc_layout_t layout;
  // Optimizations (per node / per value).
  uint8_t* node_state;      // cmlc_node_state_t
  uint32_t* node_link;      // MERGED: the node reused; FUSED_INNER: the group's root node;
                            // SEGMENTED: the node reading the parts
  const void** value_data;  // constant data of CONST values (Constant nodes and folded ones)
  uint32_t* uses;           // value -> number of distinct consuming nodes (fusion)
  // value -> 1 + the node counting it as an input right now (0 between nodes): the distinct
  // inputs of a node with 10^5 operands without comparing every pair.
  uint32_t* counted_by;
  uint32_t* position;  // node -> its position in its function's node list (fusion)
  // node -> may be computed again inside each loop that reads it (fusion): one array for the
  // whole module, all false between functions (cmlc_opt_fuse clears its function's nodes), so
  // a module of many small closures does not allocate and clear a module-sized array for each.
  bool* dup;
  // Concatenate operands computed in place (per root value): the Concatenate's output value
  // (0: none) and the byte offset of the operand in it; per Concatenate output: its block was
  // allocated at the first such operand's producer.
  uint32_t* place_parent;
  size_t* place_offset;
  bool* place_early;
} cmlc_planner_t;

// Finds the kernel implementing |n| (UNIMPLEMENTED naming the op and dtypes when none does).
CML_MUST_USE cml_status_t cmlc_plan_lookup(cmlc_planner_t* p, const cml_ir_node_t* n,
                                           cmlc_kernel_entry_t* out);

// Constant folding and common-subexpression elimination over the live nodes of function
// |fi| (p->needed set): fills node_state / node_link / value_data and the executable's
// folded storage and stats. Off in reference mode. Folding failures are not errors: the node
// then simply runs at execution time.
CML_MUST_USE cml_status_t cmlc_opt_fold_and_merge(cmlc_planner_t* p, uint32_t fi);

// Transpose folding over function |fi| (after fold/merge; off in reference mode): a Dot or
// DotGeneral whose operand is a Transpose that nothing else reads gets a rewritten node in
// exe->node_view reading the Transpose's operand with remapped batch/contracting axes (only
// when the operand's free axes keep their order, so the result layout is unchanged); the
// Transpose then dies at the next liveness pass. Sets *changed when it rewrote a node.
CML_MUST_USE cml_status_t cmlc_opt_fold_transposes(cmlc_planner_t* p, uint32_t fi, bool* changed);

// Scatter / DynamicUpdateSlice whose operand is a BroadcastInDim of one element read by them
// alone: a view with that element as the operand (the kernel fills the output with it).
CML_MUST_USE cml_status_t cmlc_opt_fold_broadcast_operands(cmlc_planner_t* p, uint32_t fi,
                                                           bool* changed);

// The node the plan runs for node |ni|: its rewritten view, or the module's node.
static inline const cml_ir_node_t* cmlc_plan_node(const cmlc_executable_t* exe, uint32_t ni) {
  return exe->node_view && exe->node_view[ni] ? exe->node_view[ni] : &exe->module->nodes[ni];
}

// Elementwise fusion over function |fi| (after fold/merge and a second liveness pass): groups
// single-use f32/f64 elementwise chains into FUSED_ROOT / FUSED_INNER nodes with programs in
// exe->fused_of. Only when options.fusion is on.
CML_MUST_USE cml_status_t cmlc_opt_fuse(cmlc_planner_t* p, uint32_t fi);

// Segmented operands over function |fi| (after fusion; fusion option, not in reference
// mode): a Concatenate along the key axis whose only consumer is a FusedScaledDotProductAttention
// run by the native kernel, as its k and/or v, is not run: the kernel reads its operands in
// place (exe->parts_of, CMLC_NODE_SEGMENTED), so the concatenation is never copied.
CML_MUST_USE cml_status_t cmlc_opt_segments(cmlc_planner_t* p, uint32_t fi);

//===--- fused elementwise loops (loop_fusion.c) ---===//

// Whether |node| can be a member of a fused loop for |options| (an elementwise op whose
// unfused kernel is one of the elementwise group's strided loops, with float, bool or
// integer results).
bool cmlc_fused_node_supported(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options);

// Builds the program of a group: |members| are node indices in schedule order, the last one
// is the root whose output the loop writes; every other member's single output is read only
// by later members, and every member's output has the root's dims. Members' inputs listed in
// |through| (outputs of BroadcastInDim, Slice and row Gather nodes) are read through them: the
// loop takes their operand and reads it with mapped strides (a Gather's rows by its indices,
// which become an input too), so the node need not run for it.
// Returns FAILED_PRECONDITION (quietly: the planner then leaves the nodes unfused) when the
// group needs more registers or inputs than a loop has.
CML_MUST_USE cml_status_t cmlc_fused_build(const cml_module_t* module,
                                           const cmlc_options_t* options, const uint32_t* members,
                                           uint32_t member_count, const uint32_t* through,
                                           uint32_t through_count, cml_allocator_t allocator,
                                           cmlc_fused_t** out);
void cmlc_fused_destroy(cml_allocator_t allocator, cmlc_fused_t* fused);
// The group's external inputs (value indices, distinct) in the order the run takes them.
uint32_t cmlc_fused_input_count(const cmlc_fused_t* fused);
const uint32_t* cmlc_fused_inputs(const cmlc_fused_t* fused);
// An input the output may share storage with (same dims and element size), or -1.
int cmlc_fused_in_place_input(const cmlc_fused_t* fused);
// Whether the loop runs as a register-resident program (cmlc_ew_tile_prog_t) rather than one
// kernel call per member and block.
bool cmlc_fused_tiled(const cmlc_fused_t* fused);
// One line on |out| (a FILE*): the loop's members, what each input is read as, its merged
// axes and whether it runs register-resident (cml_executable_dump on c).
void cmlc_fused_describe(const cmlc_fused_t* fused, void* out);
// Whether a loop reads the output |value| of a Slice through it (a long enough innermost run).
bool cmlc_fused_slice_read_through(const cml_module_t* module, uint32_t value);
// Whether a loop can read the output |value| of a Gather through it: whole trailing rows of the
// operand, 16 elements or more in at most 128 bytes (the loop gathers them per block).
bool cmlc_fused_gather_read_through(const cml_module_t* module, uint32_t value);
// Whether |node| is a member of the loop (computed inside it).
bool cmlc_fused_has_member(const cmlc_fused_t* fused, const cml_ir_node_t* node);
// Whether |reduce| can read a fused group's output produced on the fly (loop_fusion.c).
bool cmlc_fused_reduce_supported(const cml_module_t* module, const cml_ir_node_t* reduce,
                                 const cmlc_options_t* options);
// Makes the program a fused reduction: |reduce| (a Reduce node reading the group's root
// output, and nothing else reading it) computes from runs of the group's output produced on the
// fly. False (the program unchanged) when the reduction has no path for a produced input.
bool cmlc_fused_attach_reduce(cmlc_fused_t* fused, const cml_module_t* module,
                              const cml_ir_node_t* reduce, const cmlc_options_t* options);
// Scratch bytes a run needs (a fused reduction's partials; 0 for a plain loop).
size_t cmlc_fused_scratch(const cmlc_fused_t* fused, const cmlc_options_t* options);
// Runs the loop: |inputs| in cmlc_fused_inputs order, |output| the root's storage (a fused
// reduction's output), |scratch| cmlc_fused_scratch bytes. Fails only on internal errors.
CML_MUST_USE cml_status_t cmlc_fused_run(const cmlc_fused_t* fused, const void* const* inputs,
                                         void* output, const cmlc_options_t* options,
                                         cmlc_pool_t* pool, void* scratch, size_t scratch_size);

//===--- execution (exec.c) ---===//

typedef struct cmlc_context_t cmlc_context_t;

// Runs |exe|. |control| (NULL: none) asks for cancellation and a deadline: they are checked
// before every kernel or fused step, at every function entry and every While iteration (the
// clock only every CMLC_CLOCK_EVERY checks and before heavy steps), and a stop frees everything
// and writes no output.
CML_MUST_USE cml_status_t cmlc_execute(cmlc_executable_t* exe, cml_buffer_t* const* inputs,
                                       const bool* donate, int device,
                                       const cml_execute_control_t* control,
                                       cml_buffer_t** out_results);
// Checks between which the deadline's clock is read (a power of two).
#define CMLC_CLOCK_EVERY 64
// Frees the executable's cached contexts (from executable_destroy).
void cmlc_exec_free_contexts(cmlc_executable_t* exe);

// The call_function of cmlc_kernel_args_t: runs |function| in the execution |exec| with scalar
// (or array) |inputs|, writing its outputs to |outputs|.
cml_status_t cmlc_exec_call_function(void* exec, uint32_t function, const void* const* inputs,
                                     void* const* outputs);

//===--- SPMD (spmd.c; the kernel side of the rendezvous is in cmlc.h) ---===//

// Creates the rendezvous of one SPMD execution of |exe| over its module's num_devices slots.
// |control| (NULL: none) bounds every wait: a slot waiting at a round past the deadline or
// after a cancel fails the execution.
CML_MUST_USE cml_status_t cmlc_rendezvous_create(const cmlc_executable_t* exe,
                                                 const cml_execute_control_t* control,
                                                 cmlc_rendezvous_t** out_rendezvous);
// Frees it (after every slot thread has ended).
void cmlc_rendezvous_destroy(cmlc_rendezvous_t* rendezvous);
// Makes it ready for the next execution of the same executable under |control| (after every
// slot thread of the last one has ended and its failure was taken): executions cache it.
void cmlc_rendezvous_reset(cmlc_rendezvous_t* rendezvous, const cml_execute_control_t* control);
// distributed=mpi: numbers the execution (|launch|: the executable's how-many-th SPMD
// execution, the same on every process that issues them in the same order).
void cmlc_rendezvous_set_launch(cmlc_rendezvous_t* rendezvous, uint64_t launch);
// distributed=mpi: the MPI channel of the execution's backend (NULL: none).
struct cml__mpi_channel_t* cmlc_rendezvous_mpi_channel(const cmlc_rendezvous_t* rendezvous);
// Records that |slot| stopped with |status| (taken): the first failure of the execution is kept
// (prefixed with the slot and its backend device) and every waiting slot wakes and fails.
void cmlc_rendezvous_fail(cmlc_rendezvous_t* rendezvous, int32_t slot, cml_status_t status);
// Records that |slot| finished its program: a round it belongs to can never complete any more.
void cmlc_rendezvous_slot_done(cmlc_rendezvous_t* rendezvous, int32_t slot);
// Whether the execution failed (a relaxed load: slots poll it between steps).
bool cmlc_rendezvous_failed(const cmlc_rendezvous_t* rendezvous);
// The first failure (the caller owns it), or CML_OK.
CML_MUST_USE cml_status_t cmlc_rendezvous_take_failure(cmlc_rendezvous_t* rendezvous);

//===--- slot threads (crew.c) ---===//

typedef struct cmlc_crew_t cmlc_crew_t;

// A crew of up to |capacity| persistent threads (started at its first run).
CML_MUST_USE cml_status_t cmlc_crew_create(int capacity, cml_allocator_t allocator,
                                           cmlc_crew_t** out_crew);
// Stops and joins the threads, frees the crew (NULL is ignored).
void cmlc_crew_destroy(cmlc_crew_t* crew);
// Runs fn(args[i]) for i in [0, count) on the crew's threads, returning at once. False (nothing
// runs) when the crew is busy with another execution or has fewer threads: the caller then
// starts threads itself. After true, cmlc_crew_wait must follow.
bool cmlc_crew_start(cmlc_crew_t* crew, void* (*fn)(void*), void* const* args, int count);
// Waits until every job of the run cmlc_crew_start began has returned, and frees the crew.
void cmlc_crew_wait(cmlc_crew_t* crew);

//===--- Sort (sort.c) ---===//

// The kernel of CML_OP_SORT (uses args->call_function for general comparators).
cml_status_t cmlc_sort_run(const cmlc_kernel_args_t* args);
// Scratch bytes Sort needs for |node|.
size_t cmlc_sort_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                         const cmlc_options_t* options);
// entry.prepare of Sort (cmlc_kernel_entry_t.prepare_always): the prefix of each line the
// module reads when Slices of the first elements are the results' only readers (top-k), for
// the kernel to select instead of sorting whole lines.
size_t cmlc_sort_prepare(const cml_module_t* module, const cml_ir_node_t* node,
                         const cmlc_options_t* options, const void* const* consts, void* dst);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_ENGINE_INTERNAL_H_
