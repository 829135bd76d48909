// SPDX-License-Identifier: Apache-2.0
// src/distributed/sharding.c: sharding specs (GoMLX's ShardingSpec): making, validating, shard
// and logical shapes, shard offsets and the readable form.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "distributed/distributed_internal.h"

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

cml_status_t cml_sharding_make(const cml_mesh_t* mesh, const char* const* per_axis, size_t rank,
                               cml_sharding_t* out_sharding) {
  static const char what[] = "cml_sharding_make";
  if (out_sharding) memset(out_sharding, 0, sizeof *out_sharding);
  if (!out_sharding) return INVALID("%s: NULL out_sharding", what);
  if (!mesh) return INVALID("%s: NULL mesh", what);
  if (rank > CML_MAX_RANK) {
    return INVALID("%s: rank %zu out of range [0, %d] (mesh \"%s\")", what, rank, CML_MAX_RANK,
                   mesh->name);
  }
  if (rank > 0 && !per_axis) return INVALID("%s: NULL per_axis for rank %zu", what, rank);
  cml_sharding_t s;
  memset(&s, 0, sizeof s);
  s.mesh = mesh;
  s.rank = (int32_t)rank;
  for (size_t d = 0; d < rank; ++d) {
    const char* p = per_axis[d];
    if (!p) continue;
    // "" (or only blanks) is replicated; otherwise a list of names separated by commas, each
    // trimmed of blanks, none empty ("x,", ",x" and "x,,y" are errors).
    while (*p == ' ' || *p == '\t') ++p;
    if (!*p) continue;
    for (;;) {
      while (*p == ' ' || *p == '\t') ++p;
      const char* start = p;
      while (*p && *p != ',') ++p;
      const char* end = p;
      while (end > start && (end[-1] == ' ' || end[-1] == '\t')) --end;
      const size_t n = (size_t)(end - start);
      if (n == 0) {
        return INVALID("%s: empty mesh axis name in \"%s\" for tensor axis %zu (mesh \"%s\")", what,
                       per_axis[d], d, mesh->name);
      }
      // Compared at full length: a name is never cut to fit a buffer.
      int a = -1;
      for (size_t i = 0; i < mesh->axis_count && a < 0; ++i) {
        if (strlen(mesh->axis_names[i]) == n && memcmp(mesh->axis_names[i], start, n) == 0) {
          a = (int)i;
        }
      }
      if (a < 0) {
        char text[256];
        cml__mesh_format(mesh, text, sizeof text);
        const int shown = n > 64 ? 64 : (int)n;
        return INVALID("%s: unknown mesh axis \"%.*s\"%s for tensor axis %zu (mesh %s)", what,
                       shown, start, n > 64 ? "..." : "", d, text);
      }
      if (s.axis_count[d] >= CML_MAX_MESH_AXES) {
        return INVALID("%s: tensor axis %zu lists more than %d mesh axes (\"%s\")", what, d,
                       CML_MAX_MESH_AXES, per_axis[d]);
      }
      s.mesh_axes[d][s.axis_count[d]++] = (int8_t)a;
      if (!*p) break;
      ++p;  // past the comma: an item must follow
    }
  }
  CML_RETURN_IF_ERROR(cml_sharding_validate(&s));
  *out_sharding = s;
  return CML_OK;
}

void cml_sharding_replicated(const cml_mesh_t* mesh, cml_sharding_t* out_sharding) {
  if (!out_sharding) return;
  memset(out_sharding, 0, sizeof *out_sharding);
  out_sharding->mesh = mesh;
}

cml_status_t cml_sharding_validate(const cml_sharding_t* sharding) {
  static const char what[] = "cml_sharding_validate";
  if (!sharding) return INVALID("%s: NULL sharding", what);
  const cml_mesh_t* mesh = sharding->mesh;
  if (!mesh) return INVALID("%s: the sharding has no mesh", what);
  if (sharding->rank < 0 || sharding->rank > CML_MAX_RANK) {
    return INVALID("%s: rank %d out of range [0, %d] (mesh \"%s\")", what, (int)sharding->rank,
                   CML_MAX_RANK, mesh->name);
  }
  int used_by[CML_MAX_MESH_AXES];
  for (int i = 0; i < CML_MAX_MESH_AXES; ++i) used_by[i] = -1;
  for (int d = 0; d < CML_MAX_RANK; ++d) {
    int count = sharding->axis_count[d];
    if (count == 0) continue;
    if (d >= sharding->rank) {
      return INVALID("%s: tensor axis %d is split but the spec has rank %d (mesh \"%s\")", what, d,
                     (int)sharding->rank, mesh->name);
    }
    if (count < 0 || count > CML_MAX_MESH_AXES) {
      return INVALID("%s: tensor axis %d has %d mesh axes (need 0..%d)", what, d, count,
                     CML_MAX_MESH_AXES);
    }
    for (int k = 0; k < count; ++k) {
      int a = sharding->mesh_axes[d][k];
      if (a < 0 || (size_t)a >= mesh->axis_count) {
        char text[256];
        cml__mesh_format(mesh, text, sizeof text);
        return INVALID("%s: tensor axis %d uses mesh axis index %d, but mesh %s has %zu axes", what,
                       d, a, text, mesh->axis_count);
      }
      if (used_by[a] >= 0) {
        return INVALID(
            "%s: mesh axis \"%s\" of mesh \"%s\" is used twice (tensor axes %d and %d); a mesh "
            "axis splits at most one tensor axis, once",
            what, mesh->axis_names[a], mesh->name, used_by[a], d);
      }
      used_by[a] = d;
    }
  }
  return CML_OK;
}

