// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/xla_internal.h: internals of the XLA backend shared across its files: the
// config parser, plugin discovery and accelerator detection. Prefix cml__xla_.
//
// Config (the part after "xla:"): `<plugin>[,opt[=val]]...`, where <plugin> is a name ("cpu",
// "cuda", "tpu", any name a plugin file carries, or a versioned "cpu_v0.104.0") or a path to a
// plugin (.so); empty means the default (cuda when an NVIDIA GPU is present, else cpu).
//
// Discovery order for a plugin name: PJRT_PLUGIN_LIBRARY_PATH (colon-separated), then
// ~/.local/lib/go-xla, ~/.local/lib/go-xla/nvidia, /usr/local/lib/go-xla,
// /usr/local/lib/go-xla/nvidia, then the Python environment's site-packages (pip-installed
// plugins: jax_plugins/xla_cuda*/xla_cuda_plugin.so, lammps_jax_pjrt_cpu/, libtpu/, and any
// package directory holding a plugin file), then LD_LIBRARY_PATH. File names:
// pjrt_c_api_<name>_plugin.so, pjrt-plugin-<name>.so, pjrt_plugin_<name>.so. The first directory
// holding a match wins; within one directory an exact name beats a versioned one.
//
// Thread-safety: all functions are thread-safe; the search reads the environment only in
// cml__xla_search_from_env (called when a backend is created).
#ifndef CML_BACKENDS_XLA_XLA_INTERNAL_H_
#define CML_BACKENDS_XLA_XLA_INTERNAL_H_

#include <sys/types.h>

#include "backends/xla/pjrt/pjrt.h"
#include "core/runtime_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- config ---===//

typedef struct cml__xla_config_t {
  char plugin[1024];  // name or path; "" = default
  bool plugin_is_path;
  bool tf32, tf32_set;
  bool shared_buffers, shared_buffers_set;
  bool preallocate;  // always sent (default false), as the seed does
  double memory_fraction;
  bool memory_fraction_set;
  char allocator[16];
  bool allocator_set;
  cml__int_list_t visible_devices;
  bool visible_devices_set;
  bool use_tfrt_gpu_client, use_tfrt_gpu_client_set;
  int64_t cpu_device_count;
  bool cpu_device_count_set;
  int64_t dynamic_cache;  // compiled executables kept per module with dynamic axes
  bool dynamic_cache_set;
  char distributed[8];  // "none" or "mpi" (one client across MPI processes: distributed.c)
  bool distributed_set;
} cml__xla_config_t;

// The option list shown by "help" and in the factory.
extern const char cml__xla_config_help[];

// Parses |text| into |out| (defaults first). Returns INVALID_ARGUMENT naming the bad key or
// value and listing the valid ones; "help" anywhere returns INVALID_ARGUMENT whose message is
// the option list plus the plugins found now.
CML_MUST_USE cml_status_t cml__xla_config_parse(const char* text, cml__xla_config_t* out);

// Fills the defaults that depend on the plugin: tf32 (true on CUDA), shared_buffers (true on
// CPU). Returns INVALID_ARGUMENT for options that do not apply (cpu_device_count on a non-CPU
// plugin, shared_buffers=true on a non-CPU plugin).
CML_MUST_USE cml_status_t cml__xla_config_resolve(cml__xla_config_t* config, bool is_cpu,
                                                  bool is_cuda);

// The client-create options for |config| (at most 8). Returns the count.
size_t cml__xla_config_client_options(const cml__xla_config_t* config, bool is_cpu,
                                      cml__xla_option_t* out, size_t capacity);

// Writes the full config, e.g. "cpu,tf32=false,shared_buffers=true,preallocate=false", into
// |buffer| (snprintf style). |plugin| overrides the plugin part (e.g. the resolved name).
size_t cml__xla_config_format(const cml__xla_config_t* config, const char* plugin, char* buffer,
                              size_t size);

