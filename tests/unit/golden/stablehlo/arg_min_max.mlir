module @arg_min_max attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<4xui8> loc("k")) -> (tensor<2xi32>, tensor<i64>) {
    %0 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<2x3xi32>
    %1 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %3:2 = "stablehlo.reduce"(%arg0, %0, %1, %2) ({
      ^bb0(%4: tensor<f32>, %5: tensor<i32>, %6: tensor<f32>, %7: tensor<i32>):
      %8 = "stablehlo.compare"(%6, %4) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %9 = "stablehlo.compare"(%6, %4) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %10 = "stablehlo.compare"(%7, %5) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %11 = "stablehlo.and"(%9, %10) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %12 = "stablehlo.or"(%8, %11) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %13 = "stablehlo.compare"(%6, %6) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %14 = "stablehlo.compare"(%4, %4) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %15 = "stablehlo.not"(%14) : (tensor<i1>) -> tensor<i1>
      %16 = "stablehlo.and"(%13, %15) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %17 = "stablehlo.and"(%13, %14) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %18 = "stablehlo.and"(%17, %10) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %19 = "stablehlo.or"(%12, %16) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %20 = "stablehlo.or"(%19, %18) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %21 = "stablehlo.select"(%20, %6, %4) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %22 = "stablehlo.select"(%20, %7, %5) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%21, %22) : (tensor<f32>, tensor<i32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
    %23 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4xi64>
    %24 = "stablehlo.constant"() {value = dense<255> : tensor<ui8>} : () -> tensor<ui8>
    %25 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %26:2 = "stablehlo.reduce"(%arg1, %23, %24, %25) ({
      ^bb0(%27: tensor<ui8>, %28: tensor<i64>, %29: tensor<ui8>, %30: tensor<i64>):
      %31 = "stablehlo.compare"(%29, %27) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<ui8>, tensor<ui8>) -> tensor<i1>
      %32 = "stablehlo.compare"(%29, %27) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<ui8>, tensor<ui8>) -> tensor<i1>
      %33 = "stablehlo.compare"(%30, %28) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %34 = "stablehlo.and"(%32, %33) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %35 = "stablehlo.or"(%31, %34) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %36 = "stablehlo.select"(%35, %29, %27) : (tensor<i1>, tensor<ui8>, tensor<ui8>) -> tensor<ui8>
      %37 = "stablehlo.select"(%35, %30, %28) : (tensor<i1>, tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%36, %37) : (tensor<ui8>, tensor<i64>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xui8>, tensor<4xi64>, tensor<ui8>, tensor<i64>) -> (tensor<ui8>, tensor<i64>)
    "func.return"(%3#1, %26#1) : (tensor<2xi32>, tensor<i64>) -> ()
  }
}
