// SPDX-License-Identifier: Apache-2.0
// src/core/dynamic.c: specialization of modules with dynamic axes for one binding set, and the
// bounded cache of specialized executables (core/dynamic.h).
#include "core/dynamic.h"

#include <stdio.h>
#include <string.h>

#include "cml/graph.h"
#include "core/builder_internal.h"

bool cml__module_is_dynamic(const cml_module_t* module) {
  if (!module) return false;
  for (uint32_t v = 1; v < module->value_count; ++v) {
    if (cml_shape_is_dynamic(&module->values[v].shape)) return true;
  }
  return false;
}

// Whether |id| (a plain axis or a symbolic sum) is bound by the ids in |bound|.
static bool cml_axis_is_bound(int64_t id, const int64_t* bound, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (bound[i] == id) return true;
  }
  const char* name = cml_axis_name(id);
  if (!name || name[0] != '=') return false;
  char text[CML_MAX_AXIS_NAME_LEN + 1];
  snprintf(text, sizeof text, "%s", name + 1);
  char* save = NULL;
  for (char* term = strtok_r(text, "+", &save); term; term = strtok_r(NULL, "+", &save)) {
    if (term[0] >= '0' && term[0] <= '9') continue;
    int64_t term_id = 0;
    cml_status_t st = cml_axis_id(term, &term_id);  // interned already: no new name
    cml_status_free(st);
    if (!term_id || !cml_axis_is_bound(term_id, bound, count)) return false;
  }
  return true;
}

cml_status_t cml__module_check_dynamic(const cml_module_t* module) {
  enum { kMaxBound = 256 };
  int64_t bound[kMaxBound];
  size_t count = 0;
  const cml_ir_function_t* main_fn = &module->functions[0];
  for (uint32_t p = 0; p < main_fn->param_count; ++p) {
    const cml_shape_t* s = &module->values[main_fn->params[p]].shape;
    for (int32_t i = 0; i < s->rank && count < kMaxBound; ++i) {
      if (s->dims[i] < 0) bound[count++] = -s->dims[i];
    }
  }
  for (uint32_t n = 0; n < module->node_count && count < kMaxBound; ++n) {
    const cml_ir_node_t* node = &module->nodes[n];
    if (node->op == CML_OP_DYNAMIC_RESHAPE && node->attrs->axis >= 0) {
      bound[count++] = -node->attrs->axes[node->attrs->axis];
    }
    for (int32_t i = 0; node->op == CML_OP_DYNAMIC_RESHAPE && i < node->attrs->axis_count; ++i) {
      if (node->attrs->limits[i] > 0 && count < kMaxBound) bound[count++] = -node->attrs->axes[i];
    }
  }
  // An execution binds every one of these names (cml_axis_bindings_t holds at most
  // CML_MAX_AXIS_BINDINGS): more could compile but never run.
  size_t distinct = 0;
  for (size_t i = 0; i < count; ++i) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = bound[j] == bound[i];
    distinct += !seen;
  }
  if (distinct > CML_MAX_AXIS_BINDINGS) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "compile: main's inputs and DynamicReshapes bind %zu dynamic axis "
                           "names; an execution binds at most %d (CML_MAX_AXIS_BINDINGS)",
                           distinct, CML_MAX_AXIS_BINDINGS);
  }
  for (uint32_t v = 1; v < module->value_count; ++v) {
    const cml_shape_t* s = &module->values[v].shape;
    for (int32_t i = 0; i < s->rank; ++i) {
      if (s->dims[i] >= 0 || cml_axis_is_bound(-s->dims[i], bound, count)) continue;
      char text[CML__SHAPE_TEXT];
      const cml_ir_node_t* node = &module->nodes[module->values[v].node];
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "compile: %s gives %s, whose dynamic axis \"%s\" no parameter of "
                             "main binds (every dynamic axis name must come from an input shape)",
                             cml_op_name(node->op), cml__shape_text(s, text),
                             cml_axis_name(cml_dim_axis_id(s->dims[i])));
    }
  }
  return CML_OK;
}

static cml_status_t cml_specialize_error(const cml_ir_node_t* node, cml_status_t st) {
  return cml_status_annotate(st, "specializing %s", cml_op_name(node->op));
}

enum { kMaxSizeElements = 64 };

