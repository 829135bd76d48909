module @collective_permute_ring attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x")) -> (tensor<3xf32>) {
    %0 = "stablehlo.collective_permute"(%arg0) {source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }
}
