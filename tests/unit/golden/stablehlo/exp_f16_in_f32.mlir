module @exp_f16_in_f32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf16> loc("x")) -> (tensor<3xf16>) {
    %0 = "stablehlo.convert"(%arg0) : (tensor<3xf16>) -> tensor<3xf32>
    %1 = "stablehlo.exponential"(%0) : (tensor<3xf32>) -> tensor<3xf32>
    %2 = "stablehlo.convert"(%1) : (tensor<3xf32>) -> tensor<3xf16>
    "func.return"(%2) : (tensor<3xf16>) -> ()
  }
}
