// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_shape.c: compliance cases of the "shape" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_shape[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_shape_count = 0;
