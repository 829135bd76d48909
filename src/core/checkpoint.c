// SPDX-License-Identifier: Apache-2.0
// src/core/checkpoint.c: checkpoint files (cml/checkpoint.h, docs/checkpoint.md): atomic saves
// (temp file, fsync, rename) and fully validated loads.
#include "cml/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

enum {
  kHeaderBytes = 40,  // magic, version, count, step, index bytes, file bytes
  kDataAlign = 64,
  kMaxNameBytes = 65535,
};
static const unsigned char kMagic[8] = {'C', 'M', 'L', 'C', 'K', 'P', 'T', '\n'};

//===--- CRC-32 (IEEE 802.3, reflected, as zlib's crc32) ---===//

static uint32_t g_crc_table[256];
static pthread_once_t g_crc_once = PTHREAD_ONCE_INIT;

static void cml_ckpt_crc_init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    g_crc_table[i] = c;
  }
}

static uint32_t cml_ckpt_crc(uint32_t crc, const unsigned char* p, size_t n) {
  pthread_once(&g_crc_once, cml_ckpt_crc_init);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = g_crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

//===--- little-endian encoding ---===//

static bool cml_ckpt_host_is_little(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static void put_u(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

// Swaps every |unit|-byte element of |p| (big-endian hosts: the file is little-endian).
static void cml_ckpt_swap(unsigned char* p, size_t bytes, size_t unit) {
  if (unit < 2) return;
  for (size_t at = 0; at + unit <= bytes; at += unit) {
    for (size_t i = 0; i < unit / 2; ++i) {
      unsigned char t = p[at + i];
      p[at + i] = p[at + unit - 1 - i];
      p[at + unit - 1 - i] = t;
    }
  }
}

// The byte-swap unit of |dtype| (complex numbers swap each part; sub-byte dtypes never).
static size_t cml_ckpt_unit(cml_dtype_t dtype) {
  int bits = cml_dtype_bits(dtype);
  if (bits < 8) return 1;
  return (size_t)(cml_dtype_is_complex(dtype) ? bits / 16 : bits / 8);
}

//===--- saving ---===//

static size_t cml_ckpt_align(size_t n) { return (n + kDataAlign - 1) / kDataAlign * kDataAlign; }

// Writes all of |p| to |fd|; false (errno set) on failure.
static bool cml_ckpt_write_all(int fd, const unsigned char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= (size_t)w;
  }
  return true;
}

// A name and its tensor's index, sorted by name to find duplicates and to look names up in
// O(log N) (a file may hold up to 2^24 tensors; pairwise checks took minutes at 10^5).
typedef struct cml_ckpt_name_t {
  const char* name;
  size_t index;
} cml_ckpt_name_t;

static int cml_ckpt_name_cmp(const void* a, const void* b) {
  const cml_ckpt_name_t* x = a;
  const cml_ckpt_name_t* y = b;
  int c = strcmp(x->name, y->name);
  if (c != 0) return c;
  return x->index < y->index ? -1 : x->index > y->index;
}

// Sorts |v| by name; true with the indices of the first two equal names (|*out_i| < |*out_j|
// in the sorted order) when there are some.
static bool cml_ckpt_sort_names(cml_ckpt_name_t* v, size_t count, size_t* out_i, size_t* out_j) {
  if (count > 1) qsort(v, count, sizeof *v, cml_ckpt_name_cmp);
  for (size_t k = 1; k < count; ++k) {
    if (strcmp(v[k - 1].name, v[k].name) == 0) {
      *out_i = v[k - 1].index;
      *out_j = v[k].index;
      return true;
    }
  }
  return false;
}

static cml_status_t cml_ckpt_no_memory(const char* what, const char* path, size_t bytes,
                                       const char* purpose) {
  return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: \"%s\": cannot allocate %zu bytes %s",
                         what, path, bytes, purpose);
}

static cml_status_t cml_ckpt_io_error(const char* what, const char* path, int err) {
  cml_status_code_t code = err == ENOENT ? CML_STATUS_NOT_FOUND : CML_STATUS_UNAVAILABLE;
  return cml_status_make(code, "%s: \"%s\": %s", what, path, strerror(err));
}

// Creates the temporary file a save writes, in |path|'s directory, into |tmp| (|tmp_len| bytes)
// and |*out_fd|: "<path>.tmp.<pid>.<n>", or "<dir>/.cml-ckpt.<pid>.<n>.tmp" when that name would
// be longer than the file system allows. O_EXCL | O_NOFOLLOW: a new file of this call alone (two
// threads of a process never share one, and a planted symlink is never followed); <n> counts up
// across the process. Its mode is the replaced file's, else 0666 less the umask.
static cml_status_t cml_ckpt_create_temp(const char* what, const char* path, char* tmp,
                                         size_t tmp_len, int* out_fd) {
  static unsigned long counter;
#if defined(__wasi__)
  const long pid = 0;  // WASI has no processes (and no file modes)
#else
  const long pid = (long)getpid();
#endif
  const char* slash = strrchr(path, '/');
  const size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  struct stat old;
  const bool replaces = stat(path, &old) == 0 && S_ISREG(old.st_mode);
  int err = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const unsigned long n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    snprintf(tmp, tmp_len, "%s.tmp.%ld.%lu", path, pid, n);
    if (strlen(tmp) - dir_len > NAME_MAX) {
      snprintf(tmp, tmp_len, "%.*s.cml-ckpt.%ld.%lu.tmp", (int)dir_len, path, pid, n);
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
#if !defined(__wasi__)
      if (replaces) (void)fchmod(fd, old.st_mode & 07777);
#else
      (void)replaces;
#endif
      *out_fd = fd;
      return CML_OK;
    }
    err = errno;
    if (err != EEXIST) break;
  }
  cml_status_code_t code = err == ENOENT ? CML_STATUS_NOT_FOUND : CML_STATUS_UNAVAILABLE;
  if (err == ENOENT || err == ENOTDIR) {
    return cml_status_make(code, "%s: \"%s\": its directory \"%.*s\" does not exist (%s)", what,
                           path, dir_len ? (int)dir_len : 1, dir_len ? path : ".", strerror(err));
  }
  return cml_status_make(code, "%s: \"%s\": cannot create the temporary file \"%s\" next to it: %s",
                         what, path, tmp, strerror(err));
}

