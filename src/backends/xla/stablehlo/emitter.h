// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emitter.h: IR -> StableHLO MLIR text (generic op syntax), as the
// PJRT plugins parse it. No PJRT dependency: unit-testable alone.
//
// The text is one `module @<name>` holding `func.func public @main` (plus any named functions),
// in the generic form `%v = "stablehlo.add"(%a, %b) : (tensor<..>, tensor<..>) -> tensor<..>`.
//
// Example:
//
//   cml_xla_emit_options_t opts;
//   cml_xla_emit_options_init(&opts);
//   opts.platform = "cpu";
//   char* text = NULL;
//   CML_RETURN_IF_ERROR(cml_xla_emit_stablehlo(module, &opts, &text));
//   ... compile text ...
//   free(text);
//
// Thread-safety: pure; safe to call from many threads.
#ifndef CML_BACKENDS_XLA_STABLEHLO_EMITTER_H_
#define CML_BACKENDS_XLA_STABLEHLO_EMITTER_H_

#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

// The deepest nesting of Call/While/If/Sort the emitter accepts: how many functions (called
// functions and closures alike) a chain from main goes through. XLA's compiler recurses once
// per level (and its CPU plugin crashes on chains of some 850 nested calls); deeper modules get
// INVALID_ARGUMENT from cml_xla_emit_stablehlo before any text reaches XLA. The emitter's own
// recursion (one level per nested region) is bounded by it too. See docs/xla.md.
#define CML_XLA_EMIT_MAX_NESTING_DEPTH 256

typedef struct cml_xla_emit_options_t {
  size_t struct_size;
  // Lower-case platform of the plugin ("cpu", "cuda", "tpu", ...): selects platform-specific
  // lowerings (e.g. how tf32 is expressed).
  const char* platform;
  // Allow TF32 for float32 DotGeneral/ConvGeneral (CUDA: precision DEFAULT instead of HIGHEST;
  // elsewhere: a dot_algorithm with tf32 operands).
  bool tf32;
  // Mark every parameter of main `jax.buffer_donor = true`, so that an input donated at
  // execution time (not listed as non-donatable) may be reused for an output.
  bool donatable_inputs;
  // Module attributes mhlo.num_replicas / mhlo.num_partitions (1 unless distributed; see
  // cml_xla_emit_options_distribution). PJRT ignores them: the compile options decide.
  int32_t num_replicas;
  int32_t num_partitions;
  // The stack XLA's compiler will run on, in bytes: it recurses once per nesting level (about
  // 12 KiB a level on xla:cpu), so a module nested too deep for it gets RESOURCE_EXHAUSTED
  // instead of a crash. 0 (the default): what is left of the calling thread's stack (where the
  // platform says; unchecked elsewhere), for callers that compile on the thread that emits.
  // SIZE_MAX: unchecked (only CML_XLA_EMIT_MAX_NESTING_DEPTH applies).
  size_t compile_stack_bytes;
} cml_xla_emit_options_t;

// Sets struct_size and the defaults (platform "cpu", tf32 false, donatable_inputs true, 1, 1,
// compile_stack_bytes 0).
void cml_xla_emit_options_init(cml_xla_emit_options_t* options);

// Sets num_replicas / num_partitions for |module|'s distribution: SPMD on N devices is N
// replicas and one partition; AutoSharding on N > 1 devices is one replica and N partitions
// (Shardy); anything else 1 and 1.
void cml_xla_emit_options_distribution(cml_xla_emit_options_t* options, const cml_module_t* module);

// Whether |module| is emitted for Shardy: AutoSharding on more than one device (sdy.mesh lines
// and a closed sdy.sharding on every parameter and result of main). An AutoSharding module on
// one device is emitted (and compiled) as a plain single-device module.
bool cml_xla_emit_is_sharded(const cml_module_t* module);

// Emits |module| as StableHLO MLIR text into |*out_text| (malloc'd, NUL-terminated; the caller
// frees it with free()). Returns UNIMPLEMENTED naming the op (and dtype) for what it cannot
// lower, INVALID_ARGUMENT for a malformed module (or one nested deeper than
// CML_XLA_EMIT_MAX_NESTING_DEPTH), RESOURCE_EXHAUSTED on allocation failure or when the module
// is nested too deep for the stack XLA will compile on (see compile_stack_bytes).
//
// Names: main's parameters are "%arg<i>" (their user names kept as locations, loc("x")), every
// other SSA value "%<n>"; functions are "@main", "@fn<i>[_<name>]" and "@closure<i>". Unique by
// construction whatever the user names (spaces, unicode, quotes, "main", ...).
CML_MUST_USE cml_status_t cml_xla_emit_stablehlo(const cml_module_t* module,
                                                 const cml_xla_emit_options_t* opts,
                                                 char** out_text);

// Whether main, emitted for |module| with |opts|, returns the divergence flag after its
// outputs (|*out_flag|): an Int32 scalar, 0, or 1 + the index of the If or While node whose
// predicate the slots of one replica group answered differently (emit_guard.c). Only SPMD
// modules on more than one slot with an If or While that runs collectives have it.
CML_MUST_USE cml_status_t cml_xla_emit_divergence_flag(const cml_module_t* module,
                                                       const cml_xla_emit_options_t* opts,
                                                       bool* out_flag);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_XLA_STABLEHLO_EMITTER_H_
