module @logical_or_Bool attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xi1> loc("x"), %arg1: tensor<2x3xi1> loc("y")) -> (tensor<2x3xi1>) {
    %0 = "stablehlo.or"(%arg0, %arg1) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
    "func.return"(%0) : (tensor<2x3xi1>) -> ()
  }
}
