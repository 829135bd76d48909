// SPDX-License-Identifier: Apache-2.0
// src/core/registry.c: the default backend registry, plug-in loading, default selection and
// backend creation from config strings.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base_internal.h"
#include "core/runtime_internal.h"

//===--- the registry ---===//

#define CML__REGISTRY_CAPACITY 64
#define CML__NAME_MAX 64

// The fields a factory must have for the registry to use it (up to |create|).
#define CML__FACTORY_MIN_SIZE \
  (offsetof(cml_backend_factory_t, create) + sizeof(((cml_backend_factory_t*)0)->create))
#define CML__FACTORY_HAS(f, field) \
  ((f)->struct_size >=             \
   offsetof(cml_backend_factory_t, field) + sizeof(((cml_backend_factory_t*)0)->field))

static pthread_once_t cml__registry_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t cml__registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static const cml_backend_factory_t* cml__registry_factories[CML__REGISTRY_CAPACITY];
static size_t cml__registry_count;

static void cml__registry_init_once(void) { cml__register_builtin(); }

static void cml__registry_ensure_init(void) {
  pthread_once(&cml__registry_once, cml__registry_init_once);
}

// Calls |fn(user, alias)| for each trimmed, non-empty alias in the comma list |aliases|; stops
// and returns true as soon as |fn| does.
static bool cml__registry_each_alias(const char* aliases,
                                     bool (*fn)(void* user, const char* alias, size_t n),
                                     void* user) {
  if (!aliases) return false;
  const char* p = aliases;
  while (*p) {
    while (*p == ' ' || *p == ',') ++p;
    const char* b = p;
    while (*p && *p != ',') ++p;
    const char* e = p;
    while (e > b && e[-1] == ' ') --e;
    if (e > b && fn(user, b, (size_t)(e - b))) return true;
  }
  return false;
}

static bool cml__registry_alias_equals(void* user, const char* alias, size_t n) {
  const char* name = (const char*)user;
  return strlen(name) == n && strncmp(alias, name, n) == 0;
}

// True when |factory| answers to |name| (its name or one of its aliases).
static bool cml__registry_matches(const cml_backend_factory_t* factory, const char* name) {
  if (strcmp(factory->name, name) == 0) return true;
  return cml__registry_each_alias(factory->aliases, cml__registry_alias_equals, (void*)name);
}

// Must hold the mutex.
static const cml_backend_factory_t* cml__registry_find_locked(const char* name) {
  for (size_t i = 0; i < cml__registry_count; ++i) {
    if (strcmp(cml__registry_factories[i]->name, name) == 0) return cml__registry_factories[i];
  }
  for (size_t i = 0; i < cml__registry_count; ++i) {
    if (cml__registry_matches(cml__registry_factories[i], name)) return cml__registry_factories[i];
  }
  return NULL;
}

typedef struct cml__registry_dup_t {
  const char* taken_by;  // name of the factory that already owns the alias
  char alias[CML__NAME_MAX];
} cml__registry_dup_t;

static bool cml__registry_alias_taken(void* user, const char* alias, size_t n) {
  cml__registry_dup_t* dup = (cml__registry_dup_t*)user;
  if (n >= sizeof dup->alias) n = sizeof dup->alias - 1;
  memcpy(dup->alias, alias, n);
  dup->alias[n] = '\0';
  const cml_backend_factory_t* other = cml__registry_find_locked(dup->alias);
  if (other) {
    dup->taken_by = other->name;
    return true;
  }
  return false;
}

// A character a backend name or alias may hold: printable ASCII other than the config
// syntax's ':', ',', '=', spaces, quotes and backslashes (names are printed in messages,
// environment variables and JSON).
static bool cml__registry_name_char(char ch) {
  return ch > ' ' && ch < 127 && ch != ':' && ch != ',' && ch != '=' && ch != '"' && ch != '\\' &&
         ch != '\'';
}

static bool cml__registry_valid_name(const char* name) {
  if (!name || !*name || strlen(name) >= CML__NAME_MAX) return false;
  for (const char* p = name; *p; ++p) {
    if (!cml__registry_name_char(*p)) return false;
  }
  return true;
}

