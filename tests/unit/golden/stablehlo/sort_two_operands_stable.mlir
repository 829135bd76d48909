module @sort_two_operands_stable attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32> loc("keys"), %arg1: tensor<2x4xi32> loc("vals")) -> (tensor<2x4xf32>, tensor<2x4xi32>) {
    %0:2 = "stablehlo.sort"(%arg0, %arg1) ({
      ^bb0(%1: tensor<f32>, %2: tensor<f32>, %3: tensor<i32>, %4: tensor<i32>):
      %5 = "stablehlo.bitcast_convert"(%1) : (tensor<f32>) -> tensor<i32>
      %6 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %7 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %8 = "stablehlo.compare"(%5, %6) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %9 = "stablehlo.xor"(%5, %7) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %10 = "stablehlo.select"(%8, %9, %5) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %11 = "stablehlo.bitcast_convert"(%2) : (tensor<f32>) -> tensor<i32>
      %12 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %13 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %14 = "stablehlo.compare"(%11, %12) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %15 = "stablehlo.xor"(%11, %13) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %16 = "stablehlo.select"(%14, %15, %11) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %17 = "stablehlo.compare"(%10, %16) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%17) : (tensor<i1>) -> ()
    }) {dimension = 1 : i64, is_stable = true} : (tensor<2x4xf32>, tensor<2x4xi32>) -> (tensor<2x4xf32>, tensor<2x4xi32>)
    "func.return"(%0#0, %0#1) : (tensor<2x4xf32>, tensor<2x4xi32>) -> ()
  }
}
