module @scalar_and_size_one_broadcast attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x1xf32> loc("x"), %arg1: tensor<1x3xf32> loc("y"), %arg2: tensor<f32> loc("s")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg0) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.multiply"(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x3xf32>
    %4 = "stablehlo.add"(%2, %3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%4) : (tensor<2x3xf32>) -> ()
  }
}
