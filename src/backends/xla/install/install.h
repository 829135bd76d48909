// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/install/install.h: the PJRT plugin installer (pip download of a pinned wheel,
// sha256 check, extraction, atomic install under a file lock, manifest). Internal.
//
// Layout of an install directory (default ~/.local/lib/go-xla):
//   pjrt_c_api_cpu_plugin.so            the CPU plugin
//   pjrt_c_api_cpu_plugin.so.manifest   package, version, wheel sha256, size and sha256 of the .so
//   pjrt_c_api_cpu_plugin.so.verified   identity (inode, size, mtime, ctime) of the .so when its
//                                       sha256 last matched the manifest (skips re-hashing)
//   pjrt_c_api_cpu_plugin.so.lock       the lock file (flock) serializing installers; holds the
//                                       pid of the last process that took it
//   .cml-install-<pid>-XXXXXX/          an install in progress (removed at its end; left behind
//                                       by a killed installer, removed by the next one)
//   nvidia/pjrt_c_api_cuda_plugin.so    the CUDA plugin, next to the nvidia-* libraries
//   nvidia/<cu13|cudnn|...>/            (extracted from the nvidia-* wheels)
//
// Example:
//
//   cml__xla_install_params_t p;
//   cml__xla_install_params_init(&p);
//   char* path = NULL;
//   bool installed = false;
//   CML_RETURN_IF_ERROR(cml__xla_install(cml__xla_wheel_for("cpu"), &p, &path, &installed));
//   free(path);
//
// Thread-safety: thread-safe and process-safe (the file lock).
#ifndef CML_BACKENDS_XLA_INSTALL_INSTALL_H_
#define CML_BACKENDS_XLA_INSTALL_INSTALL_H_

#include <stdint.h>

#include "cml/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// A pinned wheel and the plugin inside it.
typedef struct cml__xla_wheel_t {
  const char* plugin;   // "cpu", "cuda"
  const char* package;  // PyPI name
  const char* version;  // pinned version
  const char* sha256;   // hex sha256 of the wheel file; NULL: not pinned (pip's index hash only)
  const char* member;   // path of the plugin inside the wheel
  const char* target;   // path under the install directory ("nvidia/pjrt_c_api_cuda_plugin.so")
  // CUDA: a requirement whose wheels bring the nvidia-* libraries (NULL for none). Every
  // nvidia/ member of the nvidia-* wheels it downloads is extracted under <install dir>/nvidia/.
  const char* libraries_requirement;
  // Free bytes the install needs in the install directory's file system (the wheel and the
  // extracted plugin side by side); checked before downloading. 0: not checked.
  uint64_t space_bytes;
} cml__xla_wheel_t;

// The pinned wheel for |plugin| ("cpu", "cuda"), or NULL.
const cml__xla_wheel_t* cml__xla_wheel_for(const char* plugin);

typedef struct cml__xla_install_params_t {
  const char* install_dir;  // NULL: ~/.local/lib/go-xla
  const char* python;       // NULL: "python3"
  // Extra pip arguments (tests: "--no-index", "--find-links", dir).
  const char* const* pip_args;
  size_t pip_arg_count;
  int verbosity;          // 0 quiet, 1 progress when stderr is a terminal, 2 verbose
  bool force;             // reinstall even when a sound copy is present
  double lock_timeout_s;  // 0: 300 s
  // Limit for each program run (pip download, extraction); 0: cml__xla_install_timeout_s().
  double timeout_s;
} cml__xla_install_params_t;

void cml__xla_install_params_init(cml__xla_install_params_t* params);

// The default install directory, ~/.local/lib/go-xla (NOT_FOUND when HOME is unset).
CML_MUST_USE cml_status_t cml__xla_default_install_dir(char* out, size_t size);

// Installs |wheel| (see the header comment). |out_path| (malloc'd, may be NULL) receives the
// plugin's path; |out_installed| (may be NULL) whether this call installed it (false when a
// sound copy was already there, e.g. installed by a concurrent process).
CML_MUST_USE cml_status_t cml__xla_install(const cml__xla_wheel_t* wheel,
                                           const cml__xla_install_params_t* params, char** out_path,
                                           bool* out_installed);

// Checks an installed plugin at |path| against its manifest: OK when the file exists and (with
// a manifest) its size matches, and with |full| its sha256 too. A successful sha256 check is
// remembered for the process and in "<path>.verified" (for later processes), keyed by path,
// device, inode, size, mtime and ctime (any write changes the ctime), so the next full check of
// the same unchanged file costs a stat and a small read. A file without a manifest (put there by
// hand) has no checksum: it must be a well-formed ELF shared object
// (cml__xla_check_shared_object). Returns NOT_FOUND when absent, FAILED_PRECONDITION (with the
// reason) when it is broken.
CML_MUST_USE cml_status_t cml__xla_install_check(const char* path, bool full);

// How many files cml__xla_install_check has hashed in this process (tests check the cache).
int cml__xla_install_hash_count(void);

// Installers stage their download in "<plugin dir>/.cml-install-<pid>-XXXXXX"; an installer
// killed mid-way leaves one behind, and the next install (under the lock) removes those whose
// pid is not running.
#define CML_XLA_INSTALL_TMP_PREFIX ".cml-install-"

// True when |path| has a manifest (so cml installed it and may reinstall it).
bool cml__xla_install_has_manifest(const char* path);

// Auto-install state: GOMLX_NO_AUTO_INSTALL (present = off) unless overridden by
// cml_xla_enable_auto_install.
bool cml__xla_auto_install_enabled(void);

// SHA-256.
void cml__xla_sha256(const void* data, size_t size, uint8_t out[32]);
// Hashes the file at |path| into |hex| (65 bytes) and writes its size.
CML_MUST_USE cml_status_t cml__xla_sha256_file(const char* path, char hex[65], uint64_t* out_size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_XLA_INSTALL_INSTALL_H_
