// SPDX-License-Identifier: Apache-2.0
// src/distributed/partition.c: the AutoSharding partitioner (global module + shardings -> SPMD
// module with collectives) for backends without their own. Rules: docs/partitioner.md.
#include "distributed/partition.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cml/fused.h"
#include "core/builder_internal.h"

//===--- sharding state ---===//

// The sharding of one value: for each dimension the mesh axes that split it (major to minor),
// and the mesh axes over which the value is a pending partial sum (each device holds a term;
// an AllReduce(sum) over those axes gives the value).
typedef struct cml_pshard_t {
  int8_t count[CML_MAX_RANK];
  int8_t axes[CML_MAX_RANK][CML_MAX_MESH_AXES];
  uint32_t partial;
} cml_pshard_t;

// The mesh axes a state uses in its dimensions, as a bit set.
static uint32_t cml_pshard_dim_mask(const cml_pshard_t* s, int rank) {
  uint32_t m = 0;
  for (int d = 0; d < rank; ++d) {
    for (int k = 0; k < s->count[d]; ++k) m |= 1u << s->axes[d][k];
  }
  return m;
}

static bool cml_pshard_dim_equal(const cml_pshard_t* a, int da, const cml_pshard_t* b, int db) {
  if (a->count[da] != b->count[db]) return false;
  for (int k = 0; k < a->count[da]; ++k) {
    if (a->axes[da][k] != b->axes[db][k]) return false;
  }
  return true;
}

static void cml_pshard_copy_dim(cml_pshard_t* dst, int dd, const cml_pshard_t* src, int sd) {
  dst->count[dd] = src->count[sd];
  memcpy(dst->axes[dd], src->axes[sd], sizeof dst->axes[dd]);
}

static void cml_pshard_clear_dim(cml_pshard_t* s, int d) {
  s->count[d] = 0;
  memset(s->axes[d], 0, sizeof s->axes[d]);
}

//===--- the partitioner ---===//

typedef struct cml_partitioner_t {
  const cml_module_t* m;
  cml_allocator_t alloc;   // the backend's
  const cml_mesh_t* mesh;  // NULL: every value is replicated
  int axis_count;
  int64_t axis_size[CML_MAX_MESH_AXES];
  int64_t axis_stride[CML_MAX_MESH_AXES];  // row-major strides of mesh positions
  int32_t n;                               // device slots
  int32_t* slot_of_pos;                    // mesh position -> device slot
  int32_t* pos_of_slot;
  int32_t* ids;  // scratch for replica groups (n entries)
  cml_builder_t* b;
  cml_function_t* f;
  cml_value_t* local;          // per global value: the per-device value
  cml_pshard_t* st;            // per global value: its sharding state
  cml_value_t* rep;            // per global value: a replicated copy, once made
  cml_function_t** functions;  // per global function: its whole copy, once made
  cml_value_t replica;         // ReplicaId as I32, once made
  cml_value_t zero;            // I32 0, once made
  cml_status_t status;
} cml_partitioner_t;

// Zeroed scratch of |count| * |size| bytes from the backend's allocator (NULL when out of memory).
static void* cml_pt_calloc(cml_partitioner_t* p, size_t count, size_t size) {
  size_t bytes = (count ? count : 1) * size;
  void* ptr = cml_allocator_malloc(p->alloc, bytes, 16);
  if (ptr) memset(ptr, 0, bytes);
  return ptr;
}

static void cml_pt_dealloc(cml_partitioner_t* p, void* ptr, size_t count, size_t size) {
  if (ptr) cml_allocator_free(p->alloc, ptr, (count ? count : 1) * size);
}

static bool cml_pt_fail(cml_partitioner_t* p, cml_status_code_t code, const char* fmt, ...)
    CML_PRINTF(3, 4);
static bool cml_pt_fail(cml_partitioner_t* p, cml_status_code_t code, const char* fmt, ...) {
  if (p->status != CML_OK) return false;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  p->status = cml_status_make(code, "AutoSharding partitioner (module %s): %s",
                              p->m->name ? p->m->name : "", text);
  return false;
}

// Checks a value the builder returned; on failure takes the builder's error.
static bool cml_pt_ok(cml_partitioner_t* p, cml_value_t v) {
  if (p->status != CML_OK) return false;
  if (v != CML_VALUE_INVALID) return true;
  cml_status_t st = cml_builder_status(p->b);
  if (st == CML_OK) st = cml_status_make(CML_STATUS_INTERNAL, "an op failed without a status");
  cml_pt_fail(p, cml_status_code(st), "re-emitting an op failed: %s", cml_status_message(st));
  cml_status_free(st);
  return false;
}

static int cml_pt_rank(const cml_partitioner_t* p, uint32_t v) {
  return p->m->values[v].shape.rank;
}

// Writes "[{data}, {}] partial{model}" for |s| of rank |rank|.
static const char* cml_pt_format(const cml_partitioner_t* p, const cml_pshard_t* s, int rank,
                                 char* buf, size_t size) {
  size_t len = 0;
#define CML_PT_PUT(...)                                                          \
  do {                                                                           \
    if (len < size) len += (size_t)snprintf(buf + len, size - len, __VA_ARGS__); \
  } while (0)
  CML_PT_PUT("[");
  for (int d = 0; d < rank; ++d) {
    CML_PT_PUT("%s{", d ? ", " : "");
    for (int k = 0; k < s->count[d]; ++k) {
      CML_PT_PUT("%s%s", k ? "," : "", cml_mesh_axis_name(p->mesh, (size_t)s->axes[d][k]));
    }
    CML_PT_PUT("}");
  }
  CML_PT_PUT("]");
  if (s->partial) {
    CML_PT_PUT(" partial{");
    bool first = true;
    for (int a = 0; a < p->axis_count; ++a) {
      if (!(s->partial & (1u << a))) continue;
      CML_PT_PUT("%s%s", first ? "" : ",", cml_mesh_axis_name(p->mesh, (size_t)a));
      first = false;
    }
    CML_PT_PUT("}");
  }
#undef CML_PT_PUT
  return buf;
}

// UNIMPLEMENTED naming |n|'s op, its operands' shapes and shardings.
static bool cml_pt_unimplemented(cml_partitioner_t* p, const cml_ir_node_t* n, const char* why) {
  char text[768];
  size_t len = 0;
  for (uint32_t i = 0; i < n->input_count && len < sizeof text; ++i) {
    char shape[160], shard[200];
    uint32_t v = n->inputs[i];
    len += (size_t)snprintf(text + len, sizeof text - len, "%s%s %s", i ? ", " : "",
                            cml_shape_format(&p->m->values[v].shape, shape, sizeof shape),
                            cml_pt_format(p, &p->st[v], cml_pt_rank(p, v), shard, sizeof shard));
  }
  if (len >= sizeof text) text[sizeof text - 1] = '\0';
  if (n->input_count == 0) snprintf(text, sizeof text, "no operands");
  return cml_pt_fail(p, CML_STATUS_UNIMPLEMENTED, "%s cannot be partitioned (%s): operands %s",
                     cml_op_name(n->op), why, text);
}

// Mesh coordinate of position |pos| along axis |a|.
static int64_t cml_pt_coord(const cml_partitioner_t* p, int64_t pos, int a) {
  return (pos / p->axis_stride[a]) % p->axis_size[a];
}

// How many shards dimension |d| of |s| has.
static int64_t cml_pt_shards(const cml_partitioner_t* p, const cml_pshard_t* s, int d) {
  int64_t k = 1;
  for (int i = 0; i < s->count[d]; ++i) k *= p->axis_size[s->axes[d][i]];
  return k;
}

// Which shard of dimension |d| of |s| mesh position |pos| holds.
static int64_t cml_pt_shard_index(const cml_partitioner_t* p, const cml_pshard_t* s, int d,
                                  int64_t pos) {
  int64_t idx = 0;
  for (int i = 0; i < s->count[d]; ++i) {
    int a = s->axes[d][i];
    idx = idx * p->axis_size[a] + cml_pt_coord(p, pos, a);
  }
  return idx;
}

// The per-device shape of a value of |global| shape with state |s|; false when a dimension does
// not divide by its shard count.
static bool cml_pt_local_shape(const cml_partitioner_t* p, const cml_shape_t* global,
                               const cml_pshard_t* s, cml_shape_t* out) {
  *out = *global;
  for (int d = 0; d < global->rank; ++d) {
    int64_t k = cml_pt_shards(p, s, d);
    if (k > 1 && global->dims[d] % k != 0) return false;
    out->dims[d] = global->dims[d] / k;
  }
  return true;
}

// Whether |s| is a valid sharding for |shape|: each mesh axis used once (dims and partial
// together), and every sharded dimension divisible.
static bool cml_pt_valid(const cml_partitioner_t* p, const cml_shape_t* shape,
                         const cml_pshard_t* s) {
  uint32_t used = s->partial;
  for (int d = 0; d < shape->rank; ++d) {
    for (int k = 0; k < s->count[d]; ++k) {
      uint32_t bit = 1u << s->axes[d][k];
      if (used & bit) return false;
      used |= bit;
    }
  }
  cml_shape_t local;
  return cml_pt_local_shape(p, shape, s, &local);
}

// Replica groups (as device slots) that vary only the mesh axes |axes| (|count| of them, major
// first); one group per combination of the other axes. Fills p->ids.
static cml_replica_groups_t cml_pt_groups(cml_partitioner_t* p, const int8_t* axes, int count) {
  int64_t group_size = 1;
  for (int i = 0; i < count; ++i) group_size *= p->axis_size[axes[i]];
  int64_t group_count = p->n / group_size;
  // Group number of a position: its coordinates along the other axes, row-major.
  for (int64_t pos = 0; pos < p->n; ++pos) {
    int64_t g = 0, idx = 0;
    for (int a = 0; a < p->axis_count; ++a) {
      bool in = false;
      for (int i = 0; i < count; ++i) in = in || axes[i] == a;
      if (!in) g = g * p->axis_size[a] + cml_pt_coord(p, pos, a);
    }
    for (int i = 0; i < count; ++i)
      idx = idx * p->axis_size[axes[i]] + cml_pt_coord(p, pos, axes[i]);
    p->ids[g * group_size + idx] = p->slot_of_pos[pos];
  }
  cml_replica_groups_t groups = {p->ids, (size_t)group_count, (size_t)group_size};
  return groups;
}

