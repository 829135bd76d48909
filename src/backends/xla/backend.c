// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/backend.c: the "xla" backend: a PJRT plugin (found, or auto-installed) behind
// cml's backend vtable. Graphs are lowered to StableHLO text and compiled by the plugin.
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/xla/install/install.h"
#include "backends/xla/stablehlo/emit_groups.h"
#include "backends/xla/stablehlo/emitter.h"
#include "backends/xla/xla_flags.h"
#include "backends/xla/xla_internal.h"
#include "base/base_internal.h"
#include "cml/backend_impl.h"
#include "cml/xla.h"
#include "core/dynamic.h"

typedef struct cml_xla_backend_t {
  cml_backend_t base;
  cml__xla_client_t* client;
  cml__xla_distributed_t* distributed;  // distributed=mpi: the key-value store of the client
  cml__xla_config_t config;
  bool is_cpu, is_cuda;
  char plugin_name[1024];
  char stablehlo_version[48];
  cml_xla_extension_t extension;
} cml_xla_backend_t;

typedef struct cml_xla_buffer_t {
  cml_buffer_t base;
  cml_pjrt_buffer_t* buffer;
  void* host;  // shared buffers: the memory the PJRT view points at
  size_t host_size;
} cml_xla_buffer_t;

typedef struct cml_xla_executable_t {
  cml_executable_t base;
  cml_pjrt_loaded_executable_t* executable;
  // Non-portable executables (SPMD, AutoSharding): the device slots and the backend device of
  // each (the module's device_assignment; the module is retained by the base). 0 and NULL for
  // portable single-device executables.
  int num_slots;
  const int32_t* slot_devices;
  // The slots that run on this process's devices, in slot order (|local_count| of them; all
  // slots on a single-process client): fixed by the client and the assignment, so computed at
  // compile instead of on every execute. NULL when |num_slots| is 0.
  int32_t* local_slots;
  int local_count;
  // A module with dynamic axes is compiled by XLA once per binding set, at execution, into
  // this cache (core/dynamic.h); |executable| is NULL then.
  cml__dynamic_cache_t* dynamic;
  // Main returns the divergence flag after the module's outputs (stablehlo/emit_guard.c): an
  // SPMD module whose If or While runs collectives.
  bool divergence_flag;
} cml_xla_executable_t;

static cml_xla_backend_t* cml_xla_backend_cast(const cml_backend_t* b) {
  return (cml_xla_backend_t*)b;
}

//===--- buffers ---===//

static cml_status_t cml_xla_check_dtype(const cml_xla_backend_t* b, const cml_shape_t* shape,
                                        const char* what) {
  if (!cml_capabilities_has_dtype(&b->base.capabilities, shape->dtype)) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: %s: dtype %s is not supported by the %s plugin", what,
                           cml_dtype_name(shape->dtype), b->plugin_name);
  }
  return CML_OK;
}

static cml_status_t cml_xla_buffer_wrap(cml_xla_backend_t* b, int device, const cml_shape_t* shape,
                                        cml_pjrt_buffer_t* pjrt, void* host, size_t host_size,
                                        cml_buffer_t** out) {
  cml_xla_buffer_t* buf = cml_allocator_malloc(b->base.allocator, sizeof *buf, 64);
  if (!buf) {
    cml__xla_buffer_destroy(b->client, pjrt);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  memset(buf, 0, sizeof *buf);
  cml_buffer_init_base(&buf->base, &b->base, shape, device, host != NULL);
  buf->buffer = pjrt;
  buf->host = host;
  buf->host_size = host_size;
  *out = &buf->base;
  return CML_OK;
}

// An execution's output objects are allocated before PJRT runs: once it has run, the donated
// inputs are gone, and a failure after that (no memory for an output's object) would hand them
// back to the caller consumed although the execution failed (the core promises that a failed
// execution consumes nothing).
static cml_status_t cml_xla_outputs_reserve(cml_xla_backend_t* b, size_t count,
                                            cml_xla_buffer_t** objects) {
  for (size_t i = 0; i < count; ++i) {
    objects[i] = cml_allocator_malloc(b->base.allocator, sizeof *objects[i], 64);
    if (!objects[i]) {
      for (size_t k = 0; k < i; ++k) {
        cml_allocator_free(b->base.allocator, objects[k], sizeof *objects[k]);
      }
      return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    }
  }
  return CML_OK;
}

// Frees the reserved objects not handed out (set to NULL when they are).
static void cml_xla_outputs_unreserve(cml_xla_backend_t* b, size_t count,
                                      cml_xla_buffer_t** objects) {
  for (size_t i = 0; i < count; ++i) {
    if (objects[i]) cml_allocator_free(b->base.allocator, objects[i], sizeof *objects[i]);
    objects[i] = NULL;
  }
}

// Makes the reserved |*object| the buffer of |pjrt| (cannot fail).
static cml_buffer_t* cml_xla_output_fill(cml_xla_backend_t* b, cml_xla_buffer_t** object,
                                         int device, const cml_shape_t* shape,
                                         cml_pjrt_buffer_t* pjrt) {
  cml_xla_buffer_t* buf = *object;
  *object = NULL;
  memset(buf, 0, sizeof *buf);
  cml_buffer_init_base(&buf->base, &b->base, shape, device, false);
  buf->buffer = pjrt;
  return &buf->base;
}

// In a child of fork() of a process that loaded XLA's plugin: the plugin's threads stayed in
// the parent and its locks may be held forever (an execution hung, a release crashed, a new
// client aborted the process). Every entry into the plugin is refused there, and releases leave
// the plugin's objects alone.
static bool cml_xla_forked(void) {
  const long loader = cml__xla_plugin_loader_pid();
  return loader != 0 && loader != cml__process_id();
}

static cml_status_t cml_xla_forked_status(const char* what) {
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                         "xla: %s in process %ld, a child of fork(): XLA's plugin was loaded by "
                         "process %ld and cannot run in the child; exec a new program there (or "
                         "use the c backend)",
                         what, cml__process_id(), cml__xla_plugin_loader_pid());
}

#define CML_XLA_REFUSE_IN_CHILD(what) \
  if (cml_xla_forked()) return cml_xla_forked_status(what)

static cml_status_t cml_xla_buffer_from_host(cml_backend_t* backend, int device,
                                             const cml_shape_t* shape, const void* data,
                                             cml_buffer_t** out_buffer) {
  cml_xla_backend_t* b = cml_xla_backend_cast(backend);
  *out_buffer = NULL;
  CML_XLA_REFUSE_IN_CHILD("buffer_from_host");
  CML_RETURN_IF_ERROR(cml_xla_check_dtype(b, shape, "buffer from host"));
  cml_pjrt_buffer_t* pjrt = NULL;
  CML_RETURN_IF_ERROR(cml__xla_buffer_from_host(b->client, device, shape, data, &pjrt));
  return cml_xla_buffer_wrap(b, device, shape, pjrt, NULL, 0, out_buffer);
}

static cml_status_t cml_xla_buffer_copy_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  CML_XLA_REFUSE_IN_CHILD("buffer_copy_to_host");
  cml_xla_buffer_t* buf = (cml_xla_buffer_t*)buffer;
  cml_xla_backend_t* b = cml_xla_backend_cast(buffer->backend);
  if (buf->host) {
    memcpy(dst, buf->host, size);
    return CML_OK;
  }
  return cml__xla_buffer_to_host(b->client, buf->buffer, &buffer->shape, dst, size);
}

