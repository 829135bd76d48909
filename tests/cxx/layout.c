// SPDX-License-Identifier: Apache-2.0
// tests/cxx/layout.c: the C compiler's view of the public object bases (cml/backend_impl.h),
// which api_test.cpp compares with the C++ compiler's view: both must agree, and match the
// layout the structs had with C11 atomic_int / atomic_bool fields.
#include <stdatomic.h>
#include <stddef.h>

#include "cml/backend_impl.h"
#include "layout.h"

// The fields were atomic_int / atomic_bool before they became plain int / bool: plug-ins built
// against the old header must see the same layout.
_Static_assert(sizeof(atomic_int) == sizeof(int) && _Alignof(atomic_int) == _Alignof(int),
               "atomic_int and int differ in layout");
_Static_assert(sizeof(atomic_bool) == sizeof(bool) && _Alignof(atomic_bool) == _Alignof(bool),
               "atomic_bool and bool differ in layout");

size_t cml_cxx_layout_c(size_t* out, size_t capacity) {
  const size_t values[] = {CML_CXX_LAYOUT_VALUES};
  size_t n = sizeof values / sizeof values[0];
  for (size_t i = 0; i < n && i < capacity; ++i) out[i] = values[i];
  return n;
}
