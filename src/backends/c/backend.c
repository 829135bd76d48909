// SPDX-License-Identifier: Apache-2.0
// src/backends/c/backend.c: the pure C backend ("c", alias "go"): options, devices,
// capabilities, host-memory buffers and the vtable.
//
// Options are read once, at creation: first the environment (GOMLX_SIMD_AVX512,
// GOMLX_SIMD_AVX2, GOMLX_FUSION; "0"/"false" disables, anything unparsable is an error), then
// the config string, which overrides it. Buffers are 64-byte aligned host memory; shared
// buffers hand that memory to the caller. A persistent thread pool is owned by the backend and
// shared by every executable and execution.
//
// Thread-safety: the backend and its buffers are thread-safe (see cml/backend.h).
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if !defined(__wasi__)
#include <unistd.h>
#endif

#include "backends/c/engine_internal.h"
#include "backends/c/mpi_internal.h"
#include "base/base_internal.h"
#include "core/dynamic.h"
#include "core/runtime_internal.h"
#include "distributed/mpi_comm.h"
#include "distributed/partition.h"

const uint8_t cmlc_empty_storage[CMLC_ALIGNMENT] __attribute__((aligned(CMLC_ALIGNMENT)));

// FAILED_PRECONDITION in a child of fork(): the backend's pool and slot threads stayed in the
// parent, and their locks may be held forever.
static cml_status_t cmlc_check_process(const cmlc_backend_t* b, const char* what) {
  const long pid = cml__process_id();
  if (pid == b->pid) return CML_OK;
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                         "c backend: %s in process %ld, a child of fork(): the backend was created "
                         "by process %ld, and its threads did not follow into the child; create a "
                         "new backend in the child (buffers can still be read)",
                         what, pid, b->pid);
}

static const char cmlc_backend_config_help[] =
    "  threads (int in [0, 4096], default and 0: the number of online CPUs): worker threads,\n"
    "           the caller included\n"
    "  devices (int, default 1): virtual CPU devices sharing the thread pool (per process)\n"
    "  distributed (none|mpi, default none): mpi: one process of an mpirun job; the devices of\n"
    "    all processes form one global device space (needs cml built with MPI)\n"
    "  dynamic_cache (int 1..4096, default 16): specialized plans kept per executable with dynamic "
    "axes "
    "(least recently used evicted)\n"
    "  buffer_cache_mb (int, default 256): MiB of released buffer storage (256 KiB and larger) "
    "kept for the next buffer of the same size (0: none)\n"
    "  reference (bool, default false): scalar reference kernels, no fusion (compliance oracle)\n"
    "  avx512 (bool, default true, env GOMLX_SIMD_AVX512): use AVX-512 kernels when the CPU has "
    "them\n"
    "  avx2 (bool, default true, env GOMLX_SIMD_AVX2): use AVX2+FMA kernels when the CPU has them "
    "(false turns AVX-512 off too: it builds on AVX2)\n"
    "  fusion (bool, default true, env GOMLX_FUSION): fuse ops (false: fused ops are decomposed)\n"
    "  quant_int8 (bool, default false): batch-1 GGML FusedQuantizedDense with activations "
    "quantized to int8 per 32 values, per 256 for Q4_K (docs/quantization.md)\n"
    "  flush_denormals (bool, default false): kernels flush denormal results to zero (FTZ, as "
    "XLA's CPU runtime does; x86-64 only)\n";

//===--- buffers ---===//

static size_t cmlc_round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// From this size a buffer asks for transparent huge pages (Linux, where the system leaves it to
// madvise): first touching a 64 MiB result then takes 32 page faults instead of 16384 (about
// 9 instead of 34 ms of CPU for a 64 MiB copy into a fresh buffer on the build machine).
#define CMLC_HUGE_PAGE_BYTES ((size_t)8 << 20)

static void cmlc_advise_huge_pages(void* data, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  const uintptr_t begin = ((uintptr_t)data + huge - 1) & ~(huge - 1);
  const uintptr_t end = ((uintptr_t)data + size) & ~(huge - 1);
  // Advice only: the contents never change, and a refusal (no THP, foreign memory) is harmless.
  if (end > begin) (void)madvise((void*)begin, (size_t)(end - begin), MADV_HUGEPAGE);
#else
  (void)data;
  (void)size;
#endif
}

// The storage cache: storage of at least CMLC_STORAGE_CACHE_MIN bytes goes back to it when a
// buffer is freed, while the cache holds at most c:buffer_cache_mb (the oldest entry is freed to
// make room); a new buffer takes the newest entry of exactly its rounded size. Smaller storage
// is left to the allocator, which recycles it well; storage above half the limit is always
// freed.
#define CMLC_STORAGE_CACHE_MIN ((size_t)256 << 10)

