// SPDX-License-Identifier: Apache-2.0
// src/core/register_builtin.c: registers the backends compiled into the library.
#include "base/base_internal.h"
#include "core/runtime_internal.h"

#ifdef CML_HAVE_BACKEND_C
extern const cml_backend_factory_t cml_c_backend_factory;
#endif
#ifdef CML_HAVE_BACKEND_XLA
extern const cml_backend_factory_t cml_xla_backend_factory;
#endif

// Registration order is the order `cml info` lists them in; the default is chosen by priority.
void cml__register_builtin(void) {
  static const cml_backend_factory_t* const kBuiltin[] = {
#ifdef CML_HAVE_BACKEND_C
      &cml_c_backend_factory,
#endif
#ifdef CML_HAVE_BACKEND_XLA
      &cml_xla_backend_factory,
#endif
      &cml_null_backend_factory,
  };
  for (size_t i = 0; i < sizeof kBuiltin / sizeof kBuiltin[0]; ++i) {
    // A built-in factory always matches this library's API; a failure here is a bug, reported
    // but not fatal: the other backends stay usable.
    cml_status_t st = cml__registry_add(kBuiltin[i]);
    if (st != CML_OK) {
      cml__log(CML_LOG_ERROR, "cml: cannot register built-in backend: %s", cml_status_message(st));
      cml_status_free(st);
    }
  }
}
