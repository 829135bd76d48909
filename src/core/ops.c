// SPDX-License-Identifier: Apache-2.0
// src/core/ops.c: op names, kinds, groups, traits and dtype sets, all generated from cml/ops.def.
#include <string.h>

#include "cml/graph.h"
#include "core/builder_internal.h"

typedef struct cml_op_info_t {
  const char* name;
  cml_op_kind_t kind;
  cml_op_group_t group;
  uint32_t traits;
  cml_dtype_set_t dtypes;
} cml_op_info_t;

// The short trait names of ops.def's TRAITS column.
enum {
  CML_OPS_DEF_PURE = CML_OP_TRAIT_PURE,
  CML_OPS_DEF_FOLD = CML_OP_TRAIT_PURE | CML_OP_TRAIT_FOLDABLE,
  CML_OPS_DEF_MULTI = CML_OP_TRAIT_MULTI_OUTPUT,
  CML_OPS_DEF_CALLEE = CML_OP_TRAIT_ONE_CALLEE,
  CML_OPS_DEF_CALLEE2 = CML_OP_TRAIT_TWO_CALLEES,
  CML_OPS_DEF_ALIAS = CML_OP_TRAIT_MAY_ALIAS_INPUT,
};
#define PURE CML_OPS_DEF_PURE
#define FOLD CML_OPS_DEF_FOLD
#define MULTI CML_OPS_DEF_MULTI
#define CALLEE CML_OPS_DEF_CALLEE
#define CALLEE2 CML_OPS_DEF_CALLEE2
#define ALIAS CML_OPS_DEF_ALIAS

static const cml_op_info_t cml_op_infos[CML_OP_COUNT] = {
#define CML_OP(ENUM, NAME, lower, KIND, GROUP, TRAITS, DTYPES, OUT)             \
  [CML_OP_##ENUM] = {NAME, CML_OPK_##KIND, CML_OPG_##GROUP, (uint32_t)(TRAITS), \
                     (cml_dtype_set_t)(DTYPES)},
#include "cml/ops.def"
};

#undef PURE
#undef FOLD
#undef MULTI
#undef CALLEE
#undef CALLEE2
#undef ALIAS

static const char* const cml_op_group_names[CML_OPG_COUNT] = {
    [CML_OPG_SOURCE] = "source",         [CML_OPG_ELEMENTWISE] = "elementwise",
    [CML_OPG_REDUCE] = "reduce",         [CML_OPG_MOVEMENT] = "movement",
    [CML_OPG_INDEX] = "index",           [CML_OPG_WINDOW] = "window",
    [CML_OPG_LINALG] = "linalg",         [CML_OPG_SPECIAL] = "special",
    [CML_OPG_CONTROL] = "control",       [CML_OPG_FUSED] = "fused",
    [CML_OPG_COLLECTIVE] = "collective", [CML_OPG_DYNAMIC] = "dynamic",
    [CML_OPG_INTERNAL] = "internal",
};

const char* cml_op_name(cml_op_t op) {
  if ((int)op < 0 || op >= CML_OP_COUNT) return "unknown";
  return cml_op_infos[op].name;
}

cml_op_t cml_op_from_name(const char* name) {
  if (!name) return CML_OP_INVALID;
  for (int i = 1; i < CML_OP_COUNT; ++i) {
    if (strcmp(cml_op_infos[i].name, name) == 0) return (cml_op_t)i;
  }
  return CML_OP_INVALID;
}

cml_op_kind_t cml_op_kind(cml_op_t op) {
  if ((int)op < 0 || op >= CML_OP_COUNT) return CML_OPK_INTERNAL;
  return cml_op_infos[op].kind;
}

cml_dtype_set_t cml_op_dtypes(cml_op_t op) {
  if ((int)op < 0 || op >= CML_OP_COUNT) return 0;
  return cml_op_infos[op].dtypes;
}

cml_op_group_t cml_op_group(cml_op_t op) {
  if ((int)op < 0 || op >= CML_OP_COUNT) return CML_OPG_INTERNAL;
  return cml_op_infos[op].group;
}

const char* cml_op_group_name(cml_op_group_t group) {
  if ((int)group < 0 || group >= CML_OPG_COUNT) return "unknown";
  return cml_op_group_names[group];
}

uint32_t cml_op_traits(cml_op_t op) {
  if ((int)op < 0 || op >= CML_OP_COUNT) return 0;
  return cml_op_infos[op].traits;
}

uint32_t cml_op_callee_count(cml_op_t op) {
  uint32_t traits = cml_op_traits(op);
  if (traits & CML_OP_TRAIT_TWO_CALLEES) return 2;
  return (traits & CML_OP_TRAIT_ONE_CALLEE) ? 1 : 0;
}

bool cml_op_is_standard(cml_op_t op) {
  // The kinds are ordered so that PARAMETER..CONTROL are exactly the standard ones; the
  // collective, fused, dynamic and internal kinds follow them.
  if ((int)op <= 0 || op >= CML_OP_COUNT) return false;
  cml_op_kind_t kind = cml_op_infos[op].kind;
  return kind >= CML_OPK_PARAMETER && kind <= CML_OPK_CONTROL;
}

const char* cml_reduce_type_name(cml_reduce_type_t type) {
  switch (type) {
    case CML_REDUCE_UNDEFINED:
      return "Undefined";
    case CML_REDUCE_SUM:
      return "Sum";
    case CML_REDUCE_PRODUCT:
      return "Product";
    case CML_REDUCE_MAX:
      return "Max";
    case CML_REDUCE_MIN:
      return "Min";
    default:
      return "unknown";
  }
}

//===--- internal: output dtype rules ---===//

static const cml__out_rule_t cml_op_out_rules[CML_OP_COUNT] = {
#define CML_OP(ENUM, NAME, lower, KIND, GROUP, TRAITS, DTYPES, OUT) \
  [CML_OP_##ENUM] = CML__OUT_##OUT,
#include "cml/ops.def"
};

cml__out_rule_t cml__op_out_rule(cml_op_t op) {
  if ((int)op < 0 || op >= CML_OP_COUNT) return CML__OUT_SPECIAL;
  return cml_op_out_rules[op];
}

cml_dtype_t cml__apply_out_rule(cml__out_rule_t rule, cml_dtype_t dtype) {
  switch (rule) {
    case CML__OUT_SAME:
      return dtype;
    case CML__OUT_BOOL:
      return CML_DTYPE_BOOL;
    case CML__OUT_REAL:
      return cml_dtype_real_part(dtype);
    case CML__OUT_COMPLEX:
      if (dtype == CML_DTYPE_F32) return CML_DTYPE_C64;
      if (dtype == CML_DTYPE_F64) return CML_DTYPE_C128;
      return CML_DTYPE_INVALID;
    default:
      return dtype;
  }
}
