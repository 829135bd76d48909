// SPDX-License-Identifier: Apache-2.0
// tests/cxx/layout.h: the sizes and offsets of the public object bases, computed the same way
// by the C (layout.c) and the C++ (api_test.cpp) compiler.
#ifndef CML_TESTS_CXX_LAYOUT_H_
#define CML_TESTS_CXX_LAYOUT_H_

#include <stddef.h>

#define CML_CXX_LAYOUT_VALUES                                                                 \
  sizeof(cml_backend_t), offsetof(cml_backend_t, refcount), offsetof(cml_backend_t, vtable),  \
      offsetof(cml_backend_t, capabilities), sizeof(cml_buffer_t),                            \
      offsetof(cml_buffer_t, refcount), offsetof(cml_buffer_t, backend),                      \
      offsetof(cml_buffer_t, shape), offsetof(cml_buffer_t, donated),                         \
      offsetof(cml_buffer_t, shared), sizeof(cml_executable_t),                               \
      offsetof(cml_executable_t, module), offsetof(cml_executable_t, output_shapes),          \
      sizeof(cml_backend_vtable_t), sizeof(cml_backend_factory_t), sizeof(cml_option_spec_t), \
      offsetof(cml_option_spec_t, out_set), sizeof(cml_int_list_t)

#ifdef __cplusplus
extern "C" {
#endif

// Writes up to |capacity| values of CML_CXX_LAYOUT_VALUES as the C compiler sees them; returns
// how many there are.
size_t cml_cxx_layout_c(size_t* out, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif  // CML_TESTS_CXX_LAYOUT_H_