// Evaluates value |index| of |impl| (a size value: its producers are specialized already, so
// DynamicDimensionSize and DynamicShape are Constants) on the host into |out| (|*count|
// elements). The builder admitted only the ops handled here.
static cml_status_t cml_eval_size(const cml__module_impl_t* impl, uint32_t index, int64_t* out,
                                  int64_t* count) {
  const cml_ir_node_t* node = cml__value_node(impl, index);
  const cml_shape_t* s = &impl->values[index].shape;
  int64_t n = cml_shape_element_count(s);
  const char* name = cml_op_name(node->op);
  if (n < 0 || n > kMaxSizeElements) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "DynamicReshape: a size value uses %s with %lld elements (at most %d)",
                           name, (long long)n, (int)kMaxSizeElements);
  }
  *count = n;
  int64_t a[kMaxSizeElements], b[kMaxSizeElements], an = 0, bn = 0;
  switch (node->op) {
    case CML_OP_CONSTANT:
      for (int64_t i = 0; i < n; ++i) {
        out[i] = s->dtype == CML_DTYPE_I32 ? ((const int32_t*)node->data)[i]
                                           : ((const int64_t*)node->data)[i];
      }
      return CML_OK;
    case CML_OP_RESHAPE:
      return cml_eval_size(impl, node->inputs[0], out, count);
    case CML_OP_CONVERT_DTYPE:
      CML_RETURN_IF_ERROR(cml_eval_size(impl, node->inputs[0], out, count));
      for (int64_t i = 0; i < n && s->dtype == CML_DTYPE_I32; ++i) out[i] = (int32_t)out[i];
      return CML_OK;
    case CML_OP_SLICE: {
      const cml_shape_t* xs = &impl->values[node->inputs[0]].shape;
      CML_RETURN_IF_ERROR(cml_eval_size(impl, node->inputs[0], a, &an));
      if (xs->rank > 1) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "DynamicReshape: a size value slices a rank-%d operand (at most 1)",
                               (int)xs->rank);
      }
      if (xs->rank == 0) return cml_eval_size(impl, node->inputs[0], out, count);
      int64_t k = 0;
      for (int64_t i = node->attrs->starts[0]; i < node->attrs->limits[0] && k < n;
           i += node->attrs->strides[0]) {
        out[k++] = a[i];
      }
      return CML_OK;
    }
    default:
      break;
  }
  // Add, Sub, Mul, Div, Max, Min of same-shape operands.
  CML_RETURN_IF_ERROR(cml_eval_size(impl, node->inputs[0], a, &an));
  CML_RETURN_IF_ERROR(cml_eval_size(impl, node->inputs[1], b, &bn));
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = 0, ai = a[an == 1 ? 0 : i], bi = b[bn == 1 ? 0 : i];  // scalars broadcast
    bool overflow = false;
    switch (node->op) {
      case CML_OP_ADD:
        overflow = __builtin_add_overflow(ai, bi, &r);
        break;
      case CML_OP_SUB:
        overflow = __builtin_sub_overflow(ai, bi, &r);
        break;
      case CML_OP_MUL:
        overflow = __builtin_mul_overflow(ai, bi, &r);
        break;
      case CML_OP_DIV:
        if (bi == 0 || (ai == INT64_MIN && bi == -1)) {
          return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                 "DynamicReshape: a size value divides %lld by %lld", (long long)ai,
                                 (long long)bi);
        }
        r = ai / bi;
        break;
      case CML_OP_MAX:
        r = ai > bi ? ai : bi;
        break;
      case CML_OP_MIN:
        r = ai < bi ? ai : bi;
        break;
      default:
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "DynamicReshape: a size value uses %s, which is not evaluated on "
                               "the host",
                               name);
    }
    if (overflow || (s->dtype == CML_DTYPE_I32 && (r > INT32_MAX || r < INT32_MIN))) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "DynamicReshape: a size value overflows %s in %s",
                             s->dtype == CML_DTYPE_I32 ? "Int32" : "Int64", name);
    }
    out[i] = r;
  }
  return CML_OK;
}

