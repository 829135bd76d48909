// SPDX-License-Identifier: Apache-2.0
// cml/xla.h: extras of the XLA backend: plugin auto-install switch, explicit install, and the
// "xla" extension table that describes the loaded PJRT plugin.
//
// The XLA backend ("xla", aliases "stablehlo", "hlo", "shlo") drives a PJRT plugin: "xla:cpu",
// "xla:cuda", "xla:tpu" or "xla:/path/to/plugin.so". When the wanted CPU or CUDA plugin is
// missing it is installed into ~/.local/lib/go-xla/ with pip (a pinned wheel, sha256 checked),
// unless GOMLX_NO_AUTO_INSTALL is set or `cml_xla_enable_auto_install(false)` was called.
//
// Example:
//
//   cml_xla_enable_auto_install(false);            // never download anything
//   char path[4096];
//   cml_status_t st = cml_xla_install_plugin("cpu", 1, false, path, sizeof path);  // explicit
//   cml_backend_t* be = NULL;
//   if (st == CML_OK) st = cml_backend_new_with_config("xla:cpu", &be);
//   const cml_xla_extension_t* x = cml_backend_get_extension(be, CML_XLA_EXTENSION_NAME);
//   if (x) printf("%s (PJRT 0.%d, %s)\n", x->plugin_path, x->pjrt_minor, x->platform_name);
//
// Thread-safety: every function here is thread-safe.
#ifndef CML_XLA_H_
#define CML_XLA_H_

#include "cml/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// Turns plugin auto-install on or off for this process. It overrides GOMLX_NO_AUTO_INSTALL
// (which, when present with any value, turns it off by default).
CML_API void cml_xla_enable_auto_install(bool enable);

// True when a missing plugin would be installed now.
CML_API bool cml_xla_auto_install_enabled(void);

// Installs plugin |plugin| ("cpu" or "cuda") into ~/.local/lib/go-xla/ (nvidia/ for CUDA) with
// pip, checking the wheel's pinned sha256, atomically and under a file lock (concurrent
// processes install once). Nothing is downloaded when a sound copy is installed already, unless
// |force|. |verbosity|: 0 quiet, 1 progress on a terminal, 2 verbose. Writes the plugin's path
// into |path_buffer| (|path_size| bytes; may be NULL). Works even when auto-install is off.
// Returns INVALID_ARGUMENT for an unknown plugin, FAILED_PRECONDITION for CUDA without an
// NVIDIA GPU, UNAVAILABLE when python3, pip or the network fail (the message says how to
// install by hand) or when the downloaded wheel's sha256 differs from the pinned one (the
// message names both; nothing is installed), and OUT_OF_RANGE (the plugin installed, the
// buffer set to "") when its path does not fit |path_buffer|.
CML_API CML_MUST_USE cml_status_t cml_xla_install_plugin(const char* plugin, int verbosity,
                                                         bool force, char* path_buffer,
                                                         size_t path_size);

// The name of the extension table returned by cml_backend_get_extension for XLA backends.
#define CML_XLA_EXTENSION_NAME "xla"

// Describes the plugin an XLA backend runs on. Strings live with the backend.
typedef struct cml_xla_extension_t {
  size_t struct_size;
  const char* plugin_name;  // "cpu", "cuda", or the file's name for a path
  const char* plugin_path;  // the .so that was loaded
  int pjrt_major;           // PJRT C API version of the plugin
  int pjrt_minor;
  int64_t xla_version;            // plugin attribute "xla_version" (-1 when absent)
  const char* stablehlo_version;  // "1.13.2" (empty when the plugin does not say)
  const char* platform_name;      // "cpu", "cuda", ...
  const char* platform_version;
} cml_xla_extension_t;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_XLA_H_
