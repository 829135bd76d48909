module @fused_dense attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3x4xf32> loc("w"), %arg2: tensor<4xf32> loc("bias")) -> (tensor<2x4xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = "stablehlo.reshape"(%arg2) : (tensor<4xf32>) -> tensor<1x4xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x4xf32>) -> tensor<2x4xf32>
    %3 = "stablehlo.add"(%0, %2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x4xf32>
    %6 = "stablehlo.compare"(%3, %5) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %7 = "stablehlo.select"(%6, %3, %5) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %8 = "stablehlo.compare"(%5, %5) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %9 = "stablehlo.select"(%8, %5, %7) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %10 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %11 = "stablehlo.select"(%10, %3, %9) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%11) : (tensor<2x4xf32>) -> ()
  }
}
