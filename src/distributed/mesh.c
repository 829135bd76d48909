// SPDX-License-Identifier: Apache-2.0
// src/distributed/mesh.c: device meshes (named axes, logical device assignment) and the replica
// groups computed from them (GoMLX's DeviceMesh and ComputeReplicaGroups).
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "distributed/distributed_internal.h"

//===--- strategies ---===//

const char* cml_distribution_name(cml_distribution_t distribution) {
  switch (distribution) {
    case CML_DISTRIBUTION_NONE:
      return "None";
    case CML_DISTRIBUTION_SPMD:
      return "SPMD";
    case CML_DISTRIBUTION_AUTO_SHARDING:
      return "AutoSharding";
    default:
      return "unknown";
  }
}

//===--- meshes ---===//

static char* cml_mesh_strdup(const char* text) {
  size_t n = strlen(text) + 1;
  char* p = (char*)cml_allocator_malloc(cml_allocator_system(), n, 1);
  if (p) memcpy(p, text, n);
  return p;
}

static void cml_mesh_strfree(char* text) {
  if (text) cml_allocator_free(cml_allocator_system(), text, strlen(text) + 1);
}

// [A-Za-z_][A-Za-z0-9_]*
static bool cml_mesh_is_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* p = s; *p; ++p) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (p != s && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void cml_mesh_destroy(cml_mesh_t* mesh) {
  if (!mesh) return;
  cml_allocator_t a = cml_allocator_system();
  cml_mesh_strfree(mesh->name);
  for (size_t i = 0; i < mesh->axis_count; ++i) cml_mesh_strfree(mesh->axis_names[i]);
  if (mesh->device_assignment) {
    cml_allocator_free(a, mesh->device_assignment,
                       (size_t)mesh->device_count * sizeof *mesh->device_assignment);
  }
  cml_allocator_free(a, mesh, sizeof *mesh);
}

static cml_mesh_t* cml_mesh_alloc(void) {
  cml_mesh_t* m = (cml_mesh_t*)cml_allocator_malloc(cml_allocator_system(), sizeof *m, 16);
  if (m) memset(m, 0, sizeof *m);
  return m;
}

cml_status_t cml_mesh_create(const char* name, const char* const* axis_names,
                             const int64_t* axis_sizes, size_t axis_count, cml_mesh_t** out_mesh) {
  static const char what[] = "cml_mesh_create";
  if (out_mesh) *out_mesh = NULL;
  if (!out_mesh) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_mesh", what);
  if (!name) name = "mesh";
  if (!cml_mesh_is_name(name)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: invalid mesh name \"%s\" (need [A-Za-z_][A-Za-z0-9_]*)", what,
                           name);
  }
  if (axis_count < 1 || axis_count > CML_MAX_MESH_AXES) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: mesh \"%s\" has %zu axes (need 1..%d)",
                           what, name, axis_count, CML_MAX_MESH_AXES);
  }
  if (!axis_names || !axis_sizes) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: mesh \"%s\": NULL axis names or sizes",
                           what, name);
  }
  int64_t devices = 1;
  for (size_t i = 0; i < axis_count; ++i) {
    const char* axis = axis_names[i];
    if (!cml_mesh_is_name(axis)) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: mesh \"%s\": invalid name \"%s\" for axis %zu (need "
                             "[A-Za-z_][A-Za-z0-9_]*)",
                             what, name, axis ? axis : "(null)", i);
    }
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(axis_names[j], axis) == 0) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "%s: mesh \"%s\": axis name \"%s\" used twice (axes %zu and %zu)",
                               what, name, axis, j, i);
      }
    }
    if (axis_sizes[i] < 1) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: mesh \"%s\": axis \"%s\" has size %lld (need >= 1)", what, name,
                             axis, (long long)axis_sizes[i]);
    }
    if (axis_sizes[i] > INT32_MAX || devices * axis_sizes[i] > INT32_MAX) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: mesh \"%s\": the device count passes 2^31-1 at axis \"%s\" "
                             "(size %lld)",
                             what, name, axis, (long long)axis_sizes[i]);
    }
    devices *= axis_sizes[i];
  }
  cml_mesh_t* m = cml_mesh_alloc();
  if (!m) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  m->name = cml_mesh_strdup(name);
  bool ok = m->name != NULL;
  for (size_t i = 0; ok && i < axis_count; ++i) {
    m->axis_names[i] = cml_mesh_strdup(axis_names[i]);
    m->axis_sizes[i] = axis_sizes[i];
    m->axis_count = i + 1;
    ok = m->axis_names[i] != NULL;
  }
  if (!ok) {
    cml_mesh_destroy(m);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  }
  m->device_count = devices;
  *out_mesh = m;
  return CML_OK;
}

