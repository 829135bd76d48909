// SPDX-License-Identifier: Apache-2.0
// tests/unit/distributed_dtensor_test.c: host-side sharded tensors (cml_dtensor_*) on the `c`
// backend with 4 devices: splitting by a spec, device placement, merging (replicas read once),
// and the bad inputs.
#include <stdint.h>

#include "cml/cml.h"
#include "cml/distributed.h"
#include "test.h"

static bool status_matches(cml_status_t st, cml_status_code_t code, const char* const* needles) {
  bool ok = cml_status_code(st) == code;
  for (const char* const* n = needles; ok && *n; ++n) {
    ok = strstr(cml_status_message(st), *n) != NULL;
  }
  if (!ok) {
    fprintf(stderr, "status: want %s, got %s: \"%s\"\n", cml_status_code_name(code),
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
  }
  cml_status_free(st);
  return ok;
}
#define ASSERT_STATUS(expr, code, ...) \
  ASSERT_TRUE(status_matches((expr), (code), (const char* const[]){__VA_ARGS__, NULL}))

static cml_backend_t* c4(void) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config("c:devices=4", &b);
  if (st != CML_OK) {
    fprintf(stderr, "c:devices=4: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return b;
}

static cml_mesh_t* mesh2(const char* a0, int64_t s0, const char* a1, int64_t s1) {
  const char* names[2] = {a0, a1};
  int64_t sizes[2] = {s0, s1};
  cml_mesh_t* m = NULL;
  cml_status_t st = cml_mesh_create("mesh", names, sizes, a1 ? 2 : 1, &m);
  if (st != CML_OK) cml_status_free(st);
  return m;
}

// Reads buffer |b| (|n| floats) into |out|.
static bool read_f32(cml_buffer_t* b, float* out, size_t n) {
  cml_status_t st = cml_buffer_copy_to_host(b, out, n * sizeof *out);
  if (st != CML_OK) {
    fprintf(stderr, "copy_to_host: %s\n", cml_status_message(st));
    cml_status_free(st);
    return false;
  }
  return true;
}

TEST(split_2d_both_axes_and_merge) {
  cml_backend_t* be = c4();
  ASSERT_TRUE(be != NULL);
  cml_mesh_t* m = mesh2("data", 2, "model", 2);
  ASSERT_TRUE(m != NULL);
  cml_sharding_t s;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"data", "model"}, 2, &s));
  float host[24];
  for (int i = 0; i < 24; ++i) host[i] = (float)i;  // [4, 6], value = row * 6 + col
  cml_shape_t logical = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){4, 6});
  cml_dtensor_t* t = NULL;
  ASSERT_STATUS_OK(cml_dtensor_from_host(be, &s, &logical, host, sizeof host, NULL, &t));
  ASSERT_EQ_INT(cml_dtensor_shard_count(t), 4);
  ASSERT_EQ_INT(cml_dtensor_shard_shape(t)->dims[0], 2);
  ASSERT_EQ_INT(cml_dtensor_shard_shape(t)->dims[1], 3);
  ASSERT_TRUE(cml_shape_equal(cml_dtensor_shape(t), &logical));
  // Position p = (data, model) = (p / 2, p % 2) holds rows 2*data.., cols 3*model.. .
  for (size_t p = 0; p < 4; ++p) {
    cml_buffer_t* b = cml_dtensor_shard(t, p);
    ASSERT_EQ_INT(cml_buffer_device(b), (int)p);
    float got[6];
    ASSERT_TRUE(read_f32(b, got, 6));
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 3; ++c) {
        float want = (float)((2 * (int)(p / 2) + r) * 6 + 3 * (int)(p % 2) + c);
        ASSERT_EQ_DBL(got[r * 3 + c], want);
      }
    }
  }
  float back[24];
  memset(back, 0, sizeof back);
  ASSERT_STATUS_OK(cml_dtensor_to_host(t, back, sizeof back));
  ASSERT_TRUE(memcmp(back, host, sizeof host) == 0);
  ASSERT_STATUS(cml_dtensor_to_host(t, back, 8), CML_STATUS_INVALID_ARGUMENT, "needs 96 bytes",
                "got 8");
  cml_dtensor_destroy(t);
  cml_mesh_destroy(m);
  cml_backend_release(be);
}

