// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_window.c: compliance cases of the "window" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_window[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_window_count = 0;
