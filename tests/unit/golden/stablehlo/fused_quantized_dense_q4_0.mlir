module @fused_quantized_dense_q4_0 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x32xf32> loc("x"), %arg1: tensor<3x18xui8> loc("w"), %arg2: tensor<3xf32> loc("bias")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.reshape"(%arg1) : (tensor<3x18xui8>) -> tensor<3x1x18xui8>
    %1 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 0, 2>, limit_indices = array<i64: 3, 1, 18>, strides = array<i64: 1, 1, 1>} : (tensor<3x1x18xui8>) -> tensor<3x1x16xui8>
    %2 = "stablehlo.constant"() {value = dense<15> : tensor<ui8>} : () -> tensor<ui8>
    %3 = "stablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i64>} : (tensor<ui8>) -> tensor<3x1x16xui8>
    %4 = "stablehlo.and"(%1, %3) : (tensor<3x1x16xui8>, tensor<3x1x16xui8>) -> tensor<3x1x16xui8>
    %5 = "stablehlo.constant"() {value = dense<4> : tensor<ui8>} : () -> tensor<ui8>
    %6 = "stablehlo.broadcast_in_dim"(%5) {broadcast_dimensions = array<i64>} : (tensor<ui8>) -> tensor<3x1x16xui8>
    %7 = "stablehlo.shift_right_logical"(%1, %6) : (tensor<3x1x16xui8>, tensor<3x1x16xui8>) -> tensor<3x1x16xui8>
    %8 = "stablehlo.concatenate"(%4, %7) {dimension = 2 : i64} : (tensor<3x1x16xui8>, tensor<3x1x16xui8>) -> tensor<3x1x32xui8>
    %9 = "stablehlo.slice"(%0) {start_indices = array<i64: 0, 0, 0>, limit_indices = array<i64: 3, 1, 2>, strides = array<i64: 1, 1, 1>} : (tensor<3x1x18xui8>) -> tensor<3x1x2xui8>
    %10 = "stablehlo.bitcast_convert"(%9) : (tensor<3x1x2xui8>) -> tensor<3x1xf16>
    %11 = "stablehlo.convert"(%10) : (tensor<3x1xf16>) -> tensor<3x1xf32>
    %12 = "stablehlo.reshape"(%11) : (tensor<3x1xf32>) -> tensor<3x1x1xf32>
    %13 = "stablehlo.constant"() {value = dense<8.0> : tensor<f32>} : () -> tensor<f32>
    %14 = "stablehlo.convert"(%8) : (tensor<3x1x32xui8>) -> tensor<3x1x32xf32>
    %15 = "stablehlo.broadcast_in_dim"(%13) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3x1x32xf32>
    %16 = "stablehlo.subtract"(%14, %15) : (tensor<3x1x32xf32>, tensor<3x1x32xf32>) -> tensor<3x1x32xf32>
    %17 = "stablehlo.broadcast_in_dim"(%12) {broadcast_dimensions = array<i64: 0, 1, 2>} : (tensor<3x1x1xf32>) -> tensor<3x1x32xf32>
    %18 = "stablehlo.multiply"(%16, %17) : (tensor<3x1x32xf32>, tensor<3x1x32xf32>) -> tensor<3x1x32xf32>
    %19 = "stablehlo.reshape"(%18) : (tensor<3x1x32xf32>) -> tensor<3x32xf32>
    %20 = "stablehlo.dot_general"(%arg0, %19) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x32xf32>, tensor<3x32xf32>) -> tensor<2x3xf32>
    %21 = "stablehlo.reshape"(%arg2) : (tensor<3xf32>) -> tensor<1x3xf32>
    %22 = "stablehlo.broadcast_in_dim"(%21) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %23 = "stablehlo.add"(%20, %22) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %24 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %25 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x3xf32>
    %26 = "stablehlo.bitcast_convert"(%23) : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %27 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %28 = "stablehlo.broadcast_in_dim"(%27) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x3xi32>
    %29 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %30 = "stablehlo.broadcast_in_dim"(%29) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x3xi32>
    %31 = "stablehlo.compare"(%26, %28) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
    %32 = "stablehlo.xor"(%26, %30) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %33 = "stablehlo.select"(%31, %32, %26) : (tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %34 = "stablehlo.bitcast_convert"(%25) : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %35 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %36 = "stablehlo.broadcast_in_dim"(%35) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x3xi32>
    %37 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %38 = "stablehlo.broadcast_in_dim"(%37) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x3xi32>
    %39 = "stablehlo.compare"(%34, %36) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
    %40 = "stablehlo.xor"(%34, %38) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %41 = "stablehlo.select"(%39, %40, %34) : (tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %42 = "stablehlo.compare"(%33, %41) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
    %43 = "stablehlo.select"(%42, %23, %25) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %44 = "stablehlo.compare"(%25, %25) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %45 = "stablehlo.select"(%44, %25, %43) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %46 = "stablehlo.compare"(%23, %23) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %47 = "stablehlo.select"(%46, %23, %45) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%47) : (tensor<2x3xf32>) -> ()
  }
}
