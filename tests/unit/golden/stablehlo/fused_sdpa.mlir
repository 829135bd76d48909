module @fused_sdpa attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x2x3x4xf32> loc("q"), %arg1: tensor<1x1x3x4xf32> loc("k"), %arg2: tensor<3x3xi1> loc("mask")) -> (tensor<1x2x3x4xf32>) {
    %0 = "stablehlo.reshape"(%arg0) : (tensor<1x2x3x4xf32>) -> tensor<1x1x2x3x4xf32>
    %1 = "stablehlo.dot_general"(%0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [4], rhs_contracting_dimensions = [3]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x2x3x3xf32>
    %2 = "stablehlo.reshape"(%1) : (tensor<1x1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %3 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %5 = "stablehlo.multiply"(%2, %4) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %6 = "stablehlo.reshape"(%arg2) : (tensor<3x3xi1>) -> tensor<1x1x3x3xi1>
    %7 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x1x3x3xi1>) -> tensor<1x2x3x3xi1>
    %8 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %10 = "stablehlo.select"(%7, %5, %9) : (tensor<1x2x3x3xi1>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %11 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %12 = "stablehlo.reduce"(%10, %11) ({
      ^bb0(%13: tensor<f32>, %14: tensor<f32>):
      %15 = "stablehlo.bitcast_convert"(%13) : (tensor<f32>) -> tensor<i32>
      %16 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %17 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %18 = "stablehlo.compare"(%15, %16) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %19 = "stablehlo.xor"(%15, %17) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %20 = "stablehlo.select"(%18, %19, %15) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %21 = "stablehlo.bitcast_convert"(%14) : (tensor<f32>) -> tensor<i32>
      %22 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %23 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %24 = "stablehlo.compare"(%21, %22) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %25 = "stablehlo.xor"(%21, %23) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %26 = "stablehlo.select"(%24, %25, %21) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %27 = "stablehlo.compare"(%20, %26) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %28 = "stablehlo.select"(%27, %13, %14) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %29 = "stablehlo.compare"(%14, %14) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %30 = "stablehlo.select"(%29, %14, %28) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %31 = "stablehlo.compare"(%13, %13) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %32 = "stablehlo.select"(%31, %13, %30) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%32) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %33 = "stablehlo.reshape"(%12) : (tensor<1x2x3xf32>) -> tensor<1x2x3x1xf32>
    %34 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %35 = "stablehlo.is_finite"(%33) : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xi1>
    %36 = "stablehlo.broadcast_in_dim"(%34) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %37 = "stablehlo.select"(%35, %33, %36) : (tensor<1x2x3x1xi1>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
    %38 = "stablehlo.broadcast_in_dim"(%37) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
    %39 = "stablehlo.subtract"(%10, %38) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %40 = "stablehlo.exponential"(%39) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %41 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %42 = "stablehlo.reduce"(%40, %41) ({
      ^bb0(%43: tensor<f32>, %44: tensor<f32>):
      %45 = "stablehlo.add"(%43, %44) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%45) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %46 = "stablehlo.reshape"(%42) : (tensor<1x2x3xf32>) -> tensor<1x2x3x1xf32>
    %47 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %48 = "stablehlo.broadcast_in_dim"(%47) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %49 = "stablehlo.compare"(%46, %48) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xi1>
    %50 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %51 = "stablehlo.broadcast_in_dim"(%50) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %52 = "stablehlo.select"(%49, %51, %46) : (tensor<1x2x3x1xi1>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
    %53 = "stablehlo.broadcast_in_dim"(%52) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
    %54 = "stablehlo.convert"(%40) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf64>
    %55 = "stablehlo.convert"(%53) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf64>
    %56 = "stablehlo.divide"(%54, %55) : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
    %57 = "stablehlo.convert"(%56) : (tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf32>
    %58 = "stablehlo.reshape"(%57) : (tensor<1x2x3x3xf32>) -> tensor<1x1x2x3x3xf32>
    %59 = "stablehlo.dot_general"(%58, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [4], rhs_contracting_dimensions = [2]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x1x2x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x2x3x4xf32>
    %60 = "stablehlo.reshape"(%59) : (tensor<1x1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    "func.return"(%60) : (tensor<1x2x3x4xf32>) -> ()
  }
}
