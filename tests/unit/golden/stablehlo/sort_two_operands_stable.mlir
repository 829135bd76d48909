module @sort_two_operands_stable attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32> loc("keys"), %arg1: tensor<2x4xi32> loc("vals")) -> (tensor<2x4xf32>, tensor<2x4xi32>) {
    %0:2 = "stablehlo.sort"(%arg0, %arg1) ({
      ^bb0(%1: tensor<f32>, %2: tensor<f32>, %3: tensor<i32>, %4: tensor<i32>):
      %5 = "stablehlo.compare"(%1, %2) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%5) : (tensor<i1>) -> ()
    }) {dimension = 1 : i64, is_stable = true} : (tensor<2x4xf32>, tensor<2x4xi32>) -> (tensor<2x4xf32>, tensor<2x4xi32>)
    "func.return"(%0#0, %0#1) : (tensor<2x4xf32>, tensor<2x4xi32>) -> ()
  }
}
