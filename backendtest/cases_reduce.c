// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_reduce.c: compliance cases of the "reduce" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_reduce[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_reduce_count = 0;
