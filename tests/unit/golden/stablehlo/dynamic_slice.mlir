module @dynamic_slice attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x4xf32> loc("x"), %arg1: tensor<i32> loc("i"), %arg2: tensor<i32> loc("j")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.dynamic_slice"(%arg0, %arg1, %arg2) {slice_sizes = array<i64: 2, 3>} : (tensor<5x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    "func.return"(%0) : (tensor<2x3xf32>) -> ()
  }
}
