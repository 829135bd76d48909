// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_parsers.c: fuzz targets for the text parsers: shapes, dtype names and backend
// config strings.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/backend.h"
#include "cml/graph.h"
#include "cml/shape.h"
#include "tests/fuzz/fuzz_targets.h"

// A NUL-terminated copy of the input (the fuzzer's bytes are not).
static char* cml_fuzz_text(const uint8_t* data, size_t size) {
  char* text = (char*)malloc(size + 1);
  if (!text) return NULL;
  if (size) memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

//===--- shapes ---===//

static void cml_fuzz_check_shape(const cml_shape_t* s, const char* what) {
  if (!cml_dtype_is_supported(s->dtype) || s->rank < 0 || s->rank > CML_MAX_RANK) {
    cml_fuzz_violation("%s: accepted a bad shape (dtype %d, rank %d)", what, (int)s->dtype,
                       (int)s->rank);
    return;
  }
  for (int32_t i = 0; i < s->rank; ++i) {
    // A negative dim is a dynamic axis: it must carry an interned name.
    if (s->dims[i] < 0 && !cml_shape_axis_name(s, i)) {
      cml_fuzz_violation("%s: accepted a negative dim without an axis name", what);
    }
  }
}

// Equal up to anonymous axes: each parse of "?" interns a new anonymous axis, so a round trip
// compares dynamic axes by name text.
static bool cml_fuzz_same_shape(const cml_shape_t* a, const cml_shape_t* b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; ++i) {
    const char* na = cml_shape_axis_name(a, i);
    const char* nb = cml_shape_axis_name(b, i);
    if (!na != !nb) return false;
    if (na ? strcmp(na, nb) != 0 : a->dims[i] != b->dims[i]) return false;
  }
  return true;
}

// Room for a formatted shape with every axis named with the longest name, "name=?, " each (a
// smaller buffer truncates the text, which then rightly fails to parse).
#define CML_FUZZ_SHAPE_TEXT (CML_MAX_RANK * (CML_MAX_AXIS_NAME_LEN + 24) + 64)

int cml_fuzz_shape_parse(const uint8_t* data, size_t size) {
  char* text = cml_fuzz_text(data, size);
  if (!text) return 0;
  cml_shape_t s;
  cml_status_t st = cml_shape_parse(text, &s);
  if (st == CML_OK) {
    cml_fuzz_check_shape(&s, "cml_shape_parse");
    // Round trip: format, parse again, same shape.
    char formatted[CML_FUZZ_SHAPE_TEXT];
    cml_shape_format(&s, formatted, sizeof formatted);
    cml_shape_t again;
    st = cml_shape_parse(formatted, &again);
    if (st != CML_OK) {
      cml_fuzz_violation("cml_shape_parse(\"%s\") fails on its own format \"%s\": %s", text,
                         formatted, cml_status_message(st));
      cml_status_free(st);
    } else if (!cml_fuzz_same_shape(&s, &again)) {
      cml_fuzz_violation("shape round trip changed \"%s\" into \"%s\"", text, formatted);
    }
    (void)cml_shape_byte_size(&s);
    (void)cml_shape_element_count(&s);
    // Truncated formats stay NUL-terminated inside their buffer.
    for (size_t n = 1; n < 12; ++n) {
      char small[12];
      memset(small, 'x', sizeof small);
      cml_shape_format(&s, small, n);
      if (memchr(small, '\0', n) == NULL) cml_fuzz_violation("cml_shape_format: no NUL in %zu", n);
    }
  } else {
    int code = cml_fuzz_check_status(st, "cml_shape_parse");
    // RESOURCE_EXHAUSTED: the process-wide table of axis names is full (CML_MAX_AXIS_NAMES).
    if (code != CML_STATUS_INVALID_ARGUMENT && code != CML_STATUS_RESOURCE_EXHAUSTED) {
      cml_fuzz_violation("cml_shape_parse: code %d, want INVALID_ARGUMENT or RESOURCE_EXHAUSTED",
                         code);
    }
  }
  free(text);

  // The same bytes as a raw (dtype, rank, dims) triple for cml_shape_init.
  if (size >= 2) {
    int64_t dims[CML_MAX_RANK + 4];
    memset(dims, 0, sizeof dims);
    cml_dtype_t dtype = (cml_dtype_t)(int8_t)data[0];
    int32_t rank = (int32_t)(int8_t)data[1];
    size_t n = (size - 2) / 8;
    if (n > CML_MAX_RANK + 4) n = CML_MAX_RANK + 4;
    memcpy(dims, data + 2, n * 8);
    // Clamp the rank to what the dims array holds, so only the library's checks matter.
    if (rank > (int32_t)(CML_MAX_RANK + 4)) rank = CML_MAX_RANK + 4;
    cml_shape_t raw;
    st = cml_shape_init(&raw, dtype, rank, dims);
    if (st == CML_OK) {
      cml_fuzz_check_shape(&raw, "cml_shape_init");
      size_t bytes = cml_shape_byte_size(&raw);
      if (bytes > ((size_t)1 << 62)) cml_fuzz_violation("cml_shape_init: %zu bytes", bytes);
      char formatted[CML_FUZZ_SHAPE_TEXT];
      cml_shape_format(&raw, formatted, sizeof formatted);
      cml_shape_t again;
      st = cml_shape_parse(formatted, &again);
      if (st != CML_OK) {
        cml_fuzz_violation("cml_shape_parse fails on \"%s\": %s", formatted,
                           cml_status_message(st));
        cml_status_free(st);
      } else if (!cml_shape_equal(&raw, &again)) {
        cml_fuzz_violation("shape round trip changed \"%s\"", formatted);
      }
    } else {
      cml_fuzz_check_status(st, "cml_shape_init");
      cml_shape_t made = cml_shape_make(dtype, rank, dims);
      if (made.dtype != CML_DTYPE_INVALID) cml_fuzz_violation("cml_shape_make kept a bad shape");
    }
  }
  // The bytes as a whole hand-filled struct: accessors must not read past dims or overflow.
  if (size >= sizeof(cml_shape_t)) {
    cml_shape_t garbage;
    memcpy(&garbage, data, sizeof garbage);
    char formatted[CML_FUZZ_SHAPE_TEXT];
    cml_shape_format(&garbage, formatted, sizeof formatted);
    int64_t count = cml_shape_element_count(&garbage);
    if (count < 0) cml_fuzz_violation("cml_shape_element_count: %lld", (long long)count);
    (void)cml_shape_byte_size(&garbage);
    (void)cml_shape_equal(&garbage, &garbage);
  }
  return 0;
}

