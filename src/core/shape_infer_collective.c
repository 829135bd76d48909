// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_collective.c: shape inference and validation of the collective ops
// (AllReduce, AllGather, ReduceScatter, AllToAll, CollectivePermute, CollectiveBroadcast;
// cml/distributed.h): replica groups, source-target pairs, axes and divisibility.
#include <stdlib.h>

#include "core/shape_infer_internal.h"
#include "distributed/distributed_internal.h"

cml_status_t cml__infer_replica_groups(cml_op_t op, const cml_replica_groups_t* groups,
                                       int32_t num_devices, int32_t* out_ids,
                                       int32_t* out_group_count, int32_t* out_group_size) {
  const char* name = cml_op_name(op);
  if (!groups) {
    for (int32_t k = 0; k < num_devices; ++k) out_ids[k] = k;
    *out_group_count = 1;
    *out_group_size = num_devices;
    return CML_OK;
  }
  if (groups->group_count < 1 || groups->group_size < 1 || !groups->ids) {
    return INVALID(
        "%s: replica groups with %zu groups of %zu devices%s: need at least one group "
        "of at least one device (or NULL groups for one group of all %d)",
        name, groups->group_count, groups->group_size, groups->ids ? "" : " (NULL ids)",
        (int)num_devices);
  }
  if (groups->group_count > (size_t)num_devices || groups->group_size > (size_t)num_devices ||
      groups->group_count * groups->group_size != (size_t)num_devices) {
    char text[512];
    size_t n = groups->group_count * groups->group_size;
    bool listable =
        groups->group_count <= (size_t)num_devices && groups->group_size <= (size_t)num_devices;
    if (listable) {
      cml__groups_format(groups->ids, groups->group_count, groups->group_size, text, sizeof text);
    } else {
      snprintf(text, sizeof text, "(not listed)");
    }
    return INVALID(
        "%s: replica groups %s are %zu groups of %zu devices (%s%zu ids), but the module "
        "runs on %d devices: the groups must be a partition of the device slots 0..%d "
        "into groups of equal size",
        name, text, groups->group_count, groups->group_size,
        listable ? "" : ">= ", listable ? n : (size_t)num_devices + 1, (int)num_devices,
        (int)num_devices - 1);
  }
  // |out_ids| doubles as the "seen" map until the copy at the end: mark with -1.
  for (int32_t k = 0; k < num_devices; ++k) out_ids[k] = 0;
  for (size_t k = 0; k < (size_t)num_devices; ++k) {
    int32_t id = groups->ids[k];
    if (id < 0 || id >= num_devices || out_ids[id] != 0) {
      char text[512];
      cml__groups_format(groups->ids, groups->group_count, groups->group_size, text, sizeof text);
      return INVALID(
          "%s: replica groups %s: device slot %d %s (the groups must be a partition of "
          "the device slots 0..%d)",
          name, text, (int)id, (id < 0 || id >= num_devices) ? "is out of range" : "appears twice",
          (int)num_devices - 1);
    }
    out_ids[id] = 1;
  }
  for (int32_t k = 0; k < num_devices; ++k) out_ids[k] = groups->ids[k];
  *out_group_count = (int32_t)groups->group_count;
  *out_group_size = (int32_t)groups->group_size;
  return CML_OK;
}

static cml_status_t cml_check_reduce_type(cml_op_t op, const cml_shape_t* x, cml_reduce_type_t type,
                                          const char* what) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  if (type != CML_REDUCE_SUM && type != CML_REDUCE_PRODUCT && type != CML_REDUCE_MAX &&
      type != CML_REDUCE_MIN) {
    return INVALID("%s: reduction type %d is not Sum, Product, Max or Min (%s %s)", cml_op_name(op),
                   (int)type, what, S0(x));
  }
  if ((type == CML_REDUCE_MAX || type == CML_REDUCE_MIN) && cml_dtype_is_complex(x->dtype)) {
    return INVALID("%s: %s reduction of complex %s %s: complex numbers are not ordered",
                   cml_op_name(op), cml_reduce_type_name(type), what, S0(x));
  }
  return CML_OK;
}

cml_status_t cml__infer_all_reduce(const cml_shape_t* operands, size_t count,
                                   cml_reduce_type_t type, cml_shape_t* outs) {
  if (count == 0) return INVALID("AllReduce: no operands");
  for (size_t i = 0; i < count; ++i) {
    char what[32];
    snprintf(what, sizeof what, "operand #%zu", i);
    CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_ALL_REDUCE, &operands[i], what, false));
    CML_RETURN_IF_ERROR(cml_check_reduce_type(CML_OP_ALL_REDUCE, &operands[i], type, what));
    outs[i] = operands[i];
  }
  return CML_OK;
}

