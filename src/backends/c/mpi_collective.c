// SPDX-License-Identifier: Apache-2.0
// src/backends/c/mpi_collective.c: the collective ops of an SPMD execution under
// c:distributed=mpi (AllReduce, AllGather, ReduceScatter, AllToAll, CollectivePermute,
// CollectiveBroadcast), whose replica groups may span processes.
//
// Every local device slot joins one round of the engine's rendezvous per collective (all local
// slots: the members of every group on this process); the lowest local slot then runs the op
// for all of them while the others wait in cmlc_round_finish, so one thread per process talks
// MPI. It walks the groups in order (the same order on every process, so that every pair of
// processes matches its messages): a group inside this process is combined in memory; a group
// across processes first all-gathers the inputs of its members (cml__mpi_all_gather_v among the
// group's processes), then every output is computed from all members' inputs exactly as the
// in-process collectives do (values folded in group order, Float16/BFloat16 in f32 rounded
// once), so results are bit-identical to one process running every device. An AllReduce whose
// group has one member per process goes straight to cml__mpi_all_reduce (a reduce-scatter plus
// all-gather, same fold order).
//
// Thread-safety: reentrant; the rendezvous orders the local members' reads and writes.
#include <stdlib.h>
#include <string.h>

#include "backends/c/mpi_internal.h"
#include "distributed/mpi_comm.h"

//===--- helpers ---===//

static size_t cmlc_mpi_co_esize(cml_dtype_t dtype) {
  const int bits = cml_dtype_bits(dtype);
  return bits > 0 && bits % 8 == 0 ? (size_t)(bits / 8) : 0;
}

static int cmlc_mpi_co_process(const cmlc_kernel_args_t* a, int32_t slot) {
  const int32_t* da = a->module->device_assignment;
  return cmlc_mpi_device_process(a->options, da ? (int)da[slot] : (int)slot);
}

