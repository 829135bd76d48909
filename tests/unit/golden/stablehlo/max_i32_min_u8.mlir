module @max_i32_min_u8 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xi32> loc("x"), %arg1: tensor<3xui8> loc("y")) -> (tensor<3xi32>, tensor<3xui8>) {
    %0 = "stablehlo.maximum"(%arg0, %arg0) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %1 = "stablehlo.minimum"(%arg1, %arg1) : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
    "func.return"(%0, %1) : (tensor<3xi32>, tensor<3xui8>) -> ()
  }
}
