// SPDX-License-Identifier: Apache-2.0
// backendtest/runner.c: runs the compliance cases on a backend, filters them, checks op
// coverage and reports (text and JSON). Implements cml/backendtest.h.
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backendtest/bt.h"
#include "backendtest/bt_internal.h"
#include "backendtest/json_string.h"
#include "backendtest/out_file.h"
#include "cml/backendtest.h"

typedef struct bt_group_t {
  const char* name;
  const bt_case_t* cases;
  const size_t* count;
} bt_group_t;

// The order of the run: infrastructure first, so that a backend whose execution path is broken
// shows that before hundreds of op failures.
static const bt_group_t bt_groups[] = {
    {"exec", bt_cases_exec, &bt_cases_exec_count},
    {"control", bt_cases_control, &bt_cases_control_count},
    {"elementwise_unary", bt_cases_elementwise_unary, &bt_cases_elementwise_unary_count},
    {"elementwise_binary", bt_cases_elementwise_binary, &bt_cases_elementwise_binary_count},
    {"elementwise_f8", bt_cases_elementwise_f8, &bt_cases_elementwise_f8_count},
    {"reduce", bt_cases_reduce, &bt_cases_reduce_count},
    {"movement", bt_cases_movement, &bt_cases_movement_count},
    {"index", bt_cases_index, &bt_cases_index_count},
    {"window", bt_cases_window, &bt_cases_window_count},
    {"linalg_dot", bt_cases_linalg_dot, &bt_cases_linalg_dot_count},
    {"linalg_conv", bt_cases_linalg_conv, &bt_cases_linalg_conv_count},
    {"special", bt_cases_special, &bt_cases_special_count},
    {"fused", bt_cases_fused, &bt_cases_fused_count},
    {"collective", bt_cases_collective, &bt_cases_collective_count},
    {"fused_quant", bt_cases_fused_quant, &bt_cases_fused_quant_count},
    {"autodiff", bt_cases_autodiff, &bt_cases_autodiff_count},
    {"dynamic", bt_cases_dynamic, &bt_cases_dynamic_count},
};
#define BT_GROUP_COUNT (sizeof bt_groups / sizeof bt_groups[0])

static bool bt_case_is_real(const bt_case_t* c) { return c->name && c->fn; }

// The ops.def group of a case's op ("elementwise", "movement"), NULL for a case without an op.
static const char* bt_op_group_name(cml_op_t op) {
  return op != CML_OP_INVALID ? cml_op_group_name(cml_op_group(op)) : NULL;
}

//===--- options and listing ---===//