// Resolves and rewrites node |n| of |impl| (a copy of the source module's node), whose inputs
// are resolved already. May add the inferred axis of a DynamicReshape to |bindings|.
static cml_status_t cml_specialize_node(cml__module_impl_t* impl, uint32_t n,
                                        cml_axis_bindings_t* bindings) {
  cml_ir_node_t* node = &impl->nodes[n];
  char text[CML__SHAPE_TEXT], text2[CML__SHAPE_TEXT];
  for (int32_t i = 0; node->op == CML_OP_DYNAMIC_RESHAPE && i < node->attrs->axis_count; ++i) {
    // An axis sized by a runtime value: evaluate it and bind its name.
    if (node->attrs->limits[i] <= 0) continue;
    const cml_shape_t* x = &impl->values[node->inputs[0]].shape;
    const cml_shape_t* pattern = &impl->values[node->first_output].shape;
    const char* name = cml_axis_name(cml_dim_axis_id(pattern->dims[i]));
    int64_t size = 0, count = 0;
    cml_status_t st = cml_eval_size(impl, node->inputs[node->attrs->limits[i]], &size, &count);
    if (st == CML_OK && size <= 0) {
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "the size value is %lld (must be positive)",
                           (long long)size);
    }
    if (st == CML_OK) st = cml_axis_bindings_set_id(bindings, -pattern->dims[i], size);
    if (st != CML_OK) {
      return cml_status_annotate(st, "DynamicReshape: axis %d (\"%s\") of %s for operand %s",
                                 (int)i, name, cml__shape_text(pattern, text2),
                                 cml__shape_text(x, text));
    }
  }
  if (node->op == CML_OP_DYNAMIC_RESHAPE && node->attrs->axis >= 0) {
    // The inferred axis: the operand's element count over the other axes' sizes.
    const cml_shape_t* x = &impl->values[node->inputs[0]].shape;
    const cml_shape_t* pattern = &impl->values[node->first_output].shape;
    int64_t inferred = node->attrs->axis, rest = 1;
    for (int32_t i = 0; i < pattern->rank; ++i) {
      if (i == inferred) continue;
      cml_shape_t one = *pattern;
      one.rank = 1;
      one.dims[0] = pattern->dims[i];
      cml_status_t st = cml_shape_resolve(&one, bindings, &one);
      if (st != CML_OK) return cml_specialize_error(node, st);
      rest *= one.dims[0];  // both bounded by 2^55 elements in all
    }
    int64_t count = cml_shape_element_count(x);
    if (rest <= 0 || count % rest != 0 || count / rest <= 0) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "DynamicReshape: cannot reshape %s (%lld elements) to %s: the "
                             "inferred axis \"%s\" would not be a positive whole size",
                             cml__shape_text(x, text), (long long)count,
                             cml__shape_text(pattern, text2),
                             cml_axis_name(cml_dim_axis_id(pattern->dims[inferred])));
    }
    cml_status_t st = cml_axis_bindings_set_id(bindings, -pattern->dims[inferred], count / rest);
    if (st != CML_OK) return cml_specialize_error(node, st);
  }
  for (uint32_t k = 0; k < node->output_count; ++k) {
    cml_shape_t* s = &impl->values[node->first_output + k].shape;
    cml_status_t st = cml_shape_resolve(s, bindings, s);
    if (st != CML_OK) return cml_specialize_error(node, st);
  }
  const cml_shape_t* out = &impl->values[node->first_output].shape;
  const cml_shape_t* x = node->input_count ? &impl->values[node->inputs[0]].shape : NULL;
  switch (node->op) {
    case CML_OP_RESHAPE:
    case CML_OP_DYNAMIC_RESHAPE:
    case CML_OP_SLICE: {
      cml_ir_attrs_t* attrs = cml__arena_alloc(&impl->arena, sizeof *attrs, 16);
      if (!attrs) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      *attrs = *node->attrs;
      if (node->op == CML_OP_SLICE) {
        for (int32_t i = 0; i < x->rank; ++i) {
          if (attrs->limits[i] < 0) attrs->limits[i] = x->dims[i];
        }
      } else {
        if (cml_shape_element_count(x) != cml_shape_element_count(out)) {
          const cml_shape_t* pattern = &impl->base->values[node->first_output].shape;
          for (int32_t i = 0; node->op == CML_OP_DYNAMIC_RESHAPE && i < out->rank; ++i) {
            if (node->attrs->limits[i] <= 0) continue;  // name the first axis sized by a value
            return cml_status_make(
                CML_STATUS_INVALID_ARGUMENT,
                "DynamicReshape: cannot reshape %s to %s (%lld and %lld elements; axis %d "
                "(\"%s\") is %lld from its size value)",
                cml__shape_text(x, text), cml__shape_text(out, text2),
                (long long)cml_shape_element_count(x), (long long)cml_shape_element_count(out),
                (int)i, cml_axis_name(cml_dim_axis_id(pattern->dims[i])), (long long)out->dims[i]);
          }
          return cml_status_make(
              CML_STATUS_INVALID_ARGUMENT, "%s: cannot reshape %s to %s (%lld and %lld elements)",
              cml_op_name(node->op), cml__shape_text(x, text), cml__shape_text(out, text2),
              (long long)cml_shape_element_count(x), (long long)cml_shape_element_count(out));
        }
        attrs->axis = 0;
        attrs->axis_count = out->rank;
        for (int32_t i = 0; i < out->rank; ++i) attrs->axes[i] = out->dims[i];
        if (node->op == CML_OP_DYNAMIC_RESHAPE) {  // drop the size values: a plain Reshape
          memset(attrs->limits, 0, sizeof attrs->limits);
          node->input_count = 1;
        }
        node->op = CML_OP_RESHAPE;
      }
      node->attrs = attrs;
      break;
    }
    case CML_OP_DYNAMIC_DIMENSION_SIZE:
    case CML_OP_DYNAMIC_SHAPE: {
      int32_t count = node->op == CML_OP_DYNAMIC_SHAPE ? x->rank : 1;
      int32_t* data =
          cml__arena_alloc(&impl->arena, sizeof(int32_t) * (size_t)(count ? count : 1), 64);
      if (!data) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (int32_t i = 0; i < count; ++i) {
        int64_t size = node->op == CML_OP_DYNAMIC_SHAPE ? x->dims[i] : x->dims[node->attrs->axis];
        if (size > INT32_MAX) {
          return cml_status_make(CML_STATUS_OUT_OF_RANGE, "%s: a size of %s is %lld, beyond Int32",
                                 cml_op_name(node->op), cml__shape_text(x, text), (long long)size);
        }
        data[i] = (int32_t)size;
      }
      node->op = CML_OP_CONSTANT;
      node->input_count = 0;
      node->inputs = NULL;
      node->data = data;
      node->data_size = sizeof(int32_t) * (size_t)count;
      break;
    }
    default:
      break;
  }
  return CML_OK;
}

