// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/pjrt/pjrt.c: PJRT plugin loading, error conversion, clients, buffers,
// compilation and execution (see pjrt.h).
#include "backends/xla/pjrt/pjrt.h"
#include "base/base_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <elf.h>
#endif

//===--- small helpers ---===//

static char* cml_xla_pjrt_strndup(const char* text, size_t size) {
  char* copy = malloc(size + 1);
  if (!copy) return NULL;
  if (size) memcpy(copy, text, size);
  copy[size] = '\0';
  return copy;
}

#define CML_XLA_ARGS_INIT(args)        \
  do {                                 \
    memset(&(args), 0, sizeof(args));  \
    (args).struct_size = sizeof(args); \
  } while (0)

//===--- errors ---===//

// Error_Destroy and Error_Message return nothing: call them through their real type.
typedef void (*cml_xla_void_fn)(void* args);
static cml_xla_void_fn cml_xla_as_void_fn(cml_pjrt_fn fn) {
  cml_xla_void_fn out;
  memcpy(&out, &fn, sizeof out);
  return out;
}

static cml_status_code_t cml_xla_pjrt_code(int code) {
  switch (code) {
    case CML_PJRT_CODE_CANCELLED:
      return CML_STATUS_CANCELLED;
    case CML_PJRT_CODE_INVALID_ARGUMENT:
      return CML_STATUS_INVALID_ARGUMENT;
    case CML_PJRT_CODE_DEADLINE_EXCEEDED:
      return CML_STATUS_DEADLINE_EXCEEDED;
    case CML_PJRT_CODE_NOT_FOUND:
      return CML_STATUS_NOT_FOUND;
    case CML_PJRT_CODE_RESOURCE_EXHAUSTED:
      return CML_STATUS_RESOURCE_EXHAUSTED;
    case CML_PJRT_CODE_FAILED_PRECONDITION:
      return CML_STATUS_FAILED_PRECONDITION;
    case CML_PJRT_CODE_OUT_OF_RANGE:
      return CML_STATUS_OUT_OF_RANGE;
    case CML_PJRT_CODE_UNIMPLEMENTED:
      return CML_STATUS_UNIMPLEMENTED;
    case CML_PJRT_CODE_UNAVAILABLE:
      return CML_STATUS_UNAVAILABLE;
    default:
      return CML_STATUS_INTERNAL;
  }
}

cml_pjrt_fn cml__xla_plugin_fn(const cml__xla_plugin_t* plugin, cml_pjrt_slot_t slot) {
  if (!plugin || !plugin->api) return NULL;
  size_t needed = offsetof(cml_pjrt_api_t, slots) + sizeof(cml_pjrt_fn) * ((size_t)slot + 1);
  if (plugin->api->struct_size < needed) return NULL;
  return plugin->api->slots[slot];
}

cml_status_t cml__xla_error_to_status(const cml__xla_plugin_t* plugin, cml_pjrt_error_t* error,
                                      const char* what) {
  if (!error) return CML_OK;
  cml_pjrt_error_message_args_t msg;
  CML_XLA_ARGS_INIT(msg);
  msg.error = error;
  cml_pjrt_fn message_fn = cml__xla_plugin_fn(plugin, CML_PJRT_SLOT_ERROR_MESSAGE);
  if (message_fn) cml_xla_as_void_fn(message_fn)(&msg);
  int code = CML_PJRT_CODE_UNKNOWN;
  cml_pjrt_fn code_fn = cml__xla_plugin_fn(plugin, CML_PJRT_SLOT_ERROR_GET_CODE);
  if (code_fn) {
    cml_pjrt_error_get_code_args_t get;
    CML_XLA_ARGS_INIT(get);
    get.error = error;
    cml_pjrt_error_t* inner = code_fn(&get);
    if (!inner)
      code = get.code;  // an error from GetCode itself is ignored (and leaked: never
                        // seen; destroying it could recurse)
  }
  // Build the status before destroying the error: the message lives with it.
  int size = msg.message ? (int)(msg.message_size > 4000 ? 4000 : msg.message_size) : 0;
  cml_status_t status =
      cml_status_make(cml_xla_pjrt_code(code), "xla: %s: %.*s", what ? what : "PJRT call", size,
                      msg.message ? msg.message : "");
  cml_pjrt_fn destroy_fn = cml__xla_plugin_fn(plugin, CML_PJRT_SLOT_ERROR_DESTROY);
  if (destroy_fn) {
    cml_pjrt_error_destroy_args_t destroy;
    CML_XLA_ARGS_INIT(destroy);
    destroy.error = error;
    cml_xla_as_void_fn(destroy_fn)(&destroy);
  }
  return status;
}

cml_status_t cml__xla_call(const cml__xla_plugin_t* plugin, cml_pjrt_slot_t slot, void* args,
                           const char* what) {
  cml_pjrt_fn fn = cml__xla_plugin_fn(plugin, slot);
  if (!fn) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: %s: the PJRT plugin %s (API 0.%d) does not provide this call",
                           what, plugin && plugin->path ? plugin->path : "?",
                           plugin ? plugin->minor_version : 0);
  }
  return cml__xla_error_to_status(plugin, fn(args), what);
}

cml_status_t cml__xla_event_await(const cml__xla_plugin_t* plugin, cml_pjrt_event_t* event,
                                  const char* what) {
  if (!event) return CML_OK;
  cml_pjrt_event_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.event = event;
  cml_status_t status = cml__xla_call(plugin, CML_PJRT_SLOT_EVENT_AWAIT, &args, what);
  CML_XLA_ARGS_INIT(args);
  args.event = event;
  cml_status_t destroy = cml__xla_call(plugin, CML_PJRT_SLOT_EVENT_DESTROY, &args, what);
  if (status == CML_OK) return destroy;
  cml_status_free(destroy);
  return status;
}

//===--- plugin loading ---===//

#define CML_XLA_MAX_PLUGINS 16
static pthread_mutex_t cml_xla_plugins_mutex = PTHREAD_MUTEX_INITIALIZER;
static cml__xla_plugin_t* cml_xla_plugins[CML_XLA_MAX_PLUGINS];
static size_t cml_xla_plugin_count;

// Checks the ELF structure (Linux): dlopen maps the file's segments and reading a page past the
// end of a truncated file raises SIGBUS, which no status could report.
#if defined(__linux__)
static cml_status_t cml_xla_elf_bad(const char* path, const char* why, unsigned long long a,
                                    unsigned long long b) {
  char detail[160];
  snprintf(detail, sizeof detail, why, a, b);
  return cml_status_make(CML_STATUS_UNAVAILABLE,
                         "xla: \"%s\" is not a loadable PJRT plugin: %s (truncated or damaged "
                         "file?)",
                         path, detail);
}