static cml_status_t cml_xla_buffer_create_shared(cml_backend_t* backend, int device,
                                                 const cml_shape_t* shape,
                                                 cml_buffer_t** out_buffer, void** out_data) {
  cml_xla_backend_t* b = cml_xla_backend_cast(backend);
  *out_buffer = NULL;
  CML_XLA_REFUSE_IN_CHILD("buffer_create_shared");
  *out_data = NULL;
  if (!b->config.shared_buffers) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: shared buffers are off for the %s plugin (shared_buffers=false "
                           "or not a CPU plugin)",
                           b->plugin_name);
  }
  CML_RETURN_IF_ERROR(cml_xla_check_dtype(b, shape, "shared buffer"));
  if (cml_dtype_is_packed(shape->dtype)) {
    // cml's packed host layout is not the plugin's device layout for these types: host copies
    // convert between the two (see pjrt.c), a view over host memory cannot.
    char text[96];
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: shared buffer %s: packed dtypes cannot be shared with the %s "
                           "plugin (use cml_buffer_from_host)",
                           cml_shape_format(shape, text, sizeof text), b->plugin_name);
  }
  size_t size = cml_shape_byte_size(shape);
  size_t alloc = (size + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* host = cml_allocator_malloc(b->base.allocator, alloc, 64);
  if (!host) {
    char text[96];
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "xla: shared buffer %s: cannot allocate %zu bytes of host memory",
                           cml_shape_format(shape, text, sizeof text), alloc);
  }
  memset(host, 0, alloc);
  cml_pjrt_buffer_t* pjrt = NULL;
  cml_status_t st = cml__xla_buffer_create_view(b->client, device, shape, host, &pjrt);
  if (st != CML_OK) {
    cml_allocator_free(b->base.allocator, host, alloc);
    return st;
  }
  st = cml_xla_buffer_wrap(b, device, shape, pjrt, host, alloc, out_buffer);
  if (st != CML_OK) {
    cml_allocator_free(b->base.allocator, host, alloc);
    return st;
  }
  *out_data = host;
  return CML_OK;
}

static cml_status_t cml_xla_buffer_data(cml_buffer_t* buffer, void** out_data) {
  cml_xla_buffer_t* buf = (cml_xla_buffer_t*)buffer;
  *out_data = NULL;
  CML_XLA_REFUSE_IN_CHILD("buffer_data");
  if (!buf->host) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "xla: buffer_data needs a shared buffer (cml_buffer_create_shared)");
  }
  *out_data = buf->host;
  return CML_OK;
}

static cml_status_t cml_xla_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                                  cml_buffer_t** out_buffer) {
  CML_XLA_REFUSE_IN_CHILD("buffer_copy_to_device");
  cml_xla_buffer_t* buf = (cml_xla_buffer_t*)buffer;
  cml_xla_backend_t* b = cml_xla_backend_cast(buffer->backend);
  *out_buffer = NULL;
  if (device == buffer->device) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: copy_to_device: the buffer is already on device %d", device);
  }
  cml_pjrt_buffer_t* pjrt = NULL;
  CML_RETURN_IF_ERROR(cml__xla_buffer_copy_to_device(b->client, buf->buffer, device, &pjrt));
  return cml_xla_buffer_wrap(b, device, &buffer->shape, pjrt, NULL, 0, out_buffer);
}

static void cml_xla_buffer_destroy(cml_buffer_t* buffer) {
  if (cml_xla_forked()) return;  // left to the parent's plugin (see cml_xla_forked)
  cml_xla_buffer_t* buf = (cml_xla_buffer_t*)buffer;
  cml_xla_backend_t* b = cml_xla_backend_cast(buffer->backend);
  cml_allocator_t alloc = b->base.allocator;
  // The PJRT view goes first: it must not outlive the memory it points at.
  cml__xla_buffer_destroy(b->client, buf->buffer);
  if (buf->host) cml_allocator_free(alloc, buf->host, buf->host_size);
  cml_buffer_deinit_base(&buf->base);
  cml_allocator_free(alloc, buf, sizeof *buf);
}

//===--- executables ---===//

// XLA compiles on the calling thread and its compiler recurses once per nesting level of the
// module (about 12 KiB of stack a level on xla:cpu): from a thread with a small stack (a 256 KiB
// worker, a 2 MiB default pool thread) a module well within CML_MAX_NESTING_DEPTH would crash
// it. So emitting and compiling run on a thread of their own with a large stack (only the pages
// XLA touches are ever backed); the emitter measures that stack and refuses what would not fit.
// If the thread cannot be created, both run on the caller's thread, with the emitter's check
// against the caller's stack.
enum { CML_XLA_COMPILE_STACK_BYTES = 64 << 20 };

typedef struct cml_xla_compile_job_t {
  cml_xla_backend_t* backend;
  const cml_module_t* module;
  int num_slots;                         // 0: portable, else device slots (non-portable)
  cml_pjrt_loaded_executable_t* loaded;  // out
  bool divergence_flag;                  // out: main returns the flag last
  cml_status_t status;                   // out
} cml_xla_compile_job_t;

// XLA's CPU compiler stops the process (SIGFPE, a division by zero inside the plugin) on some
// arrays of about 2^39 bytes (512 GiB) and more: an elementwise op on U8[2^39 - 1], U8[2^39] or
// F32[2^38] does, U8[2^39 - 4096] and U8[5 * 2^37] do not. No device holds such an array, so
// every array from 2^39 - 2^16 bytes on is refused before XLA sees the module.
#define CML_XLA_MAX_ARRAY_BYTES (((uint64_t)1 << 39) - ((uint64_t)1 << 16))

static cml_status_t cml_xla_check_array_sizes(const cml_module_t* m) {
  for (uint32_t v = 1; v < m->value_count; ++v) {
    const cml_shape_t* s = &m->values[v].shape;
    uint64_t elements = 1;
    bool dynamic = false;
    for (int32_t d = 0; d < s->rank; ++d) {
      if (s->dims[d] < 0) dynamic = true;
      if (s->dims[d] > 0 && elements <= UINT64_MAX / (uint64_t)s->dims[d]) {
        elements *= (uint64_t)s->dims[d];
      } else if (s->dims[d] > 0) {
        elements = UINT64_MAX;
      } else {
        elements = 0;
      }
    }
    const int bits = cml_dtype_bits(s->dtype);
    if (dynamic || bits <= 0) continue;
    const uint64_t bytes =
        elements > UINT64_MAX / (uint64_t)bits ? UINT64_MAX : (elements * (uint64_t)bits + 7) / 8;
    if (bytes < CML_XLA_MAX_ARRAY_BYTES) continue;
    const cml_ir_node_t* node = &m->nodes[m->values[v].node];
    char text[160];
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "xla backend: %s gives %s, %llu bytes: XLA's compiler stops the process "
                           "on arrays of about 2^39 bytes (512 GiB) and more, so such modules are "
                           "refused",
                           cml_op_name(node->op), cml_shape_format(s, text, sizeof text),
                           (unsigned long long)bytes);
  }
  return CML_OK;
}

// The emission options |b| compiles module |m| with (the dump uses the same).
static void cml_xla_backend_emit_options(const cml_xla_backend_t* b, const cml_module_t* m,
                                         cml_xla_emit_options_t* opts) {
  cml_xla_emit_options_init(opts);
  opts->platform = b->client->platform_name;
  opts->tf32 = b->config.tf32;
  cml_xla_emit_options_distribution(opts, m);
}

static void cml_xla_emit_and_compile(cml_xla_compile_job_t* job) {
  cml_xla_backend_t* b = job->backend;
  const cml_module_t* m = job->module;
  job->status = cml_xla_check_array_sizes(m);
  if (job->status != CML_OK) return;
  cml_xla_emit_options_t opts;
  cml_xla_backend_emit_options(b, m, &opts);
  char* text = NULL;
  job->status = cml_xla_emit_stablehlo(m, &opts, &text);
  if (job->status == CML_OK) {
    job->status = cml_xla_emit_divergence_flag(m, &opts, &job->divergence_flag);
    if (job->status != CML_OK) free(text);
  }
  if (job->status != CML_OK) return;
  cml__xla_compile_config_t cc = {.portable = true, .num_replicas = 1, .num_partitions = 1};
  int64_t* ids = NULL;
  if (job->num_slots > 0) {
    // SPMD: N replicas of one partition; AutoSharding: one replica of N partitions (Shardy).
    // Either way slot d (replica or partition d) runs on device_assignment[d], given to PJRT
    // as the device's global id.
    ids = malloc((size_t)job->num_slots * sizeof *ids);
    if (!ids) {
      free(text);
      job->status = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      return;
    }
    for (int d = 0; d < job->num_slots; ++d) {
      int dev = m->device_assignment ? m->device_assignment[d] : d;
      ids[d] = b->client->device_ids ? b->client->device_ids[dev] : dev;
    }
    bool sharded = cml_xla_emit_is_sharded(m);
    cc = (cml__xla_compile_config_t){.portable = false,
                                     .num_replicas = sharded ? 1 : job->num_slots,
                                     .num_partitions = sharded ? job->num_slots : 1,
                                     .use_spmd_partitioning = true,
                                     .use_shardy_partitioner = sharded,
                                     .device_ids = ids};
  }
  uint8_t options[8192];
  size_t options_size = 0;
  job->status = cml__xla_compile_options_encode(&cc, options, sizeof options, &options_size);
  if (job->status == CML_OK) {
    job->status =
        cml__xla_compile(b->client, text, strlen(text), options, options_size, &job->loaded);
  }
  free(ids);
  free(text);
}

