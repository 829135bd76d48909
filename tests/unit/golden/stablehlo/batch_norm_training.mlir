module @batch_norm_training attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xf32> loc("v")) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
    %0 = "stablehlo.slice"(%arg0) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 1, 3>, strides = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
    %1 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.subtract"(%arg0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "stablehlo.reshape"(%0) : (tensor<1x3xf32>) -> tensor<3xf32>
    %4:3 = "stablehlo.batch_norm_training"(%2, %arg1, %arg1) {epsilon = 1.000000047e-03 : f32, feature_index = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
    %5 = "stablehlo.add"(%4#1, %3) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%4#0, %5, %4#2) : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
