// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_collective.c: StableHLO lowerings of the "collective" ops
// (AllReduce, AllGather, ReduceScatter, AllToAll, CollectivePermute, CollectiveBroadcast,
// ReplicaId, PartitionId) for SPMD modules (num_replicas = N, num_partitions = 1).
//
// Notes on semantics:
// - Device slots are replica ids, so the groups are written as they are, as dense i64 tensors
//   (`replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`), without channel handles:
//   cross-replica collectives.
// - AllReduce of several operands: PJRT needs one element type per all_reduce, so operands are
//   split by dtype (one all_reduce per dtype, in order of first appearance) and the results
//   bound back in operand order. The body is the plain scalar op of the reduction (add,
//   multiply, maximum, minimum): XLA's collectives recognise only those. Float Max and Min
//   reduce order keys (emit_internal.h) so that NaN propagates and -0 < +0, as on c.
// - AllGather, ReduceScatter and AllToAll with an empty result are an empty constant: nothing
//   to send, and StableHLO refuses a zero dimension at all_gather_dim / scatter_dimension.
// - CollectiveBroadcast does not compile on XLA's CPU plugin (its thunk emitter has no
//   collective-broadcast): there it is an AllReduce sum of the value masked to zero on every
//   slot but the first of its group. Floats are summed as their bit patterns (an unsigned
//   integer of the same width), so the result is bit-exact (NaN payloads, -0.0); Bool goes
//   through Uint8. Complex values are summed as they are (a -0.0 part becomes +0.0). Other
//   plugins get the real op.
// - Packed integers (Int4, Uint4, Int2, Uint2) go through 8-bit integers of their signedness.
// - Collectives are refused in AutoSharding modules (the partitioner inserts its own), and so
//   is PartitionId: XLA refuses it outside manual computations ("the meaning is ambiguous").
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

// Writes `dense<[[a, b], [c, d]]> : tensor<GxSxi64>` for |count| rows of |size| ids.
void cml__shlo_dense_groups(cml__shlo_ctx_t* c, const int32_t* ids, int32_t count, int32_t size) {
  if (count <= 0 || size <= 0) {
    cml__shlo_printf(c, "dense<> : tensor<%dx%dxi64>", count > 0 ? (int)count : 0,
                     size > 0 ? (int)size : 0);
    return;
  }
  cml__shlo_printf(c, "dense<[");
  for (int32_t g = 0; g < count; ++g) {
    cml__shlo_printf(c, "%s[", g ? ", " : "");
    for (int32_t i = 0; i < size; ++i) {
      cml__shlo_printf(c, "%s%d", i ? ", " : "", (int)ids[(size_t)g * (size_t)size + (size_t)i]);
    }
    cml__shlo_printf(c, "]");
  }
  cml__shlo_printf(c, "]> : tensor<%dx%dxi64>", (int)count, (int)size);
}

// ` replica_groups = dense<...>` of node |n|.
static void cml_shlo_replica_groups(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_ir_collective_attrs_t* ca = &n->attrs->collective;
  cml__shlo_printf(c, "replica_groups = ");
  cml__shlo_dense_groups(c, ca->groups, ca->group_count, ca->group_size);
}

// The body op of a collective reduction over |dtype|; NULL when there is none.
static const char* cml_shlo_collective_body(cml_reduce_type_t type, cml_dtype_t dtype) {
  bool complex = cml_dtype_is_complex(dtype);
  switch (type) {
    case CML_REDUCE_SUM:
      return "stablehlo.add";
    case CML_REDUCE_PRODUCT:
      return "stablehlo.multiply";
    case CML_REDUCE_MAX:
      return complex || dtype == CML_DTYPE_BOOL ? NULL : "stablehlo.maximum";
    case CML_REDUCE_MIN:
      return complex || dtype == CML_DTYPE_BOOL ? NULL : "stablehlo.minimum";
    default:
      return NULL;
  }
}