static void* cmlc_storage_take(cmlc_backend_t* backend, size_t size) {
  cmlc_storage_cache_t* c = &backend->storage_cache;
  if (size < CMLC_STORAGE_CACHE_MIN || !backend->storage_cache_ready) return NULL;
  void* data = NULL;
  pthread_mutex_lock(&c->mutex);
  for (int i = c->count - 1; i >= 0; --i) {
    if (c->size[i] != size) continue;
    data = c->data[i];
    c->bytes -= size;
    memmove(&c->data[i], &c->data[i + 1], sizeof c->data[0] * (size_t)(c->count - 1 - i));
    memmove(&c->size[i], &c->size[i + 1], sizeof c->size[0] * (size_t)(c->count - 1 - i));
    --c->count;
    break;
  }
  pthread_mutex_unlock(&c->mutex);
  return data;
}

// Keeps |data| (|size| bytes) for reuse, or frees it; so does every entry it displaces.
static void cmlc_storage_give(cmlc_backend_t* backend, void* data, size_t size) {
  cml_allocator_t alloc = backend->base.allocator;
  cmlc_storage_cache_t* c = &backend->storage_cache;
  // (Clamped: on a 32-bit size_t, 4096 MiB and more would wrap to a small limit.)
  const size_t limit = (uint64_t)backend->options.buffer_cache_bytes > SIZE_MAX
                           ? SIZE_MAX
                           : (size_t)backend->options.buffer_cache_bytes;
  if (size < CMLC_STORAGE_CACHE_MIN || size > limit / 2 || !backend->storage_cache_ready) {
    cml_allocator_free(alloc, data, size);
    return;
  }
  void* evicted[CMLC_STORAGE_CACHE_SLOTS];
  size_t evicted_size[CMLC_STORAGE_CACHE_SLOTS];
  int n_evicted = 0;
  pthread_mutex_lock(&c->mutex);
  while (c->count > 0 && (c->count == CMLC_STORAGE_CACHE_SLOTS || c->bytes + size > limit)) {
    evicted[n_evicted] = c->data[0];
    evicted_size[n_evicted++] = c->size[0];
    c->bytes -= c->size[0];
    memmove(&c->data[0], &c->data[1], sizeof c->data[0] * (size_t)(c->count - 1));
    memmove(&c->size[0], &c->size[1], sizeof c->size[0] * (size_t)(c->count - 1));
    --c->count;
  }
  c->data[c->count] = data;
  c->size[c->count++] = size;
  c->bytes += size;
  pthread_mutex_unlock(&c->mutex);
  for (int i = 0; i < n_evicted; ++i) cml_allocator_free(alloc, evicted[i], evicted_size[i]);
}

// Frees every cached storage (backend destruction, or an allocation that failed); returns
// whether there was any.
static bool cmlc_storage_drain(cmlc_backend_t* backend) {
  if (!backend->storage_cache_ready) return false;
  cmlc_storage_cache_t* c = &backend->storage_cache;
  for (bool freed = false;; freed = true) {
    pthread_mutex_lock(&c->mutex);
    void* data = c->count > 0 ? c->data[c->count - 1] : NULL;
    size_t size = c->count > 0 ? c->size[c->count - 1] : 0;
    if (c->count > 0) {
      --c->count;
      c->bytes -= size;
    }
    pthread_mutex_unlock(&c->mutex);
    if (!data) return freed;
    cml_allocator_free(backend->base.allocator, data, size);
  }
}

cml_status_t cmlc_buffer_wrap(cmlc_backend_t* backend, int device, const cml_shape_t* shape,
                              void* data, size_t size, cmlc_buffer_t** out_buffer) {
  *out_buffer = NULL;
  cml_allocator_t alloc = backend->base.allocator;
  cmlc_buffer_t* b = cml_allocator_malloc(alloc, sizeof *b, CMLC_ALIGNMENT);
  if (!b) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(b, 0, sizeof *b);
  cml_buffer_init_base(&b->base, &backend->base, shape, device, false);
  b->data = data;
  b->size = size;
  *out_buffer = b;
  return CML_OK;
}