typedef struct cml_xla_big_stack_call_t {
  void (*fn)(void* arg);
  void* arg;
} cml_xla_big_stack_call_t;

static void* cml_xla_big_stack_main(void* arg) {
  const cml_xla_big_stack_call_t* call = arg;
  call->fn(call->arg);
  return NULL;
}

// Runs fn(arg) on a thread with a CML_XLA_COMPILE_STACK_BYTES stack and waits for it; on the
// caller's thread when that thread cannot be created. Every call into XLA's compiler goes
// through it (the caller may be a thread with a small stack).
static void cml_xla_on_big_stack(void (*fn)(void* arg), void* arg) {
  cml_xla_big_stack_call_t call = {fn, arg};
  pthread_attr_t attr;
  bool threaded = false;
  if (pthread_attr_init(&attr) == 0) {
    pthread_t thread;
    threaded = pthread_attr_setstacksize(&attr, CML_XLA_COMPILE_STACK_BYTES) == 0 &&
               cml__thread_create(&thread, &attr, cml_xla_big_stack_main, &call) == 0;
    pthread_attr_destroy(&attr);
    if (threaded) (void)pthread_join(thread, NULL);
  }
  if (!threaded) fn(arg);
}

static void cml_xla_compile_job_run(void* arg) {
  cml_xla_emit_and_compile((cml_xla_compile_job_t*)arg);
}

// The number of device slots |m| runs on when it needs a non-portable executable (more than
// one device, or SPMD on one device slot that is not device 0's portable run), else 0.
static int cml_xla_module_slots(const cml_module_t* m) {
  if (m->distribution == CML_DISTRIBUTION_NONE) return 0;
  if (m->num_devices > 1) return m->num_devices;
  return 0;  // one device slot: compiled portable, run on the device the caller picks
}

// Checks a sharding of main's parameter or output |i| (|what|) of |logical| shape: its mesh is
// one of the module's, the spec is valid, and every sharded dimension divides evenly. XLA
// itself drops a sharding whose dimension does not divide (the executable then expects the
// whole tensor on every device), so this is refused here with the numbers.
static cml_status_t cml_xla_check_sharding(const cml_module_t* m, const cml_sharding_t* s,
                                           const char* what, uint32_t i, const char* name,
                                           const cml_shape_t* logical, cml_shape_t* out_shard) {
  *out_shard = *logical;
  if (!s || !s->mesh) return CML_OK;  // replicated
  bool known = false;
  for (uint32_t k = 0; k < m->mesh_count && !known; ++k) {
    known =
        m->meshes[k] == s->mesh || strcmp(cml_mesh_name(m->meshes[k]), cml_mesh_name(s->mesh)) == 0;
  }
  char shape_text[128];
  cml_shape_format(logical, shape_text, sizeof shape_text);
  if (!known) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: compile: %s %u (\"%s\", %s) is sharded over mesh \"%s\", which is "
                           "not one of the module's meshes",
                           what, i, name ? name : "", shape_text, cml_mesh_name(s->mesh));
  }
  cml_status_t st = cml_sharding_validate(s);
  if (st == CML_OK) st = cml_sharding_shard_shape(s, logical, out_shard);
  if (st != CML_OK) {
    char spec[256];
    cml_sharding_format(s, spec, sizeof spec);
    return cml_status_annotate(st,
                               "xla: compile: %s %u (\"%s\", %s) with %s (XLA would silently "
                               "replicate a dimension that does not divide)",
                               what, i, name ? name : "", shape_text, spec);
  }
  return CML_OK;
}

// Validates the module's distribution against the client before anything reaches XLA: the
// device slots fit the addressable devices, the device assignment names distinct devices of
// the client (PJRT's default assignment and compile do not check this: reference §3.2), and
// under AutoSharding every mesh spans the module's devices (else XLA's verifier fails with
// "tile_assignment should have N devices") and every sharding divides.
static cml_status_t cml_xla_check_distribution(const cml_xla_backend_t* b, const cml_module_t* m) {
  if (m->distribution == CML_DISTRIBUTION_NONE && m->num_devices <= 1) return CML_OK;
  const char* strategy = cml_distribution_name(m->distribution);
  int n = m->num_devices > 1 ? m->num_devices : 1;
  int have = b->client->device_count;
  if (m->distribution == CML_DISTRIBUTION_NONE) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: compile: a module without a distribution strategy runs on one "
                           "device, not %d",
                           n);
  }
  if (n > have) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: compile: the %s module runs on %d device slots, but the %s plugin "
                           "has %d addressable device(s)%s",
                           strategy, n, b->plugin_name, have,
                           b->is_cpu ? " (xla:cpu,cpu_device_count=N sets the count)" : "");
  }
  if (m->device_assignment) {
    for (int d = 0; d < n; ++d) {
      int dev = m->device_assignment[d];
      if (dev < 0 || dev >= have) {
        return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                               "xla: compile: device assignment: slot %d runs on device %d, but "
                               "the %s plugin has devices 0..%d",
                               d, dev, b->plugin_name, have - 1);
      }
      for (int e = 0; e < d; ++e) {
        if (m->device_assignment[e] == dev) {
          return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                 "xla: compile: device assignment: slots %d and %d both run on "
                                 "device %d",
                                 e, d, dev);
        }
      }
    }
  }
  if (m->distribution != CML_DISTRIBUTION_AUTO_SHARDING) return CML_OK;
  if (m->mesh_count == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: compile: an AutoSharding module needs at least one mesh");
  }
  for (uint32_t k = 0; k < m->mesh_count; ++k) {
    int64_t size = cml_mesh_device_count(m->meshes[k]);
    if (size > 1 && size != n) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "xla: compile: mesh \"%s\" has %lld devices, but the module is "
                             "partitioned over %d: every mesh with more than one device must "
                             "span all of them",
                             cml_mesh_name(m->meshes[k]), (long long)size, n);
    }
  }
  const cml_ir_function_t* main_fn = &m->functions[0];
  for (uint32_t i = 0; i < main_fn->param_count; ++i) {
    uint32_t v = main_fn->params[i];
    cml_shape_t shard;
    CML_RETURN_IF_ERROR(
        cml_xla_check_sharding(m, m->param_shardings ? &m->param_shardings[i] : NULL, "parameter",
                               i, m->nodes[m->values[v].node].name, &m->values[v].shape, &shard));
  }
  for (uint32_t i = 0; i < main_fn->output_count; ++i) {
    cml_shape_t shard;
    CML_RETURN_IF_ERROR(
        cml_xla_check_sharding(m, m->output_shardings ? &m->output_shardings[i] : NULL, "output", i,
                               NULL, &m->values[main_fn->outputs[i]].shape, &shard));
  }
  return CML_OK;
}

static cml_status_t cml_xla_compile(cml_backend_t* backend, cml_module_t* module,
                                    cml_executable_t** out_executable);

static cml_status_t cml_xla_compile_specialized(void* user, cml_module_t* module,
                                                cml_executable_t** out_executable) {
  return cml_xla_compile((cml_backend_t*)user, module, out_executable);
}

// Dynamic axes: StableHLO programs here are static, so the executable only keeps the module;
// each binding set is specialized and compiled by XLA on its first execution (cached).
static cml_status_t cml_xla_compile_dynamic(cml_xla_backend_t* b, cml_module_t* module,
                                            cml_executable_t** out_executable) {
  if (module->distribution != CML_DISTRIBUTION_NONE) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: compile: module \"%s\" has dynamic axes and a distribution "
                           "(SPMD/AutoSharding need static shapes)",
                           module->name ? module->name : "");
  }
  CML_RETURN_IF_ERROR(cml__module_check_dynamic(module));
  cml_allocator_t alloc = b->base.allocator;
  cml_xla_executable_t* exe = cml_allocator_malloc(alloc, sizeof *exe, 64);
  if (!exe) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(exe, 0, sizeof *exe);
  exe->dynamic = cml_allocator_malloc(alloc, sizeof *exe->dynamic, 16);
  cml_status_t st = exe->dynamic ? cml_executable_init_base(&exe->base, &b->base, module)
                                 : cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  if (st == CML_OK) {
    int32_t capacity =
        b->config.dynamic_cache_set ? (int32_t)b->config.dynamic_cache : CML__DYNAMIC_CACHE_DEFAULT;
    st = cml__dynamic_cache_init(exe->dynamic, capacity, alloc);
    if (st != CML_OK) cml_executable_deinit_base(&exe->base);
  }
  if (st != CML_OK) {
    if (exe->dynamic) cml_allocator_free(alloc, exe->dynamic, sizeof *exe->dynamic);
    cml_allocator_free(alloc, exe, sizeof *exe);
    return st;
  }
  *out_executable = &exe->base;
  return CML_OK;
}

