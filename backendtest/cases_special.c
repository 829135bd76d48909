// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_special.c: compliance cases of the "special" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_special[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_special_count = 0;
