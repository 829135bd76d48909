module @conv_general_padding_strides_dilations attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x5x6x3xf32> loc("img"), %arg1: tensor<3x2x3x4xf32> loc("ker")) -> (tensor<1x5x5x4xf32>) {
    %0 = "stablehlo.convolution"(%arg0, %arg1) {dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, window_strides = array<i64: 2, 1>, padding = dense<[[1, 2], [1, 0]]> : tensor<2x2xi64>, lhs_dilation = array<i64: 2, 1>, rhs_dilation = array<i64: 1, 2>, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x5x6x3xf32>, tensor<3x2x3x4xf32>) -> tensor<1x5x5x4xf32>
    "func.return"(%0) : (tensor<1x5x5x4xf32>) -> ()
  }
}
