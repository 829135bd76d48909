module @convert_dtype attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<3xcomplex<f32>> loc("z"), %arg2: tensor<3xf64> loc("d"), %arg3: tensor<3xi64> loc("w")) -> (tensor<3xi32>, tensor<3xi1>, tensor<3xf32>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xcomplex<f32>>) {
    %0 = "stablehlo.convert"(%arg0) : (tensor<3xf32>) -> tensor<3xi32>
    %1 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %3 = "stablehlo.compare"(%arg0, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %4 = "stablehlo.real"(%arg1) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %5 = "stablehlo.convert"(%arg2) : (tensor<3xf64>) -> tensor<3xf32>
    %6 = "stablehlo.convert"(%5) : (tensor<3xf32>) -> tensor<3xf64>
    %7 = "stablehlo.subtract"(%arg2, %6) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %8 = "stablehlo.constant"() {value = dense<0.0> : tensor<f64>} : () -> tensor<f64>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64>} : (tensor<f64>) -> tensor<3xf64>
    %10 = "stablehlo.compare"(%7, %9) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
    %11 = "stablehlo.multiply"(%7, %6) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %12 = "stablehlo.compare"(%11, %9) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
    %13 = "stablehlo.bitcast_convert"(%5) : (tensor<3xf32>) -> tensor<3xui32>
    %14 = "stablehlo.constant"() {value = dense<65535> : tensor<ui32>} : () -> tensor<ui32>
    %15 = "stablehlo.broadcast_in_dim"(%14) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<3xui32>
    %16 = "stablehlo.constant"() {value = dense<32768> : tensor<ui32>} : () -> tensor<ui32>
    %17 = "stablehlo.broadcast_in_dim"(%16) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<3xui32>
    %18 = "stablehlo.constant"() {value = dense<1> : tensor<ui32>} : () -> tensor<ui32>
    %19 = "stablehlo.broadcast_in_dim"(%18) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<3xui32>
    %20 = "stablehlo.and"(%13, %15) : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %21 = "stablehlo.compare"(%20, %17) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xi1>
    %22 = "stablehlo.and"(%21, %10) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %23 = "stablehlo.add"(%13, %19) : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %24 = "stablehlo.subtract"(%13, %19) : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %25 = "stablehlo.select"(%12, %23, %24) : (tensor<3xi1>, tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %26 = "stablehlo.select"(%22, %25, %13) : (tensor<3xi1>, tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %27 = "stablehlo.bitcast_convert"(%26) : (tensor<3xui32>) -> tensor<3xf32>
    %28 = "stablehlo.convert"(%27) : (tensor<3xf32>) -> tensor<3xbf16>
    %29 = "stablehlo.convert"(%arg3) : (tensor<3xi64>) -> tensor<3xf64>
    %30 = "stablehlo.convert"(%29) : (tensor<3xf64>) -> tensor<3xf32>
    %31 = "stablehlo.convert"(%30) : (tensor<3xf32>) -> tensor<3xf64>
    %32 = "stablehlo.subtract"(%29, %31) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %33 = "stablehlo.constant"() {value = dense<0.0> : tensor<f64>} : () -> tensor<f64>
    %34 = "stablehlo.broadcast_in_dim"(%33) {broadcast_dimensions = array<i64>} : (tensor<f64>) -> tensor<3xf64>
    %35 = "stablehlo.compare"(%32, %34) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
    %36 = "stablehlo.multiply"(%32, %31) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %37 = "stablehlo.compare"(%36, %34) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
    %38 = "stablehlo.bitcast_convert"(%30) : (tensor<3xf32>) -> tensor<3xui32>
    %39 = "stablehlo.constant"() {value = dense<65535> : tensor<ui32>} : () -> tensor<ui32>
    %40 = "stablehlo.broadcast_in_dim"(%39) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<3xui32>
    %41 = "stablehlo.constant"() {value = dense<32768> : tensor<ui32>} : () -> tensor<ui32>
    %42 = "stablehlo.broadcast_in_dim"(%41) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<3xui32>
    %43 = "stablehlo.constant"() {value = dense<1> : tensor<ui32>} : () -> tensor<ui32>
    %44 = "stablehlo.broadcast_in_dim"(%43) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<3xui32>
    %45 = "stablehlo.and"(%38, %40) : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %46 = "stablehlo.compare"(%45, %42) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xi1>
    %47 = "stablehlo.and"(%46, %35) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %48 = "stablehlo.add"(%38, %44) : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %49 = "stablehlo.subtract"(%38, %44) : (tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %50 = "stablehlo.select"(%37, %48, %49) : (tensor<3xi1>, tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %51 = "stablehlo.select"(%47, %50, %38) : (tensor<3xi1>, tensor<3xui32>, tensor<3xui32>) -> tensor<3xui32>
    %52 = "stablehlo.bitcast_convert"(%51) : (tensor<3xui32>) -> tensor<3xf32>
    %53 = "stablehlo.convert"(%52) : (tensor<3xf32>) -> tensor<3xbf16>
    %54 = "stablehlo.convert"(%arg0) : (tensor<3xf32>) -> tensor<3xcomplex<f32>>
    "func.return"(%0, %3, %4, %28, %53, %54) : (tensor<3xi32>, tensor<3xi1>, tensor<3xf32>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xcomplex<f32>>) -> ()
  }
}