cml_status_t cmlc_buffer_create(cmlc_backend_t* backend, int device, const cml_shape_t* shape,
                                bool shared, cmlc_buffer_t** out_buffer) {
  *out_buffer = NULL;
  cml_allocator_t alloc = backend->base.allocator;
  CML_RETURN_IF_ERROR(cmlc_mpi_check_local(backend, device, "buffer"));
  size_t bytes = cml_shape_byte_size(shape);
  void* data = NULL;
  size_t size = 0;
  if (bytes > 0) {
    size = cmlc_round_up(bytes, CMLC_ALIGNMENT);
    data = cmlc_storage_take(backend, size);
    if (!data) data = cml_allocator_malloc(alloc, size, CMLC_ALIGNMENT);
    // What the cache holds may be what is missing.
    if (!data && cmlc_storage_drain(backend))
      data = cml_allocator_malloc(alloc, size, CMLC_ALIGNMENT);
    if (!data) {
      char text[160];
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "c backend: cannot allocate %zu bytes for a buffer %s", bytes,
                             cml_shape_format(shape, text, sizeof text));
    }
    if (size >= CMLC_HUGE_PAGE_BYTES) cmlc_advise_huge_pages(data, size);
  }
  cmlc_buffer_t* b = NULL;
  cml_status_t st = cmlc_buffer_wrap(backend, device, shape, data, size, &b);
  if (st != CML_OK) {
    if (data) cml_allocator_free(alloc, data, size);
    return st;
  }
  b->base.shared = shared;
  *out_buffer = b;
  return CML_OK;
}

void cmlc_buffer_free(cml_buffer_t* buffer) {
  if (!buffer) return;
  cmlc_buffer_t* b = (cmlc_buffer_t*)buffer;
  cml_allocator_t alloc = buffer->backend->allocator;
  if (b->data) cmlc_storage_give((cmlc_backend_t*)buffer->backend, b->data, b->size);
  b->data = NULL;
  // Release the backend last: it may be the last reference.
  cml_backend_t* backend = buffer->backend;
  cml_backend_retain(backend);
  cml_buffer_deinit_base(buffer);
  cml_allocator_free(alloc, b, sizeof *b);
  cml_backend_release(backend);
}

static cml_status_t cmlc_buffer_from_host(cml_backend_t* backend, int device,
                                          const cml_shape_t* shape, const void* data,
                                          cml_buffer_t** out_buffer) {
  cmlc_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(cmlc_buffer_create((cmlc_backend_t*)backend, device, shape, false, &b));
  size_t bytes = cml_shape_byte_size(shape);
  if (bytes) memcpy(b->data, data, bytes);
  // Sub-byte dtypes: the bits past the last element of the last byte are cleared, as xla's
  // copy (one element per byte and back) does; kept, they came back from some ops (an identity,
  // a Reshape) and not from others, so equal tensors could differ byte for byte.
  const int bits = cml_dtype_bits(shape->dtype);
  const uint64_t used_bits = (uint64_t)cml_shape_element_count(shape) * (uint64_t)bits;
  if (bytes && bits < 8 && used_bits % 8 != 0) {
    ((uint8_t*)b->data)[bytes - 1] &= (uint8_t)((1u << (used_bits % 8)) - 1u);
  }
  *out_buffer = &b->base;
  return CML_OK;
}

static cml_status_t cmlc_buffer_copy_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  cmlc_buffer_t* b = (cmlc_buffer_t*)buffer;
  size_t bytes = cml_shape_byte_size(&buffer->shape);
  if (size != bytes) {
    char text[160];
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "c backend: copy_to_host of %s needs %zu bytes, got %zu",
                           cml_shape_format(&buffer->shape, text, sizeof text), bytes, size);
  }
  if (!b->data && bytes) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "c backend: the buffer's storage was donated to an execution");
  }
  if (bytes) memcpy(dst, b->data, bytes);
  return CML_OK;
}

static cml_status_t cmlc_buffer_create_shared(cml_backend_t* backend, int device,
                                              const cml_shape_t* shape, cml_buffer_t** out_buffer,
                                              void** out_data) {
  cmlc_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(cmlc_buffer_create((cmlc_backend_t*)backend, device, shape, true, &b));
  if (cml_shape_byte_size(shape)) memset(b->data, 0, cml_shape_byte_size(shape));
  *out_buffer = &b->base;
  *out_data = b->data ? b->data : (void*)cmlc_empty_storage;
  return CML_OK;
}

static cml_status_t cmlc_buffer_data(cml_buffer_t* buffer, void** out_data) {
  cmlc_buffer_t* b = (cmlc_buffer_t*)buffer;
  if (!buffer->shared) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "c backend: buffer_data needs a shared buffer "
                           "(created with cml_buffer_create_shared)");
  }
  *out_data = b->data ? b->data : (void*)cmlc_empty_storage;
  return CML_OK;
}

