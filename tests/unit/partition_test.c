// SPDX-License-Identifier: Apache-2.0
// tests/unit/partition_test.c: the AutoSharding partitioner (src/distributed/partition.c): the
// SPMD modules it makes for data parallel, Megatron and 2-D patterns (per-device shapes, the
// collectives inserted), resharding, the replicated fallback and the errors it returns.
#include "builder_fake_backend.h"
#include "cml/cml.h"
#include "cml/distributed.h"
#include "cml/fused.h"
#include "distributed/partition.h"
#include "test.h"

// A fake backend with 8 devices that accepts SPMD and AutoSharding modules.
static fake_backend_t* pt_backend(void) {
  fake_backend_t* fb = fake_backend_new();
  if (!fb) return NULL;
  fb->base.device_count = 8;
  fb->base.capabilities.distributions = (1u << CML_DISTRIBUTION_NONE) |
                                        (1u << CML_DISTRIBUTION_SPMD) |
                                        (1u << CML_DISTRIBUTION_AUTO_SHARDING);
  return fb;
}

static cml_shape_t pt_shape(int32_t rank, int64_t d0, int64_t d1) {
  int64_t dims[2] = {d0, d1};
  return cml_shape_make(CML_DTYPE_F32, rank, dims);
}

// A 1-D or 2-D mesh.
static cml_mesh_t* pt_mesh(const char* a0, int64_t s0, const char* a1, int64_t s1) {
  const char* names[2] = {a0, a1};
  int64_t sizes[2] = {s0, s1};
  cml_mesh_t* mesh = NULL;
  if (cml_mesh_create("mesh", names, sizes, a1 ? 2 : 1, &mesh) != CML_OK) return NULL;
  return mesh;
}

// A sharding of rank 2 ("" or NULL: that axis replicated).
static cml_sharding_t pt_spec(const cml_mesh_t* mesh, const char* d0, const char* d1) {
  const char* per_axis[2] = {d0, d1};
  cml_sharding_t s;
  memset(&s, 0, sizeof s);
  cml_status_t st = cml_sharding_make(mesh, per_axis, 2, &s);
  if (st != CML_OK) {
    fprintf(stderr, "cml_sharding_make: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return s;
}

typedef struct pt_counts_t {
  int all_reduce, all_gather, dynamic_slice, replica_id, other_collectives, dots;
} pt_counts_t;

static pt_counts_t pt_count(const cml_module_t* m) {
  pt_counts_t c;
  memset(&c, 0, sizeof c);
  const cml_ir_function_t* f = &m->functions[0];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    switch (n->op) {
      case CML_OP_ALL_REDUCE:
        c.all_reduce++;
        break;
      case CML_OP_ALL_GATHER:
        c.all_gather++;
        break;
      case CML_OP_DYNAMIC_SLICE:
        c.dynamic_slice++;
        break;
      case CML_OP_REPLICA_ID:
        c.replica_id++;
        break;
      case CML_OP_DOT:
      case CML_OP_DOT_GENERAL:
        c.dots++;
        break;
      default:
        if (cml_op_group(n->op) == CML_OPG_COLLECTIVE) c.other_collectives++;
        break;
    }
  }
  return c;
}

static const cml_ir_node_t* pt_first(const cml_module_t* m, cml_op_t op) {
  const cml_ir_function_t* f = &m->functions[0];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (n->op == op) return n;
  }
  return NULL;
}

static const cml_shape_t* pt_param(const cml_module_t* m, uint32_t i) {
  return &m->values[m->functions[0].params[i]].shape;
}

static const cml_shape_t* pt_output(const cml_module_t* m, uint32_t i) {
  return &m->values[m->functions[0].outputs[i]].shape;
}

//===--- a reference SPMD interpreter (values, independent of any backend) ---===//
// Runs main of a module on |n| devices in lockstep, in double precision, for the ops these
// tests use (collectives included). Enough to check that a partitioned module computes what
// the global one does.

typedef struct pt_tensor_t {
  cml_shape_t shape;
  double* data;
} pt_tensor_t;

static int64_t pt_count_of(const cml_shape_t* s) {
  int64_t c = 1;
  for (int d = 0; d < s->rank; ++d) c *= s->dims[d];
  return c;
}

static void pt_unravel(const cml_shape_t* s, int64_t flat, int64_t* idx) {
  for (int d = s->rank - 1; d >= 0; --d) {
    idx[d] = flat % s->dims[d];
    flat /= s->dims[d];
  }
}

static int64_t pt_ravel(const cml_shape_t* s, const int64_t* idx) {
  int64_t flat = 0;
  for (int d = 0; d < s->rank; ++d) flat = flat * s->dims[d] + idx[d];
  return flat;
}

static double pt_binary(cml_op_t op, double a, double b) {
  switch (op) {
    case CML_OP_ADD:
      return a + b;
    case CML_OP_SUB:
      return a - b;
    case CML_OP_MUL:
      return a * b;
    case CML_OP_DIV:
      return a / b;
    case CML_OP_MAX:
      return a > b ? a : b;
    case CML_OP_MIN:
      return a < b ? a : b;
    default:
      return NAN;
  }
}

static double pt_reduce2(cml_reduce_type_t t, double a, double b) {
  switch (t) {
    case CML_REDUCE_SUM:
      return a + b;
    case CML_REDUCE_PRODUCT:
      return a * b;
    case CML_REDUCE_MAX:
      return a > b ? a : b;
    default:
      return a < b ? a : b;
  }
}

// Evaluates node |n| on device |d| (non-collective ops); false for an op it does not know.
static bool pt_eval(const cml_module_t* m, const cml_ir_node_t* n, pt_tensor_t* vals, int d,
                    int n_dev) {
  (void)n_dev;
  pt_tensor_t* out = &vals[n->first_output];
  out->shape = m->values[n->first_output].shape;
  int64_t count = pt_count_of(&out->shape);
  out->data = (double*)calloc((size_t)(count ? count : 1), sizeof(double));
  const pt_tensor_t* x = n->input_count ? &vals[n->inputs[0]] : NULL;
  const cml_ir_attrs_t* a = n->attrs;
  int64_t idx[CML_MAX_RANK], j[CML_MAX_RANK];
  switch (n->op) {
    case CML_OP_CONSTANT:
      for (int64_t i = 0; i < count; ++i) {
        if (out->shape.dtype == CML_DTYPE_F32)
          out->data[i] = ((const float*)n->data)[i];
        else if (out->shape.dtype == CML_DTYPE_I32)
          out->data[i] = ((const int32_t*)n->data)[i];
        else
          return false;
      }
      return true;
    case CML_OP_REPLICA_ID:
      out->data[0] = d;
      return true;
    case CML_OP_CONVERT_DTYPE:
    case CML_OP_RESHAPE:
      memcpy(out->data, x->data, (size_t)count * sizeof(double));
      return true;
    case CML_OP_NEG:
    case CML_OP_ABS:
    case CML_OP_TANH:
      for (int64_t i = 0; i < count; ++i) {
        double v = x->data[i];
        out->data[i] = n->op == CML_OP_NEG ? -v : n->op == CML_OP_ABS ? fabs(v) : tanh(v);
      }
      return true;
    case CML_OP_ADD:
    case CML_OP_SUB:
    case CML_OP_MUL:
    case CML_OP_DIV:
    case CML_OP_MAX:
    case CML_OP_MIN: {
      const pt_tensor_t* y = &vals[n->inputs[1]];
      for (int64_t i = 0; i < count; ++i) {
        double u = x->shape.rank ? x->data[i] : x->data[0];
        double v = y->shape.rank ? y->data[i] : y->data[0];
        out->data[i] = pt_binary(n->op, u, v);
      }
      return true;
    }
    case CML_OP_BROADCAST_IN_DIM:
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        for (int k = 0; k < x->shape.rank; ++k) j[k] = x->shape.dims[k] == 1 ? 0 : idx[a->axes[k]];
        out->data[i] = x->data[pt_ravel(&x->shape, j)];
      }
      return true;
    case CML_OP_TRANSPOSE:
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        for (int k = 0; k < out->shape.rank; ++k) j[a->axes[k]] = idx[k];
        out->data[i] = x->data[pt_ravel(&x->shape, j)];
      }
      return true;
    case CML_OP_REDUCE_SUM:
    case CML_OP_REDUCE_MAX: {
      bool first = true;
      int64_t in_count = pt_count_of(&x->shape);
      bool* seen = (bool*)calloc((size_t)(count ? count : 1), 1);
      for (int64_t i = 0; i < in_count; ++i) {
        pt_unravel(&x->shape, i, idx);
        int r = 0;
        for (int k = 0; k < x->shape.rank; ++k) {
          bool red = false;
          for (int q = 0; q < a->axis_count; ++q) red = red || a->axes[q] == k;
          if (!red) j[r++] = idx[k];
        }
        int64_t o = pt_ravel(&out->shape, j);
        double v = x->data[i];
        if (!seen[o]) {
          out->data[o] = v;
          seen[o] = true;
        } else {
          out->data[o] =
              n->op == CML_OP_REDUCE_SUM ? out->data[o] + v : (v > out->data[o] ? v : out->data[o]);
        }
      }
      (void)first;
      free(seen);
      return true;
    }
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL: {
      const cml_dot_config_t* c = &a->u.dot;
      const pt_tensor_t* y = &vals[n->inputs[1]];
      int lk[CML_MAX_RANK] = {0}, rk[CML_MAX_RANK] = {0};
      for (int q = 0; q < c->lhs_batch_count; ++q) lk[c->lhs_batch_axes[q]] = 1;
      for (int q = 0; q < c->rhs_batch_count; ++q) rk[c->rhs_batch_axes[q]] = 1;
      for (int q = 0; q < c->lhs_contracting_count; ++q) lk[c->lhs_contracting_axes[q]] = 2;
      for (int q = 0; q < c->rhs_contracting_count; ++q) rk[c->rhs_contracting_axes[q]] = 2;
      int64_t kc = 1;
      for (int q = 0; q < c->lhs_contracting_count; ++q)
        kc *= x->shape.dims[c->lhs_contracting_axes[q]];
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        int64_t li[CML_MAX_RANK] = {0}, ri[CML_MAX_RANK] = {0};
        int o = 0;
        for (int q = 0; q < c->lhs_batch_count; ++q, ++o) {
          li[c->lhs_batch_axes[q]] = idx[o];
          ri[c->rhs_batch_axes[q]] = idx[o];
        }
        for (int k = 0; k < x->shape.rank; ++k)
          if (lk[k] == 0) li[k] = idx[o++];
        for (int k = 0; k < y->shape.rank; ++k)
          if (rk[k] == 0) ri[k] = idx[o++];
        double sum = 0;
        for (int64_t t = 0; t < kc; ++t) {
          int64_t rem = t;
          for (int q = c->lhs_contracting_count - 1; q >= 0; --q) {
            int64_t dim = x->shape.dims[c->lhs_contracting_axes[q]];
            li[c->lhs_contracting_axes[q]] = rem % dim;
            ri[c->rhs_contracting_axes[q]] = rem % dim;
            rem /= dim;
          }
          sum += x->data[pt_ravel(&x->shape, li)] * y->data[pt_ravel(&y->shape, ri)];
        }
        out->data[i] = sum;
      }
      return true;
    }
    case CML_OP_SLICE:
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        for (int k = 0; k < x->shape.rank; ++k) j[k] = a->starts[k] + idx[k] * a->strides[k];
        out->data[i] = x->data[pt_ravel(&x->shape, j)];
      }
      return true;
    case CML_OP_REVERSE:
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        for (int k = 0; k < x->shape.rank; ++k) j[k] = idx[k];
        for (int q = 0; q < a->axis_count; ++q) {
          j[a->axes[q]] = out->shape.dims[a->axes[q]] - 1 - idx[a->axes[q]];
        }
        out->data[i] = x->data[pt_ravel(&x->shape, j)];
      }
      return true;
    case CML_OP_CONCATENATE:
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        int64_t pos = idx[a->axis];
        uint32_t q = 0;
        while (pos >= vals[n->inputs[q]].shape.dims[a->axis]) {
          pos -= vals[n->inputs[q]].shape.dims[a->axis];
          ++q;
        }
        const pt_tensor_t* src = &vals[n->inputs[q]];
        idx[a->axis] = pos;
        out->data[i] = src->data[pt_ravel(&src->shape, idx)];
      }
      return true;
    case CML_OP_DYNAMIC_SLICE: {
      int64_t start[CML_MAX_RANK];
      for (int k = 0; k < x->shape.rank; ++k) {
        int64_t s0 = (int64_t)vals[n->inputs[1 + k]].data[0];
        int64_t hi = x->shape.dims[k] - out->shape.dims[k];
        start[k] = s0 < 0 ? 0 : s0 > hi ? hi : s0;
      }
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        for (int k = 0; k < x->shape.rank; ++k) j[k] = idx[k] + start[k];
        out->data[i] = x->data[pt_ravel(&x->shape, j)];
      }
      return true;
    }
    case CML_OP_REDUCE_WINDOW:  // max, no padding or dilation
      for (int64_t i = 0; i < count; ++i) {
        pt_unravel(&out->shape, i, idx);
        double best = -INFINITY;
        int64_t wc = 1;
        for (int k = 0; k < x->shape.rank; ++k) wc *= a->u.window.window_dims[k];
        for (int64_t w = 0; w < wc; ++w) {
          int64_t rem = w;
          for (int k = x->shape.rank - 1; k >= 0; --k) {
            j[k] = idx[k] * a->u.window.strides[k] + rem % a->u.window.window_dims[k];
            rem /= a->u.window.window_dims[k];
          }
          double v = x->data[pt_ravel(&x->shape, j)];
          best = v > best ? v : best;
        }
        out->data[i] = best;
      }
      return true;
    default:
      return false;
  }
}

