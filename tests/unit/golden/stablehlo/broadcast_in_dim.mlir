module @broadcast_in_dim attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x1xf32> loc("x")) -> (tensor<2x3x4xf32>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg0) {broadcast_dimensions = array<i64: 1, 2>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
    "func.return"(%0) : (tensor<2x3x4xf32>) -> ()
  }
}