static void cml_xla_free_local_slots(const cml_xla_backend_t* b, cml_xla_executable_t* exe) {
  if (exe->local_slots) {
    cml_allocator_free(b->base.allocator, exe->local_slots,
                       (size_t)exe->num_slots * sizeof *exe->local_slots);
  }
  exe->local_slots = NULL;
  exe->local_count = 0;
}

static cml_status_t cml_xla_compile(cml_backend_t* backend, cml_module_t* module,
                                    cml_executable_t** out_executable) {
  cml_xla_backend_t* b = cml_xla_backend_cast(backend);
  *out_executable = NULL;
  CML_XLA_REFUSE_IN_CHILD("compile");
  CML_RETURN_IF_ERROR(cml_xla_check_distribution(b, module));
  if (cml__module_is_dynamic(module)) return cml_xla_compile_dynamic(b, module, out_executable);
  cml_xla_compile_job_t job = {.backend = b,
                               .module = module,
                               .num_slots = cml_xla_module_slots(module),
                               .loaded = NULL,
                               .status = CML_OK};
  cml_xla_on_big_stack(cml_xla_compile_job_run, &job);
  cml_status_t st = job.status;
  if (st != CML_OK) return st;
  cml_pjrt_loaded_executable_t* loaded = job.loaded;
  cml_xla_executable_t* exe = cml_allocator_malloc(b->base.allocator, sizeof *exe, 64);
  if (!exe) {
    cml__xla_executable_destroy(b->client, loaded);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  memset(exe, 0, sizeof *exe);
  st = cml_executable_init_base(&exe->base, backend, module);
  if (st != CML_OK) {
    cml__xla_executable_destroy(b->client, loaded);
    cml_allocator_free(b->base.allocator, exe, sizeof *exe);
    return st;
  }
  exe->executable = loaded;
  exe->divergence_flag = job.divergence_flag;
  exe->num_slots = job.num_slots;
  exe->slot_devices = job.num_slots ? module->device_assignment : NULL;
  if (job.num_slots > 0) {
    exe->local_slots = cml_allocator_malloc(b->base.allocator,
                                            (size_t)job.num_slots * sizeof *exe->local_slots, 16);
    if (!exe->local_slots) {
      cml__xla_executable_destroy(b->client, loaded);
      cml_executable_deinit_base(&exe->base);
      cml_allocator_free(b->base.allocator, exe, sizeof *exe);
      return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    }
    // A multi-process client runs this process's slots only (the core leaves the others'
    // entries NULL); PJRT takes their lists in slot order, which is the assignment's order.
    const cml__xla_client_t* client = b->client;
    for (int d = 0; d < job.num_slots; ++d) {
      const int dev = exe->slot_devices ? exe->slot_devices[d] : d;
      if (dev >= client->first_local_device &&
          dev < client->first_local_device + client->local_device_count) {
        exe->local_slots[exe->local_count++] = d;
      }
    }
  }
  // Under AutoSharding the base's input and output shapes are the shard shapes already
  // (cml_executable_init_base): what each slot's buffers hold.
  // PJRT writes as many outputs as the executable has into the list cml sizes from the module:
  // a disagreement (a plugin that keeps a tuple result whole) would write past it or leave
  // outputs unset, so it is refused here. Plugins without the calls are trusted.
  size_t pjrt_outputs = 0;
  st = cml__xla_executable_output_count(b->client, loaded, &pjrt_outputs);
  const size_t want_outputs = exe->base.output_count + (exe->divergence_flag ? 1 : 0);
  if (st == CML_OK && pjrt_outputs != want_outputs) {
    st = cml_status_make(CML_STATUS_INTERNAL,
                         "xla: compile: the %s plugin compiled the module into an executable with "
                         "%zu outputs, but the module returns %zu",
                         b->plugin_name, pjrt_outputs, want_outputs);
    cml__xla_executable_destroy(b->client, loaded);
    cml_xla_free_local_slots(b, exe);
    cml_executable_deinit_base(&exe->base);
    cml_allocator_free(b->base.allocator, exe, sizeof *exe);
    return st;
  }
  cml_status_free(st);
  *out_executable = &exe->base;
  return CML_OK;
}

// Reads and destroys the divergence flag of each of the |m| local slots (the last of their
// |per_slot| outputs in |outs|, set to NULL); FAILED_PRECONDITION naming the If or While whose
// predicate a replica group answered differently (stablehlo/emit_guard.c) when one is set.
static cml_status_t cml_xla_check_divergence(cml_xla_executable_t* exe, cml_pjrt_buffer_t** outs,
                                             size_t m, size_t per_slot) {
  cml_xla_backend_t* b = cml_xla_backend_cast(exe->base.backend);
  const cml_shape_t scalar = cml_shape_scalar(CML_DTYPE_I32);
  cml_status_t st = CML_OK;
  int32_t code = 0;
  char slots[96] = "";
  size_t used = 0;
  for (size_t j = 0; j < m; ++j) {
    cml_pjrt_buffer_t** flag = &outs[j * per_slot + per_slot - 1];
    int32_t v = 0;
    if (st == CML_OK) st = cml__xla_buffer_to_host(b->client, *flag, &scalar, &v, sizeof v);
    cml__xla_buffer_destroy(b->client, *flag);
    *flag = NULL;
    if (st != CML_OK || v == 0) continue;
    if (v > code) code = v;
    if (used + 16 < sizeof slots) {
      int w = snprintf(slots + used, sizeof slots - used, "%s%d", used ? ", " : "",
                       (int)exe->local_slots[j]);
      if (w > 0) used += (size_t)w;
    } else if (used + 4 < sizeof slots && slots[used - 1] != '.') {
      used += (size_t)snprintf(slots + used, sizeof slots - used, "...");
    }
  }
  const cml_module_t* mod = exe->base.module;
  if (st != CML_OK || code == 0) return st;
  if ((uint32_t)code > mod->node_count) {
    return cml_status_make(CML_STATUS_INTERNAL,
                           "xla: execute: the divergence flag names node %d of %u", (int)code - 1,
                           mod->node_count);
  }
  const cml_ir_node_t* node = &mod->nodes[code - 1];
  const cml_ir_function_t* fn = &mod->functions[node->function];
  const bool is_if = node->op == CML_OP_IF;
  return cml_status_make(
      CML_STATUS_FAILED_PRECONDITION,
      "xla: execute: the device slots of a replica group answered the %s of %s (node %d, in "
      "function %u \"%s\") differently (reported by slots %s); %s collectives, which every "
      "member of the group must reach, so the slots that went the other way would wait at "
      "them forever: the execution stops here instead. Compute the %s from values equal on "
      "every slot of the group (an AllReduce of it, for one)",
      is_if ? "predicate" : "condition", cml_op_name(node->op), (int)code - 1, node->function,
      fn->name ? fn->name : "", slots, is_if ? "its branches run" : "its loop runs",
      is_if ? "predicate" : "condition");
}

// A non-portable executable on its device slots: |inputs| and |out_results| are device-major
// (argument a of slot d at inputs[d * P + a], output k of slot d at out_results[d * R + k]).
// PJRT takes donation per argument position for every device at once, so position a is
// donated only when every slot's input a is donated (and none is a shared buffer).
static cml_status_t cml_xla_execute_slots(cml_xla_executable_t* exe, cml_buffer_t* const* inputs,
                                          const bool* donate, cml_buffer_t** out_results) {
  cml_executable_t* executable = &exe->base;
  cml_xla_backend_t* b = cml_xla_backend_cast(executable->backend);
  size_t n = (size_t)exe->num_slots;
  size_t n_in = executable->input_count, n_out = executable->output_count;
  for (size_t i = 0; i < n * n_out; ++i) out_results[i] = NULL;
  // A multi-process client runs this process's slots only (exe->local_slots, fixed at
  // compile); the core left the others' entries NULL.
  const int32_t* local = exe->local_slots;
  const size_t m = (size_t)exe->local_count;
  for (size_t j = 0; j < m; ++j) {
    const size_t d = (size_t)local[j];
    const int want = exe->slot_devices ? exe->slot_devices[d] : (int)d;
    for (size_t a = 0; a < n_in; ++a) {
      const cml_buffer_t* in = inputs[d * n_in + a];
      if (in->device != want) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "xla: execute: input %zu (parameter #%zu \"%s\" of device slot "
                               "%zu) is on device %d, but slot %zu runs on device %d",
                               d * n_in + a, a, executable->input_names[a], d, in->device, d, want);
      }
    }
  }
  if (m == 0) {
    // No slot of this process: its launch ids still advance with the others'.
    __atomic_add_fetch(&b->client->launch_counter, 1, __ATOMIC_RELAXED);
    return CML_OK;
  }
  // With the divergence flag, PJRT writes one more output per slot, last.
  const size_t n_pjrt = n_out + (exe->divergence_flag ? 1 : 0);
  size_t bytes = (m * n_in + 1) * sizeof(cml_pjrt_buffer_t*) + (n_in + 1) * sizeof(int64_t) +
                 (m * n_pjrt + 1) * sizeof(cml_pjrt_buffer_t*) +
                 (m * n_out + 1) * sizeof(cml_xla_buffer_t*);
  void* scratch = malloc(bytes);
  if (!scratch) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_pjrt_buffer_t** args = scratch;
  int64_t* keep = (int64_t*)(args + m * n_in + 1);
  cml_pjrt_buffer_t** outs = (cml_pjrt_buffer_t**)(keep + n_in + 1);
  cml_xla_buffer_t** objects = (cml_xla_buffer_t**)(outs + m * n_pjrt + 1);
  size_t keep_count = 0;
  for (size_t a = 0; a < n_in; ++a) {
    // A module with the divergence flag can fail after PJRT ran (a replica group answered a
    // predicate differently): nothing is donated to PJRT then, so that a failed execution
    // leaves its inputs intact. A successful one still consumes them (the core marks them).
    bool all = !exe->divergence_flag;
    for (size_t j = 0; j < m; ++j) {
      const size_t d = (size_t)local[j];
      cml_xla_buffer_t* in = (cml_xla_buffer_t*)inputs[d * n_in + a];
      args[j * n_in + a] = in->buffer;
      if (!donate[d * n_in + a] || in->host) all = false;
    }
    if (!all) keep[keep_count++] = (int64_t)a;
  }
  for (size_t i = 0; i < m * n_pjrt; ++i) outs[i] = NULL;
  cml_status_t st = cml_xla_outputs_reserve(b, m * n_out, objects);
  if (st != CML_OK) {
    free(scratch);
    return st;
  }
  st = cml__xla_execute_devices(b->client, exe->executable, m, args, n_in, keep, keep_count, outs,
                                n_pjrt);
  if (st == CML_OK && n_pjrt > n_out) st = cml_xla_check_divergence(exe, outs, m, n_pjrt);
  if (st == CML_OK) {
    for (size_t j = 0; j < m; ++j) {
      const size_t d = (size_t)local[j];
      const int dev = exe->slot_devices ? exe->slot_devices[d] : (int)d;
      for (size_t k = 0; k < n_out; ++k) {
        out_results[d * n_out + k] = cml_xla_output_fill(
            b, &objects[j * n_out + k], dev, &executable->output_shapes[k], outs[j * n_pjrt + k]);
      }
    }
  } else {
    // What a failed execution or divergence check left (the check destroyed the flags).
    for (size_t i = 0; i < m * n_pjrt; ++i) {
      if (outs[i]) cml__xla_buffer_destroy(b->client, outs[i]);
    }
  }
  cml_xla_outputs_unreserve(b, m * n_out, objects);
  free(scratch);
  return st;
}