cml_status_t cml_mesh_set_device_assignment(cml_mesh_t* mesh, const int32_t* devices,
                                            size_t count) {
  static const char what[] = "cml_mesh_set_device_assignment";
  if (!mesh) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL mesh", what);
  cml_allocator_t a = cml_allocator_system();
  size_t n = (size_t)mesh->device_count;
  if (count == 0) {
    if (mesh->device_assignment)
      cml_allocator_free(a, mesh->device_assignment, n * sizeof(int32_t));
    mesh->device_assignment = NULL;
    return CML_OK;
  }
  if (count != n || !devices) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: mesh \"%s\" has %zu devices, got %zu ids%s", what, mesh->name, n,
                           count, devices ? "" : " (NULL)");
  }
  // One pass with a bitmap: ids in range and each once.
  uint8_t* seen = (uint8_t*)cml_allocator_malloc(a, n, 1);
  if (!seen) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  memset(seen, 0, n);
  cml_status_t st = CML_OK;
  for (size_t k = 0; k < n && st == CML_OK; ++k) {
    int32_t d = devices[k];
    if (d < 0 || (size_t)d >= n) {
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: mesh \"%s\": device id %d at position %zu is out of range [0, %zu)",
                           what, mesh->name, (int)d, k, n);
    } else if (seen[d]) {
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: mesh \"%s\": device id %d appears twice (the assignment must be a "
                           "permutation of 0..%zu)",
                           what, mesh->name, (int)d, n - 1);
    } else {
      seen[d] = 1;
    }
  }
  cml_allocator_free(a, seen, n);
  if (st != CML_OK) return st;
  int32_t* copy = mesh->device_assignment;
  if (!copy) copy = (int32_t*)cml_allocator_malloc(a, n * sizeof *copy, 16);
  if (!copy) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  memcpy(copy, devices, n * sizeof *copy);
  mesh->device_assignment = copy;
  return CML_OK;
}

cml_mesh_t* cml__mesh_clone(const cml_mesh_t* mesh) {
  if (!mesh) return NULL;
  cml_mesh_t* m = NULL;
  cml_status_t made = cml_mesh_create(mesh->name, (const char* const*)mesh->axis_names,
                                      mesh->axis_sizes, mesh->axis_count, &m);
  if (made != CML_OK) {
    // Only out of memory can fail here: |mesh| was validated when it was made.
    cml_status_free(made);
    return NULL;
  }
  if (mesh->device_assignment) {
    cml_status_t st =
        cml_mesh_set_device_assignment(m, mesh->device_assignment, (size_t)mesh->device_count);
    if (st != CML_OK) {
      cml_status_free(st);
      cml_mesh_destroy(m);
      return NULL;
    }
  }
  return m;
}

bool cml__mesh_equal(const cml_mesh_t* a, const cml_mesh_t* b) {
  if (!a || !b) return a == b;
  if (strcmp(a->name, b->name) != 0 || a->axis_count != b->axis_count) return false;
  for (size_t i = 0; i < a->axis_count; ++i) {
    if (strcmp(a->axis_names[i], b->axis_names[i]) != 0 || a->axis_sizes[i] != b->axis_sizes[i]) {
      return false;
    }
  }
  if (!a->device_assignment || !b->device_assignment) {
    return !a->device_assignment && !b->device_assignment;
  }
  return memcmp(a->device_assignment, b->device_assignment,
                (size_t)a->device_count * sizeof(int32_t)) == 0;
}

// Appends to a snprintf-style buffer: |*used| grows by the full length.
static void cml_append(char* buf, size_t size, size_t* used, const char* fmt, ...) CML_PRINTF(4, 5);
static void cml_append(char* buf, size_t size, size_t* used, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char* at = (buf && *used < size) ? buf + *used : NULL;
  size_t room = (buf && *used < size) ? size - *used : 0;
  int n = vsnprintf(at, room, fmt, args);
  va_end(args);
  if (n > 0) *used += (size_t)n;
}

size_t cml__mesh_format(const cml_mesh_t* mesh, char* buf, size_t size) {
  size_t used = 0;
  if (buf && size > 0) buf[0] = '\0';
  if (!mesh) {
    cml_append(buf, size, &used, "(null mesh)");
    return used;
  }
  cml_append(buf, size, &used, "%s{", mesh->name);
  for (size_t i = 0; i < mesh->axis_count; ++i) {
    cml_append(buf, size, &used, "%s%s=%lld", i ? ", " : "", mesh->axis_names[i],
               (long long)mesh->axis_sizes[i]);
  }
  if (mesh->device_assignment) {
    cml_append(buf, size, &used, ", devices=[");
    for (int64_t k = 0; k < mesh->device_count; ++k) {
      if (k == 32) {
        cml_append(buf, size, &used, ", ...");
        break;
      }
      cml_append(buf, size, &used, "%s%d", k ? ", " : "", (int)mesh->device_assignment[k]);
    }
    cml_append(buf, size, &used, "]");
  }
  cml_append(buf, size, &used, "}");
  return used;
}

