// SPDX-License-Identifier: Apache-2.0
// tests/unit/buffer_test.c: the checked buffer wrappers, refcounts, backend base helpers and
// capabilities, over a small host-memory backend defined here.
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/runtime_internal.h"
#include "test.h"

//===--- a host-memory backend with 2 devices, Float32 and Int32 only ---===//

typedef struct hb_backend_t {
  cml_backend_t base;
} hb_backend_t;

typedef struct hb_buffer_t {
  cml_buffer_t base;
  void* data;
  size_t size;
} hb_buffer_t;

static int g_backend_destroyed, g_buffer_destroyed, g_vtable_calls;

static void hb_destroy(cml_backend_t* backend) {
  cml_allocator_t a = backend->allocator;
  cml_backend_deinit_base(backend);
  cml_allocator_free(a, backend, sizeof(hb_backend_t));
  g_backend_destroyed++;
}

static const char* hb_device_description(const cml_backend_t* backend, int device) {
  return device == 1 ? "host memory #1" : NULL;  // device 0 falls back to the default
}

static cml_status_t hb_new_buffer(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                  bool shared, hb_buffer_t** out) {
  hb_buffer_t* b = (hb_buffer_t*)calloc(1, sizeof *b);
  if (!b) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  b->size = cml_shape_byte_size(shape);
  b->data = calloc(1, b->size ? b->size : 1);
  if (!b->data) {
    free(b);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  cml_buffer_init_base(&b->base, backend, shape, device, shared);
  *out = b;
  return CML_OK;
}

static cml_status_t hb_from_host(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                 const void* data, cml_buffer_t** out) {
  g_vtable_calls++;
  hb_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(hb_new_buffer(backend, device, shape, false, &b));
  if (b->size) memcpy(b->data, data, b->size);
  *out = &b->base;
  return CML_OK;
}

static cml_status_t hb_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  g_vtable_calls++;
  memcpy(dst, ((hb_buffer_t*)buffer)->data, size);
  return CML_OK;
}

static cml_status_t hb_create_shared(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                     cml_buffer_t** out, void** out_data) {
  g_vtable_calls++;
  hb_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(hb_new_buffer(backend, device, shape, true, &b));
  *out = &b->base;
  *out_data = b->data;
  return CML_OK;
}

static cml_status_t hb_data(cml_buffer_t* buffer, void** out_data) {
  g_vtable_calls++;
  *out_data = ((hb_buffer_t*)buffer)->data;
  return CML_OK;
}

static cml_status_t hb_to_device(cml_buffer_t* buffer, int device, cml_buffer_t** out) {
  g_vtable_calls++;
  hb_buffer_t* src = (hb_buffer_t*)buffer;
  hb_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(hb_new_buffer(buffer->backend, device, &buffer->shape, false, &b));
  memcpy(b->data, src->data, src->size);
  *out = &b->base;
  return CML_OK;
}

static void hb_buffer_destroy(cml_buffer_t* buffer) {
  hb_buffer_t* b = (hb_buffer_t*)buffer;
  free(b->data);
  cml_buffer_deinit_base(buffer);
  free(b);
  g_buffer_destroyed++;
}

static const int g_extension = 42;
static const void* hb_get_extension(const cml_backend_t* backend, const char* name) {
  return strcmp(name, "hb") == 0 ? &g_extension : NULL;
}

static const cml_backend_vtable_t hb_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = hb_destroy,
    .device_description = hb_device_description,
    .buffer_from_host = hb_from_host,
    .buffer_copy_to_host = hb_to_host,
    .buffer_create_shared = hb_create_shared,
    .buffer_data = hb_data,
    .buffer_copy_to_device = hb_to_device,
    .buffer_destroy = hb_buffer_destroy,
    .get_extension = hb_get_extension,
};

// Claims a job of 7 processes (only reachable through a vtable that has the slot).
static void hb_process_info(const cml_backend_t* backend, cml_process_info_t* out) {
  (void)backend;
  out->process_count = 7;
}

