module @div_i32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xi32> loc("x"), %arg1: tensor<3xi32> loc("y")) -> (tensor<3xi32>) {
    %0 = "stablehlo.divide"(%arg0, %arg1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    "func.return"(%0) : (tensor<3xi32>) -> ()
  }
}