//===--- names ---===//

int cml_fuzz_dtype_name(const uint8_t* data, size_t size) {
  char* text = cml_fuzz_text(data, size);
  if (!text) return 0;
  cml_dtype_t d = cml_dtype_from_name(text);
  if (d != CML_DTYPE_INVALID) {
    if (!cml_dtype_is_valid(d) && d != CML_DTYPE_TOKEN) {
      cml_fuzz_violation("cml_dtype_from_name(\"%s\") = %d, not a dtype", text, (int)d);
    }
    if (cml_dtype_from_name(cml_dtype_name(d)) != d) {
      cml_fuzz_violation("dtype %s does not parse back", cml_dtype_name(d));
    }
  }
  cml_op_t op = cml_op_from_name(text);
  if (op != CML_OP_INVALID && cml_op_from_name(cml_op_name(op)) != op) {
    cml_fuzz_violation("op %s does not parse back", cml_op_name(op));
  }
  // Raw enum values, in and out of range: names are never NULL, predicates never crash.
  for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
    int32_t v;
    memcpy(&v, data + i, sizeof v);
    cml_dtype_t rd = (cml_dtype_t)v;
    if (!cml_dtype_name(rd)) cml_fuzz_violation("cml_dtype_name(%d) is NULL", (int)v);
    (void)cml_dtype_bits(rd);
    (void)cml_dtype_is_valid(rd);
    (void)cml_dtype_is_supported(rd);
    (void)cml_dtype_is_float(rd);
    (void)cml_dtype_is_complex(rd);
    (void)cml_dtype_is_int(rd);
    (void)cml_dtype_is_packed(rd);
    (void)cml_dtype_real_part(rd);
    (void)cml_dtype_stablehlo_name(rd);
    if (!cml_op_name((cml_op_t)v)) cml_fuzz_violation("cml_op_name(%d) is NULL", (int)v);
    (void)cml_op_kind((cml_op_t)v);
    (void)cml_op_dtypes((cml_op_t)v);
    (void)cml_op_is_standard((cml_op_t)v);
    if (!cml_status_code_name((cml_status_code_t)v)) cml_fuzz_violation("status name NULL");
    if (!cml_reduce_type_name((cml_reduce_type_t)v)) cml_fuzz_violation("reduce name NULL");
    (void)cml_status_code(cml_status_from_code((cml_status_code_t)v));
  }
  free(text);
  return 0;
}

//===--- backend configs ---===//

// Environment variables a config input may set (first line "NAME=value").
static const char* const cml_fuzz_env_names[] = {"GOMLX_SIMD_AVX512", "GOMLX_SIMD_AVX2",
                                                 "GOMLX_FUSION"};

static void cml_fuzz_sandbox_environment(void) {
  // Never download, never load a real PJRT plugin (slow, uninstrumented): no home directory,
  // no plugin path. Only the fuzz process's own environment changes.
  setenv("GOMLX_NO_AUTO_INSTALL", "1", 1);
  setenv("HOME", "/nonexistent-cml-fuzz-home", 1);
  unsetenv("PJRT_PLUGIN_LIBRARY_PATH");
  unsetenv("GOMLX_BACKEND");
}

