module @clamp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<f32> loc("lo"), %arg2: tensor<3xi32> loc("i")) -> (tensor<3xf32>, tensor<3xi32>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %1 = "stablehlo.compare"(%arg0, %0) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %2 = "stablehlo.select"(%1, %arg0, %0) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %3 = "stablehlo.compare"(%0, %0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %4 = "stablehlo.select"(%3, %0, %2) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %5 = "stablehlo.compare"(%arg0, %arg0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %6 = "stablehlo.select"(%5, %arg0, %4) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %7 = "stablehlo.compare"(%6, %arg0) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %8 = "stablehlo.select"(%7, %6, %arg0) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %9 = "stablehlo.compare"(%arg0, %arg0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %10 = "stablehlo.select"(%9, %arg0, %8) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %11 = "stablehlo.compare"(%6, %6) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %12 = "stablehlo.select"(%11, %6, %10) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %13 = "stablehlo.clamp"(%arg2, %arg2, %arg2) : (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    "func.return"(%12, %13) : (tensor<3xf32>, tensor<3xi32>) -> ()
  }
}
