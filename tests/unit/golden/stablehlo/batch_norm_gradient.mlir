module @batch_norm_gradient attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xf32> loc("v")) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
    %0:3 = "stablehlo.batch_norm_grad"(%arg0, %arg1, %arg1, %arg1, %arg0) {epsilon = 1.000000047e-03 : f32, feature_index = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
    "func.return"(%0#0, %0#1, %0#2) : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
