module @parameter attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32> loc("x"), %arg1: tensor<ui16> loc("y")) -> (tensor<2xf32>, tensor<ui16>) {
    "func.return"(%arg0, %arg1) : (tensor<2xf32>, tensor<ui16>) -> ()
  }
}