// What a file of |mode| is, for messages.
static const char* cml_ckpt_file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The file a save at |path| replaces, into |*out| (|*out_bytes| allocated bytes, from the
// system allocator): |path| itself, or the file that a symbolic link at |path| leads to,
// followed as open(2) follows it (40 links at most; the file a dangling link names is created).
// A save through "latest.ckpt -> step100.ckpt" so rewrites step100.ckpt and keeps the link.
// A directory, FIFO, device or socket is refused: a save renames a new file over the old one,
// and must never turn /dev/null or a pipe into a regular file.
static cml_status_t cml_ckpt_save_target(const char* what, const char* path, char** out,
                                         size_t* out_bytes) {
  cml_allocator_t a = cml_allocator_system();
  size_t cur_bytes = strlen(path) + 1;
  char* cur = (char*)cml_allocator_malloc(a, cur_bytes, 16);
  if (!cur) return cml_ckpt_no_memory(what, path, cur_bytes, "for the file name");
  memcpy(cur, path, cur_bytes);
  for (int links = 0;; ++links) {
    struct stat sb;
    cml_status_t st = CML_OK;
    if (lstat(cur, &sb) != 0) {
      if (errno == ENOENT) break;  // a new file (a missing directory is reported when writing)
      st = cml_ckpt_io_error(what, cur, errno);
    } else if (S_ISREG(sb.st_mode)) {
      break;
    } else if (!S_ISLNK(sb.st_mode)) {
      st = strcmp(cur, path) == 0
               ? INVALID(
                     "%s: \"%s\" is %s, not a regular file (a save writes a new file and "
                     "renames it over the old one)",
                     what, path, cml_ckpt_file_kind(sb.st_mode))
               : INVALID(
                     "%s: \"%s\" leads to \"%s\", which is %s, not a regular file (a save "
                     "writes a new file and renames it over the old one)",
                     what, path, cur, cml_ckpt_file_kind(sb.st_mode));
    } else if (links >= 40) {
      st = cml_ckpt_io_error(what, path, ELOOP);
    } else {
      // Read the link; its target is relative to the link's directory unless absolute.
      size_t cap = (size_t)(sb.st_size > 0 ? sb.st_size : PATH_MAX) + 1;
      char* link = (char*)cml_allocator_malloc(a, cap, 16);
      ssize_t n = link ? readlink(cur, link, cap) : -1;
      if (!link) {
        st = cml_ckpt_no_memory(what, path, cap, "for a symbolic link's target");
      } else if (n < 0 || (size_t)n >= cap) {
        st = cml_ckpt_io_error(what, cur, n < 0 ? errno : ENAMETOOLONG);
      } else {
        const char* slash = link[0] == '/' ? NULL : strrchr(cur, '/');
        size_t dir_len = slash ? (size_t)(slash - cur) + 1 : 0;
        size_t next_bytes = dir_len + (size_t)n + 1;
        char* next = (char*)cml_allocator_malloc(a, next_bytes, 16);
        if (!next) {
          st = cml_ckpt_no_memory(what, path, next_bytes, "for a symbolic link's target");
        } else {
          memcpy(next, cur, dir_len);
          memcpy(next + dir_len, link, (size_t)n);
          next[dir_len + (size_t)n] = '\0';
          cml_allocator_free(a, cur, cur_bytes);
          cur = next;
          cur_bytes = next_bytes;
        }
      }
      if (link) cml_allocator_free(a, link, cap);
      if (st == CML_OK) continue;
    }
    if (st != CML_OK) {
      cml_allocator_free(a, cur, cur_bytes);
      return st;
    }
  }
  *out = cur;
  *out_bytes = cur_bytes;
  return CML_OK;
}

cml_status_t cml_checkpoint_save(const char* path, int64_t step, const char* const* names,
                                 const cml_shape_t* shapes, const void* const* data, size_t count) {
  static const char what[] = "cml_checkpoint_save";
  if (!path || !*path || (count > 0 && (!names || !shapes || !data))) {
    return INVALID("%s: NULL or empty path, or NULL names, shapes or data", what);
  }
  if (count > (1u << 24))
    return INVALID("%s: \"%s\": %zu tensors (at most 2^24)", what, path, count);
  char text[160];
  size_t index_bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    size_t len = names[i] ? strlen(names[i]) : 0;
    if (len == 0 || len > kMaxNameBytes) {
      return INVALID("%s: \"%s\": tensor %zu's name is %s (1..%d bytes)", what, path, i,
                     names[i] ? "too long or empty" : "NULL", kMaxNameBytes);
    }
    cml_shape_t checked;
    cml_status_t st = cml_shape_init(&checked, shapes[i].dtype, shapes[i].rank, shapes[i].dims);
    if (st != CML_OK) {
      return cml_status_annotate(st, "%s: \"%s\": tensor \"%s\"", what, path, names[i]);
    }
    if (!data[i] && cml_shape_byte_size(&shapes[i]) > 0) {
      return INVALID("%s: \"%s\": tensor \"%s\" (%s) has NULL data", what, path, names[i],
                     cml_shape_format(&shapes[i], text, sizeof text));
    }
    index_bytes += 2 + len + 1 + strlen(cml_dtype_name(shapes[i].dtype)) + 1 +
                   8 * (size_t)shapes[i].rank + 8 + 8 + 4;
  }
  cml_allocator_t a = cml_allocator_system();
  if (count > 1) {
    cml_ckpt_name_t* sorted = (cml_ckpt_name_t*)cml_allocator_malloc(a, count * sizeof *sorted, 16);
    if (!sorted) return cml_ckpt_no_memory(what, path, count * sizeof *sorted, "for the names");
    for (size_t i = 0; i < count; ++i) sorted[i] = (cml_ckpt_name_t){names[i], i};
    size_t i = 0, j = 0;
    bool dup = cml_ckpt_sort_names(sorted, count, &i, &j);
    cml_allocator_free(a, sorted, count * sizeof *sorted);
    if (dup) {
      return INVALID("%s: \"%s\": tensors %zu and %zu are both named \"%s\"", what, path, i, j,
                     names[i]);
    }
  }
  // Lay out the file: header, index, header CRC, then the data blocks (64-byte aligned).
  size_t head_bytes = kHeaderBytes + index_bytes + 4;
  size_t file_bytes = cml_ckpt_align(head_bytes);
  size_t* offsets = (size_t*)cml_allocator_malloc(a, (count ? count : 1) * sizeof(size_t), 16);
  if (!offsets) return cml_ckpt_no_memory(what, path, count * sizeof(size_t), "for the layout");
  for (size_t i = 0; i < count; ++i) {
    offsets[i] = file_bytes;
    file_bytes = cml_ckpt_align(file_bytes + cml_shape_byte_size(&shapes[i]));
  }
  if (count > 0) file_bytes = offsets[count - 1] + cml_shape_byte_size(&shapes[count - 1]);
  size_t head_alloc = cml_ckpt_align(head_bytes);
  unsigned char* head = (unsigned char*)cml_allocator_malloc(a, head_alloc, 64);
  if (!head) {
    cml_allocator_free(a, offsets, (count ? count : 1) * sizeof(size_t));
    return cml_ckpt_no_memory(what, path, head_alloc, "for the header and index");
  }
  memset(head, 0, head_alloc);
  bool little = cml_ckpt_host_is_little();
  memcpy(head, kMagic, 8);
  put_u(head + 8, CML_CHECKPOINT_FORMAT_VERSION, 4);
  put_u(head + 12, count, 4);
  put_u(head + 16, (uint64_t)step, 8);
  put_u(head + 24, index_bytes, 8);
  put_u(head + 32, file_bytes, 8);
  unsigned char* p = head + kHeaderBytes;
  unsigned char* swapped = NULL;
  size_t swapped_bytes = 0;
  cml_status_t st = CML_OK;
  for (size_t i = 0; i < count; ++i) {
    size_t len = strlen(names[i]);
    const char* dt = cml_dtype_name(shapes[i].dtype);
    size_t bytes = cml_shape_byte_size(&shapes[i]);
    put_u(p, len, 2);
    memcpy(p + 2, names[i], len);
    p += 2 + len;
    *p++ = (unsigned char)strlen(dt);
    memcpy(p, dt, strlen(dt));
    p += strlen(dt);
    *p++ = (unsigned char)shapes[i].rank;
    for (int d = 0; d < shapes[i].rank; ++d, p += 8) put_u(p, (uint64_t)shapes[i].dims[d], 8);
    put_u(p, offsets[i], 8);
    put_u(p + 8, bytes, 8);
    const unsigned char* src = (const unsigned char*)data[i];
    if (!little && cml_ckpt_unit(shapes[i].dtype) > 1 && bytes > 0) {
      if (swapped) cml_allocator_free(a, swapped, swapped_bytes);
      swapped = (unsigned char*)cml_allocator_malloc(a, bytes, 64);
      swapped_bytes = bytes;
      if (!swapped) {
        st = cml_ckpt_no_memory(what, path, bytes, "to byte-swap a tensor");
        break;
      }
      memcpy(swapped, src, bytes);
      cml_ckpt_swap(swapped, bytes, cml_ckpt_unit(shapes[i].dtype));
      src = swapped;
    }
    put_u(p + 16, cml_ckpt_crc(0, src, bytes), 4);
    p += 20;
  }
  if (swapped) cml_allocator_free(a, swapped, swapped_bytes);
  swapped = NULL;
  put_u(head + kHeaderBytes + index_bytes, cml_ckpt_crc(0, head, kHeaderBytes + index_bytes), 4);

  // Write a new temporary file next to the file to replace (|path|, or where its symbolic link
  // leads), flush it to disk, then rename it over that file.
  char* target = NULL;
  size_t target_bytes = 0;
  if (st == CML_OK) st = cml_ckpt_save_target(what, path, &target, &target_bytes);
  size_t tmp_len = (target ? strlen(target) : 0) + 64;
  char* tmp = st == CML_OK ? (char*)cml_allocator_malloc(a, tmp_len, 16) : NULL;
  if (st == CML_OK && !tmp) st = cml_ckpt_no_memory(what, path, tmp_len, "for a file name");
  int fd = -1;
  if (st == CML_OK && tmp) st = cml_ckpt_create_temp(what, target, tmp, tmp_len, &fd);
  if (st == CML_OK &&
      !cml_ckpt_write_all(fd, head, head_alloc < file_bytes ? head_alloc : file_bytes)) {
    st = cml_ckpt_io_error(what, tmp, errno);
  }
  static const unsigned char zeros[kDataAlign] = {0};
  size_t at = head_alloc < file_bytes ? head_alloc : file_bytes;
  for (size_t i = 0; i < count && st == CML_OK; ++i) {
    if (offsets[i] > at && !cml_ckpt_write_all(fd, zeros, offsets[i] - at)) {
      st = cml_ckpt_io_error(what, tmp, errno);
      break;
    }
    size_t bytes = cml_shape_byte_size(&shapes[i]);
    const unsigned char* src = (const unsigned char*)data[i];
    if (!little && cml_ckpt_unit(shapes[i].dtype) > 1 && bytes > 0) {
      swapped = (unsigned char*)cml_allocator_malloc(a, bytes, 64);
      if (!swapped) {
        st = cml_ckpt_no_memory(what, path, bytes, "to byte-swap a tensor");
        break;
      }
      memcpy(swapped, src, bytes);
      cml_ckpt_swap(swapped, bytes, cml_ckpt_unit(shapes[i].dtype));
      src = swapped;
    }
    if (!cml_ckpt_write_all(fd, src, bytes)) st = cml_ckpt_io_error(what, tmp, errno);
    if (swapped) cml_allocator_free(a, swapped, bytes);
    swapped = NULL;
    at = offsets[i] + bytes;
  }
  if (st == CML_OK && fsync(fd) != 0) st = cml_ckpt_io_error(what, tmp, errno);
  if (fd >= 0 && close(fd) != 0 && st == CML_OK) st = cml_ckpt_io_error(what, tmp, errno);
  if (fd >= 0) fd = -2;  // closed, but the file still needs removing on failure
  if (st == CML_OK && rename(tmp, target) != 0) {
    int err = errno;
    st = cml_status_make(err == ENOENT ? CML_STATUS_NOT_FOUND : CML_STATUS_UNAVAILABLE,
                         "%s: renaming \"%s\" to \"%s\": %s", what, tmp, target, strerror(err));
  }
  if (st != CML_OK && tmp && fd != -1) (void)unlink(tmp);
  if (st == CML_OK) {
    // Make the rename itself durable: sync the directory holding the file.
    const char* slash = strrchr(target, '/');
    char* dir = tmp;  // reuse: it is longer than |target|
    if (slash) {
      size_t n = (size_t)(slash - target);
      memcpy(dir, target, n ? n : 1);
      dir[n ? n : 1] = '\0';
    } else {
      strcpy(dir, ".");
    }
    int dfd = open(dir, O_RDONLY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)fsync(dfd);
      close(dfd);
    }
  }
  if (tmp) cml_allocator_free(a, tmp, tmp_len);
  if (target) cml_allocator_free(a, target, target_bytes);
  cml_allocator_free(a, head, head_alloc);
  cml_allocator_free(a, offsets, (count ? count : 1) * sizeof(size_t));
  return st;
}

