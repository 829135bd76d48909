// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise.c: scalar reference kernels of the "elementwise" group (placeholder: no ops yet).
#include "backends/c/cmlc.h"

bool cmlc_kernels_elementwise_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                              const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)module;
  (void)node;
  (void)options;
  (void)out;
  return false;
}

void cmlc_kernels_elementwise_capabilities(cml_capabilities_t* caps) { (void)caps; }
