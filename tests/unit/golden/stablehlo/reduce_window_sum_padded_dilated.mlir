module @reduce_window_sum_padded_dilated attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x5x6x2xf32> loc("x")) -> (tensor<1x3x4x2xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.add"(%2, %3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%4) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 1, 1>, base_dilations = array<i64: 1, 1, 1, 1>, window_dilations = array<i64: 1, 1, 2, 1>, padding = dense<[[0, 0], [1, 1], [2, 0], [0, 0]]> : tensor<4x2xi64>} : (tensor<1x5x6x2xf32>, tensor<f32>) -> tensor<1x3x4x2xf32>
    "func.return"(%1) : (tensor<1x3x4x2xf32>) -> ()
  }
}
