module @div_f32_in_f64 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<3xf32> loc("y")) -> (tensor<3xf32>) {
    %0 = "stablehlo.convert"(%arg0) : (tensor<3xf32>) -> tensor<3xf64>
    %1 = "stablehlo.convert"(%arg1) : (tensor<3xf32>) -> tensor<3xf64>
    %2 = "stablehlo.divide"(%0, %1) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %3 = "stablehlo.convert"(%2) : (tensor<3xf64>) -> tensor<3xf32>
    "func.return"(%3) : (tensor<3xf32>) -> ()
  }
}
