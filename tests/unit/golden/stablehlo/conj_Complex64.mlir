module @conj_Complex64 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xcomplex<f32>> loc("x")) -> (tensor<2x3xcomplex<f32>>) {
    %0 = "stablehlo.real"(%arg0) : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
    %1 = "stablehlo.imag"(%arg0) : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
    %2 = "stablehlo.negate"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "stablehlo.complex"(%0, %2) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xcomplex<f32>>
    "func.return"(%3) : (tensor<2x3xcomplex<f32>>) -> ()
  }
}