cml_status_t cml__xla_check_shared_object(const char* path) {
  // O_NONBLOCK: a FIFO would otherwise block the open until a writer comes.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return cml_status_make(errno == ENOENT ? CML_STATUS_NOT_FOUND : CML_STATUS_UNAVAILABLE,
                           "xla: cannot read PJRT plugin \"%s\": %s", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: \"%s\" is not a PJRT plugin: not a regular file", path);
  }
  unsigned long long size = (unsigned long long)st.st_size;
  Elf64_Ehdr eh;
  memset(&eh, 0, sizeof eh);
  ssize_t got = pread(fd, &eh, sizeof eh, 0);
  cml_status_t result = CML_OK;
  if (got < (ssize_t)EI_NIDENT || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    result = cml_xla_elf_bad(path, "not an ELF file (%llu bytes)", size, 0);
  } else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || got < (ssize_t)sizeof eh) {
    // cml runs on 64-bit hosts only; a 32-bit library would not load either.
    result = cml_xla_elf_bad(path, "not a 64-bit ELF file (class %llu, %llu bytes)",
                             eh.e_ident[EI_CLASS], size);
  } else if (eh.e_type != ET_DYN) {
    result =
        cml_xla_elf_bad(path, "not an ELF shared object (type %llu, %llu bytes)", eh.e_type, size);
  } else if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
             eh.e_phoff + (unsigned long long)eh.e_phnum * sizeof(Elf64_Phdr) > size) {
    result = cml_xla_elf_bad(path, "its program headers end at byte %llu of %llu",
                             eh.e_phoff + (unsigned long long)eh.e_phnum * eh.e_phentsize, size);
  } else if (eh.e_shoff != 0 &&
             eh.e_shoff + (unsigned long long)eh.e_shnum * eh.e_shentsize > size) {
    result = cml_xla_elf_bad(path, "its section headers end at byte %llu of %llu",
                             eh.e_shoff + (unsigned long long)eh.e_shnum * eh.e_shentsize, size);
  } else {
    for (unsigned i = 0; i < eh.e_phnum && result == CML_OK; ++i) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (unsigned long long)i * sizeof ph)) !=
          (ssize_t)sizeof ph) {
        result = cml_xla_elf_bad(path, "cannot read program header %llu of %llu", i, eh.e_phnum);
      } else if (ph.p_type != PT_NULL && ph.p_offset + ph.p_filesz > size) {
        result = cml_xla_elf_bad(path, "a segment ends at byte %llu of %llu",
                                 ph.p_offset + ph.p_filesz, size);
      }
    }
  }
  close(fd);
  return result;
}
#else
cml_status_t cml__xla_check_shared_object(const char* path) {
  (void)path;
  return CML_OK;
}
#endif

// The process that first loaded a plugin (0: none yet; atomic). A child of fork() inherits the
// plugin's state but none of its threads.
static long cml_xla_loader_pid;

long cml__xla_plugin_loader_pid(void) {
  return __atomic_load_n(&cml_xla_loader_pid, __ATOMIC_ACQUIRE);
}

static cml_status_t cml_xla_plugin_open(const char* path, void** out_handle,
                                        cml_pjrt_get_api_fn* out_get_api) {
  *out_handle = NULL;
  *out_get_api = NULL;
  struct stat st;
  if (stat(path, &st) != 0) {
    return cml_status_make(CML_STATUS_NOT_FOUND, "xla: PJRT plugin \"%s\" not found: %s", path,
                           strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: \"%s\" is not a PJRT plugin: not a regular file", path);
  }
  CML_RETURN_IF_ERROR(cml__xla_check_shared_object(path));
  dlerror();
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    // Mapping the segments failed for lack of memory or address space (RLIMIT_AS): the file
    // may be sound, so this is not a broken plugin (which would be reinstalled).
    if (why &&
        (strstr(why, "failed to map segment") || strcasestr(why, "cannot allocate memory"))) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "xla: cannot load the PJRT plugin \"%s\": out of memory or address "
                             "space (dlopen: %s; check `ulimit -v`)",
                             path, why);
    }
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: \"%s\" is not a loadable PJRT plugin (dlopen failed: %s)", path,
                           why ? why : "unknown error");
  }
  dlerror();
  void* sym = dlsym(handle, CML_PJRT_GET_API_SYMBOL);
  if (!sym) {
    dlclose(handle);
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: \"%s\" is not a PJRT plugin: it does not export %s", path,
                           CML_PJRT_GET_API_SYMBOL);
  }
  *out_handle = handle;
  long none = 0;
  __atomic_compare_exchange_n(&cml_xla_loader_pid, &none, cml__process_id(), false,
                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  // POSIX guarantees that a data pointer from dlsym converts to a function pointer.
  memcpy(out_get_api, &sym, sizeof sym);
  return CML_OK;
}

cml_status_t cml__xla_plugin_probe(const char* path) {
  void* handle = NULL;
  cml_pjrt_get_api_fn get_api = NULL;
  CML_RETURN_IF_ERROR(cml_xla_plugin_open(path, &handle, &get_api));
  // Keep it loaded: a plugin may not survive dlclose, and loading it next is cheap.
  return CML_OK;
}

static void cml_xla_read_attributes(cml__xla_plugin_t* plugin) {
  plugin->xla_version = -1;
  plugin->stablehlo_version[0] = '\0';
  cml_pjrt_plugin_attributes_args_t args;
  CML_XLA_ARGS_INIT(args);
  cml_status_t st =
      cml__xla_call(plugin, CML_PJRT_SLOT_PLUGIN_ATTRIBUTES, &args, "PJRT_Plugin_Attributes");
  if (st != CML_OK) {
    cml_status_free(st);  // attributes are informational only
    return;
  }
  for (size_t i = 0; i < args.num_attributes && args.attributes; ++i) {
    const cml_pjrt_named_value_t* a = &args.attributes[i];
    if (!a->name) continue;
    if (a->name_size == 11 && memcmp(a->name, "xla_version", 11) == 0 &&
        a->type == CML_PJRT_NAMED_INT64) {
      plugin->xla_version = a->value.int64_value;
    } else if (a->name_size == 25 && memcmp(a->name, "stablehlo_current_version", 25) == 0 &&
               a->type == CML_PJRT_NAMED_INT64_LIST && a->value_size == 3 &&
               a->value.int64_array_value) {
      const int64_t* v = a->value.int64_array_value;
      snprintf(plugin->stablehlo_version, sizeof plugin->stablehlo_version, "%lld.%lld.%lld",
               (long long)v[0], (long long)v[1], (long long)v[2]);
    }
  }
}