// AllReduce of |x| with |type| over the mesh axes in |mask|.
static cml_value_t cml_pt_all_reduce(cml_partitioner_t* p, cml_value_t x, uint32_t mask,
                                     cml_reduce_type_t type) {
  int8_t axes[CML_MAX_MESH_AXES];
  int count = 0;
  for (int a = 0; a < p->axis_count; ++a) {
    if (mask & (1u << a)) axes[count++] = (int8_t)a;
  }
  if (count == 0) return x;
  cml_replica_groups_t groups = cml_pt_groups(p, axes, count);
  cml_value_t out = CML_VALUE_INVALID;
  if (!cml_op_all_reduce(p->f, &x, 1, type, &groups, &out)) out = CML_VALUE_INVALID;
  cml_pt_ok(p, out);
  return out;
}

// This device's replica id as an I32 scalar (made once).
static cml_value_t cml_pt_replica(cml_partitioner_t* p) {
  if (p->replica == CML_VALUE_INVALID) {
    cml_value_t id = cml_op_replica_id(p->f);
    p->replica = cml_op_convert_dtype(p->f, id, CML_DTYPE_I32);
    cml_pt_ok(p, p->replica);
  }
  return p->replica;
}

// Slices this device's part of the dimensions that |to| splits and |from| does not (|x| holds
// them whole): DynamicSlice with starts read from a per-slot table at the replica id.
static cml_value_t cml_pt_slice(cml_partitioner_t* p, cml_value_t x, const cml_shape_t* global,
                                const cml_pshard_t* from, const cml_pshard_t* to) {
  cml_shape_t cur, target;
  if (!cml_pt_local_shape(p, global, from, &cur) || !cml_pt_local_shape(p, global, to, &target)) {
    cml_pt_fail(p, CML_STATUS_INTERNAL, "slice: indivisible shard shape");
    return CML_VALUE_INVALID;
  }
  if (p->zero == CML_VALUE_INVALID) {
    p->zero = cml_constant_scalar_i64(p->f, CML_DTYPE_I32, 0);
    if (!cml_pt_ok(p, p->zero)) return CML_VALUE_INVALID;
  }
  cml_value_t starts[CML_MAX_RANK];
  int32_t* table = (int32_t*)cml_pt_calloc(p, (size_t)p->n, sizeof *table);
  if (!table) {
    cml_pt_fail(p, CML_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return CML_VALUE_INVALID;
  }
  bool ok = true;
  for (int d = 0; ok && d < global->rank; ++d) {
    starts[d] = p->zero;
    if (cur.dims[d] == target.dims[d]) continue;
    for (int32_t s = 0; s < p->n; ++s) {
      table[s] = (int32_t)(cml_pt_shard_index(p, to, d, p->pos_of_slot[s]) * target.dims[d]);
    }
    cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){p->n});
    cml_value_t tv = cml_constant(p->f, &ts, table);
    cml_value_t rid = cml_pt_replica(p);
    int64_t one = 1;
    cml_value_t row = cml_op_dynamic_slice(p->f, tv, &rid, &one, 1);
    int64_t none = 0;
    starts[d] = cml_op_reshape(p->f, row, &none, 0);
    ok = cml_pt_ok(p, starts[d]);
  }
  cml_pt_dealloc(p, table, (size_t)p->n, sizeof *table);
  if (!ok) return CML_VALUE_INVALID;
  cml_value_t out = cml_op_dynamic_slice(p->f, x, starts, target.dims, global->rank);
  cml_pt_ok(p, out);
  return out;
}

// The per-device value of global value |v| resharded to |to| (to->partial must be a subset of
// the current partial set): ReduceScatter or AllReduce the partial axes |to| drops, AllGather
// the dimensions whose split changes, then slice locally the dimensions |to| splits.
// A whole value made by BroadcastInDim of a whole operand, or by Iota, needed split only along
// dimensions the broadcast creates (or other than the iota axis): made again with the local
// shape instead of sliced. CML_VALUE_INVALID when that does not apply.
static cml_value_t cml_pt_remake_split(cml_partitioner_t* p, uint32_t v, const cml_pshard_t* to) {
  const cml_shape_t* global = &p->m->values[v].shape;
  const cml_pshard_t* cur = &p->st[v];
  if (cur->partial || to->partial || cml_pshard_dim_mask(cur, global->rank) ||
      !cml_pshard_dim_mask(to, global->rank)) {
    return CML_VALUE_INVALID;
  }
  const cml_ir_node_t* n = &p->m->nodes[p->m->values[v].node];
  if (n->function != 0 || (n->op != CML_OP_BROADCAST_IN_DIM && n->op != CML_OP_IOTA)) {
    return CML_VALUE_INVALID;
  }
  cml_shape_t local;
  if (!cml_pt_local_shape(p, global, to, &local)) return CML_VALUE_INVALID;
  const cml_ir_attrs_t* a = n->attrs;
  if (n->op == CML_OP_IOTA) {
    if (to->count[a->axis] > 0) return CML_VALUE_INVALID;
    cml_value_t x = cml_op_iota(p->f, &local, a->axis);
    return cml_pt_ok(p, x) ? x : CML_VALUE_INVALID;
  }
  uint32_t operand = n->inputs[0];
  const cml_shape_t* os = &p->m->values[operand].shape;
  if (p->st[operand].partial || cml_pshard_dim_mask(&p->st[operand], os->rank)) {
    return CML_VALUE_INVALID;
  }
  for (int i = 0; i < a->axis_count; ++i) {
    if (to->count[a->axes[i]] > 0 && os->dims[i] != 1) return CML_VALUE_INVALID;
  }
  cml_value_t x = cml_op_broadcast_in_dim(p->f, p->local[operand], local.dims, local.rank, a->axes,
                                          a->axis_count);
  return cml_pt_ok(p, x) ? x : CML_VALUE_INVALID;
}

static cml_value_t cml_pt_reshard(cml_partitioner_t* p, uint32_t v, const cml_pshard_t* to) {
  if (p->status != CML_OK) return CML_VALUE_INVALID;
  {
    cml_value_t remade = cml_pt_remake_split(p, v, to);
    if (remade != CML_VALUE_INVALID || p->status != CML_OK) return remade;
  }
  const cml_shape_t* global = &p->m->values[v].shape;
  int rank = global->rank;
  cml_pshard_t cur = p->st[v];
  cml_value_t x = p->local[v];
  bool to_replicated = to->partial == 0 && cml_pshard_dim_mask(to, rank) == 0;
  if (to_replicated && p->rep[v] != CML_VALUE_INVALID) return p->rep[v];
  if (to->partial & ~cur.partial) {
    cml_pt_fail(p, CML_STATUS_INTERNAL, "reshard: cannot add a partial axis");
    return CML_VALUE_INVALID;
  }
  // A partial sum over axes that the target uses to split a dimension now whole: ReduceScatter
  // (each device keeps its part of the sum) instead of AllReduce then slice.
  uint32_t drop = cur.partial & ~to->partial;
  for (int d = 0; drop && d < rank; ++d) {
    if (cur.count[d] != 0 || to->count[d] == 0) continue;
    uint32_t axes = 0;
    for (int k = 0; k < to->count[d]; ++k) axes |= 1u << to->axes[d][k];
    if ((axes & drop) != axes) continue;
    cml_replica_groups_t groups = cml_pt_groups(p, to->axes[d], to->count[d]);
    x = cml_op_reduce_scatter(p->f, x, CML_REDUCE_SUM, d, &groups);
    if (!cml_pt_ok(p, x)) return CML_VALUE_INVALID;
    cml_pshard_copy_dim(&cur, d, to, d);
    drop &= ~axes;
    cur.partial &= ~axes;
  }
  if (drop) {
    x = cml_pt_all_reduce(p, x, drop, CML_REDUCE_SUM);
    cur.partial = to->partial;
  }
  for (int d = 0; x != CML_VALUE_INVALID && d < rank; ++d) {
    if (cur.count[d] == 0 || cml_pshard_dim_equal(&cur, d, to, d)) continue;
    cml_replica_groups_t groups = cml_pt_groups(p, cur.axes[d], cur.count[d]);
    x = cml_op_all_gather(p->f, x, d, &groups);
    if (!cml_pt_ok(p, x)) return CML_VALUE_INVALID;
    cml_pshard_clear_dim(&cur, d);
  }
  bool slice = false;
  for (int d = 0; d < rank; ++d) slice = slice || (cur.count[d] == 0 && to->count[d] > 0);
  if (slice && x != CML_VALUE_INVALID) {
    cml_pshard_t sliced = cur;
    for (int d = 0; d < rank; ++d) {
      if (cur.count[d] == 0) cml_pshard_copy_dim(&sliced, d, to, d);
    }
    x = cml_pt_slice(p, x, global, &cur, &sliced);
  }
  if (to_replicated && x != CML_VALUE_INVALID) p->rep[v] = x;
  return x;
}

// The replicated (whole) value of |v|.
static cml_value_t cml_pt_replicated(cml_partitioner_t* p, uint32_t v) {
  cml_pshard_t r;
  memset(&r, 0, sizeof r);
  return cml_pt_reshard(p, v, &r);
}

//===--- re-emitting ops ---===//

// Emits node |n| with the per-device operands |in| and its own attributes, writing its outputs
// to |out|. Correct for shapes that differ from the global ones only for ops whose attributes
// do not name sizes (the callers make sure of it).
static cml_function_t* cml_pt_callee(cml_partitioner_t* p, cml_function_t* parent, uint32_t g);

// Emits |n| with the operands |in| and its own attributes through the builder's node
// constructor, its outputs taking the shapes of its first output_count operands (ops without a
// public builder whose outputs are shaped so: FusedScaledDotProductAttentionVJP's dq, dk, dv).
static bool cml_pt_emit_as_is(cml_function_t* f, const cml_ir_node_t* n, const cml_value_t* in,
                              cml_value_t* out) {
  uint32_t idx[16];
  cml_shape_t shapes[16];
  if (n->input_count > 16 || n->output_count > n->input_count || !cml__op_begin(f, n->op)) {
    return false;
  }
  for (uint32_t i = 0; i < n->input_count; ++i) {
    if (!cml__op_input(f, n->op, in[i], i, &idx[i], &shapes[i])) return false;
  }
  cml_value_t first =
      cml__op_add_node(f, n->op, idx, n->input_count, shapes, n->output_count, n->attrs);
  if (first == CML_VALUE_INVALID) return false;
  for (uint32_t k = 0; k < n->output_count; ++k) out[k] = first + (cml_value_t)k;
  return true;
}

