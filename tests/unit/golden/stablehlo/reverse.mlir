module @reverse attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x4xf32> loc("x")) -> (tensor<2x3x4xf32>) {
    %0 = "stablehlo.reverse"(%arg0) {dimensions = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    "func.return"(%0) : (tensor<2x3x4xf32>) -> ()
  }
}