TEST(placement_by_mesh_assignment_and_devices) {
  cml_backend_t* be = c4();
  ASSERT_TRUE(be != NULL);
  cml_mesh_t* m = mesh2("data", 4, NULL, 0);
  ASSERT_TRUE(m != NULL);
  ASSERT_STATUS_OK(cml_mesh_set_device_assignment(m, (const int32_t[]){3, 2, 1, 0}, 4));
  cml_sharding_t s;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"data"}, 1, &s));
  int32_t host[8] = {10, 11, 20, 21, 30, 31, 40, 41};
  cml_shape_t logical = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){8});
  cml_dtensor_t* t = NULL;
  ASSERT_STATUS_OK(cml_dtensor_from_host(be, &s, &logical, host, sizeof host, NULL, &t));
  // The mesh may go: the tensor keeps its own copy.
  cml_mesh_destroy(m);
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_EQ_INT(cml_buffer_device(cml_dtensor_shard(t, k)), 3 - (int)k);
    int32_t got[2];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(cml_dtensor_shard(t, k), got, sizeof got));
    ASSERT_EQ_INT(got[0], 10 * (int)(k + 1));
    ASSERT_EQ_INT(got[1], 10 * (int)(k + 1) + 1);
  }
  char text[128];
  cml_sharding_format(cml_dtensor_sharding(t), text, sizeof text);
  ASSERT_STREQ(text, "ShardingSpec{mesh=mesh, axes=[S(data)]}");
  cml_dtensor_t* t2 = NULL;
  ASSERT_STATUS_OK(cml_dtensor_from_host(be, cml_dtensor_sharding(t), &logical, host, sizeof host,
                                         (const int32_t[]){0, 0, 1, 1}, &t2));
  ASSERT_EQ_INT(cml_buffer_device(cml_dtensor_shard(t2, 1)), 0);
  ASSERT_EQ_INT(cml_buffer_device(cml_dtensor_shard(t2, 2)), 1);
  cml_dtensor_destroy(t2);
  cml_dtensor_destroy(t);
  cml_backend_release(be);
}

TEST(replicas_read_once) {
  cml_backend_t* be = c4();
  ASSERT_TRUE(be != NULL);
  cml_mesh_t* m = mesh2("data", 2, "model", 2);
  ASSERT_TRUE(m != NULL);
  // Column-sharded over "model", replicated over "data": positions 0 and 2 hold the same shard,
  // as do 1 and 3.
  cml_sharding_t s;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){NULL, "model"}, 2, &s));
  cml_shape_t shard = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1, 2});
  const float vals[4][2] = {{1, 2}, {3, 4}, {-1, -1}, {-2, -2}};
  cml_buffer_t* bufs[4];
  for (int k = 0; k < 4; ++k) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, k, &shard, vals[k], sizeof vals[k], &bufs[k]));
  }
  cml_dtensor_t* t = NULL;
  ASSERT_STATUS_OK(cml_dtensor_from_shards(&s, bufs, 4, &t));
  for (int k = 0; k < 4; ++k) cml_buffer_release(bufs[k]);  // the tensor retains them
  ASSERT_EQ_INT(cml_dtensor_shape(t)->dims[0], 1);
  ASSERT_EQ_INT(cml_dtensor_shape(t)->dims[1], 4);
  float back[4];
  ASSERT_STATUS_OK(cml_dtensor_to_host(t, back, sizeof back));
  // The replicas at positions 2 and 3 (different contents here) are not read.
  ASSERT_EQ_DBL(back[0], 1);
  ASSERT_EQ_DBL(back[1], 2);
  ASSERT_EQ_DBL(back[2], 3);
  ASSERT_EQ_DBL(back[3], 4);
  cml_dtensor_destroy(t);

  // Splitting copies each replica.
  float host[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  cml_shape_t logical = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 4});
  ASSERT_STATUS_OK(cml_dtensor_from_host(be, &s, &logical, host, sizeof host, NULL, &t));
  float got[4];
  ASSERT_TRUE(read_f32(cml_dtensor_shard(t, 3), got, 4));
  ASSERT_EQ_DBL(got[0], 2);
  ASSERT_EQ_DBL(got[1], 3);
  ASSERT_EQ_DBL(got[2], 6);
  ASSERT_EQ_DBL(got[3], 7);
  cml_dtensor_destroy(t);
  cml_mesh_destroy(m);
  cml_backend_release(be);
}

TEST(rank3_two_mesh_axes_on_one_axis) {
  cml_backend_t* be = c4();
  ASSERT_TRUE(be != NULL);
  cml_mesh_t* m = mesh2("x", 2, "y", 2);
  ASSERT_TRUE(m != NULL);
  // [3, 8, 2] int64, axis 1 split by ("y", "x") major to minor: shard index = y * 2 + x.
  cml_sharding_t s;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"", "y,x"}, 2, &s));
  int64_t host[48];
  for (int i = 0; i < 48; ++i) host[i] = 1000 + i;
  cml_shape_t logical = cml_shape_make(CML_DTYPE_I64, 3, (int64_t[]){3, 8, 2});
  cml_dtensor_t* t = NULL;
  ASSERT_STATUS_OK(cml_dtensor_from_host(be, &s, &logical, host, sizeof host, NULL, &t));
  for (int p = 0; p < 4; ++p) {
    int x = p / 2, y = p % 2, index = y * 2 + x;
    int64_t got[12];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(cml_dtensor_shard(t, (size_t)p), got, sizeof got));
    for (int a = 0; a < 3; ++a) {
      for (int b = 0; b < 2; ++b) {
        for (int c = 0; c < 2; ++c) {
          ASSERT_EQ_INT(got[(a * 2 + b) * 2 + c], host[(a * 8 + index * 2 + b) * 2 + c]);
        }
      }
    }
  }
  int64_t back[48];
  ASSERT_STATUS_OK(cml_dtensor_to_host(t, back, sizeof back));
  ASSERT_TRUE(memcmp(back, host, sizeof host) == 0);
  cml_dtensor_destroy(t);
  // A scalar, replicated on all four devices.
  cml_sharding_t r;
  cml_sharding_replicated(m, &r);
  float one = 3.5f, got_one = 0;
  cml_shape_t scalar = cml_shape_scalar(CML_DTYPE_F32);
  ASSERT_STATUS_OK(cml_dtensor_from_host(be, &r, &scalar, &one, sizeof one, NULL, &t));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(cml_dtensor_shard(t, 3), &got_one, sizeof got_one));
  ASSERT_EQ_DBL(got_one, 3.5);
  got_one = 0;
  ASSERT_STATUS_OK(cml_dtensor_to_host(t, &got_one, sizeof got_one));
  ASSERT_EQ_DBL(got_one, 3.5);
  cml_dtensor_destroy(t);
  cml_mesh_destroy(m);
  cml_backend_release(be);
}

