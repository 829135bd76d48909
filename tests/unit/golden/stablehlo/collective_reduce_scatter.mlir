module @collective_reduce_scatter attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<4x3xi32> loc("x")) -> (tensor<2x3xi32>) {
    %0 = "stablehlo.reduce_scatter"(%arg0) ({
      ^bb0(%1: tensor<i32>, %2: tensor<i32>):
      %3 = "stablehlo.add"(%1, %2) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%3) : (tensor<i32>) -> ()
    }) {replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, scatter_dimension = 0 : i64} : (tensor<4x3xi32>) -> tensor<2x3xi32>
    "func.return"(%0) : (tensor<2x3xi32>) -> ()
  }
}
