module @conv_general_groups_nchw attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4x5x5xf32> loc("img"), %arg1: tensor<6x2x3x3xf32> loc("ker"), %arg2: tensor<2x4x4x3xi8> loc("q"), %arg3: tensor<2x2x3x4xi8> loc("qk")) -> (tensor<2x6x3x3xf32>, tensor<1x3x3x4xi32>) {
    %0 = "stablehlo.convolution"(%arg0, %arg1) {dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, window_strides = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, feature_group_count = 2 : i64, batch_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x3x3xf32>
    %1 = "stablehlo.convert"(%arg2) : (tensor<2x4x4x3xi8>) -> tensor<2x4x4x3xi32>
    %2 = "stablehlo.convert"(%arg3) : (tensor<2x2x3x4xi8>) -> tensor<2x2x3x4xi32>
    %3 = "stablehlo.convolution"(%1, %2) {dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, window_strides = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, feature_group_count = 1 : i64, batch_group_count = 2 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x4x3xi32>, tensor<2x2x3x4xi32>) -> tensor<1x3x3x4xi32>
    "func.return"(%0, %3) : (tensor<2x6x3x3xf32>, tensor<1x3x3x4xi32>) -> ()
  }
}