static cml_status_t cmlc_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                               cml_buffer_t** out_buffer) {
  cmlc_backend_t* backend = (cmlc_backend_t*)buffer->backend;
  if (device == buffer->device) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "c backend: copy_to_device: the buffer is already on device %d", device);
  }
  if (device < 0 || device >= backend->base.device_count) {
    return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                           "c backend: copy_to_device: device %d out of range [0, %d)", device,
                           backend->base.device_count);
  }
  cmlc_buffer_t* src = (cmlc_buffer_t*)buffer;
  cmlc_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(cmlc_buffer_create(backend, device, &buffer->shape, false, &b));
  size_t bytes = cml_shape_byte_size(&buffer->shape);
  if (bytes) memcpy(b->data, src->data, bytes);
  *out_buffer = &b->base;
  return CML_OK;
}

//===--- executables ---===//

// Compiles |module|. An SPMD module is planned once and run by every device slot. An
// AutoSharding module is first turned into an SPMD module by the partitioner
// (src/distributed/partition.c), then planned the same way.
static cml_status_t cmlc_compile(cml_backend_t* backend, cml_module_t* module,
                                 cml_executable_t** out_executable) {
  CML_RETURN_IF_ERROR(cmlc_check_process((const cmlc_backend_t*)backend, "compile"));
  cml_allocator_t alloc = backend->allocator;
  cmlc_executable_t* exe = cml_allocator_malloc(alloc, sizeof *exe, CMLC_ALIGNMENT);
  if (!exe) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(exe, 0, sizeof *exe);
  cml_status_t st = cml_executable_init_base(&exe->base, backend, module);
  // distributed=mpi: every process compiles the same multi-device module.
  if (st == CML_OK) {
    st = cmlc_mpi_agree_module((cmlc_backend_t*)backend, module, &exe->mpi_fingerprint);
    if (st != CML_OK) cml_executable_deinit_base(&exe->base);
  }
  if (st != CML_OK) {
    cml_allocator_free(alloc, exe, sizeof *exe);
    return st;
  }
  if (pthread_mutex_init(&exe->mutex, NULL) != 0) {
    cml_executable_deinit_base(&exe->base);
    cml_allocator_free(alloc, exe, sizeof *exe);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_mutex_init failed");
  }
  // Dynamic axes: compile once, plan per binding set at execution (core/dynamic.h).
  if (cml__module_is_dynamic(module)) {
    cmlc_backend_t* cb = (cmlc_backend_t*)backend;
    if (module->distribution != CML_DISTRIBUTION_NONE) {
      st = cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "c backend: module \"%s\" has dynamic axes and a distribution "
                           "(SPMD/AutoSharding need static shapes)",
                           module->name ? module->name : "");
    } else if ((st = cml__module_check_dynamic(module)) == CML_OK) {
      exe->dynamic = cml_allocator_malloc(alloc, sizeof *exe->dynamic, 16);
      st = exe->dynamic ? cml__dynamic_cache_init(exe->dynamic, cb->options.dynamic_cache, alloc)
                        : cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    }
    if (st == CML_OK) {
      exe->backend = cb;
      exe->module = module;
      *out_executable = &exe->base;
      return CML_OK;
    }
    if (exe->dynamic) cml_allocator_free(alloc, exe->dynamic, sizeof *exe->dynamic);
    pthread_mutex_destroy(&exe->mutex);
    cml_executable_deinit_base(&exe->base);
    cml_allocator_free(alloc, exe, sizeof *exe);
    return st;
  }
  // AutoSharding: plan the SPMD module the partitioner makes (exe->module holds its reference;
  // the base keeps the global module for the shardings and shard shapes).
  cml_module_t* spmd = NULL;
  if (module->distribution == CML_DISTRIBUTION_AUTO_SHARDING) {
    st = cml__partition_module(module, backend, &spmd);
  }
  if (st == CML_OK) {
    // Constant folding runs kernels: in the environment the executions run in.
    const uint32_t fpenv =
        cml__fpenv_enter(cmlc_fpenv_of(&((const cmlc_backend_t*)backend)->options));
    st = cmlc_plan_build((cmlc_backend_t*)backend, spmd ? spmd : module, exe);
    cml__fpenv_leave(fpenv);
  }
  if (st != CML_OK) {
    cmlc_plan_deinit(exe);
    cml_module_release(spmd);
    pthread_mutex_destroy(&exe->mutex);
    cml_executable_deinit_base(&exe->base);
    cml_allocator_free(alloc, exe, sizeof *exe);
    return st;
  }
  *out_executable = &exe->base;
  return CML_OK;
}

static cml_status_t cmlc_compile_specialized(void* user, cml_module_t* module,
                                             cml_executable_t** out_executable) {
  return cmlc_compile((cml_backend_t*)user, module, out_executable);
}

