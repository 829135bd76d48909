// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_fake_plugin.c: fake PJRT plugins for the XLA backend's tests, written from the
// documented ABI (docs/xla.md, src/backends/xla/pjrt/pjrt_abi.h).
//
// Built plain, it exports GetPjrtApi with API version 0.10, far older than the 0.57 cml
// requires, and nothing else.
//
// Built with FAKE_PJRT_MULTI_NODE (xla_fake_multinode_plugin), it is a PJRT 0.112 plugin whose
// client joins a multi-node job the way a GPU plugin does: Client_Create accepts node_id /
// num_nodes (kInt64; unknown option names are refused with XLA's "Unexpected option name"
// text), needs all three key-value callbacks when num_nodes > 1, and then, like a real plugin
// exchanging its topology at client creation:
//   1. puts "fake_pjrt/topology/<node>" = "node=<node>;devices=<d>;check=<node*7919+d>",
//   2. try-gets its own key (must come back unchanged) and "fake_pjrt/never_put" (must be
//      NOT_FOUND),
//   3. gets every other node's key from a thread per node (blocking, 20 s timeout) and checks
//      the value's fields,
//   4. lists every node's devices: node k has 1 + k % 2 devices (FAKE_PJRT_DEVICES=<n>: n each),
//      global ids numbered in node order from 100 (process index = node), its own addressable.
// A failed callback or a wrong value fails Client_Create with an error carrying the callback's
// code and message. Environment knobs for tests: FAKE_PJRT_MISSING_KEY_MS=<ms> also gets a key
// nobody puts with that timeout (client creation then fails with the get's error);
// FAKE_PJRT_IGNORE_NODES=1 ignores the node options and KV callbacks (reports only its own
// devices as process 0, as a single-process plugin would). fake_pjrt_kv_log() returns what the
// last Client_Create exchanged, and the executions since. Float32 buffers only; every program
// "compiles", and executing it returns, for each device list, argument 0 plus the id of the
// device (logging the launch id and the devices, in list order).
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef FAKE_PJRT_MULTI_NODE

typedef struct fake_pjrt_api_t {
  size_t struct_size;
  void* extension_start;
  struct {
    size_t struct_size;
    void* extension_start;
    int major_version;
    int minor_version;
  } version;
  void* slots[16];
} fake_pjrt_api_t;

__attribute__((visibility("default"))) const fake_pjrt_api_t* GetPjrtApi(void);

const fake_pjrt_api_t* GetPjrtApi(void) {
  static fake_pjrt_api_t api;
  api.struct_size = sizeof api;
  api.version.struct_size = sizeof api.version;
  api.version.major_version = 0;
  api.version.minor_version = 10;
  return &api;
}

#else  // FAKE_PJRT_MULTI_NODE

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/xla/pjrt/pjrt_abi.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT const cml_pjrt_api_t* GetPjrtApi(void);
FAKE_EXPORT const char* fake_pjrt_kv_log(void);

enum { kFakeMaxNodes = 64, kFakeMaxDevices = 256 };

//===--- errors ---===//

struct cml_pjrt_error_t {
  int code;
  char message[1024];
};