TEST(bad_inputs) {
  cml_backend_t* be = c4();
  ASSERT_TRUE(be != NULL);
  cml_mesh_t* m = mesh2("data", 4, NULL, 0);
  cml_mesh_t* big = mesh2("data", 8, NULL, 0);
  ASSERT_TRUE(m && big);
  cml_sharding_t s, sb;
  ASSERT_STATUS_OK(cml_sharding_make(m, (const char* const[]){"data"}, 1, &s));
  ASSERT_STATUS_OK(cml_sharding_make(big, (const char* const[]){"data"}, 1, &sb));
  float host[8] = {0};
  cml_dtensor_t* t = (cml_dtensor_t*)1;
  cml_shape_t six = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){6});
  ASSERT_STATUS(cml_dtensor_from_host(be, &s, &six, host, 24, NULL, &t),
                CML_STATUS_INVALID_ARGUMENT, "not divisible by its 4 shards");
  ASSERT_TRUE(t == NULL);
  cml_shape_t eight = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){8});
  ASSERT_STATUS(cml_dtensor_from_host(be, &s, &eight, host, 16, NULL, &t),
                CML_STATUS_INVALID_ARGUMENT, "needs 32 bytes", "got 16");
  cml_shape_t i4 = cml_shape_make(CML_DTYPE_I4, 1, (int64_t[]){8});
  ASSERT_STATUS(cml_dtensor_from_host(be, &s, &i4, host, 4, NULL, &t), CML_STATUS_INVALID_ARGUMENT,
                "sub-byte");
  ASSERT_STATUS(cml_dtensor_from_host(be, &sb, &eight, host, 32, NULL, &t),
                CML_STATUS_INVALID_ARGUMENT, "shard 4", "device 4", "devices 0..3");
  ASSERT_STATUS(cml_dtensor_from_host(be, &s, &eight, host, 32, (const int32_t[]){0, 1, 2, -1}, &t),
                CML_STATUS_INVALID_ARGUMENT, "shard 3", "device -1");
  cml_sharding_t zero;
  memset(&zero, 0, sizeof zero);
  ASSERT_STATUS(cml_dtensor_from_host(be, &zero, &eight, host, 32, NULL, &t),
                CML_STATUS_INVALID_ARGUMENT, "no mesh");
  ASSERT_TRUE(t == NULL);

  cml_shape_t two = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_shape_t three = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_buffer_t* bufs[4];
  for (int k = 0; k < 4; ++k) {
    ASSERT_STATUS_OK(
        cml_buffer_from_host(be, k, k == 2 ? &three : &two, host, k == 2 ? 12 : 8, &bufs[k]));
  }
  ASSERT_STATUS(cml_dtensor_from_shards(&s, bufs, 3, &t), CML_STATUS_INVALID_ARGUMENT,
                "has 4 devices, got 3 shards");
  ASSERT_STATUS(cml_dtensor_from_shards(&s, bufs, 4, &t), CML_STATUS_INVALID_ARGUMENT,
                "shard 2 has shape (Float32)[3]", "shard 0 has (Float32)[2]");
  cml_buffer_t* with_null[4] = {bufs[0], bufs[1], NULL, bufs[3]};
  ASSERT_STATUS(cml_dtensor_from_shards(&s, with_null, 4, &t), CML_STATUS_INVALID_ARGUMENT,
                "shard 2 is NULL");
  ASSERT_TRUE(t == NULL);
  for (int k = 0; k < 4; ++k) cml_buffer_release(bufs[k]);
  ASSERT_TRUE(cml_dtensor_shard(NULL, 0) == NULL);
  ASSERT_EQ_INT(cml_dtensor_shard_count(NULL), 0);
  cml_dtensor_destroy(NULL);
  cml_mesh_destroy(m);
  cml_mesh_destroy(big);
  cml_backend_release(be);
}

TEST_MAIN(TEST_ENTRY(split_2d_both_axes_and_merge),
          TEST_ENTRY(placement_by_mesh_assignment_and_devices), TEST_ENTRY(replicas_read_once),
          TEST_ENTRY(rank3_two_mesh_axes_on_one_axis), TEST_ENTRY(bad_inputs))
