// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_stubs.c: groups not written yet.
#include "diff_common.h"
void dt_group_convert(void) {}
void dt_group_reduce(void) {}
void dt_group_movement(void) {}
void dt_group_index(void) {}
void dt_group_linalg(void) {}
void dt_group_window(void) {}
void dt_group_control(void) {}
void dt_group_special(void) {}
