// SPDX-License-Identifier: Apache-2.0
// cmake/wasm32-wasi/include/dlfcn.h: <dlfcn.h> for wasm32-wasi, which cannot load code at run
// time. Only the wasm toolchain file (cmake/wasm32-wasi.cmake) puts this folder on the include
// path. dlopen always fails and dlerror says why, so cml_plugin_load returns its usual error
// status instead of the build failing.
#ifndef CML_WASI_DLFCN_SHIM_H_
#define CML_WASI_DLFCN_SHIM_H_

#include <stddef.h>

#define RTLD_LAZY 1
#define RTLD_NOW 2
#define RTLD_GLOBAL 0x100
#define RTLD_LOCAL 0

static inline void* dlopen(const char* path, int flags) {
  (void)path;
  (void)flags;
  return NULL;
}
static inline void* dlsym(void* handle, const char* name) {
  (void)handle;
  (void)name;
  return NULL;
}
static inline int dlclose(void* handle) {
  (void)handle;
  return 0;
}
static inline char* dlerror(void) {
  static char message[] = "dynamic loading is not supported on wasm32-wasi";
  return message;
}

#endif  // CML_WASI_DLFCN_SHIM_H_