// An alias (trimmed, from the comma list) that is not a valid name: the first one goes to
// |user| (a char[CML__NAME_MAX + 4], cut with "..." when longer).
static bool cml__registry_alias_invalid(void* user, const char* alias, size_t n) {
  char* out = (char*)user;
  bool bad = n >= CML__NAME_MAX;
  for (size_t i = 0; i < n && !bad; ++i) bad = !cml__registry_name_char(alias[i]);
  if (!bad) return false;
  const size_t keep = n < CML__NAME_MAX ? n : CML__NAME_MAX - 1;
  memcpy(out, alias, keep);
  strcpy(out + keep, n > keep ? "..." : "");
  return true;
}

cml_status_t cml__registry_add(const cml_backend_factory_t* factory) {
  if (!factory) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_backend_register: NULL factory");
  }
  if (factory->struct_size < CML__FACTORY_MIN_SIZE) {
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "cml_backend_register: factory struct_size %zu is smaller than the "
                           "minimum %zu (built against an incompatible cml)",
                           factory->struct_size, (size_t)CML__FACTORY_MIN_SIZE);
  }
  const char* name = factory->name ? factory->name : "(null)";
  if (factory->api_major != CML_BACKEND_API_MAJOR) {
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "cml_backend_register: backend \"%s\" was built for backend API %u.%u, "
                           "this cml implements %d.%d (the major versions must match)",
                           name, factory->api_major, factory->api_minor, CML_BACKEND_API_MAJOR,
                           CML_BACKEND_API_MINOR);
  }
  if (factory->api_minor > CML_BACKEND_API_MINOR) {
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "cml_backend_register: backend \"%s\" needs backend API %u.%u, this cml "
                           "implements only %d.%d",
                           name, factory->api_major, factory->api_minor, CML_BACKEND_API_MAJOR,
                           CML_BACKEND_API_MINOR);
  }
  if (!cml__registry_valid_name(factory->name)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_register: invalid backend name \"%s\" (non-empty, shorter "
                           "than %d characters, printable ASCII without ':', ',', '=', quotes, "
                           "backslashes or spaces)",
                           name, CML__NAME_MAX);
  }
  if (!factory->create) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_register: backend \"%s\" has no create function", name);
  }
  char bad_alias[CML__NAME_MAX + 4];
  if (cml__registry_each_alias(factory->aliases, cml__registry_alias_invalid, bad_alias)) {
    // A config is split at its first ':', so such an alias could never be selected.
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_register: invalid alias \"%s\" of backend \"%s\" "
                           "(shorter than %d characters, printable ASCII without ':', '=', "
                           "quotes, backslashes or spaces)",
                           bad_alias, name, CML__NAME_MAX);
  }

  cml_status_t st = CML_OK;
  pthread_mutex_lock(&cml__registry_mutex);
  const cml_backend_factory_t* other = cml__registry_find_locked(factory->name);
  cml__registry_dup_t dup = {NULL, {0}};
  if (other) {
    st =
        cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                        "cml_backend_register: backend name \"%s\" is already registered%s%s%s",
                        factory->name, strcmp(other->name, factory->name) ? " (an alias of \"" : "",
                        strcmp(other->name, factory->name) ? other->name : "",
                        strcmp(other->name, factory->name) ? "\")" : "");
  } else if (cml__registry_each_alias(factory->aliases, cml__registry_alias_taken, &dup)) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "cml_backend_register: alias \"%s\" of backend \"%s\" is already taken by "
                         "backend \"%s\"",
                         dup.alias, factory->name, dup.taken_by);
  } else if (cml__registry_count == CML__REGISTRY_CAPACITY) {
    st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                         "cml_backend_register: the registry is full (%d backends)",
                         CML__REGISTRY_CAPACITY);
  } else {
    cml__registry_factories[cml__registry_count++] = factory;
  }
  pthread_mutex_unlock(&cml__registry_mutex);
  return st;
}

cml_status_t cml_backend_register(const cml_backend_factory_t* factory) {
  cml__registry_ensure_init();
  return cml__registry_add(factory);
}

const cml_backend_factory_t* cml__registry_find(const char* name) {
  if (!name) return NULL;
  cml__registry_ensure_init();
  pthread_mutex_lock(&cml__registry_mutex);
  const cml_backend_factory_t* f = cml__registry_find_locked(name);
  pthread_mutex_unlock(&cml__registry_mutex);
  return f;
}

