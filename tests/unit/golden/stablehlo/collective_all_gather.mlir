module @collective_all_gather attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x")) -> (tensor<2x6xf32>) {
    %0 = "stablehlo.all_gather"(%arg0) {all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
    "func.return"(%0) : (tensor<2x6xf32>) -> ()
  }
}