cml_status_t cml__xla_plugin_load(const char* path, const cml__xla_plugin_t** out_plugin) {
  if (out_plugin) *out_plugin = NULL;
  if (!path || !*path || !out_plugin) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: empty PJRT plugin path");
  }
  char* real = realpath(path, NULL);
  const char* key = real ? real : path;
  pthread_mutex_lock(&cml_xla_plugins_mutex);
  for (size_t i = 0; i < cml_xla_plugin_count; ++i) {
    if (strcmp(cml_xla_plugins[i]->path, key) == 0) {
      *out_plugin = cml_xla_plugins[i];
      pthread_mutex_unlock(&cml_xla_plugins_mutex);
      free(real);
      return CML_OK;
    }
  }
  // The plugin reads TF_CPP_MIN_LOG_LEVEL when it is loaded; quiet by default, as go-xla does.
  setenv("TF_CPP_MIN_LOG_LEVEL", "3", 0);
  cml_status_t status = CML_OK;
  void* handle = NULL;
  cml_pjrt_get_api_fn get_api = NULL;
  cml__xla_plugin_t* plugin = NULL;
  status = cml_xla_plugin_open(key, &handle, &get_api);
  if (status != CML_OK) goto done;
  const cml_pjrt_api_t* api = get_api();
  if (!api) {
    status =
        cml_status_make(CML_STATUS_UNAVAILABLE,
                        "xla: \"%s\": GetPjrtApi returned NULL (not a usable PJRT plugin)", key);
    goto done;
  }
  if (api->struct_size < offsetof(cml_pjrt_api_t, slots)) {
    status = cml_status_make(CML_STATUS_INCOMPATIBLE,
                             "xla: \"%s\": PJRT API table of %zu bytes is too small", key,
                             api->struct_size);
    goto done;
  }
  int major = api->pjrt_api_version.major_version;
  int minor = api->pjrt_api_version.minor_version;
  if (major != 0 || minor < CML_PJRT_MIN_MINOR) {
    status = cml_status_make(
        CML_STATUS_INCOMPATIBLE,
        "xla: PJRT plugin \"%s\" has API version %d.%d; cml needs 0.%d or newer (0.x with x >= "
        "%d): install a newer plugin (e.g. `cml install cpu`)",
        key, major, minor, CML_PJRT_MIN_MINOR, CML_PJRT_MIN_MINOR);
    goto done;
  }
  if (cml_xla_plugin_count == CML_XLA_MAX_PLUGINS) {
    status = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "xla: too many PJRT plugins loaded (at most %d)", CML_XLA_MAX_PLUGINS);
    goto done;
  }
  plugin = calloc(1, sizeof *plugin);
  char* path_copy = cml_xla_pjrt_strndup(key, strlen(key));
  if (!plugin || !path_copy) {
    free(plugin);
    free(path_copy);
    plugin = NULL;
    status = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    goto done;
  }
  plugin->path = path_copy;
  plugin->handle = handle;
  plugin->api = api;
  plugin->major_version = major;
  plugin->minor_version = minor;
  cml_pjrt_plugin_initialize_args_t init;
  CML_XLA_ARGS_INIT(init);
  status = cml__xla_call(plugin, CML_PJRT_SLOT_PLUGIN_INITIALIZE, &init, "PJRT_Plugin_Initialize");
  if (status != CML_OK) {
    free(plugin->path);
    free(plugin);
    plugin = NULL;
    goto done;
  }
  cml_xla_read_attributes(plugin);
  cml_xla_plugins[cml_xla_plugin_count++] = plugin;
  *out_plugin = plugin;
  handle = NULL;  // owned by the plugin now (never closed)
done:
  pthread_mutex_unlock(&cml_xla_plugins_mutex);
  // A handle that failed the checks stays open: some libraries misbehave on dlclose, and the
  // process may try the same file again.
  (void)handle;
  free(real);
  return status;
}

//===--- compile options ---===//

typedef struct cml_xla_pb_t {
  uint8_t* data;
  size_t size, capacity;
  bool overflow;
} cml_xla_pb_t;

static void cml_xla_pb_byte(cml_xla_pb_t* pb, uint8_t byte) {
  if (pb->size < pb->capacity) {
    pb->data[pb->size] = byte;
  } else {
    pb->overflow = true;
  }
  pb->size++;
}

static void cml_xla_pb_varint(cml_xla_pb_t* pb, uint64_t value) {
  while (value >= 0x80) {
    cml_xla_pb_byte(pb, (uint8_t)(value | 0x80));
    value >>= 7;
  }
  cml_xla_pb_byte(pb, (uint8_t)value);
}

static void cml_xla_pb_key(cml_xla_pb_t* pb, uint32_t field, uint32_t wire_type) {
  cml_xla_pb_varint(pb, ((uint64_t)field << 3) | wire_type);
}

// int64 fields: negative values are 10-byte two's complement varints.
static void cml_xla_pb_int(cml_xla_pb_t* pb, uint32_t field, int64_t value) {
  cml_xla_pb_key(pb, field, 0);
  cml_xla_pb_varint(pb, (uint64_t)value);
}

static void cml_xla_pb_bytes(cml_xla_pb_t* pb, uint32_t field, const cml_xla_pb_t* inner) {
  cml_xla_pb_key(pb, field, 2);
  cml_xla_pb_varint(pb, inner->size);
  for (size_t i = 0; i < inner->size; ++i) cml_xla_pb_byte(pb, inner->data[i]);
}

enum { CML_XLA_PB_SCRATCH = 4096 };

