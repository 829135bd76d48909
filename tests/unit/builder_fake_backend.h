// SPDX-License-Identifier: Apache-2.0
// tests/unit/builder_fake_backend.h: a minimal backend for builder tests. Its compile keeps the
// module it receives (retained) so tests can inspect the IR; capabilities are configurable.
#ifndef CML_TESTS_UNIT_BUILDER_FAKE_BACKEND_H_
#define CML_TESTS_UNIT_BUILDER_FAKE_BACKEND_H_

#include <stdlib.h>
#include <string.h>

#include "cml/backend_impl.h"
#include "cml/ir.h"

typedef struct fake_backend_t {
  cml_backend_t base;
  cml_module_t* module;  // the last compiled module (retained)
  int compile_count;
} fake_backend_t;

typedef struct fake_executable_t {
  cml_executable_t base;
} fake_executable_t;

static void fake_destroy(cml_backend_t* backend) {
  fake_backend_t* fb = (fake_backend_t*)backend;
  cml_module_release(fb->module);
  cml_backend_deinit_base(backend);
  free(fb);
}

static void fake_executable_destroy(cml_executable_t* executable) {
  cml_executable_deinit_base(executable);
  free(executable);
}

static cml_status_t fake_compile(cml_backend_t* backend, cml_module_t* module,
                                 cml_executable_t** out_executable) {
  fake_backend_t* fb = (fake_backend_t*)backend;
  fake_executable_t* exe = (fake_executable_t*)calloc(1, sizeof *exe);
  if (!exe) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_status_t st = cml_executable_init_base(&exe->base, backend, module);
  if (st != CML_OK) {
    free(exe);
    return st;
  }
  cml_module_release(fb->module);
  fb->module = cml_module_retain(module);
  fb->compile_count++;
  *out_executable = &exe->base;
  return CML_OK;
}

static const cml_backend_vtable_t fake_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = fake_destroy,
    .compile = fake_compile,
    .executable_destroy = fake_executable_destroy,
};

// A fake backend with every op, every dtype (packed included) and functions.
static fake_backend_t* fake_backend_new(void) {
  fake_backend_t* fb = (fake_backend_t*)calloc(1, sizeof *fb);
  if (!fb) return NULL;
  if (cml_backend_init_base(&fb->base, &fake_vtable, cml_allocator_system(), "fake", "", 1) !=
      CML_OK) {
    free(fb);
    return NULL;
  }
  for (int op = 1; op < CML_OP_COUNT; ++op)
    cml_capabilities_set_op(&fb->base.capabilities, op, true);
  fb->base.capabilities.dtypes =
      CML_DSET_ALL | CML_DSET_PACKED | CML_DTYPE_BIT(CML_DTYPE_I1) | CML_DTYPE_BIT(CML_DTYPE_U1);
  fb->base.capabilities.functions = true;
  return fb;
}

#endif  // CML_TESTS_UNIT_BUILDER_FAKE_BACKEND_H_
