// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_common_test.c: the kernels' common layer (kernels/common.h): the dtype
// traits table against the public dtype facts, and row-major strides.
#include "backends/c/kernels/common.h"
#include "test.h"

TEST(dtype_size_matches_dtype_bits) {
  for (int d = 0; d < CML_DTYPE_COUNT; ++d) {
    const cml_dtype_t dt = (cml_dtype_t)d;
    const size_t want =
        cml_dtype_is_valid(dt) && !cml_dtype_is_packed(dt) ? (size_t)cml_dtype_bits(dt) / 8 : 0;
    ASSERT_EQ_U64(cmlc_dtype_size(dt), want);
  }
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_BOOL), 1);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_BF16), 2);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_C128), 16);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_I4), 0);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_TOKEN), 0);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_INVALID), 0);
}

TEST(dtype_size_out_of_range_is_zero) {
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_COUNT), 0);
  ASSERT_EQ_U64(cmlc_dtype_size((cml_dtype_t)-1), 0);
  ASSERT_EQ_U64(cmlc_dtype_size((cml_dtype_t)1000), 0);
}

TEST(row_major_strides) {
  const int64_t dims[] = {2, 3, 4, 5};
  int64_t strides[4] = {0};
  cmlc_row_major_strides(4, dims, strides);
  ASSERT_EQ_INT(strides[0], 60);
  ASSERT_EQ_INT(strides[1], 20);
  ASSERT_EQ_INT(strides[2], 5);
  ASSERT_EQ_INT(strides[3], 1);
  cml_shape_t s;
  ASSERT_STATUS_OK(cml_shape_init(&s, CML_DTYPE_F32, 3, (const int64_t[]){7, 0, 3}));
  int64_t ss[3] = {0};
  cmlc_shape_strides(&s, ss);
  ASSERT_EQ_INT(ss[0], 0);
  ASSERT_EQ_INT(ss[1], 3);
  ASSERT_EQ_INT(ss[2], 1);
  cmlc_row_major_strides(0, dims, strides);  // rank 0 writes nothing
  ASSERT_EQ_INT(strides[0], 60);
}

TEST_MAIN(TEST_ENTRY(dtype_size_matches_dtype_bits), TEST_ENTRY(dtype_size_out_of_range_is_zero),
          TEST_ENTRY(row_major_strides))
