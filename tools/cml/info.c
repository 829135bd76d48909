// SPDX-License-Identifier: Apache-2.0
// tools/cml/info.c: "cml info", what this cml offers and what a backend can do.
//
//   cml info [--plugin PATH]... [--backend CONFIG]
//
// Prints the library version, the registered backends (with aliases), the default backend and
// why it was chosen, and for the chosen backend (the default, or CONFIG): name, config,
// description, devices and capabilities (with the distribution strategies, SPMD and
// AutoSharding, and the collective ops it runs on several devices). Exits 2 for usage errors or
// a backend that cannot be created (as `cml test` and `cml bench` do).
#include <stdio.h>
#include <string.h>

#include "cml/backend.h"
#include "cml/distributed.h"
#include "cml/fused.h"
#include "tools/cml/cli.h"

static void cml_cli_info_usage(FILE* out) {
  fputs(
      "usage: cml info [--plugin PATH]... [--backend CONFIG]\n"
      "\n"
      "Prints the registered backends, the default backend and why, and the devices and\n"
      "capabilities of a backend.\n"
      "  --plugin PATH     load a backend plug-in first (cml_plugin_load); may be repeated\n"
      "  --backend CONFIG  the backend to describe, e.g. \"c\", \"xla:cpu\"\n"
      "                    (default: GOMLX_BACKEND, else the best available backend)\n",
      out);
}

// Prints |items| comma-separated, wrapped at about 100 columns, indented by 6.
static void cml_cli_info_print_list(const char* const* items, size_t count) {
  size_t column = 6;
  fputs("      ", stdout);
  for (size_t i = 0; i < count; ++i) {
    size_t n = strlen(items[i]);
    if (i > 0) {
      if (column + 2 + n > 100) {
        fputs(",\n      ", stdout);
        column = 6;
      } else {
        fputs(", ", stdout);
        column += 2;
      }
    }
    fputs(items[i], stdout);
    column += n;
  }
  if (count == 0) fputs("(none)", stdout);
  fputs("\n", stdout);
}

static void cml_cli_info_backend(const cml_backend_t* backend) {
  printf("\nbackend: %s\n", cml_backend_name(backend));
  printf("  config: %s\n", cml_backend_config(backend));
  printf("  description: %s\n", cml_backend_description(backend));
  int devices = cml_backend_device_count(backend);
  printf("  devices: %d\n", devices);
  for (int d = 0; d < devices; ++d) {
    printf("    %d: %s\n", d, cml_backend_device_description(backend, d));
  }

  const cml_capabilities_t* caps = cml_backend_capabilities(backend);
  printf("  capabilities:\n");
  const char* dtypes[CML_DTYPE_COUNT];
  size_t dtype_count = 0;
  for (int d = 1; d < CML_DTYPE_COUNT; ++d) {
    if (cml_capabilities_has_dtype(caps, (cml_dtype_t)d)) {
      dtypes[dtype_count++] = cml_dtype_name((cml_dtype_t)d);
    }
  }
  printf("    dtypes (%zu):\n", dtype_count);
  cml_cli_info_print_list(dtypes, dtype_count);
  printf("    functions (closures, Call, While, If, Sort): %s\n", caps->functions ? "yes" : "no");
  printf("    shared buffers: %s\n", cml_backend_has_shared_buffers(backend) ? "yes" : "no");
  // How the built-in backends run dynamic axes (docs/dynamic_shapes.md).
  const char* name = cml_backend_name(backend);
  const char* how = !caps->dynamic_axes      ? "no"
                    : strcmp(name, "c") == 0 ? "yes (compiled once; one plan per binding set, "
                                               "cached, c:dynamic_cache=N, default 16)"
                    : strcmp(name, "xla") == 0
                        ? "yes (one XLA compile per binding set, behind the scenes; cached, "
                          "xla:dynamic_cache=N, default 16)"
                        : "yes";
  printf("    dynamic axes: %s\n", how);
  printf("    max rank: %d\n", (int)caps->max_rank);
  // Many devices: the distribution strategies and the collectives it runs.
  const char* modes[CML_DISTRIBUTION_COUNT];
  size_t mode_count = 0;
  for (int d = 0; d < CML_DISTRIBUTION_COUNT; ++d) {
    if (caps->distributions & (1u << d))
      modes[mode_count++] = cml_distribution_name((cml_distribution_t)d);
  }
  printf("    distribution (on up to %d device%s):\n", devices, devices == 1 ? "" : "s");
  cml_cli_info_print_list(modes, mode_count);
  const char* collectives[CML_OP_COUNT];
  size_t collective_count = 0;
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    if (cml_op_group((cml_op_t)op) == CML_OPG_COLLECTIVE &&
        cml_capabilities_has_op(caps, (cml_op_t)op)) {
      collectives[collective_count++] = cml_op_name((cml_op_t)op);
    }
  }
  printf("    collectives (%zu):\n", collective_count);
  cml_cli_info_print_list(collectives, collective_count);

  const char* supported[CML_OP_COUNT];
  const char* missing[CML_OP_COUNT];
  size_t supported_count = 0, missing_count = 0;
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    if (cml_capabilities_has_op(caps, (cml_op_t)op)) {
      supported[supported_count++] = cml_op_name((cml_op_t)op);
    } else if (cml_op_is_standard((cml_op_t)op)) {
      missing[missing_count++] = cml_op_name((cml_op_t)op);
    }
  }
  printf("    ops supported (%zu):\n", supported_count);
  cml_cli_info_print_list(supported, supported_count);
  printf("    standard ops not supported (%zu):\n", missing_count);
  cml_cli_info_print_list(missing, missing_count);

  // Quantized formats: all of them run everywhere; natively where the backend has the ops.
  const char* formats[CML_GGML_TYPE_COUNT + 2];
  size_t format_count = 0;
  formats[format_count++] = "Linear (Int8, Uint8, Int4, Uint4, Int2, Uint2)";
  formats[format_count++] = "NF4";
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    formats[format_count++] = cml_ggml_type_name((cml_ggml_type_t)t);
  }
  bool dense = cml_capabilities_has_op(caps, CML_OP_FUSED_QUANTIZED_DENSE);
  bool lookup = cml_capabilities_has_op(caps, CML_OP_QUANTIZED_EMBEDDING_LOOKUP);
  printf("    quantized formats run natively (%zu)%s:\n", dense ? format_count : 0,
         dense ? (lookup ? "" : " (FusedQuantizedDense only)") : "");
  cml_cli_info_print_list(formats, dense ? format_count : 0);
  if (!dense) {
    printf(
        "      every format runs decomposed into standard ops (bit unpacking, Gather, Mul, "
        "DotGeneral)\n");
  }
}