cml_status_t cml__infer_all_gather(const cml_shape_t* x, int64_t axis, int32_t group_size,
                                   cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_ALL_GATHER, x, "operand", false));
  if (x->rank == 0) return INVALID("AllGather: operand %s is a scalar (needs an axis)", S0(x));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_ALL_GATHER, x, axis, "axis"));
  *out = *x;
  if (__builtin_mul_overflow(x->dims[axis], (int64_t)group_size, &out->dims[axis])) {
    return INVALID("AllGather: dimension %lld of %s times the group size %d overflows",
                   (long long)axis, S0(x), (int)group_size);
  }
  attrs->axis = axis;
  return CML_OK;
}

cml_status_t cml__infer_reduce_scatter(const cml_shape_t* x, cml_reduce_type_t type, int64_t axis,
                                       int32_t group_size, cml_ir_attrs_t* attrs,
                                       cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_REDUCE_SCATTER, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_reduce_type(CML_OP_REDUCE_SCATTER, x, type, "operand"));
  if (x->rank == 0) return INVALID("ReduceScatter: operand %s is a scalar (needs an axis)", S0(x));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_REDUCE_SCATTER, x, axis, "axis"));
  if (x->dims[axis] % group_size != 0) {
    return INVALID(
        "ReduceScatter: dimension %lld of %s (size %lld) is not divisible by the group "
        "size %d",
        (long long)axis, S0(x), (long long)x->dims[axis], (int)group_size);
  }
  *out = *x;
  out->dims[axis] = x->dims[axis] / group_size;
  attrs->axis = axis;
  attrs->reduce_type = type;
  return CML_OK;
}

cml_status_t cml__infer_all_to_all(const cml_shape_t* x, int64_t split_axis, int64_t concat_axis,
                                   int32_t group_size, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_ALL_TO_ALL, x, "operand", false));
  if (x->rank == 0) return INVALID("AllToAll: operand %s is a scalar (needs axes)", S0(x));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_ALL_TO_ALL, x, split_axis, "split axis"));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_ALL_TO_ALL, x, concat_axis, "concat axis"));
  if (x->dims[split_axis] % group_size != 0) {
    return INVALID(
        "AllToAll: split axis %lld of %s (size %lld) is not divisible by the group "
        "size %d",
        (long long)split_axis, S0(x), (long long)x->dims[split_axis], (int)group_size);
  }
  *out = *x;
  out->dims[split_axis] = x->dims[split_axis] / group_size;
  if (__builtin_mul_overflow(out->dims[concat_axis], (int64_t)group_size,
                             &out->dims[concat_axis])) {
    return INVALID("AllToAll: concat axis %lld of %s times the group size %d overflows",
                   (long long)concat_axis, S0(x), (int)group_size);
  }
  attrs->collective.split_axis = split_axis;
  attrs->collective.concat_axis = concat_axis;
  return CML_OK;
}

cml_status_t cml__infer_collective_permute(const cml_shape_t* x, const int32_t* pairs,
                                           size_t pair_count, int32_t num_devices,
                                           cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_COLLECTIVE_PERMUTE, x, "operand", false));
  if (pair_count > 0 && !pairs) {
    return INVALID("CollectivePermute: NULL pairs for %zu pairs", pair_count);
  }
  if (pair_count > (size_t)num_devices) {
    return INVALID(
        "CollectivePermute: %zu source-target pairs for %d devices (each slot is a "
        "source at most once)",
        pair_count, (int)num_devices);
  }
  for (size_t i = 0; i < pair_count; ++i) {
    int32_t src = pairs[2 * i], dst = pairs[2 * i + 1];
    if (src < 0 || src >= num_devices || dst < 0 || dst >= num_devices) {
      return INVALID(
          "CollectivePermute: pair #%zu (%d -> %d) names a device slot out of range "
          "[0, %d)",
          i, (int)src, (int)dst, (int)num_devices);
    }
    for (size_t j = 0; j < i; ++j) {
      if (pairs[2 * j] == src) {
        return INVALID(
            "CollectivePermute: device slot %d is the source of pairs #%zu and #%zu "
            "(each slot sends at most once)",
            (int)src, j, i);
      }
      if (pairs[2 * j + 1] == dst) {
        return INVALID(
            "CollectivePermute: device slot %d is the target of pairs #%zu and #%zu "
            "(each slot receives at most once)",
            (int)dst, j, i);
      }
    }
  }
  *out = *x;
  return CML_OK;
}

cml_status_t cml__infer_collective_broadcast(const cml_shape_t* x, cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_COLLECTIVE_BROADCAST, x, "operand", false));
  *out = *x;
  return CML_OK;
}