cml_status_t cml_checkpoint_save_buffers(const char* path, int64_t step, const char* const* names,
                                         cml_buffer_t* const* buffers, size_t count) {
  static const char what[] = "cml_checkpoint_save_buffers";
  if (!path || (count > 0 && (!names || !buffers))) {
    return INVALID("%s: NULL path, names or buffers", what);
  }
  cml_allocator_t a = cml_allocator_system();
  size_t n = count ? count : 1;
  cml_shape_t* shapes = (cml_shape_t*)cml_allocator_malloc(a, n * sizeof *shapes, 16);
  void** data = (void**)cml_allocator_malloc(a, n * sizeof *data, 16);
  cml_status_t st = shapes && data
                        ? CML_OK
                        : cml_ckpt_no_memory(what, path, n * (sizeof *shapes + sizeof *data),
                                             "for the tensor list");
  if (data) memset(data, 0, n * sizeof *data);
  for (size_t i = 0; i < count && st == CML_OK; ++i) {
    if (!buffers[i]) {
      st = INVALID("%s: \"%s\": buffer %zu (\"%s\") is NULL", what, path, i,
                   names[i] ? names[i] : "?");
      break;
    }
    shapes[i] = *cml_buffer_shape(buffers[i]);
    size_t bytes = cml_shape_byte_size(&shapes[i]);
    data[i] = cml_allocator_malloc(a, bytes ? bytes : 1, 64);
    if (!data[i]) {
      st = cml_ckpt_no_memory(what, path, bytes, "to copy a buffer to the host");
      st = cml_status_annotate(st, "tensor \"%s\"", names[i] ? names[i] : "?");
      break;
    }
    st = cml_buffer_copy_to_host(buffers[i], data[i], bytes);
    if (st != CML_OK) {
      st = cml_status_annotate(st, "%s: \"%s\": tensor \"%s\"", what, path,
                               names[i] ? names[i] : "?");
    }
  }
  if (st == CML_OK)
    st = cml_checkpoint_save(path, step, names, shapes, (const void* const*)data, count);
  for (size_t i = 0; data && shapes && i < count; ++i) {
    if (data[i]) {
      size_t bytes = cml_shape_byte_size(&shapes[i]);
      cml_allocator_free(a, data[i], bytes ? bytes : 1);
    }
  }
  if (data) cml_allocator_free(a, data, n * sizeof *data);
  if (shapes) cml_allocator_free(a, shapes, n * sizeof *shapes);
  return st;
}