// Case-insensitive substring tests used by the seed: a CUDA plugin's name contains "cuda" or
// "nvidia"; a CPU plugin's contains "cpu".
bool cml__xla_name_is_cuda(const char* name);
bool cml__xla_name_is_cpu(const char* name);

//===--- distributed=mpi (distributed.c) ---===//

// One PJRT client across the processes of an MPI job, and the key-value store it uses.
typedef struct cml__xla_distributed_t cml__xla_distributed_t;

// FAILED_PRECONDITION saying how to enable MPI when this cml was built without it, else OK.
CML_MUST_USE cml_status_t cml__xla_distributed_check_built(void);

// Collective over every MPI process: checks that every process has the same |config_text|
// (the formatted config with the plugin's name), creates the key-value store served over MPI
// and the client with |options| plus node_id (MPI rank) and num_nodes (MPI size) and the
// store's callbacks; then every process learns whether all succeeded. A plugin that refuses the
// options, or accepts them but reports only its own devices, gives UNIMPLEMENTED naming
// |plugin_name|, its path and the options. Destroy the client before |out_distributed|.
CML_MUST_USE cml_status_t cml__xla_distributed_client_create(
    const cml__xla_plugin_t* plugin, const char* plugin_name, const char* config_text,
    const cml__xla_option_t* options, size_t option_count, cml__xla_distributed_t** out_distributed,
    cml__xla_client_t** out_client);

// Destroys the store (collective; on process 0 it serves the others until they are done, at
// most CML_MPI_TIMEOUT_MS). NULL is fine.
void cml__xla_distributed_destroy(cml__xla_distributed_t* distributed);

//===--- discovery ---===//

typedef struct cml__xla_search_t {
  const char* home;                 // $HOME (NULL: skip the per-user directories)
  const char* plugin_library_path;  // $PJRT_PLUGIN_LIBRARY_PATH (NULL/empty: none)
  const char* ld_library_path;      // $LD_LIBRARY_PATH
  bool system_dirs;                 // search /usr/local/lib/go-xla (+ nvidia/)
  const char* const* python_dirs;   // site-packages directories to search
  size_t python_dir_count;
  const char* python_note;  // why python_dirs may be incomplete (python3 timed out), or NULL
  // Instead of python_dirs/python_note: run `python3 -c "import site..."` (once per process,
  // with the query timeout) when a search first needs the site-packages directories.
  bool python_from_env;
} cml__xla_search_t;

// Fills |search| from the environment. The site-packages directories are queried from python3
// only when a search reaches them (the plugin was not found before), once per process (none
// when python3 is missing or does not answer within cml__xla_query_timeout_s()).
void cml__xla_search_from_env(cml__xla_search_t* search);

// Extracts the plugin name from a file name following one of the three patterns ("cpu" from
// "pjrt_c_api_cpu_plugin.so"). Returns false for other names.
bool cml__xla_plugin_name_from_file(const char* file_name, char* name, size_t size);

// Finds plugin |name| ("cpu", "cuda", "cpu_v0.104.0", ...). Writes a malloc'd path to
// |out_path|. Returns NOT_FOUND listing where it looked.
CML_MUST_USE cml_status_t cml__xla_find_plugin(const cml__xla_search_t* search, const char* name,
                                               char** out_path);

// Lists the plugins found ("cpu: /path, cuda: /path") into |buffer| (snprintf style).
size_t cml__xla_list_plugins(const cml__xla_search_t* search, char* buffer, size_t size);

//===--- accelerators and CUDA layout ---===//

// True when an NVIDIA GPU is visible: a file named nvidia* in |dev_dir| ("/dev"), or (when
// |run_nvidia_smi|) `nvidia-smi` prints "NVIDIA-SMI".
bool cml__xla_has_nvidia_gpu(const char* dev_dir, bool run_nvidia_smi);

// True when libtpu.so sits in one of |lib_dirs| (NULL: /lib, /usr/lib, /usr/local/lib).
bool cml__xla_has_tpu(const char* const* lib_dirs, size_t count);