// A vtable from a backend built against API 1.0: struct_size stops before execute_with_control,
// so the entries after it (process_info) must be treated as absent even though they are set.
static const cml_backend_vtable_t hb_short_vtable = {
    .struct_size = offsetof(cml_backend_vtable_t, execute_with_control),
    .destroy = hb_destroy,
    .buffer_from_host = hb_from_host,
    .buffer_copy_to_host = hb_to_host,
    .buffer_data = hb_data,
    .get_extension = hb_get_extension,
    .process_info = hb_process_info,
};
// Shorter than API 1.0 (it stops before buffer_create_shared): refused.
static const cml_backend_vtable_t hb_too_short_vtable = {
    .struct_size = offsetof(cml_backend_vtable_t, buffer_create_shared),
    .destroy = hb_destroy,
    .buffer_from_host = hb_from_host,
    .buffer_copy_to_host = hb_to_host,
};

static cml_backend_t* hb_new(const cml_backend_vtable_t* vtable) {
  hb_backend_t* b = (hb_backend_t*)cml_allocator_malloc(cml_allocator_system(), sizeof *b, 64);
  if (!b) return NULL;
  memset(b, 0, sizeof *b);
  cml_status_t st =
      cml_backend_init_base(&b->base, vtable, cml_allocator_system(), "hb", "hb:test", 2);
  if (st != CML_OK) {
    fprintf(stderr, "hb_new: %s\n", cml_status_message(st));
    cml_status_free(st);
    cml_allocator_free(cml_allocator_system(), b, sizeof *b);
    return NULL;
  }
  b->base.capabilities.dtypes = CML_DTYPE_BIT(CML_DTYPE_F32) | CML_DTYPE_BIT(CML_DTYPE_I32);
  b->base.capabilities.shared_buffers = true;
  return &b->base;
}

//===--- tests ---===//

TEST(round_trip) {
  cml_backend_t* be = hb_new(&hb_vtable);
  ASSERT_TRUE(be != NULL);
  float host[6] = {1, 2, 3, 4, 5, 6};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_buffer_t* buf = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 1, &s, host, sizeof host, &buf));
  ASSERT_TRUE(cml_shape_equal(cml_buffer_shape(buf), &s));
  ASSERT_EQ_INT(cml_buffer_device(buf), 1);
  ASSERT_TRUE(cml_buffer_backend(buf) == be);
  ASSERT_TRUE(cml_buffer_is_valid(buf));
  float back[6] = {0};
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(buf, back, sizeof back));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(back[i], (double)(i + 1));

  // A scalar and an empty array.
  int32_t seven = 7, got = 0;
  cml_shape_t scalar = cml_shape_scalar(CML_DTYPE_I32);
  cml_buffer_t* sb = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &scalar, &seven, sizeof seven, &sb));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(sb, &got, sizeof got));
  ASSERT_EQ_INT(got, 7);
  cml_shape_t empty = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){0, 3});
  cml_buffer_t* eb = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &empty, NULL, 0, &eb));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(eb, NULL, 0));
  cml_buffer_release(eb);
  cml_buffer_release(sb);
  cml_buffer_release(buf);
  cml_backend_release(be);
}