//===--- loading ---===//

typedef struct cml_ckpt_tensor_t {
  char* name;  // points into |names|
  cml_shape_t shape;
  const unsigned char* data;  // points into |file|
} cml_ckpt_tensor_t;

struct cml_checkpoint_t {
  char* path;
  size_t path_bytes;
  int64_t step;
  size_t count;
  cml_ckpt_tensor_t* tensors;
  char* names;  // NUL-terminated names back to back
  size_t names_bytes;
  unsigned char* file;  // the whole file
  size_t file_bytes;
  cml_ckpt_name_t* by_name;  // |count| names, sorted (cml_checkpoint_find)
};

void cml_checkpoint_destroy(cml_checkpoint_t* ck) {
  if (!ck) return;
  cml_allocator_t a = cml_allocator_system();
  if (ck->tensors)
    cml_allocator_free(a, ck->tensors, (ck->count ? ck->count : 1) * sizeof *ck->tensors);
  if (ck->names) cml_allocator_free(a, ck->names, ck->names_bytes);
  if (ck->file) cml_allocator_free(a, ck->file, ck->file_bytes ? ck->file_bytes : 1);
  if (ck->path) cml_allocator_free(a, ck->path, ck->path_bytes);
  if (ck->by_name) cml_allocator_free(a, ck->by_name, ck->count * sizeof *ck->by_name);
  cml_allocator_free(a, ck, sizeof *ck);
}