cml_status_t cml__xla_compile_options_encode(const cml__xla_compile_config_t* config, uint8_t* out,
                                             size_t capacity, size_t* out_size) {
  if (out_size) *out_size = 0;
  if (!config || !out_size || config->num_replicas < 1 || config->num_partitions < 1) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: compile options need num_replicas >= 1 and num_partitions >= 1");
  }
  size_t device_count = (size_t)config->num_replicas * (size_t)config->num_partitions;
  if (config->portable && (device_count != 1 || config->device_ids)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: a portable executable runs on one device, without a device "
                           "assignment (got %zu devices)",
                           device_count);
  }
  if (device_count > 256) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: %zu devices exceed the 256 cml supports", device_count);
  }
  uint8_t build_buf[CML_XLA_PB_SCRATCH], assign_buf[CML_XLA_PB_SCRATCH];
  cml_xla_pb_t build = {build_buf, 0, sizeof build_buf, false};
  cml_xla_pb_int(&build, 1, -1);  // device_ordinal: unset
  cml_xla_pb_int(&build, 4, config->num_replicas);
  cml_xla_pb_int(&build, 5, config->num_partitions);
  if (config->use_spmd_partitioning) cml_xla_pb_int(&build, 6, 1);
  if (config->device_ids) {
    cml_xla_pb_t assign = {assign_buf, 0, sizeof assign_buf, false};
    cml_xla_pb_int(&assign, 1, config->num_replicas);
    cml_xla_pb_int(&assign, 2, config->num_partitions);
    // One ComputationDevice per partition listing every replica's device id (unpacked, as in
    // the byte strings verified against the CPU plugin, docs/xla.md).
    for (int p = 0; p < config->num_partitions; ++p) {
      uint8_t cd_buf[CML_XLA_PB_SCRATCH / 2];
      cml_xla_pb_t cd = {cd_buf, 0, sizeof cd_buf, false};
      for (int r = 0; r < config->num_replicas; ++r) {
        cml_xla_pb_int(&cd, 1, config->device_ids[r * config->num_partitions + p]);
      }
      cml_xla_pb_bytes(&assign, 3, &cd);
      if (cd.overflow) assign.overflow = true;
    }
    cml_xla_pb_bytes(&build, 9, &assign);
    if (assign.overflow) build.overflow = true;
  }
  if (config->use_shardy_partitioner) cml_xla_pb_int(&build, 19, 1);
  cml_xla_pb_int(&build, 23, 1);  // process_count
  cml_xla_pb_t top = {out, 0, capacity, false};
  cml_xla_pb_bytes(&top, 3, &build);
  // compile_portable_executable, written either way (false for device assignments).
  cml_xla_pb_int(&top, 4, config->portable ? 1 : 0);
  if (build.overflow) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "xla: compile options exceed the encoder's scratch space");
  }
  if (top.overflow) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "xla: compile options need %zu bytes, %zu given", top.size, capacity);
  }
  *out_size = top.size;
  return CML_OK;
}

//===--- clients ---===//

static cml_status_t cml_xla_client_string(const cml__xla_plugin_t* plugin,
                                          cml_pjrt_client_t* client, cml_pjrt_slot_t slot,
                                          const char* what, char** out) {
  cml_pjrt_client_string_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.client = client;
  CML_RETURN_IF_ERROR(cml__xla_call(plugin, slot, &args, what));
  *out = cml_xla_pjrt_strndup(args.str ? args.str : "", args.str ? args.size : 0);
  return *out ? CML_OK : cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
}

// Describes |device| as device |i| of |c|: its global id, description text and process index
// (0 when the plugin lacks DeviceDescription_ProcessIndex).
static cml_status_t cml_xla_describe_device(cml__xla_client_t* c, size_t i,
                                            cml_pjrt_device_t* device, int* out_process) {
  const cml__xla_plugin_t* plugin = c->plugin;
  c->devices[i] = device;
  c->device_ids[i] = (int)i;
  *out_process = 0;
  cml_pjrt_device_get_description_args_t get;
  CML_XLA_ARGS_INIT(get);
  get.device = device;
  CML_RETURN_IF_ERROR(cml__xla_call(plugin, CML_PJRT_SLOT_DEVICE_GET_DESCRIPTION, &get,
                                    "PJRT_Device_GetDescription"));
  cml_pjrt_device_description_id_args_t id;
  CML_XLA_ARGS_INIT(id);
  id.device_description = get.device_description;
  CML_RETURN_IF_ERROR(
      cml__xla_call(plugin, CML_PJRT_SLOT_DEVICE_DESCRIPTION_ID, &id, "PJRT_DeviceDescription_Id"));
  c->device_ids[i] = id.id;
  if (c->device_processes) {
    cml_pjrt_device_description_process_index_args_t process;
    CML_XLA_ARGS_INIT(process);
    process.device_description = get.device_description;
    cml_status_t st = cml__xla_call(plugin, CML_PJRT_SLOT_DEVICE_DESCRIPTION_PROCESS_INDEX,
                                    &process, "PJRT_DeviceDescription_ProcessIndex");
    if (st != CML_OK) return st;
    *out_process = process.process_index;
  }
  cml_pjrt_device_description_string_args_t kind;
  CML_XLA_ARGS_INIT(kind);
  kind.device_description = get.device_description;
  cml_status_t st = cml__xla_call(plugin, CML_PJRT_SLOT_DEVICE_DESCRIPTION_KIND, &kind,
                                  "PJRT_DeviceDescription_Kind");
  if (st != CML_OK) {
    cml_status_free(st);
    kind.str = "device";
    kind.size = 6;
  }
  char text[256];
  int len;
  if (c->device_processes) {
    len = snprintf(text, sizeof text, "%s:%zu (%.*s, id %d, process %d)", c->platform_name, i,
                   (int)(kind.size > 200 ? 200 : kind.size), kind.str ? kind.str : "", id.id,
                   *out_process);
  } else {
    len = snprintf(text, sizeof text, "%s:%zu (%.*s, id %d)", c->platform_name, i,
                   (int)(kind.size > 200 ? 200 : kind.size), kind.str ? kind.str : "", id.id);
  }
  c->device_descriptions[i] = cml_xla_pjrt_strndup(text, (size_t)(len < 0 ? 0 : len));
  if (!c->device_descriptions[i]) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  return CML_OK;
}

static cml_status_t cml_xla_client_alloc_devices(cml__xla_client_t* c, size_t n, bool multi) {
  c->devices = calloc(n, sizeof *c->devices);
  c->device_ids = calloc(n, sizeof *c->device_ids);
  c->device_descriptions = calloc(n, sizeof *c->device_descriptions);
  if (multi) c->device_processes = calloc(n, sizeof *c->device_processes);
  if (!c->devices || !c->device_ids || !c->device_descriptions || (multi && !c->device_processes)) {
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  c->device_count = (int)n;
  return CML_OK;
}

// Lists the devices of |slot| (Client_Devices or Client_AddressableDevices).
static cml_status_t cml_xla_list_devices(const cml__xla_client_t* c, cml_pjrt_slot_t slot,
                                         const char* what, cml_pjrt_device_t* const** out_devices,
                                         size_t* out_count) {
  cml_pjrt_client_devices_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.client = c->client;
  CML_RETURN_IF_ERROR(cml__xla_call(c->plugin, slot, &args, what));
  if (args.num_devices == 0 || args.num_devices > 4096 || !args.devices) {
    return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: the %s plugin reports %zu devices (%s)",
                           c->platform_name, args.num_devices, what);
  }
  *out_devices = args.devices;
  *out_count = args.num_devices;
  return CML_OK;
}