// A collective over all devices at once.
static bool pt_eval_collective(const cml_module_t* m, const cml_ir_node_t* n, pt_tensor_t** vals,
                               int n_dev) {
  const cml_ir_collective_attrs_t* c = &n->attrs->collective;
  for (int g = 0; g < c->group_count; ++g) {
    for (int k = 0; k < c->group_size; ++k) {
      int d = c->groups[g * c->group_size + k];
      pt_tensor_t* out = &vals[d][n->first_output];
      out->shape = m->values[n->first_output].shape;
      int64_t count = pt_count_of(&out->shape);
      out->data = (double*)calloc((size_t)(count ? count : 1), sizeof(double));
      if (n->op == CML_OP_ALL_REDUCE) {
        for (int64_t i = 0; i < count; ++i) {
          double acc = vals[c->groups[g * c->group_size]][n->inputs[0]].data[i];
          for (int q = 1; q < c->group_size; ++q) {
            acc = pt_reduce2(n->attrs->reduce_type, acc,
                             vals[c->groups[g * c->group_size + q]][n->inputs[0]].data[i]);
          }
          out->data[i] = acc;
        }
      } else if (n->op == CML_OP_ALL_GATHER) {
        int64_t axis = n->attrs->axis;
        int64_t idx[CML_MAX_RANK];
        for (int64_t i = 0; i < count; ++i) {
          pt_unravel(&out->shape, i, idx);
          const pt_tensor_t* in = &vals[c->groups[g * c->group_size]][n->inputs[0]];
          int64_t part = in->shape.dims[axis];
          int src = c->groups[g * c->group_size + idx[axis] / part];
          in = &vals[src][n->inputs[0]];
          idx[axis] %= part;
          out->data[i] = in->data[pt_ravel(&in->shape, idx)];
        }
      } else if (n->op == CML_OP_REDUCE_SCATTER) {
        int64_t axis = n->attrs->axis;
        int64_t idx[CML_MAX_RANK];
        const pt_tensor_t* in0 = &vals[c->groups[g * c->group_size]][n->inputs[0]];
        for (int64_t i = 0; i < count; ++i) {
          pt_unravel(&out->shape, i, idx);
          idx[axis] += k * out->shape.dims[axis];
          int64_t src = pt_ravel(&in0->shape, idx);
          double acc = 0;
          for (int q = 0; q < c->group_size; ++q) {
            acc += vals[c->groups[g * c->group_size + q]][n->inputs[0]].data[src];
          }
          out->data[i] = acc;
        }
      } else {
        return false;
      }
    }
  }
  (void)n_dev;
  return true;
}

// Runs main of |m| on |n_dev| devices; inputs[d][i] is parameter i of device d (copied).
// Returns outs[d][k] (caller frees with pt_free_outs), or NULL for an unknown op.
static double*** pt_run(const cml_module_t* m, int n_dev, double*** inputs) {
  pt_tensor_t** vals = (pt_tensor_t**)calloc((size_t)n_dev, sizeof *vals);
  const cml_ir_function_t* f = &m->functions[0];
  bool ok = true;
  for (int d = 0; d < n_dev; ++d) {
    vals[d] = (pt_tensor_t*)calloc(m->value_count, sizeof(pt_tensor_t));
    for (uint32_t i = 0; i < f->param_count; ++i) {
      pt_tensor_t* t = &vals[d][f->params[i]];
      t->shape = m->values[f->params[i]].shape;
      int64_t count = pt_count_of(&t->shape);
      t->data = (double*)calloc((size_t)(count ? count : 1), sizeof(double));
      memcpy(t->data, inputs[d][i], (size_t)count * sizeof(double));
    }
  }
  for (uint32_t i = 0; ok && i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (n->op == CML_OP_PARAMETER) continue;
    if (n->op == CML_OP_ALL_REDUCE || n->op == CML_OP_ALL_GATHER ||
        n->op == CML_OP_REDUCE_SCATTER) {
      ok = pt_eval_collective(m, n, vals, n_dev);
      if (!ok) fprintf(stderr, "pt_run: collective %s unknown\n", cml_op_name(n->op));
      continue;
    }
    for (int d = 0; ok && d < n_dev; ++d) {
      ok = pt_eval(m, n, vals[d], d, n_dev);
      if (!ok) fprintf(stderr, "pt_run: op %s unknown\n", cml_op_name(n->op));
    }
  }
  double*** outs = NULL;
  if (ok) {
    outs = (double***)calloc((size_t)n_dev, sizeof *outs);
    for (int d = 0; d < n_dev; ++d) {
      outs[d] = (double**)calloc(f->output_count, sizeof(double*));
      for (uint32_t k = 0; k < f->output_count; ++k) {
        const pt_tensor_t* t = &vals[d][f->outputs[k]];
        int64_t count = pt_count_of(&t->shape);
        outs[d][k] = (double*)calloc((size_t)(count ? count : 1), sizeof(double));
        memcpy(outs[d][k], t->data, (size_t)count * sizeof(double));
      }
    }
  }
  for (int d = 0; d < n_dev; ++d) {
    for (uint32_t v = 0; v < m->value_count; ++v) free(vals[d][v].data);
    free(vals[d]);
  }
  free(vals);
  return outs;
}

static void pt_free_outs(double*** outs, int n_dev, uint32_t count) {
  if (!outs) return;
  for (int d = 0; d < n_dev; ++d) {
    for (uint32_t k = 0; k < count; ++k) free(outs[d][k]);
    free(outs[d]);
  }
  free(outs);
}

// The block of |global| (logical shape |gs|) that mesh position |pos| holds under |sh| (NULL or
// zeroed: all of it), written to |shard| (shape |ls|).
static void pt_extract(const cml_sharding_t* sh, const cml_shape_t* gs, const cml_shape_t* ls,
                       int64_t pos, const double* global, double* shard) {
  int64_t off[CML_MAX_RANK] = {0};
  if (sh && sh->mesh) {
    cml_status_t st = cml_sharding_shard_offsets(sh, gs, pos, off);
    if (st != CML_OK) cml_status_free(st);
  }
  int64_t idx[CML_MAX_RANK];
  for (int64_t i = 0; i < pt_count_of(ls); ++i) {
    pt_unravel(ls, i, idx);
    for (int d = 0; d < gs->rank; ++d) idx[d] += off[d];
    shard[i] = global[pt_ravel(gs, idx)];
  }
}

// The mesh position device slot |slot| holds under |mesh|'s device assignment.
static int64_t pt_mesh_position(const cml_mesh_t* mesh, int slot) {
  const int32_t* a = cml_mesh_device_assignment(mesh);
  if (!a) return slot;
  for (int64_t k = 0; k < cml_mesh_device_count(mesh); ++k) {
    if (a[k] == slot) return k;
  }
  return -1;
}

// The same for the module's first mesh.
static int64_t pt_position(const cml_module_t* global, int slot) {
  return global->mesh_count ? pt_mesh_position(global->meshes[0], slot) : slot;
}

// Runs the global module on one device and the partitioned one on its devices, with inputs
// i*0.37 - 1.1 (mod) per parameter, and checks that every device's output shard matches the
// global output's block. Returns the largest difference.
static double pt_compare(const cml_module_t* global, const cml_module_t* spmd) {
  const cml_ir_function_t* gf = &global->functions[0];
  int n_dev = spmd->num_devices;
  double** ginputs = (double**)calloc(gf->param_count, sizeof(double*));
  double*** dinputs = (double***)calloc((size_t)n_dev, sizeof(double**));
  for (uint32_t i = 0; i < gf->param_count; ++i) {
    const cml_shape_t* gs = &global->values[gf->params[i]].shape;
    int64_t count = pt_count_of(gs);
    ginputs[i] = (double*)calloc((size_t)(count ? count : 1), sizeof(double));
    for (int64_t e = 0; e < count; ++e) {
      ginputs[i][e] = (double)((e * 37 + (int64_t)i * 11) % 23) * 0.1 - 1.1;
    }
  }
  for (int d = 0; d < n_dev; ++d) {
    dinputs[d] = (double**)calloc(gf->param_count, sizeof(double*));
    for (uint32_t i = 0; i < gf->param_count; ++i) {
      const cml_shape_t* ls = &spmd->values[spmd->functions[0].params[i]].shape;
      dinputs[d][i] =
          (double*)calloc((size_t)(pt_count_of(ls) ? pt_count_of(ls) : 1), sizeof(double));
      const cml_sharding_t* sh = global->param_shardings ? &global->param_shardings[i] : NULL;
      pt_extract(sh, &global->values[gf->params[i]].shape, ls, pt_position(global, d), ginputs[i],
                 dinputs[d][i]);
    }
  }
  double*** gout = pt_run(global, 1, &ginputs);
  double*** dout = pt_run(spmd, n_dev, dinputs);
  double worst = (gout && dout) ? 0.0 : INFINITY;
  for (uint32_t k = 0; gout && dout && k < gf->output_count; ++k) {
    const cml_shape_t* gs = &global->values[gf->outputs[k]].shape;
    const cml_shape_t* ls = &spmd->values[spmd->functions[0].outputs[k]].shape;
    double* want = (double*)calloc((size_t)(pt_count_of(ls) ? pt_count_of(ls) : 1), sizeof(double));
    const cml_sharding_t* sh = global->output_shardings ? &global->output_shardings[k] : NULL;
    for (int d = 0; d < n_dev; ++d) {
      pt_extract(sh, gs, ls, pt_position(global, d), gout[0][k], want);
      for (int64_t e = 0; e < pt_count_of(ls); ++e) {
        double diff = fabs(want[e] - dout[d][k][e]);
        if (!(diff <= worst)) worst = diff;
      }
    }
    free(want);
  }
  pt_free_outs(gout, 1, gf->output_count);
  pt_free_outs(dout, n_dev, gf->output_count);
  for (uint32_t i = 0; i < gf->param_count; ++i) free(ginputs[i]);
  free(ginputs);
  for (int d = 0; d < n_dev; ++d) {
    for (uint32_t i = 0; i < gf->param_count; ++i) free(dinputs[d][i]);
    free(dinputs[d]);
  }
  free(dinputs);
  return worst;
}

// Compiles the global module on the fake backend (which keeps it) and partitions it.
static cml_status_t pt_partition(fake_backend_t* fb, cml_builder_t* b, cml_module_t** out) {
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_compile(b, &exe);
  cml_executable_release(exe);
  if (st != CML_OK) return st;
  return cml__partition_module(fb->module, &fb->base, out);
}

#define PT_SETUP(mesh_expr)                                  \
  fake_backend_t* fb = pt_backend();                         \
  ASSERT_TRUE(fb != NULL);                                   \
  cml_mesh_t* mesh = mesh_expr;                              \
  ASSERT_TRUE(mesh != NULL);                                 \
  cml_builder_t* b = NULL;                                   \
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "pt", &b)); \
  const cml_mesh_t* meshes[1] = {mesh};                      \
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, meshes, 1)); \
  cml_function_t* f = cml_builder_main(b);                   \
  cml_module_t* spmd = NULL

#define PT_TEARDOWN()       \
  cml_module_release(spmd); \
  cml_builder_destroy(b);   \
  cml_mesh_destroy(mesh);   \
  cml_backend_release(&fb->base)

// Data parallel: x and t batch-sharded, w replicated. The activations stay sharded, the loss
// (a mean over the batch) and the weight gradient (a contraction over the batch) are partial
// sums: one AllReduce each, no AllGather.
TEST(data_parallel) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_sharding_t rep;
  cml_sharding_replicated(mesh, &rep);
  cml_shape_t xs = pt_shape(2, 8, 3), ws = pt_shape(2, 3, 2), ts = pt_shape(2, 8, 2);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w = cml_parameter_sharded(f, "w", &ws, &rep);
  cml_value_t t = cml_parameter_sharded(f, "t", &ts, &batch);
  cml_shape_t bs = pt_shape(1, 2, 0);
  cml_value_t bias = cml_parameter_sharded(f, "b", &bs, NULL);
  int64_t ydims[2] = {8, 2}, baxes[1] = {1};
  cml_value_t y =
      cml_op_add(f, cml_op_dot(f, x, w), cml_op_broadcast_in_dim(f, bias, ydims, 2, baxes, 1));
  cml_value_t d = cml_op_sub(f, y, t);
  cml_value_t sq = cml_op_mul(f, d, d);
  cml_value_t sum = cml_op_reduce_sum(f, sq, NULL, 0);
  cml_value_t loss = cml_op_div(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, 16.0));
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  cml_value_t g = cml_op_dot_general(f, x, d, &c);  // [3, 2]
  cml_value_t outs[3] = {y, loss, g};
  cml_sharding_t out_specs[3] = {batch, rep, rep};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 3, out_specs));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  ASSERT_EQ_INT(spmd->distribution, CML_DISTRIBUTION_SPMD);
  ASSERT_EQ_INT(spmd->num_devices, 4);
  ASSERT_EQ_INT(pt_param(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_param(spmd, 0)->dims[1], 3);
  ASSERT_EQ_INT(pt_param(spmd, 1)->dims[0], 3);
  ASSERT_EQ_INT(pt_param(spmd, 2)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 1)->rank, 0);
  ASSERT_EQ_INT(pt_output(spmd, 2)->dims[0], 3);
  ASSERT_EQ_INT(pt_output(spmd, 2)->dims[1], 2);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_reduce, 2);
  ASSERT_EQ_INT(k.all_gather, 0);
  ASSERT_EQ_INT(k.dynamic_slice, 0);
  ASSERT_EQ_INT(k.other_collectives, 0);
  const cml_ir_node_t* ar = pt_first(spmd, CML_OP_ALL_REDUCE);
  ASSERT_EQ_INT(ar->attrs->reduce_type, CML_REDUCE_SUM);
  ASSERT_EQ_INT(ar->attrs->collective.group_count, 1);
  ASSERT_EQ_INT(ar->attrs->collective.group_size, 4);
  PT_TEARDOWN();
}