#define CORRUPT(...) cml_status_annotate(INVALID(__VA_ARGS__), "cml_checkpoint_load: \"%s\"", path)

// Parses and checks the index of the file in |ck|.
static cml_status_t cml_ckpt_parse(cml_checkpoint_t* ck, const char* path) {
  const unsigned char* f = ck->file;
  size_t size = ck->file_bytes;
  if (size < kHeaderBytes + 4) {
    return CORRUPT("truncated: %zu bytes, a checkpoint header needs at least %d", size,
                   kHeaderBytes + 4);
  }
  if (memcmp(f, kMagic, 8) != 0) return CORRUPT("not a cml checkpoint (bad magic bytes)");
  uint32_t version = (uint32_t)get_u(f + 8, 4);
  if (version > CML_CHECKPOINT_FORMAT_VERSION) {
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "cml_checkpoint_load: \"%s\": format version %u is newer than this "
                           "library's (%d)",
                           path, version, CML_CHECKPOINT_FORMAT_VERSION);
  }
  if (version == 0) return CORRUPT("format version 0 is invalid");
  uint64_t count = get_u(f + 12, 4);
  ck->step = (int64_t)get_u(f + 16, 8);
  uint64_t index_bytes = get_u(f + 24, 8), file_bytes = get_u(f + 32, 8);
  if (file_bytes != size) {
    return CORRUPT("%s: the header says %llu bytes, the file has %zu",
                   size < file_bytes ? "truncated" : "trailing bytes",
                   (unsigned long long)file_bytes, size);
  }
  if (index_bytes > size - kHeaderBytes - 4) {
    return CORRUPT("the index (%llu bytes) runs past the end of the file",
                   (unsigned long long)index_bytes);
  }
  size_t head = kHeaderBytes + (size_t)index_bytes;
  uint32_t want = (uint32_t)get_u(f + head, 4), got = cml_ckpt_crc(0, f, head);
  if (want != got) {
    return CORRUPT("the header checksum does not match (stored %08x, computed %08x)", want, got);
  }
  if (count > index_bytes / 21) {
    return CORRUPT("%llu tensors cannot fit in an index of %llu bytes", (unsigned long long)count,
                   (unsigned long long)index_bytes);
  }
  cml_allocator_t a = cml_allocator_system();
  ck->count = (size_t)count;
  ck->tensors = (cml_ckpt_tensor_t*)cml_allocator_malloc(
      a, (ck->count ? ck->count : 1) * sizeof *ck->tensors, 16);
  ck->names_bytes = (size_t)index_bytes + 1;
  ck->names = (char*)cml_allocator_malloc(a, ck->names_bytes, 16);
  if (!ck->tensors || !ck->names) {
    return cml_ckpt_no_memory("cml_checkpoint_load", path,
                              ck->count * sizeof *ck->tensors + ck->names_bytes, "for the index");
  }
  const unsigned char* p = f + kHeaderBytes;
  const unsigned char* end = f + head;
  char* names = ck->names;
  size_t data_start = head + 4, prev_end = data_start;
  bool little = cml_ckpt_host_is_little();
  char text[160];
  for (size_t i = 0; i < ck->count; ++i) {
    cml_ckpt_tensor_t* t = &ck->tensors[i];
    if (end - p < 2) return CORRUPT("the index ends inside tensor %zu", i);
    size_t len = (size_t)get_u(p, 2);
    p += 2;
    if (len == 0 || (size_t)(end - p) < len + 1) {
      return CORRUPT("tensor %zu: bad name length %zu", i, len);
    }
    memcpy(names, p, len);
    names[len] = '\0';
    if (memchr(names, '\0', len)) return CORRUPT("tensor %zu: the name holds a NUL byte", i);
    t->name = names;
    names += len + 1;
    p += len;
    size_t dlen = *p++;
    if ((size_t)(end - p) < dlen + 1 || dlen == 0 || dlen > 31) {
      return CORRUPT("tensor \"%s\": bad dtype name length %zu", t->name, dlen);
    }
    char dname[32];
    memcpy(dname, p, dlen);
    dname[dlen] = '\0';
    p += dlen;
    if (strlen(dname) != dlen)
      return CORRUPT("tensor \"%s\": the dtype name holds a NUL byte", t->name);
    cml_dtype_t dtype = cml_dtype_from_name(dname);
    if (!cml_dtype_is_supported(dtype) || strcmp(cml_dtype_name(dtype), dname) != 0) {
      return CORRUPT("tensor \"%s\": unknown dtype \"%s\"", t->name, dname);
    }
    int rank = *p++;
    if (rank > CML_MAX_RANK) {
      return CORRUPT("tensor \"%s\": rank %d exceeds %d", t->name, rank, CML_MAX_RANK);
    }
    if ((size_t)(end - p) < 8 * (size_t)rank + 20) {
      return CORRUPT("the index ends inside tensor \"%s\"", t->name);
    }
    int64_t dims[CML_MAX_RANK];
    for (int d = 0; d < rank; ++d, p += 8) dims[d] = (int64_t)get_u(p, 8);
    cml_status_t st = cml_shape_init(&t->shape, dtype, rank, dims);
    if (st != CML_OK) {
      cml_status_free(st);
      return CORRUPT("tensor \"%s\": invalid dims", t->name);
    }
    uint64_t offset = get_u(p, 8), bytes = get_u(p + 8, 8);
    uint32_t crc = (uint32_t)get_u(p + 16, 4);
    p += 20;
    if (bytes != cml_shape_byte_size(&t->shape)) {
      return CORRUPT("tensor \"%s\" (%s): the index says %llu bytes, the shape needs %zu", t->name,
                     cml_shape_format(&t->shape, text, sizeof text), (unsigned long long)bytes,
                     cml_shape_byte_size(&t->shape));
    }
    // The data starts at the first 64-byte boundary after the previous tensor's (or the
    // index's CRC), and the padding before it is zero.
    const size_t at = cml_ckpt_align(prev_end);
    if (offset != at || offset > size || bytes > size - offset) {
      return CORRUPT(
          "tensor \"%s\": data at %llu..%llu, but it starts at %zu (the next 64-byte "
          "boundary) and the file has %zu bytes",
          t->name, (unsigned long long)offset, (unsigned long long)(offset + bytes), at, size);
    }
    for (size_t k = prev_end; k < at; ++k) {
      if (f[k] != 0)
        return CORRUPT("nonzero padding byte at %zu, before tensor \"%s\"", k, t->name);
    }
    prev_end = (size_t)(offset + bytes);
    t->data = f + offset;
    uint32_t have = cml_ckpt_crc(0, t->data, (size_t)bytes);
    if (have != crc) {
      return CORRUPT("tensor \"%s\" (%s) is corrupt: checksum %08x, expected %08x", t->name,
                     cml_shape_format(&t->shape, text, sizeof text), have, crc);
    }
    if (!little) {
      cml_ckpt_swap((unsigned char*)(uintptr_t)t->data, (size_t)bytes, cml_ckpt_unit(dtype));
    }
  }
  if (p != end) return CORRUPT("%zu unused bytes at the end of the index", (size_t)(end - p));
  // The file ends right after the last tensor's data (an empty checkpoint: at the boundary after
  // the index's CRC, zero padding included).
  const size_t last = ck->count ? prev_end : cml_ckpt_align(prev_end);
  if (size != last) return CORRUPT("%zu bytes past the end of the last tensor", size - last);
  for (size_t k = prev_end; k < last; ++k) {
    if (f[k] != 0) return CORRUPT("nonzero padding byte at %zu", k);
  }
  ck->by_name = (cml_ckpt_name_t*)cml_allocator_malloc(
      a, (ck->count ? ck->count : 1) * sizeof *ck->by_name, 16);
  if (!ck->by_name) {
    return cml_ckpt_no_memory("cml_checkpoint_load", path, ck->count * sizeof *ck->by_name,
                              "for the name index");
  }
  for (size_t i = 0; i < ck->count; ++i) ck->by_name[i] = (cml_ckpt_name_t){ck->tensors[i].name, i};
  size_t i = 0, j = 0;
  if (cml_ckpt_sort_names(ck->by_name, ck->count, &i, &j)) {
    return CORRUPT("tensors %zu and %zu are both named \"%s\"", i, j, ck->tensors[i].name);
  }
  return CML_OK;
}

