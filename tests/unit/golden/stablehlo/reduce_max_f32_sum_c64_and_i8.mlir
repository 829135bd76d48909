module @reduce_max_f32_sum_c64_and_i8 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<2xcomplex<f32>> loc("z"), %arg2: tensor<4xi8> loc("k")) -> (tensor<f32>, tensor<complex<f32>>, tensor<i8>) {
    %0 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.compare"(%2, %3) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = "stablehlo.select"(%4, %2, %3) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %6 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %7 = "stablehlo.select"(%6, %3, %5) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %8 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %9 = "stablehlo.select"(%8, %2, %7) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%9) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    %10 = "stablehlo.constant"() {value = dense<(0.0, 0.0)> : tensor<complex<f32>>} : () -> tensor<complex<f32>>
    %11 = "stablehlo.reduce"(%arg1, %10) ({
      ^bb0(%12: tensor<complex<f32>>, %13: tensor<complex<f32>>):
      %14 = "stablehlo.add"(%12, %13) : (tensor<complex<f32>>, tensor<complex<f32>>) -> tensor<complex<f32>>
      "stablehlo.return"(%14) : (tensor<complex<f32>>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xcomplex<f32>>, tensor<complex<f32>>) -> tensor<complex<f32>>
    %15 = "stablehlo.constant"() {value = dense<1> : tensor<i8>} : () -> tensor<i8>
    %16 = "stablehlo.reduce"(%arg2, %15) ({
      ^bb0(%17: tensor<i8>, %18: tensor<i8>):
      %19 = "stablehlo.multiply"(%17, %18) : (tensor<i8>, tensor<i8>) -> tensor<i8>
      "stablehlo.return"(%19) : (tensor<i8>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xi8>, tensor<i8>) -> tensor<i8>
    "func.return"(%1, %11, %16) : (tensor<f32>, tensor<complex<f32>>, tensor<i8>) -> ()
  }
}
