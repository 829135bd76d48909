// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/pjrt/pjrt.h: the PJRT layer of the XLA backend: plugin loading, clients,
// devices, buffers, events, compilation and execution. Internal (cml__xla_ prefix).
//
// Every PJRT_Error a plugin returns is turned into a cml status where it appears: the message
// is copied and the PJRT error destroyed at once, so no PJRT error ever leaves this layer.
//
// Example:
//
//   const cml__xla_plugin_t* plugin = NULL;
//   CML_RETURN_IF_ERROR(cml__xla_plugin_load("/path/pjrt_c_api_cpu_plugin.so", &plugin));
//   cml__xla_client_t* client = NULL;
//   CML_RETURN_IF_ERROR(cml__xla_client_create(plugin, NULL, 0, &client));
//   ... cml__xla_buffer_from_host, cml__xla_compile, cml__xla_execute ...
//   cml__xla_client_destroy(client);
//
// Thread-safety: plugins are process-wide and immutable once loaded (loading is serialized).
// A client is thread-safe for buffer transfers, compilation and execution (PJRT clients are);
// creating and destroying it is single-thread.
#ifndef CML_BACKENDS_XLA_PJRT_PJRT_H_
#define CML_BACKENDS_XLA_PJRT_PJRT_H_

#include "backends/xla/pjrt/pjrt_abi.h"
#include "cml/base.h"
#include "cml/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- plugins ---===//

// A loaded plugin. Plugins are never unloaded (they own threads and static state).
typedef struct cml__xla_plugin_t {
  char* path;
  void* handle;
  const cml_pjrt_api_t* api;
  int major_version;
  int minor_version;
  int64_t xla_version;         // plugin attribute "xla_version", -1 when absent
  char stablehlo_version[48];  // "1.13.2" from "stablehlo_current_version", "" when absent
} cml__xla_plugin_t;

// Loads the plugin at |path| (or returns the already loaded one): dlopen, GetPjrtApi, version
// check, PJRT_Plugin_Initialize (once per process), attributes. Sets TF_CPP_MIN_LOG_LEVEL=3
// first when it is unset. Returns NOT_FOUND when the file is missing, UNAVAILABLE when it is
// not a loadable PJRT plugin (truncated or not a shared object: cml__xla_check_shared_object;
// dlopen error, no GetPjrtApi, NULL table), INCOMPATIBLE for a
// major version other than 0 or a minor below 57. Thread-safe.
CML_MUST_USE cml_status_t cml__xla_plugin_load(const char* path,
                                               const cml__xla_plugin_t** out_plugin);

// Checks (on Linux) that |path| is a well-formed 64-bit ELF shared object whose program and
// section headers and segments lie within the file, so that a truncated or non-ELF file gives a
// status instead of a SIGBUS inside dlopen. Damage that keeps the structure (bytes changed in
// place) needs the install manifest's sha256 (cml__xla_install_check). Returns NOT_FOUND when
// the file is missing, UNAVAILABLE naming what is wrong. Called by cml__xla_plugin_load.
CML_MUST_USE cml_status_t cml__xla_check_shared_object(const char* path);

// Checks that |path| is a dlopen-able library exporting GetPjrtApi, without initializing it
// (dlopen happens, GetPjrtApi is not called). Used to detect broken installs.
CML_MUST_USE cml_status_t cml__xla_plugin_probe(const char* path);
// The process that first loaded a PJRT plugin, or 0 (a child of fork() sees its parent's).
long cml__xla_plugin_loader_pid(void);

// The function in |slot|, or NULL when the plugin's table is too short or the slot is empty.
cml_pjrt_fn cml__xla_plugin_fn(const cml__xla_plugin_t* plugin, cml_pjrt_slot_t slot);

// Converts |error| (may be NULL: returns CML_OK) into a status "<what>: <message>", destroying
// the PJRT error.
CML_MUST_USE cml_status_t cml__xla_error_to_status(const cml__xla_plugin_t* plugin,
                                                   cml_pjrt_error_t* error, const char* what);

