// SPDX-License-Identifier: Apache-2.0
// bench/bench_common.c: the side-by-side runner shared by the bench_* programs.
#include "bench/bench_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cml/machine.h"

//===--- backends (created once per program) ---===//

typedef struct bench_backend_t {
  char config[128];
  cml_backend_t* backend;  // NULL when unavailable
  char unavailable[256];   // why it is unavailable
  bool is_reference;
  bool is_xla;
  bool is_c;
} bench_backend_t;

static bench_backend_t bench_backends[BENCH_MAX_CONTENDERS];
static int bench_backend_count = 0;
static bool bench_backends_ready = false;

//===--- results kept for the summary ---===//

typedef struct bench_result_t {
  char name[128];
  double c_s, xla_s, ref_s, native_s;  // median seconds per execute, 0 when absent
  char native_name[24];
} bench_result_t;

static bench_result_t* bench_results = NULL;
static size_t bench_result_count = 0;
static size_t bench_result_capacity = 0;

//===--- small utilities ---===//

static double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench_compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double bench_median(double* values, int count) {
  if (count <= 0) return 0.0;
  qsort(values, (size_t)count, sizeof *values, bench_compare_double);
  if (count % 2) return values[count / 2];
  return 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

// Copies the first line of |message| into |out| (status messages may span lines).
static void bench_first_line(char* out, size_t size, const char* message) {
  size_t n = strcspn(message, "\n");
  if (n >= size) n = size - 1;
  memcpy(out, message, n);
  out[n] = '\0';
}

static void bench_format_time(char* out, size_t size, double seconds) {
  if (seconds <= 0) {
    snprintf(out, size, "-");
  } else if (seconds < 1e-3) {
    snprintf(out, size, "%.2f us", seconds * 1e6);
  } else if (seconds < 1.0) {
    snprintf(out, size, "%.3f ms", seconds * 1e3);
  } else {
    snprintf(out, size, "%.3f s", seconds);
  }
}

// xorshift64*: deterministic inputs, the same for every contender.
static uint64_t bench_rng_next(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static float bench_rng_uniform(uint64_t* state) {  // in [-1, 1)
  return (float)((double)(bench_rng_next(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

// Fills |data| (a buffer of |shape|) with uniform values in [-1, 1). Returns false for dtypes
// the runner does not generate.
static bool bench_fill(const cml_shape_t* shape, void* data, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  int64_t n = cml_shape_element_count(shape);
  switch (shape->dtype) {
    case CML_DTYPE_F32:
      for (int64_t i = 0; i < n; ++i) ((float*)data)[i] = bench_rng_uniform(&state);
      return true;
    case CML_DTYPE_F64:
      for (int64_t i = 0; i < n; ++i) ((double*)data)[i] = bench_rng_uniform(&state);
      return true;
    case CML_DTYPE_BF16:
      for (int64_t i = 0; i < n; ++i)
        ((uint16_t*)data)[i] = cml_f32_to_bf16(bench_rng_uniform(&state));
      return true;
    case CML_DTYPE_F16:
      for (int64_t i = 0; i < n; ++i)
        ((uint16_t*)data)[i] = cml_f32_to_f16(bench_rng_uniform(&state));
      return true;
    default:
      return false;
  }
}

// Widens |n| elements of |dtype| to doubles; false for dtypes the check does not read.
static bool bench_to_double(cml_dtype_t dtype, const void* data, int64_t n, double* out) {
  switch (dtype) {
    case CML_DTYPE_F32:
      for (int64_t i = 0; i < n; ++i) out[i] = ((const float*)data)[i];
      return true;
    case CML_DTYPE_F64:
      for (int64_t i = 0; i < n; ++i) out[i] = ((const double*)data)[i];
      return true;
    case CML_DTYPE_BF16:
      for (int64_t i = 0; i < n; ++i) out[i] = cml_bf16_to_f32(((const uint16_t*)data)[i]);
      return true;
    case CML_DTYPE_F16:
      for (int64_t i = 0; i < n; ++i) out[i] = cml_f16_to_f32(((const uint16_t*)data)[i]);
      return true;
    default:
      return false;
  }
}

// Normalized mean squared error of |x| against |ref|.
static double bench_nmse(const double* x, const double* ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = x[i] - ref[i];
    if (isnan(d)) return INFINITY;
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0 ? num / den : num;
}

//===--- options ---===//

static void bench_usage(const char* program, const char* what) {
  fprintf(stderr,
          "usage: %s [options]\n"
          "  %s\n"
          "options:\n"
          "  --long            more samples and warm-up, and c:reference=true on heavy cases\n"
          "  --reps N          timed samples per contender (default 7, --long 21)\n"
          "  --budget S        seconds per contender and case before samples are cut (0.25)\n"
          "  --filter TEXT     only cases whose \"group name\" contains TEXT\n"
          "  -b CONFIG         a backend contender (repeatable; replaces the default list\n"
          "                    c, c:reference=true, xla:cpu)\n"
          "  --threads N       threads of the c backend and of native contenders\n"
          "  --no-native       skip native contenders (OpenBLAS)\n"
          "  --list            print the case names and exit\n"
          "  --results PATH    append per-case medians as tab-separated lines: case, c_s,\n"
          "                    xla_s, reference_s, native_name, native_s (0: not run)\n",
          program, what);
}

bool bench_parse_args(bench_options_t* opts, int argc, char** argv, const char* what) {
  memset(opts, 0, sizeof *opts);
  opts->program = argc > 0 ? argv[0] : "bench";
  opts->reps = 0;
  opts->warmup = 2;
  opts->budget_s = 0.25;
  opts->sample_s = 2e-3;
  opts->native = true;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--long") == 0) {
      opts->long_run = true;
    } else if (strcmp(a, "--reps") == 0 && next) {
      opts->reps = atoi(next);
      ++i;
      if (opts->reps < 1) {
        fprintf(stderr, "%s: --reps wants a positive number, got '%s'\n", opts->program, next);
        return false;
      }
    } else if (strcmp(a, "--budget") == 0 && next) {
      opts->budget_s = atof(next);
      ++i;
      if (!(opts->budget_s > 0)) {
        fprintf(stderr, "%s: --budget wants seconds > 0, got '%s'\n", opts->program, next);
        return false;
      }
    } else if (strcmp(a, "--filter") == 0 && next) {
      opts->filter = next;
      ++i;
    } else if (strcmp(a, "-b") == 0 && next) {
      if (opts->config_count >= BENCH_MAX_CONTENDERS) {
        fprintf(stderr, "%s: at most %d backends\n", opts->program, BENCH_MAX_CONTENDERS);
        return false;
      }
      opts->configs[opts->config_count++] = next;
      ++i;
    } else if (strcmp(a, "--threads") == 0 && next) {
      opts->threads = atoi(next);
      ++i;
      if (opts->threads < 1) {
        fprintf(stderr, "%s: --threads wants a positive number, got '%s'\n", opts->program, next);
        return false;
      }
    } else if (strcmp(a, "--no-native") == 0) {
      opts->native = false;
    } else if (strcmp(a, "--results") == 0 && next) {
      opts->results = next;
      ++i;
    } else if (strcmp(a, "--list") == 0) {
      opts->list = true;
    } else {
      if (strcmp(a, "--help") != 0 && strcmp(a, "-h") != 0)
        fprintf(stderr, "%s: unknown or incomplete option '%s'\n", opts->program, a);
      bench_usage(opts->program, what);
      return false;
    }
  }
  if (opts->reps == 0) opts->reps = opts->long_run ? 21 : 7;
  if (opts->long_run) {
    opts->warmup = 3;
    if (opts->budget_s == 0.25) opts->budget_s = 3.0;
  }
  if (opts->config_count == 0) {
    opts->configs[0] = "c";
    opts->configs[1] = "c:reference=true";
    opts->configs[2] = "xla:cpu";
    opts->config_count = 3;
  }
  // The runner must not download a plugin: an absent xla:cpu is simply skipped.
  setenv("GOMLX_NO_AUTO_INSTALL", "1", 0);
  return true;
}

void bench_case_name(bench_case_t* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->name, sizeof c->name, fmt, ap);
  va_end(ap);
}

//===--- backends ---===//

// Appends ",threads=N" (or ":threads=N") to c backend configs when --threads is given.
static void bench_config_with_threads(const bench_options_t* opts, const char* config, char* out,
                                      size_t size) {
  bool is_c = strncmp(config, "c", 1) == 0 && (config[1] == '\0' || config[1] == ':');
  if (opts->threads > 0 && is_c && strstr(config, "threads=") == NULL) {
    snprintf(out, size, "%s%sthreads=%d", config, config[1] == ':' ? "," : ":", opts->threads);
  } else {
    snprintf(out, size, "%s", config);
  }
}

static void bench_backends_open(const bench_options_t* opts) {
  if (bench_backends_ready) return;
  bench_backends_ready = true;
  bench_backend_count = opts->config_count;
  printf("# cml %s side-by-side benchmark (%s)\n", cml_version_string(),
         opts->long_run ? "long run" : "short run; --long for more samples");
  char cpu[192];
  cml_cli_cpu_model(cpu, sizeof cpu);
  printf("# machine: %s\n", cpu);
  printf(
      "# samples: median of up to %d per contender after %d warm-up execute(s); contenders "
      "interleaved rep by rep\n",
      opts->reps, opts->warmup);
  for (int i = 0; i < bench_backend_count; ++i) {
    bench_backend_t* bb = &bench_backends[i];
    bench_config_with_threads(opts, opts->configs[i], bb->config, sizeof bb->config);
    cml_status_t st = cml_backend_new_with_config(bb->config, &bb->backend);
    if (st != CML_OK) {
      bench_first_line(bb->unavailable, sizeof bb->unavailable, cml_status_message(st));
      cml_status_free(st);
      bb->backend = NULL;
      printf("# contender %-18s unavailable: %s\n", bb->config, bb->unavailable);
      continue;
    }
    const char* name = cml_backend_name(bb->backend);
    const char* full = cml_backend_config(bb->backend);
    bb->is_xla = strcmp(name, "xla") == 0;
    bb->is_c = strcmp(name, "c") == 0;
    bb->is_reference = bb->is_c && full && strstr(full, "reference=true") != NULL;
    printf("# contender %-18s %s | %s\n", bb->config, full ? full : name,
           cml_backend_device_description(bb->backend, 0));
  }
}

//===--- one case ---===//

typedef struct bench_run_t {
  char label[128];
  int backend;  // index into bench_backends, -1 for the native contender
  cml_executable_t* exe;
  cml_buffer_t* inputs[BENCH_MAX_INPUTS];
  void* native_out;   // native contender: host output
  char skip[256];     // non-empty: not run, and why
  double estimate_s;  // per execute, from the warm-up
  int inner;          // executes per sample
  int reps;           // samples wanted
  int done;           // samples taken
  double* samples;
  double median_s;
  double* check;  // the first output, widened to double (NULL: not checked)
} bench_run_t;

typedef struct bench_case_state_t {
  const bench_case_t* c;
  size_t input_count;
  cml_shape_t input_shapes[BENCH_MAX_INPUTS];
  void* host_inputs[BENCH_MAX_INPUTS];
  cml_shape_t output_shape;
  bool have_shapes;
} bench_case_state_t;

// Builds and compiles the case on |backend|; the first error is written to |skip|.
static cml_executable_t* bench_compile(const bench_case_t* c, cml_backend_t* backend, char* skip,
                                       size_t skip_size) {
  cml_builder_t* builder = NULL;
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_create(backend, c->group, &builder);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(builder);
    cml_value_t out = c->build(f, c);
    st = cml_function_return(f, &out, 1);
    if (st == CML_OK) st = cml_builder_compile(builder, &exe);
  }
  if (st != CML_OK) {
    char line[200];
    bench_first_line(line, sizeof line, cml_status_message(st));
    snprintf(skip, skip_size, "%s: %s", cml_status_code_name(cml_status_code(st)), line);
    cml_status_free(st);
    exe = NULL;
  }
  cml_builder_destroy(builder);
  return exe;
}

// Runs one execute (or the native function). |keep| receives the output buffer when non-NULL.
static cml_status_t bench_execute(bench_case_state_t* cs, bench_run_t* r, cml_buffer_t** keep) {
  if (r->backend < 0) {
    cs->c->native(cs->c, (const void* const*)cs->host_inputs, r->native_out);
    return CML_OK;
  }
  cml_buffer_t* out = NULL;
  cml_status_t st = cml_executable_execute(r->exe, r->inputs, cs->input_count, NULL, 0, &out);
  if (st != CML_OK) return st;
  if (keep) {
    *keep = out;
  } else {
    cml_buffer_release(out);
  }
  return CML_OK;
}

// Copies the run's output to a new double array for the numeric check (NULL if unreadable).
static double* bench_read_output(bench_case_state_t* cs, bench_run_t* r, cml_buffer_t* out) {
  const cml_shape_t* shape = &cs->output_shape;
  int64_t n = cml_shape_element_count(shape);
  size_t bytes = cml_shape_byte_size(shape);
  double* values = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  void* host = r->backend < 0 ? r->native_out : malloc(bytes > 0 ? bytes : 1);
  bool ok = values && host;
  if (ok && r->backend >= 0) {
    cml_status_t st = cml_buffer_copy_to_host(out, host, bytes);
    ok = st == CML_OK;
    cml_status_free(st);
  }
  if (ok) ok = bench_to_double(shape->dtype, host, n, values);
  if (r->backend >= 0) free(host);
  if (!ok) {
    free(values);
    return NULL;
  }
  return values;
}

static double bench_tolerance(cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_BF16:
      return 1e-3;
    case CML_DTYPE_F16:
      return 1e-5;
    case CML_DTYPE_F64:
      return 1e-20;
    default:
      return 1e-7;
  }
}

static void bench_record(const bench_case_t* c, const bench_run_t* runs, int run_count) {
  if (bench_result_count == bench_result_capacity) {
    size_t cap = bench_result_capacity ? bench_result_capacity * 2 : 32;
    bench_result_t* grown = realloc(bench_results, cap * sizeof *grown);
    if (!grown) return;
    bench_results = grown;
    bench_result_capacity = cap;
  }
  bench_result_t* res = &bench_results[bench_result_count++];
  memset(res, 0, sizeof *res);
  snprintf(res->name, sizeof res->name, "%s %s", c->group, c->name);
  for (int i = 0; i < run_count; ++i) {
    const bench_run_t* r = &runs[i];
    if (r->skip[0] || r->median_s <= 0) continue;
    if (r->backend < 0) {
      res->native_s = r->median_s;
      snprintf(res->native_name, sizeof res->native_name, "%.23s", r->label);
      continue;
    }
    const bench_backend_t* bb = &bench_backends[r->backend];
    if (bb->is_xla && res->xla_s == 0) res->xla_s = r->median_s;
    if (bb->is_reference && res->ref_s == 0) res->ref_s = r->median_s;
    if (bb->is_c && !bb->is_reference && res->c_s == 0) res->c_s = r->median_s;
  }
}

static void bench_run_case(bench_options_t* opts, const bench_case_t* c) {
  bench_case_state_t cs;
  memset(&cs, 0, sizeof cs);
  cs.c = c;
  bench_run_t runs[BENCH_MAX_CONTENDERS + 1];
  memset(runs, 0, sizeof runs);
  int run_count = 0;

  char work[64];
  if (c->flops > 0) {
    snprintf(work, sizeof work, "%.1f MFLOP", c->flops * 1e-6);
  } else if (c->bytes > 0) {
    snprintf(work, sizeof work, "%.1f MB moved", c->bytes * 1e-6);
  } else {
    snprintf(work, sizeof work, "per-call overhead");
  }
  printf("\n== %s %s  (%s)\n", c->group, c->name, work);
  fflush(stdout);

  // Compile on every backend contender.
  for (int i = 0; i < bench_backend_count; ++i) {
    bench_backend_t* bb = &bench_backends[i];
    bench_run_t* r = &runs[run_count++];
    _Static_assert(sizeof r->label == sizeof bb->config, "label holds a config");
    memcpy(r->label, bb->config, sizeof r->label);
    r->backend = i;
    if (!bb->backend) {
      snprintf(r->skip, sizeof r->skip, "unavailable: %.200s", bb->unavailable);
      continue;
    }
    if (bb->is_reference && c->heavy && !opts->long_run) {
      snprintf(r->skip, sizeof r->skip, "skipped: heavy case for scalar kernels (--long runs it)");
      continue;
    }
    r->exe = bench_compile(c, bb->backend, r->skip, sizeof r->skip);
    if (!r->exe) continue;
    if (!cs.have_shapes) {
      size_t n = cml_executable_input_count(r->exe);
      if (n > BENCH_MAX_INPUTS || cml_executable_output_count(r->exe) != 1) {
        snprintf(r->skip, sizeof r->skip, "runner limit: %zu inputs", n);
        cml_executable_release(r->exe);
        r->exe = NULL;
        continue;
      }
      cs.input_count = n;
      for (size_t k = 0; k < n; ++k) cs.input_shapes[k] = *cml_executable_input_shape(r->exe, k);
      cs.output_shape = *cml_executable_output_shape(r->exe, 0);
      cs.have_shapes = true;
    }
  }
  if (c->native && opts->native && run_count < BENCH_MAX_CONTENDERS + 1) {
    bench_run_t* r = &runs[run_count++];
    snprintf(r->label, sizeof r->label, "%s", c->native_name ? c->native_name : "native");
    r->backend = -1;
    if (!cs.have_shapes) snprintf(r->skip, sizeof r->skip, "no backend compiled the case");
  }
  if (!cs.have_shapes) {
    for (int i = 0; i < run_count; ++i) printf("  %-24s %s\n", runs[i].label, runs[i].skip);
    bench_record(c, runs, run_count);
    return;
  }

  // Same inputs for everyone.
  bool inputs_ok = true;
  for (size_t k = 0; k < cs.input_count; ++k) {
    size_t bytes = cml_shape_byte_size(&cs.input_shapes[k]);
    cs.host_inputs[k] = malloc(bytes > 0 ? bytes : 1);
    if (!cs.host_inputs[k] || !bench_fill(&cs.input_shapes[k], cs.host_inputs[k], k + 1)) {
      inputs_ok = false;
    }
  }
  for (int i = 0; i < run_count; ++i) {
    bench_run_t* r = &runs[i];
    if (r->skip[0]) continue;
    if (!inputs_ok) {
      snprintf(r->skip, sizeof r->skip, "runner cannot generate these inputs");
      continue;
    }
    if (r->backend < 0) {
      size_t bytes = cml_shape_byte_size(&cs.output_shape);
      r->native_out = malloc(bytes > 0 ? bytes : 1);
      if (!r->native_out) snprintf(r->skip, sizeof r->skip, "out of memory");
      continue;
    }
    cml_backend_t* backend = bench_backends[r->backend].backend;
    for (size_t k = 0; k < cs.input_count; ++k) {
      cml_status_t st =
          cml_buffer_from_host(backend, 0, &cs.input_shapes[k], cs.host_inputs[k],
                               cml_shape_byte_size(&cs.input_shapes[k]), &r->inputs[k]);
      if (st != CML_OK) {
        char line[200];
        bench_first_line(line, sizeof line, cml_status_message(st));
        snprintf(r->skip, sizeof r->skip, "input upload: %s", line);
        cml_status_free(st);
        break;
      }
    }
  }

  // Warm-up: the first execute also provides the output for the check; the last one estimates
  // the time of one execute.
  for (int i = 0; i < run_count; ++i) {
    bench_run_t* r = &runs[i];
    if (r->skip[0]) continue;
    for (int w = 0; w < opts->warmup; ++w) {
      cml_buffer_t* out = NULL;
      double t0 = bench_now();
      cml_status_t st = bench_execute(&cs, r, w == 0 ? &out : NULL);
      double t = bench_now() - t0;
      if (st != CML_OK) {
        char line[200];
        bench_first_line(line, sizeof line, cml_status_message(st));
        snprintf(r->skip, sizeof r->skip, "execute: %s: %s",
                 cml_status_code_name(cml_status_code(st)), line);
        cml_status_free(st);
        break;
      }
      if (w == 0) {
        r->check = bench_read_output(&cs, r, out);
        cml_buffer_release(out);
      }
      r->estimate_s = t;
      if (t > opts->budget_s) break;  // slow contender: one warm-up is enough
    }
    if (r->skip[0]) continue;
    double per = r->estimate_s > 1e-9 ? r->estimate_s : 1e-9;
    double inner = ceil(opts->sample_s / per);
    r->inner = inner < 1 ? 1 : inner > 100000 ? 100000 : (int)inner;
    double sample = per * r->inner;
    int reps = (int)(opts->budget_s / sample);
    if (reps < 3) reps = 3;
    if (sample > opts->budget_s) reps = 1;
    r->reps = reps < opts->reps ? reps : opts->reps;
    r->samples = calloc((size_t)r->reps, sizeof(double));
    if (!r->samples) snprintf(r->skip, sizeof r->skip, "out of memory");
  }

  // Timed samples, contenders interleaved; the starting contender rotates every rep.
  int max_reps = 0;
  for (int i = 0; i < run_count; ++i) {
    if (!runs[i].skip[0] && runs[i].reps > max_reps) max_reps = runs[i].reps;
  }
  for (int rep = 0; rep < max_reps; ++rep) {
    for (int k = 0; k < run_count; ++k) {
      bench_run_t* r = &runs[(rep + k) % run_count];
      if (r->skip[0] || r->done >= r->reps) continue;
      double t0 = bench_now();
      cml_status_t st = CML_OK;
      for (int it = 0; it < r->inner && st == CML_OK; ++it) st = bench_execute(&cs, r, NULL);
      double t = bench_now() - t0;
      if (st != CML_OK) {
        char line[200];
        bench_first_line(line, sizeof line, cml_status_message(st));
        snprintf(r->skip, sizeof r->skip, "execute: %s", line);
        cml_status_free(st);
        continue;
      }
      r->samples[r->done++] = t / r->inner;
    }
  }

  // Oracle: the reference backend's output when it ran, else the first checked contender.
  int oracle = -1;
  for (int i = 0; i < run_count; ++i) {
    if (!runs[i].skip[0] && runs[i].check && runs[i].backend >= 0 &&
        bench_backends[runs[i].backend].is_reference) {
      oracle = i;
      break;
    }
  }
  for (int i = 0; i < run_count && oracle < 0; ++i) {
    if (!runs[i].skip[0] && runs[i].check) oracle = i;
  }
  double xla_s = 0;
  for (int i = 0; i < run_count; ++i) {
    bench_run_t* r = &runs[i];
    if (r->skip[0] || r->done == 0) continue;
    r->median_s = bench_median(r->samples, r->done);
    if (r->backend >= 0 && bench_backends[r->backend].is_xla && xla_s == 0) xla_s = r->median_s;
  }

  const char* unit = c->flops > 0 ? "GFLOP/s" : c->bytes > 0 ? "GB/s" : "";
  printf("  %-24s %11s %9s %11s %8s  %s\n", "contender", "median", unit, "vs xla:cpu", "samples",
         oracle >= 0 ? "check" : "");
  int64_t n_out = cml_shape_element_count(&cs.output_shape);
  double tolerance = bench_tolerance(cs.output_shape.dtype);
  for (int i = 0; i < run_count; ++i) {
    bench_run_t* r = &runs[i];
    if (r->skip[0] || r->done == 0) {
      printf("  %-24s %s\n", r->label, r->skip[0] ? r->skip : "no samples");
      continue;
    }
    char tbuf[32], rate[32], ratio[32], samples[32], check[96];
    bench_format_time(tbuf, sizeof tbuf, r->median_s);
    if (c->flops > 0) {
      snprintf(rate, sizeof rate, "%.1f", c->flops / r->median_s * 1e-9);
    } else if (c->bytes > 0) {
      snprintf(rate, sizeof rate, "%.1f", c->bytes / r->median_s * 1e-9);
    } else {
      snprintf(rate, sizeof rate, "-");
    }
    if (xla_s > 0) {
      snprintf(ratio, sizeof ratio, "%.2fx", xla_s / r->median_s);
    } else {
      snprintf(ratio, sizeof ratio, "-");
    }
    snprintf(samples, sizeof samples, "%dx%d", r->done, r->inner);
    if (oracle < 0) {
      check[0] = '\0';
    } else if (i == oracle) {
      snprintf(check, sizeof check, "oracle");
    } else if (!r->check) {
      snprintf(check, sizeof check, "not checked");
    } else {
      double e = bench_nmse(r->check, runs[oracle].check, n_out);
      snprintf(check, sizeof check, "%s (nmse %.1e vs %.40s)", e <= tolerance ? "ok" : "MISMATCH",
               e, runs[oracle].label);
    }
    printf("  %-24s %11s %9s %11s %8s  %s\n", r->label, tbuf, rate, ratio, samples, check);
  }
  fflush(stdout);
  bench_record(c, runs, run_count);
  opts->cases_run++;

  for (int i = 0; i < run_count; ++i) {
    bench_run_t* r = &runs[i];
    for (size_t k = 0; k < BENCH_MAX_INPUTS; ++k) cml_buffer_release(r->inputs[k]);
    cml_executable_release(r->exe);
    free(r->native_out);
    free(r->samples);
    free(r->check);
  }
  for (size_t k = 0; k < cs.input_count; ++k) free(cs.host_inputs[k]);
}

void bench_run(bench_options_t* opts, const bench_case_t* cases, size_t count) {
  if (opts->list) {
    for (size_t i = 0; i < count; ++i) printf("%s %s\n", cases[i].group, cases[i].name);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    char full[160];
    snprintf(full, sizeof full, "%s %s", cases[i].group, cases[i].name);
    if (opts->filter && !strstr(full, opts->filter)) continue;
    bench_backends_open(opts);
    bench_run_case(opts, &cases[i]);
  }
}

static int bench_compare_result(const void* a, const void* b) {
  const bench_result_t* x = a;
  const bench_result_t* y = b;
  double rx = x->c_s > 0 && x->xla_s > 0 ? x->xla_s / x->c_s : 1e9;
  double ry = y->c_s > 0 && y->xla_s > 0 ? y->xla_s / y->c_s : 1e9;
  return (rx > ry) - (rx < ry);
}

int bench_finish(bench_options_t* opts) {
  if (bench_result_count > 0 && opts->results) {
    FILE* file = fopen(opts->results, "a");
    if (!file) {
      fprintf(stderr, "%s: cannot append to %s\n", opts->program, opts->results);
    } else {
      for (size_t i = 0; i < bench_result_count; ++i) {
        const bench_result_t* r = &bench_results[i];
        fprintf(file, "%s\t%.9g\t%.9g\t%.9g\t%s\t%.9g\n", r->name, r->c_s, r->xla_s, r->ref_s,
                r->native_name[0] ? r->native_name : "-", r->native_s);
      }
      fclose(file);
    }
  }
  if (bench_result_count > 0) {
    qsort(bench_results, bench_result_count, sizeof *bench_results, bench_compare_result);
    printf(
        "\n# summary: speed of c relative to the others (time_other / time_c; > 1: c is "
        "faster), slowest vs xla:cpu first\n");
    printf("  %-56s %10s %10s %12s %s\n", "case", "c", "c/xla:cpu", "c/reference", "c/native");
    for (size_t i = 0; i < bench_result_count; ++i) {
      const bench_result_t* r = &bench_results[i];
      char tbuf[32], vx[32], vr[32], vn[48];
      bench_format_time(tbuf, sizeof tbuf, r->c_s);
      snprintf(vx, sizeof vx, "-");
      snprintf(vr, sizeof vr, "-");
      snprintf(vn, sizeof vn, "-");
      if (r->c_s > 0 && r->xla_s > 0) snprintf(vx, sizeof vx, "%.2fx", r->xla_s / r->c_s);
      if (r->c_s > 0 && r->ref_s > 0) snprintf(vr, sizeof vr, "%.1fx", r->ref_s / r->c_s);
      if (r->c_s > 0 && r->native_s > 0)
        snprintf(vn, sizeof vn, "%.2fx %s", r->native_s / r->c_s, r->native_name);
      printf("  %-56s %10s %10s %12s %s\n", r->name, tbuf, vx, vr, vn);
    }
  }
  for (int i = 0; i < bench_backend_count; ++i) {
    cml_backend_release(bench_backends[i].backend);
    bench_backends[i].backend = NULL;
  }
  free(bench_results);
  bench_results = NULL;
  bench_result_count = bench_result_capacity = 0;
  return 0;
}

//===--- builder helpers ---===//

cml_value_t bench_param(cml_function_t* f, const char* name, cml_dtype_t dtype, int32_t rank,
                        const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  return cml_parameter(f, name, &s);
}

cml_value_t bench_broadcast_back(cml_function_t* f, cml_value_t x, const int64_t* out_dims,
                                 int32_t out_rank, int64_t axis) {
  int64_t axes[CML_MAX_RANK];
  int32_t count = 0;
  for (int32_t i = 0; i < out_rank; ++i) {
    if (i != axis) axes[count++] = i;
  }
  return cml_op_broadcast_in_dim(f, x, out_dims, out_rank, axes, count);
}
