module @reduce_min_Float32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x")) -> (tensor<2xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0x7F800000> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
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
      %16 = "stablehlo.compare"(%9, %15) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %17 = "stablehlo.select"(%16, %2, %3) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %18 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %19 = "stablehlo.select"(%18, %3, %17) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %20 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %21 = "stablehlo.select"(%20, %2, %19) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%21) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    "func.return"(%1) : (tensor<2xf32>) -> ()
  }
}