cml_status_t cml__module_specialize(cml_module_t* module, const cml_axis_bindings_t* bindings,
                                    cml_module_t** out_module) {
  *out_module = NULL;
  cml__module_impl_t* src = (cml__module_impl_t*)module;
  cml__module_impl_t* impl = cml__module_impl_create(src->allocator, module->name);
  if (!impl) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_allocator_t a = src->allocator;
  impl->base = cml_module_retain(module);
  impl->nodes = cml_allocator_malloc(a, (size_t)module->node_count * sizeof *impl->nodes, 16);
  // The values array cml__module_impl_create made is replaced by a copy of |module|'s.
  cml_allocator_free(a, impl->values, (size_t)impl->value_capacity * sizeof *impl->values);
  impl->value_count = impl->value_capacity = 0;
  impl->values = cml_allocator_malloc(a, (size_t)module->value_count * sizeof *impl->values, 16);
  if (impl->nodes) impl->node_capacity = module->node_count;
  if (impl->values) impl->value_capacity = module->value_count;
  cml_status_t st = CML_OK;
  if (!impl->nodes || !impl->values) {
    st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "specializing %s: out of memory",
                         module->name ? module->name : "a module");
  } else {
    impl->node_count = module->node_count;
    impl->value_count = module->value_count;
    memcpy(impl->nodes, module->nodes, (size_t)module->node_count * sizeof *impl->nodes);
    memcpy(impl->values, module->values, (size_t)module->value_count * sizeof *impl->values);
    cml_axis_bindings_t b = *bindings;
    // Nodes are in creation order, so every input is resolved before its users.
    for (uint32_t n = 0; n < module->node_count && st == CML_OK; ++n) {
      st = cml_specialize_node(impl, n, &b);
    }
  }
  if (st != CML_OK) {
    cml_module_release(&impl->module);
    return st;
  }
  cml_module_t* m = &impl->module;
  m->node_count = impl->node_count;
  m->nodes = impl->nodes;
  m->value_count = impl->value_count;
  m->values = impl->values;
  m->function_count = module->function_count;
  m->functions = module->functions;
  m->num_devices = module->num_devices;
  m->distribution = module->distribution;
  m->device_assignment = module->device_assignment;
  m->mesh_count = module->mesh_count;
  m->meshes = module->meshes;
  m->param_shardings = module->param_shardings;
  m->output_shardings = module->output_shardings;
  *out_module = m;
  return CML_OK;
}

cml_status_t cml__dynamic_bindings(const cml_executable_t* executable, cml_buffer_t* const* inputs,
                                   cml_axis_bindings_t* out_bindings) {
  cml_axis_bindings_init(out_bindings);
  for (size_t i = 0; i < executable->input_count; ++i) {
    const cml_shape_t* want = &executable->input_shapes[i];
    if (!cml_shape_is_dynamic(want)) continue;
    cml_status_t st = cml_shape_extract_bindings(want, &inputs[i]->shape, out_bindings);
    if (st != CML_OK) {
      return cml_status_annotate(st, "cml_executable_execute: input %zu (parameter \"%s\")", i,
                                 executable->input_names[i]);
    }
  }
  return CML_OK;
}