TEST(from_host_validation) {
  cml_backend_t* be = hb_new(&hb_vtable);
  float host[6] = {0};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_buffer_t* buf = (cml_buffer_t*)1;
  int calls = g_vtable_calls;

  cml_status_t st = cml_buffer_from_host(be, 2, &s, host, sizeof host, &buf);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_OUT_OF_RANGE);
  ASSERT_CONTAINS(cml_status_message(st), "device 2");
  ASSERT_CONTAINS(cml_status_message(st), "2 device(s)");
  ASSERT_CONTAINS(cml_status_message(st), "\"hb\"");
  cml_status_free(st);
  ASSERT_TRUE(buf == NULL);
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, -1, &s, host, sizeof host, &buf),
                     CML_STATUS_OUT_OF_RANGE);

  st = cml_buffer_from_host(be, 0, &s, host, sizeof host - 4, &buf);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "20 bytes");
  ASSERT_CONTAINS(cml_status_message(st), "(Float32)[2, 3]");
  ASSERT_CONTAINS(cml_status_message(st), "24 bytes");
  cml_status_free(st);

  cml_shape_t f64 = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){3});
  double d[3] = {0};
  st = cml_buffer_from_host(be, 0, &f64, d, sizeof d, &buf);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(cml_status_message(st), "Float64");
  ASSERT_CONTAINS(cml_status_message(st), "\"hb\"");
  cml_status_free(st);

  cml_shape_t bad = s;
  bad.dims[1] = -3;
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, 0, &bad, host, sizeof host, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  bad = s;
  bad.rank = CML_MAX_RANK + 1;
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, 0, &bad, host, sizeof host, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  bad = s;
  bad.dtype = CML_DTYPE_INVALID;
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, 0, &bad, host, sizeof host, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, 0, &s, NULL, sizeof host, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, 0, NULL, host, sizeof host, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(NULL, 0, &s, host, sizeof host, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(be, 0, &s, host, sizeof host, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(g_vtable_calls, calls);  // nothing reached the backend
  ASSERT_TRUE(buf == NULL);
  cml_backend_release(be);
}

TEST(copy_to_host_validation) {
  cml_backend_t* be = hb_new(&hb_vtable);
  int32_t host[4] = {1, 2, 3, 4};
  cml_shape_t s = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){4});
  cml_buffer_t* buf = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, host, sizeof host, &buf));
  int32_t back[5];
  cml_status_t st = cml_buffer_copy_to_host(buf, back, sizeof back);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "20 bytes");
  ASSERT_CONTAINS(cml_status_message(st), "16 bytes");
  cml_status_free(st);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(buf, NULL, 16), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(NULL, back, 16), CML_STATUS_INVALID_ARGUMENT);

  // A donated buffer can no longer be used.
  cml__donated_store(&buf->donated, true);
  ASSERT_FALSE(cml_buffer_is_valid(buf));
  st = cml_buffer_copy_to_host(buf, back, 16);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "buffer was donated");
  cml_status_free(st);
  cml_buffer_t* copy = NULL;
  ASSERT_STATUS_CODE(cml_buffer_copy_to_device(buf, 1, &copy), CML_STATUS_FAILED_PRECONDITION);
  cml_buffer_release(buf);  // a donated buffer must still be released
  cml_backend_release(be);
}

// A donation refused because another thread reads the buffer changes nothing a third thread can
// see: the donor once set the donated flag first and cleared it on seeing the reader, and a copy
// that looked in between failed with "buffer was donated" though no donation ever happened. Here
// one use is held for the whole test, so every claim must be refused, while two threads copy the
// buffer: every copy must succeed with the buffer's data. Then the claim's own outcomes: taken
// when nothing reads, refused once donated, and uses refused after it.
typedef struct claim_race_t {
  cml_buffer_t* buf;
  atomic_int running;
  int refused, taken;
  int copies, failed, wrong;
} claim_race_t;

static void* claim_race_donor(void* arg) {
  claim_race_t* r = arg;
  for (int i = 0; i < 200000; ++i) {
    const cml__buffer_use_t u = cml__buffer_claim_donation(r->buf);
    if (u == CML__USE_IN_USE) {
      ++r->refused;
    } else {
      ++r->taken;
      if (u == CML__USE_OK) cml__donated_store(&r->buf->donated, false);
    }
  }
  atomic_store(&r->running, 0);
  return NULL;
}

static void* claim_race_reader(void* arg) {
  claim_race_t* r = arg;
  int32_t back[4];
  int copies = 0, failed = 0, wrong = 0;
  while (atomic_load(&r->running)) {
    cml_status_t st = cml_buffer_copy_to_host(r->buf, back, sizeof back);
    ++copies;
    if (st != CML_OK) {
      if (failed++ == 0) fprintf(stderr, "  a copy failed: %s\n", cml_status_message(st));
      cml_status_free(st);
    } else {
      wrong += back[0] != 1 || back[3] != 4;
    }
  }
  __atomic_fetch_add(&r->copies, copies, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&r->failed, failed, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&r->wrong, wrong, __ATOMIC_SEQ_CST);
  return NULL;
}