// `({ ^bb0(%a: tensor<T>, %b: tensor<T>): %r = "<op>"(%a, %b); return %r })`: the plain op,
// without the IEEE max/min fix-ups of cml__shlo_binary_region (XLA's collectives only match
// the plain reductions).
static void cml_shlo_collective_region(cml__shlo_ctx_t* c, const char* op, cml_dtype_t dtype) {
  cml__shlo_printf(c, " ({\n");
  c->indent++;
  cml_dtype_t dtypes[2] = {dtype, dtype};
  cml__shlo_val_t args[2];
  cml__shlo_scalar_header(c, dtypes, 2, args);
  cml_shape_t s = cml_shape_scalar(dtype);
  cml__shlo_val_t r = cml__shlo_op(c, op, args, 2, NULL, &s);
  cml__shlo_region_return(c, &r, 1);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "})");
}

// The dtype a value of |dtype| travels as through a collective: packed integers widen to 8
// bits (the same signedness); everything else as is.
static cml_dtype_t cml_shlo_wire_dtype(cml_dtype_t dtype) {
  if (!cml_dtype_is_packed(dtype)) return dtype;
  return cml_dtype_is_unsigned_int(dtype) ? CML_DTYPE_U8 : CML_DTYPE_I8;
}

static cml__shlo_val_t cml_shlo_to_wire(cml__shlo_ctx_t* c, const cml__shlo_val_t* v) {
  cml_dtype_t w = cml_shlo_wire_dtype(v->shape.dtype);
  return w == v->shape.dtype ? *v : cml__shlo_convert(c, v, w);
}

static cml__shlo_val_t cml_shlo_from_wire(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                          cml_dtype_t dtype) {
  return v->shape.dtype == dtype ? *v : cml__shlo_convert(c, v, dtype);
}

// Whether a |type| reduction of |dtype| across devices travels as order keys (emit_internal.h):
// float max and min. XLA's collectives take only the plain op, which on the CPU plugin drops
// NaN and returns either zero for max(-0, +0); the integer max/min of the keys propagates NaN
// and orders -0 < +0, as the c backend and cml's Max/Min ops do.
static bool cml_shlo_keyed(cml_reduce_type_t type, cml_dtype_t dtype) {
  return (type == CML_REDUCE_MAX || type == CML_REDUCE_MIN) && cml_dtype_is_float(dtype);
}

// Whether a |type| reduction of |dtype| across devices travels as Float32: Float16/BFloat16
// sums and products, which the c backend (and cml's Reduce ops) combine in f32 and round once.
// XLA's CPU plugin combined Float16 in Float16, one member at a time: 2048 + 1 + 1 + 1 gave
// 2048 or 2052 depending on which device held the 2048, and 256 * 256 * 2^-8 * 2^-8 gave inf.
static bool cml_shlo_widened(cml_reduce_type_t type, cml_dtype_t dtype) {
  return (type == CML_REDUCE_SUM || type == CML_REDUCE_PRODUCT) &&
         (dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16);
}

// The dtype a |type| reduction of |dtype| travels as.
static cml_dtype_t cml_shlo_reduce_wire_dtype(cml_reduce_type_t type, cml_dtype_t dtype) {
  return cml_shlo_keyed(type, dtype)     ? cml__shlo_order_key_dtype(dtype)
         : cml_shlo_widened(type, dtype) ? CML_DTYPE_F32
                                         : cml_shlo_wire_dtype(dtype);
}

static cml__shlo_val_t cml_shlo_to_reduce_wire(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                               cml_reduce_type_t type) {
  if (cml_shlo_keyed(type, v->shape.dtype)) {
    return cml__shlo_order_key(c, v, type == CML_REDUCE_MAX);
  }
  if (cml_shlo_widened(type, v->shape.dtype)) return cml__shlo_convert(c, v, CML_DTYPE_F32);
  return cml_shlo_to_wire(c, v);
}

static cml__shlo_val_t cml_shlo_from_reduce_wire(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                                 cml_reduce_type_t type, cml_dtype_t dtype) {
  if (cml_shlo_keyed(type, dtype)) return cml__shlo_from_order_key(c, v, dtype);
  return cml_shlo_from_wire(c, v, dtype);
}

// Refuses collectives outside SPMD modules.
static cml_status_t cml_shlo_check_spmd(const cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_module_t* m = c->module;
  if (m->distribution == CML_DISTRIBUTION_AUTO_SHARDING) {
    return cml_status_make(
        CML_STATUS_INVALID_ARGUMENT,
        "xla: %s in an AutoSharding module: the partitioner inserts the collectives itself; "
        "collective ops (and PartitionId, which XLA refuses outside manual computations) are "
        "for SPMD modules only",
        cml_op_name(n->op));
  }
  if (m->distribution != CML_DISTRIBUTION_SPMD && n->op != CML_OP_REPLICA_ID &&
      n->op != CML_OP_PARTITION_ID) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: %s in a module that is not SPMD (%s): collectives need "
                           "cml_builder_spmd",
                           cml_op_name(n->op), cml_distribution_name(m->distribution));
  }
  return CML_OK;
}

