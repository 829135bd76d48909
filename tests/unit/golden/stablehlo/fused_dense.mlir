module @fused_dense attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3x4xf32> loc("w"), %arg2: tensor<4xf32> loc("bias")) -> (tensor<2x4xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = "stablehlo.reshape"(%arg2) : (tensor<4xf32>) -> tensor<1x4xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x4xf32>) -> tensor<2x4xf32>
    %3 = "stablehlo.add"(%0, %2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x4xf32>
    %6 = "stablehlo.bitcast_convert"(%3) : (tensor<2x4xf32>) -> tensor<2x4xi32>
    %7 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %8 = "stablehlo.broadcast_in_dim"(%7) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x4xi32>
    %9 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %10 = "stablehlo.broadcast_in_dim"(%9) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x4xi32>
    %11 = "stablehlo.compare"(%6, %8) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
    %12 = "stablehlo.xor"(%6, %10) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
    %13 = "stablehlo.select"(%11, %12, %6) : (tensor<2x4xi1>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
    %14 = "stablehlo.bitcast_convert"(%5) : (tensor<2x4xf32>) -> tensor<2x4xi32>
    %15 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %16 = "stablehlo.broadcast_in_dim"(%15) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x4xi32>
    %17 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %18 = "stablehlo.broadcast_in_dim"(%17) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x4xi32>
    %19 = "stablehlo.compare"(%14, %16) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
    %20 = "stablehlo.xor"(%14, %18) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
    %21 = "stablehlo.select"(%19, %20, %14) : (tensor<2x4xi1>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
    %22 = "stablehlo.compare"(%13, %21) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
    %23 = "stablehlo.select"(%22, %3, %5) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %24 = "stablehlo.compare"(%5, %5) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %25 = "stablehlo.select"(%24, %5, %23) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %26 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %27 = "stablehlo.select"(%26, %3, %25) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%27) : (tensor<2x4xf32>) -> ()
  }
}
