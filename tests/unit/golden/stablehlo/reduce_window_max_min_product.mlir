module @reduce_window_max_min_product attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32> loc("x"), %arg1: tensor<4x4xi32> loc("k")) -> (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x2xi32>) {
    %0 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.bitcast_convert"(%2) : (tensor<f32>) -> tensor<i32>
      %5 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %6 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %7 = "stablehlo.compare"(%4, %5) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %8 = "stablehlo.xor"(%4, %6) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %9 = "stablehlo.select"(%7, %8, %4) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %10 = "stablehlo.bitcast_convert"(%3) : (tensor<f32>) -> tensor<i32>
      %11 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %12 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %13 = "stablehlo.compare"(%10, %11) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %14 = "stablehlo.xor"(%10, %12) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %15 = "stablehlo.select"(%13, %14, %10) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %16 = "stablehlo.compare"(%9, %15) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %17 = "stablehlo.select"(%16, %2, %3) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %18 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %19 = "stablehlo.select"(%18, %3, %17) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %20 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %21 = "stablehlo.select"(%20, %2, %19) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%21) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xf32>, tensor<f32>) -> tensor<3x2xf32>
    %22 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %23 = "stablehlo.reduce_window"(%arg1, %22) ({
      ^bb0(%24: tensor<i32>, %25: tensor<i32>):
      %26 = "stablehlo.minimum"(%24, %25) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%26) : (tensor<i32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xi32>, tensor<i32>) -> tensor<3x2xi32>
    %27 = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %28 = "stablehlo.reduce_window"(%arg1, %27) ({
      ^bb0(%29: tensor<i32>, %30: tensor<i32>):
      %31 = "stablehlo.multiply"(%29, %30) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%31) : (tensor<i32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x4xi32>, tensor<i32>) -> tensor<3x2xi32>
    "func.return"(%1, %23, %28) : (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x2xi32>) -> ()
  }
}