// Runs |executable|; a dynamic one runs the plan of its inputs' binding set (cached; planned on
// the first execution of each set).
static cml_status_t cmlc_execute_any(cmlc_executable_t* exe, cml_buffer_t* const* inputs,
                                     const bool* donate, int device,
                                     const cml_execute_control_t* control,
                                     cml_buffer_t** out_results) {
  CML_RETURN_IF_ERROR(cmlc_check_process(exe->backend, "execute"));
  if (!exe->dynamic) return cmlc_execute(exe, inputs, donate, device, control, out_results);
  cml_executable_t* planned = NULL;
  CML_RETURN_IF_ERROR(cml__dynamic_executable_get(
      exe->dynamic, &exe->base, inputs, cmlc_compile_specialized, exe->base.backend, &planned));
  cml_status_t st =
      cmlc_execute((cmlc_executable_t*)planned, inputs, donate, device, control, out_results);
  cml_executable_release(planned);
  const cml_status_code_t code = cml_status_code(st);
  if (code == CML_STATUS_RESOURCE_EXHAUSTED || code == CML_STATUS_DEADLINE_EXCEEDED ||
      code == CML_STATUS_CANCELLED) {
    // Say which request was too big or stopped: a server sees many binding sets of one
    // executable.
    cml_axis_bindings_t key;
    cml_status_t kst = cml__dynamic_bindings(&exe->base, inputs, &key);
    if (kst == CML_OK) {
      char text[256];
      st = cml_status_annotate(st, "bindings %s", cml_axis_bindings_key(&key, text, sizeof text));
    }
    cml_status_free(kst);
  }
  return st;
}

static cml_status_t cmlc_vt_execute(cml_executable_t* executable, cml_buffer_t* const* inputs,
                                    const bool* donate, int device, cml_buffer_t** out_results) {
  return cmlc_execute_any((cmlc_executable_t*)executable, inputs, donate, device, NULL,
                          out_results);
}

static cml_status_t cmlc_vt_execute_with_control(cml_executable_t* executable,
                                                 cml_buffer_t* const* inputs, const bool* donate,
                                                 int device, const cml_execute_control_t* control,
                                                 cml_buffer_t** out_results) {
  return cmlc_execute_any((cmlc_executable_t*)executable, inputs, donate, device, control,
                          out_results);
}

static void cmlc_executable_destroy(cml_executable_t* executable) {
  cmlc_executable_t* exe = (cmlc_executable_t*)executable;
  cml_backend_t* backend = executable->backend;
  cml_allocator_t alloc = backend->allocator;
  if (exe->dynamic) {
    cml__dynamic_cache_deinit(exe->dynamic);
    cml_allocator_free(alloc, exe->dynamic, sizeof *exe->dynamic);
    exe->dynamic = NULL;
    exe->module = NULL;
  }
  cmlc_exec_free_contexts(exe);
  cml_module_t* spmd = exe->module != executable->module ? (cml_module_t*)exe->module : NULL;
  cmlc_plan_deinit(exe);
  cml_module_release(spmd);
  pthread_mutex_destroy(&exe->mutex);
  cml_backend_retain(backend);
  cml_executable_deinit_base(executable);
  cml_allocator_free(alloc, exe, sizeof *exe);
  cml_backend_release(backend);
}

// The module as planned: an AutoSharding module's SPMD partition, otherwise the module itself;
// then the plan: per function, the steps that run (kernel calls, fused loops with what they
// read, inline scalar steps) and what the compile-time optimizations did.
static cml_status_t cmlc_executable_dump(const cml_executable_t* executable, void* out) {
  const cmlc_executable_t* exe = (const cmlc_executable_t*)executable;
  const cml_module_t* m = exe->module ? exe->module : executable->module;
  cml_module_dump(m, out);
  FILE* f = (FILE*)out;
  const cmlc_opt_stats_t* st = &exe->stats;
  fprintf(f,
          "c plan: %u node(s) folded, %u merged, %u fused loop(s) of %u node(s) (%u "
          "reduction(s), %u register-resident), %u step(s) with prepared constants\n",
          st->folded, st->merged, st->fused_groups, st->fused_nodes, st->fused_reduces,
          st->fused_tiled, st->prepared);
  for (uint32_t fi = 0; exe->functions && fi < m->function_count; ++fi) {
    const cmlc_function_plan_t* fp = &exe->functions[fi];
    if (!fp->planned) continue;
    fprintf(f, "c plan of function %u: %u step(s), arena %zu bytes\n", fi, fp->step_count,
            fp->arena_size);
    for (uint32_t k = 0; k < fp->step_count; ++k) {
      const cmlc_step_t* s = &fp->steps[k];
      static const char* const kKinds[] = {"kernel", "alias",  "call",  "while",
                                           "if",     "merged", "fused", "scalar"};
      fprintf(f, "  %%%u %s: %s", s->node->first_output, cml_op_name(s->node->op),
              s->kind < sizeof kKinds / sizeof kKinds[0] ? kKinds[s->kind] : "?");
      if (s->kind == CMLC_STEP_FUSED && s->fused) {
        fprintf(f, ", ");
        cmlc_fused_describe(s->fused, f);
      } else if (s->kind == CMLC_STEP_KERNEL && s->entry.describe) {
        char text[160];
        text[0] = '\0';
        s->entry.describe(m, s->node, &exe->backend->options, text, sizeof text);
        fprintf(f, ", %s\n", text);
      } else {
        fprintf(f, "\n");
      }
    }
  }
  return CML_OK;  // (the core reports a stream that could not be written)
}