// Copies a block of |dims| from |src| (a row-major array of |src_dims|, the block at |src_at|)
// into |dst| (of |dst_dims|, at |dst_at|).
static void cmlc_mpi_co_copy_block(uint8_t* dst, const int64_t* dst_dims, const int64_t* dst_at,
                                   const uint8_t* src, const int64_t* src_dims,
                                   const int64_t* src_at, const int64_t* dims, int32_t rank,
                                   size_t esize) {
  if (rank == 0) {
    memcpy(dst, src, esize);
    return;
  }
  int64_t dstride[CML_MAX_RANK], sstride[CML_MAX_RANK], idx[CML_MAX_RANK];
  dstride[rank - 1] = sstride[rank - 1] = 1;
  for (int32_t d = rank - 2; d >= 0; --d) {
    dstride[d] = dstride[d + 1] * dst_dims[d + 1];
    sstride[d] = sstride[d + 1] * src_dims[d + 1];
  }
  for (int32_t d = 0; d < rank; ++d) {
    if (dims[d] == 0) return;
    idx[d] = 0;
  }
  const size_t run = (size_t)dims[rank - 1] * esize;
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int32_t d = 0; d < rank; ++d) {
      doff += (dst_at[d] + idx[d]) * dstride[d];
      soff += (src_at[d] + idx[d]) * sstride[d];
    }
    memcpy(dst + (size_t)doff * esize, src + (size_t)soff * esize, run);
    int32_t d = rank - 2;
    while (d >= 0 && ++idx[d] == dims[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

//===--- one group ---===//

// What the leader knows about the op.
typedef struct cmlc_mpi_co_t {
  const cmlc_kernel_args_t* a;              // the leader's arguments
  const cmlc_kernel_args_t* const* locals;  // every local slot's arguments
  const int32_t* local_slots;               // ascending
  int32_t local_count;
  uint32_t operands;  // inputs per member
} cmlc_mpi_co_t;

// The local index of |slot|, or -1.
static int32_t cmlc_mpi_co_local(const cmlc_mpi_co_t* co, int32_t slot) {
  int32_t lo = 0, hi = co->local_count - 1;
  while (lo <= hi) {
    const int32_t mid = (lo + hi) / 2;
    if (co->local_slots[mid] == slot) return mid;
    if (co->local_slots[mid] < slot) {
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return -1;
}

// Fills the outputs of the group's local members from |srcs| (member-major: srcs[k * operands +
// i] is operand i of the member at position k).
static cml_status_t cmlc_mpi_co_compute(const cmlc_mpi_co_t* co, const int32_t* members,
                                        int32_t size, const void* const* srcs) {
  const cmlc_kernel_args_t* a = co->a;
  const cml_ir_node_t* node = a->node;
  const cml_shape_t* in = a->input_shapes[0];
  const cml_shape_t* out = a->output_shapes[0];
  const size_t esize = cmlc_mpi_co_esize(in->dtype);
  const void** list = malloc((size_t)size * sizeof *list);
  if (!list) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  const cmlc_kernel_args_t* first = NULL;  // the first local member done (AllReduce, AllGather)
  for (int32_t p = 0; p < size; ++p) {
    const int32_t slot = members ? members[p] : p;
    const int32_t l = cmlc_mpi_co_local(co, slot);
    if (l < 0) continue;
    const cmlc_kernel_args_t* m = co->locals[l];
    switch (node->op) {
      case CML_OP_ALL_REDUCE:
        for (uint32_t i = 0; i < co->operands; ++i) {
          const cml_shape_t* s = a->input_shapes[i];
          const size_t bytes = cml_shape_byte_size(s);
          if (first) {
            if (bytes) memcpy(m->outputs[i], first->outputs[i], bytes);
            continue;
          }
          for (int32_t k = 0; k < size; ++k) list[k] = srcs[(size_t)k * co->operands + i];
          cml__mpi_reduce_local(list, size, m->outputs[i], cml_shape_element_count(s), s->dtype,
                                node->attrs->reduce_type);
        }
        break;
      case CML_OP_ALL_GATHER: {
        if (first) {
          const size_t bytes = cml_shape_byte_size(out);
          if (bytes) memcpy(m->outputs[0], first->outputs[0], bytes);
          break;
        }
        const int32_t axis = (int32_t)node->attrs->axis;
        int64_t zero[CML_MAX_RANK] = {0}, at[CML_MAX_RANK] = {0};
        for (int32_t k = 0; k < size; ++k) {
          if (in->rank > 0) at[axis] = (int64_t)k * in->dims[axis];
          cmlc_mpi_co_copy_block((uint8_t*)m->outputs[0], out->dims, at, (const uint8_t*)srcs[k],
                                 in->dims, zero, in->dims, in->rank, esize);
        }
        break;
      }
      case CML_OP_REDUCE_SCATTER: {
        const int32_t axis = (int32_t)node->attrs->axis;
        int64_t outer = 1, inner = 1;
        for (int32_t d = 0; d < axis; ++d) outer *= in->dims[d];
        for (int32_t d = axis + 1; d < in->rank; ++d) inner *= in->dims[d];
        const int64_t span = in->dims[axis] / size * inner;
        for (int64_t o = 0; o < outer; ++o) {
          const int64_t from = o * in->dims[axis] * inner + (int64_t)p * span;
          for (int32_t k = 0; k < size; ++k) {
            list[k] = (const uint8_t*)srcs[k] + (size_t)from * esize;
          }
          cml__mpi_reduce_local(list, size, (uint8_t*)m->outputs[0] + (size_t)(o * span) * esize,
                                span, in->dtype, node->attrs->reduce_type);
        }
        break;
      }
      case CML_OP_ALL_TO_ALL: {
        const int32_t split = (int32_t)node->attrs->collective.split_axis;
        const int32_t concat = (int32_t)node->attrs->collective.concat_axis;
        int64_t block[CML_MAX_RANK], src_at[CML_MAX_RANK] = {0}, dst_at[CML_MAX_RANK] = {0};
        memcpy(block, in->dims, sizeof(int64_t) * (size_t)in->rank);
        block[split] = in->dims[split] / size;
        src_at[split] = (int64_t)p * block[split];
        for (int32_t k = 0; k < size; ++k) {
          dst_at[concat] = (int64_t)k * block[concat];
          cmlc_mpi_co_copy_block((uint8_t*)m->outputs[0], out->dims, dst_at,
                                 (const uint8_t*)srcs[k], in->dims, src_at, block, in->rank, esize);
        }
        break;
      }
      case CML_OP_COLLECTIVE_BROADCAST: {
        const size_t bytes = cml_shape_byte_size(out);
        if (bytes) memcpy(m->outputs[0], srcs[0], bytes);
        break;
      }
      case CML_OP_COLLECTIVE_PERMUTE: {
        const cml_ir_collective_attrs_t* c = &node->attrs->collective;
        int32_t source = -1;
        for (int32_t i = 0; i < c->pair_count; ++i) {
          if (c->pairs[2 * i + 1] == slot) source = c->pairs[2 * i];
        }
        const size_t bytes = cml_shape_byte_size(out);
        if (bytes && source >= 0) {
          memcpy(m->outputs[0], srcs[source], bytes);
        } else if (bytes) {
          memset(m->outputs[0], 0, bytes);
        }
        break;
      }
      default:
        break;
    }
    if (!first) first = m;
  }
  free(list);
  return CML_OK;
}

// Runs the op for one group (|members| in group order, NULL: slot k at position k).
static cml_status_t cmlc_mpi_co_group(const cmlc_mpi_co_t* co, const int32_t* members,
                                      int32_t size) {
  const cmlc_kernel_args_t* a = co->a;
  const int me = a->options->process_index;
  // The processes of the group in order of first appearance, how many members each has, and
  // each member's process and index among its process's members.
  int* procs = malloc((size_t)size * 4 * sizeof(int));
  const void** srcs = malloc((size_t)size * co->operands * sizeof *srcs);
  int64_t* sizes = malloc((size_t)size * 2 * sizeof *sizes);
  if (!procs || !srcs || !sizes) {
    free(procs), free(srcs), free(sizes);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  int* per_proc = procs + size;
  int* member_proc = procs + 2 * size;
  int* member_index = procs + 3 * size;
  int pc = 0, mine = -1;
  bool any_local = false;
  for (int32_t k = 0; k < size; ++k) {
    const int32_t slot = members ? members[k] : k;
    const int p = cmlc_mpi_co_process(a, slot);
    int q = 0;
    while (q < pc && procs[q] != p) ++q;
    if (q == pc) {
      procs[pc] = p;
      per_proc[pc++] = 0;
    }
    member_proc[k] = q;
    member_index[k] = per_proc[q]++;
    if (p == me) {
      mine = q;
      any_local = true;
    }
  }
  cml_status_t st = CML_OK;
  size_t operand_bytes[64];
  size_t member_bytes = 0;
  for (uint32_t i = 0; i < co->operands && i < 64; ++i) {
    operand_bytes[i] = cml_shape_byte_size(a->input_shapes[i]);
    member_bytes += operand_bytes[i];
  }
  bool direct = a->node->op == CML_OP_ALL_REDUCE && pc > 1;
  for (int q = 0; q < pc; ++q) direct = direct && per_proc[q] == 1;
  if (!any_local) {
    // Nothing to do here.
  } else if (co->operands > 64) {
    st = cml_status_make(CML_STATUS_UNIMPLEMENTED, "%s: %u operands across processes (at most 64)",
                         cml_op_name(a->node->op), co->operands);
  } else if (direct) {
    const cml__mpi_group_t group = {procs, pc};
    const cmlc_kernel_args_t* m = NULL;
    for (int32_t k = 0; k < size && !m; ++k) {
      const int32_t l = cmlc_mpi_co_local(co, members ? members[k] : k);
      if (l >= 0) m = co->locals[l];
    }
    for (uint32_t i = 0; i < co->operands && st == CML_OK; ++i) {
      const cml_shape_t* s = a->input_shapes[i];
      st = cml__mpi_all_reduce(&group, m->inputs[i], m->outputs[i], cml_shape_element_count(s),
                               s->dtype, a->node->attrs->reduce_type);
    }
  } else {
    uint8_t* packed = NULL;
    uint8_t* gathered = NULL;
    if (pc > 1) {
      int64_t total = 0;
      for (int q = 0; q < pc; ++q) {
        sizes[q] = (int64_t)per_proc[q] * (int64_t)member_bytes;
        total += sizes[q];
      }
      packed = malloc((size_t)sizes[mine] + 1);
      gathered = malloc((size_t)total + 1);
      if (!packed || !gathered) {
        st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "%s: out of memory for %lld bytes across processes",
                             cml_op_name(a->node->op), (long long)total);
      } else {
        size_t at = 0;
        for (int32_t k = 0; k < size; ++k) {
          const int32_t l =
              member_proc[k] == mine ? cmlc_mpi_co_local(co, members ? members[k] : k) : -1;
          if (l < 0) continue;
          for (uint32_t i = 0; i < co->operands; ++i) {
            if (operand_bytes[i]) memcpy(packed + at, co->locals[l]->inputs[i], operand_bytes[i]);
            at += operand_bytes[i];
          }
        }
        const cml__mpi_group_t group = {procs, pc};
        st = cml__mpi_all_gather_v(&group, packed, gathered, sizes);
      }
    }
    if (st == CML_OK) {
      int64_t* offsets = sizes + size;
      int64_t off = 0;
      for (int q = 0; q < pc; ++q) {
        offsets[q] = off;
        off += pc > 1 ? sizes[q] : 0;
      }
      for (int32_t k = 0; k < size; ++k) {
        const int32_t l =
            member_proc[k] == mine ? cmlc_mpi_co_local(co, members ? members[k] : k) : -1;
        size_t at = (size_t)offsets[member_proc[k]] + (size_t)member_index[k] * member_bytes;
        for (uint32_t i = 0; i < co->operands; ++i) {
          srcs[(size_t)k * co->operands + i] =
              l >= 0 ? co->locals[l]->inputs[i] : (const void*)(gathered + at);
          at += operand_bytes[i];
        }
      }
      st = cmlc_mpi_co_compute(co, members, size, srcs);
    }
    // Lent to MPI: kept when a failed exchange left transfers in flight.
    cml__mpi_free_lent(packed);
    cml__mpi_free_lent(gathered);
  }
  free(procs);
  free(srcs);
  free(sizes);
  return st;
}

//===--- the kernel ---===//

static cml_status_t cmlc_mpi_co_lead(const cmlc_kernel_args_t* a, cmlc_round_t* round,
                                     const int32_t* local_slots, int32_t local_count) {
  const cmlc_kernel_args_t** locals = malloc((size_t)local_count * sizeof *locals);
  if (!locals) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  for (int32_t l = 0; l < local_count; ++l) {
    locals[l] = round ? (const cmlc_kernel_args_t*)cmlc_round_contribution(round, l) : a;
  }
  const cmlc_mpi_co_t co = {
      .a = a,
      .locals = locals,
      .local_slots = local_slots,
      .local_count = local_count,
      .operands = a->node->op == CML_OP_ALL_REDUCE ? a->input_count : 1,
  };
  const cml_ir_collective_attrs_t* c = &a->node->attrs->collective;
  const int32_t n = a->replica_count > 0 ? a->replica_count : 1;
  // The stamp that keeps this collective's messages apart from any other's (mpi_comm.h).
  char label[160];
  const uint64_t stamp =
      a->rendezvous ? cmlc_rendezvous_mpi_stamp(a->rendezvous, a->node, label, sizeof label) : 0;
  cml__mpi_set_stamp(stamp, label,
                     a->rendezvous ? cmlc_rendezvous_mpi_channel(a->rendezvous) : NULL);
  cml_status_t st = CML_OK;
  if (a->node->op == CML_OP_COLLECTIVE_PERMUTE || !c->groups || c->group_count < 1 ||
      c->group_size < 1) {
    st = cmlc_mpi_co_group(&co, NULL, n);
  } else {
    for (int32_t g = 0; g < c->group_count && st == CML_OK; ++g) {
      st = cmlc_mpi_co_group(&co, c->groups + (size_t)g * (size_t)c->group_size, c->group_size);
    }
  }
  cml__mpi_set_stamp(0, NULL, NULL);
  free(locals);
  return st;
}

// Checks what the in-process kernels check at run time, for the group size |size|.
static cml_status_t cmlc_mpi_co_check(const cmlc_kernel_args_t* a, int32_t size) {
  const cml_ir_node_t* node = a->node;
  const cml_shape_t* in = a->input_shapes[0];
  if (node->op == CML_OP_ALL_TO_ALL) {
    const int32_t split = (int32_t)node->attrs->collective.split_axis;
    const int32_t concat = (int32_t)node->attrs->collective.concat_axis;
    if (in->rank < 1 || split < 0 || split >= in->rank || concat < 0 || concat >= in->rank ||
        in->dims[split] % size != 0) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "AllToAll: split axis %d / concat axis %d of a rank-%d operand over "
                             "%d members",
                             (int)split, (int)concat, (int)in->rank, (int)size);
    }
  } else if (node->op == CML_OP_REDUCE_SCATTER || node->op == CML_OP_ALL_GATHER) {
    const int32_t axis = (int32_t)node->attrs->axis;
    if (in->rank < 1 || axis < 0 || axis >= in->rank ||
        (node->op == CML_OP_REDUCE_SCATTER && in->dims[axis] % size != 0)) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: axis %d of a rank-%d operand over %d members",
                             cml_op_name(node->op), (int)axis, (int)in->rank, (int)size);
    }
  }
  return CML_OK;
}

