module @atan2_bf16_in_f32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xbf16> loc("x")) -> (tensor<3xbf16>) {
    %0 = "stablehlo.convert"(%arg0) : (tensor<3xbf16>) -> tensor<3xf32>
    %1 = "stablehlo.convert"(%arg0) : (tensor<3xbf16>) -> tensor<3xf32>
    %2 = "stablehlo.atan2"(%0, %1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %3 = "stablehlo.convert"(%2) : (tensor<3xf32>) -> tensor<3xbf16>
    "func.return"(%3) : (tensor<3xbf16>) -> ()
  }
}
