module @scheduling_barrier attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<i32> loc("dep")) -> (tensor<3xf32>) {
    %0:2 = "stablehlo.optimization_barrier"(%arg0, %arg1) : (tensor<3xf32>, tensor<i32>) -> (tensor<3xf32>, tensor<i32>)
    "func.return"(%0#0) : (tensor<3xf32>) -> ()
  }
}
