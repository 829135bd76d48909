// SPDX-License-Identifier: Apache-2.0
// tools/cml/cli.h: the subcommands of the cml command line tool, one file each.
#ifndef CML_TOOLS_CLI_H_
#define CML_TOOLS_CLI_H_

#include <stdbool.h>

#include "cml/backend.h"

// Each returns the process exit code. |argv[0]| is the subcommand name.
int cml_cli_info(int argc, char** argv);     // info.c
int cml_cli_test(int argc, char** argv);     // test.c
int cml_cli_install(int argc, char** argv);  // install.c
int cml_cli_bench(int argc, char** argv);    // bench.c

// Creates the backend of |config| (NULL: the default, honouring GOMLX_BACKEND). On failure
// prints "cml <command>: cannot create backend ...: <code>: <message>" to stderr and returns
// NULL. The caller releases the backend. (main.c)
cml_backend_t* cml_cli_open_backend(const char* command, const char* config);

// A help request, "<name>:help": prints the backend's option list to stdout and sets |*out_rc|
// to 0, or, when no backend has that name, prints the error to stderr as cml_cli_open_backend
// does and sets |*out_rc| to 2. Returns false (and sets |*out_rc| to 0) when |config| is not a
// help request. (main.c)
bool cml_cli_backend_help(const char* command, const char* config, int* out_rc);

#endif  // CML_TOOLS_CLI_H_
