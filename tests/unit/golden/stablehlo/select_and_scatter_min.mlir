module @select_and_scatter_min attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32> loc("x"), %arg1: tensor<2x2xf32> loc("src")) -> (tensor<4x4xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.select_and_scatter"(%arg0, %arg1, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.compare"(%2, %3) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%4) : (tensor<i1>) -> ()
    }, {
      ^bb0(%5: tensor<f32>, %6: tensor<f32>):
      %7 = "stablehlo.add"(%5, %6) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%7) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<4x4xf32>
    "func.return"(%1) : (tensor<4x4xf32>) -> ()
  }
}
