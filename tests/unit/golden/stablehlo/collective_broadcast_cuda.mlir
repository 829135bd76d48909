module @collective_broadcast_cuda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2xf32> loc("x")) -> (tensor<2xf32>) {
    %0 = "stablehlo.collective_broadcast"(%arg0) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }
}