static cml_status_t cml_xla_client_devices(cml__xla_client_t* c) {
  cml_pjrt_device_t* const* devices = NULL;
  size_t n = 0;
  CML_RETURN_IF_ERROR(cml_xla_list_devices(c, CML_PJRT_SLOT_CLIENT_ADDRESSABLE_DEVICES,
                                           "PJRT_Client_AddressableDevices", &devices, &n));
  CML_RETURN_IF_ERROR(cml_xla_client_alloc_devices(c, n, false));
  for (size_t i = 0; i < n; ++i) {
    int process = 0;
    CML_RETURN_IF_ERROR(cml_xla_describe_device(c, i, devices[i], &process));
  }
  c->process_count = 1;
  c->local_device_count = c->device_count;
  return CML_OK;
}

typedef struct cml_xla_device_order_t {
  int process, id;
  size_t index;
} cml_xla_device_order_t;

static int cml_xla_device_order_cmp(const void* a, const void* b) {
  const cml_xla_device_order_t* x = a;
  const cml_xla_device_order_t* y = b;
  if (x->process != y->process) return x->process < y->process ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->index < y->index ? -1 : (x->index > y->index);
}

// Every device of a multi-process job, ordered by (process, id); this process's devices must be
// exactly the addressable ones.
static cml_status_t cml_xla_client_devices_multi(cml__xla_client_t* c) {
  cml_pjrt_device_t* const* all = NULL;
  cml_pjrt_device_t* const* local = NULL;
  size_t n = 0, n_local = 0;
  CML_RETURN_IF_ERROR(
      cml_xla_list_devices(c, CML_PJRT_SLOT_CLIENT_DEVICES, "PJRT_Client_Devices", &all, &n));
  CML_RETURN_IF_ERROR(cml_xla_list_devices(c, CML_PJRT_SLOT_CLIENT_ADDRESSABLE_DEVICES,
                                           "PJRT_Client_AddressableDevices", &local, &n_local));
  cml_pjrt_client_process_index_args_t pi;
  CML_XLA_ARGS_INIT(pi);
  pi.client = c->client;
  CML_RETURN_IF_ERROR(cml__xla_call(c->plugin, CML_PJRT_SLOT_CLIENT_PROCESS_INDEX, &pi,
                                    "PJRT_Client_ProcessIndex"));
  c->process_index = pi.process_index;
  CML_RETURN_IF_ERROR(cml_xla_client_alloc_devices(c, n, true));
  // Describe in the plugin's order first, then sort the arrays by (process, id).
  cml_xla_device_order_t* order = calloc(n, sizeof *order);
  if (!order) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_status_t st = CML_OK;
  for (size_t i = 0; i < n && st == CML_OK; ++i) {
    order[i].index = i;
    st = cml_xla_describe_device(c, i, all[i], &order[i].process);
    order[i].id = c->device_ids[i];
    if (st == CML_OK && order[i].process < 0) {
      st = cml_status_make(CML_STATUS_INTERNAL,
                           "xla: the %s plugin says device id %d is on process %d",
                           c->platform_name, order[i].id, order[i].process);
    }
  }
  if (st != CML_OK) {
    free(order);
    return st;
  }
  qsort(order, n, sizeof *order, cml_xla_device_order_cmp);
  cml_pjrt_device_t** devices = malloc(n * sizeof *devices);
  int* ids = malloc(n * sizeof *ids);
  char** texts = malloc(n * sizeof *texts);
  if (!devices || !ids || !texts) {
    free(devices);
    free(ids);
    free(texts);
    free(order);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (size_t i = 0; i < n; ++i) {
    devices[i] = c->devices[order[i].index];
    ids[i] = c->device_ids[order[i].index];
    texts[i] = c->device_descriptions[order[i].index];
    c->device_processes[i] = order[i].process;
  }
  memcpy(c->devices, devices, n * sizeof *devices);
  memcpy(c->device_ids, ids, n * sizeof *ids);
  memcpy(c->device_descriptions, texts, n * sizeof *texts);
  free(devices);
  free(ids);
  free(texts);
  free(order);
  // cml numbers devices by position: rewrite the descriptions' "platform:<position>".
  for (size_t i = 0; i < n; ++i) {
    const char* rest = strchr(c->device_descriptions[i], ' ');
    char text[300];
    int len = snprintf(text, sizeof text, "%s:%zu%s", c->platform_name, i, rest ? rest : "");
    char* copy = cml_xla_pjrt_strndup(text, (size_t)(len < 0 ? 0 : len));
    if (!copy) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    free(c->device_descriptions[i]);
    c->device_descriptions[i] = copy;
  }
  int first = -1, count = 0, max_process = 0;
  for (size_t i = 0; i < n; ++i) {
    if (c->device_processes[i] > max_process) max_process = c->device_processes[i];
    bool addressable = false;
    for (size_t k = 0; k < n_local && !addressable; ++k) addressable = local[k] == c->devices[i];
    const bool ours = c->device_processes[i] == c->process_index;
    if (addressable != ours) {
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "xla: the %s plugin's client is process %d, but device id %d of "
                             "process %d is %saddressable: cml needs the addressable devices to "
                             "be exactly those of the client's process",
                             c->platform_name, c->process_index, c->device_ids[i],
                             c->device_processes[i], addressable ? "" : "not ");
    }
    if (ours && first < 0) first = (int)i;
    if (ours) ++count;
  }
  if (count != (int)n_local || first < 0) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: the %s plugin's client lists %zu addressable devices, but %d "
                           "devices of its process %d",
                           c->platform_name, n_local, count, c->process_index);
  }
  c->first_local_device = first;
  c->local_device_count = count;
  c->process_count = max_process + 1;
  return CML_OK;
}