static cml_status_t cmlc_mpi_co_run(const cmlc_kernel_args_t* a) {
  const int32_t n = a->replica_count > 0 ? a->replica_count : 1;
  const cml_ir_collective_attrs_t* c = &a->node->attrs->collective;
  const int32_t size = a->node->op == CML_OP_COLLECTIVE_PERMUTE || !c->groups || c->group_size < 1
                           ? n
                           : c->group_size;
  CML_RETURN_IF_ERROR(cmlc_mpi_co_check(a, size));
  if (a->scratch_size < cmlc_size_of(n, sizeof(int32_t))) {
    return cml_status_make(CML_STATUS_INTERNAL, "%s: scratch for %d device slots too small",
                           cml_op_name(a->node->op), (int)n);
  }
  // Every local slot, ascending (in the scratch: the round keeps pointing at the first
  // member's list until everyone left it).
  int32_t* local_slots = (int32_t*)a->scratch;
  int32_t local_count = 0, self = -1;
  const int me = a->options->process_index;
  for (int32_t s = 0; s < n; ++s) {
    if (cmlc_mpi_co_process(a, s) != me) continue;
    if (s == a->replica) self = local_count;
    local_slots[local_count++] = s;
  }
  if (self < 0) {
    return cml_status_make(CML_STATUS_INTERNAL, "%s: device slot %d does not run on process %d",
                           cml_op_name(a->node->op), (int)a->replica, me);
  }
  cmlc_round_t* round = NULL;
  if (local_count > 1) {
    if (!a->rendezvous) {
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                             "%s: %d local device slots outside an SPMD execution",
                             cml_op_name(a->node->op), (int)local_count);
    }
    CML_RETURN_IF_ERROR(cmlc_round_join(a->rendezvous, a->node, a->replica, local_slots,
                                        local_count, self, a, &round));
  }
  cml_status_t st = CML_OK;
  if (self == 0) st = cmlc_mpi_co_lead(a, round, local_slots, local_count);
  if (round) cmlc_round_finish(a->rendezvous, round);
  return st;
}