void cml_backendtest_options_init(cml_backendtest_options_t* options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

// "<group>/<name>" of every case, built once.
static char** bt_case_names;
static cml_op_t* bt_case_ops;
static size_t bt_case_names_count;
static pthread_once_t bt_case_names_once = PTHREAD_ONCE_INIT;

static void bt_build_case_names(void) {
  size_t total = 0;
  for (size_t g = 0; g < BT_GROUP_COUNT; ++g) {
    for (size_t i = 0; i < *bt_groups[g].count; ++i)
      total += bt_case_is_real(&bt_groups[g].cases[i]);
  }
  char** names = calloc(total + 1, sizeof *names);
  cml_op_t* ops = calloc(total + 1, sizeof *ops);
  if (!names || !ops) {
    free(names);
    free(ops);
    return;
  }
  size_t k = 0;
  for (size_t g = 0; g < BT_GROUP_COUNT; ++g) {
    for (size_t i = 0; i < *bt_groups[g].count; ++i) {
      const bt_case_t* c = &bt_groups[g].cases[i];
      if (!bt_case_is_real(c)) continue;
      size_t len = strlen(bt_groups[g].name) + 1 + strlen(c->name) + 1;
      char* s = malloc(len);
      if (!s) break;
      snprintf(s, len, "%s/%s", bt_groups[g].name, c->name);
      ops[k] = c->op;
      names[k++] = s;
    }
  }
  bt_case_names = names;
  bt_case_ops = ops;
  bt_case_names_count = k;
}

size_t cml_backendtest_case_count(void) {
  pthread_once(&bt_case_names_once, bt_build_case_names);
  return bt_case_names_count;
}

const char* cml_backendtest_case_name(size_t i) {
  pthread_once(&bt_case_names_once, bt_build_case_names);
  return i < bt_case_names_count ? bt_case_names[i] : NULL;
}

cml_op_t cml_backendtest_case_op(size_t i) {
  pthread_once(&bt_case_names_once, bt_build_case_names);
  return i < bt_case_names_count ? bt_case_ops[i] : CML_OP_INVALID;
}

//===--- JSON ---===//

static void bt_json_string(FILE* out, const char* s) { cml__json_write_string(out, s); }

//===--- the run ---===//

typedef struct bt_record_t {
  const char* group;
  const bt_case_t* c;
  bt_result_t result;
  char* message;  // heap, may be NULL
} bt_record_t;

static const char* bt_result_word(bt_result_t r) {
  switch (r) {
    case BT_RESULT_OK:
      return "ok";
    case BT_RESULT_FAILED:
      return "failed";
    case BT_RESULT_UNSUPPORTED:
      return "unsupported";
  }
  return "unknown";
}

// Prints |message| with every line indented under its case.
static void bt_print_indented(FILE* log, const char* message) {
  const char* p = message;
  while (p && *p) {
    const char* nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    fprintf(log, "    %.*s\n", (int)len, p);
    p = nl ? nl + 1 : NULL;
  }
}

static bool bt_matches(const regex_t* re, const char* text) {
  return !re || (text && regexec(re, text, 0, NULL, 0) == 0);
}

cml_status_t cml_backendtest_run_all(cml_backend_t* backend,
                                     const cml_backendtest_options_t* options,
                                     cml_backendtest_summary_t* out_summary) {
  if (out_summary) memset(out_summary, 0, sizeof *out_summary);
  if (!backend) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "backendtest: no backend");
  if (!out_summary) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "backendtest: no summary to fill");
  }
  cml_backendtest_options_t opts;
  cml_backendtest_options_init(&opts);
  if (options) {
    if (options->struct_size < sizeof opts) {
      return cml_status_make(CML_STATUS_INCOMPATIBLE,
                             "backendtest: options.struct_size is %zu, want %zu (call "
                             "cml_backendtest_options_init)",
                             options->struct_size, sizeof opts);
    }
    opts = *options;
  }
  FILE* log = opts.log ? opts.log : stdout;

  regex_t re_storage;
  regex_t* re = NULL;
  if (opts.op_regex && opts.op_regex[0]) {
    int rc = regcomp(&re_storage, opts.op_regex, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char err[256];
      regerror(rc, &re_storage, err, sizeof err);
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "backendtest: bad regular expression \"%s\": %s", opts.op_regex, err);
    }
    re = &re_storage;
  }

  cml__out_file_t json_file;
  FILE* json = NULL;
  if (opts.json_path && !opts.json_path[0]) {
    if (re) regfree(re);
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "backendtest: empty JSON path");
  }
  if (opts.json_path) {
    if (cml__out_file_open(&json_file, opts.json_path)) json = json_file.f;
    if (!json) {
      int err = errno;
      if (re) regfree(re);
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "backendtest: cannot write %s: %s",
                             opts.json_path, strerror(err));
    }
  }

  size_t total = 0;
  for (size_t g = 0; g < BT_GROUP_COUNT; ++g) total += *bt_groups[g].count;
  bt_record_t* records = calloc(total + 1, sizeof *records);
  if (!records) {
    if (re) regfree(re);
    if (json) (void)cml__out_file_close(&json_file, false);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }

  const cml_capabilities_t* caps = cml_backend_capabilities(backend);
  bool covered[CML_OP_COUNT];
  memset(covered, 0, sizeof covered);
  size_t record_count = 0;
  char full_name[256];

  if (opts.verbosity >= 1) {
    fprintf(log, "backend %s (%s)\n", cml_backend_name(backend),
            cml_backend_config(backend) ? cml_backend_config(backend) : "");
  }
  for (size_t g = 0; g < BT_GROUP_COUNT; ++g) {
    const bt_group_t* group = &bt_groups[g];
    for (size_t i = 0; i < *group->count; ++i) {
      const bt_case_t* c = &group->cases[i];
      if (!bt_case_is_real(c)) continue;
      snprintf(full_name, sizeof full_name, "%s/%s", group->name, c->name);
      const char* op_name = c->op != CML_OP_INVALID ? cml_op_name(c->op) : NULL;
      const char* op_group = bt_op_group_name(c->op);
      if (!bt_matches(re, full_name) && !(op_name && bt_matches(re, op_name)) &&
          !(op_group && bt_matches(re, op_group))) {
        continue;
      }

      bt_t t;
      bt_case_begin(&t, backend, group->name, c->name);
      c->fn(&t);
      bt_result_t result = bt_case_end(&t);
      const bool ran = t.executions > 0;
      if (result == BT_RESULT_OK && t.op_required && !ran && t.checks == 0) {
        // Its op is there but none of the dtypes it tests: it checked nothing, so it is no pass.
        bt_unsupported(&t,
                       "the case checked nothing on this backend (none of the dtypes it tests "
                       "is supported)");
        result = BT_RESULT_UNSUPPORTED;
      }
      if (result == BT_RESULT_FAILED && !bt_case_message(&t)[0]) {
        // A failure nobody can read is a bug in the case; say so rather than print nothing.
        bt_fail(&t, "the case failed without a message");
      }
      bt_record_t* rec = &records[record_count++];
      rec->group = group->name;
      rec->c = c;
      rec->result = result;
      rec->message = t.message;  // take ownership
      t.message = NULL;
      bt_case_clear(&t);

      switch (result) {
        case BT_RESULT_OK:
          ++out_summary->passed;
          // Only a case that ran something covers its op (not one checking a build error).
          if (ran && c->op > CML_OP_INVALID && c->op < CML_OP_COUNT) covered[c->op] = true;
          if (opts.verbosity >= 1) fprintf(log, "ok   %s\n", full_name);
          break;
        case BT_RESULT_FAILED:
          ++out_summary->failed;
          fprintf(log, "FAIL %s\n", full_name);
          bt_print_indented(log, rec->message);
          break;
        case BT_RESULT_UNSUPPORTED:
          ++out_summary->skipped;
          if (opts.verbosity >= 1) fprintf(log, "skip %s\n", full_name);
          if (opts.verbosity >= 2) bt_print_indented(log, rec->message);
          break;
      }
      fflush(log);
    }
  }

  // Coverage: every standard op the backend advertises (and the filter selects) must have been
  // exercised by a passing case; otherwise a backend could pass by skipping.
  cml_op_t* uncovered = calloc(CML_OP_COUNT, sizeof *uncovered);
  size_t uncovered_count = 0;
  for (int op = 0; op < CML_OP_COUNT && uncovered; ++op) {
    if (op == CML_OP_INVALID) continue;
    // Standard ops, and the fused ops a backend runs natively (it advertises them; a backend
    // that decomposes one does not, and the cases of its decomposition cover the standard ops).
    if (!cml_op_is_standard((cml_op_t)op) && cml_op_group((cml_op_t)op) != CML_OPG_FUSED) continue;
    // Every graph holds Parameters and Constants, and the builder never asks for them (a
    // backend that runs Float32 alone has no case of their own to pass).
    if (op == CML_OP_PARAMETER || op == CML_OP_CONSTANT) continue;
    if (!caps || !cml_capabilities_has_op(caps, (cml_op_t)op)) continue;
    if (!bt_matches(re, cml_op_name((cml_op_t)op)) &&
        !bt_matches(re, bt_op_group_name((cml_op_t)op))) {
      continue;
    }
    if (covered[op]) continue;
    uncovered[uncovered_count++] = (cml_op_t)op;
    fprintf(log, "not covered: %s\n", cml_op_name((cml_op_t)op));
  }
  out_summary->uncovered_ops = uncovered_count;
  out_summary->failed += uncovered_count;

  fprintf(log, "%zu passed, %zu failed, %zu skipped\n", out_summary->passed, out_summary->failed,
          out_summary->skipped);
  fflush(log);

  cml_status_t status = CML_OK;
  if (json) {
    fputs("{\"backend\": ", json);
    bt_json_string(json, cml_backend_name(backend));
    fputs(", \"config\": ", json);
    bt_json_string(json, cml_backend_config(backend));
    fputs(", \"filter\": ", json);
    bt_json_string(json, re ? opts.op_regex : NULL);
    fputs(",\n \"cases\": [\n", json);
    for (size_t i = 0; i < record_count; ++i) {
      const bt_record_t* rec = &records[i];
      snprintf(full_name, sizeof full_name, "%s/%s", rec->group, rec->c->name);
      fputs("  {\"name\": ", json);
      bt_json_string(json, full_name);
      fputs(", \"op\": ", json);
      bt_json_string(json, rec->c->op != CML_OP_INVALID ? cml_op_name(rec->c->op) : NULL);
      fputs(", \"group\": ", json);
      bt_json_string(json, bt_op_group_name(rec->c->op));
      fputs(", \"result\": ", json);
      bt_json_string(json, bt_result_word(rec->result));
      fputs(", \"message\": ", json);
      bt_json_string(json, rec->message ? rec->message : "");
      fputs(i + 1 < record_count ? "},\n" : "}\n", json);
    }
    fputs(" ],\n \"not_covered\": [", json);
    for (size_t i = 0; i < uncovered_count; ++i) {
      if (i) fputs(", ", json);
      bt_json_string(json, cml_op_name(uncovered[i]));
    }
    fprintf(
        json, "],\n \"passed\": %zu, \"failed\": %zu, \"skipped\": %zu, \"uncovered_ops\": %zu}\n",
        out_summary->passed, out_summary->failed, out_summary->skipped, out_summary->uncovered_ops);
    if (!cml__out_file_close(&json_file, true)) {
      status = cml_status_make(CML_STATUS_UNAVAILABLE, "backendtest: error writing %s: %s",
                               opts.json_path, strerror(errno));
    }
  }

  for (size_t i = 0; i < record_count; ++i) free(records[i].message);
  free(records);
  free(uncovered);
  if (re) regfree(re);
  return status;
}