//===--- backend ---===//

// What backends released in a child of fork() left behind (cmlc_backend_destroy).
static void* volatile cmlc_left_behind[64];
static int cmlc_left_behind_count;

static void cmlc_backend_destroy(cml_backend_t* backend) {
  cmlc_backend_t* b = (cmlc_backend_t*)backend;
  cml_allocator_t alloc = backend->allocator;
  if (cml__process_id() != b->pid) {
    // A child of fork(): the threads to join and the condition variables they waited on belong
    // to the parent (joining or destroying them hangs or crashes); their state is left behind,
    // as is the storage cache, whose lock a parent thread may have held. The objects stay
    // reachable from here (leak checkers see them as kept, not lost).
    void* const parts[3] = {b->pool, b->crew, b->mpi_channel};
    for (int i = 0; i < 3; ++i) {
      if (parts[i] && cmlc_left_behind_count < 64) {
        cmlc_left_behind[cmlc_left_behind_count++] = parts[i];
      }
    }
    b->crew = NULL;
    b->pool = NULL;
    b->mpi_channel = NULL;
    b->storage_cache_ready = false;
  }
  cmlc_crew_destroy(b->crew);
  cmlc_pool_destroy(b->pool);
  cml__mpi_channel_destroy(b->mpi_channel);
  if (b->storage_cache_ready) {
    (void)cmlc_storage_drain(b);
    pthread_mutex_destroy(&b->storage_cache.mutex);
  }
  if (b->device_descriptions) {
    for (int i = 0; i < backend->device_count; ++i) {
      cml__runtime_strfree(alloc, b->device_descriptions[i]);
    }
    cml_allocator_free(alloc, b->device_descriptions,
                       sizeof(char*) * (size_t)backend->device_count);
  }
  cml_backend_deinit_base(backend);
  cml_allocator_free(alloc, b, sizeof *b);
}

static const char* cmlc_device_description(const cml_backend_t* backend, int device) {
  const cmlc_backend_t* b = (const cmlc_backend_t*)backend;
  if (device < 0 || device >= backend->device_count || !b->device_descriptions) return NULL;
  return b->device_descriptions[device];
}

static const cml_backend_vtable_t cmlc_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = cmlc_backend_destroy,
    .device_description = cmlc_device_description,
    .buffer_from_host = cmlc_buffer_from_host,
    .buffer_copy_to_host = cmlc_buffer_copy_to_host,
    .buffer_create_shared = cmlc_buffer_create_shared,
    .buffer_data = cmlc_buffer_data,
    .buffer_copy_to_device = cmlc_buffer_copy_to_device,
    .buffer_destroy = cmlc_buffer_free,
    .compile = cmlc_compile,
    .execute = cmlc_vt_execute,
    .execute_with_control = cmlc_vt_execute_with_control,
    .executable_destroy = cmlc_executable_destroy,
    .get_extension = NULL,
    .process_info = cmlc_mpi_process_info,
    .executable_dump = cmlc_executable_dump,
};

// The ops come from the dispatch table (dispatch.c), so what is advertised is what runs.
static void cmlc_fill_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options) {
  cmlc_dispatch_capabilities(caps, options);
  caps->dtypes |= CML_DSET_ALL | CML_DSET_PACKED | CML_DSET_INT1 | CML_DSET_MINIFLOAT;
  caps->functions = true;
  caps->shared_buffers = true;
  caps->dynamic_axes = true;  // compile once, one plan per binding set (core/dynamic.h)
  cml_capabilities_set_op(caps, CML_OP_DYNAMIC_DIMENSION_SIZE, true);
  cml_capabilities_set_op(caps, CML_OP_DYNAMIC_SHAPE, true);
  cml_capabilities_set_op(caps, CML_OP_DYNAMIC_RESHAPE, true);
  caps->prefer_constants_for_variables = false;
  caps->max_rank = CML_MAX_RANK;
  // SPMD over up to c:devices=N slots (spmd.c, exec.c); the collectives come from dispatch.c.
  caps->distributions = 1u << CML_DISTRIBUTION_NONE;
#if !defined(__wasi__)  // SPMD slots run on threads, which wasm32-wasi lacks
  caps->distributions |= 1u << CML_DISTRIBUTION_SPMD;
  caps->distributions |= 1u << CML_DISTRIBUTION_AUTO_SHARDING;  // src/distributed/partition.c
#endif
}

