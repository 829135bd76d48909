// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/config.c: the XLA backend's config string (the seed's options, kept exactly,
// plus cpu_device_count).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_internal.h"
#include "backends/xla/xla_internal.h"

const char cml__xla_config_help[] =
    "xla:<plugin>[,option[=value]]...\n"
    "  <plugin>             cpu, cuda, tpu, another plugin name (a versioned name such as\n"
    "                       cpu_v0.104.0 also matches), or a path to a PJRT plugin .so;\n"
    "                       empty: cuda when an NVIDIA GPU is present, else tpu when\n"
    "                       libtpu is installed, else cpu\n"
    "  tf32 (bool)          allow TF32 for float32 dots/convolutions (default: true on CUDA)\n"
    "  shared_buffers (bool, alias shared_buffer)\n"
    "                       host memory used directly as device memory (default: true on CPU)\n"
    "  preallocate (bool)   preallocate device memory (default false)\n"
    "  memory_fraction (float in [0, 1])  device memory the plugin may use (plugin default 0.75)\n"
    "  allocator (default|bfc|cuda_async|platform|vmm)  device allocator (default \"default\")\n"
    "  visible_devices (ints separated by ';', ':' or spaces)  devices the plugin may use\n"
    "  use_tfrt_gpu_client (bool)  use the TFRT GPU client (default false)\n"
    "  cpu_device_count (int >= 1)  number of CPU devices of a CPU plugin (plugin default 4)\n"
    "  dynamic_cache (int 1..4096)  executables kept per module with dynamic axes, one per\n"
    "                       binding set, least recently used evicted (default 16)\n"
    "  distributed (none|mpi)  mpi: one client across the processes of an MPI job (node id,\n"
    "                       node count, key-value store over MPI) for plugins that accept it\n"
    "                       (CUDA); XLA's CPU plugin does not (use cml_host_all_reduce)\n"
    "  help                 print this list and the plugins found\n"
    "Bool options accept `opt`, `opt=<bool>` and `noopt`. XLA_FLAGS is passed to the plugin.\n";

static bool cml_xla_contains_ci(const char* text, const char* needle) {
  size_t n = strlen(needle);
  for (const char* p = text; p && *p; ++p) {
    size_t i = 0;
    while (i < n && p[i] && tolower((unsigned char)p[i]) == needle[i]) ++i;
    if (i == n) return true;
  }
  return false;
}

bool cml__xla_name_is_cuda(const char* name) {
  return cml_xla_contains_ci(name, "cuda") || cml_xla_contains_ci(name, "nvidia");
}

bool cml__xla_name_is_cpu(const char* name) { return cml_xla_contains_ci(name, "cpu"); }

typedef struct cml_xla_parse_ctx_t {
  cml__xla_config_t* config;
  const cml__option_spec_t* specs;
  size_t spec_count;
} cml_xla_parse_ctx_t;

static bool cml_xla_valid_plugin_name(const char* name) {
  if (!*name) return false;
  for (const char* p = name; *p; ++p) {
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') return false;
  }
  return true;
}

// The first item may be the plugin (a name or a path); anything else unknown is an error.
static cml_status_t cml_xla_config_extra(void* user, size_t index, const char* item) {
  cml_xla_parse_ctx_t* ctx = user;
  bool is_path = strchr(item, '/') != NULL;
  if (index == 0 && !strchr(item, '=') && (is_path || cml_xla_valid_plugin_name(item))) {
    size_t n = strlen(item);
    if (n + 1 > sizeof ctx->config->plugin) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "xla backend: plugin path of %zu characters is too long", n);
    }
    memcpy(ctx->config->plugin, item, n + 1);
    ctx->config->plugin_is_path = is_path;
    return CML_OK;
  }
  char key[64];
  size_t k = strcspn(item, "=");
  if (k >= sizeof key) k = sizeof key - 1;
  memcpy(key, item, k);
  key[k] = '\0';
  cml_status_t st = cml__config_unknown_key("xla", key, ctx->specs, ctx->spec_count);
  if (index > 0 && !strchr(item, '=')) {
    static const char* const kPlugins[] = {"cpu", "cuda", "tpu", "rocm", "metal"};
    bool plugin_like = strchr(item, '/') != NULL;
    for (size_t i = 0; i < sizeof kPlugins / sizeof kPlugins[0]; ++i) {
      plugin_like = plugin_like || strcmp(item, kPlugins[i]) == 0;
    }
    if (!ctx->config->plugin[0]) {
      // "xla:preallocate=true,cpu": a bare name after an option was meant as the plugin.
      st = cml_status_annotate(st, "(the plugin name or path must come first)");
    } else if (plugin_like) {
      st = cml_status_annotate(st, "(one plugin per config: \"%s\" came first)",
                               ctx->config->plugin);
    }
  }
  return st;
}

