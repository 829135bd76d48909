// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_functions.c: compliance cases of the "functions" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_functions[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_functions_count = 0;