static cml_status_t cml_shlo_all_reduce(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  uint32_t count = n->input_count;
  cml__shlo_val_t* ins = malloc(count * sizeof *ins + 1);
  cml_shape_t* outs = malloc(count * sizeof *outs + 1);
  uint32_t* members = malloc(count * sizeof *members + 1);
  bool* done = calloc(count + 1, sizeof *done);
  if (!ins || !outs || !members || !done) {
    free(ins);
    free(outs);
    free(members);
    free(done);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  cml_status_t st = CML_OK;
  for (uint32_t i = 0; i < count && st == CML_OK; ++i) {
    if (done[i]) continue;
    cml_dtype_t dtype = cml__shlo_value(c, n->inputs[i]).shape.dtype;
    cml_reduce_type_t type = n->attrs->reduce_type;
    cml_dtype_t wire = cml_shlo_reduce_wire_dtype(type, dtype);
    const char* body = cml_shlo_collective_body(type, wire);
    if (!body) {
      char why[128];
      snprintf(why, sizeof why, "no %s reduction of %s across devices",
               cml_reduce_type_name(n->attrs->reduce_type), cml_dtype_name(dtype));
      st = cml__shlo_unimplemented(c, n, why);
      break;
    }
    // Every operand of this dtype, in order: one all_reduce.
    uint32_t k = 0;
    for (uint32_t j = i; j < count; ++j) {
      cml__shlo_val_t v = cml__shlo_value(c, n->inputs[j]);
      if (done[j] || v.shape.dtype != dtype) continue;
      done[j] = true;
      members[k] = j;
      ins[k] = cml_shlo_to_reduce_wire(c, &v, type);
      outs[k] = ins[k].shape;
      ++k;
    }
    cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.all_reduce", ins, (int)k, k);
    cml_shlo_collective_region(c, body, wire);
    cml__shlo_printf(c, " {");
    cml_shlo_replica_groups(c, n);
    cml__shlo_printf(c, "}");
    cml__shlo_op_end(c, NULL, ins, (int)k, outs, k);
    for (uint32_t q = 0; q < k; ++q) {
      cml__shlo_val_t res = {k == 1 ? r : cml__shlo_result(&r, q), outs[q]};
      res = cml_shlo_from_reduce_wire(c, &res, type, dtype);
      cml__shlo_bind(c, n->first_output + members[q], &res.name);
    }
  }
  free(ins);
  free(outs);
  free(members);
  free(done);
  return st;
}

// AllGather, ReduceScatter, AllToAll: one operand, one result, groups plus |extra| attributes.
static cml_status_t cml_shlo_grouped(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_ir_attrs_t* at = n->attrs;
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml_dtype_t dtype = x.shape.dtype;
  if (cml_shape_element_count(cml_shlo_out(c, n, 0)) == 0) {
    // An empty result needs no communication, and StableHLO refuses a zero dimension at
    // all_gather_dim / scatter_dimension.
    cml__shlo_val_t r = cml__shlo_const_fill(c, dtype, CML__SHLO_ZERO, cml_shlo_out(c, n, 0));
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  const bool reduce = n->op == CML_OP_REDUCE_SCATTER;
  x = reduce ? cml_shlo_to_reduce_wire(c, &x, at->reduce_type) : cml_shlo_to_wire(c, &x);
  cml_shape_t out = cml_shlo_retype(cml_shlo_out(c, n, 0), x.shape.dtype);
  const char* op = n->op == CML_OP_ALL_GATHER       ? "stablehlo.all_gather"
                   : n->op == CML_OP_REDUCE_SCATTER ? "stablehlo.reduce_scatter"
                                                    : "stablehlo.all_to_all";
  const char* body = NULL;
  if (n->op == CML_OP_REDUCE_SCATTER) {
    body = cml_shlo_collective_body(at->reduce_type, x.shape.dtype);
    if (!body) {
      char why[128];
      snprintf(why, sizeof why, "no %s reduction of %s across devices",
               cml_reduce_type_name(at->reduce_type), cml_dtype_name(dtype));
      return cml__shlo_unimplemented(c, n, why);
    }
  }
  cml__shlo_val_t r;
  r.shape = out;
  r.name = cml__shlo_op_begin(c, op, &x, 1, 1);
  if (body) cml_shlo_collective_region(c, body, x.shape.dtype);
  cml__shlo_printf(c, " {");
  switch (n->op) {
    case CML_OP_ALL_GATHER:
      cml__shlo_printf(c, "all_gather_dim = %lld : i64, ", (long long)at->axis);
      cml_shlo_replica_groups(c, n);
      break;
    case CML_OP_REDUCE_SCATTER:
      cml_shlo_replica_groups(c, n);
      cml__shlo_printf(c, ", scatter_dimension = %lld : i64", (long long)at->axis);
      break;
    default:
      cml__shlo_printf(c, "concat_dimension = %lld : i64, ", (long long)at->collective.concat_axis);
      cml_shlo_replica_groups(c, n);
      cml__shlo_printf(c, ", split_count = %d : i64, split_dimension = %lld : i64",
                       (int)at->collective.group_size, (long long)at->collective.split_axis);
      break;
  }
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, &x, 1, &out, 1);
  r = reduce ? cml_shlo_from_reduce_wire(c, &r, at->reduce_type, dtype)
             : cml_shlo_from_wire(c, &r, dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_collective_permute(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_ir_collective_attrs_t* ca = &n->attrs->collective;
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml_dtype_t dtype = x.shape.dtype;
  cml__shlo_val_t r;
  if (ca->pair_count <= 0) {
    // Nothing is sent: every slot receives zeros.
    r = cml__shlo_const_fill(c, dtype, CML__SHLO_ZERO, &x.shape);
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  x = cml_shlo_to_wire(c, &x);
  r.shape = x.shape;
  r.name = cml__shlo_op_begin(c, "stablehlo.collective_permute", &x, 1, 1);
  cml__shlo_printf(c, " {source_target_pairs = ");
  cml__shlo_dense_groups(c, ca->pairs, ca->pair_count, 2);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, &x, 1, &r.shape, 1);
  r = cml_shlo_from_wire(c, &r, dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

// The unsigned integer dtype of |bits| bits.
static cml_dtype_t cml_shlo_unsigned_of(int bits) {
  switch (bits) {
    case 16:
      return CML_DTYPE_U16;
    case 32:
      return CML_DTYPE_U32;
    case 64:
      return CML_DTYPE_U64;
    default:
      return CML_DTYPE_U8;
  }
}

// CollectiveBroadcast on the CPU plugin: all_reduce(sum) of select(is_root, x, 0), is_root
// read from a constant table indexed by replica_id.
static cml_status_t cml_shlo_broadcast_masked(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_ir_collective_attrs_t* ca = &n->attrs->collective;
  int32_t slots = c->opts->num_replicas > 0 ? c->opts->num_replicas : 1;
  if ((int64_t)ca->group_count * ca->group_size > slots) {
    slots = ca->group_count * ca->group_size;
  }
  uint8_t* table = calloc((size_t)slots, 1);
  if (!table) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  for (int32_t g = 0; g < ca->group_count; ++g) {
    int32_t root = ca->groups[(size_t)g * (size_t)ca->group_size];
    if (root >= 0 && root < slots) table[root] = 1;
  }
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml_dtype_t dtype = x.shape.dtype;
  // The value as something a sum moves exactly.
  cml__shlo_val_t w = x;
  if (cml_dtype_is_float(dtype)) {
    cml_shape_t bits = cml_shlo_retype(&x.shape, cml_shlo_unsigned_of(cml_dtype_bits(dtype)));
    w = cml__shlo_op(c, "stablehlo.bitcast_convert", &x, 1, NULL, &bits);
  } else if (dtype == CML_DTYPE_BOOL || cml_dtype_is_packed(dtype)) {
    w = cml__shlo_convert(c, &x,
                          dtype == CML_DTYPE_BOOL ? CML_DTYPE_U8 : cml_shlo_wire_dtype(dtype));
  }
  // is_root = table[replica_id] != 0, broadcast to the value's shape.
  cml_shape_t table_shape = cml_shape_make(CML_DTYPE_U8, 1, (int64_t[]){slots});
  cml__shlo_val_t tab = cml__shlo_constant(c, &table_shape, table);
  free(table);
  cml_shape_t id_shape = cml_shape_scalar(CML_DTYPE_U32);
  cml__shlo_val_t rid = cml__shlo_op(c, "stablehlo.replica_id", NULL, 0, NULL, &id_shape);
  cml__shlo_val_t ds_in[2] = {tab, rid};
  cml_shape_t one = cml_shape_make(CML_DTYPE_U8, 1, (int64_t[]){1});
  cml__shlo_val_t flag =
      cml__shlo_op(c, "stablehlo.dynamic_slice", ds_in, 2, "slice_sizes = array<i64: 1>", &one);
  cml_shape_t u8_scalar = cml_shape_scalar(CML_DTYPE_U8);
  flag = cml__shlo_op(c, "stablehlo.reshape", &flag, 1, NULL, &u8_scalar);
  cml__shlo_val_t zero8 = cml__shlo_const_scalar(c, CML_DTYPE_U8, CML__SHLO_ZERO);
  cml__shlo_val_t is_root = cml__shlo_compare(c, "NE", &flag, &zero8, false);
  is_root = cml__shlo_broadcast(c, &is_root, &w.shape);
  cml__shlo_val_t zeros = cml__shlo_const_fill(c, w.shape.dtype, CML__SHLO_ZERO, &w.shape);
  cml__shlo_val_t sel[3] = {is_root, w, zeros};
  cml__shlo_val_t masked = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &w.shape);
  cml__shlo_val_t r;
  r.shape = w.shape;
  r.name = cml__shlo_op_begin(c, "stablehlo.all_reduce", &masked, 1, 1);
  cml_shlo_collective_region(c, "stablehlo.add", w.shape.dtype);
  cml__shlo_printf(c, " {");
  cml_shlo_replica_groups(c, n);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, &masked, 1, &r.shape, 1);
  if (cml_dtype_is_float(dtype)) {
    r = cml__shlo_op(c, "stablehlo.bitcast_convert", &r, 1, NULL, &x.shape);
  } else if (r.shape.dtype != dtype) {
    r = cml__shlo_convert(c, &r, dtype);
  }
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_collective_broadcast(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  if (!c->opts->platform || strcmp(c->opts->platform, "cpu") == 0) {
    return cml_shlo_broadcast_masked(c, n);
  }
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml_dtype_t dtype = x.shape.dtype;
  x = cml_shlo_to_wire(c, &x);
  cml__shlo_val_t r;
  r.shape = x.shape;
  r.name = cml__shlo_op_begin(c, "stablehlo.collective_broadcast", &x, 1, 1);
  cml__shlo_printf(c, " {");
  cml_shlo_replica_groups(c, n);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, &x, 1, &r.shape, 1);
  r = cml_shlo_from_wire(c, &r, dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

// ReplicaId / PartitionId: a Uint32 scalar (converted when the IR asks for another dtype).
static cml_status_t cml_shlo_device_id(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const char* op = n->op == CML_OP_REPLICA_ID ? "stablehlo.replica_id" : "stablehlo.partition_id";
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_U32);
  cml__shlo_val_t r = cml__shlo_op(c, op, NULL, 0, NULL, &s);
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  if (out->dtype != CML_DTYPE_U32) r = cml__shlo_convert(c, &r, out->dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

cml_status_t cml__shlo_emit_collective(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  CML_RETURN_IF_ERROR(cml_shlo_check_spmd(c, n));
  switch (n->op) {
    case CML_OP_ALL_REDUCE:
      return cml_shlo_all_reduce(c, n);
    case CML_OP_ALL_GATHER:
    case CML_OP_REDUCE_SCATTER:
    case CML_OP_ALL_TO_ALL:
      return cml_shlo_grouped(c, n);
    case CML_OP_COLLECTIVE_PERMUTE:
      return cml_shlo_collective_permute(c, n);
    case CML_OP_COLLECTIVE_BROADCAST:
      return cml_shlo_collective_broadcast(c, n);
    case CML_OP_REPLICA_ID:
    case CML_OP_PARTITION_ID:
      return cml_shlo_device_id(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
}