// Reads the options: environment first, then |config| overrides.
static cml_status_t cmlc_parse_options(const char* config, cmlc_options_t* out) {
  bool avx512 = true, avx2 = true, fusion = true, reference = false, quant_int8 = false;
  bool flush_denormals = false;
  int64_t threads = 0, devices = 1, dynamic_cache = CML__DYNAMIC_CACHE_DEFAULT;
  int64_t buffer_cache_mb = CMLC_STORAGE_CACHE_DEFAULT_MB;
  char distributed[16] = "";
  CML_RETURN_IF_ERROR(cml__env_bool("GOMLX_SIMD_AVX512", true, &avx512));
  CML_RETURN_IF_ERROR(cml__env_bool("GOMLX_SIMD_AVX2", true, &avx2));
  CML_RETURN_IF_ERROR(cml__env_bool("GOMLX_FUSION", true, &fusion));
  const cml__option_spec_t specs[] = {
      {.key = "threads",
       .type = CML__OPT_INT,
       .out = &threads,
       .check_range = true,
       .min = 0,
       .max = 4096,
       .help = "worker threads incl. the caller (0 = one per online CPU)"},
      {.key = "devices",
       .type = CML__OPT_INT,
       .out = &devices,
       .check_range = true,
       .min = 1,
       .max = 1024,
       .help = "virtual CPU devices (default 1)"},
      {.key = "distributed",
       .type = CML__OPT_STRING,
       .out = distributed,
       .capacity = sizeof distributed,
       .choices = "none|mpi",
       .help = "none or mpi (one process of an mpirun job; default none)"},
      {.key = "dynamic_cache",
       .type = CML__OPT_INT,
       .out = &dynamic_cache,
       .check_range = true,
       .min = 1,
       .max = CML__DYNAMIC_CACHE_MAX,
       .help = "specialized plans kept per executable with dynamic axes (default 16, LRU)"},
      {.key = "buffer_cache_mb",
       .type = CML__OPT_INT,
       .out = &buffer_cache_mb,
       .check_range = true,
       .min = 0,
       .max = 1 << 20,
       .help = "MiB of released buffer storage kept for reuse (default 256; 0: none)"},
      {.key = "reference",
       .type = CML__OPT_BOOL,
       .out = &reference,
       .help = "scalar reference kernels, no fusion (default false)"},
      {.key = "avx512",
       .type = CML__OPT_BOOL,
       .out = &avx512,
       .help = "allow AVX-512 kernels (default true; env GOMLX_SIMD_AVX512)"},
      {.key = "avx2",
       .type = CML__OPT_BOOL,
       .out = &avx2,
       .help = "allow AVX2+FMA kernels (default true; env GOMLX_SIMD_AVX2)"},
      {.key = "fusion",
       .type = CML__OPT_BOOL,
       .out = &fusion,
       .help = "fuse ops (default true; env GOMLX_FUSION)"},
      {.key = "quant_int8",
       .type = CML__OPT_BOOL,
       .out = &quant_int8,
       .help = "batch-1 GGML products with int8 activations (default false)"},
      {.key = "flush_denormals",
       .type = CML__OPT_BOOL,
       .out = &flush_denormals,
       .help = "flush denormal results to zero in kernels, FTZ (default false)"},
  };
  CML_RETURN_IF_ERROR(
      cml__config_parse("c", config, specs, sizeof specs / sizeof *specs, NULL, NULL));
#if !defined(CML__HAVE_FPENV)
  if (flush_denormals) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "c backend: flush_denormals=true needs x86-64 (the SSE control "
                           "register); this build has no way to set it");
  }
#endif
  memset(out, 0, sizeof *out);
  cmlc_cpu_features_t features;
  cmlc_cpu_detect(&features);
  cmlc_options_select_isa(&features, avx512, avx2, reference, out);
  out->reference = reference;
  out->fusion = fusion && !reference;
  out->quant_int8 = quant_int8;
  out->flush_denormals = flush_denormals;
  out->threads = threads > 0 ? (int)threads : cmlc_cpu_count();
#if defined(__wasi__)
  out->threads = 1;  // wasm32-wasi has no threads (the pool runs inline)
#endif
  out->devices = (int)devices;
  out->dynamic_cache = (int)dynamic_cache;
  out->buffer_cache_bytes = buffer_cache_mb << 20;
  return cmlc_mpi_setup(distributed, out);
}

