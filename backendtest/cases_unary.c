// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_unary.c: compliance cases of the "unary" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_unary[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_unary_count = 0;