// True when |text| asks for more worker threads than a fuzz run should start.
static bool cml_fuzz_too_many_threads(const char* text) {
  for (const char* p = strstr(text, "threads"); p; p = strstr(p + 1, "threads")) {
    const char* q = p + 7;
    while (*q == ' ' || *q == '\t' || *q == '=') ++q;
    while (*q == '+' || *q == '0') ++q;
    size_t digits = 0;
    long value = 0;
    while (*q >= '0' && *q <= '9' && digits < 8) {
      value = value * 10 + (*q - '0');
      ++q;
      ++digits;
    }
    if (digits >= 3 || value > 16 || *q == 'x' || *q == 'X') return true;
  }
  return false;
}

// True when |text| holds "mpi" in any case.
static bool cml_fuzz_names_mpi(const char* text) {
  for (const char* p = text; p[0] && p[1] && p[2]; ++p) {
    if ((p[0] | 0x20) == 'm' && (p[1] | 0x20) == 'p' && (p[2] | 0x20) == 'i') return true;
  }
  return false;
}

static void cml_fuzz_check_backend(cml_backend_t* backend, const char* config) {
  const char* name = cml_backend_name(backend);
  if (!name || !*name) cml_fuzz_violation("backend from \"%s\" has no name", config);
  int devices = cml_backend_device_count(backend);
  if (devices < 1) cml_fuzz_violation("backend from \"%s\" has %d devices", config, devices);
  (void)cml_backend_config(backend);
  (void)cml_backend_description(backend);
  for (int d = -1; d <= devices; ++d) {
    if (!cml_backend_device_description(backend, d)) {
      cml_fuzz_violation("device description %d of \"%s\" is NULL", d, config);
    }
  }
  const cml_capabilities_t* caps = cml_backend_capabilities(backend);
  if (!caps) cml_fuzz_violation("backend from \"%s\" has no capabilities", config);
  (void)cml_backend_get_extension(backend, config);
}

int cml_fuzz_backend_config(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  char* text = cml_fuzz_text(data, size);
  if (!text) return 0;
  cml_fuzz_sandbox_environment();
  char* config = text;
  const char* env_name = NULL;
  char* newline = strchr(text, '\n');
  if (newline && strncmp(text, "GOMLX_", 6) == 0) {
    *newline = '\0';
    char* eq = strchr(text, '=');
    for (size_t i = 0; eq && i < sizeof cml_fuzz_env_names / sizeof *cml_fuzz_env_names; ++i) {
      size_t n = strlen(cml_fuzz_env_names[i]);
      if ((size_t)(eq - text) == n && strncmp(text, cml_fuzz_env_names[i], n) == 0) {
        env_name = cml_fuzz_env_names[i];
        setenv(env_name, eq + 1, 1);
      }
    }
    config = newline + 1;
  }
  // A '/' would let the xla backend dlopen any file of this machine: not in a fuzzer. Nor
  // distributed=mpi: it initializes MPI in the fuzz process (a singleton job, once per process,
  // never finalized before exit); tests/mpi runs it under mpirun. Any "mpi" is left out, so
  // that no spelling the parser accepts gets through; other distributed= values are fuzzed.
  if (strchr(config, '/') || cml_fuzz_too_many_threads(config) || cml_fuzz_names_mpi(config)) {
    if (env_name) unsetenv(env_name);
    free(text);
    return 0;
  }

  // 1. With a counting allocator: whatever happens, nothing stays allocated.
  cml_fuzz_counter_t counter = {0};
  cml_backend_t* backend = NULL;
  cml_status_t st = cml_backend_create(config, cml_fuzz_counting_allocator(&counter), &backend);
  if (st == CML_OK) {
    if (!backend) cml_fuzz_violation("cml_backend_create(\"%s\"): OK without a backend", config);
    cml_fuzz_check_backend(backend, config);
    cml_backend_release(backend);
  } else {
    if (backend) cml_fuzz_violation("cml_backend_create(\"%s\"): error with a backend", config);
    cml_fuzz_check_status(st, "cml_backend_create");
  }
  if (counter.live != 0) {
    cml_fuzz_violation("cml_backend_create(\"%s\"): %lld allocations (%lld bytes) leaked", config,
                       (long long)counter.live, (long long)counter.live_bytes);
  }

  // 2. The public entry points with the system allocator (the same parser, other plumbing).
  backend = NULL;
  if (size % 2 == 0) {
    st = cml_backend_new_with_config(config, &backend);
  } else {
    setenv("GOMLX_BACKEND", config, 1);
    st = cml_backend_new(&backend);
    unsetenv("GOMLX_BACKEND");
  }
  if (st == CML_OK) {
    cml_fuzz_check_backend(backend, config);
    cml_backend_release(backend);
  } else {
    cml_fuzz_check_status(st, "cml_backend_new");
  }

  // 3. Registry lookups by arbitrary names.
  (void)cml_backend_registered_aliases(config);
  (void)cml_backend_config_help(config);
  if (env_name) unsetenv(env_name);
  free(text);
  return 0;
}