static cml_status_t cmlc_backend_create(const char* config, cml_allocator_t allocator,
                                        cml_backend_t** out_backend) {
  *out_backend = NULL;
  cmlc_options_t options;
  CML_RETURN_IF_ERROR(cmlc_parse_options(config, &options));
  cmlc_backend_t* b = cml_allocator_malloc(allocator, sizeof *b, CMLC_ALIGNMENT);
  if (!b) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(b, 0, sizeof *b);
  b->pid = cml__process_id();
  char full[320];
  const bool mpi = options.process_count > 1;
  // Every option, as it runs (avx512 / avx2: the ISA level used, which a CPU without AVX-512
  // or avx512=false lowers).
  snprintf(full, sizeof full,
           "c:threads=%d,devices=%d,reference=%s,avx512=%s,avx2=%s,fusion=%s,quant_int8=%s,"
           "flush_denormals=%s,dynamic_cache=%d,buffer_cache_mb=%lld%s",
           options.threads, options.devices, options.reference ? "true" : "false",
           options.isa == CMLC_ISA_AVX512 ? "true" : "false",
           options.isa >= CMLC_ISA_AVX2 ? "true" : "false", options.fusion ? "true" : "false",
           options.quant_int8 ? "true" : "false", options.flush_denormals ? "true" : "false",
           options.dynamic_cache, (long long)(options.buffer_cache_bytes >> 20),
           mpi ? ",distributed=mpi" : "");
  // distributed=mpi: the global device space (process rank x local devices).
  const int global_devices = options.devices * (mpi ? options.process_count : 1);
  cml_status_t st =
      cml_backend_init_base(&b->base, &cmlc_vtable, allocator, "c", full, global_devices);
  if (st != CML_OK) {
    cml_allocator_free(allocator, b, sizeof *b);
    return st;
  }
  b->options = options;
  b->storage_cache_ready = pthread_mutex_init(&b->storage_cache.mutex, NULL) == 0;
  // From here on cmlc_backend_destroy cleans up whatever exists.
  b->device_descriptions =
      cml_allocator_malloc(allocator, sizeof(char*) * (size_t)global_devices, CMLC_ALIGNMENT);
  if (!b->device_descriptions) {
    cmlc_backend_destroy(&b->base);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  memset(b->device_descriptions, 0, sizeof(char*) * (size_t)global_devices);
  for (int i = 0; i < global_devices; ++i) {
    char text[128], where[48] = "";
    if (mpi) snprintf(where, sizeof where, "process %d, ", i / options.devices);
    snprintf(text, sizeof text, "cpu:%d (%s%s%s, %d thread%s)", i, where,
             cmlc_isa_name(options.isa), options.reference ? ", reference" : "", options.threads,
             options.threads == 1 ? "" : "s");
    b->device_descriptions[i] = cml__runtime_strdup(allocator, text);
    if (!b->device_descriptions[i]) {
      cmlc_backend_destroy(&b->base);
      return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    }
  }
  char desc[160];
  char job[64] = "";
  if (mpi) {
    snprintf(job, sizeof job, " in process %d of %d (MPI)", options.process_index,
             options.process_count);
  }
  snprintf(desc, sizeof desc, "pure C backend (%s, %d thread%s, %d device%s%s%s)",
           cmlc_isa_name(options.isa), options.threads, options.threads == 1 ? "" : "s",
           options.devices, options.devices == 1 ? "" : "s",
           options.reference ? ", reference kernels" : "", job);
  st = cml_backend_set_description(&b->base, desc);
  if (st == CML_OK) st = cmlc_pool_create(options.threads, allocator, &b->pool);
  // distributed=mpi: a communicator of the backend's own (every process creates its backends in
  // the same order: the configuration agreement above already required it).
  if (st == CML_OK && options.process_count > 1) st = cml__mpi_channel_create(&b->mpi_channel);
  // The slot threads of SPMD executions (started at the first one).
  if (st == CML_OK && options.devices > 1) {
    st = cmlc_crew_create(options.devices - 1, allocator, &b->crew);
  }
  if (st != CML_OK) {
    cmlc_backend_destroy(&b->base);
    return st;
  }
  cmlc_fill_capabilities(&b->base.capabilities, &b->options);
  *out_backend = &b->base;
  return CML_OK;
}

static int cmlc_default_priority(const char** out_config, const char** out_reason) {
  if (out_config) *out_config = "c";
  if (out_reason) *out_reason = "pure C backend (always available)";
  return 10;
}

const cml_backend_factory_t cml_c_backend_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR,
    .name = "c",
    .aliases = "go",
    .description = "pure C backend: no dependencies, SIMD kernels (AVX2, AVX-512), thread pool",
    .config_help = cmlc_backend_config_help,
    .create = cmlc_backend_create,
    .default_priority = cmlc_default_priority,
};