// Cancellation and deadlines: the backend has no execute_with_control slot on purpose. The core
// checks a cancel token and a deadline once, before it calls this function (so a token
// cancelled earlier, or a deadline already passed, never reaches PJRT), and a module with
// dynamic axes checks them again after compiling a new specialization (cml__current_control);
// a running PJRT execution cannot be interrupted (PJRT_LoadedExecutable_Execute has no
// cancellation), so cml_executable_is_interruptible reports false for XLA executables.
static cml_status_t cml_xla_execute(cml_executable_t* executable, cml_buffer_t* const* inputs,
                                    const bool* donate, int device, cml_buffer_t** out_results) {
  cml_xla_executable_t* exe = (cml_xla_executable_t*)executable;
  CML_XLA_REFUSE_IN_CHILD("execute");
  if (exe->dynamic) {
    cml_executable_t* compiled = NULL;
    CML_RETURN_IF_ERROR(cml__dynamic_executable_get(exe->dynamic, executable, inputs,
                                                    cml_xla_compile_specialized,
                                                    executable->backend, &compiled));
    // A first binding set compiles for as long as XLA takes: a stop asked meanwhile (or a
    // deadline passed) is honoured before PJRT runs. The specialization stays cached.
    cml_status_t st = cml_execute_control_check(cml__current_control, "xla: execute");
    if (st == CML_OK) st = cml_xla_execute(compiled, inputs, donate, device, out_results);
    const cml_status_code_t code = cml_status_code(st);
    if (code == CML_STATUS_RESOURCE_EXHAUSTED || code == CML_STATUS_DEADLINE_EXCEEDED ||
        code == CML_STATUS_CANCELLED) {
      // Say which request was too big or stopped: a server sees many binding sets of one
      // executable.
      cml_axis_bindings_t key;
      cml_status_t kst = cml__dynamic_bindings(executable, inputs, &key);
      if (kst == CML_OK) {
        char text[256];
        st = cml_status_annotate(st, "xla: module \"%s\", bindings %s",
                                 executable->module->name ? executable->module->name : "",
                                 cml_axis_bindings_key(&key, text, sizeof text));
      }
      cml_status_free(kst);
    }
    cml_executable_release(compiled);
    return st;
  }
  if (exe->num_slots > 0) return cml_xla_execute_slots(exe, inputs, donate, out_results);
  cml_xla_backend_t* b = cml_xla_backend_cast(executable->backend);
  size_t n_in = executable->input_count, n_out = executable->output_count;
  for (size_t i = 0; i < n_out; ++i) out_results[i] = NULL;
  size_t bytes = (n_in + 1) * (sizeof(cml_pjrt_buffer_t*) + sizeof(int64_t)) +
                 (n_out + 1) * (sizeof(cml_pjrt_buffer_t*) + sizeof(cml_xla_buffer_t*));
  void* scratch = malloc(bytes);
  if (!scratch) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_pjrt_buffer_t** args = scratch;
  int64_t* keep = (int64_t*)(args + n_in + 1);
  cml_pjrt_buffer_t** outs = (cml_pjrt_buffer_t**)(keep + n_in + 1);
  cml_xla_buffer_t** objects = (cml_xla_buffer_t**)(outs + n_out + 1);
  size_t keep_count = 0;
  for (size_t i = 0; i < n_in; ++i) {
    cml_xla_buffer_t* in = (cml_xla_buffer_t*)inputs[i];
    args[i] = in->buffer;
    // Shared buffers are never donated: their memory belongs to the caller.
    if (!donate[i] || in->host) keep[keep_count++] = (int64_t)i;
  }
  cml_status_t st = cml_xla_outputs_reserve(b, n_out, objects);
  if (st != CML_OK) {
    free(scratch);
    return st;
  }
  st = cml__xla_execute(b->client, exe->executable, device, args, n_in, keep, keep_count, outs,
                        n_out);
  if (st == CML_OK) {
    for (size_t k = 0; k < n_out; ++k) {
      out_results[k] =
          cml_xla_output_fill(b, &objects[k], device, &executable->output_shapes[k], outs[k]);
    }
  }
  cml_xla_outputs_unreserve(b, n_out, objects);
  free(scratch);
  return st;
}

// The StableHLO text the module compiled from, emitted again with the same options (a module
// with dynamic axes compiles per binding set: its module listing instead).
static cml_status_t cml_xla_executable_dump(const cml_executable_t* executable, void* out) {
  const cml_xla_executable_t* exe = (const cml_xla_executable_t*)executable;
  if (exe->dynamic) {
    cml_module_dump(executable->module, out);
    return CML_OK;
  }
  cml_xla_emit_options_t opts;
  cml_xla_backend_emit_options(cml_xla_backend_cast(executable->backend), executable->module,
                               &opts);
  char* text = NULL;
  CML_RETURN_IF_ERROR(cml_xla_emit_stablehlo(executable->module, &opts, &text));
  fputs(text, (FILE*)out);
  free(text);
  return CML_OK;
}