// Checks a checkpoint's header (|header|, its first kHeaderBytes) and index before the whole
// file is read: the magic bytes; the index's size against what the tensor count allows; the
// header and index against their CRC (read in bounded chunks); then the format version and the
// file's size. Every format version keeps this framing (docs/checkpoint.md), so a header whose
// CRC does not match is damaged, whatever version it claims: it is reported as damaged, not as
// a truncated file or a newer format, after reading its header and index only. |size| is the
// file's size; the index is read from |fd|.
static cml_status_t cml_ckpt_check_head(const char* what, const char* path, int fd,
                                        const unsigned char* header, uint64_t size) {
  if (memcmp(header, kMagic, 8) != 0) {
    return INVALID("%s: \"%s\": not a cml checkpoint (bad magic bytes)", what, path);
  }
  const uint32_t version = (uint32_t)get_u(header + 8, 4);
  const uint64_t count = get_u(header + 12, 4);
  const uint64_t index_bytes = get_u(header + 24, 8), file_bytes = get_u(header + 32, 8);
  // The largest index entry: name length, name, dtype name length and name, rank, dims,
  // offset, byte size, CRC.
  const uint64_t max_entry = 2 + kMaxNameBytes + 1 + 31 + 1 + 8 * (uint64_t)CML_MAX_RANK + 20;
  if (index_bytes > count * max_entry) {
    return INVALID(
        "%s: \"%s\": the header is damaged: an index of %llu bytes for %llu tensors "
        "(at most %llu bytes each)",
        what, path, (unsigned long long)index_bytes, (unsigned long long)count,
        (unsigned long long)max_entry);
  }
  if (size < kHeaderBytes + 4 || index_bytes > size - kHeaderBytes - 4) {
    return INVALID(
        "%s: \"%s\": truncated or damaged: the header says the index takes %llu "
        "bytes, the file has %llu",
        what, path, (unsigned long long)index_bytes, (unsigned long long)size);
  }
  // The CRC of the header and index, a chunk at a time.
  enum { kChunk = 1 << 14 };  // on the stack: 16 KiB
  unsigned char buf[kChunk];
  const uint64_t head = kHeaderBytes + index_bytes;
  uint32_t got = 0, want = 0;
  uint64_t at = 0;
  while (at < head + 4) {
    size_t n = (size_t)(head + 4 - at < kChunk ? head + 4 - at : kChunk);
    ssize_t r = pread(fd, buf, n, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return cml_ckpt_io_error(what, path, errno);
    if (r == 0) return CML_OK;  // shrank meanwhile: the full read reports it
    // The CRC covers [0, head); the 4 bytes after it hold the stored value.
    size_t crc_part = at + (uint64_t)r <= head ? (size_t)r : (at < head ? (size_t)(head - at) : 0);
    got = cml_ckpt_crc(got, buf, crc_part);
    for (size_t k = crc_part; k < (size_t)r; ++k) {
      want |= (uint32_t)buf[k] << (8 * (at + k - head));
    }
    at += (uint64_t)r;
  }
  if (want != got) {
    return INVALID(
        "%s: \"%s\": the header is damaged: the header checksum does not match "
        "(stored %08x, computed %08x)",
        what, path, want, got);
  }
  if (version > CML_CHECKPOINT_FORMAT_VERSION) {
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "%s: \"%s\": format version %u is newer than this library's (%d)", what,
                           path, version, CML_CHECKPOINT_FORMAT_VERSION);
  }
  if (file_bytes != size) {
    return INVALID("%s: \"%s\": %s: the header says %llu bytes, the file has %llu", what, path,
                   size < file_bytes ? "truncated" : "trailing bytes",
                   (unsigned long long)file_bytes, (unsigned long long)size);
  }
  return CML_OK;
}