TEST(refused_donation_is_invisible_to_readers) {
  cml_backend_t* be = hb_new(&hb_vtable);
  int32_t host[4] = {1, 2, 3, 4};
  cml_shape_t s = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){4});
  cml_buffer_t* buf = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, host, sizeof host, &buf));
  ASSERT_EQ_INT(cml__buffer_use_begin(buf), CML__USE_OK);  // a reader for the whole race
  claim_race_t r = {.buf = buf};
  atomic_store(&r.running, 1);
  pthread_t t[3];
  ASSERT_EQ_INT(pthread_create(&t[0], NULL, claim_race_reader, &r), 0);
  ASSERT_EQ_INT(pthread_create(&t[1], NULL, claim_race_reader, &r), 0);
  ASSERT_EQ_INT(pthread_create(&t[2], NULL, claim_race_donor, &r), 0);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  printf("  %d claims refused, %d copies beside them\n", r.refused, r.copies);
  ASSERT_EQ_INT(r.taken, 0);
  ASSERT_EQ_INT(r.refused, 200000);
  ASSERT_EQ_INT(r.failed, 0);
  ASSERT_EQ_INT(r.wrong, 0);
  ASSERT_TRUE(cml_buffer_is_valid(buf));
  cml__buffer_use_end(buf);
  ASSERT_EQ_INT(buf->users, 0);

  // Nothing reads: the claim is taken; a second is refused as donated, and so is a use.
  ASSERT_EQ_INT(cml__buffer_claim_donation(buf), CML__USE_OK);
  ASSERT_EQ_INT(buf->users, 0);
  ASSERT_FALSE(cml_buffer_is_valid(buf));
  ASSERT_EQ_INT(cml__buffer_claim_donation(buf), CML__USE_DONATED);
  ASSERT_EQ_INT(cml__buffer_use_begin(buf), CML__USE_DONATED);
  ASSERT_EQ_INT(buf->users, 0);
  // Given back (the execution failed): usable again, up to CML__USERS_MAX uses at once.
  cml__donated_store(&buf->donated, false);
  for (int i = 0; i < CML__USERS_MAX; ++i) ASSERT_EQ_INT(cml__buffer_use_begin(buf), CML__USE_OK);
  ASSERT_EQ_INT(cml__buffer_use_begin(buf), CML__USE_FULL);
  ASSERT_EQ_INT(cml__buffer_claim_donation(buf), CML__USE_IN_USE);
  for (int i = 0; i < CML__USERS_MAX; ++i) cml__buffer_use_end(buf);
  ASSERT_EQ_INT(buf->users, 0);
  cml_buffer_release(buf);
  cml_backend_release(be);
}

TEST(shared_buffers) {
  cml_backend_t* be = hb_new(&hb_vtable);
  ASSERT_TRUE(cml_backend_has_shared_buffers(be));
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_buffer_t* buf = NULL;
  void* data = NULL;
  ASSERT_STATUS_OK(cml_buffer_create_shared(be, 1, &s, &buf, &data));
  ASSERT_TRUE(buf->shared);
  float* f = (float*)data;
  f[0] = 1.5f;
  f[1] = -2.0f;
  f[2] = 8.0f;
  float back[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(buf, back, sizeof back));
  ASSERT_EQ_DBL(back[0], 1.5);
  ASSERT_EQ_DBL(back[1], -2.0);
  ASSERT_EQ_DBL(back[2], 8.0);
  void* again = NULL;
  ASSERT_STATUS_OK(cml_buffer_data(buf, &again));
  ASSERT_TRUE(again == data);

  cml_buffer_t* other = NULL;
  void* other_data = NULL;
  ASSERT_STATUS_CODE(cml_buffer_create_shared(be, 5, &s, &other, &other_data),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_TRUE(other == NULL && other_data == NULL);
  ASSERT_STATUS_CODE(cml_buffer_create_shared(be, 0, &s, NULL, &other_data),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_shape_t u8 = cml_shape_make(CML_DTYPE_U8, 1, (int64_t[]){3});
  ASSERT_STATUS_CODE(cml_buffer_create_shared(be, 0, &u8, &other, &other_data),
                     CML_STATUS_UNIMPLEMENTED);

  // A non-shared buffer has no data pointer.
  float host[3] = {0};
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, host, sizeof host, &other));
  cml_status_t st = cml_buffer_data(other, &data);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "not a shared buffer");
  cml_status_free(st);
  ASSERT_TRUE(data == NULL);
  cml_buffer_release(other);
  cml_buffer_release(buf);

  // Without capabilities.shared_buffers the core refuses before the vtable.
  be->capabilities.shared_buffers = false;
  ASSERT_FALSE(cml_backend_has_shared_buffers(be));
  ASSERT_STATUS_CODE(cml_buffer_create_shared(be, 0, &s, &buf, &data), CML_STATUS_UNIMPLEMENTED);
  cml_backend_release(be);
}