// Megatron MLP: W1 column-sharded, W2 row-sharded, relu between, bias after: exactly one
// AllReduce and nothing else.
TEST(megatron_mlp) {
  PT_SETUP(pt_mesh("model", 2, NULL, 0));
  cml_sharding_t col = pt_spec(mesh, NULL, "model"), row = pt_spec(mesh, "model", NULL);
  cml_shape_t xs = pt_shape(2, 2, 4), w1s = pt_shape(2, 4, 6), w2s = pt_shape(2, 6, 4);
  cml_shape_t bs = pt_shape(1, 4, 0);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, NULL);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &col);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &row);
  cml_value_t bias = cml_parameter_sharded(f, "b", &bs, NULL);
  cml_value_t h = cml_op_dot(f, x, w1);
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t y = cml_op_dot(f, h, w2);
  int64_t dims[2] = {2, 4}, axes[1] = {1};
  y = cml_op_add(f, y, cml_op_broadcast_in_dim(f, bias, dims, 2, axes, 1));
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &y, 1, NULL));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  ASSERT_EQ_INT(pt_param(spmd, 1)->dims[0], 4);
  ASSERT_EQ_INT(pt_param(spmd, 1)->dims[1], 3);
  ASSERT_EQ_INT(pt_param(spmd, 2)->dims[0], 3);
  ASSERT_EQ_INT(pt_param(spmd, 2)->dims[1], 4);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 4);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_reduce, 1);
  ASSERT_EQ_INT(k.all_gather, 0);
  ASSERT_EQ_INT(k.dynamic_slice, 0);
  ASSERT_EQ_INT(k.dots, 2);
  PT_TEARDOWN();
}

// A partial sum returned split along a dimension over the same axis: one ReduceScatter (each
// device keeps its rows of the sum), no AllReduce, no slice.
TEST(partial_to_split_reduce_scatter) {
  PT_SETUP(pt_mesh("model", 2, NULL, 0));
  cml_sharding_t col = pt_spec(mesh, NULL, "model"), row = pt_spec(mesh, "model", NULL);
  cml_shape_t xs = pt_shape(2, 4, 4), w1s = pt_shape(2, 4, 6), w2s = pt_shape(2, 6, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, NULL);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &col);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &row);
  cml_value_t y = cml_op_dot(f, cml_op_tanh(f, cml_op_dot(f, x, w1)), w2);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &y, 1, &row));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_reduce, 0);
  ASSERT_EQ_INT(k.dynamic_slice, 0);
  ASSERT_EQ_INT(k.other_collectives, 1);
  ASSERT_TRUE(pt_first(spmd, CML_OP_REDUCE_SCATTER) != NULL);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  PT_TEARDOWN();
}

// Partial sums through elementwise ops: kept through a + b; summed first for a * b (both
// partial), a + c (c whole, counted once) and a * c, a / c with c a parameter (it may be inf
// or 0: 0 * inf and 0 / 0 on a device whose term is 0 would make the sum NaN).
TEST(partial_linearity) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t s = pt_shape(2, 8, 3), cs = pt_shape(1, 3, 0);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &batch);
  cml_value_t y = cml_parameter_sharded(f, "y", &s, &batch);
  cml_value_t c = cml_parameter_sharded(f, "c", &cs, NULL);
  int64_t axis0[1] = {0};
  cml_value_t a = cml_op_reduce_sum(f, x, axis0, 1);  // partial over data
  cml_value_t bb = cml_op_reduce_sum(f, y, axis0, 1);
  cml_value_t outs[5] = {cml_op_add(f, a, bb), cml_op_mul(f, a, bb), cml_op_mul(f, a, c),
                         cml_op_div(f, a, c), cml_op_add(f, a, c)};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 5, NULL));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  // a + b: one AllReduce at the result; the others share the reductions of a and b (made
  // once).
  ASSERT_EQ_INT(pt_count(spmd).all_reduce, 3);
  PT_TEARDOWN();
}

// Scaling a partial sum by a constant keeps it pending (one AllReduce at the result) when every
// term stays as finite as it was and keeps its sign: a factor in (0, 1] (the mean's 1/n, also
// through a broadcast) or a divisor in [1, max]. A factor above 1, a divisor below 1 (a term
// may overflow where the sum does not), an inf or NaN constant, and a negative factor or
// divisor or a factor of -0 (a sum that cancels to +0 would come out +0 instead of -0), sum
// first; so does a float Neg. Integer products distribute over sums; integer quotients do not
// (sum(1, 1, 1, 1) / 2 = 2, but each term / 2 = 0).
TEST(partial_scaled_by_constants) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t s = pt_shape(2, 8, 3);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){8, 3});
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &batch);
  cml_value_t xi = cml_parameter_sharded(f, "xi", &is, &batch);
  int64_t axis0[1] = {0}, dims3[1] = {3};
  cml_value_t a = cml_op_reduce_sum(f, x, axis0, 1);
  cml_value_t ai = cml_op_reduce_sum(f, xi, axis0, 1);
  const float third[3] = {0.25f, 1.0f, 0.5f}, signs[3] = {0.25f, -1.0f, 0.5f};
  cml_shape_t v3 = pt_shape(1, 3, 0);
  cml_value_t scaled[4] = {
      cml_op_mul(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.125)),
      cml_op_div(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, 16.0)),
      cml_op_mul(f,
                 cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5), dims3,
                                         1, NULL, 0),
                 a),
      cml_op_mul(f, a, cml_constant(f, &v3, third))};
  cml_value_t summed[9] = {
      cml_op_mul(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, 4.0)),
      cml_op_div(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5)),
      cml_op_mul(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, INFINITY)),
      cml_op_div(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, NAN)),
      cml_op_convert_dtype(f, cml_op_div(f, ai, cml_constant_scalar_f64(f, CML_DTYPE_I32, 2)),
                           CML_DTYPE_F32),
      cml_op_div(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, -16.0)),
      cml_op_mul(f, a, cml_constant(f, &v3, signs)),
      cml_op_mul(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, -0.0)),
      cml_op_neg(f, a)};
  cml_value_t outs[14];
  for (int i = 0; i < 4; ++i) outs[i] = scaled[i];
  for (int i = 0; i < 9; ++i) outs[4 + i] = summed[i];
  outs[13] = cml_op_convert_dtype(
      f, cml_op_mul(f, ai, cml_constant_scalar_f64(f, CML_DTYPE_I32, 3)), CML_DTYPE_F32);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 14, NULL));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  // Only the integer product stays a pending sum (an AllReduce at its result); every float
  // factor or divisor, even in (0, 1] or [1, max], sums first (a sum can overflow where the
  // scaled terms do not): the float ops share one AllReduce of a, the integer quotient one of ai.
  ASSERT_EQ_INT(pt_count(spmd).all_reduce, 3);
  PT_TEARDOWN();
}

// 2-D mesh (data x model): batch-sharded input through the Megatron pair; the AllReduce runs
// over the model axis only (groups {0,1} and {2,3}), the result stays batch-sharded.
TEST(mesh_2d_data_model) {
  PT_SETUP(pt_mesh("data", 2, "model", 2));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_sharding_t col = pt_spec(mesh, NULL, "model"), row = pt_spec(mesh, "model", NULL);
  cml_shape_t xs = pt_shape(2, 8, 4), w1s = pt_shape(2, 4, 6), w2s = pt_shape(2, 6, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &col);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &row);
  cml_value_t h = cml_op_tanh(f, cml_op_dot(f, x, w1));
  cml_value_t y = cml_op_dot(f, h, w2);
  cml_value_t loss = cml_op_reduce_sum(f, y, NULL, 0);
  cml_value_t outs[2] = {y, loss};
  cml_sharding_t specs[2];
  specs[0] = batch;
  memset(&specs[1], 0, sizeof specs[1]);  // zeroed: replicated
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 2, specs));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  ASSERT_EQ_INT(spmd->num_devices, 4);
  ASSERT_EQ_INT(pt_param(spmd, 0)->dims[0], 4);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 4);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 4);
  pt_counts_t k = pt_count(spmd);
  // y: one AllReduce over model; loss: reduced from y (partial over data) -> one more.
  ASSERT_EQ_INT(k.all_reduce, 2);
  ASSERT_EQ_INT(k.all_gather, 0);
  const cml_ir_node_t* ar = pt_first(spmd, CML_OP_ALL_REDUCE);
  ASSERT_EQ_INT(ar->attrs->collective.group_count, 2);
  ASSERT_EQ_INT(ar->attrs->collective.group_size, 2);
  ASSERT_EQ_INT(ar->attrs->collective.groups[0], 0);
  ASSERT_EQ_INT(ar->attrs->collective.groups[1], 1);
  ASSERT_EQ_INT(ar->attrs->collective.groups[2], 2);
  ASSERT_EQ_INT(ar->attrs->collective.groups[3], 3);
  PT_TEARDOWN();
}

// A mesh with a logical device assignment: mesh position k runs on slot assignment[k], so the
// groups and the slice tables follow it (values checked).
TEST(mesh_device_assignment) {
  PT_SETUP(pt_mesh("data", 2, "model", 2));
  (void)f;
  cml_builder_destroy(b);
  const int32_t order[4] = {3, 1, 0, 2};
  ASSERT_STATUS_OK(cml_mesh_set_device_assignment(mesh, order, 4));
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "pt", &b));
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, meshes, 1));
  f = cml_builder_main(b);
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_sharding_t col = pt_spec(mesh, NULL, "model"), row = pt_spec(mesh, "model", NULL);
  cml_sharding_t both = pt_spec(mesh, "model", "data");
  cml_shape_t xs = pt_shape(2, 8, 4), w1s = pt_shape(2, 4, 6), w2s = pt_shape(2, 6, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &col);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &row);
  cml_value_t r = cml_parameter_sharded(f, "r", &xs, NULL);
  cml_value_t y = cml_op_dot(f, cml_op_tanh(f, cml_op_dot(f, x, w1)), w2);
  cml_value_t outs[3] = {y, cml_op_neg(f, r), cml_op_abs(f, x)};
  cml_sharding_t specs[3] = {batch, both, both};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 3, specs));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  const cml_ir_node_t* ar = pt_first(spmd, CML_OP_ALL_REDUCE);
  ASSERT_TRUE(ar != NULL);
  // model groups over positions {0,1} and {2,3} = slots {3,1} and {0,2}.
  ASSERT_EQ_INT(ar->attrs->collective.groups[0], 3);
  ASSERT_EQ_INT(ar->attrs->collective.groups[1], 1);
  ASSERT_EQ_INT(ar->attrs->collective.groups[2], 0);
  ASSERT_EQ_INT(ar->attrs->collective.groups[3], 2);
  PT_TEARDOWN();
}

// Elementwise operands split on different dimensions over different axes: the result takes
// both splits, each operand is sliced locally, nothing is gathered.
TEST(elementwise_merges_splits) {
  PT_SETUP(pt_mesh("data", 2, "model", 2));
  cml_sharding_t rows = pt_spec(mesh, "data", NULL), cols = pt_spec(mesh, NULL, "model");
  cml_sharding_t both = pt_spec(mesh, "data", "model");
  cml_shape_t s = pt_shape(2, 4, 6);
  cml_value_t a = cml_parameter_sharded(f, "a", &s, &rows);
  cml_value_t c = cml_parameter_sharded(f, "c", &s, &cols);
  cml_value_t y = cml_op_mul(f, a, c);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &y, 1, &both));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather + k.all_reduce + k.other_collectives, 0);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 3);
  PT_TEARDOWN();
}

// Random programs (elementwise, transpose, reductions, DotGeneral, reshape, broadcast) over
// random shardings on a 2 x 2 mesh: every partition must compute the global values.
typedef struct pt_rng_t {
  uint64_t state;
} pt_rng_t;

static uint32_t pt_rand(pt_rng_t* r, uint32_t n) {
  r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)((r->state >> 33) % n);
}

