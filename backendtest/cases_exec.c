// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_exec.c: compliance cases of the "exec" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_exec[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_exec_count = 0;