TEST(copy_to_device) {
  cml_backend_t* be = hb_new(&hb_vtable);
  float host[2] = {3, 4};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_buffer_t* buf = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, host, sizeof host, &buf));
  cml_buffer_t* copy = NULL;
  cml_status_t st = cml_buffer_copy_to_device(buf, 0, &copy);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "already on device 0");
  cml_status_free(st);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_device(buf, 2, &copy), CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_OK(cml_buffer_copy_to_device(buf, 1, &copy));
  ASSERT_EQ_INT(cml_buffer_device(copy), 1);
  float back[2];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(copy, back, sizeof back));
  ASSERT_EQ_DBL(back[0], 3.0);
  ASSERT_EQ_DBL(back[1], 4.0);
  cml_buffer_release(copy);
  cml_buffer_release(buf);
  cml_backend_release(be);
}

TEST(refcounts_keep_the_backend_alive) {
  cml_backend_t* be = hb_new(&hb_vtable);
  int backends = g_backend_destroyed, buffers = g_buffer_destroyed;
  float host[1] = {1};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){1});
  cml_buffer_t* buf = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, host, sizeof host, &buf));
  ASSERT_EQ_INT(cml__refcount_load(&be->refcount), 2);  // the buffer holds one
  cml_backend_release(be);                              // the caller's reference goes first
  ASSERT_EQ_INT(g_backend_destroyed, backends);
  ASSERT_TRUE(cml_buffer_retain(buf) == buf);
  cml_buffer_release(buf);
  ASSERT_EQ_INT(g_buffer_destroyed, buffers);
  cml_buffer_release(buf);  // the last reference frees the buffer, then the backend
  ASSERT_EQ_INT(g_buffer_destroyed, buffers + 1);
  ASSERT_EQ_INT(g_backend_destroyed, backends + 1);
  cml_buffer_release(NULL);
  cml_backend_release(NULL);
  ASSERT_TRUE(cml_buffer_retain(NULL) == NULL);
  ASSERT_FALSE(cml_buffer_is_valid(NULL));
}

TEST(identity_devices_and_extensions) {
  cml_backend_t* be = hb_new(&hb_vtable);
  ASSERT_STREQ(cml_backend_name(be), "hb");
  ASSERT_STREQ(cml_backend_config(be), "hb:test");
  ASSERT_STREQ(cml_backend_description(be), "hb");
  ASSERT_EQ_INT(cml_backend_device_count(be), 2);
  ASSERT_STREQ(cml_backend_device_description(be, 0), "hb:0");
  ASSERT_STREQ(cml_backend_device_description(be, 1), "host memory #1");
  ASSERT_STREQ(cml_backend_device_description(be, 2), "invalid device");
  ASSERT_STREQ(cml_backend_device_description(be, -1), "invalid device");
  ASSERT_TRUE(cml_backend_get_extension(be, "hb") == &g_extension);
  ASSERT_TRUE(cml_backend_get_extension(be, "xla") == NULL);
  ASSERT_TRUE(cml_backend_get_extension(be, NULL) == NULL);
  ASSERT_STREQ(cml_backend_name(NULL), "");
  ASSERT_EQ_INT(cml_backend_device_count(NULL), 0);
  // Without a process_info slot: one process holding both devices.
  cml_process_info_t info;
  memset(&info, 0x5a, sizeof info);
  cml_backend_process_info(be, &info);
  ASSERT_EQ_INT(info.process_index, 0);
  ASSERT_EQ_INT(info.process_count, 1);
  ASSERT_EQ_INT(info.first_local_device, 0);
  ASSERT_EQ_INT(info.local_device_count, 2);
  ASSERT_TRUE(cml_backend_device_is_local(be, 1));
  ASSERT_FALSE(cml_backend_device_is_local(be, 2));
  ASSERT_FALSE(cml_backend_device_is_local(be, -1));
  ASSERT_FALSE(cml_backend_device_is_local(NULL, 0));
  cml_backend_process_info(NULL, &info);
  ASSERT_EQ_INT(info.process_count, 0);
  cml_backend_release(be);

  // Entries past a short vtable's struct_size are absent.
  be = hb_new(&hb_short_vtable);
  ASSERT_TRUE(be != NULL);
  ASSERT_FALSE(cml_backend_has_shared_buffers(be));
  ASSERT_TRUE(cml_backend_get_extension(be, "hb") == &g_extension);  // a 1.0 entry
  cml_backend_process_info(be, &info);
  ASSERT_EQ_INT(info.process_count, 1);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){1});
  cml_buffer_t* buf = NULL;
  void* data = NULL;
  ASSERT_STATUS_CODE(cml_buffer_create_shared(be, 0, &s, &buf, &data), CML_STATUS_UNIMPLEMENTED);
  cml_backend_release(be);
  // A vtable shorter than API 1.0's: the core would call compile and execute past its end.
  hb_backend_t shorter;
  cml_status_t st = cml_backend_init_base(&shorter.base, &hb_too_short_vtable,
                                          cml_allocator_system(), "hb", "hb:test", 1);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INCOMPATIBLE);
  ASSERT_CONTAINS(cml_status_message(st), "smaller than backend API 1.0");
  cml_status_free(st);
}