static cml_pjrt_error_t* fake_error(int code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static cml_pjrt_error_t* fake_error(int code, const char* fmt, ...) {
  cml_pjrt_error_t* e = calloc(1, sizeof *e);
  if (!e) abort();
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return e;
}

// PJRT_CallbackError: how the host's callbacks hand errors back.
static cml_pjrt_error_t* fake_callback_error(int code, const char* message, size_t size) {
  return fake_error(code, "%.*s", (int)(size > 900 ? 900 : size), message);
}
static cml_pjrt_callback_error_fn fake_callback_error_fn = fake_callback_error;

static void fake_error_destroy(void* p) {
  cml_pjrt_error_destroy_args_t* a = p;
  free(a->error);
}

static void fake_error_message(void* p) {
  cml_pjrt_error_message_args_t* a = p;
  a->message = a->error->message;
  a->message_size = strlen(a->error->message);
}

static cml_pjrt_error_t* fake_error_get_code(void* p) {
  cml_pjrt_error_get_code_args_t* a = p;
  a->code = a->error->code;
  return NULL;
}

static cml_pjrt_error_t* fake_ok(void* p) {
  (void)p;
  return NULL;
}

//===--- devices and clients ---===//

struct cml_pjrt_device_description_t {
  int id;
  int process_index;
};

struct cml_pjrt_device_t {
  cml_pjrt_device_description_t description;
  bool addressable;
};

struct cml_pjrt_client_t {
  int node_id, num_nodes;
  int device_count, local_count;
  cml_pjrt_device_t devices[kFakeMaxDevices];
  cml_pjrt_device_t* all[kFakeMaxDevices];
  cml_pjrt_device_t* local[kFakeMaxDevices];
};

static pthread_mutex_t fake_log_mutex = PTHREAD_MUTEX_INITIALIZER;
static char fake_log[4096];

const char* fake_pjrt_kv_log(void) { return fake_log; }

static void fake_log_add(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_log_add(const char* fmt, ...) {
  pthread_mutex_lock(&fake_log_mutex);
  size_t used = strlen(fake_log);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fake_log + used, sizeof fake_log - used, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&fake_log_mutex);
}

static int fake_devices_of(int node) {
  const char* env = getenv("FAKE_PJRT_DEVICES");
  if (env && atoi(env) > 0) return atoi(env);
  return 1 + node % 2;
}

typedef struct fake_kv_t {
  cml_pjrt_kv_get_fn get;
  void* get_arg;
  cml_pjrt_kv_try_get_fn try_get;
  void* try_get_arg;
  cml_pjrt_kv_put_fn put;
  void* put_arg;
} fake_kv_t;

static void fake_key(int node, char* out, size_t size) {
  snprintf(out, size, "fake_pjrt/topology/%d", node);
}

static void fake_value(int node, char* out, size_t size) {
  const int d = fake_devices_of(node);
  snprintf(out, size, "node=%d;devices=%d;check=%d", node, d, node * 7919 + d);
}

// Gets |key| (blocking); on success *out_value is a malloc'd NUL-terminated copy.
static cml_pjrt_error_t* fake_get(const fake_kv_t* kv, const char* key, int timeout_ms,
                                  char** out_value) {
  cml_pjrt_kv_get_args_t args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.key = key;
  args.key_size = strlen(key);
  args.timeout_in_ms = timeout_ms;
  args.callback_error = &fake_callback_error_fn;
  args.user_arg = kv->get_arg;
  cml_pjrt_error_t* e = kv->get(&args);
  if (e) return e;
  if (!args.value || !args.value_deleter_callback) {
    return fake_error(CML_PJRT_CODE_INTERNAL, "fake: get %s: no value or no deleter", key);
  }
  *out_value = malloc(args.value_size + 1);
  if (!*out_value) abort();
  memcpy(*out_value, args.value, args.value_size);
  (*out_value)[args.value_size] = '\0';
  args.value_deleter_callback(args.value);
  return NULL;
}

typedef struct fake_getter_t {
  const fake_kv_t* kv;
  int node;
  int devices;  // out
  cml_pjrt_error_t* error;
} fake_getter_t;

static void* fake_getter_main(void* p) {
  fake_getter_t* g = p;
  char key[64], want[96];
  fake_key(g->node, key, sizeof key);
  fake_value(g->node, want, sizeof want);
  char* value = NULL;
  g->error = fake_get(g->kv, key, 20000, &value);
  if (g->error) return NULL;
  int node = -1, devices = -1, check = -1;
  if (sscanf(value, "node=%d;devices=%d;check=%d", &node, &devices, &check) != 3 ||
      node != g->node || check != node * 7919 + devices || strcmp(value, want) != 0) {
    g->error = fake_error(CML_PJRT_CODE_DATA_LOSS, "fake: key %s has \"%s\", want \"%s\"", key,
                          value, want);
  } else {
    g->devices = devices;
  }
  free(value);
  return NULL;
}

// The topology exchange of node |me| of |n|; fills devices[k] with node k's device count.
static cml_pjrt_error_t* fake_exchange(const fake_kv_t* kv, int me, int n, int* devices) {
  char key[64], value[96];
  fake_key(me, key, sizeof key);
  fake_value(me, value, sizeof value);
  cml_pjrt_kv_put_args_t put;
  memset(&put, 0, sizeof put);
  put.struct_size = sizeof put;
  put.key = key;
  put.key_size = strlen(key);
  put.value = value;
  put.value_size = strlen(value);
  put.callback_error = &fake_callback_error_fn;
  put.user_arg = kv->put_arg;
  cml_pjrt_error_t* e = kv->put(&put);
  if (e) return e;
  fake_log_add("node %d of %d: put %s;", me, n, key);
  // try-get: its own key comes back, a key nobody puts is NOT_FOUND.
  cml_pjrt_kv_try_get_args_t tg;
  memset(&tg, 0, sizeof tg);
  tg.struct_size = sizeof tg;
  tg.key = key;
  tg.key_size = strlen(key);
  tg.callback_error = &fake_callback_error_fn;
  tg.user_arg = kv->try_get_arg;
  e = kv->try_get(&tg);
  if (e) return e;
  const bool same =
      tg.value && tg.value_size == strlen(value) && memcmp(tg.value, value, tg.value_size) == 0;
  if (tg.value && tg.value_deleter_callback) tg.value_deleter_callback(tg.value);
  if (!same) return fake_error(CML_PJRT_CODE_DATA_LOSS, "fake: try-get %s: wrong value", key);
  memset(&tg, 0, sizeof tg);
  tg.struct_size = sizeof tg;
  tg.key = "fake_pjrt/never_put";
  tg.key_size = strlen(tg.key);
  tg.callback_error = &fake_callback_error_fn;
  tg.user_arg = kv->try_get_arg;
  e = kv->try_get(&tg);
  if (!e) {
    return fake_error(CML_PJRT_CODE_INTERNAL, "fake: try-get of a key never put succeeded");
  }
  const int code = e->code;
  free(e);
  if (code != CML_PJRT_CODE_NOT_FOUND) {
    return fake_error(CML_PJRT_CODE_INTERNAL, "fake: try-get of a key never put: code %d", code);
  }
  fake_log_add(" try-get ok;");
  fake_getter_t getters[kFakeMaxNodes];
  pthread_t threads[kFakeMaxNodes];
  bool started[kFakeMaxNodes];
  for (int k = 0; k < n; ++k) {
    getters[k] = (fake_getter_t){.kv = kv, .node = k, .devices = -1, .error = NULL};
    started[k] = k != me && pthread_create(&threads[k], NULL, fake_getter_main, &getters[k]) == 0;
    if (k != me && !started[k]) fake_getter_main(&getters[k]);
  }
  cml_pjrt_error_t* first = NULL;
  for (int k = 0; k < n; ++k) {
    if (started[k]) pthread_join(threads[k], NULL);
    if (k == me) {
      devices[k] = fake_devices_of(me);
      continue;
    }
    if (getters[k].error && !first) {
      first = getters[k].error;
    } else if (getters[k].error) {
      free(getters[k].error);
    }
    devices[k] = getters[k].devices;
    if (!getters[k].error) fake_log_add(" got node %d (%d devices);", k, devices[k]);
  }
  if (first) return first;
  const char* missing = getenv("FAKE_PJRT_MISSING_KEY_MS");
  if (missing && *missing) {
    char* unused = NULL;
    e = fake_get(kv, "fake_pjrt/missing", atoi(missing), &unused);
    free(unused);
    if (e) return e;
    return fake_error(CML_PJRT_CODE_INTERNAL, "fake: a get of a key nobody puts succeeded");
  }
  return NULL;
}

static bool fake_name_is(const cml_pjrt_named_value_t* v, const char* name) {
  return v->name_size == strlen(name) && memcmp(v->name, name, v->name_size) == 0;
}

static cml_pjrt_error_t* fake_client_create(void* p) {
  cml_pjrt_client_create_args_t* a = p;
  int node_id = 0, num_nodes = 1;
  for (size_t i = 0; i < a->num_options; ++i) {
    const cml_pjrt_named_value_t* v = &a->create_options[i];
    if (fake_name_is(v, "node_id") || fake_name_is(v, "num_nodes")) {
      if (v->type != CML_PJRT_NAMED_INT64) {
        return fake_error(CML_PJRT_CODE_INVALID_ARGUMENT, "fake: option %.*s has type %d",
                          (int)v->name_size, v->name, v->type);
      }
      if (fake_name_is(v, "node_id")) node_id = (int)v->value.int64_value;
      if (fake_name_is(v, "num_nodes")) num_nodes = (int)v->value.int64_value;
    } else if (!fake_name_is(v, "preallocate") && !fake_name_is(v, "memory_fraction") &&
               !fake_name_is(v, "allocator") && !fake_name_is(v, "visible_devices")) {
      return fake_error(CML_PJRT_CODE_INVALID_ARGUMENT,
                        "Unexpected option name passed to PJRT_Client_Create: %.*s",
                        (int)v->name_size, v->name);
    }
  }
  const char* ignore = getenv("FAKE_PJRT_IGNORE_NODES");
  if (ignore && strcmp(ignore, "1") == 0) node_id = 0, num_nodes = 1;
  if (num_nodes < 1 || num_nodes > kFakeMaxNodes || node_id < 0 || node_id >= num_nodes) {
    return fake_error(CML_PJRT_CODE_INVALID_ARGUMENT, "fake: node_id %d of num_nodes %d", node_id,
                      num_nodes);
  }
  int devices[kFakeMaxNodes];
  pthread_mutex_lock(&fake_log_mutex);
  fake_log[0] = '\0';
  pthread_mutex_unlock(&fake_log_mutex);
  if (num_nodes > 1) {
    if (!a->kv_get_callback || !a->kv_put_callback || !a->kv_try_get_callback) {
      return fake_error(CML_PJRT_CODE_INVALID_ARGUMENT,
                        "fake: num_nodes=%d needs the key-value callbacks (get, try-get, put)",
                        num_nodes);
    }
    const fake_kv_t kv = {a->kv_get_callback,     a->kv_get_user_arg, a->kv_try_get_callback,
                          a->kv_try_get_user_arg, a->kv_put_callback, a->kv_put_user_arg};
    cml_pjrt_error_t* e = fake_exchange(&kv, node_id, num_nodes, devices);
    if (e) return e;
  } else {
    devices[0] = fake_devices_of(0);
  }
  cml_pjrt_client_t* c = calloc(1, sizeof *c);
  if (!c) abort();
  c->node_id = node_id;
  c->num_nodes = num_nodes;
  for (int k = 0; k < num_nodes; ++k) {
    for (int d = 0; d < devices[k] && c->device_count < kFakeMaxDevices; ++d) {
      cml_pjrt_device_t* dev = &c->devices[c->device_count];
      dev->description.id = 100 + c->device_count;
      dev->description.process_index = k;
      dev->addressable = k == node_id;
      c->all[c->device_count++] = dev;
      if (dev->addressable) c->local[c->local_count++] = dev;
    }
  }
  a->client = c;
  return NULL;
}

static cml_pjrt_error_t* fake_client_destroy(void* p) {
  cml_pjrt_client_args_t* a = p;
  free(a->client);
  return NULL;
}

static cml_pjrt_error_t* fake_platform_name(void* p) {
  cml_pjrt_client_string_args_t* a = p;
  a->str = "fake";
  a->size = 4;
  return NULL;
}

static cml_pjrt_error_t* fake_platform_version(void* p) {
  cml_pjrt_client_string_args_t* a = p;
  a->str = "fake 1";
  a->size = 6;
  return NULL;
}

static cml_pjrt_error_t* fake_process_index(void* p) {
  cml_pjrt_client_process_index_args_t* a = p;
  a->process_index = a->client->node_id;
  return NULL;
}

static cml_pjrt_error_t* fake_devices(void* p) {
  cml_pjrt_client_devices_args_t* a = p;
  a->devices = a->client->all;
  a->num_devices = (size_t)a->client->device_count;
  return NULL;
}

static cml_pjrt_error_t* fake_addressable_devices(void* p) {
  cml_pjrt_client_devices_args_t* a = p;
  a->devices = a->client->local;
  a->num_devices = (size_t)a->client->local_count;
  return NULL;
}

//===--- buffers and executions (float32 only) ---===//

struct cml_pjrt_buffer_t {
  cml_pjrt_device_t* device;
  size_t count;  // float elements
  float* data;
};

struct cml_pjrt_loaded_executable_t {
  int unused;
};

static cml_pjrt_error_t* fake_buffer_from_host(void* p) {
  cml_pjrt_buffer_from_host_args_t* a = p;
  size_t count = 1;
  for (size_t i = 0; i < a->num_dims; ++i) count *= (size_t)a->dims[i];
  cml_pjrt_buffer_t* b = calloc(1, sizeof *b);
  if (!b) abort();
  b->device = a->device;
  b->count = count;
  b->data = calloc(count + 1, sizeof *b->data);
  if (!b->data) abort();
  memcpy(b->data, a->data, count * sizeof *b->data);
  a->buffer = b;
  a->done_with_host_buffer = NULL;
  return NULL;
}

static cml_pjrt_error_t* fake_buffer_destroy(void* p) {
  cml_pjrt_buffer_args_t* a = p;
  if (a->buffer) free(a->buffer->data);
  free(a->buffer);
  return NULL;
}

static cml_pjrt_error_t* fake_buffer_to_host(void* p) {
  cml_pjrt_buffer_to_host_args_t* a = p;
  size_t bytes = a->src->count * sizeof(float);
  memcpy(a->dst, a->src->data, bytes < a->dst_size ? bytes : a->dst_size);
  a->event = NULL;
  return NULL;
}

// Every program "compiles"; executing one returns, per device list, argument 0 plus the
// device's id (so a test sees which device ran which slot) and logs the launch.
static cml_pjrt_error_t* fake_compile(void* p) {
  cml_pjrt_client_compile_args_t* a = p;
  a->executable = calloc(1, sizeof *a->executable);
  if (!a->executable) abort();
  return NULL;
}

static cml_pjrt_error_t* fake_executable_destroy(void* p) {
  cml_pjrt_loaded_executable_destroy_args_t* a = p;
  free(a->executable);
  return NULL;
}

static cml_pjrt_error_t* fake_execute(void* p) {
  cml_pjrt_execute_args_t* a = p;
  if (a->num_args < 1) return fake_error(CML_PJRT_CODE_INVALID_ARGUMENT, "fake: no arguments");
  fake_log_add(" execute launch=%d devices=", a->options ? a->options->launch_id : -1);
  for (size_t d = 0; d < a->num_devices; ++d) {
    const cml_pjrt_buffer_t* in = a->argument_lists[d][0];
    cml_pjrt_device_t* device = a->execute_device ? a->execute_device : in->device;
    if (!device->addressable) {
      return fake_error(CML_PJRT_CODE_INVALID_ARGUMENT, "fake: device id %d is not addressable",
                        device->description.id);
    }
    cml_pjrt_buffer_t* out = calloc(1, sizeof *out);
    if (!out) abort();
    out->device = device;
    out->count = in->count;
    out->data = calloc(in->count + 1, sizeof *out->data);
    if (!out->data) abort();
    for (size_t i = 0; i < in->count; ++i) {
      out->data[i] = in->data[i] + (float)device->description.id;
    }
    a->output_lists[d][0] = out;
    if (a->device_complete_events) a->device_complete_events[d] = NULL;
    fake_log_add("%s%d", d ? "," : "", device->description.id);
  }
  fake_log_add(";");
  return NULL;
}

static cml_pjrt_error_t* fake_get_description(void* p) {
  cml_pjrt_device_get_description_args_t* a = p;
  a->device_description = &a->device->description;
  return NULL;
}

static cml_pjrt_error_t* fake_description_id(void* p) {
  cml_pjrt_device_description_id_args_t* a = p;
  a->id = a->device_description->id;
  return NULL;
}

static cml_pjrt_error_t* fake_description_process(void* p) {
  cml_pjrt_device_description_process_index_args_t* a = p;
  a->process_index = a->device_description->process_index;
  return NULL;
}

static cml_pjrt_error_t* fake_description_kind(void* p) {
  cml_pjrt_device_description_string_args_t* a = p;
  a->str = "fake device";
  a->size = 11;
  return NULL;
}

static cml_pjrt_error_t* fake_is_addressable(void* p) {
  cml_pjrt_device_is_addressable_args_t* a = p;
  a->is_addressable = a->device->addressable;
  return NULL;
}

// Stores |fn| in slot |slot| (the table holds plain function pointers of several types).
#define FAKE_SLOT(api, slot, fn)                      \
  do {                                                \
    void (*src_)(void) = (void (*)(void))(fn);        \
    memcpy(&(api).slots[(slot)], &src_, sizeof src_); \
  } while (0)

static cml_pjrt_api_t fake_api;

static void fake_api_init(void) {
  fake_api.pjrt_api_version.struct_size = sizeof fake_api.pjrt_api_version;
  fake_api.pjrt_api_version.major_version = 0;
  fake_api.pjrt_api_version.minor_version = 112;
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_ERROR_DESTROY, fake_error_destroy);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_ERROR_MESSAGE, fake_error_message);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_ERROR_GET_CODE, fake_error_get_code);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_PLUGIN_INITIALIZE, fake_ok);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_CREATE, fake_client_create);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_DESTROY, fake_client_destroy);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_PLATFORM_NAME, fake_platform_name);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_PROCESS_INDEX, fake_process_index);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_PLATFORM_VERSION, fake_platform_version);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_DEVICES, fake_devices);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_ADDRESSABLE_DEVICES, fake_addressable_devices);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_COMPILE, fake_compile);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_DEVICE_DESCRIPTION_ID, fake_description_id);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_DEVICE_DESCRIPTION_PROCESS_INDEX, fake_description_process);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_DEVICE_DESCRIPTION_KIND, fake_description_kind);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_DEVICE_GET_DESCRIPTION, fake_get_description);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_DEVICE_IS_ADDRESSABLE, fake_is_addressable);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_CLIENT_BUFFER_FROM_HOST_BUFFER, fake_buffer_from_host);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_BUFFER_DESTROY, fake_buffer_destroy);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_BUFFER_TO_HOST_BUFFER, fake_buffer_to_host);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_LOADED_EXECUTABLE_DESTROY, fake_executable_destroy);
  FAKE_SLOT(fake_api, CML_PJRT_SLOT_LOADED_EXECUTABLE_EXECUTE, fake_execute);
  fake_api.struct_size = sizeof fake_api;
}

const cml_pjrt_api_t* GetPjrtApi(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fake_api_init);
  return &fake_api;
}

#endif  // FAKE_PJRT_MULTI_NODE