cml_status_t cml_checkpoint_load(const char* path, cml_checkpoint_t** out_checkpoint) {
  static const char what[] = "cml_checkpoint_load";
  if (out_checkpoint) *out_checkpoint = NULL;
  if (!path || !out_checkpoint) return INVALID("%s: NULL path or out_checkpoint", what);
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before the check
  // below could refuse it (it changes nothing for a regular file's reads).
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return cml_ckpt_io_error(what, path, errno);
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    cml_status_t st = cml_ckpt_io_error(what, path, errno);
    close(fd);
    return st;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return INVALID("%s: \"%s\" is not a regular file", what, path);
  }
  // The header first: a file that is not a checkpoint (or whose size disagrees) is refused
  // before the whole of it is read.
  unsigned char header[kHeaderBytes];
  ssize_t hr;
  do {
    hr = pread(fd, header, sizeof header, 0);
  } while (hr < 0 && errno == EINTR);
  if (hr < 0) {
    cml_status_t st = cml_ckpt_io_error(what, path, errno);
    close(fd);
    return st;
  }
  if (hr == (ssize_t)sizeof header) {
    cml_status_t st = cml_ckpt_check_head(what, path, fd, header, (uint64_t)sb.st_size);
    if (st != CML_OK) {
      close(fd);
      return st;
    }
  }
  cml_allocator_t a = cml_allocator_system();
  cml_checkpoint_t* ck = (cml_checkpoint_t*)cml_allocator_malloc(a, sizeof *ck, 16);
  if (!ck) {
    close(fd);
    return cml_ckpt_no_memory(what, path, sizeof *ck, "");
  }
  memset(ck, 0, sizeof *ck);
  ck->path_bytes = strlen(path) + 1;
  ck->path = (char*)cml_allocator_malloc(a, ck->path_bytes, 16);
  ck->file_bytes = (size_t)sb.st_size;
  ck->file = (unsigned char*)cml_allocator_malloc(a, ck->file_bytes ? ck->file_bytes : 1, 64);
  cml_status_t st = CML_OK;
  if (!ck->path || !ck->file) {
    st = cml_ckpt_no_memory(what, path, ck->file_bytes, "to read the file into");
  }
  if (st == CML_OK) memcpy(ck->path, path, ck->path_bytes);
  size_t got = 0;
  while (st == CML_OK && got < ck->file_bytes) {
    ssize_t r = read(fd, ck->file + got, ck->file_bytes - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) st = cml_ckpt_io_error(what, path, errno);
    if (r == 0) ck->file_bytes = got;  // shrank while reading: the checks below report it
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (st == CML_OK) st = cml_ckpt_parse(ck, path);
  if (st != CML_OK) {
    cml_checkpoint_destroy(ck);
    return st;
  }
  *out_checkpoint = ck;
  return CML_OK;
}