static cml_status_t cml_xla_help_status(void) {
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  char plugins[2048];
  size_t n = cml__xla_list_plugins(&search, plugins, sizeof plugins);
  return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla backend options:\n%sPlugins found: %s",
                         cml__xla_config_help, n ? plugins : "none");
}

cml_status_t cml__xla_config_parse(const char* text, cml__xla_config_t* out) {
  memset(out, 0, sizeof *out);
  out->memory_fraction = 0.75;
  strcpy(out->allocator, "default");
  if (!text) text = "";
  // "help" anywhere: the option list plus the plugins found (the generic parser only knows the
  // option list).
  for (const char* p = text; *p;) {
    const char* e = strchr(p, ',');
    if (!e) e = p + strlen(p);
    const char* b = p;
    const char* t = e;
    while (b < t && isspace((unsigned char)*b)) ++b;
    while (t > b && isspace((unsigned char)t[-1])) --t;
    if (t - b == 4 && memcmp(b, "help", 4) == 0) return cml_xla_help_status();
    p = *e ? e + 1 : e;
  }
  const cml__option_spec_t specs[] = {
      {.key = "tf32",
       .type = CML__OPT_BOOL,
       .out = &out->tf32,
       .out_set = &out->tf32_set,
       .help = "allow TF32 for float32 dots and convolutions (default: true on CUDA)"},
      {.key = "shared_buffers",
       .alias = "shared_buffer",
       .type = CML__OPT_BOOL,
       .out = &out->shared_buffers,
       .out_set = &out->shared_buffers_set,
       .help = "use host memory directly as device memory (default: true on CPU)"},
      {.key = "preallocate",
       .type = CML__OPT_BOOL,
       .out = &out->preallocate,
       .help = "preallocate device memory (default false)"},
      {.key = "memory_fraction",
       .type = CML__OPT_FLOAT,
       .out = &out->memory_fraction,
       .check_range = true,
       .min = 0.0,
       .max = 1.0,
       .out_set = &out->memory_fraction_set,
       .help = "fraction of device memory the plugin may use (plugin default 0.75)"},
      {.key = "allocator",
       .type = CML__OPT_STRING,
       .out = out->allocator,
       .capacity = sizeof out->allocator,
       .choices = "default|bfc|cuda_async|platform|vmm",
       .out_set = &out->allocator_set,
       .help = "device memory allocator"},
      {.key = "visible_devices",
       .type = CML__OPT_INT_LIST,
       .out = &out->visible_devices,
       .out_set = &out->visible_devices_set,
       .help = "devices the plugin may use, e.g. 0;1;2"},
      {.key = "use_tfrt_gpu_client",
       .type = CML__OPT_BOOL,
       .out = &out->use_tfrt_gpu_client,
       .out_set = &out->use_tfrt_gpu_client_set,
       .help = "use the TFRT GPU client (default false)"},
      {.key = "cpu_device_count",
       .type = CML__OPT_INT,
       .out = &out->cpu_device_count,
       .check_range = true,
       .min = 1,
       .max = 4096,
       .out_set = &out->cpu_device_count_set,
       .help = "number of devices of a CPU plugin (plugin default 4)"},
      {.key = "dynamic_cache",
       .type = CML__OPT_INT,
       .out = &out->dynamic_cache,
       .check_range = true,
       .min = 1,
       .max = 4096,
       .out_set = &out->dynamic_cache_set,
       .help = "executables kept per module with dynamic axes (default 16)"},
      {.key = "distributed",
       .type = CML__OPT_STRING,
       .out = out->distributed,
       .capacity = sizeof out->distributed,
       .choices = "none|mpi",
       .out_set = &out->distributed_set,
       .help = "one client across MPI processes (mpi; plugins with multi-node support)"},
  };
  cml_xla_parse_ctx_t ctx = {out, specs, sizeof specs / sizeof specs[0]};
  cml_status_t st =
      cml__config_parse("xla", text, specs, ctx.spec_count, cml_xla_config_extra, &ctx);
  if (st != CML_OK) return st;
  if (out->visible_devices_set) {
    for (size_t i = 0; i < out->visible_devices.count; ++i) {
      if (out->visible_devices.values[i] < 0) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "xla backend: visible_devices has a negative device %lld",
                               (long long)out->visible_devices.values[i]);
      }
      for (size_t j = 0; j < i; ++j) {
        if (out->visible_devices.values[j] == out->visible_devices.values[i]) {
          return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                 "xla backend: visible_devices lists device %lld twice",
                                 (long long)out->visible_devices.values[i]);
        }
      }
    }
  }
  return CML_OK;
}