// The CUDA data directory for a plugin at |plugin_path|: <dir(dir(plugin))>/nvidia (go-xla
// layout) or <dir(dir(dir(plugin)))>/nvidia (pip layout: site-packages/jax_plugins/x/plugin.so),
// refined to its cu13/ or cuda_nvcc/ sub-directory when that holds bin/ptxas. Returns false when
// there is none.
bool cml__xla_cuda_data_dir(const char* plugin_path, char* out, size_t size);

// Writes |existing| XLA_FLAGS with " --xla_gpu_cuda_data_dir=<dir>" appended, unless it already
// has that flag (then a copy of |existing|). Returns false when |size| is too small.
bool cml__xla_flags_with_cuda_dir(const char* existing, const char* dir, char* out, size_t size);

//===--- small helpers ---===//

// Timeouts of the programs cml runs, in seconds. Queries (python3's site-packages, nvidia-smi,
// the extraction scripts): CML_XLA_QUERY_TIMEOUT_S, default 10. pip downloads:
// CML_XLA_INSTALL_TIMEOUT_S, default 1200. Each variable takes a positive number of seconds
// (fractions allowed); anything else means the default.
#define CML_XLA_QUERY_TIMEOUT_DEFAULT_S 10.0
#define CML_XLA_INSTALL_TIMEOUT_DEFAULT_S 1200.0
// RESOURCE_EXHAUSTED for an errno that says a limit was reached (EMFILE, ENFILE, EAGAIN,
// ENOMEM: descriptors, processes, memory), else INTERNAL.
cml_status_code_t cml__xla_errno_code(int err);

double cml__xla_query_timeout_s(void);
double cml__xla_install_timeout_s(void);

// Runs |argv| (argv[0] looked up in PATH) without a shell, in a process group of its own.
// stdout goes to |out| (|out_size| bytes, NUL-terminated; NULL: discarded), stderr to |log_path|
// (NULL: inherited; "" discarded). Writes the exit status (127 when it could not start,
// 128+signal) to |out_exit|. When it runs longer than |timeout_s| (<= 0: no limit) its process
// group is killed and reaped, and the result is UNAVAILABLE naming the command and the timeout.
CML_MUST_USE cml_status_t cml__xla_run_with_timeout(const char* const* argv, char* out,
                                                    size_t out_size, const char* log_path,
                                                    double timeout_s, int* out_exit);

// Milliseconds of CLOCK_MONOTONIC: the clock of the deadlines below.
int64_t cml__xla_now_ms(void);

// What cml__xla_child_wait saw.
typedef struct cml__xla_child_result_t {
  bool reaped;     // the child was reaped (false: the deadline passed first; it still runs)
  int status;      // its wait status when reaped; -1 when the application ignores SIGCHLD
  size_t used;     // bytes of output stored in the buffer (not NUL-terminated)
  bool truncated;  // the child wrote more than the buffer holds (the rest was read and dropped)
} cml__xla_child_result_t;

// Waits for the child |pid| until |deadline_ms| (cml__xla_now_ms), reading its output from |fd|
// (-1: none; always closed on return) into |buf| (|capacity| bytes). Once the child is reaped,
// output still held by what it started is read for at most 500 ms more. On a timeout the child
// is left running: the caller kills it (its process group, or the pid) and reaps it. The one
// wait loop of the backend's child processes (programs it runs, the XLA_FLAGS check).
void cml__xla_child_wait(pid_t pid, int fd, int64_t deadline_ms, char* buf, size_t capacity,
                         cml__xla_child_result_t* out);

// cml__xla_run_with_timeout with the query timeout (cml__xla_query_timeout_s()).
CML_MUST_USE cml_status_t cml__xla_run(const char* const* argv, char* out, size_t out_size,
                                       const char* log_path, int* out_exit);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_XLA_XLA_INTERNAL_H_