// A random valid sharding of |shape| on the data x model mesh.
static cml_sharding_t pt_random_spec(pt_rng_t* r, const cml_mesh_t* mesh,
                                     const cml_shape_t* shape) {
  cml_sharding_t sh;
  cml_sharding_replicated(mesh, &sh);
  sh.rank = shape->rank;
  bool used[2] = {false, false};
  for (int d = 0; d < shape->rank; ++d) {
    sh.axis_count[d] = 0;
    uint32_t pick = pt_rand(r, 5);  // 0, 1: whole; 2: data; 3: model; 4: data, model
    int8_t axes[2];
    int count = 0;
    if (pick == 2 || pick == 4) axes[count++] = 0;
    if (pick == 3 || pick == 4) axes[count++] = 1;
    int64_t k = 1;
    bool ok = true;
    for (int i = 0; i < count; ++i) {
      ok = ok && !used[axes[i]];
      k *= 2;
    }
    if (!ok || shape->dims[d] % k != 0) continue;
    for (int i = 0; i < count; ++i) {
      used[axes[i]] = true;
      sh.mesh_axes[d][i] = axes[i];
    }
    sh.axis_count[d] = (int8_t)count;
  }
  return sh;
}

static int64_t pt_random_dim(pt_rng_t* r) { return pt_rand(r, 2) ? 4 : 2; }

TEST(random_programs) {
  pt_rng_t rng = {12345};
  int checked = 0;
  for (int round = 0; round < 150; ++round) {
    PT_SETUP(pt_mesh("data", 2, "model", 2));
    cml_value_t vals[40];
    cml_shape_t shapes[40];
    int count = 0;
    for (int i = 0; i < 3; ++i) {
      int32_t rank = 1 + (int32_t)pt_rand(&rng, 3);
      int64_t dims[3] = {pt_random_dim(&rng), pt_random_dim(&rng), pt_random_dim(&rng)};
      shapes[count] = cml_shape_make(CML_DTYPE_F32, rank, dims);
      cml_sharding_t sh = pt_random_spec(&rng, mesh, &shapes[count]);
      vals[count] = cml_parameter_sharded(f, NULL, &shapes[count], &sh);
      ++count;
    }
    for (int step = 0; step < 12 && count < 40; ++step) {
      int a = (int)pt_rand(&rng, (uint32_t)count);
      cml_shape_t as = shapes[a];
      cml_value_t y = CML_VALUE_INVALID;
      switch (pt_rand(&rng, 11)) {
        case 8:  // slice the first half (or a stride-2 pick) of a dim
          if (as.rank >= 1) {
            int64_t st0[3] = {0, 0, 0}, lim[3] = {0, 0, 0}, str[3] = {1, 1, 1};
            for (int d = 0; d < as.rank; ++d) lim[d] = as.dims[d];
            int d0 = (int)pt_rand(&rng, (uint32_t)as.rank);
            if (pt_rand(&rng, 2)) {
              lim[d0] = as.dims[d0] / 2;
            } else {
              str[d0] = 2;
            }
            y = cml_op_slice(f, vals[a], st0, lim, str, as.rank);
          }
          break;
        case 9:  // concatenate with a same-shape value along a random dim
          if (as.rank >= 1) {
            int other = a;
            for (int t = 0; t < count; ++t) {
              if (cml_shape_equal(&shapes[t], &as) && pt_rand(&rng, 2)) other = t;
            }
            cml_value_t ops2[2] = {vals[a], vals[other]};
            y = cml_op_concatenate(f, (int64_t)pt_rand(&rng, (uint32_t)as.rank), ops2, 2);
          }
          break;
        case 10:
          if (as.rank >= 1) {
            int64_t axis = (int64_t)pt_rand(&rng, (uint32_t)as.rank);
            y = cml_op_reverse(f, vals[a], &axis, 1);
          }
          break;
        case 0:
          y = pt_rand(&rng, 2) ? cml_op_tanh(f, vals[a]) : cml_op_neg(f, vals[a]);
          break;
        case 1: {  // binary with a same-shape value, or a scalar
          int other = -1;
          for (int t = 0; t < count; ++t) {
            if (t != a && cml_shape_equal(&shapes[t], &as) && pt_rand(&rng, 2)) other = t;
          }
          cml_value_t rhs =
              other >= 0 ? vals[other] : cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5);
          static const cml_op_t ops[5] = {CML_OP_ADD, CML_OP_SUB, CML_OP_MUL, CML_OP_MAX,
                                          CML_OP_DIV};
          cml_op_t op = ops[pt_rand(&rng, other >= 0 ? 4 : 5)];
          y = cml_op_binary(f, op, vals[a], rhs);
          break;
        }
        case 2:
          if (as.rank >= 2) {
            int64_t perm[3] = {0, 1, 2};
            for (int i = as.rank - 1; i > 0; --i) {
              int j = (int)pt_rand(&rng, (uint32_t)i + 1);
              int64_t t = perm[i];
              perm[i] = perm[j];
              perm[j] = t;
            }
            y = cml_op_transpose(f, vals[a], perm, as.rank);
          }
          break;
        case 3: {
          int64_t axes[3];
          size_t n_axes = 0;
          for (int d = 0; d < as.rank; ++d) {
            if (pt_rand(&rng, 2)) axes[n_axes++] = d;
          }
          if (as.rank == 0) break;
          if (n_axes == 0) axes[n_axes++] = 0;
          y = pt_rand(&rng, 3) ? cml_op_reduce_sum(f, vals[a], axes, n_axes)
                               : cml_op_reduce_max(f, vals[a], axes, n_axes);
          break;
        }
        case 4:
        case 5: {  // DotGeneral with a contracting pair (and a batch pair sometimes)
          int b2 = (int)pt_rand(&rng, (uint32_t)count);
          cml_shape_t bs2 = shapes[b2];
          if (as.rank == 0 || bs2.rank == 0 || as.rank + bs2.rank > 5) break;
          cml_dot_config_t c;
          memset(&c, 0, sizeof c);
          int li = (int)pt_rand(&rng, (uint32_t)as.rank),
              ri = (int)pt_rand(&rng, (uint32_t)bs2.rank);
          if (as.dims[li] != bs2.dims[ri]) break;
          c.lhs_contracting_count = c.rhs_contracting_count = 1;
          c.lhs_contracting_axes[0] = li;
          c.rhs_contracting_axes[0] = ri;
          int lb = (int)pt_rand(&rng, (uint32_t)as.rank),
              rb = (int)pt_rand(&rng, (uint32_t)bs2.rank);
          if (lb != li && rb != ri && as.dims[lb] == bs2.dims[rb] && pt_rand(&rng, 2)) {
            c.lhs_batch_count = c.rhs_batch_count = 1;
            c.lhs_batch_axes[0] = lb;
            c.rhs_batch_axes[0] = rb;
          }
          y = cml_op_dot_general(f, vals[a], vals[b2], &c);
          break;
        }
        case 6: {  // reshape: merge two adjacent dims, or split a 4 into 2 x 2
          int64_t dims[4];
          int32_t rank = 0;
          int d0 = as.rank ? (int)pt_rand(&rng, (uint32_t)as.rank) : 0;
          bool merge = d0 + 1 < as.rank && pt_rand(&rng, 2);
          for (int d = 0; d < as.rank; ++d) {
            if (merge && d == d0) {
              dims[rank++] = as.dims[d] * as.dims[d + 1];
              ++d;
            } else if (!merge && d == d0 && as.dims[d] == 4 && as.rank < 3) {
              dims[rank++] = 2;
              dims[rank++] = 2;
            } else {
              dims[rank++] = as.dims[d];
            }
          }
          if (rank >= 1 && rank <= 3) y = cml_op_reshape(f, vals[a], dims, rank);
          break;
        }
        default:
          if (as.rank < 3) {  // a new leading dim of 2
            int64_t dims[3] = {2, as.dims[0], as.dims[1]};
            int64_t axes[2] = {1, 2};
            y = cml_op_broadcast_in_dim(f, vals[a], dims, as.rank + 1, axes, as.rank);
          }
          break;
      }
      if (y == CML_VALUE_INVALID) continue;
      ASSERT_TRUE(cml_builder_value_shape(b, y, &shapes[count]));
      vals[count++] = y;
    }
    cml_value_t outs[3] = {vals[count - 1], vals[count - 2], vals[pt_rand(&rng, (uint32_t)count)]};
    cml_sharding_t specs[3];
    for (int k = 0; k < 3; ++k) {
      cml_shape_t os;
      ASSERT_TRUE(cml_builder_value_shape(b, outs[k], &os));
      specs[k] = pt_random_spec(&rng, mesh, &os);
    }
    ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 3, specs));
    ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
    double worst = pt_compare(fb->module, spmd);
    if (!(worst < 1e-9)) cml_module_dump(fb->module, stderr);
    ASSERT_TRUE(worst < 1e-9);
    ++checked;
    PT_TEARDOWN();
  }
  ASSERT_EQ_INT(checked, 150);
}

// Resharding: a replicated parameter returned sharded is sliced locally (DynamicSlice at
// ReplicaId, no communication); a sharded one returned replicated is gathered.
TEST(reshard_outputs) {
  PT_SETUP(pt_mesh("data", 2, "model", 2));
  cml_sharding_t s_model = pt_spec(mesh, "model", NULL);
  cml_sharding_t s_both = pt_spec(mesh, "data", "model");
  cml_shape_t s = pt_shape(2, 4, 6);
  cml_value_t r = cml_parameter_sharded(f, "r", &s, NULL);
  cml_value_t m = cml_parameter_sharded(f, "m", &s, &s_model);
  cml_value_t outs[3] = {cml_op_neg(f, r), cml_op_neg(f, m), cml_op_abs(f, m)};
  cml_sharding_t specs[3];
  specs[0] = s_both;
  memset(&specs[1], 0, sizeof specs[1]);
  specs[2] = s_both;  // model on dim 0 -> data on dim 0, model on dim 1: gather, then slice
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 3, specs));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  ASSERT_EQ_INT(pt_param(spmd, 0)->dims[0], 4);
  ASSERT_EQ_INT(pt_param(spmd, 1)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 3);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[0], 4);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[1], 6);
  ASSERT_EQ_INT(pt_output(spmd, 2)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 2)->dims[1], 3);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_reduce, 0);
  ASSERT_EQ_INT(k.all_gather, 2);
  ASSERT_EQ_INT(k.replica_id, 1);
  // Two for each sliced output (one reads the start table, one slices) per sliced dimension,
  // plus the slices of the values themselves.
  ASSERT_TRUE(k.dynamic_slice >= 2);
  const cml_ir_node_t* ag = pt_first(spmd, CML_OP_ALL_GATHER);
  ASSERT_EQ_INT(ag->attrs->axis, 0);
  ASSERT_EQ_INT(ag->attrs->collective.group_size, 2);
  ASSERT_EQ_INT(ag->attrs->collective.groups[0], 0);  // model varies: {0,1}, {2,3}
  ASSERT_EQ_INT(ag->attrs->collective.groups[1], 1);
  PT_TEARDOWN();
}

// An op without a sharded rule (a logical reduction over a split axis, ReduceWindow) is
// computed replicated after an AllGather: always correct.
TEST(replicated_fallback) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t s = pt_shape(2, 8, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &batch);
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = 2;
  w.window_dims[1] = 1;
  cml_value_t pooled = cml_op_reduce_window(f, x, CML_REDUCE_MAX, &w);  // [4, 4]
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &pooled, 1, &batch));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  ASSERT_TRUE(pt_compare(fb->module, spmd) < 1e-9);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather, 1);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 1);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 4);
  PT_TEARDOWN();
}

static cml_function_t* pt_less_closure(cml_function_t* f) {
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return NULL;
  cml_shape_t sc = cml_shape_make(CML_DTYPE_F32, 0, NULL);
  cml_value_t l = cml_parameter(cmp, "l", &sc);
  cml_value_t r = cml_parameter(cmp, "r", &sc);
  cml_value_t lt = cml_op_less_than(cmp, l, r);
  if (cml_function_return(cmp, &lt, 1) != CML_OK) return NULL;
  return cmp;
}

// Sort along the features of a batch-split operand sorts each device's rows (no gather); a
// Sort along the split batch gathers it first. The comparator is re-emitted.
TEST(sort_keeps_other_splits) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t s = pt_shape(2, 8, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &batch);
  cml_function_t* cmp = pt_less_closure(f);
  ASSERT_TRUE(cmp != NULL);
  cml_value_t rows, cols;
  ASSERT_TRUE(cml_op_sort(f, cmp, 1, false, &x, 1, &rows));
  cml_function_t* cmp2 = pt_less_closure(f);
  ASSERT_TRUE(cmp2 != NULL);
  ASSERT_TRUE(cml_op_sort(f, cmp2, 0, true, &x, 1, &cols));
  cml_value_t outs[2] = {rows, cols};
  cml_sharding_t specs[2] = {batch, batch};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 2, specs));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather, 1);          // the batch sort only
  ASSERT_EQ_INT(spmd->function_count, 3);  // main and the two comparators
  const cml_ir_node_t* sort = pt_first(spmd, CML_OP_SORT);
  ASSERT_TRUE(sort != NULL);
  ASSERT_EQ_INT(spmd->values[sort->first_output].shape.dims[0], 2);  // local rows
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[0], 2);
  PT_TEARDOWN();
}