static bool cml_pt_emit_in(cml_partitioner_t* p, cml_function_t* f, const cml_ir_node_t* n,
                           const cml_value_t* in, cml_value_t* out) {
  const cml_ir_attrs_t* a = n->attrs;
  const cml_shape_t* os = &p->m->values[n->first_output].shape;
  cml_value_t r = CML_VALUE_INVALID;
  bool multi = false;
  switch (cml_op_kind(n->op)) {
    case CML_OPK_UNARY:
      r = cml_op_unary(f, n->op, in[0]);
      break;
    case CML_OPK_BINARY:
    case CML_OPK_COMPARE:
      r = cml_op_binary(f, n->op, in[0], in[1]);
      break;
    case CML_OPK_REDUCE:
      r = cml_op_reduce(f, n->op, in[0], a->axes, (size_t)a->axis_count);
      break;
    case CML_OPK_CONSTANT:
      r = cml_constant(f, os, n->data);
      break;
    default:
      switch (n->op) {
        case CML_OP_CONVERT_DTYPE:
          r = cml_op_convert_dtype(f, in[0], a->dtype);
          break;
        case CML_OP_BITCAST:
          r = cml_op_bitcast(f, in[0], a->dtype);
          break;
        case CML_OP_CLAMP:
          r = cml_op_clamp(f, in[0], in[1], in[2]);
          break;
        case CML_OP_WHERE:
          r = cml_op_where(f, in[0], in[1], in[2]);
          break;
        case CML_OP_RESHAPE:
          r = cml_op_reshape(f, in[0], os->dims, os->rank);
          break;
        case CML_OP_TRANSPOSE:
          r = cml_op_transpose(f, in[0], a->axes, a->axis_count);
          break;
        case CML_OP_BROADCAST_IN_DIM:
          r = cml_op_broadcast_in_dim(f, in[0], os->dims, os->rank, a->axes, a->axis_count);
          break;
        case CML_OP_CONCATENATE:
          r = cml_op_concatenate(f, a->axis, in, n->input_count);
          break;
        case CML_OP_SLICE:
          r = cml_op_slice(f, in[0], a->starts, a->limits, a->strides, os->rank);
          break;
        case CML_OP_REVERSE:
          r = cml_op_reverse(f, in[0], a->axes, (size_t)a->axis_count);
          break;
        case CML_OP_IOTA:
          r = cml_op_iota(f, os, a->axis);
          break;
        case CML_OP_PAD:
          r = cml_op_pad(f, in[0], in[1], a->pads, (size_t)p->m->values[n->inputs[0]].shape.rank);
          break;
        case CML_OP_DYNAMIC_SLICE:
          r = cml_op_dynamic_slice(f, in[0], in + 1, a->axes, a->axis_count);
          break;
        case CML_OP_DYNAMIC_UPDATE_SLICE:
          r = cml_op_dynamic_update_slice(f, in[0], in[1], in + 2, (int32_t)(n->input_count - 2));
          break;
        case CML_OP_GATHER:
          r = cml_op_gather(f, in[0], in[1], &a->u.gather);
          break;
        case CML_OP_SCATTER_SUM:
        case CML_OP_SCATTER_MAX:
        case CML_OP_SCATTER_MIN:
          r = cml_op_scatter(f, n->op, in[0], in[1], in[2], &a->u.scatter);
          break;
        case CML_OP_CONV_GENERAL:
          r = cml_op_conv_general(f, in[0], in[1], &a->u.conv);
          break;
        case CML_OP_REDUCE_WINDOW:
          r = cml_op_reduce_window(f, in[0], a->reduce_type, &a->u.window);
          break;
        case CML_OP_SELECT_AND_SCATTER_MAX:
        case CML_OP_SELECT_AND_SCATTER_MIN:
        case CML_OP_SELECT_AND_SCATTER_SUM:
          r = cml_op_select_and_scatter(f, n->op, in[0], in[1], &a->u.window);
          break;
        case CML_OP_DOT:
        case CML_OP_DOT_GENERAL:
          r = cml_op_dot_general(f, in[0], in[1], &a->u.dot);
          break;
        case CML_OP_ARG_MIN_MAX:
          r = cml_op_arg_min_max(f, in[0], a->axis, a->dtype, a->flag);
          break;
        case CML_OP_FFT:
          r = cml_op_fft(f, in[0], a->fft_type, a->axes, (size_t)a->axis_count);
          break;
        case CML_OP_BATCH_NORM_INFERENCE:
          r = cml_op_batch_norm_inference(f, in[0], in[1], in[2], in[3], in[4], a->epsilon,
                                          a->axis);
          break;
        case CML_OP_BATCH_NORM_TRAINING:
          multi = cml_op_batch_norm_training(f, in[0], in[1], in[2], a->epsilon, a->axis, out);
          break;
        case CML_OP_BATCH_NORM_GRADIENT:
          multi = cml_op_batch_norm_gradient(f, in[0], in[1], in[2], in[3], in[4], a->epsilon,
                                             a->axis, out);
          break;
        case CML_OP_RNG_BIT_GENERATOR:
          multi = cml_op_rng_bit_generator(f, in[0], &p->m->values[n->first_output + 1].shape,
                                           &out[0], &out[1]);
          break;
        case CML_OP_OPTIMIZATION_BARRIER:
          multi = cml_op_optimization_barrier(f, in, n->input_count, out);
          break;
        case CML_OP_SCHEDULING_BARRIER:
          r = cml_op_scheduling_barrier(f, in[0], in + 1, n->input_count - 1);
          break;
        case CML_OP_CALL: {
          cml_function_t* callee = cml_pt_callee(p, f, a->functions[0]);
          multi = callee && cml_op_call(f, callee, in, n->input_count, out);
          break;
        }
        case CML_OP_WHILE: {
          cml_function_t* cond = cml_pt_callee(p, f, a->functions[0]);
          cml_function_t* body = cond ? cml_pt_callee(p, f, a->functions[1]) : NULL;
          multi = body && cml_op_while(f, cond, body, in, n->input_count, out);
          break;
        }
        case CML_OP_IF: {
          cml_function_t* yes = cml_pt_callee(p, f, a->functions[0]);
          cml_function_t* no = yes ? cml_pt_callee(p, f, a->functions[1]) : NULL;
          multi = no && cml_op_if(f, in[0], yes, no, out);
          break;
        }
        case CML_OP_SORT: {
          cml_function_t* cmp = cml_pt_callee(p, f, a->functions[0]);
          multi = cmp && cml_op_sort(f, cmp, a->axis, a->flag, in, n->input_count, out);
          break;
        }
        case CML_OP_FUSED_SOFTMAX:
          r = cml_op_fused_softmax(f, in[0], a->axis);
          break;
        case CML_OP_FUSED_GELU:
          r = cml_op_fused_gelu(f, in[0], a->fused.exact);
          break;
        case CML_OP_FUSED_DENSE: {
          cml_dense_config_t dc;
          cml_dense_config_init(&dc);
          dc.activation = (cml_activation_t)a->fused.activation;
          dc.weight_layout = (cml_dense_layout_t)a->fused.layout;
          cml_value_t bias = (a->fused.optional_inputs & 1u) ? in[2] : CML_VALUE_INVALID;
          r = cml_op_fused_dense(f, in[0], in[1], bias, &dc);
          break;
        }
        case CML_OP_FUSED_LAYER_NORM: {
          uint32_t k = 1;
          cml_value_t gamma = (a->fused.optional_inputs & 1u) ? in[k++] : CML_VALUE_INVALID;
          cml_value_t beta = (a->fused.optional_inputs & 2u) ? in[k++] : CML_VALUE_INVALID;
          r = cml_op_fused_layer_norm(f, in[0], a->axes, (size_t)a->axis_count, a->fused.epsilon,
                                      gamma, beta);
          break;
        }
        case CML_OP_FUSED_SDPA: {
          cml_sdpa_config_t sc;
          cml_sdpa_config_init(&sc);
          sc.scale = a->fused.scale;
          sc.causal = a->fused.causal;
          uint32_t k = 3;
          if (a->fused.optional_inputs & 1u) sc.mask = in[k++];
          if (a->fused.optional_inputs & 2u) sc.bias = in[k++];
          if (a->fused.optional_inputs & 4u) {
            sc.query_seq_len = in[k++];
            sc.kv_seq_len = in[k++];
          }
          cml_value_t states[CML_SDPA_MAX_STATES] = {CML_VALUE_INVALID};
          size_t state_count = 0;
          out[0] =
              cml_op_fused_sdpa(f, in[0], in[1], in[2], (cml_attention_layout_t)a->fused.layout,
                                &sc, states, &state_count);
          if (out[0] != CML_VALUE_INVALID && state_count != 1) {
            return cml_pt_unimplemented(p, n, "the backend did not emit the fused node again");
          }
          out[1] = states[0];
          multi = out[0] != CML_VALUE_INVALID;
          break;
        }
        case CML_OP_FUSED_SDPA_VJP:
          multi = cml_pt_emit_as_is(f, n, in, out);
          break;
        case CML_OP_FUSED_ATTENTION_QKV_PROJECTION: {
          cml_value_t bias[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
          uint32_t k = 2;
          for (int i = 0; i < 3; ++i) {
            if (a->fused.optional_inputs & (1u << i)) bias[i] = in[k++];
          }
          multi = cml_op_fused_attention_qkv_projection(f, in[0], in[1], bias[0], bias[1], bias[2],
                                                        a->fused.query_dim, a->fused.kv_dim, out);
          break;
        }
        case CML_OP_FUSED_QUANTIZED_DENSE:
        case CML_OP_QUANTIZED_EMBEDDING_LOOKUP: {
          cml_quantization_t q;
          cml_quantization_init(&q);
          q.scheme = (cml_quant_scheme_t)a->fused.quant_scheme;
          q.ggml_type = (cml_ggml_type_t)a->fused.quant_ggml_type;
          q.block_size = a->fused.quant_block_size;
          if (n->op == CML_OP_QUANTIZED_EMBEDDING_LOOKUP) {
            r = cml_op_quantized_embedding_lookup(f, in[0], in[1], &q);
            break;
          }
          uint32_t k = 2;
          if (a->fused.optional_inputs & 1u) q.scale = in[k++];
          if (a->fused.optional_inputs & 2u) q.zero_point = in[k++];
          cml_value_t bias = (a->fused.optional_inputs & 4u) ? in[k++] : CML_VALUE_INVALID;
          r = cml_op_fused_quantized_dense(f, in[0], in[1], bias, &q,
                                           (cml_activation_t)a->fused.activation);
          break;
        }
        default:
          return cml_pt_unimplemented(p, n, "the partitioner cannot re-emit this op");
      }
  }
  if (n->output_count > 1 || cml_op_kind(n->op) == CML_OPK_CONTROL) {
    if (!multi) return cml_pt_ok(p, CML_VALUE_INVALID);
    for (uint32_t k = 0; k < n->output_count; ++k) {
      if (!cml_pt_ok(p, out[k])) return false;
    }
    return true;
  }
  out[0] = r;
  return cml_pt_ok(p, r);
}

static bool cml_pt_emit(cml_partitioner_t* p, const cml_ir_node_t* n, const cml_value_t* in,
                        cml_value_t* out) {
  return cml_pt_emit_in(p, p->f, n, in, out);
}

// Re-emits global function |g| (a callee of a control op) into the new module, whole: a named
// function, or a closure of |parent|. Values of main it captures are used whole (gathered in
// main first). Made once per function.
static cml_function_t* cml_pt_callee(cml_partitioner_t* p, cml_function_t* parent, uint32_t g) {
  if (p->status != CML_OK || g >= p->m->function_count) return NULL;
  if (p->functions[g]) return p->functions[g];
  const cml_ir_function_t* gf = &p->m->functions[g];
  cml_function_t* nf = NULL;
  cml_status_t st = gf->parent < 0 ? cml_builder_new_function(p->b, gf->name, &nf)
                                   : cml_function_new_closure(parent, &nf);
  if (st != CML_OK) {
    cml_pt_fail(p, cml_status_code(st), "function \"%s\": %s", gf->name, cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  for (uint32_t i = 0; i < gf->capture_count; ++i) {
    uint32_t outer = gf->captures_outer[i];
    cml_value_t x = gf->parent == 0 ? cml_pt_replicated(p, outer) : p->local[outer];
    if (x == CML_VALUE_INVALID) return NULL;
    p->local[gf->captures_inner[i]] = x;
  }
  for (uint32_t i = 0; i < gf->param_count; ++i) {
    uint32_t v = gf->params[i];
    const cml_ir_node_t* pn = &p->m->nodes[p->m->values[v].node];
    p->local[v] = cml_parameter(nf, pn->name, &p->m->values[v].shape);
    if (!cml_pt_ok(p, p->local[v])) return NULL;
  }
  size_t most = gf->output_count;
  for (uint32_t i = 0; i < gf->node_count; ++i) {
    const cml_ir_node_t* n = &p->m->nodes[gf->nodes[i]];
    const size_t count = (size_t)n->input_count + n->output_count;
    if (count > most) most = count;
  }
  cml_value_t* in = (cml_value_t*)cml_pt_calloc(p, most, sizeof *in);
  if (!in) {
    cml_pt_fail(p, CML_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  bool ok = true;
  for (uint32_t i = 0; ok && i < gf->node_count; ++i) {
    const cml_ir_node_t* n = &p->m->nodes[gf->nodes[i]];
    if (n->op == CML_OP_PARAMETER || n->op == CML_OP_CAPTURED_VALUE) continue;
    cml_value_t* out = in + n->input_count;
    for (uint32_t k = 0; k < n->input_count; ++k) in[k] = p->local[n->inputs[k]];
    ok = cml_pt_emit_in(p, nf, n, in, out);
    for (uint32_t k = 0; ok && k < n->output_count; ++k) p->local[n->first_output + k] = out[k];
  }
  for (uint32_t k = 0; ok && k < gf->output_count; ++k) in[k] = p->local[gf->outputs[k]];
  st = ok ? cml_function_return(nf, in, gf->output_count) : CML_OK;
  cml_pt_dealloc(p, in, most, sizeof *in);
  if (!ok) return NULL;
  if (st != CML_OK) {
    cml_pt_fail(p, cml_status_code(st), "function \"%s\": %s", gf->name, cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  p->functions[g] = nf;
  return nf;
}

// Records the per-device result |x| of global value |v| with state |s|.
static void cml_pt_set(cml_partitioner_t* p, uint32_t v, cml_value_t x, const cml_pshard_t* s) {
  p->local[v] = x;
  p->st[v] = *s;
}

// The fallback, always correct: every operand whole, the op computed replicated.
static bool cml_pt_replicate(cml_partitioner_t* p, const cml_ir_node_t* n) {
  const size_t count = (size_t)n->input_count + n->output_count;
  cml_value_t* in = (cml_value_t*)cml_pt_calloc(p, count, sizeof *in);
  if (!in) return cml_pt_fail(p, CML_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  cml_value_t* out = in + n->input_count;
  bool ok = true;
  for (uint32_t i = 0; ok && i < n->input_count; ++i) {
    in[i] = cml_pt_replicated(p, n->inputs[i]);
    ok = in[i] != CML_VALUE_INVALID;
  }
  ok = ok && cml_pt_emit(p, n, in, out);
  cml_pshard_t r;
  memset(&r, 0, sizeof r);
  for (uint32_t k = 0; ok && k < n->output_count; ++k) {
    cml_pt_set(p, n->first_output + k, out[k], &r);
    p->rep[n->first_output + k] = out[k];
  }
  cml_pt_dealloc(p, in, count, sizeof *in);
  return ok;
}

//===--- rules ---===//

// Whether node |n| (elementwise) is linear in its operands that are partial sums (|partial|), so
// that its result stays a partial sum of the same axes and no AllReduce is needed before it.
// Integer products distribute over (wrapping) sums; integer quotients truncate each term and
// never do. Float products and quotients do not either, whatever the factor: the sum of the
// scaled terms can stay finite where the sum itself overflows (4 x 1e38 sums to inf, and
// inf * 0.25 is inf, but four terms of 2.5e37 sum to 1e38), a factor that may be infinite gives
// 0 * inf = NaN on the devices whose term is 0, and a divisor that may be 0 gives 0 / 0. A
// float negation (Neg, Conj's imaginary part) does not either: a sum whose terms cancel is +0
// (1 + -1 = +0), so -s is -0 while the terms' negations sum to +0 again, and 1 / -s would be
// +inf instead of -inf. Those ops sum first: the same AllReduce, moved before the op.
static bool cml_pt_linear(const cml_partitioner_t* p, const cml_ir_node_t* n, const bool* partial) {
  uint32_t count = n->input_count, np = 0;
  for (uint32_t i = 0; i < count; ++i) np += partial[i];
  cml_dtype_t dtype = p->m->values[n->first_output].shape.dtype;
  switch (n->op) {
    case CML_OP_NEG:
      return count == 1 && cml_dtype_is_int(dtype);
    case CML_OP_CONJ:
      return false;  // complex only: a float negation
    case CML_OP_IDENTITY:
    case CML_OP_REAL:
    case CML_OP_IMAG:
      return count == 1;
    case CML_OP_ADD:
    case CML_OP_SUB:
      return np == count;
    case CML_OP_MUL:
      return count == 2 && np == 1 && cml_dtype_is_int(dtype);
    default:
      return false;
  }
}

// Elementwise ops (unary, binary, compare, convert, clamp, where, fused gelu): the result takes
// the sharding of its most split full-rank operand, plus the splits other operands have on
// dimensions it leaves whole (when their axes are free); the operands are resharded to it
// (scalars and size-1 broadcast dimensions stay whole). Partial sums flow through linear ops.
static bool cml_pt_elementwise(cml_partitioner_t* p, const cml_ir_node_t* n) {
  const cml_shape_t* os = &p->m->values[n->first_output].shape;
  int rank = os->rank;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  int64_t best = 1;
  bool partial[8] = {false};
  uint32_t pmask = 0;
  bool same_partial = true;
  if (n->input_count > 8) return cml_pt_replicate(p, n);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    uint32_t v = n->inputs[i];
    const cml_shape_t* s = &p->m->values[v].shape;
    partial[i] = p->st[v].partial != 0;
    if (partial[i]) {
      if (pmask && pmask != p->st[v].partial) same_partial = false;
      pmask |= p->st[v].partial;
    }
    if (s->rank != rank) continue;
    int64_t k = 1;
    for (int d = 0; d < rank; ++d) k *= cml_pt_shards(p, &p->st[v], d);
    if (k > best) {
      best = k;
      for (int d = 0; d < rank; ++d) cml_pshard_copy_dim(&res, d, &p->st[v], d);
    }
  }
  // Dimensions the chosen operand leaves whole take another operand's split when its axes are
  // still free ([{data}, {}] + [{}, {model}] -> [{data}, {model}]: local slices only).
  for (uint32_t i = 0; i < n->input_count; ++i) {
    uint32_t v = n->inputs[i];
    const cml_shape_t* s = &p->m->values[v].shape;
    if (s->rank != rank) continue;
    for (int d = 0; d < rank; ++d) {
      if (res.count[d] != 0 || p->st[v].count[d] == 0 || s->dims[d] != os->dims[d]) continue;
      uint32_t axes = 0;
      for (int k = 0; k < p->st[v].count[d]; ++k) axes |= 1u << p->st[v].axes[d][k];
      if ((axes & cml_pshard_dim_mask(&res, rank)) == 0) cml_pshard_copy_dim(&res, d, &p->st[v], d);
    }
  }
  bool linear = same_partial && pmask && cml_pt_linear(p, n, partial) &&
                (cml_pshard_dim_mask(&res, rank) & pmask) == 0;
  res.partial = linear ? pmask : 0;
  cml_value_t in[8], out[1];
  for (uint32_t i = 0; i < n->input_count; ++i) {
    uint32_t v = n->inputs[i];
    const cml_shape_t* s = &p->m->values[v].shape;
    cml_pshard_t to;
    memset(&to, 0, sizeof to);
    if (s->rank == rank) {
      for (int d = 0; d < rank; ++d) {
        if (s->dims[d] == os->dims[d]) cml_pshard_copy_dim(&to, d, &res, d);
      }
    }
    to.partial = (linear && partial[i]) ? pmask : 0;
    in[i] = cml_pt_reshard(p, v, &to);
    if (in[i] == CML_VALUE_INVALID) return false;
  }
  if (!cml_pt_emit(p, n, in, out)) return false;
  cml_pt_set(p, n->first_output, out[0], &res);
  return true;
}

// Reductions: split reduced dimensions make a partial sum (ReduceSum), an AllReduce of the
// local results (max, min, product), or are gathered first (logical and bitwise reductions).
static bool cml_pt_reduce(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t v = n->inputs[0];
  int rank = cml_pt_rank(p, v);
  const cml_ir_attrs_t* a = n->attrs;
  bool reduced[CML_MAX_RANK] = {false};
  for (int i = 0; i < a->axis_count; ++i) reduced[a->axes[i]] = true;
  cml_pshard_t to = p->st[v];
  cml_reduce_type_t type = CML_REDUCE_UNDEFINED;
  switch (n->op) {
    case CML_OP_REDUCE_SUM:
      type = CML_REDUCE_SUM;
      break;
    case CML_OP_REDUCE_MAX:
      type = CML_REDUCE_MAX;
      break;
    case CML_OP_REDUCE_MIN:
      type = CML_REDUCE_MIN;
      break;
    case CML_OP_REDUCE_PRODUCT:
      type = CML_REDUCE_PRODUCT;
      break;
    default:
      break;
  }
  if (type != CML_REDUCE_SUM) to.partial = 0;
  uint32_t mask = 0;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) continue;
    if (type == CML_REDUCE_UNDEFINED) {
      cml_pshard_clear_dim(&to, d);
      continue;
    }
    for (int k = 0; k < to.count[d]; ++k) mask |= 1u << to.axes[d][k];
  }
  cml_value_t x = cml_pt_reshard(p, v, &to);
  if (x == CML_VALUE_INVALID) return false;
  // Float16/BFloat16 sums and products over split dimensions: each device's part in Float32,
  // combined in Float32 and rounded once, as one device computes it (rounded per device, four
  // shards of 256 * 256 * 2^-8 * 2^-8 overflowed to inf where one device gives 1). The pending
  // partial sums of the operand are folded in the same AllReduce.
  const cml_dtype_t dtype = p->m->values[v].shape.dtype;
  const bool widen = mask && (type == CML_REDUCE_SUM || type == CML_REDUCE_PRODUCT) &&
                     (dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16);
  if (widen) {
    x = cml_op_convert_dtype(p->f, x, CML_DTYPE_F32);
    if (!cml_pt_ok(p, x)) return false;
  }
  cml_value_t out;
  if (!cml_pt_emit(p, n, &x, &out)) return false;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  int od = 0;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) cml_pshard_copy_dim(&res, od++, &to, d);
  }
  res.partial = to.partial;
  if (widen) {
    out = cml_pt_all_reduce(p, out, mask | to.partial, type);
    if (out == CML_VALUE_INVALID) return false;
    out = cml_op_convert_dtype(p->f, out, dtype);
    if (!cml_pt_ok(p, out)) return false;
    res.partial = 0;
  } else if (type == CML_REDUCE_SUM) {
    res.partial |= mask;
  } else if (mask) {
    out = cml_pt_all_reduce(p, out, mask, type);
    if (out == CML_VALUE_INVALID) return false;
  }
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// Transpose: the dimensions' splits move with them.
static bool cml_pt_transpose(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t v = n->inputs[0];
  cml_value_t out;
  if (!cml_pt_emit(p, n, &p->local[v], &out)) return false;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  for (int i = 0; i < n->attrs->axis_count; ++i) {
    cml_pshard_copy_dim(&res, i, &p->st[v], (int)n->attrs->axes[i]);
  }
  res.partial = p->st[v].partial;
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// BroadcastInDim: operand dimensions keep their splits; new dimensions are whole.
static bool cml_pt_broadcast(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t v = n->inputs[0];
  const cml_shape_t* os = &p->m->values[n->first_output].shape;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  for (int i = 0; i < n->attrs->axis_count; ++i) {
    cml_pshard_copy_dim(&res, (int)n->attrs->axes[i], &p->st[v], i);
  }
  res.partial = p->st[v].partial;
  cml_shape_t local;
  if (!cml_pt_local_shape(p, os, &res, &local)) return cml_pt_replicate(p, n);
  cml_value_t out = cml_op_broadcast_in_dim(p->f, p->local[v], local.dims, local.rank,
                                            n->attrs->axes, n->attrs->axis_count);
  if (!cml_pt_ok(p, out)) return false;
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// Reshape: a split dimension survives when it is the major dimension of a group of operand
// dimensions that maps onto a group of result dimensions with the same element count, the only
// split one in its group, and the major result dimension of the group divides by its shard count;
// otherwise the operand is gathered first.
static bool cml_pt_reshape(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t v = n->inputs[0];
  const cml_shape_t* is = &p->m->values[v].shape;
  const cml_shape_t* os = &p->m->values[n->first_output].shape;
  const cml_pshard_t* s = &p->st[v];
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  res.partial = s->partial;
  bool ok = true;
  int i = 0, j = 0;
  while (ok && (i < is->rank || j < os->rank)) {
    int i0 = i, j0 = j;
    int64_t pi = i < is->rank ? is->dims[i++] : 1;
    int64_t pj = j < os->rank ? os->dims[j++] : 1;
    while (pi != pj) {
      if (pi < pj && i < is->rank) {
        pi *= is->dims[i++];
      } else if (pj < pi && j < os->rank) {
        pj *= os->dims[j++];
      } else {
        break;
      }
    }
    if (pi != pj) {
      ok = false;
      break;
    }
    // Operand dimensions [i0, i) map onto result dimensions [j0, j).
    for (int d = i0; d < i; ++d) {
      if (s->count[d] == 0) continue;
      if (d != i0 || j0 >= os->rank || os->dims[j0] % cml_pt_shards(p, s, d) != 0) ok = false;
      if (ok) cml_pshard_copy_dim(&res, j0, s, d);
    }
  }
  cml_value_t x = p->local[v];
  if (!ok) {
    cml_pshard_t to;
    memset(&to, 0, sizeof to);
    to.partial = s->partial;
    x = cml_pt_reshard(p, v, &to);
    if (x == CML_VALUE_INVALID) return false;
    memset(&res, 0, sizeof res);
    res.partial = s->partial;
  }
  cml_shape_t local;
  if (!cml_pt_local_shape(p, os, &res, &local)) {
    return cml_pt_fail(p, CML_STATUS_INTERNAL, "Reshape: indivisible result");
  }
  int64_t dims[CML_MAX_RANK + 1] = {0};
  memcpy(dims, local.dims, sizeof local.dims);
  cml_value_t out = cml_op_reshape(p->f, x, dims, local.rank);
  if (!cml_pt_ok(p, out)) return false;
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// Ops that need some dimensions whole and keep the others' splits: Slice (sliced dimensions),
// Pad (padded ones), Reverse, Concatenate (the axis), ArgMinMax (the axis, removed), FusedSoftmax
// (the axis). Partial sums pass through Slice, Reverse and Concatenate.
static bool cml_pt_keep_other_dims(cml_partitioner_t* p, const cml_ir_node_t* n, const bool* whole,
                                   bool linear, bool drop_axis) {
  uint32_t v0 = n->inputs[0];
  int rank = cml_pt_rank(p, v0);
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  int64_t best = 0;
  // Pad's fill and LayerNorm's gamma and beta stay whole.
  bool first_only = n->op == CML_OP_PAD || n->op == CML_OP_FUSED_LAYER_NORM;
  uint32_t array_count = first_only ? 1 : n->input_count;
  for (uint32_t i = 0; i < array_count; ++i) {
    const cml_pshard_t* s = &p->st[n->inputs[i]];
    int64_t k = 1;
    for (int d = 0; d < rank; ++d) k *= whole[d] ? 1 : cml_pt_shards(p, s, d);
    if (k > best) {
      best = k;
      for (int d = 0; d < rank; ++d) {
        if (whole[d]) {
          cml_pshard_clear_dim(&res, d);
        } else {
          cml_pshard_copy_dim(&res, d, s, d);
        }
      }
    }
  }
  uint32_t pmask = p->st[v0].partial;
  bool keep_partial = linear && pmask != 0;
  for (uint32_t i = 0; i < array_count; ++i) {
    keep_partial = keep_partial && p->st[n->inputs[i]].partial == pmask;
  }
  res.partial = keep_partial ? pmask : 0;
  // Every dimension of a concatenated operand with a different size is the axis (whole).
  cml_value_t in[64];
  if (n->input_count > 64) return cml_pt_replicate(p, n);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    cml_pshard_t to;
    memset(&to, 0, sizeof to);
    if (i < array_count) to = res;
    in[i] = cml_pt_reshard(p, n->inputs[i], &to);
    if (in[i] == CML_VALUE_INVALID) return false;
  }
  cml_value_t out;
  const cml_ir_attrs_t* a = n->attrs;
  if (n->op == CML_OP_SLICE) {
    cml_shape_t local;
    if (!cml_pt_local_shape(p, &p->m->values[v0].shape, &res, &local)) return false;
    int64_t starts[CML_MAX_RANK], limits[CML_MAX_RANK];
    for (int d = 0; d < rank; ++d) {
      starts[d] = whole[d] ? a->starts[d] : 0;
      limits[d] = whole[d] ? a->limits[d] : local.dims[d];
    }
    out = cml_op_slice(p->f, in[0], starts, limits, a->strides, rank);
    if (!cml_pt_ok(p, out)) return false;
  } else if (!cml_pt_emit(p, n, in, &out)) {
    return false;
  }
  if (drop_axis) {
    cml_pshard_t r2;
    memset(&r2, 0, sizeof r2);
    int od = 0;
    for (int d = 0; d < rank; ++d) {
      if (d != (int)a->axis) cml_pshard_copy_dim(&r2, od++, &res, d);
    }
    r2.partial = res.partial;
    res = r2;
  }
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

static bool cml_pt_slice_like(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t v0 = n->inputs[0];
  const cml_shape_t* is = &p->m->values[v0].shape;
  const cml_ir_attrs_t* a = n->attrs;
  bool whole[CML_MAX_RANK] = {false};
  bool linear = false, drop = false;
  switch (n->op) {
    case CML_OP_SLICE:
      for (int d = 0; d < is->rank; ++d) {
        whole[d] = a->starts[d] != 0 || a->limits[d] != is->dims[d] || a->strides[d] != 1;
      }
      linear = true;
      break;
    case CML_OP_PAD:
      for (int d = 0; d < is->rank; ++d) {
        whole[d] = a->pads[d].low != 0 || a->pads[d].high != 0 || a->pads[d].interior != 0;
      }
      break;
    case CML_OP_REVERSE:
      for (int i = 0; i < a->axis_count; ++i) whole[a->axes[i]] = true;
      linear = true;
      break;
    case CML_OP_CONCATENATE:
      whole[a->axis] = true;
      linear = true;
      break;
    case CML_OP_ARG_MIN_MAX:
      whole[a->axis] = true;
      drop = true;
      break;
    case CML_OP_FUSED_SOFTMAX:
      whole[a->axis] = true;
      break;
    case CML_OP_FUSED_LAYER_NORM:
      for (int i = 0; i < a->axis_count; ++i) whole[a->axes[i]] = true;
      break;
    default:
      return cml_pt_replicate(p, n);
  }
  return cml_pt_keep_other_dims(p, n, whole, linear, drop);
}

// DotGeneral (and Dot): batch and contracting dimensions must be split alike on both sides (the
// other side is resharded to the lhs's split, or the lhs to the rhs's when the lhs is whole);
// free dimensions keep their splits; split contracting dimensions make a partial sum. When that
// is not a valid sharding, the rhs follows the lhs with whole free dimensions; when even that
// fails, both are computed whole.
static bool cml_pt_dot(cml_partitioner_t* p, const cml_ir_node_t* n) {
  const cml_dot_config_t* c = &n->attrs->u.dot;
  uint32_t lv = n->inputs[0], rv = n->inputs[1];
  const cml_shape_t* ls = &p->m->values[lv].shape;
  const cml_shape_t* rs = &p->m->values[rv].shape;
  const cml_shape_t* os = &p->m->values[n->first_output].shape;
  int lkind[CML_MAX_RANK] = {0}, rkind[CML_MAX_RANK] = {0};  // 0 free, 1 batch, 2 contracting
  for (int i = 0; i < c->lhs_batch_count; ++i) lkind[c->lhs_batch_axes[i]] = 1;
  for (int i = 0; i < c->rhs_batch_count; ++i) rkind[c->rhs_batch_axes[i]] = 1;
  for (int i = 0; i < c->lhs_contracting_count; ++i) lkind[c->lhs_contracting_axes[i]] = 2;
  for (int i = 0; i < c->rhs_contracting_count; ++i) rkind[c->rhs_contracting_axes[i]] = 2;
  cml_pshard_t lt = p->st[lv], rt = p->st[rv], res;
  lt.partial = rt.partial = 0;
  bool valid = false;
  for (int plan = 0; plan < 3 && !valid; ++plan) {
    if (plan == 0) {
      for (int i = 0; i < c->lhs_batch_count + c->lhs_contracting_count; ++i) {
        bool batch = i < c->lhs_batch_count;
        int ld =
            (int)(batch ? c->lhs_batch_axes[i] : c->lhs_contracting_axes[i - c->lhs_batch_count]);
        int rd =
            (int)(batch ? c->rhs_batch_axes[i] : c->rhs_contracting_axes[i - c->lhs_batch_count]);
        if (cml_pshard_dim_equal(&lt, ld, &rt, rd)) continue;
        if (lt.count[ld] > 0) {
          cml_pshard_copy_dim(&rt, rd, &lt, ld);
        } else {
          cml_pshard_copy_dim(&lt, ld, &rt, rd);
        }
      }
    } else if (plan == 1) {
      lt = p->st[lv];
      lt.partial = 0;
      memset(&rt, 0, sizeof rt);
      for (int i = 0; i < c->lhs_batch_count; ++i) {
        cml_pshard_copy_dim(&rt, (int)c->rhs_batch_axes[i], &lt, (int)c->lhs_batch_axes[i]);
      }
      for (int i = 0; i < c->lhs_contracting_count; ++i) {
        cml_pshard_copy_dim(&rt, (int)c->rhs_contracting_axes[i], &lt,
                            (int)c->lhs_contracting_axes[i]);
      }
    } else {
      memset(&lt, 0, sizeof lt);
      memset(&rt, 0, sizeof rt);
    }
    memset(&res, 0, sizeof res);
    int od = 0;
    for (int i = 0; i < c->lhs_batch_count; ++i) {
      cml_pshard_copy_dim(&res, od++, &lt, (int)c->lhs_batch_axes[i]);
    }
    for (int d = 0; d < ls->rank; ++d) {
      if (lkind[d] == 0) cml_pshard_copy_dim(&res, od++, &lt, d);
    }
    for (int d = 0; d < rs->rank; ++d) {
      if (rkind[d] == 0) cml_pshard_copy_dim(&res, od++, &rt, d);
    }
    for (int i = 0; i < c->lhs_contracting_count; ++i) {
      int d = (int)c->lhs_contracting_axes[i];
      for (int k = 0; k < lt.count[d]; ++k) res.partial |= 1u << lt.axes[d][k];
    }
    // The partial axes are also checked against the result's dimensions by cml_pt_valid.
    valid = cml_pt_valid(p, ls, &lt) && cml_pt_valid(p, rs, &rt) && cml_pt_valid(p, os, &res);
  }
  cml_value_t in[2];
  in[0] = cml_pt_reshard(p, lv, &lt);
  if (in[0] == CML_VALUE_INVALID) return false;
  in[1] = cml_pt_reshard(p, rv, &rt);
  if (in[1] == CML_VALUE_INVALID) return false;
  cml_value_t out;
  const cml_dtype_t dtype = p->m->values[n->first_output].shape.dtype;
  if (res.partial && (dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16)) {
    // Float16/BFloat16 products contracting split dimensions: each device's part stays Float32
    // through the AllReduce and is rounded once, as one device rounds its Float32 sum (each
    // part rounded to the dtype and summed in it rounded twice).
    cml_dot_config_t wide = n->attrs->u.dot;
    wide.output_dtype = CML_DTYPE_F32;
    out = cml_op_dot_general(p->f, in[0], in[1], &wide);
    if (!cml_pt_ok(p, out)) return false;
    out = cml_pt_all_reduce(p, out, res.partial, CML_REDUCE_SUM);
    if (out == CML_VALUE_INVALID) return false;
    out = cml_op_convert_dtype(p->f, out, dtype);
    if (!cml_pt_ok(p, out)) return false;
    res.partial = 0;
  } else if (!cml_pt_emit(p, n, in, &out)) {
    return false;
  }
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// Ops that compute each row of one operand (|split|) on its own from whole other operands:
// that operand keeps the splits of every dimension but its last one (made whole), the others
// are whole, and every result's leading dimensions follow it (each device computes its own
// rows). FusedDense, FusedQuantizedDense and FusedAttentionQKVProjection (x, operand 0: its
// batch dimensions; the weights, scales, zero points and biases whole), and
// QuantizedEmbeddingLookup (the indices, operand 1, as Gather from a whole table: their last
// dimension, of size 1, made whole).
static bool cml_pt_row_wise(cml_partitioner_t* p, const cml_ir_node_t* n, uint32_t split) {
  cml_value_t in[8], out[3];
  if (n->input_count > 8 || n->output_count > 3 || split >= n->input_count) {
    return cml_pt_replicate(p, n);
  }
  const uint32_t xv = n->inputs[split];
  const int xr = cml_pt_rank(p, xv);
  cml_pshard_t to = p->st[xv];
  to.partial = 0;
  if (xr > 0) cml_pshard_clear_dim(&to, xr - 1);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    in[i] = i == split ? cml_pt_reshard(p, xv, &to) : cml_pt_replicated(p, n->inputs[i]);
    if (in[i] == CML_VALUE_INVALID) return false;
  }
  if (!cml_pt_emit(p, n, in, out)) return false;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  for (int d = 0; d + 1 < xr; ++d) cml_pshard_copy_dim(&res, d, &to, d);
  for (uint32_t k = 0; k < n->output_count; ++k) cml_pt_set(p, n->first_output + k, out[k], &res);
  return true;
}

// FusedScaledDotProductAttention and its VJP: every (batch, head) pair is independent, so the
// batch and head dimensions of q keep their splits (its sequence and head dims are made whole);
// k and v take the same splits (kv heads included: a shard of consecutive query heads reads
// the matching shard of kv heads, grouped-query attention too), or lose the head split when
// the kv heads do not divide. Masks and biases (broadcast to the scores [batch, heads, seq,
// kv_seq]) are split alike where they have the full batch or head dimension, the lengths
// ([batch]) on the batch; the logsumexp state [batch, heads, seq] and the VJP's out and dout
// follow. No result is a partial sum: dk and dv sum over a group of query heads that a device
// holds whole.
static bool cml_pt_attention(cml_partitioner_t* p, const cml_ir_node_t* n) {
  const cml_ir_attrs_t* a = n->attrs;
  const bool vjp = n->op == CML_OP_FUSED_SDPA_VJP;
  const int hd = a->fused.layout == CML_ATTENTION_LAYOUT_BSHD ? 2 : 1;
  const uint32_t first_optional = vjp ? 6 : 3;
  if (n->input_count < first_optional || n->input_count > first_optional + 4) {
    return cml_pt_replicate(p, n);
  }
  const cml_shape_t* qs = &p->m->values[n->inputs[0]].shape;
  const cml_shape_t* ks = &p->m->values[n->inputs[1]].shape;
  const cml_shape_t* vs = &p->m->values[n->inputs[2]].shape;
  if (qs->rank != 4 || ks->rank != 4 || vs->rank != 4) return cml_pt_replicate(p, n);
  cml_pshard_t qt, kt;
  memset(&qt, 0, sizeof qt);
  cml_pshard_copy_dim(&qt, 0, &p->st[n->inputs[0]], 0);
  cml_pshard_copy_dim(&qt, hd, &p->st[n->inputs[0]], hd);
  kt = qt;
  if (!cml_pt_valid(p, ks, &kt) || !cml_pt_valid(p, vs, &kt)) {
    cml_pshard_clear_dim(&qt, hd);
    cml_pshard_clear_dim(&kt, hd);
  }
  if (!cml_pt_valid(p, qs, &qt) || !cml_pt_valid(p, ks, &kt) || !cml_pt_valid(p, vs, &kt)) {
    memset(&qt, 0, sizeof qt);
    memset(&kt, 0, sizeof kt);
  }
  // The splits of the scores' batch and head dimensions.
  const int64_t scores[2] = {qs->dims[0], qs->dims[hd]};
  cml_pshard_t sc;
  memset(&sc, 0, sizeof sc);
  cml_pshard_copy_dim(&sc, 0, &qt, 0);
  cml_pshard_copy_dim(&sc, 1, &qt, hd);
  cml_pshard_t to[10];
  for (uint32_t i = 0; i < n->input_count; ++i) memset(&to[i], 0, sizeof to[i]);
  to[0] = qt;
  to[1] = to[2] = kt;
  if (vjp) {
    to[3] = to[5] = qt;  // the forward's output and its cotangent
    to[4] = sc;          // the logsumexp [batch, heads, seq]
  }
  uint32_t i = first_optional;
  for (uint32_t bit = 0; bit < 4 && i < n->input_count; ++bit) {
    if (!(a->fused.optional_inputs & (1u << bit))) continue;
    const cml_shape_t* os = &p->m->values[n->inputs[i]].shape;
    if (bit >= 2) {
      cml_pshard_copy_dim(&to[i], 0, &sc, 0);  // query_seq_len, kv_seq_len: [batch]
    } else {
      for (int d = 0; d < os->rank; ++d) {
        const int sd = 4 - os->rank + d;  // right-aligned to the scores
        if (sd >= 0 && sd < 2 && os->dims[d] == scores[sd]) cml_pshard_copy_dim(&to[i], d, &sc, sd);
      }
    }
    ++i;
  }
  cml_value_t in[10], out[3];
  for (uint32_t k = 0; k < n->input_count; ++k) {
    in[k] = cml_pt_reshard(p, n->inputs[k], &to[k]);
    if (in[k] == CML_VALUE_INVALID) return false;
  }
  if (!cml_pt_emit(p, n, in, out)) return false;
  if (vjp) {
    for (uint32_t k = 0; k < 3; ++k) cml_pt_set(p, n->first_output + k, out[k], &to[k]);
  } else {
    cml_pt_set(p, n->first_output, out[0], &qt);
    cml_pt_set(p, n->first_output + 1, out[1], &sc);
  }
  return true;
}

// Gather from a whole operand: the result's batch dimensions follow the splits of the indices'
// dimensions (the index vector dimension is made whole), so each device looks up its own rows.
static bool cml_pt_gather(cml_partitioner_t* p, const cml_ir_node_t* n) {
  const cml_gather_dims_t* g = &n->attrs->u.gather;
  uint32_t iv = n->inputs[1];
  int ir = cml_pt_rank(p, iv);
  int orank = p->m->values[n->first_output].shape.rank;
  cml_pshard_t ito = p->st[iv];
  ito.partial = 0;
  if (g->index_vector_axis < ir) cml_pshard_clear_dim(&ito, (int)g->index_vector_axis);
  bool is_offset[CML_MAX_RANK] = {false};
  for (int i = 0; i < g->offset_output_axis_count; ++i) is_offset[g->offset_output_axes[i]] = true;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  int next = 0;
  for (int d = 0; d < orank; ++d) {
    if (is_offset[d]) continue;
    if (next == g->index_vector_axis) ++next;
    cml_pshard_copy_dim(&res, d, &ito, next++);
  }
  cml_value_t in[2];
  in[0] = cml_pt_replicated(p, n->inputs[0]);
  if (in[0] == CML_VALUE_INVALID) return false;
  in[1] = cml_pt_reshard(p, iv, &ito);
  if (in[1] == CML_VALUE_INVALID) return false;
  cml_value_t out;
  if (!cml_pt_emit(p, n, in, &out)) return false;
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// Ops that work independently along some dimensions of their first operand (the others made
// whole, every other operand whole or, for SelectAndScatter's source, split alike): ConvGeneral
// (the input's batch dimension goes to the output's), ReduceWindow and SelectAndScatter (the
// dimensions whose window is 1 with stride 1 and no padding or dilation), BatchNormInference
// (every dimension but the feature one).
static bool cml_pt_batch_like(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t xv = n->inputs[0];
  int rank = cml_pt_rank(p, xv);
  const cml_ir_attrs_t* a = n->attrs;
  bool keep[CML_MAX_RANK] = {false};
  int out_dim[CML_MAX_RANK];
  for (int d = 0; d < rank; ++d) out_dim[d] = d;
  uint32_t split_inputs = 1;
  switch (n->op) {
    case CML_OP_CONV_GENERAL:
      if (a->u.conv.batch_group_count > 1) return cml_pt_replicate(p, n);
      keep[a->u.conv.input_batch_axis] = true;
      out_dim[a->u.conv.input_batch_axis] = (int)a->u.conv.output_batch_axis;
      break;
    case CML_OP_SELECT_AND_SCATTER_MAX:
    case CML_OP_SELECT_AND_SCATTER_MIN:
    case CML_OP_SELECT_AND_SCATTER_SUM:
      split_inputs = 2;
      // fall through
    case CML_OP_REDUCE_WINDOW: {
      const cml_window_config_t* w = &a->u.window;
      for (int d = 0; d < rank; ++d) {
        keep[d] = w->window_dims[d] == 1 && w->strides[d] == 1 && w->padding_low[d] == 0 &&
                  w->padding_high[d] == 0 && w->input_dilations[d] <= 1 &&
                  w->window_dilations[d] <= 1;
      }
      break;
    }
    case CML_OP_BATCH_NORM_INFERENCE:
      for (int d = 0; d < rank; ++d) keep[d] = d != a->axis;
      break;
    default:
      return cml_pt_replicate(p, n);
  }
  cml_pshard_t to;
  memset(&to, 0, sizeof to);
  for (int d = 0; d < rank; ++d) {
    if (keep[d]) cml_pshard_copy_dim(&to, d, &p->st[xv], d);
  }
  cml_value_t in[8];
  if (n->input_count > 8) return cml_pt_replicate(p, n);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    cml_pshard_t whole;
    memset(&whole, 0, sizeof whole);
    in[i] = cml_pt_reshard(p, n->inputs[i], i < split_inputs ? &to : &whole);
    if (in[i] == CML_VALUE_INVALID) return false;
  }
  cml_value_t out;
  if (!cml_pt_emit(p, n, in, &out)) return false;
  cml_pshard_t res;
  memset(&res, 0, sizeof res);
  for (int d = 0; d < rank; ++d) {
    if (keep[d]) cml_pshard_copy_dim(&res, out_dim[d], &to, d);
  }
  cml_pt_set(p, n->first_output, out, &res);
  return true;
}

// Sort: every operand takes the first one's splits with the sort axis whole; each device sorts
// its own rows (the comparator is re-emitted whole).
static bool cml_pt_sort(cml_partitioner_t* p, const cml_ir_node_t* n) {
  uint32_t v0 = n->inputs[0];
  cml_pshard_t to = p->st[v0];
  to.partial = 0;
  cml_pshard_clear_dim(&to, (int)n->attrs->axis);
  cml_value_t in[64], out[64];
  if (n->input_count > 64 || n->output_count > 64) return cml_pt_replicate(p, n);
  for (uint32_t i = 0; i < n->input_count; ++i) {
    in[i] = cml_pt_reshard(p, n->inputs[i], &to);
    if (in[i] == CML_VALUE_INVALID) return false;
  }
  if (!cml_pt_emit(p, n, in, out)) return false;
  for (uint32_t k = 0; k < n->output_count; ++k) cml_pt_set(p, n->first_output + k, out[k], &to);
  return true;
}

//===--- driver ---===//

static bool cml_pt_node(cml_partitioner_t* p, const cml_ir_node_t* n) {
  if (n->op == CML_OP_PARAMETER || n->op == CML_OP_CAPTURED_VALUE) return true;
  if (cml_op_kind(n->op) == CML_OPK_COLLECTIVE) {
    return cml_pt_fail(p, CML_STATUS_INVALID_ARGUMENT,
                       "%s: collective ops are not allowed in an AutoSharding program (the "
                       "partitioner inserts them)",
                       cml_op_name(n->op));
  }
  if (n->op == CML_OP_CONSTANT) {
    cml_value_t out;
    if (!cml_pt_emit(p, n, NULL, &out)) return false;
    cml_pshard_t r;
    memset(&r, 0, sizeof r);
    cml_pt_set(p, n->first_output, out, &r);
    p->rep[n->first_output] = out;
    return true;
  }
  switch (cml_op_kind(n->op)) {
    case CML_OPK_UNARY:
    case CML_OPK_BINARY:
    case CML_OPK_COMPARE:
      return cml_pt_elementwise(p, n);
    case CML_OPK_REDUCE:
      return cml_pt_reduce(p, n);
    default:
      break;
  }
  switch (n->op) {
    case CML_OP_CONVERT_DTYPE:
    case CML_OP_CLAMP:
    case CML_OP_WHERE:
    case CML_OP_FUSED_GELU:
      return cml_pt_elementwise(p, n);
    case CML_OP_TRANSPOSE:
      return cml_pt_transpose(p, n);
    case CML_OP_BROADCAST_IN_DIM:
      return cml_pt_broadcast(p, n);
    case CML_OP_RESHAPE:
      return cml_pt_reshape(p, n);
    case CML_OP_SLICE:
    case CML_OP_PAD:
    case CML_OP_REVERSE:
    case CML_OP_CONCATENATE:
    case CML_OP_ARG_MIN_MAX:
    case CML_OP_FUSED_SOFTMAX:
    case CML_OP_FUSED_LAYER_NORM:
      return cml_pt_slice_like(p, n);
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL:
      return cml_pt_dot(p, n);
    case CML_OP_FUSED_DENSE:
    case CML_OP_FUSED_QUANTIZED_DENSE:
    case CML_OP_FUSED_ATTENTION_QKV_PROJECTION:
      return cml_pt_row_wise(p, n, 0);
    case CML_OP_QUANTIZED_EMBEDDING_LOOKUP:
      return cml_pt_row_wise(p, n, 1);
    case CML_OP_FUSED_SDPA:
    case CML_OP_FUSED_SDPA_VJP:
      return cml_pt_attention(p, n);
    case CML_OP_GATHER:
      return cml_pt_gather(p, n);
    case CML_OP_SORT:
      return cml_pt_sort(p, n);
    case CML_OP_CONV_GENERAL:
    case CML_OP_REDUCE_WINDOW:
    case CML_OP_SELECT_AND_SCATTER_MAX:
    case CML_OP_SELECT_AND_SCATTER_MIN:
    case CML_OP_SELECT_AND_SCATTER_SUM:
    case CML_OP_BATCH_NORM_INFERENCE:
      return cml_pt_batch_like(p, n);
    default:
      return cml_pt_replicate(p, n);
  }
}

// Converts a module sharding (zeroed or NULL: replicated) into a state; false when it is on a
// mesh other than the partitioner's.
static bool cml_pt_from_sharding(const cml_partitioner_t* p, const cml_sharding_t* sh,
                                 cml_pshard_t* out) {
  memset(out, 0, sizeof *out);
  if (!sh || !sh->mesh || cml_sharding_is_replicated(sh)) return true;
  if (sh->mesh != p->mesh) return false;
  for (int d = 0; d < sh->rank && d < CML_MAX_RANK; ++d) {
    out->count[d] = sh->axis_count[d];
    for (int k = 0; k < sh->axis_count[d]; ++k) out->axes[d][k] = sh->mesh_axes[d][k];
  }
  return true;
}

// Picks the mesh the shardings use (one mesh with more than one device at most).
static cml_status_t cml_pt_setup_mesh(cml_partitioner_t* p) {
  const cml_module_t* m = p->m;
  const cml_ir_function_t* main_fn = &m->functions[0];
  for (int side = 0; side < 2; ++side) {
    const cml_sharding_t* shs = side == 0 ? m->param_shardings : m->output_shardings;
    uint32_t count = side == 0 ? main_fn->param_count : main_fn->output_count;
    for (uint32_t i = 0; shs && i < count; ++i) {
      const cml_sharding_t* sh = &shs[i];
      if (!sh->mesh || cml_sharding_is_replicated(sh)) continue;
      if (!p->mesh) {
        p->mesh = sh->mesh;
      } else if (p->mesh != sh->mesh) {
        return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                               "AutoSharding partitioner (module %s): shardings on two meshes "
                               "(%s and %s) are not supported; use one mesh",
                               m->name ? m->name : "", cml_mesh_name(p->mesh),
                               cml_mesh_name(sh->mesh));
      }
    }
  }
  if (!p->mesh) return CML_OK;
  p->axis_count = (int)cml_mesh_axis_count(p->mesh);
  int64_t stride = 1;
  for (int a = p->axis_count - 1; a >= 0; --a) {
    p->axis_size[a] = cml_mesh_axis_size(p->mesh, (size_t)a);
    p->axis_stride[a] = stride;
    stride *= p->axis_size[a];
  }
  if (stride != p->n) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "AutoSharding partitioner (module %s): mesh %s has %lld devices but "
                           "the module runs on %d",
                           m->name ? m->name : "", cml_mesh_name(p->mesh), (long long)stride,
                           (int)p->n);
  }
  const int32_t* assignment = cml_mesh_device_assignment(p->mesh);
  for (int32_t k = 0; k < p->n; ++k) {
    p->slot_of_pos[k] = assignment ? assignment[k] : k;
    p->pos_of_slot[p->slot_of_pos[k]] = k;
  }
  return CML_OK;
}

static void cml_pt_free(cml_partitioner_t* p) {
  size_t nv = p->m->value_count;
  cml_pt_dealloc(p, p->slot_of_pos, (size_t)p->n, sizeof(int32_t));
  cml_pt_dealloc(p, p->pos_of_slot, (size_t)p->n, sizeof(int32_t));
  cml_pt_dealloc(p, p->ids, (size_t)p->n, sizeof(int32_t));
  cml_pt_dealloc(p, p->local, nv, sizeof(cml_value_t));
  cml_pt_dealloc(p, p->st, nv, sizeof(cml_pshard_t));
  cml_pt_dealloc(p, p->rep, nv, sizeof(cml_value_t));
  cml_pt_dealloc(p, p->functions, p->m->function_count, sizeof(cml_function_t*));
  cml_builder_destroy(p->b);
}

cml_status_t cml__partition_module(const cml_module_t* global, cml_backend_t* backend,
                                   cml_module_t** out_spmd) {
  if (out_spmd) *out_spmd = NULL;
  if (!global || !backend || !out_spmd || global->function_count == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "AutoSharding partitioner: NULL or empty module, backend or output");
  }
  if (global->distribution != CML_DISTRIBUTION_AUTO_SHARDING) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "AutoSharding partitioner: module %s has distribution %s, not "
                           "AutoSharding",
                           global->name ? global->name : "",
                           cml_distribution_name(global->distribution));
  }
  cml_partitioner_t p;
  memset(&p, 0, sizeof p);
  p.m = global;
  p.alloc = backend->allocator;
  p.n = global->num_devices > 0 ? global->num_devices : 1;
  size_t nv = global->value_count;
  p.slot_of_pos = (int32_t*)cml_pt_calloc(&p, (size_t)p.n, sizeof(int32_t));
  p.pos_of_slot = (int32_t*)cml_pt_calloc(&p, (size_t)p.n, sizeof(int32_t));
  p.ids = (int32_t*)cml_pt_calloc(&p, (size_t)p.n, sizeof(int32_t));
  p.local = (cml_value_t*)cml_pt_calloc(&p, nv, sizeof(cml_value_t));
  p.st = (cml_pshard_t*)cml_pt_calloc(&p, nv, sizeof(cml_pshard_t));
  p.rep = (cml_value_t*)cml_pt_calloc(&p, nv, sizeof(cml_value_t));
  p.functions =
      (cml_function_t**)cml_pt_calloc(&p, global->function_count, sizeof(cml_function_t*));
  if (!p.slot_of_pos || !p.pos_of_slot || !p.ids || !p.local || !p.st || !p.rep || !p.functions) {
    cml_pt_free(&p);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  cml_status_t st = cml_pt_setup_mesh(&p);
  if (st == CML_OK) st = cml_builder_create(backend, global->name, &p.b);
  if (st == CML_OK) st = cml_builder_spmd(p.b, (int)p.n);
  if (st == CML_OK && global->device_assignment) {
    st = cml_builder_device_assignment(p.b, global->device_assignment, (size_t)p.n);
  }
  if (st != CML_OK) {
    cml_pt_free(&p);
    return st;
  }
  p.f = cml_builder_main(p.b);
  const cml_ir_function_t* main_fn = &global->functions[0];
  // Parameters, in order, with their shard shapes.
  for (uint32_t i = 0; p.status == CML_OK && i < main_fn->param_count; ++i) {
    uint32_t v = main_fn->params[i];
    const cml_ir_node_t* n = &global->nodes[global->values[v].node];
    cml_pshard_t s;
    const cml_sharding_t* sh = global->param_shardings ? &global->param_shardings[i] : NULL;
    cml_shape_t local;
    if (!cml_pt_from_sharding(&p, sh, &s) || !cml_pt_valid(&p, &global->values[v].shape, &s)) {
      cml_pt_fail(&p, CML_STATUS_INVALID_ARGUMENT, "parameter #%u \"%s\": invalid sharding", i,
                  n->name ? n->name : "");
      break;
    }
    cml_pt_local_shape(&p, &global->values[v].shape, &s, &local);
    cml_value_t x = cml_parameter(p.f, n->name, &local);
    if (!cml_pt_ok(&p, x)) break;
    cml_pt_set(&p, v, x, &s);
    if (cml_pshard_dim_mask(&s, local.rank) == 0) p.rep[v] = x;
  }
  for (uint32_t i = 0; p.status == CML_OK && i < main_fn->node_count; ++i) {
    cml_pt_node(&p, &global->nodes[main_fn->nodes[i]]);
  }
  // Outputs, forced to their requested sharding.
  cml_value_t* outs = (cml_value_t*)cml_pt_calloc(&p, main_fn->output_count, sizeof *outs);
  if (!outs) cml_pt_fail(&p, CML_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; p.status == CML_OK && i < main_fn->output_count; ++i) {
    uint32_t v = main_fn->outputs[i];
    cml_pshard_t s;
    const cml_sharding_t* sh = global->output_shardings ? &global->output_shardings[i] : NULL;
    if (!cml_pt_from_sharding(&p, sh, &s) || !cml_pt_valid(&p, &global->values[v].shape, &s)) {
      cml_pt_fail(&p, CML_STATUS_INVALID_ARGUMENT, "output #%u: invalid sharding", i);
      break;
    }
    outs[i] = cml_pt_reshard(&p, v, &s);
  }
  if (p.status == CML_OK) {
    st = cml_function_return(p.f, outs, main_fn->output_count);
    if (st != CML_OK) {
      cml_pt_fail(&p, cml_status_code(st), "Return: %s", cml_status_message(st));
      cml_status_free(st);
    }
  }
  cml_pt_dealloc(&p, outs, main_fn->output_count, sizeof *outs);
  cml_module_t* spmd = NULL;
  if (p.status == CML_OK) {
    st = cml__builder_take_module(p.b, &spmd);
    if (st != CML_OK) p.status = st;
  }
  st = p.status;
  cml_pt_free(&p);
  if (st != CML_OK) return st;
  *out_spmd = spmd;
  return CML_OK;
}