static cml_status_t cml_xla_client_create_impl(const cml__xla_plugin_t* plugin,
                                               const cml__xla_option_t* options,
                                               size_t option_count,
                                               const cml__xla_kv_callbacks_t* kv,
                                               cml__xla_client_t** out_client) {
  *out_client = NULL;
  cml_pjrt_named_value_t* values = NULL;
  if (option_count) {
    values = calloc(option_count, sizeof *values);
    if (!values) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (size_t i = 0; i < option_count; ++i) {
    cml_pjrt_named_value_t* v = &values[i];
    const cml__xla_option_t* o = &options[i];
    v->struct_size = sizeof *v;
    v->name = o->name;
    v->name_size = strlen(o->name);
    v->type = o->type;
    v->value_size = 1;
    switch (o->type) {
      case CML_PJRT_NAMED_STRING:
        v->value.string_value = o->string_value;
        v->value_size = strlen(o->string_value);
        break;
      case CML_PJRT_NAMED_INT64:
        v->value.int64_value = o->int64_value;
        break;
      case CML_PJRT_NAMED_INT64_LIST:
        v->value.int64_array_value = o->int64_list;
        v->value_size = o->int64_list_size;
        break;
      case CML_PJRT_NAMED_FLOAT:
        v->value.float_value = o->float_value;
        break;
      default:
        v->value.bool_value = o->bool_value;
        break;
    }
  }
  cml_pjrt_client_create_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.create_options = values;
  args.num_options = option_count;
  if (kv) {
    args.kv_get_callback = kv->get;
    args.kv_get_user_arg = kv->user_arg;
    args.kv_put_callback = kv->put;
    args.kv_put_user_arg = kv->user_arg;
    if (plugin->minor_version >= CML_PJRT_KV_TRY_GET_MINOR) {
      args.kv_try_get_callback = kv->try_get;
      args.kv_try_get_user_arg = kv->user_arg;
    }
  }
  cml_status_t status =
      cml__xla_call(plugin, CML_PJRT_SLOT_CLIENT_CREATE, &args, "PJRT_Client_Create");
  free(values);
  if (status != CML_OK) return status;
  cml__xla_client_t* c = calloc(1, sizeof *c);
  if (!c) {
    cml_pjrt_client_args_t destroy;
    CML_XLA_ARGS_INIT(destroy);
    destroy.client = args.client;
    cml_status_free(cml__xla_call(plugin, CML_PJRT_SLOT_CLIENT_DESTROY, &destroy, "destroy"));
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  c->plugin = plugin;
  c->client = args.client;
  status = cml_xla_client_string(plugin, c->client, CML_PJRT_SLOT_CLIENT_PLATFORM_NAME,
                                 "PJRT_Client_PlatformName", &c->platform_name);
  if (status == CML_OK) {
    status = cml_xla_client_string(plugin, c->client, CML_PJRT_SLOT_CLIENT_PLATFORM_VERSION,
                                   "PJRT_Client_PlatformVersion", &c->platform_version);
  }
  if (status == CML_OK) status = kv ? cml_xla_client_devices_multi(c) : cml_xla_client_devices(c);
  if (status != CML_OK) {
    cml__xla_client_destroy(c);
    return status;
  }
  *out_client = c;
  return CML_OK;
}

cml_status_t cml__xla_client_create(const cml__xla_plugin_t* plugin,
                                    const cml__xla_option_t* options, size_t option_count,
                                    cml__xla_client_t** out_client) {
  return cml_xla_client_create_impl(plugin, options, option_count, NULL, out_client);
}

cml_status_t cml__xla_client_create_multi(const cml__xla_plugin_t* plugin,
                                          const cml__xla_option_t* options, size_t option_count,
                                          const cml__xla_kv_callbacks_t* kv,
                                          cml__xla_client_t** out_client) {
  if (!kv || !kv->get || !kv->put || !kv->try_get) {
    *out_client = NULL;
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: a multi-process client needs the key-value callbacks");
  }
  return cml_xla_client_create_impl(plugin, options, option_count, kv, out_client);
}

void cml__xla_client_destroy(cml__xla_client_t* client) {
  if (!client) return;
  if (client->client) {
    cml_pjrt_client_args_t args;
    CML_XLA_ARGS_INIT(args);
    args.client = client->client;
    cml_status_free(
        cml__xla_call(client->plugin, CML_PJRT_SLOT_CLIENT_DESTROY, &args, "PJRT_Client_Destroy"));
  }
  if (client->device_descriptions) {
    for (int i = 0; i < client->device_count; ++i) free(client->device_descriptions[i]);
  }
  free(client->device_descriptions);
  free(client->device_ids);
  free(client->device_processes);
  free(client->devices);
  free(client->platform_name);
  free(client->platform_version);
  free(client);
}

//===--- buffers ---===//

static cml_status_t cml_xla_check_device(const cml__xla_client_t* client, int device) {
  if (device < 0 || device >= client->device_count) {
    return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                           "xla: device %d out of range: the %s plugin has %d device(s)", device,
                           client->platform_name, client->device_count);
  }
  if (device < client->first_local_device ||
      device >= client->first_local_device + client->local_device_count) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "xla: device %d belongs to process %d, not to this process (%d of %d, "
                           "devices %d..%d): buffers live on local devices only",
                           device, client->device_processes ? client->device_processes[device] : -1,
                           client->process_index, client->process_count, client->first_local_device,
                           client->first_local_device + client->local_device_count - 1);
  }
  return CML_OK;
}

// Packed dtypes (Int4, Uint4, Int2, Uint2): cml stores them packed, first element in the lowest
// bits; PJRT's host buffers hold one element per byte (sign-extended for signed dtypes) and the
// plugin packs them on the device. These convert between the two.
static uint8_t* cml_xla_unpack(const cml_shape_t* shape, const void* data) {
  int64_t n = cml_shape_element_count(shape);
  uint8_t* out = malloc((size_t)n + 1);
  if (!out) return NULL;
  const uint8_t* in = data;
  int bits = cml_dtype_bits(shape->dtype);
  unsigned mask = (1u << bits) - 1u;
  bool is_signed = cml_dtype_is_signed_int(shape->dtype);
  for (int64_t i = 0; i < n; ++i) {
    int64_t bit = i * bits;
    unsigned v = ((unsigned)in[bit / 8] >> (bit % 8)) & mask;
    if (is_signed && (v & (1u << (bits - 1)))) v |= ~mask;  // sign-extend into the byte
    out[i] = (uint8_t)v;
  }
  return out;
}

static void cml_xla_pack(const cml_shape_t* shape, const uint8_t* in, void* dst, size_t size) {
  int64_t n = cml_shape_element_count(shape);
  uint8_t* out = dst;
  memset(out, 0, size);
  int bits = cml_dtype_bits(shape->dtype);
  unsigned mask = (1u << bits) - 1u;
  for (int64_t i = 0; i < n; ++i) {
    int64_t bit = i * bits;
    if ((size_t)(bit / 8) >= size) break;
    out[bit / 8] |= (uint8_t)((in[i] & mask) << (bit % 8));
  }
}

cml_status_t cml__xla_buffer_from_host(cml__xla_client_t* client, int device,
                                       const cml_shape_t* shape, const void* data,
                                       cml_pjrt_buffer_t** out_buffer) {
  *out_buffer = NULL;
  CML_RETURN_IF_ERROR(cml_xla_check_device(client, device));
  uint8_t* unpacked = NULL;
  if (cml_dtype_is_packed(shape->dtype) && data && cml_shape_element_count(shape) > 0) {
    unpacked = cml_xla_unpack(shape, data);
    if (!unpacked) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    data = unpacked;
  }
  cml_pjrt_buffer_from_host_args_t args;
  CML_XLA_ARGS_INIT(args);
  static const uint64_t empty = 0;
  args.client = client->client;
  args.data = data ? data : (const void*)&empty;
  args.type = (int)shape->dtype;
  args.dims = shape->rank ? shape->dims : NULL;
  args.num_dims = (size_t)shape->rank;
  args.host_buffer_semantics = CML_PJRT_HOST_IMMUTABLE_UNTIL_TRANSFER_COMPLETES;
  args.device = client->devices[device];
  cml_status_t status = cml__xla_call(client->plugin, CML_PJRT_SLOT_CLIENT_BUFFER_FROM_HOST_BUFFER,
                                      &args, "PJRT_Client_BufferFromHostBuffer");
  if (status != CML_OK) {
    free(unpacked);
    return status;
  }
  // The host data must stay untouched until the transfer is done: wait here.
  status =
      cml__xla_event_await(client->plugin, args.done_with_host_buffer, "host-to-device transfer");
  free(unpacked);
  if (status != CML_OK) {
    cml__xla_buffer_destroy(client, args.buffer);
    return status;
  }
  *out_buffer = args.buffer;
  return CML_OK;
}

