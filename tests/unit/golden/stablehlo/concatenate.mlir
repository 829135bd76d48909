module @concatenate attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x1xi32> loc("a"), %arg1: tensor<2x3xi32> loc("b"), %arg2: tensor<2x2xi32> loc("c")) -> (tensor<2x6xi32>) {
    %0 = "stablehlo.concatenate"(%arg0, %arg1, %arg2) {dimension = 1 : i64} : (tensor<2x1xi32>, tensor<2x3xi32>, tensor<2x2xi32>) -> tensor<2x6xi32>
    "func.return"(%0) : (tensor<2x6xi32>) -> ()
  }
}
