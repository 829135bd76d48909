// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_binary.c: compliance cases of the "binary" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_binary[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_binary_count = 0;