static void cml_xla_view_deleted(void* ptr, void* user) {
  (void)ptr;
  (void)user;  // the cml buffer owns and frees the memory
}

cml_status_t cml__xla_buffer_create_view(cml__xla_client_t* client, int device,
                                         const cml_shape_t* shape, void* data,
                                         cml_pjrt_buffer_t** out_buffer) {
  *out_buffer = NULL;
  CML_RETURN_IF_ERROR(cml_xla_check_device(client, device));
  cml_pjrt_create_view_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.client = client->client;
  args.device_buffer_ptr = data;
  args.dims = shape->rank ? shape->dims : NULL;
  args.num_dims = (size_t)shape->rank;
  args.element_type = (int)shape->dtype;
  args.device = client->devices[device];
  args.on_delete_callback = cml_xla_view_deleted;
  CML_RETURN_IF_ERROR(cml__xla_call(client->plugin,
                                    CML_PJRT_SLOT_CLIENT_CREATE_VIEW_OF_DEVICE_BUFFER, &args,
                                    "PJRT_Client_CreateViewOfDeviceBuffer"));
  *out_buffer = args.buffer;
  return CML_OK;
}

cml_status_t cml__xla_buffer_to_host(cml__xla_client_t* client, cml_pjrt_buffer_t* buffer,
                                     const cml_shape_t* shape, void* dst, size_t size) {
  if (size == 0) return CML_OK;
  int64_t minor_to_major[CML_MAX_RANK];
  for (int32_t i = 0; i < shape->rank; ++i) minor_to_major[i] = shape->rank - 1 - i;
  cml_pjrt_memory_layout_t layout;
  CML_XLA_ARGS_INIT(layout);
  layout.type = CML_PJRT_LAYOUT_TILED;
  layout.u.tiled.struct_size = sizeof layout.u.tiled;
  layout.u.tiled.minor_to_major = shape->rank ? minor_to_major : NULL;
  layout.u.tiled.minor_to_major_size = (size_t)shape->rank;
  cml_pjrt_buffer_to_host_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.src = buffer;
  args.host_layout = &layout;
  args.dst = dst;
  args.dst_size = size;
  uint8_t* unpacked = NULL;
  if (cml_dtype_is_packed(shape->dtype)) {
    // One byte per element on PJRT's side (see cml_xla_unpack); packed into |dst| below.
    size_t n = (size_t)cml_shape_element_count(shape);
    unpacked = malloc(n + 1);
    if (!unpacked) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    args.dst = unpacked;
    args.dst_size = n;
  }
  cml_status_t status = cml__xla_call(client->plugin, CML_PJRT_SLOT_BUFFER_TO_HOST_BUFFER, &args,
                                      "PJRT_Buffer_ToHostBuffer");
  if (status == CML_OK) {
    status = cml__xla_event_await(client->plugin, args.event, "device-to-host transfer");
  }
  if (status == CML_OK && unpacked) cml_xla_pack(shape, unpacked, dst, size);
  free(unpacked);
  return status;
}

cml_status_t cml__xla_buffer_copy_to_device(cml__xla_client_t* client, cml_pjrt_buffer_t* buffer,
                                            int device, cml_pjrt_buffer_t** out_buffer) {
  *out_buffer = NULL;
  CML_RETURN_IF_ERROR(cml_xla_check_device(client, device));
  cml_pjrt_buffer_copy_to_device_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.buffer = buffer;
  args.dst_device = client->devices[device];
  CML_RETURN_IF_ERROR(cml__xla_call(client->plugin, CML_PJRT_SLOT_BUFFER_COPY_TO_DEVICE, &args,
                                    "PJRT_Buffer_CopyToDevice"));
  // The copy may still be running on a plugin thread: wait until the new buffer is ready, so
  // the source can be written (a shared buffer's host memory) or released as soon as this
  // returns (the CPU plugin read a released shared buffer's freed memory). A plugin without
  // Buffer_ReadyEvent is trusted to have copied.
  if (cml__xla_plugin_fn(client->plugin, CML_PJRT_SLOT_BUFFER_READY_EVENT)) {
    cml_pjrt_buffer_ready_event_args_t ready;
    CML_XLA_ARGS_INIT(ready);
    ready.buffer = args.dst_buffer;
    cml_status_t st = cml__xla_call(client->plugin, CML_PJRT_SLOT_BUFFER_READY_EVENT, &ready,
                                    "PJRT_Buffer_ReadyEvent");
    if (st == CML_OK)
      st = cml__xla_event_await(client->plugin, ready.event, "device-to-device copy");
    if (st != CML_OK) {
      cml__xla_buffer_destroy(client, args.dst_buffer);
      return st;
    }
  }
  *out_buffer = args.dst_buffer;
  return CML_OK;
}

void cml__xla_buffer_destroy(cml__xla_client_t* client, cml_pjrt_buffer_t* buffer) {
  if (!buffer) return;
  cml_pjrt_buffer_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.buffer = buffer;
  cml_status_free(
      cml__xla_call(client->plugin, CML_PJRT_SLOT_BUFFER_DESTROY, &args, "PJRT_Buffer_Destroy"));
}

//===--- executables ---===//

cml_status_t cml__xla_compile(cml__xla_client_t* client, const char* mlir, size_t mlir_size,
                              const uint8_t* options, size_t options_size,
                              cml_pjrt_loaded_executable_t** out_executable) {
  *out_executable = NULL;
  cml_pjrt_program_t program;
  CML_XLA_ARGS_INIT(program);
  program.code = mlir;
  program.code_size = mlir_size;
  program.format = "mlir";
  program.format_size = 4;
  cml_pjrt_client_compile_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.client = client->client;
  args.program = &program;
  args.compile_options = (const char*)options;
  args.compile_options_size = options_size;
  CML_RETURN_IF_ERROR(
      cml__xla_call(client->plugin, CML_PJRT_SLOT_CLIENT_COMPILE, &args, "PJRT_Client_Compile"));
  *out_executable = args.executable;
  return CML_OK;
}