static void cml_xla_executable_destroy(cml_executable_t* executable) {
  if (cml_xla_forked()) return;  // left to the parent's plugin (see cml_xla_forked)
  cml_xla_executable_t* exe = (cml_xla_executable_t*)executable;
  cml_xla_backend_t* b = cml_xla_backend_cast(executable->backend);
  cml_allocator_t alloc = b->base.allocator;
  if (exe->dynamic) {
    cml__dynamic_cache_deinit(exe->dynamic);
    cml_allocator_free(alloc, exe->dynamic, sizeof *exe->dynamic);
  }
  if (exe->executable) cml__xla_executable_destroy(b->client, exe->executable);
  cml_xla_free_local_slots(b, exe);
  cml_executable_deinit_base(&exe->base);
  cml_allocator_free(alloc, exe, sizeof *exe);
}

//===--- backend ---===//

static const char* cml_xla_device_description(const cml_backend_t* backend, int device) {
  const cml_xla_backend_t* b = cml_xla_backend_cast(backend);
  if (device < 0 || device >= b->client->device_count) return "invalid device";
  return b->client->device_descriptions[device];
}

static const void* cml_xla_get_extension(const cml_backend_t* backend, const char* name) {
  const cml_xla_backend_t* b = cml_xla_backend_cast(backend);
  if (name && strcmp(name, CML_XLA_EXTENSION_NAME) == 0) return &b->extension;
  return NULL;
}

// Multi-process clients (distributed=mpi): the client's devices are the job's, ordered by
// process; single-process clients hold them all (process 0 of 1).
static void cml_xla_process_info(const cml_backend_t* backend, cml_process_info_t* out) {
  const cml__xla_client_t* c = cml_xla_backend_cast(backend)->client;
  out->process_index = c->process_count > 1 ? c->process_index : 0;
  out->process_count = c->process_count > 1 ? c->process_count : 1;
  out->first_local_device = c->first_local_device;
  out->local_device_count = c->local_device_count;
}

static void cml_xla_destroy(cml_backend_t* backend) {
  if (cml_xla_forked()) return;  // left to the parent's plugin (see cml_xla_forked)
  cml_xla_backend_t* b = cml_xla_backend_cast(backend);
  cml_allocator_t alloc = b->base.allocator;
  // The plugin may use the key-value store until its client is gone.
  cml__xla_client_destroy(b->client);
  cml__xla_distributed_destroy(b->distributed);
  cml_backend_deinit_base(&b->base);
  cml_allocator_free(alloc, b, sizeof *b);
}

static const cml_backend_vtable_t cml_xla_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = cml_xla_destroy,
    .device_description = cml_xla_device_description,
    .buffer_from_host = cml_xla_buffer_from_host,
    .buffer_copy_to_host = cml_xla_buffer_copy_to_host,
    .buffer_create_shared = cml_xla_buffer_create_shared,
    .buffer_data = cml_xla_buffer_data,
    .buffer_copy_to_device = cml_xla_buffer_copy_to_device,
    .buffer_destroy = cml_xla_buffer_destroy,
    .compile = cml_xla_compile,
    .execute = cml_xla_execute,
    .executable_destroy = cml_xla_executable_destroy,
    .get_extension = cml_xla_get_extension,
    .process_info = cml_xla_process_info,
    .executable_dump = cml_xla_executable_dump,
};

static void cml_xla_fill_capabilities(cml_xla_backend_t* b) {
  cml_capabilities_t* caps = &b->base.capabilities;
  // The ops the StableHLO emitter lowers (by ops.def group, stablehlo/emit_groups.c).
  cml_xla_emit_capabilities(caps);
  caps->dtypes = CML_DSET_BOOL | CML_DSET_INT | CML_DSET_FLOAT32_64 |
                 CML_DTYPE_BIT(CML_DTYPE_BF16) | CML_DSET_COMPLEX | CML_DSET_PACKED;
  caps->functions = true;
  // Dynamic axes: one XLA compile per binding set, cached (cml_xla_compile_dynamic); the
  // dynamic ops become constants and reshapes before the emitter sees them.
  caps->dynamic_axes = true;
  cml_capabilities_set_op(caps, CML_OP_DYNAMIC_DIMENSION_SIZE, true);
  cml_capabilities_set_op(caps, CML_OP_DYNAMIC_SHAPE, true);
  cml_capabilities_set_op(caps, CML_OP_DYNAMIC_RESHAPE, true);
  caps->prefer_constants_for_variables = false;
  caps->shared_buffers = b->config.shared_buffers;
  caps->max_rank = CML_MAX_RANK;
  // SPMD (num_replicas) and AutoSharding (Shardy partitions); the collective ops come from the
  // emitter's lowering table above.
  caps->distributions = (1u << CML_DISTRIBUTION_NONE);
  if (cml_xla_emit_lowers_group(CML_OPG_COLLECTIVE)) {
    caps->distributions |= (1u << CML_DISTRIBUTION_SPMD) | (1u << CML_DISTRIBUTION_AUTO_SHARDING);
  }
}

// Float16 is advertised only when the plugin compiles an f16 program (it does on CPU and CUDA,
// but other plugins may not).
// Whether the plugin compiles |program|. (Backend creation, which probes, runs on a large
// stack: cml_xla_create.)
static bool cml_xla_probe_program(cml_xla_backend_t* b, const char* program, size_t length) {
  uint8_t options[128];
  size_t size = 0;
  cml__xla_compile_config_t cc = {.portable = true, .num_replicas = 1, .num_partitions = 1};
  cml_status_t st = cml__xla_compile_options_encode(&cc, options, sizeof options, &size);
  cml_pjrt_loaded_executable_t* exe = NULL;
  if (st == CML_OK) st = cml__xla_compile(b->client, program, length, options, size, &exe);
  bool ok = st == CML_OK;
  cml_status_free(st);
  cml__xla_executable_destroy(b->client, exe);
  return ok;
}

static bool cml_xla_probe_f16(cml_xla_backend_t* b) {
  static const char kProgram[] =
      "module @cml_f16_probe {\n"
      "  func.func public @main(%a: tensor<2xf16>, %b: tensor<2xf16>) -> tensor<2xf16> {\n"
      "    %c = \"stablehlo.add\"(%a, %b) : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>\n"
      "    \"func.return\"(%c) : (tensor<2xf16>) -> ()\n"
      "  }\n"
      "}\n";
  return cml_xla_probe_program(b, kProgram, sizeof kProgram - 1);
}

// The float8/float4 kinds the plugin compiles (f32 -> type -> f32 converts): one program for
// them all, then one per type when that fails.
static cml_dtype_set_t cml_xla_probe_minifloats(cml_xla_backend_t* b) {
  char program[4096];
  cml_dtype_set_t all = 0;
  for (int pass = 0; pass < 2; ++pass) {
    cml_dtype_set_t found = 0;
    for (int d = 1; d < CML_DTYPE_COUNT; ++d) {
      if (!cml_dtype_is_minifloat((cml_dtype_t)d)) continue;
      size_t n = (size_t)snprintf(
          program, sizeof program,
          "module @cml_dtype_probe {\n"
          "  func.func public @main(%%a: tensor<2xf32>) -> tensor<2xf32> {\n"
          "    %%r0 = \"stablehlo.abs\"(%%a) : (tensor<2xf32>) -> tensor<2xf32>\n");
      int k = 0;
      for (int e = 1; e < CML_DTYPE_COUNT && n < sizeof program; ++e) {
        if (!cml_dtype_is_minifloat((cml_dtype_t)e) || (pass == 1 && e != d)) continue;
        const char* t = cml_dtype_stablehlo_name((cml_dtype_t)e);
        n += (size_t)snprintf(program + n, sizeof program - n,
                              "    %%m%d = \"stablehlo.convert\"(%%r%d) : (tensor<2xf32>) -> "
                              "tensor<2x%s>\n    %%r%d = \"stablehlo.convert\"(%%m%d) : "
                              "(tensor<2x%s>) -> tensor<2xf32>\n",
                              k, k, t, k + 1, k, t);
        ++k;
      }
      if (n >= sizeof program) return 0;
      n += (size_t)snprintf(program + n, sizeof program - n,
                            "    \"func.return\"(%%r%d) : (tensor<2xf32>) -> ()\n  }\n}\n", k);
      if (n >= sizeof program) return 0;
      if (pass == 0) {
        if (cml_xla_probe_program(b, program, n)) return CML_DSET_MINIFLOAT;
        break;
      }
      if (cml_xla_probe_program(b, program, n)) found |= CML_DTYPE_BIT(d);
    }
    if (pass == 1) all = found;
  }
  return all;
}