cml_status_t cml__dynamic_cache_init(cml__dynamic_cache_t* cache, int32_t capacity,
                                     cml_allocator_t allocator) {
  memset(cache, 0, sizeof *cache);
  if (capacity < 1) capacity = 1;
  cache->allocator = allocator;
  cache->capacity = capacity;
  cache->entries = cml_allocator_malloc(allocator, (size_t)capacity * sizeof *cache->entries, 16);
  if (!cache->entries) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(cache->entries, 0, (size_t)capacity * sizeof *cache->entries);
  if (pthread_mutex_init(&cache->mutex, NULL) != 0) {
    cml_allocator_free(allocator, cache->entries, (size_t)capacity * sizeof *cache->entries);
    cache->entries = NULL;
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "dynamic cache: pthread_mutex_init");
  }
  return CML_OK;
}

void cml__dynamic_cache_deinit(cml__dynamic_cache_t* cache) {
  if (!cache || !cache->entries) return;
  for (int32_t i = 0; i < cache->count; ++i) cml_executable_release(cache->entries[i].executable);
  cml_allocator_free(cache->allocator, cache->entries,
                     (size_t)cache->capacity * sizeof *cache->entries);
  pthread_mutex_destroy(&cache->mutex);
  cache->entries = NULL;
  cache->count = 0;
}

// The entry for |key| (under the mutex), or NULL.
static cml__dynamic_entry_t* cml_cache_find(cml__dynamic_cache_t* cache,
                                            const cml_axis_bindings_t* key, uint64_t hash) {
  for (int32_t i = 0; i < cache->count; ++i) {
    cml__dynamic_entry_t* e = &cache->entries[i];
    if (e->hash == hash && cml_axis_bindings_equal(&e->key, key)) return e;
  }
  return NULL;
}

cml_status_t cml__dynamic_executable_get(cml__dynamic_cache_t* cache, cml_executable_t* executable,
                                         cml_buffer_t* const* inputs,
                                         cml__dynamic_compile_fn compile, void* user,
                                         cml_executable_t** out_executable) {
  *out_executable = NULL;
  cml_axis_bindings_t key;
  CML_RETURN_IF_ERROR(cml__dynamic_bindings(executable, inputs, &key));
  uint64_t hash = cml_axis_bindings_hash(&key);
  pthread_mutex_lock(&cache->mutex);
  cml__dynamic_entry_t* hit = cml_cache_find(cache, &key, hash);
  if (hit) {
    hit->last_used = ++cache->clock;
    cache->hits++;
    *out_executable = cml_executable_retain(hit->executable);
    pthread_mutex_unlock(&cache->mutex);
    return CML_OK;
  }
  cache->misses++;
  pthread_mutex_unlock(&cache->mutex);

  // A miss: specialize and compile outside the lock (another thread may do the same key; the
  // first one stored wins).
  cml_module_t* specialized = NULL;
  cml_status_t st = cml__module_specialize(executable->module, &key, &specialized);
  if (st != CML_OK) {
    char text[256];
    return cml_status_annotate(st, "cml_executable_execute: bindings %s",
                               cml_axis_bindings_key(&key, text, sizeof text));
  }
  cml_executable_t* fresh = NULL;
  st = compile(user, specialized, &fresh);
  cml_module_release(specialized);  // the executable retains what it keeps
  if (st != CML_OK) return st;
  pthread_mutex_lock(&cache->mutex);
  cml__dynamic_entry_t* e = cml_cache_find(cache, &key, hash);
  cml_executable_t* evicted = NULL;
  if (e) {
    evicted = fresh;  // lost the race: use the stored one
  } else {
    if (cache->count < cache->capacity) {
      e = &cache->entries[cache->count++];
    } else {
      e = &cache->entries[0];
      for (int32_t i = 1; i < cache->count; ++i) {
        if (cache->entries[i].last_used < e->last_used) e = &cache->entries[i];
      }
      evicted = e->executable;
      cache->evictions++;
    }
    e->key = key;
    e->hash = hash;
    e->executable = fresh;
  }
  e->last_used = ++cache->clock;
  *out_executable = cml_executable_retain(e->executable);
  pthread_mutex_unlock(&cache->mutex);
  cml_executable_release(evicted);
  return CML_OK;
}
