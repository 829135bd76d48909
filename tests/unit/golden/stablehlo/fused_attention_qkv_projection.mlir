module @fused_attention_qkv_projection attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3x8xf32> loc("w"), %arg2: tensor<4xf32> loc("bq")) -> (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
    %1 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 2, 4>, strides = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x4xf32>
    %2 = "stablehlo.reshape"(%arg2) : (tensor<4xf32>) -> tensor<1x4xf32>
    %3 = "stablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x4xf32>) -> tensor<2x4xf32>
    %4 = "stablehlo.add"(%1, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %5 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 4>, limit_indices = array<i64: 2, 6>, strides = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x2xf32>
    %6 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 6>, limit_indices = array<i64: 2, 8>, strides = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x2xf32>
    "func.return"(%4, %5, %6) : (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> ()
  }
}