// A While over a split value runs whole (its state gathered), with its closures re-emitted.
TEST(control_flow_whole) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t s = pt_shape(2, 8, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &batch);
  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  cml_value_t cs = cml_parameter(cond, "s", &s);
  cml_value_t one = cml_constant_scalar_f64(cond, CML_DTYPE_F32, 1.0);
  int64_t all[2] = {0, 1};
  cml_value_t lt = cml_op_less_than(cond, cml_op_reduce_max(cond, cs, all, 2), one);
  ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_value_t bs = cml_parameter(body, "s", &s);
  cml_value_t next = cml_op_add(body, bs, cml_constant_scalar_f64(body, CML_DTYPE_F32, 0.5));
  ASSERT_STATUS_OK(cml_function_return(body, &next, 1));
  cml_value_t result;
  ASSERT_TRUE(cml_op_while(f, cond, body, &x, 1, &result));
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &result, 1, &batch));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather, 1);
  ASSERT_TRUE(pt_first(spmd, CML_OP_WHILE) != NULL);
  ASSERT_EQ_INT(spmd->function_count, 3);  // main, cond, body
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  PT_TEARDOWN();
}

// FusedDense over batch-sharded x with a whole weight and bias: local, no collectives.
TEST(fused_dense_keeps_batch) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t xs = pt_shape(2, 8, 4), ws = pt_shape(2, 4, 3), bs = pt_shape(1, 3, 0);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w = cml_parameter_sharded(f, "w", &ws, NULL);
  cml_value_t bias = cml_parameter_sharded(f, "b", &bs, NULL);
  cml_dense_config_t dc;
  cml_dense_config_init(&dc);
  dc.activation = CML_ACTIVATION_RELU;
  cml_value_t y = cml_op_fused_dense(f, x, w, bias, &dc);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &y, 1, &batch));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather + k.all_reduce + k.dynamic_slice, 0);
  ASSERT_TRUE(pt_first(spmd, CML_OP_FUSED_DENSE) != NULL);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 3);
  PT_TEARDOWN();
}

// Ops with more than 64 operands or results: a Concatenate (computed whole), and a Call of a
// closure with 70 parameters and results. They run whole, the inputs gathered once each.
TEST(many_operands_run_whole) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_sharding_t batch = pt_spec(mesh, "data", NULL);
  cml_shape_t s = pt_shape(2, 8, 2);
  enum { kCount = 70 };
  cml_value_t x[kCount], y[kCount];
  for (int i = 0; i < kCount; ++i) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    x[i] = cml_parameter_sharded(f, name, &s, &batch);
  }
  cml_value_t cat = cml_op_concatenate(f, 1, x, kCount);  // [8, 140]
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  cml_value_t cp[kCount];
  for (int i = 0; i < kCount; ++i) {
    char name[16];
    snprintf(name, sizeof name, "p%d", i);
    cp[i] = cml_op_neg(c, cml_parameter(c, name, &s));
  }
  ASSERT_STATUS_OK(cml_function_return(c, cp, kCount));
  ASSERT_TRUE(cml_op_call(f, c, x, kCount, y));
  cml_value_t outs[2] = {cat, y[kCount - 1]};
  cml_sharding_t specs[2] = {batch, batch};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 2, specs));
  ASSERT_STATUS_OK(pt_partition(fb, b, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather, kCount);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[1], 2 * kCount);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[0], 2);
  ASSERT_TRUE(pt_first(spmd, CML_OP_CALL) != NULL);
  PT_TEARDOWN();
}

// A backend without a listing of its own (the fake one): cml_executable_dump writes the module.
TEST(executable_dump_falls_back_to_the_module) {
  PT_SETUP(pt_mesh("data", 4, NULL, 0));
  cml_shape_t s = pt_shape(2, 8, 4);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_op_tanh(f, x);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &y, 1, NULL));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  char* text = NULL;
  size_t size = 0;
  FILE* mem = open_memstream(&text, &size);
  ASSERT_TRUE(mem != NULL);
  ASSERT_STATUS_OK(cml_executable_dump(exe, mem));
  fclose(mem);
  ASSERT_CONTAINS(text, "module \"pt\"");
  ASSERT_CONTAINS(text, "Tanh");
  free(text);
  cml_executable_release(exe);
  PT_TEARDOWN();
}

// Shardings on two different meshes: UNIMPLEMENTED naming both.
TEST(two_meshes_unimplemented) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  const char* an[1] = {"data"};
  const char* bn[1] = {"x"};
  int64_t four[1] = {4};
  cml_mesh_t *ma = NULL, *mb = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("ma", an, four, 1, &ma));
  ASSERT_STATUS_OK(cml_mesh_create("mb", bn, four, 1, &mb));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "two", &b));
  const cml_mesh_t* meshes[2] = {ma, mb};
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, meshes, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t sa = pt_spec(ma, "data", NULL), sb = pt_spec(mb, "x", NULL);
  cml_shape_t s = pt_shape(2, 4, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &sa);
  cml_value_t y = cml_parameter_sharded(f, "y", &s, &sb);
  cml_value_t z = cml_op_add(f, x, y);
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &z, 1, NULL));
  cml_module_t* spmd = NULL;
  cml_status_t st = pt_partition(fb, b, &spmd);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(cml_status_message(st), "ma");
  ASSERT_CONTAINS(cml_status_message(st), "mb");
  cml_status_free(st);
  ASSERT_TRUE(spmd == NULL);
  cml_builder_destroy(b);
  cml_mesh_destroy(ma);
  cml_mesh_destroy(mb);
  cml_backend_release(&fb->base);
}

// A module that is not AutoSharding is refused.
TEST(refuses_non_auto_sharding) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "plain", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = pt_shape(1, 4, 0);
  cml_value_t x = cml_op_neg(f, cml_parameter(f, "x", &s));
  ASSERT_STATUS_OK(cml_function_return(f, &x, 1));
  cml_module_t* spmd = NULL;
  cml_status_t st = pt_partition(fb, b, &spmd);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "not AutoSharding");
  cml_status_free(st);
  ASSERT_TRUE(spmd == NULL);
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
}

#ifdef CML_HAVE_BACKEND_C
//===--- end to end on c:devices=N vs one device ---===//

// The 2-D step: h = tanh(x.w1 + b1), y = h.w2, d = y - t, loss = sum(d*d) / 32 and the
// gradient of w2 (h^T.d). Sharded: x, t over data; w1 columns and w2 rows over model (mesh
// data x model), or only data (1-D mesh). Results: y (split like x, and over model on the 2-D
// mesh), loss (whole), gw2 (split like w2).
typedef struct pt_step_t {
  cml_executable_t* exe;
  int in_count, out_count;
  cml_sharding_t in_specs[8];
  cml_sharding_t out_specs[4];
} pt_step_t;

// Builds a program on |be|: AutoSharding over |mesh|, or one device when |mesh| is NULL.
typedef cml_status_t (*pt_build_fn)(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out);

static cml_status_t pt_build_step(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "step", &b));
  cml_status_t st = CML_OK;
  bool model = mesh && cml_mesh_axis_index(mesh, "model") >= 0;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    out->in_specs[0] = out->in_specs[4] = out->out_specs[0] = pt_spec(mesh, "data", NULL);
    if (model) {
      out->in_specs[1] = pt_spec(mesh, NULL, "model");
      out->in_specs[3] = out->out_specs[2] = pt_spec(mesh, "model", NULL);
      out->out_specs[0] = pt_spec(mesh, "data", "model");  // y: a ReduceScatter over model
      const char* per_axis[1] = {"model"};
      if (st == CML_OK) st = cml_sharding_make(mesh, per_axis, 1, &out->in_specs[2]);
    }
  }
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = pt_shape(2, 8, 4), w1s = pt_shape(2, 4, 6), b1s = pt_shape(1, 6, 0);
  cml_shape_t w2s = pt_shape(2, 6, 4), ts = pt_shape(2, 8, 4);
  const cml_shape_t* shapes[5] = {&xs, &w1s, &b1s, &w2s, &ts};
  const char* names[5] = {"x", "w1", "b1", "w2", "t"};
  cml_value_t in[5];
  for (int i = 0; i < 5; ++i) {
    in[i] = mesh ? cml_parameter_sharded(f, names[i], shapes[i], &out->in_specs[i])
                 : cml_parameter(f, names[i], shapes[i]);
  }
  int64_t hd[2] = {8, 6}, ax[1] = {1};
  cml_value_t h =
      cml_op_add(f, cml_op_dot(f, in[0], in[1]), cml_op_broadcast_in_dim(f, in[2], hd, 2, ax, 1));
  h = cml_op_tanh(f, h);
  cml_value_t y = cml_op_dot(f, h, in[3]);
  cml_value_t d = cml_op_sub(f, y, in[4]);
  cml_value_t loss = cml_op_div(f, cml_op_reduce_sum(f, cml_op_mul(f, d, d), NULL, 0),
                                cml_constant_scalar_f64(f, CML_DTYPE_F32, 32.0));
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  cml_value_t gw2 = cml_op_dot_general(f, h, d, &c);
  cml_value_t outs[3] = {y, loss, gw2};
  if (st == CML_OK) {
    st = mesh ? cml_function_return_sharded(f, outs, 3, out->out_specs)
              : cml_function_return(f, outs, 3);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &out->exe);
  cml_builder_destroy(b);
  out->in_count = 5;
  out->out_count = 3;
  return st;
}

// Input element e of parameter i (indices stay in [0, 5)).
// Uint8 inputs are GGML blocks: bytes below 32 keep every fp16 scale finite and small (a high
// byte of at most 0x1f is below 2^-7).
static double pt_input_value(cml_dtype_t dtype, int i, int64_t e) {
  if (dtype == CML_DTYPE_I32) return (double)((e * 3 + i) % 5);
  if (dtype == CML_DTYPE_U8) return (double)((e * 7 + i * 3) % 32);
  if (dtype == CML_DTYPE_BOOL) return (double)((e * 5 + i) % 7 != 0);
  return (double)((e * 7 + i * 3) % 11) * 0.1 - 0.5;
}

static void pt_to_dtype(cml_dtype_t dtype, const double* src, int64_t count, void* dst) {
  for (int64_t e = 0; e < count; ++e) {
    if (dtype == CML_DTYPE_I32) {
      ((int32_t*)dst)[e] = (int32_t)src[e];
    } else if (dtype == CML_DTYPE_U8 || dtype == CML_DTYPE_BOOL) {
      ((uint8_t*)dst)[e] = (uint8_t)src[e];
    } else {
      ((float*)dst)[e] = (float)src[e];
    }
  }
}

#define PT_E2E_MAX 1024

// Runs |build|'s program on one device and sharded on |config|'s devices; every slot's result
// shards must match their blocks of the one-device results. Returns the largest relative
// difference.
static double pt_e2e_run(pt_build_fn build, const char* config, const cml_mesh_t* mesh,
                         cml_status_t* out_status) {
  cml_backend_t *one = NULL, *many = NULL;
  static pt_step_t s1, sn;
  memset(&s1, 0, sizeof s1);
  memset(&sn, 0, sizeof sn);
  cml_status_t st = cml_backend_new_with_config("c", &one);
  if (st == CML_OK) st = cml_backend_new_with_config(config, &many);
  if (st == CML_OK) st = build(one, NULL, &s1);
  if (st == CML_OK) st = build(many, mesh, &sn);
  int n = (int)cml_mesh_device_count(mesh);
  static double host[PT_E2E_MAX], block[PT_E2E_MAX];
  static float raw[PT_E2E_MAX];
  cml_buffer_t* in1[8] = {NULL};
  cml_buffer_t* inn[8 * 8] = {NULL};
  cml_buffer_t* out1[4] = {NULL};
  cml_buffer_t* outn[4 * 8] = {NULL};
  double worst = INFINITY;
  int ni = s1.in_count, no = s1.out_count;
  // Inputs: whole on one device; slot j gets the shard of the mesh position it runs.
  for (int i = 0; st == CML_OK && i < ni; ++i) {
    const cml_shape_t* gs = cml_executable_input_shape(s1.exe, (size_t)i);
    const cml_shape_t* ls = cml_executable_input_shape(sn.exe, (size_t)i);
    int64_t count = cml_shape_element_count(gs);
    for (int64_t e = 0; e < count; ++e) host[e] = pt_input_value(gs->dtype, i, e);
    pt_to_dtype(gs->dtype, host, count, raw);
    st = cml_buffer_from_host(one, 0, gs, raw, cml_shape_byte_size(gs), &in1[i]);
    for (int j = 0; st == CML_OK && j < n; ++j) {
      pt_extract(&sn.in_specs[i], gs, ls, pt_mesh_position(mesh, j), host, block);
      pt_to_dtype(gs->dtype, block, cml_shape_element_count(ls), raw);
      st = cml_buffer_from_host(many, j, ls, raw, cml_shape_byte_size(ls), &inn[j * ni + i]);
    }
  }
  if (st == CML_OK) st = cml_executable_execute(s1.exe, in1, (size_t)ni, NULL, 0, out1);
  if (st == CML_OK) st = cml_executable_execute(sn.exe, inn, (size_t)(ni * n), NULL, 0, outn);
  if (st == CML_OK) worst = 0;
  // Outputs (f32): every slot's shard against its block of the one-device result.
  for (int k = 0; st == CML_OK && k < no; ++k) {
    const cml_shape_t* gs = cml_executable_output_shape(s1.exe, (size_t)k);
    st = cml_buffer_copy_to_host(out1[k], raw, cml_shape_byte_size(gs));
    for (int64_t e = 0; e < cml_shape_element_count(gs); ++e) host[e] = raw[e];
    for (int j = 0; st == CML_OK && j < n; ++j) {
      cml_buffer_t* got = outn[j * no + k];
      const cml_shape_t* ls = cml_buffer_shape(got);
      pt_extract(&sn.out_specs[k], gs, ls, pt_mesh_position(mesh, j), host, block);
      st = cml_buffer_copy_to_host(got, raw, cml_shape_byte_size(ls));
      for (int64_t e = 0; st == CML_OK && e < cml_shape_element_count(ls); ++e) {
        double diff = fabs(block[e] - (double)raw[e]) / (1.0 + fabs(block[e]));
        if (!(diff <= worst)) worst = diff;
      }
    }
  }
  for (int i = 0; i < 8; ++i) cml_buffer_release(in1[i]);
  for (int i = 0; i < 8 * 8; ++i) cml_buffer_release(inn[i]);
  for (int k = 0; k < 4; ++k) cml_buffer_release(out1[k]);
  for (int k = 0; k < 4 * 8; ++k) cml_buffer_release(outn[k]);
  cml_executable_release(s1.exe);
  cml_executable_release(sn.exe);
  cml_backend_release(one);
  cml_backend_release(many);
  *out_status = st;
  return worst;
}