void cml__xla_executable_destroy(cml__xla_client_t* client,
                                 cml_pjrt_loaded_executable_t* executable) {
  if (!executable) return;
  cml_pjrt_loaded_executable_destroy_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.executable = executable;
  cml_status_free(cml__xla_call(client->plugin, CML_PJRT_SLOT_LOADED_EXECUTABLE_DESTROY, &args,
                                "PJRT_LoadedExecutable_Destroy"));
}

cml_status_t cml__xla_executable_output_count(cml__xla_client_t* client,
                                              cml_pjrt_loaded_executable_t* executable,
                                              size_t* out_count) {
  *out_count = 0;
  cml_pjrt_loaded_executable_get_executable_args_t get;
  CML_XLA_ARGS_INIT(get);
  get.loaded_executable = executable;
  CML_RETURN_IF_ERROR(cml__xla_call(client->plugin, CML_PJRT_SLOT_LOADED_EXECUTABLE_GET_EXECUTABLE,
                                    &get, "PJRT_LoadedExecutable_GetExecutable"));
  cml_pjrt_executable_num_outputs_args_t num;
  CML_XLA_ARGS_INIT(num);
  num.executable = get.executable;
  cml_status_t st = cml__xla_call(client->plugin, CML_PJRT_SLOT_EXECUTABLE_NUM_OUTPUTS, &num,
                                  "PJRT_Executable_NumOutputs");
  cml_pjrt_executable_destroy_args_t destroy;
  CML_XLA_ARGS_INIT(destroy);
  destroy.executable = get.executable;
  cml_status_t destroyed = cml__xla_call(client->plugin, CML_PJRT_SLOT_EXECUTABLE_DESTROY, &destroy,
                                         "PJRT_Executable_Destroy");
  if (st == CML_OK) {
    *out_count = num.num_outputs;
    return destroyed;
  }
  cml_status_free(destroyed);
  return st;
}

// Runs |executable| on |device_count| device lists (argument_lists[d] = inputs + d *
// input_count, output_lists[d] = outputs + d * output_count) and awaits every device's
// completion event, even after one failed, so that no event or output is left behind. On any
// error every output is destroyed.
static cml_status_t cml_xla_execute_lists(cml__xla_client_t* client,
                                          cml_pjrt_loaded_executable_t* executable,
                                          cml_pjrt_device_t* execute_device, size_t device_count,
                                          cml_pjrt_buffer_t* const* inputs, size_t input_count,
                                          const int64_t* non_donatable, size_t non_donatable_count,
                                          cml_pjrt_buffer_t** outputs, size_t output_count) {
  size_t total_out = device_count * output_count;
  for (size_t i = 0; i < total_out; ++i) outputs[i] = NULL;
  cml_pjrt_buffer_t* const** argument_lists = calloc(device_count, sizeof *argument_lists);
  cml_pjrt_buffer_t*** output_lists = calloc(device_count, sizeof *output_lists);
  cml_pjrt_event_t** complete = calloc(device_count, sizeof *complete);
  if (!argument_lists || !output_lists || !complete) {
    free((void*)argument_lists);
    free(output_lists);
    free(complete);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (size_t d = 0; d < device_count; ++d) {
    argument_lists[d] = inputs + d * input_count;
    output_lists[d] = outputs + d * output_count;
  }
  cml_pjrt_execute_options_t options;
  CML_XLA_ARGS_INIT(options);
  // Argument positions of one device's list (PJRT applies the set to every device).
  options.non_donatable_input_indices = non_donatable_count ? non_donatable : NULL;
  options.num_non_donatable_input_indices = non_donatable_count;
  // A multi-device execution of a multi-process job: every process runs its own devices' lists
  // with the same non-zero launch id (executions are issued in the same order everywhere).
  if (client->process_count > 1 && !execute_device) {
    options.launch_id = __atomic_add_fetch(&client->launch_counter, 1, __ATOMIC_RELAXED);
  }
  cml_pjrt_execute_args_t args;
  CML_XLA_ARGS_INIT(args);
  args.executable = executable;
  args.options = &options;
  args.argument_lists = argument_lists;
  args.num_devices = device_count;
  args.num_args = input_count;
  args.output_lists = output_lists;
  args.device_complete_events = complete;
  args.execute_device = execute_device;
  cml_status_t status = cml__xla_call(client->plugin, CML_PJRT_SLOT_LOADED_EXECUTABLE_EXECUTE,
                                      &args, "PJRT_LoadedExecutable_Execute");
  for (size_t d = 0; d < device_count; ++d) {
    char what[64];
    snprintf(what, sizeof what, "execution on device slot %zu", d);
    cml_status_t done = cml__xla_event_await(client->plugin, complete[d], what);
    if (status == CML_OK) {
      status = done;
    } else {
      cml_status_free(done);
    }
  }
  if (status != CML_OK) {
    for (size_t i = 0; i < total_out; ++i) {
      cml__xla_buffer_destroy(client, outputs[i]);
      outputs[i] = NULL;
    }
  }
  free((void*)argument_lists);
  free(output_lists);
  free(complete);
  return status;
}

cml_status_t cml__xla_execute(cml__xla_client_t* client, cml_pjrt_loaded_executable_t* executable,
                              int device, cml_pjrt_buffer_t* const* inputs, size_t input_count,
                              const int64_t* non_donatable, size_t non_donatable_count,
                              cml_pjrt_buffer_t** outputs, size_t output_count) {
  for (size_t i = 0; i < output_count; ++i) outputs[i] = NULL;
  CML_RETURN_IF_ERROR(cml_xla_check_device(client, device));
  return cml_xla_execute_lists(client, executable, client->devices[device], 1, inputs, input_count,
                               non_donatable, non_donatable_count, outputs, output_count);
}

cml_status_t cml__xla_execute_devices(cml__xla_client_t* client,
                                      cml_pjrt_loaded_executable_t* executable, size_t device_count,
                                      cml_pjrt_buffer_t* const* inputs, size_t input_count,
                                      const int64_t* non_donatable, size_t non_donatable_count,
                                      cml_pjrt_buffer_t** outputs, size_t output_count) {
  if (device_count == 0 || device_count > (size_t)client->local_device_count) {
    for (size_t i = 0; i < device_count * output_count; ++i) outputs[i] = NULL;
    return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                           "xla: execute on %zu device(s): the %s plugin has %d device(s) in this "
                           "process",
                           device_count, client->platform_name, client->local_device_count);
  }
  return cml_xla_execute_lists(client, executable, NULL, device_count, inputs, input_count,
                               non_donatable, non_donatable_count, outputs, output_count);
}