static size_t cmlc_mpi_co_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options) {
  (void)node, (void)options;
  return cmlc_size_of(module->num_devices > 1 ? module->num_devices : 1, sizeof(int32_t));
}

bool cmlc_mpi_collective_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)options;
  memset(out, 0, sizeof *out);
  out->in_place_input = -1;
  if (node->input_count < 1) return false;
  for (uint32_t i = 0; i < node->input_count; ++i) {
    const cml_dtype_t d = module->values[node->inputs[i]].shape.dtype;
    if (cmlc_mpi_co_esize(d) == 0) return false;
    if ((node->op == CML_OP_ALL_REDUCE || node->op == CML_OP_REDUCE_SCATTER) &&
        !cml__mpi_can_reduce(d, node->attrs->reduce_type)) {
      return false;
    }
  }
  switch (node->op) {
    case CML_OP_ALL_REDUCE:
    case CML_OP_REDUCE_SCATTER:
    case CML_OP_ALL_GATHER:
    case CML_OP_ALL_TO_ALL:
    case CML_OP_COLLECTIVE_BROADCAST:
    case CML_OP_COLLECTIVE_PERMUTE:
      out->run = cmlc_mpi_co_run;
      out->scratch = cmlc_mpi_co_scratch;
      return true;
    default:
      return false;
  }
}
