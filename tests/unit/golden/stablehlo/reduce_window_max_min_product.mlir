module @reduce_window_max_min_product attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32> loc("x"), %arg1: tensor<4x4xi32> loc("k")) -> (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x2xi32>) {
    %0 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.pad"(%arg0, %0) {edge_padding_low = array<i64: 0, 0>, edge_padding_high = array<i64: 0, 0>, interior_padding = array<i64: 1, 0>} : (tensor<4x4xf32>, tensor<f32>) -> tensor<7x4xf32>
    %2 = "stablehlo.optimization_barrier"(%1) : (tensor<7x4xf32>) -> tensor<7x4xf32>
    %3 = "stablehlo.reduce_window"(%2, %0) ({
      ^bb0(%4: tensor<f32>, %5: tensor<f32>):
      %6 = "stablehlo.bitcast_convert"(%4) : (tensor<f32>) -> tensor<i32>
      %7 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %8 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %9 = "stablehlo.compare"(%6, %7) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %10 = "stablehlo.xor"(%6, %8) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %11 = "stablehlo.select"(%9, %10, %6) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %12 = "stablehlo.bitcast_convert"(%5) : (tensor<f32>) -> tensor<i32>
      %13 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %14 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %15 = "stablehlo.compare"(%12, %13) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %16 = "stablehlo.xor"(%12, %14) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %17 = "stablehlo.select"(%15, %16, %12) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %18 = "stablehlo.compare"(%11, %17) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %19 = "stablehlo.select"(%18, %4, %5) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %20 = "stablehlo.compare"(%5, %5) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %21 = "stablehlo.select"(%20, %5, %19) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %22 = "stablehlo.compare"(%4, %4) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %23 = "stablehlo.select"(%22, %4, %21) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%23) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<7x4xf32>, tensor<f32>) -> tensor<3x2xf32>
    %24 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %25 = "stablehlo.pad"(%arg1, %24) {edge_padding_low = array<i64: 0, 0>, edge_padding_high = array<i64: 0, 0>, interior_padding = array<i64: 1, 0>} : (tensor<4x4xi32>, tensor<i32>) -> tensor<7x4xi32>
    %26 = "stablehlo.optimization_barrier"(%25) : (tensor<7x4xi32>) -> tensor<7x4xi32>
    %27 = "stablehlo.reduce_window"(%26, %24) ({
      ^bb0(%28: tensor<i32>, %29: tensor<i32>):
      %30 = "stablehlo.minimum"(%28, %29) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%30) : (tensor<i32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<7x4xi32>, tensor<i32>) -> tensor<3x2xi32>
    %31 = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %32 = "stablehlo.pad"(%arg1, %31) {edge_padding_low = array<i64: 0, 0>, edge_padding_high = array<i64: 0, 0>, interior_padding = array<i64: 1, 0>} : (tensor<4x4xi32>, tensor<i32>) -> tensor<7x4xi32>
    %33 = "stablehlo.optimization_barrier"(%32) : (tensor<7x4xi32>) -> tensor<7x4xi32>
    %34 = "stablehlo.reduce_window"(%33, %31) ({
      ^bb0(%35: tensor<i32>, %36: tensor<i32>):
      %37 = "stablehlo.multiply"(%35, %36) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%37) : (tensor<i32>) -> ()
    }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<7x4xi32>, tensor<i32>) -> tensor<3x2xi32>
    "func.return"(%3, %27, %34) : (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x2xi32>) -> ()
  }
}