bool cml_sharding_is_replicated(const cml_sharding_t* sharding) {
  if (!sharding || !sharding->mesh) return true;
  for (int d = 0; d < sharding->rank && d < CML_MAX_RANK; ++d) {
    if (cml_sharding_num_shards(sharding, d) > 1) return false;
  }
  return true;
}

int64_t cml_sharding_num_shards(const cml_sharding_t* sharding, int axis) {
  if (!sharding || !sharding->mesh || axis < 0 || axis >= sharding->rank || axis >= CML_MAX_RANK) {
    return 1;
  }
  int64_t n = 1;
  for (int k = 0; k < sharding->axis_count[axis] && k < CML_MAX_MESH_AXES; ++k) {
    int a = sharding->mesh_axes[axis][k];
    if (a >= 0 && (size_t)a < sharding->mesh->axis_count) n *= sharding->mesh->axis_sizes[a];
  }
  return n;
}

// "tensor axis 1 (size 7) is not divisible by its 2 shards (mesh axes "model")".
static cml_status_t cml_sharding_not_divisible(const char* what, const cml_sharding_t* s,
                                               const cml_shape_t* logical, int d) {
  char shape[160], spec[512], axes[160] = "";
  size_t used = 0;
  for (int k = 0; k < s->axis_count[d]; ++k) {
    int n = snprintf(axes + used, sizeof axes - used, "%s\"%s\"", k ? ", " : "",
                     s->mesh->axis_names[s->mesh_axes[d][k]]);
    if (n > 0 && used + (size_t)n < sizeof axes) used += (size_t)n;
  }
  cml_sharding_format(s, spec, sizeof spec);
  return INVALID(
      "%s: dimension %d of %s (size %lld) is not divisible by its %lld shards (mesh "
      "axes %s) of %s",
      what, d, cml_shape_format(logical, shape, sizeof shape), (long long)logical->dims[d],
      (long long)cml_sharding_num_shards(s, d), axes, spec);
}

cml_status_t cml_sharding_shard_shape(const cml_sharding_t* sharding, const cml_shape_t* logical,
                                      cml_shape_t* out_shard) {
  static const char what[] = "cml_sharding_shard_shape";
  if (!sharding || !logical || !out_shard) {
    if (out_shard) memset(out_shard, 0, sizeof *out_shard);
    return INVALID("%s: NULL sharding, logical shape or out_shard", what);
  }
  // |out_shard| may be |logical|.
  const cml_shape_t logical_copy = *logical;
  logical = &logical_copy;
  memset(out_shard, 0, sizeof *out_shard);
  // The logical shape itself must be one (a negative dim once gave a negative shard).
  cml_shape_t checked;
  cml_status_t valid = logical->rank >= 0 && logical->rank <= CML_MAX_RANK
                           ? cml_shape_init(&checked, logical->dtype, logical->rank, logical->dims)
                           : INVALID("rank %d is outside 0..%d", (int)logical->rank, CML_MAX_RANK);
  if (valid != CML_OK) return cml_status_annotate(valid, "%s: the logical shape", what);
  if (!sharding->mesh) {  // no sharding given: replicated
    *out_shard = *logical;
    return CML_OK;
  }
  CML_RETURN_IF_ERROR(cml_sharding_validate(sharding));
  if (sharding->rank > logical->rank) {
    char shape[160], spec[512];
    cml_sharding_format(sharding, spec, sizeof spec);
    return INVALID("%s: %s has rank %d, more than the rank %d of %s", what, spec,
                   (int)sharding->rank, (int)logical->rank,
                   cml_shape_format(logical, shape, sizeof shape));
  }
  cml_shape_t s = *logical;
  for (int d = 0; d < sharding->rank; ++d) {
    int64_t n = cml_sharding_num_shards(sharding, d);
    if (n <= 1) continue;
    if (logical->dims[d] % n != 0) return cml_sharding_not_divisible(what, sharding, logical, d);
    s.dims[d] = logical->dims[d] / n;
  }
  *out_shard = s;
  return CML_OK;
}