// Copies the registered factories (up to CML__REGISTRY_CAPACITY) and returns their count.
static size_t cml__registry_snapshot(const cml_backend_factory_t** out) {
  cml__registry_ensure_init();
  pthread_mutex_lock(&cml__registry_mutex);
  size_t n = cml__registry_count;
  memcpy(out, cml__registry_factories, n * sizeof out[0]);
  pthread_mutex_unlock(&cml__registry_mutex);
  return n;
}

size_t cml_backend_registered_count(void) {
  const cml_backend_factory_t* all[CML__REGISTRY_CAPACITY];
  return cml__registry_snapshot(all);
}

const char* cml_backend_registered_name(size_t i) {
  const cml_backend_factory_t* all[CML__REGISTRY_CAPACITY];
  size_t n = cml__registry_snapshot(all);
  return i < n ? all[i]->name : NULL;
}

const char* cml_backend_registered_aliases(const char* name) {
  const cml_backend_factory_t* f = cml__registry_find(name);
  if (!f) return NULL;
  return f->aliases ? f->aliases : "";
}

const char* cml_backend_config_help(const char* name) {
  const cml_backend_factory_t* f = cml__registry_find(name);
  if (!f) return NULL;
  return (CML__FACTORY_HAS(f, config_help) && f->config_help) ? f->config_help : "(no options)\n";
}

// Appends "name (aliases: a, b), other, ..." of every registered backend to |buffer|.
static void cml__registry_describe_names(char* buffer, size_t size) {
  const cml_backend_factory_t* all[CML__REGISTRY_CAPACITY];
  size_t n = cml__registry_snapshot(all);
  size_t used = 0;
  buffer[0] = '\0';
  for (size_t i = 0; i < n && used < size; ++i) {
    const char* aliases = all[i]->aliases;
    int w;
    if (aliases && *aliases) {
      w = snprintf(buffer + used, size - used, "%s%s (aliases: %s)", i ? ", " : "", all[i]->name,
                   aliases);
    } else {
      w = snprintf(buffer + used, size - used, "%s%s", i ? ", " : "", all[i]->name);
    }
    if (w < 0) break;
    used += (size_t)w;
  }
  if (n == 0) snprintf(buffer, size, "(none)");
}

//===--- default selection ---===//

// Picks the default config from the factories (not from GOMLX_BACKEND): the highest
// default_priority >= 0 (first registered on ties), else the first registered backend other
// than "null". Returns false when no backend is usable.
static bool cml__registry_choose_default(char* config, size_t config_size, char* reason,
                                         size_t reason_size) {
  const cml_backend_factory_t* all[CML__REGISTRY_CAPACITY];
  size_t n = cml__registry_snapshot(all);
  int best = -1;
  const cml_backend_factory_t* best_factory = NULL;
  const char* best_config = NULL;
  const char* best_reason = NULL;
  for (size_t i = 0; i < n; ++i) {
    const cml_backend_factory_t* f = all[i];
    if (!CML__FACTORY_HAS(f, default_priority) || !f->default_priority) continue;
    const char* c = NULL;
    const char* r = NULL;
    int p = f->default_priority(&c, &r);
    if (p >= 0 && p > best) {
      best = p;
      best_factory = f;
      best_config = c;
      best_reason = r;
    }
  }
  if (best_factory) {
    snprintf(config, config_size, "%s",
             best_config && *best_config ? best_config : best_factory->name);
    snprintf(reason, reason_size, "%s",
             best_reason && *best_reason ? best_reason : "the highest-priority available backend");
    return true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(all[i]->name, "null") == 0) continue;
    snprintf(config, config_size, "%s", all[i]->name);
    snprintf(reason, reason_size, "the first registered backend");
    return true;
  }
  snprintf(config, config_size, "%s", "");
  snprintf(reason, reason_size, "no usable backend is registered");
  return false;
}

#define CML__DEFAULT_CONFIG_MAX 1024
static char cml__default_config_text[CML__DEFAULT_CONFIG_MAX];
static char cml__default_reason_text[256];
static pthread_mutex_t cml__default_mutex = PTHREAD_MUTEX_INITIALIZER;

