module @select_and_scatter_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32> loc("x"), %arg1: tensor<2x4xf32> loc("src")) -> (tensor<4x4xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.pad"(%arg1, %0) {edge_padding_low = array<i64: 1, 1>, edge_padding_high = array<i64: 1, 0>, interior_padding = array<i64: 1, 0>} : (tensor<2x4xf32>, tensor<f32>) -> tensor<5x5xf32>
    %2 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce_window"(%1, %2) ({
      ^bb0(%4: tensor<f32>, %5: tensor<f32>):
      %6 = "stablehlo.add"(%4, %5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 1>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<5x5xf32>, tensor<f32>) -> tensor<4x4xf32>
    "func.return"(%3) : (tensor<4x4xf32>) -> ()
  }
}