cml_status_t cml_sharding_logical_shape(const cml_sharding_t* sharding, const cml_shape_t* shard,
                                        cml_shape_t* out_logical) {
  static const char what[] = "cml_sharding_logical_shape";
  if (!sharding || !shard || !out_logical) {
    if (out_logical) memset(out_logical, 0, sizeof *out_logical);
    return INVALID("%s: NULL sharding, shard shape or out_logical", what);
  }
  // |out_logical| may be |shard|.
  const cml_shape_t shard_copy = *shard;
  shard = &shard_copy;
  memset(out_logical, 0, sizeof *out_logical);
  if (!sharding->mesh) {
    *out_logical = *shard;
    return CML_OK;
  }
  CML_RETURN_IF_ERROR(cml_sharding_validate(sharding));
  char shape[160], spec[512];
  if (sharding->rank > shard->rank) {
    cml_sharding_format(sharding, spec, sizeof spec);
    return INVALID("%s: %s has rank %d, more than the rank %d of %s", what, spec,
                   (int)sharding->rank, (int)shard->rank,
                   cml_shape_format(shard, shape, sizeof shape));
  }
  cml_shape_t s = *shard;
  for (int d = 0; d < sharding->rank; ++d) {
    int64_t n = cml_sharding_num_shards(sharding, d);
    if (__builtin_mul_overflow(shard->dims[d], n, &s.dims[d])) {
      cml_sharding_format(sharding, spec, sizeof spec);
      return INVALID("%s: dimension %d of shard %s times %lld shards overflows (%s)", what, d,
                     cml_shape_format(shard, shape, sizeof shape), (long long)n, spec);
    }
  }
  cml_shape_t checked;
  cml_status_t st = cml_shape_init(&checked, s.dtype, s.rank, s.dims);
  if (st != CML_OK) {
    cml_sharding_format(sharding, spec, sizeof spec);
    return cml_status_annotate(st, "%s: the logical shape of shard %s under %s", what,
                               cml_shape_format(shard, shape, sizeof shape), spec);
  }
  *out_logical = s;
  return CML_OK;
}

cml_status_t cml_sharding_shard_offsets(const cml_sharding_t* sharding, const cml_shape_t* logical,
                                        int64_t position, int64_t* out_offsets) {
  static const char what[] = "cml_sharding_shard_offsets";
  if (!sharding || !logical || !out_offsets) {
    return INVALID("%s: NULL sharding, logical shape or out_offsets", what);
  }
  for (int d = 0; d < logical->rank && d < CML_MAX_RANK; ++d) out_offsets[d] = 0;
  if (!sharding->mesh) {
    if (position != 0) {
      return INVALID("%s: position %lld of a spec without a mesh (only 0)", what,
                     (long long)position);
    }
    return CML_OK;
  }
  const cml_mesh_t* mesh = sharding->mesh;
  if (position < 0 || position >= mesh->device_count) {
    return INVALID("%s: position %lld out of range [0, %lld) of mesh \"%s\"", what,
                   (long long)position, (long long)mesh->device_count, mesh->name);
  }
  cml_shape_t shard;
  CML_RETURN_IF_ERROR(cml_sharding_shard_shape(sharding, logical, &shard));
  int64_t coords[CML_MAX_MESH_AXES];
  cml__mesh_coords(mesh, position, coords);
  for (int d = 0; d < sharding->rank; ++d) {
    int64_t index = 0;
    for (int k = 0; k < sharding->axis_count[d]; ++k) {
      int a = sharding->mesh_axes[d][k];
      index = index * mesh->axis_sizes[a] + coords[a];
    }
    out_offsets[d] = index * shard.dims[d];
  }
  return CML_OK;
}

size_t cml_sharding_format(const cml_sharding_t* sharding, char* buf, size_t size) {
  char text[1024];
  size_t used = 0;
#define APPEND(...)                                                                           \
  do {                                                                                        \
    int n_ = snprintf(text + used, used < sizeof text ? sizeof text - used : 0, __VA_ARGS__); \
    if (n_ > 0) used += (size_t)n_;                                                           \
    if (used >= sizeof text) used = sizeof text - 1;                                          \
  } while (0)
  if (!sharding || !sharding->mesh) {
    APPEND("ShardingSpec{replicated}");
  } else {
    const cml_mesh_t* mesh = sharding->mesh;
    APPEND("ShardingSpec{mesh=%s, axes=[", mesh->name);
    for (int d = 0; d < sharding->rank && d < CML_MAX_RANK; ++d) {
      int count = sharding->axis_count[d];
      if (count <= 0) {
        APPEND("%sR", d ? ", " : "");
        continue;
      }
      APPEND("%sS(", d ? ", " : "");
      for (int k = 0; k < count && k < CML_MAX_MESH_AXES; ++k) {
        int a = sharding->mesh_axes[d][k];
        const char* name = (a >= 0 && (size_t)a < mesh->axis_count) ? mesh->axis_names[a] : "?";
        APPEND("%s%s", k ? ", " : "", name);
      }
      APPEND(")");
    }
    APPEND("]}");
  }
#undef APPEND
  if (buf && size > 0) snprintf(buf, size, "%s", text);
  return used;
}
