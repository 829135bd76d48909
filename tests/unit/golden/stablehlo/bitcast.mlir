module @bitcast attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<3xi1> loc("p"), %arg2: tensor<3x2xui8> loc("u")) -> (tensor<3xui32>, tensor<3x4xui8>, tensor<3xui8>, tensor<3xi16>) {
    %0 = "stablehlo.bitcast_convert"(%arg0) : (tensor<3xf32>) -> tensor<3xui32>
    %1 = "stablehlo.bitcast_convert"(%arg0) : (tensor<3xf32>) -> tensor<3x4xui8>
    %2 = "stablehlo.convert"(%arg1) : (tensor<3xi1>) -> tensor<3xui8>
    %3 = "stablehlo.bitcast_convert"(%arg2) : (tensor<3x2xui8>) -> tensor<3xi16>
    "func.return"(%0, %1, %2, %3) : (tensor<3xui32>, tensor<3x4xui8>, tensor<3xui8>, tensor<3xi16>) -> ()
  }
}