void cml_backend_default_config(const char** out_config, const char** out_reason) {
  char config[CML__DEFAULT_CONFIG_MAX];
  char reason[sizeof cml__default_reason_text];
  const char* env = getenv(CML_BACKEND_ENV);
  if (env) {
    snprintf(config, sizeof config, "%s", env);
    snprintf(reason, sizeof reason, "%s is set", CML_BACKEND_ENV);
    if (!*env) {
      char chosen[CML__DEFAULT_CONFIG_MAX];
      char why[200];
      cml__registry_choose_default(chosen, sizeof chosen, why, sizeof why);
      snprintf(config, sizeof config, "%s", chosen);
      snprintf(reason, sizeof reason, "%s is set but empty: %s", CML_BACKEND_ENV, why);
    }
  } else {
    cml__registry_choose_default(config, sizeof config, reason, sizeof reason);
  }
  pthread_mutex_lock(&cml__default_mutex);
  memcpy(cml__default_config_text, config, sizeof config);
  memcpy(cml__default_reason_text, reason, sizeof reason);
  pthread_mutex_unlock(&cml__default_mutex);
  if (out_config) *out_config = cml__default_config_text;
  if (out_reason) *out_reason = cml__default_reason_text;
}

//===--- creation ---===//

cml_status_t cml_backend_create(const char* config, cml_allocator_t allocator,
                                cml_backend_t** out_backend) {
  if (!out_backend) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_backend_create: NULL out_backend");
  }
  *out_backend = NULL;
  if (!allocator.fn) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_create: the allocator has no function");
  }
  if (!config) config = "";
  const char* trimmed = config;
  while (*trimmed == ' ' || *trimmed == '\t') ++trimmed;

  char chosen[CML__DEFAULT_CONFIG_MAX];
  if (!*trimmed) {
    char reason[256];
    if (!cml__registry_choose_default(chosen, sizeof chosen, reason, sizeof reason)) {
      char names[1024];
      cml__registry_describe_names(names, sizeof names);
      return cml_status_make(CML_STATUS_UNAVAILABLE,
                             "no default backend: %s (registered backends: %s)", reason, names);
    }
    trimmed = chosen;
  }

  char name[CML__NAME_MAX];
  const char* rest = "";
  CML_RETURN_IF_ERROR(cml__config_split(trimmed, name, sizeof name, &rest));
  if (!*name) {
    char names[1024];
    cml__registry_describe_names(names, sizeof names);
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "backend config \"%s\" has no backend name before ':' (registered "
                           "backends: %s)",
                           config, names);
  }
  const cml_backend_factory_t* f = cml__registry_find(name);
  if (!f) {
    char names[1024];
    cml__registry_describe_names(names, sizeof names);
    return cml_status_make(CML_STATUS_NOT_FOUND,
                           "unknown backend \"%s\" (config \"%s\"); registered backends: %s", name,
                           config, names);
  }

  // "help" as the whole config returns the option list.
  const char* rb = rest;
  while (*rb == ' ') ++rb;
  size_t rn = strlen(rb);
  while (rn > 0 && rb[rn - 1] == ' ') --rn;
  if (rn == 4 && strncmp(rb, "help", 4) == 0) {
    const char* help =
        (CML__FACTORY_HAS(f, config_help) && f->config_help) ? f->config_help : "(no options)\n";
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s backend options:\n%s", f->name, help);
  }

  cml_backend_t* backend = NULL;
  // Threads the backend starts (a plugin's pools) inherit the environment it is created in.
  const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
  cml_status_t st = f->create(rest, allocator, &backend);
  cml__fpenv_leave(fpenv);
  if (st != CML_OK) {
    if (backend) cml_backend_release(backend);  // a misbehaving factory: do not leak
    return st;
  }
  if (!backend || !backend->vtable) {
    return cml_status_make(CML_STATUS_INTERNAL,
                           "backend \"%s\": create returned OK without a backend", f->name);
  }
  if (!backend->name || !*backend->name || backend->device_count < 1 ||
      __atomic_load_n(&backend->refcount, __ATOMIC_RELAXED) != 1) {
    // Not through cml_backend_release: without a reference count it would never be destroyed.
    if (CML__VTABLE_HAS(backend->vtable, destroy)) backend->vtable->destroy(backend);
    return cml_status_make(CML_STATUS_INTERNAL,
                           "backend \"%s\": create returned a backend whose base "
                           "cml_backend_init_base did not initialize (no name, no device or a "
                           "reference count other than 1)",
                           f->name);
  }
  *out_backend = backend;
  return CML_OK;
}

cml_status_t cml_backend_new_with_config(const char* config, cml_backend_t** out_backend) {
  return cml_backend_create(config, cml_allocator_system(), out_backend);
}