static double pt_e2e(const char* config, const cml_mesh_t* mesh, cml_status_t* out_status) {
  return pt_e2e_run(pt_build_step, config, mesh, out_status);
}

// A data-parallel embedding + CNN forward: ids [8, 3] and images [8, 6, 6, 2] split on the
// batch over data, the table and the kernel whole. Results: the summed embeddings [8, 4] and
// the pooled features [8, 16] (both split like the batch) and their total (whole). Nothing is
// gathered: Gather, ConvGeneral and ReduceWindow run on each device's rows.
static cml_status_t pt_build_cnn(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "cnn", &b));
  cml_status_t st = CML_OK;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  const char* batch4[4] = {"data", NULL, NULL, NULL};
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    out->in_specs[0] = out->out_specs[0] = out->out_specs[1] = pt_spec(mesh, "data", NULL);
    if (st == CML_OK) st = cml_sharding_make(mesh, batch4, 4, &out->in_specs[2]);
  }
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t ids_s = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){8, 3});
  cml_shape_t table_s = pt_shape(2, 5, 4);
  cml_shape_t img_s = cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){8, 6, 6, 2});
  cml_shape_t ker_s = cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){3, 3, 2, 4});
  const cml_shape_t* shapes[4] = {&ids_s, &table_s, &img_s, &ker_s};
  const char* names[4] = {"ids", "table", "img", "kernel"};
  cml_value_t in[4];
  for (int i = 0; i < 4; ++i) {
    in[i] = mesh ? cml_parameter_sharded(f, names[i], shapes[i], &out->in_specs[i])
                 : cml_parameter(f, names[i], shapes[i]);
  }
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 2;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 2;
  g.collapsed_slice_axis_count = 1;
  g.start_index_map_count = 1;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 4;
  cml_value_t emb = cml_op_gather(f, in[1], in[0], &g);  // [8, 3, 4]
  int64_t one_axis[1] = {1};
  cml_value_t emb_sum = cml_op_reduce_sum(f, emb, one_axis, 1);  // [8, 4]
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 2;
  c.input_batch_axis = 0;
  c.input_channel_axis = 3;
  c.input_spatial_axes[0] = 1;
  c.input_spatial_axes[1] = 2;
  c.kernel_input_channel_axis = 2;
  c.kernel_output_channel_axis = 3;
  c.kernel_spatial_axes[0] = 0;
  c.kernel_spatial_axes[1] = 1;
  c.output_batch_axis = 0;
  c.output_channel_axis = 3;
  c.output_spatial_axes[0] = 1;
  c.output_spatial_axes[1] = 2;
  cml_value_t conv = cml_op_conv_general(f, in[2], in[3], &c);  // [8, 4, 4, 4]
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 4;
  int64_t wd[4] = {1, 2, 2, 1};
  memcpy(w.window_dims, wd, sizeof wd);
  cml_value_t pooled = cml_op_reduce_window(f, conv, CML_REDUCE_MAX, &w);  // [8, 2, 2, 4]
  int64_t flat[2] = {8, 16};
  pooled = cml_op_reshape(f, pooled, flat, 2);
  cml_value_t total =
      cml_op_add(f, cml_op_reduce_sum(f, pooled, NULL, 0), cml_op_reduce_sum(f, emb_sum, NULL, 0));
  cml_value_t outs[3] = {emb_sum, pooled, total};
  if (st == CML_OK) {
    st = mesh ? cml_function_return_sharded(f, outs, 3, out->out_specs)
              : cml_function_return(f, outs, 3);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &out->exe);
  cml_builder_destroy(b);
  out->in_count = 4;
  out->out_count = 3;
  return st;
}

// Data parallel over 4 devices of c, values as on one device.
TEST(e2e_c_data_parallel) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e("c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}

// Data x model (2 x 2) over 4 devices of c: Megatron inside, data parallel outside.
TEST(e2e_c_data_model) {
  cml_mesh_t* mesh = pt_mesh("data", 2, "model", 2);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e("c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}
// The same with a permuted mesh device assignment.
TEST(e2e_c_data_model_assigned) {
  cml_mesh_t* mesh = pt_mesh("data", 2, "model", 2);
  ASSERT_TRUE(mesh != NULL);
  const int32_t order[4] = {2, 0, 3, 1};
  cml_status_t st = cml_mesh_set_device_assignment(mesh, order, 4);
  double worst = st == CML_OK ? pt_e2e("c:devices=4", mesh, &st) : INFINITY;
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}
// Embedding lookup and CNN forward, data parallel over 4 devices of c.
TEST(e2e_c_cnn_data_parallel) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_cnn, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}

// Its partition gathers nothing and reduces only the total.
TEST(cnn_structure) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  pt_step_t step;
  memset(&step, 0, sizeof step);
  ASSERT_STATUS_OK(pt_build_cnn(&fb->base, mesh, &step));
  cml_executable_release(step.exe);
  cml_module_t* spmd = NULL;
  ASSERT_STATUS_OK(cml__partition_module(fb->module, &fb->base, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather, 0);
  ASSERT_EQ_INT(k.all_reduce, 1);
  ASSERT_EQ_INT(k.dynamic_slice, 0);
  ASSERT_EQ_INT(pt_param(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_param(spmd, 2)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[1], 16);
  cml_module_release(spmd);
  cml_mesh_destroy(mesh);
  cml_backend_release(&fb->base);
}
// On c, what the partitioner refuses surfaces at cml_builder_compile.
TEST(e2e_c_refusal_at_compile) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4", &be));
  ASSERT_TRUE(cml_backend_capabilities(be)->distributions & (1u << CML_DISTRIBUTION_AUTO_SHARDING));
  const char* an[1] = {"data"};
  const char* bn[1] = {"x"};
  int64_t four[1] = {4};
  cml_mesh_t *ma = NULL, *mb = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("ma", an, four, 1, &ma));
  ASSERT_STATUS_OK(cml_mesh_create("mb", bn, four, 1, &mb));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "two", &b));
  const cml_mesh_t* meshes[2] = {ma, mb};
  ASSERT_STATUS_OK(cml_builder_auto_sharding(b, meshes, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t sa = pt_spec(ma, "data", NULL), sb = pt_spec(mb, "x", NULL);
  cml_shape_t s = pt_shape(2, 4, 4);
  cml_value_t z =
      cml_op_add(f, cml_parameter_sharded(f, "x", &s, &sa), cml_parameter_sharded(f, "y", &s, &sb));
  ASSERT_STATUS_OK(cml_function_return_sharded(f, &z, 1, NULL));
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_compile(b, &exe);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(cml_status_message(st), "AutoSharding partitioner");
  cml_status_free(st);
  ASSERT_TRUE(exe == NULL);
  cml_builder_destroy(b);
  cml_mesh_destroy(ma);
  cml_mesh_destroy(mb);
  cml_backend_release(be);
}

// A While whose body captures a batch-split value of main: the loop runs whole, the captured
// value is gathered in main first. s = 0; while (s < 3) s += sum(w) * 0.01 + 1.
static cml_status_t pt_build_loop(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "loop", &b));
  cml_status_t st = CML_OK;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    out->in_specs[0] = pt_spec(mesh, "data", NULL);
  }
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t ws = pt_shape(2, 8, 4);
  cml_value_t w =
      mesh ? cml_parameter_sharded(f, "w", &ws, &out->in_specs[0]) : cml_parameter(f, "w", &ws);
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
  cml_function_t *cond = NULL, *body = NULL;
  if (st == CML_OK) st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) {
    cml_value_t s = cml_parameter(cond, "s", &sc);
    cml_value_t lt = cml_op_less_than(cond, s, cml_constant_scalar_f64(cond, CML_DTYPE_F32, 3.0));
    st = cml_function_return(cond, &lt, 1);
  }
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st == CML_OK) {
    cml_value_t s = cml_parameter(body, "s", &sc);
    cml_value_t inc = cml_op_mul(body, cml_op_reduce_sum(body, w, NULL, 0),
                                 cml_constant_scalar_f64(body, CML_DTYPE_F32, 0.01));
    inc = cml_op_add(body, inc, cml_constant_scalar_f64(body, CML_DTYPE_F32, 1.0));
    cml_value_t next = cml_op_add(body, s, inc);
    st = cml_function_return(body, &next, 1);
  }
  cml_value_t init = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0), result = CML_VALUE_INVALID;
  if (st == CML_OK && !cml_op_while(f, cond, body, &init, 1, &result)) st = cml_builder_status(b);
  cml_value_t outs[1] = {cml_op_add(f, result, cml_op_reduce_sum(f, w, NULL, 0))};
  if (st == CML_OK) {
    st = mesh ? cml_function_return_sharded(f, outs, 1, out->out_specs)
              : cml_function_return(f, outs, 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &out->exe);
  cml_builder_destroy(b);
  out->in_count = 1;
  out->out_count = 1;
  return st;
}

// The loop on 4 devices of c agrees with one device.
TEST(e2e_c_while_captures_split_value) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_loop, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}

// Fused ops the c backend runs natively, data parallel: FusedDense (bias, relu), FusedLayerNorm
// (gamma, beta), FusedSoftmax and FusedGelu on batch-split rows; weights whole.
static cml_status_t pt_build_fused(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "fused", &b));
  cml_status_t st = CML_OK;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    out->in_specs[0] = out->out_specs[0] = pt_spec(mesh, "data", NULL);
  }
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = pt_shape(2, 8, 4), ws = pt_shape(2, 4, 6), vs = pt_shape(1, 6, 0);
  const cml_shape_t* shapes[5] = {&xs, &ws, &vs, &vs, &vs};
  const char* names[5] = {"x", "w", "bias", "gamma", "beta"};
  cml_value_t in[5];
  for (int i = 0; i < 5; ++i) {
    in[i] = mesh ? cml_parameter_sharded(f, names[i], shapes[i], &out->in_specs[i])
                 : cml_parameter(f, names[i], shapes[i]);
  }
  cml_dense_config_t dc;
  cml_dense_config_init(&dc);
  dc.activation = CML_ACTIVATION_RELU;
  cml_value_t h = cml_op_fused_dense(f, in[0], in[1], in[2], &dc);
  int64_t axis1[1] = {1};
  h = cml_op_fused_layer_norm(f, h, axis1, 1, 1e-5, in[3], in[4]);
  h = cml_op_fused_gelu(f, cml_op_fused_softmax(f, h, 1), true);
  cml_value_t total = cml_op_reduce_sum(f, h, NULL, 0);
  cml_value_t outs[2] = {h, total};
  if (st == CML_OK) {
    st = mesh ? cml_function_return_sharded(f, outs, 2, out->out_specs)
              : cml_function_return(f, outs, 2);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &out->exe);
  cml_builder_destroy(b);
  out->in_count = 5;
  out->out_count = 2;
  return st;
}

TEST(e2e_c_fused_data_parallel) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_fused, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}

// Its partition keeps the rows local: one AllReduce (the total), nothing else.
TEST(fused_structure) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  pt_step_t step;
  memset(&step, 0, sizeof step);
  ASSERT_STATUS_OK(pt_build_fused(&fb->base, mesh, &step));
  cml_executable_release(step.exe);
  cml_module_t* spmd = NULL;
  ASSERT_STATUS_OK(cml__partition_module(fb->module, &fb->base, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather + k.dynamic_slice + k.other_collectives, 0);
  ASSERT_EQ_INT(k.all_reduce, 1);
  ASSERT_TRUE(pt_first(spmd, CML_OP_FUSED_LAYER_NORM) != NULL);
  ASSERT_TRUE(pt_first(spmd, CML_OP_FUSED_SOFTMAX) != NULL);
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 2);
  cml_module_release(spmd);
  cml_mesh_destroy(mesh);
  cml_backend_release(&fb->base);
}

