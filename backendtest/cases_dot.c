// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_dot.c: compliance cases of the "dot" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_dot[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_dot_count = 0;
