// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_fake_plugin.c: a fake PJRT plugin for the XLA backend's tests. It exports
// GetPjrtApi with API version 0.10, far older than the 0.57 cml requires, and nothing else.
#include <stddef.h>
#include <string.h>

typedef struct fake_pjrt_api_t {
  size_t struct_size;
  void* extension_start;
  struct {
    size_t struct_size;
    void* extension_start;
    int major_version;
    int minor_version;
  } version;
  void* slots[16];
} fake_pjrt_api_t;

__attribute__((visibility("default"))) const fake_pjrt_api_t* GetPjrtApi(void);

const fake_pjrt_api_t* GetPjrtApi(void) {
  static fake_pjrt_api_t api;
  api.struct_size = sizeof api;
  api.version.struct_size = sizeof api.version;
  api.version.major_version = 0;
  api.version.minor_version = 10;
  return &api;
}
