module @dynamic_update_slice attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x4xf32> loc("x"), %arg1: tensor<2x3xf32> loc("u"), %arg2: tensor<i64> loc("i"), %arg3: tensor<i64> loc("j")) -> (tensor<5x4xf32>) {
    %0 = "stablehlo.dynamic_update_slice"(%arg0, %arg1, %arg2, %arg3) : (tensor<5x4xf32>, tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<5x4xf32>
    "func.return"(%0) : (tensor<5x4xf32>) -> ()
  }
}
