module @pad attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x2xf32> loc("x")) -> (tensor<7x4xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.pad"(%arg0, %0) {edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: -1, 2>, interior_padding = array<i64: 2, 0>} : (tensor<3x2xf32>, tensor<f32>) -> tensor<7x4xf32>
    "func.return"(%1) : (tensor<7x4xf32>) -> ()
  }
}