// Calls |slot| with |args| and converts its error. UNIMPLEMENTED when the slot is missing.
CML_MUST_USE cml_status_t cml__xla_call(const cml__xla_plugin_t* plugin, cml_pjrt_slot_t slot,
                                        void* args, const char* what);

//===--- compile options (hand-encoded CompileOptionsProto) ---===//

typedef struct cml__xla_compile_config_t {
  bool portable;       // compile_portable_executable: one device, chosen at execution
  int num_replicas;    // >= 1
  int num_partitions;  // >= 1
  bool use_spmd_partitioning;
  bool use_shardy_partitioner;
  // Device assignment (non-portable only): device_ids[r * num_partitions + p] is the global
  // device id of replica r, partition p. NULL for portable executables.
  const int64_t* device_ids;
} cml__xla_compile_config_t;

// Serializes |config| as a CompileOptionsProto into |out| (capacity |capacity|). Always writes
// device_ordinal=-1 and process_count=1 (the parser turns absent fields into 0). Returns
// INVALID_ARGUMENT for bad counts, RESOURCE_EXHAUSTED when |capacity| is too small.
CML_MUST_USE cml_status_t cml__xla_compile_options_encode(const cml__xla_compile_config_t* config,
                                                          uint8_t* out, size_t capacity,
                                                          size_t* out_size);

//===--- clients and devices ---===//

// One client-create option (PJRT_NamedValue without the ABI framing).
typedef struct cml__xla_option_t {
  const char* name;
  int type;  // CML_PJRT_NAMED_*
  const char* string_value;
  int64_t int64_value;
  const int64_t* int64_list;
  size_t int64_list_size;
  float float_value;
  bool bool_value;
} cml__xla_option_t;

typedef struct cml__xla_client_t {
  const cml__xla_plugin_t* plugin;
  cml_pjrt_client_t* client;
  char* platform_name;  // "cpu", "cuda", ...
  char* platform_version;
  int device_count;
  // A single-process client: its addressable devices, in the plugin's order. A multi-process
  // client (cml__xla_client_create_multi): every device of the job, ordered by process, then
  // id, so that this process's devices are first_local_device .. + local_device_count - 1.
  cml_pjrt_device_t** devices;
  int* device_ids;             // global ids (DeviceDescription_Id)
  char** device_descriptions;  // "cpu:0 (TFRT_CPU_0, id 0)"
  int process_index;           // this process (0 for a single-process client)
  int process_count;           // processes owning the devices (1 for a single-process client)
  int first_local_device;
  int local_device_count;
  int* device_processes;  // the process of each device; NULL for a single-process client
  int launch_counter;     // atomic: launch ids of multi-device executions of a multi-process client
} cml__xla_client_t;

// Creates a client with |options|. Returns the plugin's error (e.g. an unknown option on CUDA)
// as a status naming the platform.
CML_MUST_USE cml_status_t cml__xla_client_create(const cml__xla_plugin_t* plugin,
                                                 const cml__xla_option_t* options,
                                                 size_t option_count,
                                                 cml__xla_client_t** out_client);

// The key-value store of a multi-process client: PJRT's three callbacks and their user
// argument (the same for all three). |try_get| is passed only to plugins of PJRT 0.61 on.
typedef struct cml__xla_kv_callbacks_t {
  cml_pjrt_kv_get_fn get;
  cml_pjrt_kv_try_get_fn try_get;
  cml_pjrt_kv_put_fn put;
  void* user_arg;
} cml__xla_kv_callbacks_t;

// Creates a client of a multi-process job: |options| carry the plugin's node options (e.g.
// node_id, num_nodes) and |kv| the key-value store. The client lists every device of the job
// (PJRT_Client_Devices), ordered by process index, then id, with this process's (the
// addressable ones) marked by first_local_device / local_device_count. UNIMPLEMENTED when the
// addressable devices are not exactly the devices of this process's index (a plugin that
// ignored the options reports only its own devices: see process_count).
CML_MUST_USE cml_status_t cml__xla_client_create_multi(const cml__xla_plugin_t* plugin,
                                                       const cml__xla_option_t* options,
                                                       size_t option_count,
                                                       const cml__xla_kv_callbacks_t* kv,
                                                       cml__xla_client_t** out_client);
