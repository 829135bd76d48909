// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_conv.c: compliance cases of the "conv" group (placeholder: no cases yet).
#include "backendtest/bt.h"

const bt_case_t bt_cases_conv[] = {{NULL, CML_OP_INVALID, NULL}};
const size_t bt_cases_conv_count = 0;
