// SPDX-License-Identifier: Apache-2.0
// tools/cml/main.c: the cml command line tool: dispatches `cml info|test|install|bench|...`.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cml/base.h"
#include "tools/cml/cli.h"

static void cml_cli_usage(FILE* out) {
  fputs(
      "usage: cml <command> [options]\n"
      "\n"
      "Commands:\n"
      "  info [--backend CONFIG]   library version, registered backends, the default backend\n"
      "                            and why, and the chosen backend's devices and capabilities\n"
      "  test [--backend CONFIG]   run the compliance suite on a backend (cml test --help)\n"
      "  install cpu|cuda          install a PJRT plugin for the xla backend (cml install --help)\n"
      "  bench [--backend CONFIG]  this machine's FMA and DRAM limits and the standard benchmark\n"
      "                            cases, optionally against other backends (cml bench --help)\n"
      "  version                   print the library version\n"
      "  help                      print this message\n"
      "\n"
      "Backend configs are \"<name>[:<options>]\", e.g. \"c\", \"c:threads=4\", \"xla:cpu\";\n"
      "\"<name>:help\" lists a backend's options. GOMLX_BACKEND sets the default.\n",
      out);
}

bool cml_cli_backend_help(const char* command, const char* config, int* out_rc) {
  *out_rc = 0;
  const char* colon = config ? strchr(config, ':') : NULL;
  if (!colon) return false;
  // The options part is "help", spaces around it allowed (as the registry reads it).
  const char* rest = colon + 1;
  while (*rest == ' ') ++rest;
  size_t n = strlen(rest);
  while (n > 0 && rest[n - 1] == ' ') --n;
  if (n != 4 || strncmp(rest, "help", 4) != 0) return false;
  // The registry answers with the option list as an INVALID_ARGUMENT status; an unknown backend
  // name is a different status, reported as any backend that cannot be created.
  cml_backend_t* backend = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &backend);
  if (st == CML_OK) {  // a backend that takes "help" as an ordinary option
    cml_backend_release(backend);
    return false;
  }
  const char* message = cml_status_message(st);
  if (cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT && strstr(message, " options:\n")) {
    fputs(message, stdout);
    if (message[0] && message[strlen(message) - 1] != '\n') fputc('\n', stdout);
  } else {
    fprintf(stderr, "cml %s: cannot create backend \"%s\": %s: %s\n", command, config,
            cml_status_code_name(cml_status_code(st)), message);
    *out_rc = 2;
  }
  cml_status_free(st);
  return true;
}

cml_backend_t* cml_cli_open_backend(const char* command, const char* config) {
  if (config && !config[0]) {  // an empty --backend= would silently mean the built-in default
    fprintf(stderr, "cml %s: the backend config is empty (leave the option out for the default)\n",
            command);
    return NULL;
  }
  cml_backend_t* backend = NULL;
  cml_status_t st =
      config ? cml_backend_new_with_config(config, &backend) : cml_backend_new(&backend);
  if (st != CML_OK) {
    fprintf(stderr, "cml %s: cannot create backend %s%s%s: %s: %s\n", command, config ? "\"" : "",
            config ? config : "(the default)", config ? "\"" : "",
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return backend;
}

// `cml version`: takes no arguments but --help.
static int cml_cli_version(int argc, char** argv) {
  static const char usage[] = "usage: cml version\n\nPrints the library version.\n";
  if (argc > 1) {
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    fprintf(stderr, "cml %s: unknown argument \"%s\"\n\n%s", argv[0], argv[1], usage);
    return 2;
  }
  printf("cml %s\n", cml_version_string());
  return 0;
}

// Runs the command |argv[0]| with its arguments (|argc| of them, the command included).
static int cml_cli_dispatch_command(int argc, char** argv) {
  const char* command = argv[0];
  if (strcmp(command, "info") == 0) return cml_cli_info(argc, argv);
  if (strcmp(command, "test") == 0) return cml_cli_test(argc, argv);
  if (strcmp(command, "install") == 0) return cml_cli_install(argc, argv);
  if (strcmp(command, "bench") == 0) return cml_cli_bench(argc, argv);
  return cml_cli_version(argc, argv);
}

static int cml_cli_dispatch(int argc, char** argv) {
  if (argc < 2) {
    cml_cli_usage(stderr);
    return 2;
  }
  const char* command = argv[1];
  if (strcmp(command, "info") == 0) return cml_cli_info(argc - 1, argv + 1);
  if (strcmp(command, "test") == 0) return cml_cli_test(argc - 1, argv + 1);
  if (strcmp(command, "install") == 0) return cml_cli_install(argc - 1, argv + 1);
  if (strcmp(command, "bench") == 0) return cml_cli_bench(argc - 1, argv + 1);
  if (strcmp(command, "version") == 0 || strcmp(command, "--version") == 0) {
    return cml_cli_version(argc - 1, argv + 1);
  }
  if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 ||
      strcmp(command, "-h") == 0) {
    if (argc == 3 && strcmp(command, "help") == 0) {  // `cml help test`: that command's help
      const char* topic = argv[2];
      static const char* const commands[] = {"info", "test", "install", "bench", "version"};
      for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i) {
        if (strcmp(topic, commands[i]) == 0) {
          char* sub[] = {argv[2], (char*)"--help", NULL};
          return cml_cli_dispatch_command(2, sub);
        }
      }
    }
    if (argc > 2) {
      fprintf(stderr, "cml %s: unexpected argument \"%s\"\n\n", command, argv[2]);
      cml_cli_usage(stderr);
      return 2;
    }
    cml_cli_usage(stdout);
    return 0;
  }
  fprintf(stderr, "cml: unknown command \"%s\"\n\n", command);
  cml_cli_usage(stderr);
  return 2;
}

// A closed standard descriptor would be reused by the next open(): `cml test --json FILE >&-`
// wrote the console lines into FILE. Each closed one is opened on /dev/null instead; a closed
// stdout is still an error at exit, as output written to it is lost. Returns false when a
// descriptor could not be opened.
static bool cml_cli_open_std_fds(bool* stdout_closed) {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == 1) *stdout_closed = true;
    const int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got != fd) {
      if (got >= 0) close(got);
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  bool stdout_closed = false;
  if (!cml_cli_open_std_fds(&stdout_closed)) return 2;
  int rc = cml_cli_dispatch(argc, argv);
  // Output that did not reach stdout (a full disk, a closed pipe or descriptor) is an error,
  // as with the standard tools, not a silent exit 0.
  const bool flushed = fflush(stdout) == 0 && !ferror(stdout);
  const int err = errno;
  if (!flushed || stdout_closed) {
    fprintf(stderr, "cml: writing to standard output failed: %s\n",
            stdout_closed ? "it is closed" : strerror(err));
    if (rc == 0) rc = 1;
  }
  return rc;
}