void cml__xla_client_destroy(cml__xla_client_t* client);

//===--- buffers ---===//

// Copies |data| (dense row-major, cml_shape_byte_size bytes) to a new buffer on |device|.
CML_MUST_USE cml_status_t cml__xla_buffer_from_host(cml__xla_client_t* client, int device,
                                                    const cml_shape_t* shape, const void* data,
                                                    cml_pjrt_buffer_t** out_buffer);
// Wraps host memory |data| (64-byte aligned, owned by the caller, outliving the buffer) as a
// device buffer on |device| (CPU plugins: zero-copy).
CML_MUST_USE cml_status_t cml__xla_buffer_create_view(cml__xla_client_t* client, int device,
                                                      const cml_shape_t* shape, void* data,
                                                      cml_pjrt_buffer_t** out_buffer);
// Copies |buffer| (of |shape|) into |dst| (|size| bytes), dense row-major.
CML_MUST_USE cml_status_t cml__xla_buffer_to_host(cml__xla_client_t* client,
                                                  cml_pjrt_buffer_t* buffer,
                                                  const cml_shape_t* shape, void* dst, size_t size);
CML_MUST_USE cml_status_t cml__xla_buffer_copy_to_device(cml__xla_client_t* client,
                                                         cml_pjrt_buffer_t* buffer, int device,
                                                         cml_pjrt_buffer_t** out_buffer);
void cml__xla_buffer_destroy(cml__xla_client_t* client, cml_pjrt_buffer_t* buffer);

//===--- executables ---===//

// Compiles MLIR text (StableHLO) with serialized compile options.
CML_MUST_USE cml_status_t cml__xla_compile(cml__xla_client_t* client, const char* mlir,
                                           size_t mlir_size, const uint8_t* options,
                                           size_t options_size,
                                           cml_pjrt_loaded_executable_t** out_executable);
void cml__xla_executable_destroy(cml__xla_client_t* client,
                                 cml_pjrt_loaded_executable_t* executable);

// The number of outputs |executable| produces per device (what PJRT_LoadedExecutable_Execute
// writes into each output list). UNIMPLEMENTED when the plugin lacks the calls.
CML_MUST_USE cml_status_t cml__xla_executable_output_count(cml__xla_client_t* client,
                                                           cml_pjrt_loaded_executable_t* executable,
                                                           size_t* out_count);

// Executes a portable executable on |device| with |inputs| and waits for it. Inputs whose index
// is not in |non_donatable| may be donated. Writes |output_count| new buffers to |outputs|.
CML_MUST_USE cml_status_t cml__xla_execute(cml__xla_client_t* client,
                                           cml_pjrt_loaded_executable_t* executable, int device,
                                           cml_pjrt_buffer_t* const* inputs, size_t input_count,
                                           const int64_t* non_donatable, size_t non_donatable_count,
                                           cml_pjrt_buffer_t** outputs, size_t output_count);

// Executes a non-portable executable (compiled with a device assignment) on its
// |device_count| devices, in the assignment's order, and waits for every device. Argument a of
// device slot d is inputs[d * input_count + a]; output k of slot d is written to
// outputs[d * output_count + k] (device-major). |non_donatable| holds argument positions
// (0..input_count-1) that must not be donated on any device. On error no output is left.
CML_MUST_USE cml_status_t cml__xla_execute_devices(
    cml__xla_client_t* client, cml_pjrt_loaded_executable_t* executable, size_t device_count,
    cml_pjrt_buffer_t* const* inputs, size_t input_count, const int64_t* non_donatable,
    size_t non_donatable_count, cml_pjrt_buffer_t** outputs, size_t output_count);

// Awaits and destroys |event| (NULL is fine), returning its error.
CML_MUST_USE cml_status_t cml__xla_event_await(const cml__xla_plugin_t* plugin,
                                               cml_pjrt_event_t* event, const char* what);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_XLA_PJRT_PJRT_H_