cml_status_t cml_backend_new(cml_backend_t** out_backend) {
  if (!out_backend) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_backend_new: NULL out_backend");
  }
  *out_backend = NULL;
  const char* env = getenv(CML_BACKEND_ENV);
  if (!env) return cml_backend_create("", cml_allocator_system(), out_backend);
  // Copy: the environment may change while the backend is created.
  char config[CML__DEFAULT_CONFIG_MAX];
  if (strlen(env) >= sizeof config) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s is too long (%zu characters)",
                           CML_BACKEND_ENV, strlen(env));
  }
  snprintf(config, sizeof config, "%s", env);
  cml_status_t st = cml_backend_create(config, cml_allocator_system(), out_backend);
  if (st != CML_OK) st = cml_status_annotate(st, "%s=\"%s\"", CML_BACKEND_ENV, config);
  return st;
}

//===--- plug-ins ---===//

// Closes a plug-in that failed to load, unless factories were registered since the registry
// held |registered_before| of them (the plug-in's own, pointing into it: it stays loaded).
static void cml__plugin_unload(void* handle, size_t registered_before) {
  pthread_mutex_lock(&cml__registry_mutex);
  const bool grew = cml__registry_count != registered_before;
  pthread_mutex_unlock(&cml__registry_mutex);
  if (!grew) dlclose(handle);
}

cml_status_t cml_plugin_load(const char* path) {
  if (!path || !*path) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_plugin_load: empty path");
  }
  cml__registry_ensure_init();
  // A path (not a bare name that dlopen searches for) must name a regular file: dlopen would
  // block on a FIFO, waiting for a writer. O_NONBLOCK keeps the check itself from blocking.
  // (wasm32-wasi has no dynamic loading: its dlopen says so, for any path.)
#if !defined(__wasi__)
  if (strchr(path, '/')) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    const bool regular = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    const int err = errno;
    if (fd >= 0) close(fd);
    if (fd < 0) {
      return cml_status_make(err == ENOENT ? CML_STATUS_NOT_FOUND : CML_STATUS_UNAVAILABLE,
                             "cml_plugin_load: cannot read \"%s\": %s", path, strerror(err));
    }
    if (!regular) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "cml_plugin_load: \"%s\" is not a regular file", path);
    }
  }
#endif
  // A plug-in may register factories itself (from a constructor, or in its query function):
  // the registry then points into the library, which must stay loaded whatever happens next.
  pthread_mutex_lock(&cml__registry_mutex);
  const size_t registered_before = cml__registry_count;
  pthread_mutex_unlock(&cml__registry_mutex);
  dlerror();  // clear any stale error
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    return cml_status_make(CML_STATUS_NOT_FOUND, "cml_plugin_load: cannot load \"%s\": %s", path,
                           err ? err : "unknown dlopen error");
  }
  dlerror();
  void* symbol = dlsym(handle, CML_PLUGIN_QUERY_SYMBOL);
  if (!symbol) {
    const char* err = dlerror();
    cml_status_t st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                      "cml_plugin_load: \"%s\" is not a cml plugin: no symbol %s "
                                      "(%s)",
                                      path, CML_PLUGIN_QUERY_SYMBOL, err ? err : "NULL symbol");
    cml__plugin_unload(handle, registered_before);
    return st;
  }
  cml_plugin_query_fn query;
  memcpy(&query, &symbol, sizeof query);
  const cml_backend_factory_t* factory = query(CML_BACKEND_API_MAJOR);
  if (!factory) {
    cml__plugin_unload(handle, registered_before);
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "cml_plugin_load: \"%s\" returned no backend for host API %d.%d", path,
                           CML_BACKEND_API_MAJOR, CML_BACKEND_API_MINOR);
  }
  // The plug-in registered this very factory itself: it is loaded.
  bool registered = false;
  pthread_mutex_lock(&cml__registry_mutex);
  for (size_t i = registered_before; i < cml__registry_count && !registered; ++i)
    registered = cml__registry_factories[i] == factory;
  pthread_mutex_unlock(&cml__registry_mutex);
  if (registered) return CML_OK;
  cml_status_t st = cml__registry_add(factory);
  if (st != CML_OK) {
    cml__plugin_unload(handle, registered_before);
    return cml_status_annotate(st, "cml_plugin_load \"%s\"", path);
  }
  // The handle stays open: the registry keeps the factory by pointer for the process's life.
  return CML_OK;
}