size_t cml__groups_format(const int32_t* ids, size_t group_count, size_t group_size, char* buf,
                          size_t size) {
  size_t used = 0;
  if (buf && size > 0) buf[0] = '\0';
  size_t listed = 0;
  cml_append(buf, size, &used, "{");
  for (size_t g = 0; g < group_count; ++g) {
    if (listed >= 32) {
      cml_append(buf, size, &used, ", ...");
      break;
    }
    cml_append(buf, size, &used, "%s{", g ? ", " : "");
    for (size_t k = 0; k < group_size; ++k) {
      if (listed >= 32) {
        cml_append(buf, size, &used, ", ...");
        break;
      }
      cml_append(buf, size, &used, "%s%d", k ? ", " : "", (int)ids[g * group_size + k]);
      ++listed;
    }
    cml_append(buf, size, &used, "}");
  }
  cml_append(buf, size, &used, "}");
  return used;
}

//===--- accessors ---===//

const char* cml_mesh_name(const cml_mesh_t* mesh) { return mesh ? mesh->name : NULL; }

size_t cml_mesh_axis_count(const cml_mesh_t* mesh) { return mesh ? mesh->axis_count : 0; }

const char* cml_mesh_axis_name(const cml_mesh_t* mesh, size_t axis) {
  return (mesh && axis < mesh->axis_count) ? mesh->axis_names[axis] : NULL;
}

int64_t cml_mesh_axis_size(const cml_mesh_t* mesh, size_t axis) {
  return (mesh && axis < mesh->axis_count) ? mesh->axis_sizes[axis] : -1;
}

int cml_mesh_axis_index(const cml_mesh_t* mesh, const char* name) {
  if (!mesh || !name) return -1;
  for (size_t i = 0; i < mesh->axis_count; ++i) {
    if (strcmp(mesh->axis_names[i], name) == 0) return (int)i;
  }
  return -1;
}

int64_t cml_mesh_device_count(const cml_mesh_t* mesh) { return mesh ? mesh->device_count : 0; }

const int32_t* cml_mesh_device_assignment(const cml_mesh_t* mesh) {
  return mesh ? mesh->device_assignment : NULL;
}

void cml__mesh_coords(const cml_mesh_t* mesh, int64_t position, int64_t* out_coords) {
  for (size_t i = mesh->axis_count; i-- > 0;) {
    out_coords[i] = position % mesh->axis_sizes[i];
    position /= mesh->axis_sizes[i];
  }
}

//===--- replica groups ---===//

cml_status_t cml_mesh_replica_groups(const cml_mesh_t* mesh, const char* const* axes,
                                     size_t axis_count, int32_t* out_ids, size_t capacity,
                                     cml_replica_groups_t* out_groups) {
  static const char what[] = "cml_mesh_replica_groups";
  if (out_groups) memset(out_groups, 0, sizeof *out_groups);
  if (!mesh || !out_ids || !out_groups) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL mesh, out_ids or out_groups",
                           what);
  }
  if (axis_count > 0 && !axes) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: mesh \"%s\": NULL axes", what,
                           mesh->name);
  }
  if (capacity < (size_t)mesh->device_count) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: mesh \"%s\" has %lld devices, but the capacity is %zu", what,
                           mesh->name, (long long)mesh->device_count, capacity);
  }
  bool in_group[CML_MAX_MESH_AXES] = {false};
  int group_axes[CML_MAX_MESH_AXES];
  int64_t group_size = 1;
  for (size_t i = 0; i < axis_count; ++i) {
    int a = cml_mesh_axis_index(mesh, axes[i]);
    if (a < 0) {
      char text[256];
      cml__mesh_format(mesh, text, sizeof text);
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: unknown axis \"%s\" of mesh %s",
                             what, axes[i] ? axes[i] : "(null)", text);
    }
    if (in_group[a]) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: axis \"%s\" of mesh \"%s\" is listed twice", what, axes[i],
                             mesh->name);
    }
    in_group[a] = true;
    group_axes[i] = a;
    group_size *= mesh->axis_sizes[a];
  }
  int64_t group_count = mesh->device_count / group_size;
  // Row-major strides of the mesh positions.
  int64_t stride[CML_MAX_MESH_AXES];
  int64_t s = 1;
  for (size_t i = mesh->axis_count; i-- > 0;) {
    stride[i] = s;
    s *= mesh->axis_sizes[i];
  }
  // Group g enumerates the other axes row-major; member k enumerates |axes| in the given order
  // (first listed major).
  int64_t other[CML_MAX_MESH_AXES], member[CML_MAX_MESH_AXES];
  for (int64_t g = 0; g < group_count; ++g) {
    int64_t rest = g, base = 0;
    for (size_t i = mesh->axis_count; i-- > 0;) {
      if (in_group[i]) continue;
      other[i] = rest % mesh->axis_sizes[i];
      rest /= mesh->axis_sizes[i];
      base += other[i] * stride[i];
    }
    for (int64_t k = 0; k < group_size; ++k) {
      int64_t r = k, pos = base;
      for (size_t i = axis_count; i-- > 0;) {
        int a = group_axes[i];
        member[a] = r % mesh->axis_sizes[a];
        r /= mesh->axis_sizes[a];
        pos += member[a] * stride[a];
      }
      out_ids[g * group_size + k] = (int32_t)pos;
    }
  }
  out_groups->ids = out_ids;
  out_groups->group_count = (size_t)group_count;
  out_groups->group_size = (size_t)group_size;
  return CML_OK;
}
