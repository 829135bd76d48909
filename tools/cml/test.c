// SPDX-License-Identifier: Apache-2.0
// tools/cml/test.c: "cml test", the compliance suite on a backend.
//
//   cml test [--plugin PATH]... [--backend CONFIG] [--op REGEX] [--json FILE] [-v|-vv] [--list]
//
// Exits 0 when every selected case passed or was unsupported and at least one passed; 1 when
// a case failed, an advertised op was not covered, nothing passed, or the --json file could not
// be written; 2 for usage errors or a backend that cannot be created. "--backend <name>:help"
// prints the backend's options and exits 0.
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "cml/backend.h"
#include "cml/backendtest.h"
#include "tools/cml/cli.h"

static void cml_cli_test_usage(FILE* out) {
  fputs(
      "usage: cml test [--plugin PATH]... [--backend CONFIG] [--op REGEX] [--json FILE] [-v|-vv]\n"
      "                [--list]\n"
      "\n"
      "Runs the compliance suite on a backend.\n"
      "  --plugin PATH     load a backend plug-in first (cml_plugin_load), then name it with\n"
      "                    --backend; may be given more than once\n"
      "  --backend CONFIG  backend config, e.g. \"c\", \"c:reference=true\", \"xla:cpu\"\n"
      "                    (default: GOMLX_BACKEND, else the best available backend)\n"
      "  --op REGEX        POSIX extended regex on \"<file>/<case>\", op names and op groups\n"
      "                    (\"elementwise\", \"movement\": cml_op_group_name)\n"
      "  --json FILE       also write the results as JSON to FILE\n"
      "  -v, -vv           one line per case; -vv adds the reason for skipped cases\n"
      "  --list            list the cases (matching --op) and exit\n",
      out);
}

// Reads the value of option |name| given either as "--name=value" or "--name value".
static const char* cml_cli_test_value(int argc, char** argv, int* i, const char* name) {
  size_t len = strlen(name);
  const char* arg = argv[*i];
  if (strncmp(arg, name, len) == 0 && arg[len] == '=') return arg + len + 1;
  if (strcmp(arg, name) == 0) {
    if (*i + 1 >= argc) return NULL;
    ++*i;
    return argv[*i];
  }
  return NULL;
}

static bool cml_cli_test_is_option(const char* arg, const char* name) {
  size_t len = strlen(name);
  return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

// Compiles |op_regex| into |re|; false, with the reason on stderr, when it is not valid.
static bool cml_cli_test_regex(const char* op_regex, regex_t* re) {
  int rc = regcomp(re, op_regex, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char err[256];
    regerror(rc, re, err, sizeof err);
    fprintf(stderr, "cml test: bad regular expression \"%s\": %s\n", op_regex, err);
    return false;
  }
  return true;
}

static int cml_cli_test_list(const char* op_regex) {
  regex_t re;
  bool filter = op_regex && op_regex[0];
  if (filter && !cml_cli_test_regex(op_regex, &re)) return 2;
  size_t n = cml_backendtest_case_count();
  for (size_t i = 0; i < n; ++i) {
    const char* name = cml_backendtest_case_name(i);
    if (!name) continue;
    // The same selection as cml_backendtest_run_all: the case's name, op or op group.
    const cml_op_t op = cml_backendtest_case_op(i);
    if (filter && regexec(&re, name, 0, NULL, 0) != 0 &&
        (op == CML_OP_INVALID ||
         (regexec(&re, cml_op_name(op), 0, NULL, 0) != 0 &&
          regexec(&re, cml_op_group_name(cml_op_group(op)), 0, NULL, 0) != 0))) {
      continue;
    }
    printf("%s\n", name);
  }
  if (filter) regfree(&re);
  return 0;
}

int cml_cli_test(int argc, char** argv) {
  const char* backend_config = NULL;
  const char* op_regex = NULL;
  const char* json_path = NULL;
  int verbosity = 0;
  bool list = false;

  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 || strcmp(arg, "help") == 0) {
      cml_cli_test_usage(stdout);
      return 0;
    } else if (cml_cli_test_is_option(arg, "--backend") || cml_cli_test_is_option(arg, "-b")) {
      backend_config = cml_cli_test_value(argc, argv, &i, arg[1] == 'b' ? "-b" : "--backend");
      if (!backend_config) {
        fprintf(stderr, "cml test: %s needs a value\n", arg);
        return 2;
      }
    } else if (cml_cli_test_is_option(arg, "--plugin")) {
      const char* path = cml_cli_test_value(argc, argv, &i, "--plugin");
      if (!path || !path[0]) {
        fprintf(stderr, "cml test: --plugin needs a path\n");
        return 2;
      }
      cml_status_t st = cml_plugin_load(path);
      if (st != CML_OK) {
        fprintf(stderr, "cml test: %s: %s\n", cml_status_code_name(cml_status_code(st)),
                cml_status_message(st));
        cml_status_free(st);
        return 2;
      }
    } else if (cml_cli_test_is_option(arg, "--op") || cml_cli_test_is_option(arg, "-o")) {
      op_regex = cml_cli_test_value(argc, argv, &i, arg[1] == 'o' ? "-o" : "--op");
      if (!op_regex) {
        fprintf(stderr, "cml test: %s needs a value\n", arg);
        return 2;
      }
    } else if (cml_cli_test_is_option(arg, "--json")) {
      json_path = cml_cli_test_value(argc, argv, &i, "--json");
      if (!json_path || !json_path[0]) {
        fprintf(stderr, "cml test: --json needs a file name\n");
        return 2;
      }
    } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
      verbosity = verbosity < 1 ? 1 : verbosity + 1;
    } else if (strcmp(arg, "-vv") == 0) {
      verbosity = 2;
    } else if (strcmp(arg, "--list") == 0) {
      list = true;
    } else {
      fprintf(stderr, "cml test: unknown argument \"%s\"\n\n", arg);
      cml_cli_test_usage(stderr);
      return 2;
    }
  }
  if (verbosity > 2) verbosity = 2;

  int rc = 0;
  if (cml_cli_backend_help("test", backend_config, &rc)) return rc;
  if (list) return cml_cli_test_list(op_regex);
  // A bad filter is a usage error; checked here, so that every failure of the run below is one
  // of writing the results or of running (exit 1).
  if (op_regex && op_regex[0]) {
    regex_t re;
    if (!cml_cli_test_regex(op_regex, &re)) return 2;
    regfree(&re);
  }

  cml_backend_t* backend = cml_cli_open_backend("test", backend_config);
  if (!backend) return 2;

  cml_backendtest_options_t opts;
  cml_backendtest_options_init(&opts);
  opts.op_regex = op_regex;
  opts.json_path = json_path;
  opts.verbosity = verbosity;
  opts.log = stdout;
  cml_backendtest_summary_t summary;
  cml_status_t st = cml_backendtest_run_all(backend, &opts, &summary);
  cml_backend_release(backend);
  if (st != CML_OK) {
    fprintf(stderr, "cml test: %s: %s\n", cml_status_code_name(cml_status_code(st)),
            cml_status_message(st));
    // The filter and the options were checked above: what is left is a JSON file that could
    // not be created or written (a missing directory, a full disk) or a run that failed, 1 as
    // the README says.
    cml_status_free(st);
    return 1;
  }
  if (summary.passed == 0) {
    fprintf(stderr, "cml test: no case passed%s\n",
            summary.failed == 0 && summary.skipped == 0 ? " (no case matched the filter)" : "");
    return 1;
  }
  return summary.failed == 0 ? 0 : 1;
}
