// SPDX-License-Identifier: Apache-2.0
// tests/mpi/mpi_config_check.c: the `distributed` option of the c backend (and xla's) without
// mpirun, in builds with and without MPI: unknown values, "none", and (without MPI) the status
// that says how to enable it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cml/cml.h"
#include "distributed/mpi_comm.h"
#include "test.h"

TEST(unknown_value_lists_the_valid_ones) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("c:distributed=tcp", &be);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "distributed");
  ASSERT_CONTAINS(cml_status_message(st), "mpi");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

TEST(none_is_one_process) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:distributed=none,devices=2", &be));
  cml_process_info_t info;
  cml_backend_process_info(be, &info);
  ASSERT_EQ_INT(info.process_index, 0);
  ASSERT_EQ_INT(info.process_count, 1);
  ASSERT_EQ_INT(info.first_local_device, 0);
  ASSERT_EQ_INT(info.local_device_count, 2);
  ASSERT_EQ_INT(cml_backend_device_count(be), 2);
  ASSERT_TRUE(cml_backend_device_is_local(be, 1));
  cml_backend_release(be);
}

TEST(without_mpi_says_how_to_enable_it) {
  if (cml__mpi_built()) return;  // covered under mpirun by c_distributed_test
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("c:distributed=mpi,devices=2", &be);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "libopenmpi-dev");
  ASSERT_CONTAINS(cml_status_message(st), "-DCML_WITH_MPI=ON");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
  // The layer itself gives the same advice.
  st = cml__mpi_barrier(NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "-DCML_WITH_MPI=ON");
  cml_status_free(st);
}

// xla:<plugin>,distributed=mpi without MPI in the build: FAILED_PRECONDITION saying how to
// enable it, before any plugin is looked for (the plugin named here does not exist).
TEST(xla_without_mpi_says_how_to_enable_it) {
  if (cml__mpi_built()) return;  // covered under mpirun by xla_distributed_test
  if (!cml_backend_registered_aliases("xla")) return;  // built without the XLA backend
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:no_such_plugin,distributed=mpi", &be);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "xla backend: distributed=mpi needs MPI");
  ASSERT_CONTAINS(cml_status_message(st), "-DCML_WITH_MPI=ON");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

// Outside mpirun with no PATH (a service, `env -i`): Open MPI 4 cannot start a singleton and
// used to end the process inside MPI_Init_thread. In a child (MPI initializes once per
// process): the backend is created (an MPI whose singletons need no helper) or refused with a
// status naming the launcher; the child must return either way.
TEST(no_launcher_and_no_path_is_a_status) {
  if (!cml__mpi_built()) return;
  fflush(NULL);
  const pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) {
    alarm(60);
    static const char* const vars[] = {"PATH", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                       "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) unsetenv(vars[i]);
    cml_backend_t* be = NULL;
    cml_status_t st = cml_backend_new_with_config("c:distributed=mpi,devices=2", &be);
    int rc = 0;
    if (st != CML_OK) {
      fprintf(stderr, "  child: %s\n", cml_status_message(st));
      rc = cml_status_code(st) == CML_STATUS_FAILED_PRECONDITION &&
                   strstr(cml_status_message(st), "not started by an MPI launcher")
               ? 0
               : 3;
    }
    cml_status_free(st);
    cml_backend_release(be);
    _exit(rc);
  }
  int status = 0;
  ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

TEST_MAIN(TEST_ENTRY(unknown_value_lists_the_valid_ones), TEST_ENTRY(none_is_one_process),
          TEST_ENTRY(without_mpi_says_how_to_enable_it),
          TEST_ENTRY(xla_without_mpi_says_how_to_enable_it),
          TEST_ENTRY(no_launcher_and_no_path_is_a_status))
