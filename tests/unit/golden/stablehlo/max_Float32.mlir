module @max_Float32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<2x3xf32> loc("y")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.compare"(%arg0, %arg1) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %1 = "stablehlo.select"(%0, %arg0, %arg1) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.compare"(%arg1, %arg1) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %3 = "stablehlo.select"(%2, %arg1, %1) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %4 = "stablehlo.compare"(%arg0, %arg0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %5 = "stablehlo.select"(%4, %arg0, %3) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%5) : (tensor<2x3xf32>) -> ()
  }
}
