// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_index.c: compliance cases of the "index" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_index[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_index_count = 0;
