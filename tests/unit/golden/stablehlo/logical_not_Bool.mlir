module @logical_not_Bool attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xi1> loc("x")) -> (tensor<2x3xi1>) {
    %0 = "stablehlo.not"(%arg0) : (tensor<2x3xi1>) -> tensor<2x3xi1>
    "func.return"(%0) : (tensor<2x3xi1>) -> ()
  }
}
