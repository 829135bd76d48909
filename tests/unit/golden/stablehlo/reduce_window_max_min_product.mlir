module @reduce_window_max_min_product attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32> loc("x"), %arg1: tensor<4x4xi32> loc("k")) -> (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x2xi32>) {
    %0 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.compare"(%2, %3) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = "stablehlo.select"(%4, %2, %3) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %6 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %7 = "stablehlo.select"(%6, %3, %5) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %8 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %9 = "stablehlo.select"(%8, %2, %7) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%9) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xf32>, tensor<f32>) -> tensor<3x2xf32>
    %10 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %11 = "stablehlo.reduce_window"(%arg1, %10) ({
      ^bb0(%12: tensor<i32>, %13: tensor<i32>):
      %14 = "stablehlo.minimum"(%12, %13) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%14) : (tensor<i32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xi32>, tensor<i32>) -> tensor<3x2xi32>
    %15 = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %16 = "stablehlo.reduce_window"(%arg1, %15) ({
      ^bb0(%17: tensor<i32>, %18: tensor<i32>):
      %19 = "stablehlo.multiply"(%17, %18) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%19) : (tensor<i32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xi32>, tensor<i32>) -> tensor<3x2xi32>
    "func.return"(%1, %11, %16) : (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x2xi32>) -> ()
  }
}
