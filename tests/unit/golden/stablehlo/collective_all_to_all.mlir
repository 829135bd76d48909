module @collective_all_to_all attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32> loc("x")) -> (tensor<8x1xf32>) {
    %0 = "stablehlo.all_to_all"(%arg0) {concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, split_dimension = 1 : i64} : (tensor<2x4xf32>) -> tensor<8x1xf32>
    "func.return"(%0) : (tensor<8x1xf32>) -> ()
  }
}