int cml_cli_info(int argc, char** argv) {
  const char* config = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--backend") == 0 || strcmp(argv[i], "-b") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "cml info: %s needs a backend config\n", argv[i]);
        cml_cli_info_usage(stderr);
        return 2;
      }
      config = argv[++i];
    } else if (strncmp(argv[i], "--backend=", 10) == 0) {
      config = argv[i] + 10;
    } else if (strcmp(argv[i], "--plugin") == 0 || strncmp(argv[i], "--plugin=", 9) == 0) {
      const char* path = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[++i] : NULL);
      if (!path || !*path) {
        fprintf(stderr, "cml info: --plugin needs a path\n");
        return 2;
      }
      cml_status_t st = cml_plugin_load(path);
      if (st != CML_OK) {
        fprintf(stderr, "cml info: %s: %s\n", cml_status_code_name(cml_status_code(st)),
                cml_status_message(st));
        cml_status_free(st);
        return 2;
      }
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      cml_cli_info_usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "cml info: unknown argument \"%s\"\n", argv[i]);
      cml_cli_info_usage(stderr);
      return 2;
    }
  }

  int rc = 0;
  if (cml_cli_backend_help("info", config, &rc)) return rc;

  printf("cml %s\n", cml_version_string());
  printf("registered backends:\n");
  size_t count = cml_backend_registered_count();
  for (size_t i = 0; i < count; ++i) {
    const char* name = cml_backend_registered_name(i);
    const char* aliases = cml_backend_registered_aliases(name);
    if (aliases && *aliases) {
      printf("  %s (aliases: %s)\n", name, aliases);
    } else {
      printf("  %s\n", name);
    }
  }
  const char* default_config = NULL;
  const char* default_reason = NULL;
  cml_backend_default_config(&default_config, &default_reason);
  printf("default backend: \"%s\" (%s)\n", default_config, default_reason);

  cml_backend_t* backend = cml_cli_open_backend("info", config);
  if (!backend) return 2;
  cml_cli_info_backend(backend);
  cml_backend_release(backend);
  return 0;
}
