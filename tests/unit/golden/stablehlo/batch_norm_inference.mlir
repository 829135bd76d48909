module @batch_norm_inference attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xf32> loc("v")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.batch_norm_inference"(%arg0, %arg1, %arg1, %arg1, %arg1) {epsilon = 1.000000047e-03 : f32, feature_index = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    "func.return"(%0) : (tensor<2x3xf32>) -> ()
  }
}
