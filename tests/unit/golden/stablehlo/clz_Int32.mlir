module @clz_Int32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xi32> loc("x")) -> (tensor<2x3xi32>) {
    %0 = "stablehlo.count_leading_zeros"(%arg0) : (tensor<2x3xi32>) -> tensor<2x3xi32>
    "func.return"(%0) : (tensor<2x3xi32>) -> ()
  }
}
