// SPDX-License-Identifier: Apache-2.0
// backendtest/out_file.h: the --json files of the compliance suite and `cml bench`, written
// whole or not at all (header-only: both the suite's library and the tool use it).
//
// The text goes to a new sibling "<path>.partial.<pid>" that replaces |path| by a rename once
// it is complete, so a run stopped part way (SIGINT, a closed pipe, a full disk) leaves the
// previous file as it was instead of an empty or cut JSON file. A |path| that exists and is not
// a regular file (/dev/stdout, a FIFO, /dev/full) is written directly.
#ifndef CML_BACKENDTEST_OUT_FILE_H_
#define CML_BACKENDTEST_OUT_FILE_H_

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The process id for the partial file's name (WASI has no processes: 0 there).
static inline long cml__out_file_pid(void) {
#if defined(__wasi__)
  return 0;
#else
  return (long)getpid();
#endif
}

typedef struct cml__out_file_t {
  FILE* f;
  const char* path;
  char* partial;  // NULL when |path| is written directly
} cml__out_file_t;

// Opens |path| as above; false with errno set when it cannot be written.
static inline bool cml__out_file_open(cml__out_file_t* out, const char* path) {
  memset(out, 0, sizeof *out);
  out->path = path;
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    out->f = fopen(path, "w");
    return out->f != NULL;
  }
  const size_t size = strlen(path) + 40;
  out->partial = (char*)malloc(size);
  if (!out->partial) {
    errno = ENOMEM;
    return false;
  }
  snprintf(out->partial, size, "%s.partial.%ld", path, cml__out_file_pid());
  int fd = open(out->partial, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd >= 0) out->f = fdopen(fd, "w");
  if (!out->f) {
    const int err = errno;
    if (fd >= 0) close(fd);
    (void)unlink(out->partial);
    free(out->partial);
    out->partial = NULL;
    errno = err;
    return false;
  }
  return true;
}

// Closes the file; when |complete|, and nothing failed, the text takes |path|'s place. Returns
// false when a write, the close or the rename failed (|path| is then as it was).
static inline bool cml__out_file_close(cml__out_file_t* out, bool complete) {
  if (!out->f) return false;
  bool ok = ferror(out->f) == 0;
  ok = fclose(out->f) == 0 && ok;
  out->f = NULL;
  if (out->partial) {
    if (ok && complete) ok = rename(out->partial, out->path) == 0;
    if (!ok || !complete) (void)unlink(out->partial);
    free(out->partial);
    out->partial = NULL;
  }
  return ok;
}

#endif  // CML_BACKENDTEST_OUT_FILE_H_
