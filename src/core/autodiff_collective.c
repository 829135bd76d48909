// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_collective.c: VJPs of the collective group. An SPMD program is one function
// that every device slot runs on its own data; its gradient is that of the sum of every slot's
// loss (each slot differentiates its own loss, and a collective carries the cotangents back
// across the slots the way its forward carried the values). So each linear collective's VJP is
// its transpose over the same replica groups, as in JAX's pmap: AllReduce(sum) -> AllReduce(sum),
// AllGather <-> ReduceScatter(sum), AllToAll -> AllToAll with the split and concatenation axes
// swapped, CollectivePermute -> CollectivePermute with every pair reversed, and
// CollectiveBroadcast -> the group's sum of the cotangents, kept by the group's first member.
// AllReduce and ReduceScatter with product, max or min are not linear: UNIMPLEMENTED.
#include <stdio.h>
#include <string.h>

#include "autodiff_internal.h"
#include "cml/distributed.h"

// The replica groups of collective |n|.
static cml_replica_groups_t cml_ad_groups(const cml_ir_node_t* n) {
  const cml_ir_collective_attrs_t* c = &n->attrs->collective;
  cml_replica_groups_t g = {c->groups, (size_t)c->group_count, (size_t)c->group_size};
  return g;
}

// UNIMPLEMENTED for a reduction other than sum.
static cml_status_t cml_ad_sum_only(cml__ad_t* ad, const cml_ir_node_t* n) {
  char why[96];
  snprintf(why, sizeof why, "a %s reduction is not linear; only Sum has a VJP",
           cml_reduce_type_name(n->attrs->reduce_type));
  return cml__ad_no_vjp(ad, n, why);
}

cml_status_t cml__ad_vjp_collective(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                    cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  const cml_replica_groups_t groups = cml_ad_groups(n);
  const cml_ir_attrs_t* a = n->attrs;
  switch (n->op) {
    case CML_OP_ALL_REDUCE: {
      if (a->reduce_type != CML_REDUCE_SUM) return cml_ad_sum_only(ad, n);
      // One AllReduce of every cotangent the operands want.
      uint32_t count = 0;
      for (uint32_t i = 0; i < n->input_count; ++i) count += cts[i] && cml__ad_wants(ad, n, i);
      if (count == 0) return CML_OK;
      cml_value_t* ops = cml__temp_alloc(ad->b, (size_t)count * sizeof(cml_value_t));
      if (!ops) return CML_OK;  // RESOURCE_EXHAUSTED sticks to the builder
      for (uint32_t i = 0, k = 0; i < n->input_count; ++i) {
        if (cts[i] && cml__ad_wants(ad, n, i)) ops[k++] = cts[i];
      }
      if (cml_op_all_reduce(f, ops, count, CML_REDUCE_SUM, &groups, ops)) {
        for (uint32_t i = 0, k = 0; i < n->input_count; ++i) {
          if (cts[i] && cml__ad_wants(ad, n, i)) in_cts[i] = ops[k++];
        }
      }
      cml__temp_free(ad->b, ops, (size_t)count * sizeof(cml_value_t));
      return CML_OK;
    }
    case CML_OP_ALL_GATHER:
      in_cts[0] = cml_op_reduce_scatter(f, cts[0], CML_REDUCE_SUM, a->axis, &groups);
      return CML_OK;
    case CML_OP_REDUCE_SCATTER:
      if (a->reduce_type != CML_REDUCE_SUM) return cml_ad_sum_only(ad, n);
      in_cts[0] = cml_op_all_gather(f, cts[0], a->axis, &groups);
      return CML_OK;
    case CML_OP_ALL_TO_ALL:
      in_cts[0] = cml_op_all_to_all(f, cts[0], a->collective.concat_axis, a->collective.split_axis,
                                    &groups);
      return CML_OK;
    case CML_OP_COLLECTIVE_PERMUTE: {
      const uint32_t pairs = (uint32_t)a->collective.pair_count;
      int32_t* back = cml__temp_alloc(ad->b, (2 * (size_t)pairs + 2) * sizeof(int32_t));
      if (!back) return CML_OK;
      for (uint32_t p = 0; p < pairs; ++p) {
        back[2 * p] = a->collective.pairs[2 * p + 1];
        back[2 * p + 1] = a->collective.pairs[2 * p];
      }
      in_cts[0] = cml_op_collective_permute(f, cts[0], back, pairs);
      cml__temp_free(ad->b, back, (2 * (size_t)pairs + 2) * sizeof(int32_t));
      return CML_OK;
    }
    case CML_OP_COLLECTIVE_BROADCAST: {
      // The group's sum, kept where this slot is its group's first member: a Bool per slot,
      // read at ReplicaId.
      const size_t slots = groups.group_count * groups.group_size;
      bool* first = cml__temp_alloc(ad->b, slots + 1);
      if (!first) return CML_OK;
      memset(first, 0, slots + 1);
      for (size_t g = 0; g < groups.group_count; ++g) {
        first[groups.ids[g * groups.group_size]] = true;
      }
      const cml_shape_t fs = cml_shape_make(CML_DTYPE_BOOL, 1, (const int64_t[]){(int64_t)slots});
      cml_value_t table = cml_constant(f, &fs, first);
      cml__temp_free(ad->b, first, slots + 1);
      cml_value_t id = cml_op_convert_dtype(f, cml_op_replica_id(f), CML_DTYPE_I32);
      cml_value_t mine =
          cml_op_reshape(f, cml_op_dynamic_slice(f, table, &id, (const int64_t[]){1}, 1), NULL, 0);
      cml_value_t sum = cts[0];
      if (!cml_op_all_reduce(f, &sum, 1, CML_REDUCE_SUM, &groups, &sum)) return CML_OK;
      const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
      in_cts[0] = cml_op_where(f, mine, sum, cml__ad_zeros(ad, xs));
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