static bool cml_xla_want_gpu(void) { return cml__xla_has_nvidia_gpu("/dev", false); }

// Finds (or installs) the plugin for |config|; writes a malloc'd path.
static cml_status_t cml_xla_locate(const cml__xla_config_t* config, const char* name,
                                   char** out_path) {
  *out_path = NULL;
  if (config->plugin_is_path) {
    *out_path = strdup(config->plugin);
    return *out_path ? CML_OK : cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  cml_status_t st = cml__xla_find_plugin(&search, name, out_path);
  if (st == CML_OK) return CML_OK;
  const cml__xla_wheel_t* wheel = cml__xla_wheel_for(name);
  if (cml_status_code(st) == CML_STATUS_NOT_FOUND && wheel && !cml__xla_auto_install_enabled()) {
    return cml_status_annotate(st,
                               "xla: auto-install is off (GOMLX_NO_AUTO_INSTALL is set or "
                               "cml_xla_enable_auto_install(false) was called)");
  }
  if (cml_status_code(st) != CML_STATUS_NOT_FOUND || !wheel || !cml__xla_auto_install_enabled()) {
    return st;
  }
  if (strcmp(name, "cuda") == 0 && !cml__xla_has_nvidia_gpu("/dev", true)) return st;
  cml_status_free(st);
  cml__xla_install_params_t params;
  cml__xla_install_params_init(&params);
  st = cml__xla_install(wheel, &params, out_path, NULL);
  return cml_status_annotate(st, "xla: auto-install (turn it off with GOMLX_NO_AUTO_INSTALL=1)");
}

// True when |path| is where cml installs |wheel| (~/.local/lib/go-xla/<target>).
static bool cml_xla_is_install_target(const cml__xla_wheel_t* wheel, const char* path) {
  char dir[4096], target[4400];
  cml_status_t st = cml__xla_default_install_dir(dir, sizeof dir);
  cml_status_free(st);
  if (st != CML_OK) return false;
  snprintf(target, sizeof target, "%s/%s", dir, wheel->target);
  return strcmp(target, path) == 0;
}

// Loads the plugin. A copy that cml installed is checked against its manifest first (size and
// sha256, hashed once per process per file): dlopen of a damaged file can crash the process.
// A broken copy that cml installed (or one at cml's install path) is reinstalled once when
// auto-install is on; otherwise the status names the file and the fix.
static cml_status_t cml_xla_load(const char* name, char** path,
                                 const cml__xla_plugin_t** out_plugin) {
  bool ours = cml__xla_install_has_manifest(*path);
  cml_status_t st = ours ? cml__xla_install_check(*path, true) : CML_OK;
  if (st == CML_OK) st = cml__xla_plugin_load(*path, out_plugin);
  if (st == CML_OK) return CML_OK;
  const cml__xla_wheel_t* wheel = cml__xla_wheel_for(name);
  cml_status_code_t code = cml_status_code(st);
  bool broken = code == CML_STATUS_FAILED_PRECONDITION || code == CML_STATUS_UNAVAILABLE;
  bool repairable = wheel && (ours || cml_xla_is_install_target(wheel, *path));
  if (!broken || !repairable) return st;
  if (!cml__xla_auto_install_enabled()) {
    return cml_status_annotate(st,
                               "xla: the %s plugin is damaged and auto-install is off "
                               "(GOMLX_NO_AUTO_INSTALL or cml_xla_enable_auto_install(false)); "
                               "repair it with `cml install %s`",
                               wheel->plugin, wheel->plugin);
  }
  cml_status_free(st);
  cml__xla_install_params_t params;
  cml__xla_install_params_init(&params);
  params.force = true;
  char* fresh = NULL;
  st = cml__xla_install(wheel, &params, &fresh, NULL);
  if (st != CML_OK) return cml_status_annotate(st, "xla: reinstalling a broken plugin");
  free(*path);
  *path = fresh;
  return cml__xla_plugin_load(*path, out_plugin);
}

// visible_devices must name devices the client has (the CPU plugin ignores the option, and a
// GPU plugin drops ids it does not have without a word).
static cml_status_t cml_xla_check_visible_devices(const cml__xla_config_t* config, bool is_cpu,
                                                  const cml__xla_client_t* client) {
  // In a multi-process client the ids are global and visible_devices are the plugin's local
  // device numbers: nothing to compare.
  if (!config->visible_devices_set || client->process_count > 1) return CML_OK;
  // A plugin that applied the option kept exactly the devices asked for (duplicates are refused
  // by the parser), whatever ids it gives them.
  if (!is_cpu && (size_t)client->device_count == config->visible_devices.count) return CML_OK;
  for (size_t i = 0; i < config->visible_devices.count; ++i) {
    int64_t want = config->visible_devices.values[i];
    bool found = false;
    for (int d = 0; d < client->device_count && !found; ++d) {
      found = client->device_ids ? client->device_ids[d] == want : d == want;
    }
    if (!found) {
      char ids[256] = "";
      size_t used = 0;
      for (int d = 0; d < client->device_count && used < sizeof ids; ++d) {
        int w = snprintf(ids + used, sizeof ids - used, "%s%lld", d ? ", " : "",
                         client->device_ids ? (long long)client->device_ids[d] : (long long)d);
        if (w < 0) break;
        used += (size_t)w;
      }
      return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                             "xla backend: visible_devices names device %lld, but the %s plugin "
                             "has %d device(s) (ids: %s)",
                             (long long)want, client->platform_name, client->device_count,
                             client->device_count ? ids : "none");
    }
  }
  return CML_OK;
}

// Names of the accelerator plugins other than CUDA (TPU, ROCm, Metal, a generic GPU): their
// platform is known from the name, and their client creation is too costly to probe.
static bool cml_xla_name_is_other_accelerator(const char* name) {
  static const char* const kNames[] = {"tpu", "rocm", "metal", "gpu"};
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; ++i) {
    const size_t n = strlen(kNames[i]);
    for (const char* p = name; *p; ++p) {
      size_t j = 0;
      while (j < n && p[j] && tolower((unsigned char)p[j]) == kNames[i][j]) ++j;
      if (j == n) return true;
    }
  }
  return false;
}
// The plugins start their worker threads with the process's default thread stack (glibc takes it
// from `ulimit -s` at startup); XLA's CPU plugin overflows stacks of 256 KiB and less while
// running ordinary modules (SIGSEGV in one of its threads). Refused up front instead.
enum { CML_XLA_MIN_THREAD_STACK = 512 << 10 };

static cml_status_t cml_xla_check_thread_stack(void) {
  pthread_attr_t attr;
  size_t size = 0;
  if (pthread_getattr_default_np(&attr) != 0) return CML_OK;
  int rc = pthread_attr_getstacksize(&attr, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0 || size >= CML_XLA_MIN_THREAD_STACK) return CML_OK;
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                         "xla backend: new threads of this process get %zu KiB stacks (`ulimit -s` "
                         "when it started, or pthread_setattr_default_np); the PJRT plugins run "
                         "their worker threads on them and XLA's overflow below %d KiB: raise "
                         "the limit (e.g. `ulimit -s 8192`)",
                         size >> 10, CML_XLA_MIN_THREAD_STACK >> 10);
}

