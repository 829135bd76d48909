module @reduce_max_f32_sum_c64_and_i8 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<2xcomplex<f32>> loc("z"), %arg2: tensor<4xi8> loc("k")) -> (tensor<f32>, tensor<complex<f32>>, tensor<i8>) {
    %0 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
      ^bb0(%2: tensor<f32>, %3: tensor<f32>):
      %4 = "stablehlo.bitcast_convert"(%2) : (tensor<f32>) -> tensor<i32>
      %5 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %6 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %7 = "stablehlo.compare"(%4, %5) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %8 = "stablehlo.xor"(%4, %6) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %9 = "stablehlo.select"(%7, %8, %4) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %10 = "stablehlo.bitcast_convert"(%3) : (tensor<f32>) -> tensor<i32>
      %11 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %12 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %13 = "stablehlo.compare"(%10, %11) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %14 = "stablehlo.xor"(%10, %12) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %15 = "stablehlo.select"(%13, %14, %10) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %16 = "stablehlo.compare"(%9, %15) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %17 = "stablehlo.select"(%16, %2, %3) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %18 = "stablehlo.compare"(%3, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %19 = "stablehlo.select"(%18, %3, %17) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %20 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %21 = "stablehlo.select"(%20, %2, %19) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%21) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    %22 = "stablehlo.constant"() {value = dense<(0.0, 0.0)> : tensor<complex<f32>>} : () -> tensor<complex<f32>>
    %23 = "stablehlo.reduce"(%arg1, %22) ({
      ^bb0(%24: tensor<complex<f32>>, %25: tensor<complex<f32>>):
      %26 = "stablehlo.add"(%24, %25) : (tensor<complex<f32>>, tensor<complex<f32>>) -> tensor<complex<f32>>
      "stablehlo.return"(%26) : (tensor<complex<f32>>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xcomplex<f32>>, tensor<complex<f32>>) -> tensor<complex<f32>>
    %27 = "stablehlo.constant"() {value = dense<1> : tensor<i8>} : () -> tensor<i8>
    %28 = "stablehlo.reduce"(%arg2, %27) ({
      ^bb0(%29: tensor<i8>, %30: tensor<i8>):
      %31 = "stablehlo.multiply"(%29, %30) : (tensor<i8>, tensor<i8>) -> tensor<i8>
      "stablehlo.return"(%31) : (tensor<i8>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xi8>, tensor<i8>) -> tensor<i8>
    "func.return"(%1, %23, %28) : (tensor<f32>, tensor<complex<f32>>, tensor<i8>) -> ()
  }
}