TEST(capability_helpers) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_ADD));
  cml_capabilities_set_op(&caps, CML_OP_ADD, true);
  cml_capabilities_set_op(&caps, (cml_op_t)(CML_OP_COUNT - 1), true);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_ADD));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, (cml_op_t)(CML_OP_COUNT - 1)));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_DOT));
  // Exactly two bits are set, at the positions of the two ops.
  int bits = 0;
  for (size_t w = 0; w < sizeof caps.ops / sizeof caps.ops[0]; ++w) {
    for (int k = 0; k < 64; ++k) bits += (int)((caps.ops[w] >> k) & 1u);
  }
  ASSERT_EQ_INT(bits, 2);
  ASSERT_EQ_U64(caps.ops[CML_OP_ADD / 64], (uint64_t)1 << (CML_OP_ADD % 64));
  // The fields after the bit set sit at fixed offsets however many ops there are (room for
  // CML_CAPABILITIES_MAX_OPS), for plug-ins and bindings built against other headers.
  ASSERT_EQ_INT(offsetof(cml_capabilities_t, dtypes), CML_CAPABILITIES_MAX_OPS / 8);
  ASSERT_EQ_INT(CML_CAPABILITIES_MAX_OPS, 512);
  cml_capabilities_set_op(&caps, CML_OP_ADD, false);
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_ADD));
  cml_capabilities_set_op(&caps, CML_OP_COUNT, true);  // out of range: ignored
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_COUNT));
  ASSERT_FALSE(cml_capabilities_has_op(NULL, CML_OP_ADD));

  caps.dtypes = CML_DTYPE_BIT(CML_DTYPE_BF16);
  ASSERT_TRUE(cml_capabilities_has_dtype(&caps, CML_DTYPE_BF16));
  ASSERT_FALSE(cml_capabilities_has_dtype(&caps, CML_DTYPE_F16));
  ASSERT_FALSE(cml_capabilities_has_dtype(&caps, CML_DTYPE_INVALID));
  ASSERT_FALSE(cml_capabilities_has_dtype(&caps, CML_DTYPE_COUNT));
}

TEST(init_base_validation) {
  hb_backend_t b;
  ASSERT_STATUS_CODE(cml_backend_init_base(&b.base, &hb_vtable, cml_allocator_system(), "x", "", 0),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_backend_init_base(&b.base, NULL, cml_allocator_system(), "x", "", 1),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_backend_init_base(&b.base, &hb_vtable, cml_allocator_system(), "", "", 1),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_OK(
      cml_backend_init_base(&b.base, &hb_vtable, cml_allocator_system(), "x", NULL, 1));
  ASSERT_STREQ(b.base.config, "");
  ASSERT_EQ_U64(b.base.capabilities.dtypes, 0);
  ASSERT_EQ_INT(cml__refcount_load(&b.base.refcount), 1);
  cml_backend_deinit_base(&b.base);
}

TEST_MAIN(TEST_ENTRY(round_trip), TEST_ENTRY(from_host_validation),
          TEST_ENTRY(copy_to_host_validation), TEST_ENTRY(refused_donation_is_invisible_to_readers),
          TEST_ENTRY(shared_buffers), TEST_ENTRY(copy_to_device),
          TEST_ENTRY(refcounts_keep_the_backend_alive), TEST_ENTRY(identity_devices_and_extensions),
          TEST_ENTRY(capability_helpers), TEST_ENTRY(init_base_validation))