// Sort of batch-split rows (each device sorts its rows) and along the batch (gathered).
static cml_status_t pt_build_sort(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "sort", &b));
  cml_status_t st = CML_OK;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    out->in_specs[0] = out->out_specs[0] = out->out_specs[1] = pt_spec(mesh, "data", NULL);
  }
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = pt_shape(2, 8, 4);
  cml_value_t x =
      mesh ? cml_parameter_sharded(f, "x", &xs, &out->in_specs[0]) : cml_parameter(f, "x", &xs);
  cml_value_t outs[2] = {CML_VALUE_INVALID, CML_VALUE_INVALID};
  for (int axis = 0; st == CML_OK && axis < 2; ++axis) {
    cml_function_t* cmp = pt_less_closure(f);
    if (!cmp || !cml_op_sort(f, cmp, 1 - axis, true, &x, 1, &outs[axis])) {
      st = cml_builder_status(b);
      if (st == CML_OK) st = cml_status_make(CML_STATUS_INTERNAL, "sort failed");
    }
  }
  if (st == CML_OK) {
    st = mesh ? cml_function_return_sharded(f, outs, 2, out->out_specs)
              : cml_function_return(f, outs, 2);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &out->exe);
  cml_builder_destroy(b);
  out->in_count = 1;
  out->out_count = 2;
  return st;
}

TEST(e2e_c_sort) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_sort, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst == 0);
}

// An AutoSharding builder named |name| on c:devices=4 over mesh {data: 4}, and the spec that
// splits a tensor's first axis over data. False (printed) when a step fails.
typedef struct pt_e2e_t {
  cml_mesh_t* mesh;
  cml_backend_t* be;
  cml_builder_t* b;
  cml_function_t* f;
  cml_sharding_t split;
} pt_e2e_t;

static bool pt_e2e_begin(const char* name, pt_e2e_t* e) {
  memset(e, 0, sizeof *e);
  e->mesh = pt_mesh("data", 4, NULL, 0);
  if (!e->mesh) return false;
  const cml_mesh_t* meshes[1] = {e->mesh};
  const char* per_axis[1] = {"data"};
  cml_status_t st = cml_backend_new_with_config("c:devices=4", &e->be);
  if (st == CML_OK) st = cml_builder_create(e->be, name, &e->b);
  if (st == CML_OK) st = cml_builder_auto_sharding(e->b, meshes, 1);
  if (st == CML_OK) st = cml_sharding_make(e->mesh, per_axis, 1, &e->split);
  if (st != CML_OK) {
    fprintf(stderr, "%s: %s\n", name, cml_status_message(st));
    cml_status_free(st);
    return false;
  }
  e->f = cml_builder_main(e->b);
  return true;
}

// Pending sums through Mul and Div on 4 devices of c, against the values of one device:
// x f32[4, 1] = [1, 0, 0, 0] and xi i32[4, 1] = [1, 1, 1, 1] split over data, w = [inf] and
// z = [0] whole. sum(x) * w = inf and sum(x) / z = inf (not the NaN of 0 * inf, 0 / 0 on the
// devices whose term is 0), sum(xi) / 2 = 2 (not the sum of 1 / 2 = 0), sum(xi) * 3 = 12,
// sum(x) * 0.5 = 0.5.
TEST(e2e_c_partial_mul_div) {
  pt_e2e_t e;
  ASSERT_TRUE(pt_e2e_begin("partial_mul_div", &e));
  cml_mesh_t* mesh = e.mesh;
  cml_backend_t* be = e.be;
  cml_builder_t* b = e.b;
  cml_function_t* f = e.f;
  const cml_sharding_t split = e.split;
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){4, 1});
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){4, 1});
  cml_shape_t ws = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){1});
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &split);
  cml_value_t xi = cml_parameter_sharded(f, "xi", &is, &split);
  cml_value_t w = cml_parameter_sharded(f, "w", &ws, NULL);
  cml_value_t z = cml_parameter_sharded(f, "z", &ws, NULL);
  int64_t axis0[1] = {0};
  cml_value_t sum = cml_op_reduce_sum(f, x, axis0, 1);
  cml_value_t isum = cml_op_reduce_sum(f, xi, axis0, 1);
  cml_value_t outs[5] = {cml_op_mul(f, sum, w), cml_op_div(f, sum, z),
                         cml_op_div(f, isum, cml_constant_scalar_f64(f, CML_DTYPE_I32, 2)),
                         cml_op_mul(f, isum, cml_constant_scalar_f64(f, CML_DTYPE_I32, 3)),
                         cml_op_mul(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5))};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 5, NULL));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  cml_shape_t shard = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1, 1});
  cml_shape_t ishard = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){1, 1});
  cml_buffer_t* in[16] = {NULL};
  cml_buffer_t* out[20] = {NULL};
  const float inf = INFINITY, zero = 0.0f;
  const int32_t one = 1;
  for (int j = 0; j < 4; ++j) {
    float xv = j == 0 ? 1.0f : 0.0f;
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &shard, &xv, sizeof xv, &in[4 * j]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &ishard, &one, sizeof one, &in[4 * j + 1]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &ws, &inf, sizeof inf, &in[4 * j + 2]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &ws, &zero, sizeof zero, &in[4 * j + 3]));
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 16, NULL, 0, out));
  for (int j = 0; j < 4; ++j) {
    float prod, quot, half;
    int32_t idiv, imul;
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[5 * j], &prod, sizeof prod));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[5 * j + 1], &quot, sizeof quot));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[5 * j + 2], &idiv, sizeof idiv));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[5 * j + 3], &imul, sizeof imul));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[5 * j + 4], &half, sizeof half));
    ASSERT_TRUE(isinf(prod) && prod > 0);
    ASSERT_TRUE(isinf(quot) && quot > 0);
    ASSERT_EQ_INT(idiv, 2);
    ASSERT_EQ_INT(imul, 12);
    ASSERT_EQ_DBL(half, 0.5);
  }
  for (int i = 0; i < 16; ++i) cml_buffer_release(in[i]);
  for (int i = 0; i < 20; ++i) cml_buffer_release(out[i]);
  cml_executable_release(exe);
  cml_backend_release(be);
  cml_mesh_destroy(mesh);
}

// x f32[4, 1] = [1, -1, 1, -1] split over data: sum(x) = +0 (the terms cancel), so -sum(x),
// sum(x) * -1 and sum(x) * -0 are -0 and 1 / -sum(x) is -inf, as on one device. The negations
// once stayed pending: the negated terms summed to +0 again, and 1 / -sum(x) gave +inf.
TEST(e2e_c_partial_negation_keeps_zero_sign) {
  pt_e2e_t e;
  ASSERT_TRUE(pt_e2e_begin("partial_negation", &e));
  cml_mesh_t* mesh = e.mesh;
  cml_backend_t* be = e.be;
  cml_builder_t* b = e.b;
  cml_function_t* f = e.f;
  const cml_sharding_t split = e.split;
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){4, 1});
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &split);
  int64_t axis0[1] = {0};
  cml_value_t sum = cml_op_reduce_sum(f, x, axis0, 1);
  cml_value_t neg = cml_op_neg(f, sum);
  cml_value_t outs[5] = {neg, cml_op_mul(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, -1.0)),
                         cml_op_mul(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, -0.0)),
                         cml_op_div(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0), neg),
                         cml_op_mul(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5))};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 5, NULL));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  cml_shape_t shard = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1, 1});
  cml_buffer_t* in[4] = {NULL};
  cml_buffer_t* out[20] = {NULL};
  for (int j = 0; j < 4; ++j) {
    float xv = j % 2 == 0 ? 1.0f : -1.0f;
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &shard, &xv, sizeof xv, &in[j]));
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 4, NULL, 0, out));
  for (int j = 0; j < 4; ++j) {
    float y[5];
    for (int i = 0; i < 5; ++i) {
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[5 * j + i], &y[i], sizeof y[i]));
    }
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(y[i] == 0 && signbit(y[i]));
    ASSERT_TRUE(isinf(y[3]) && y[3] < 0);
    ASSERT_TRUE(y[4] == 0 && !signbit(y[4]));
  }
  for (int i = 0; i < 4; ++i) cml_buffer_release(in[i]);
  for (int i = 0; i < 20; ++i) cml_buffer_release(out[i]);
  cml_executable_release(exe);
  cml_backend_release(be);
  cml_mesh_destroy(mesh);
}

// x f32[4, 1] = 1e38 each, split over data: sum(x) overflows to +inf, so sum(x) * 0.25,
// sum(x) / 4 and sum(x) * 1e-30 are +inf and 1 / (sum(x) * 0.25) is +0, as on one device. The
// products once stayed pending: the scaled terms summed to 1e38 (finite).
TEST(e2e_c_partial_sum_overflow_is_kept) {
  pt_e2e_t e;
  ASSERT_TRUE(pt_e2e_begin("partial_overflow", &e));
  cml_function_t* f = e.f;
  const cml_sharding_t split = e.split;
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){4, 1});
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &split);
  int64_t axis0[1] = {0};
  cml_value_t sum = cml_op_reduce_sum(f, x, axis0, 1);
  cml_value_t quarter = cml_op_mul(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.25));
  cml_value_t outs[4] = {quarter, cml_op_div(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, 4)),
                         cml_op_mul(f, sum, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1e-30)),
                         cml_op_div(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1), quarter)};
  ASSERT_STATUS_OK(cml_function_return_sharded(f, outs, 4, NULL));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(e.b, &exe));
  cml_builder_destroy(e.b);
  cml_shape_t shard = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1, 1});
  cml_buffer_t* in[4] = {NULL};
  cml_buffer_t* out[16] = {NULL};
  const float big = 1e38f;
  for (int j = 0; j < 4; ++j) {
    ASSERT_STATUS_OK(cml_buffer_from_host(e.be, j, &shard, &big, sizeof big, &in[j]));
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 4, NULL, 0, out));
  for (int j = 0; j < 4; ++j) {
    float y[4];
    for (int i = 0; i < 4; ++i) {
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[4 * j + i], &y[i], sizeof y[i]));
    }
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(isinf(y[i]) && y[i] > 0);
    ASSERT_TRUE(y[3] == 0 && !signbit(y[3]));
  }
  for (int i = 0; i < 4; ++i) cml_buffer_release(in[i]);
  for (int i = 0; i < 16; ++i) cml_buffer_release(out[i]);
  cml_executable_release(exe);
  cml_backend_release(e.be);
  cml_mesh_destroy(e.mesh);
}

// A sharding of rank 4 (NULL: that axis whole).
static cml_sharding_t pt_spec4(const cml_mesh_t* mesh, const char* d0, const char* d1,
                               const char* d2, const char* d3) {
  const char* per_axis[4] = {d0, d1, d2, d3};
  cml_sharding_t s;
  memset(&s, 0, sizeof s);
  cml_status_t st = cml_sharding_make(mesh, per_axis, 4, &s);
  if (st != CML_OK) {
    fprintf(stderr, "cml_sharding_make: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return s;
}

static cml_status_t pt_params(cml_function_t* f, const cml_mesh_t* mesh, pt_step_t* out,
                              const cml_shape_t* shapes, const char* const* names, int count,
                              cml_value_t* values) {
  for (int i = 0; i < count; ++i) {
    values[i] = mesh ? cml_parameter_sharded(f, names[i], &shapes[i], &out->in_specs[i])
                     : cml_parameter(f, names[i], &shapes[i]);
  }
  out->in_count = count;
  return CML_OK;
}

static cml_status_t pt_finish(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh,
                              cml_status_t st, cml_value_t* outs, int count, pt_step_t* out) {
  if (st == CML_OK) {
    st = mesh ? cml_function_return_sharded(f, outs, (size_t)count, out->out_specs)
              : cml_function_return(f, outs, (size_t)count);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &out->exe);
  cml_builder_destroy(b);
  out->out_count = count;
  return st;
}

// A quantized transformer layer, data parallel: token ids [4, 3, 1] and lengths [4] split on
// the batch over data; a Q8_0 embedding table [5 rows of 32] and a Q8_0 projection [8 x 32],
// the QKV weights [8, 24] whole. QuantizedEmbeddingLookup, FusedQuantizedDense (silu),
// FusedAttentionQKVProjection, causal FusedScaledDotProductAttention (BSHD, 2 heads of 4, with
// query and kv lengths), and the gradient of sum(o^2) with respect to the QKV weights (the
// attention's fused VJP). Results: o [4, 3, 2, 4] split on the batch, the loss, the gradient.
static cml_status_t pt_build_qattn(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "qattn", &b));
  cml_status_t st = CML_OK;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    const char* per_axis[3] = {"data", NULL, NULL};
    if (st == CML_OK) st = cml_sharding_make(mesh, per_axis, 3, &out->in_specs[0]);
    if (st == CML_OK) st = cml_sharding_make(mesh, per_axis, 1, &out->in_specs[4]);
    out->out_specs[0] = pt_spec4(mesh, "data", NULL, NULL, NULL);
  }
  cml_function_t* f = cml_builder_main(b);
  const cml_shape_t shapes[5] = {
      cml_shape_make(CML_DTYPE_I32, 3, (int64_t[]){4, 3, 1}),
      cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){5, 34}),
      cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){8, 34}),
      cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){8, 24}),
      cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){4}),
  };
  const char* const names[5] = {"ids", "table", "wq", "wqkv", "lens"};
  cml_value_t in[5];
  pt_params(f, mesh, out, shapes, names, 5, in);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = CML_GGML_Q8_0;
  cml_value_t e = cml_op_quantized_embedding_lookup(f, in[1], in[0], &q);  // [4, 3, 32]
  cml_value_t h = cml_op_fused_quantized_dense(f, e, in[2], CML_VALUE_INVALID, &q,
                                               CML_ACTIVATION_SILU);  // [4, 3, 8]
  // The Q8_0 values are small (scales below 2^-7): scaled up, the softmax is not flat.
  h = cml_op_mul(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 30.0));
  h = cml_op_reshape(f, h, (int64_t[]){12, 8}, 2);
  cml_value_t qkv[3];
  cml_op_fused_attention_qkv_projection(f, h, in[3], CML_VALUE_INVALID, CML_VALUE_INVALID,
                                        CML_VALUE_INVALID, 8, 8, qkv);
  for (int i = 0; i < 3; ++i) qkv[i] = cml_op_reshape(f, qkv[i], (int64_t[]){4, 3, 2, 4}, 4);
  cml_sdpa_config_t sc;
  cml_sdpa_config_init(&sc);
  sc.causal = true;
  sc.query_seq_len = sc.kv_seq_len = in[4];
  cml_value_t o =
      cml_op_fused_sdpa(f, qkv[0], qkv[1], qkv[2], CML_ATTENTION_LAYOUT_BSHD, &sc, NULL, NULL);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, o, o), NULL, 0);
  cml_value_t g = CML_VALUE_INVALID;
  if (st == CML_OK) st = cml_gradients(f, loss, &in[3], 1, &g);
  cml_value_t outs[3] = {o, loss, g};
  return pt_finish(b, f, mesh, st, outs, 3, out);
}