int64_t cml_checkpoint_step(const cml_checkpoint_t* ck) { return ck ? ck->step : 0; }
const char* cml_checkpoint_path(const cml_checkpoint_t* ck) { return ck ? ck->path : NULL; }
size_t cml_checkpoint_tensor_count(const cml_checkpoint_t* ck) { return ck ? ck->count : 0; }

const char* cml_checkpoint_tensor_name(const cml_checkpoint_t* ck, size_t i) {
  return ck && i < ck->count ? ck->tensors[i].name : NULL;
}

const cml_shape_t* cml_checkpoint_tensor_shape(const cml_checkpoint_t* ck, size_t i) {
  return ck && i < ck->count ? &ck->tensors[i].shape : NULL;
}

const void* cml_checkpoint_tensor_data(const cml_checkpoint_t* ck, size_t i) {
  return ck && i < ck->count ? ck->tensors[i].data : NULL;
}

int64_t cml_checkpoint_find(const cml_checkpoint_t* ck, const char* name) {
  if (!ck || !name || !ck->by_name) return -1;
  size_t lo = 0, hi = ck->count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int c = strcmp(ck->by_name[mid].name, name);
    if (c == 0) return (int64_t)ck->by_name[mid].index;
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return -1;
}

// Finds |name| and checks it against |expected| and |size|.
static cml_status_t cml_ckpt_lookup(const cml_checkpoint_t* ck, const char* what, const char* name,
                                    const cml_shape_t* expected, size_t size, bool check_size,
                                    const cml_ckpt_tensor_t** out) {
  if (!ck || !name) return INVALID("%s: NULL checkpoint or name", what);
  int64_t i = cml_checkpoint_find(ck, name);
  if (i < 0) {
    return cml_status_make(CML_STATUS_NOT_FOUND, "%s: \"%s\" has no tensor named \"%s\"", what,
                           ck->path, name);
  }
  const cml_ckpt_tensor_t* t = &ck->tensors[i];
  char have[160], want[160];
  if (expected && !cml_shape_equal(expected, &t->shape)) {
    return INVALID("%s: \"%s\": tensor \"%s\" is %s in the file, but %s is expected", what,
                   ck->path, name, cml_shape_format(&t->shape, have, sizeof have),
                   cml_shape_format(expected, want, sizeof want));
  }
  if (check_size && size != cml_shape_byte_size(&t->shape)) {
    return INVALID("%s: \"%s\": tensor \"%s\" (%s) has %zu bytes, the destination %zu", what,
                   ck->path, name, cml_shape_format(&t->shape, have, sizeof have),
                   cml_shape_byte_size(&t->shape), size);
  }
  *out = t;
  return CML_OK;
}

cml_status_t cml_checkpoint_read(const cml_checkpoint_t* ck, const char* name,
                                 const cml_shape_t* expected, void* dst, size_t size) {
  const cml_ckpt_tensor_t* t = NULL;
  CML_RETURN_IF_ERROR(cml_ckpt_lookup(ck, "cml_checkpoint_read", name, expected, size, true, &t));
  if (!dst && size > 0) return INVALID("cml_checkpoint_read: NULL destination");
  if (size > 0) memcpy(dst, t->data, size);
  return CML_OK;
}

cml_status_t cml_checkpoint_read_buffer(const cml_checkpoint_t* ck, const char* name,
                                        const cml_shape_t* expected, cml_backend_t* backend,
                                        int device, cml_buffer_t** out_buffer) {
  if (out_buffer) *out_buffer = NULL;
  if (!backend || !out_buffer) return INVALID("cml_checkpoint_read_buffer: NULL backend or out");
  const cml_ckpt_tensor_t* t = NULL;
  CML_RETURN_IF_ERROR(
      cml_ckpt_lookup(ck, "cml_checkpoint_read_buffer", name, expected, 0, false, &t));
  cml_status_t st = cml_buffer_from_host(backend, device, &t->shape, t->data,
                                         cml_shape_byte_size(&t->shape), out_buffer);
  if (st != CML_OK) {
    st = cml_status_annotate(st, "cml_checkpoint_read_buffer: \"%s\": tensor \"%s\"", ck->path,
                             name);
  }
  return st;
}