static cml_status_t cml_xla_create_impl(const char* config_text, cml_allocator_t allocator,
                                        cml_backend_t** out_backend) {
  *out_backend = NULL;
  CML_XLA_REFUSE_IN_CHILD("backend creation");
  cml__xla_config_t config;
  CML_RETURN_IF_ERROR(cml__xla_config_parse(config_text, &config));
  CML_RETURN_IF_ERROR(cml_xla_check_thread_stack());
  char name[1024];
  if (config.plugin_is_path) {
    const char* base = strrchr(config.plugin, '/');
    base = base ? base + 1 : config.plugin;
    if (!cml__xla_plugin_name_from_file(base, name, sizeof name)) {
      snprintf(name, sizeof name, "%s", base);
    }
  } else if (config.plugin[0]) {
    snprintf(name, sizeof name, "%s", config.plugin);
  } else {
    snprintf(name, sizeof name, "%s",
             cml_xla_want_gpu() ? "cuda" : (cml__xla_has_tpu(NULL, 0) ? "tpu" : "cpu"));
  }
  bool is_cpu = cml__xla_name_is_cpu(name), is_cuda = cml__xla_name_is_cuda(name);
  const bool distributed = config.distributed_set && strcmp(config.distributed, "mpi") == 0;
  if (distributed) CML_RETURN_IF_ERROR(cml__xla_distributed_check_built());
  char* path = NULL;
  CML_RETURN_IF_ERROR(cml_xla_locate(&config, name, &path));
  if (is_cuda) {
    // XLA reads XLA_FLAGS when the plugin loads: point it at the CUDA tools next to the plugin.
    const char* checks = getenv("GOPJRT_CUDA_CHECKS");
    bool skip = checks && (strcmp(checks, "0") == 0 || strcmp(checks, "no") == 0);
    char data_dir[4096], flags[8192];
    if (!skip && cml__xla_cuda_data_dir(path, data_dir, sizeof data_dir) &&
        cml__xla_flags_with_cuda_dir(getenv("XLA_FLAGS"), data_dir, flags, sizeof flags)) {
      setenv("XLA_FLAGS", flags, 1);
    }
  }
  const cml__xla_plugin_t* plugin = NULL;
  cml_status_t st = cml_xla_load(name, &path, &plugin);
  free(path);
  if (st != CML_OK) return st;
  if (!is_cpu && !is_cuda && !cml_xla_name_is_other_accelerator(name)) {
    // A plugin whose file name does not say its platform (xla:/path/real.so): the options to
    // send depend on it (a CPU plugin rejects the GPU ones), so ask a client made without
    // options, after the XLA_FLAGS check that guards every client creation.
    st = cml__xla_check_flags(plugin, getenv("XLA_FLAGS"), NULL, 0);
    if (st != CML_OK) return st;
    cml__xla_client_t* probe = NULL;
    st = cml__xla_client_create(plugin, NULL, 0, &probe);
    if (st != CML_OK) return cml_status_annotate(st, "xla: plugin %s", plugin->path);
    is_cpu = strcmp(probe->platform_name, "cpu") == 0;
    is_cuda = strcmp(probe->platform_name, "cuda") == 0;
    cml__xla_client_destroy(probe);
  }
  st = cml__xla_config_resolve(&config, is_cpu, is_cuda);
  if (st != CML_OK) return st;
  cml__xla_option_t options[8];
  size_t option_count = cml__xla_config_client_options(&config, is_cpu, options, 8);
  cml__xla_client_t* client = NULL;
  // XLA_FLAGS the plugin rejects would end the process at client creation: check them first.
  st = cml__xla_check_flags(plugin, getenv("XLA_FLAGS"), options, option_count);
  if (st != CML_OK) return st;
  cml__xla_distributed_t* dist = NULL;
  if (distributed) {
    char agreed[2048];
    cml__xla_config_format(&config, name, agreed, sizeof agreed);
    st = cml__xla_distributed_client_create(plugin, name, agreed, options, option_count, &dist,
                                            &client);
    if (st != CML_OK) return st;
  } else {
    st = cml__xla_client_create(plugin, options, option_count, &client);
    if (st != CML_OK) return cml_status_annotate(st, "xla: plugin %s", plugin->path);
  }
  st = cml_xla_check_visible_devices(&config, is_cpu || strcmp(client->platform_name, "cpu") == 0,
                                     client);
  if (st != CML_OK) {
    cml__xla_client_destroy(client);
    cml__xla_distributed_destroy(dist);
    return st;
  }
  cml_xla_backend_t* b = cml_allocator_malloc(allocator, sizeof *b, 64);
  if (!b) {
    cml__xla_client_destroy(client);
    cml__xla_distributed_destroy(dist);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  memset(b, 0, sizeof *b);
  b->client = client;
  b->distributed = dist;
  b->config = config;
  b->is_cpu = is_cpu || strcmp(client->platform_name, "cpu") == 0;
  b->is_cuda = is_cuda || strcmp(client->platform_name, "cuda") == 0;
  snprintf(b->plugin_name, sizeof b->plugin_name, "%s", name);
  char full[2048];
  cml__xla_config_format(&b->config, config.plugin_is_path ? config.plugin : name, full,
                         sizeof full);
  char with_name[2100];
  snprintf(with_name, sizeof with_name, "xla:%s", full);
  st = cml_backend_init_base(&b->base, &cml_xla_vtable, allocator, "xla", with_name,
                             client->device_count);
  if (st != CML_OK) {
    cml__xla_client_destroy(client);
    cml__xla_distributed_destroy(dist);
    cml_allocator_free(allocator, b, sizeof *b);
    return st;
  }
  cml_xla_fill_capabilities(b);
  if (cml_xla_probe_f16(b)) b->base.capabilities.dtypes |= CML_DTYPE_BIT(CML_DTYPE_F16);
  b->base.capabilities.dtypes |= cml_xla_probe_minifloats(b);
  b->extension = (cml_xla_extension_t){
      .struct_size = sizeof(cml_xla_extension_t),
      .plugin_name = b->plugin_name,
      .plugin_path = plugin->path,
      .pjrt_major = plugin->major_version,
      .pjrt_minor = plugin->minor_version,
      .xla_version = plugin->xla_version,
      .stablehlo_version = plugin->stablehlo_version,
      .platform_name = client->platform_name,
      .platform_version = client->platform_version,
  };
  char description[4096];
  int used = snprintf(description, sizeof description,
                      "XLA via PJRT plugin %s (%s, PJRT %d.%d), platform %s %s, %d device(s)", name,
                      plugin->path, plugin->major_version, plugin->minor_version,
                      client->platform_name, client->platform_version, client->device_count);
  if (client->process_count > 1 && used > 0 && (size_t)used < sizeof description) {
    snprintf(description + used, sizeof description - (size_t)used,
             " over %d MPI processes (this is process %d, with devices %d..%d)",
             client->process_count, client->process_index, client->first_local_device,
             client->first_local_device + client->local_device_count - 1);
  }
  st = cml_backend_set_description(&b->base, description);
  if (st != CML_OK) {
    cml_backend_release(&b->base);
    return st;
  }
  *out_backend = &b->base;
  return CML_OK;
}

typedef struct cml_xla_create_job_t {
  const char* config_text;
  cml_allocator_t allocator;
  cml_backend_t** out_backend;
  cml_status_t status;  // out
} cml_xla_create_job_t;

static void cml_xla_create_job_run(void* arg) {
  cml_xla_create_job_t* job = arg;
  job->status = cml_xla_create_impl(job->config_text, job->allocator, job->out_backend);
}

// Creation runs on a large stack too: the plugin search, dlopen, the client and the dtype
// probes' compiles took more than 72 KiB of the caller's stack.
static cml_status_t cml_xla_create(const char* config_text, cml_allocator_t allocator,
                                   cml_backend_t** out_backend) {
  *out_backend = NULL;
  cml_xla_create_job_t job = {config_text, allocator, out_backend, CML_OK};
  cml_xla_on_big_stack(cml_xla_create_job_run, &job);
  return job.status;
}

static int cml_xla_default_priority(const char** out_config, const char** out_reason) {
  if (cml_xla_want_gpu()) {
    *out_config = "xla:cuda";
    *out_reason = "an NVIDIA GPU is present: XLA with the CUDA plugin";
    return 100;
  }
  if (cml__xla_has_tpu(NULL, 0)) {
    *out_config = "xla:tpu";
    *out_reason = "a TPU (libtpu) is present: XLA with the TPU plugin";
    return 100;
  }
  *out_config = "xla:cpu";
  *out_reason = "no accelerator: XLA's CPU plugin ranks below the c backend";
  return 1;
}

const cml_backend_factory_t cml_xla_backend_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR,
    .name = "xla",
    .aliases = "stablehlo,hlo,shlo",
    .description = "XLA through a PJRT plugin (cpu, cuda, tpu or a plugin path)",
    .config_help = cml__xla_config_help,
    .create = cml_xla_create,
    .default_priority = cml_xla_default_priority,
};