cml_status_t cml__xla_config_resolve(cml__xla_config_t* config, bool is_cpu, bool is_cuda) {
  if (!config->tf32_set) config->tf32 = is_cuda;
  if (!config->shared_buffers_set) config->shared_buffers = is_cpu;
  if (config->shared_buffers && !is_cpu) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla backend: shared_buffers=true needs a CPU plugin (plugin \"%s\")",
                           config->plugin);
  }
  if (config->cpu_device_count_set && !is_cpu) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla backend: cpu_device_count applies to CPU plugins only (plugin "
                           "\"%s\")",
                           config->plugin);
  }
  return CML_OK;
}

size_t cml__xla_config_client_options(const cml__xla_config_t* config, bool is_cpu,
                                      cml__xla_option_t* out, size_t capacity) {
  size_t n = 0;
#define CML_XLA_ADD(...)                                         \
  do {                                                           \
    if (n < capacity) out[n] = (cml__xla_option_t){__VA_ARGS__}; \
    ++n;                                                         \
  } while (0)
  if (is_cpu) {
    // The CPU plugin reads only cpu_device_count and ignores the rest.
    if (config->cpu_device_count_set) {
      CML_XLA_ADD(.name = "cpu_device_count", .type = CML_PJRT_NAMED_INT64,
                  .int64_value = config->cpu_device_count);
    }
  } else {
    // GPU plugins validate names and types: send only what they know, with their types.
    CML_XLA_ADD(.name = "preallocate", .type = CML_PJRT_NAMED_BOOL,
                .bool_value = config->preallocate);
    if (config->memory_fraction_set) {
      CML_XLA_ADD(.name = "memory_fraction", .type = CML_PJRT_NAMED_FLOAT,
                  .float_value = (float)config->memory_fraction);
    }
    if (config->allocator_set) {
      CML_XLA_ADD(.name = "allocator", .type = CML_PJRT_NAMED_STRING,
                  .string_value = config->allocator);
    }
    if (config->visible_devices_set) {
      CML_XLA_ADD(.name = "visible_devices", .type = CML_PJRT_NAMED_INT64_LIST,
                  .int64_list = config->visible_devices.values,
                  .int64_list_size = config->visible_devices.count);
    }
    if (config->use_tfrt_gpu_client_set) {
      CML_XLA_ADD(.name = "use_tfrt_gpu_client", .type = CML_PJRT_NAMED_BOOL,
                  .bool_value = config->use_tfrt_gpu_client);
    }
  }
#undef CML_XLA_ADD
  return n < capacity ? n : capacity;
}

size_t cml__xla_config_format(const cml__xla_config_t* config, const char* plugin, char* buffer,
                              size_t size) {
  char devices[CML__INT_LIST_MAX * 8] = "";
  size_t used = 0;
  for (size_t i = 0; i < config->visible_devices.count && used < sizeof devices; ++i) {
    int w = snprintf(devices + used, sizeof devices - used, "%s%lld", i ? ";" : "",
                     (long long)config->visible_devices.values[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  char extra[512] = "";
  int len = 0;
  if (config->memory_fraction_set) {
    len += cml__snprintf_c(extra + len, sizeof extra - (size_t)len, ",memory_fraction=%.17g",
                           config->memory_fraction);
  }
  if (config->allocator_set && len >= 0 && (size_t)len < sizeof extra) {
    len += snprintf(extra + len, sizeof extra - (size_t)len, ",allocator=%s", config->allocator);
  }
  if (config->visible_devices_set && len >= 0 && (size_t)len < sizeof extra) {
    len += snprintf(extra + len, sizeof extra - (size_t)len, ",visible_devices=%s", devices);
  }
  if (config->use_tfrt_gpu_client_set && len >= 0 && (size_t)len < sizeof extra) {
    len += snprintf(extra + len, sizeof extra - (size_t)len, ",use_tfrt_gpu_client=%s",
                    config->use_tfrt_gpu_client ? "true" : "false");
  }
  if (config->cpu_device_count_set && len >= 0 && (size_t)len < sizeof extra) {
    len += snprintf(extra + len, sizeof extra - (size_t)len, ",cpu_device_count=%lld",
                    (long long)config->cpu_device_count);
  }
  if (config->dynamic_cache_set && len >= 0 && (size_t)len < sizeof extra) {
    len += snprintf(extra + len, sizeof extra - (size_t)len, ",dynamic_cache=%lld",
                    (long long)config->dynamic_cache);
  }
  if (config->distributed_set && strcmp(config->distributed, "mpi") == 0 && len >= 0 &&
      (size_t)len < sizeof extra) {
    snprintf(extra + len, sizeof extra - (size_t)len, ",distributed=mpi");
  }
  int n = snprintf(buffer, size, "%s,tf32=%s,shared_buffers=%s,preallocate=%s%s",
                   plugin ? plugin : config->plugin, config->tf32 ? "true" : "false",
                   config->shared_buffers ? "true" : "false",
                   config->preallocate ? "true" : "false", extra);
  return n < 0 ? 0 : (size_t)n;
}