// Attention split over heads (Megatron style) and batch on a 2 x 2 mesh: q [2, 4, 3, 4] (BHSD)
// and k, v [2, 2, 3, 4] (grouped-query: 2 kv heads) split {data}, {model}; a Bool mask
// [1, 4, 3, 3] split over model on its heads, an additive bias [2, 1, 3, 3] split over data.
// Results: o and the gradients of sum(o^2) with respect to q, k and v, split alike.
static cml_status_t pt_build_heads(cml_backend_t* be, const cml_mesh_t* mesh, pt_step_t* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "heads", &b));
  cml_status_t st = CML_OK;
  memset(out->in_specs, 0, sizeof out->in_specs);
  memset(out->out_specs, 0, sizeof out->out_specs);
  if (mesh) {
    st = cml_builder_auto_sharding(b, &mesh, 1);
    cml_sharding_t dm = pt_spec4(mesh, "data", "model", NULL, NULL);
    out->in_specs[0] = out->in_specs[1] = out->in_specs[2] = dm;
    out->in_specs[3] = pt_spec4(mesh, NULL, "model", NULL, NULL);
    out->in_specs[4] = pt_spec4(mesh, "data", NULL, NULL, NULL);
    for (int k = 0; k < 4; ++k) out->out_specs[k] = dm;
  }
  cml_function_t* f = cml_builder_main(b);
  const cml_shape_t shapes[5] = {
      cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){2, 4, 3, 4}),
      cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){2, 2, 3, 4}),
      cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){2, 2, 3, 4}),
      cml_shape_make(CML_DTYPE_BOOL, 4, (int64_t[]){1, 4, 3, 3}),
      cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){2, 1, 3, 3}),
  };
  const char* const names[5] = {"q", "k", "v", "mask", "bias"};
  cml_value_t in[5];
  pt_params(f, mesh, out, shapes, names, 5, in);
  cml_sdpa_config_t sc;
  cml_sdpa_config_init(&sc);
  sc.mask = in[3];
  sc.bias = in[4];
  cml_value_t o =
      cml_op_fused_sdpa(f, in[0], in[1], in[2], CML_ATTENTION_LAYOUT_BHSD, &sc, NULL, NULL);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, o, o), NULL, 0);
  cml_value_t g[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
  if (st == CML_OK) st = cml_gradients(f, loss, in, 3, g);
  cml_value_t outs[4] = {o, g[0], g[1], g[2]};
  return pt_finish(b, f, mesh, st, outs, 4, out);
}

TEST(e2e_c_quantized_attention_data_parallel) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_qattn, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-6);  // the results are about 0.01 to 1
}

TEST(e2e_c_attention_heads_and_batch) {
  cml_mesh_t* mesh = pt_mesh("data", 2, "model", 2);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_heads, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}

// Partitions |build|'s program on the fake backend over |mesh|.
static cml_module_t* pt_partition_built(fake_backend_t* fb, pt_build_fn build,
                                        const cml_mesh_t* mesh) {
  pt_step_t step;
  memset(&step, 0, sizeof step);
  cml_status_t st = build(&fb->base, mesh, &step);
  cml_executable_release(step.exe);
  cml_module_t* spmd = NULL;
  if (st == CML_OK) st = cml__partition_module(fb->module, &fb->base, &spmd);
  if (st != CML_OK) fprintf(stderr, "partition: %s\n", cml_status_message(st));
  cml_status_free(st);
  return spmd;
}

// The fused and quantized ops stay local with their per-device shapes: no AllGather and no
// slicing; only the loss and the weight gradient (sums over the batch) are AllReduced.
TEST(quantized_attention_structure) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_module_t* spmd = pt_partition_built(fb, pt_build_qattn, mesh);
  ASSERT_TRUE(spmd != NULL);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather + k.dynamic_slice + k.other_collectives, 0);
  ASSERT_EQ_INT(k.all_reduce, 2);
  const cml_op_t local[5] = {CML_OP_QUANTIZED_EMBEDDING_LOOKUP, CML_OP_FUSED_QUANTIZED_DENSE,
                             CML_OP_FUSED_ATTENTION_QKV_PROJECTION, CML_OP_FUSED_SDPA,
                             CML_OP_FUSED_SDPA_VJP};
  for (int i = 0; i < 5; ++i) {
    const cml_ir_node_t* n = pt_first(spmd, local[i]);
    ASSERT_TRUE(n != NULL);
    ASSERT_EQ_INT(spmd->values[n->first_output].shape.dims[0], i == 2 ? 3 : 1);
  }
  ASSERT_EQ_INT(pt_output(spmd, 0)->dims[0], 1);
  cml_module_release(spmd);
  cml_mesh_destroy(mesh);
  cml_backend_release(&fb->base);
}

// Over heads and batch: nothing is communicated at all, and each device runs 2 query heads
// against 1 kv head of 1 batch row.
TEST(attention_heads_structure) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* mesh = pt_mesh("data", 2, "model", 2);
  ASSERT_TRUE(mesh != NULL);
  cml_module_t* spmd = pt_partition_built(fb, pt_build_heads, mesh);
  ASSERT_TRUE(spmd != NULL);
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather + k.dynamic_slice + k.other_collectives + k.all_reduce, 0);
  const cml_ir_node_t* n = pt_first(spmd, CML_OP_FUSED_SDPA);
  ASSERT_TRUE(n != NULL);
  ASSERT_EQ_INT(spmd->values[n->inputs[0]].shape.dims[0], 1);
  ASSERT_EQ_INT(spmd->values[n->inputs[0]].shape.dims[1], 2);
  ASSERT_EQ_INT(spmd->values[n->inputs[1]].shape.dims[1], 1);
  ASSERT_EQ_INT(spmd->values[n->inputs[3]].shape.dims[1], 2);  // the mask's heads
  ASSERT_EQ_INT(spmd->values[n->inputs[4]].shape.dims[0], 1);  // the bias's batch
  n = pt_first(spmd, CML_OP_FUSED_SDPA_VJP);
  ASSERT_TRUE(n != NULL);
  ASSERT_EQ_INT(spmd->values[n->first_output + 1].shape.dims[1], 1);
  cml_module_release(spmd);
  cml_mesh_destroy(mesh);
  cml_backend_release(&fb->base);
}

// cml_executable_dump on c shows the partitioned program: per-device shapes and the AllReduce
// the partitioner inserted; the same program on one device has neither.
TEST(executable_dump_shows_the_partition) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_backend_t *one = NULL, *many = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &one));
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4", &many));
  pt_step_t s1, sn;
  memset(&s1, 0, sizeof s1);
  memset(&sn, 0, sizeof sn);
  ASSERT_STATUS_OK(pt_build_step(one, NULL, &s1));
  ASSERT_STATUS_OK(pt_build_step(many, mesh, &sn));
  char *text1 = NULL, *textn = NULL;
  size_t size1 = 0, sizen = 0;
  FILE* m1 = open_memstream(&text1, &size1);
  FILE* mn = open_memstream(&textn, &sizen);
  ASSERT_TRUE(m1 && mn);
  ASSERT_STATUS_OK(cml_executable_dump(s1.exe, m1));
  ASSERT_STATUS_OK(cml_executable_dump(sn.exe, mn));
  fclose(m1);
  fclose(mn);
  ASSERT_CONTAINS(textn, "AllReduce");
  ASSERT_CONTAINS(textn, "4 device(s)");
  ASSERT_CONTAINS(textn, "[2, 4]");  // x's shard of [8, 4]
  ASSERT_TRUE(strstr(text1, "AllReduce") == NULL);
  ASSERT_CONTAINS(text1, "[8, 4]");
  cml_status_t st = cml_executable_dump(sn.exe, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  cml_status_free(st);
  // A stream it cannot write: the listing is lost, and the status says so.
  char ro[8] = "x";
  FILE* read_only = fmemopen(ro, sizeof ro, "r");
  ASSERT_TRUE(read_only != NULL);
  st = cml_executable_dump(sn.exe, read_only);
  fclose(read_only);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "module \"step\"");
  cml_status_free(st);
  free(text1);
  free(textn);
  cml_executable_release(s1.exe);
  cml_executable_release(sn.exe);
  cml_backend_release(one);
  cml_backend_release(many);
  cml_mesh_destroy(mesh);
}

#define PT_E2E_TESTS                                                                          \
  , TEST_ENTRY(e2e_c_data_parallel), TEST_ENTRY(e2e_c_data_model),                            \
      TEST_ENTRY(e2e_c_data_model_assigned), TEST_ENTRY(e2e_c_cnn_data_parallel),             \
      TEST_ENTRY(cnn_structure), TEST_ENTRY(e2e_c_refusal_at_compile),                        \
      TEST_ENTRY(e2e_c_while_captures_split_value), TEST_ENTRY(e2e_c_fused_data_parallel),    \
      TEST_ENTRY(fused_structure), TEST_ENTRY(e2e_c_sort), TEST_ENTRY(e2e_c_partial_mul_div), \
      TEST_ENTRY(e2e_c_partial_negation_keeps_zero_sign),                                     \
      TEST_ENTRY(e2e_c_partial_sum_overflow_is_kept),                                         \
      TEST_ENTRY(e2e_c_quantized_attention_data_parallel),                                    \
      TEST_ENTRY(e2e_c_attention_heads_and_batch), TEST_ENTRY(quantized_attention_structure), \
      TEST_ENTRY(attention_heads_structure), TEST_ENTRY(executable_dump_shows_the_partition)
#else
// Embedding lookup and CNN forward, data parallel over 4 devices of c.
TEST(e2e_c_cnn_data_parallel) {
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  cml_status_t st;
  double worst = pt_e2e_run(pt_build_cnn, "c:devices=4", mesh, &st);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  ASSERT_TRUE(worst < 1e-5);
}

// Its partition gathers nothing and reduces only the total.
TEST(cnn_structure) {
  fake_backend_t* fb = pt_backend();
  ASSERT_TRUE(fb != NULL);
  cml_mesh_t* mesh = pt_mesh("data", 4, NULL, 0);
  ASSERT_TRUE(mesh != NULL);
  pt_step_t step;
  memset(&step, 0, sizeof step);
  ASSERT_STATUS_OK(pt_build_cnn(&fb->base, mesh, &step));
  cml_executable_release(step.exe);
  cml_module_t* spmd = NULL;
  ASSERT_STATUS_OK(cml__partition_module(fb->module, &fb->base, &spmd));
  pt_counts_t k = pt_count(spmd);
  ASSERT_EQ_INT(k.all_gather, 0);
  ASSERT_EQ_INT(k.all_reduce, 1);
  ASSERT_EQ_INT(k.dynamic_slice, 0);
  ASSERT_EQ_INT(pt_param(spmd, 0)->dims[0], 2);
  ASSERT_EQ_INT(pt_param(spmd, 2)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[0], 2);
  ASSERT_EQ_INT(pt_output(spmd, 1)->dims[1], 16);
  cml_module_release(spmd);
  cml_mesh_destroy(mesh);
  cml_backend_release(&fb->base);
}
#define PT_E2E_TESTS
#endif  // CML_HAVE_BACKEND_C

TEST_MAIN(TEST_ENTRY(data_parallel), TEST_ENTRY(megatron_mlp), TEST_ENTRY(partial_linearity),
          TEST_ENTRY(partial_scaled_by_constants), TEST_ENTRY(partial_to_split_reduce_scatter),
          TEST_ENTRY(mesh_2d_data_model), TEST_ENTRY(mesh_device_assignment),
          TEST_ENTRY(elementwise_merges_splits), TEST_ENTRY(reshard_outputs),
          TEST_ENTRY(random_programs), TEST_ENTRY(replicated_fallback),
          TEST_ENTRY(sort_keeps_other_splits), TEST_ENTRY(control_flow_whole),
          TEST_ENTRY(fused_dense_keeps_batch), TEST_ENTRY(many_operands_run_whole),
          TEST_ENTRY(two_meshes_unimplemented),
          TEST_ENTRY(executable_dump_falls_back_to_the_module),
          TEST_ENTRY(refuses_non_auto_sharding) PT_E2E_TESTS)
