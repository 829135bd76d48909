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
      %15 = "stablehlo.compare"(%13, %14) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %16 = "stablehlo.select"(%15, %13, %14) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %17 = "stablehlo.compare"(%14, %14) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %18 = "stablehlo.select"(%17, %14, %16) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %19 = "stablehlo.compare"(%13, %13) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %20 = "stablehlo.select"(%19, %13, %18) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%20) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %21 = "stablehlo.reshape"(%12) : (tensor<1x2x3xf32>) -> tensor<1x2x3x1xf32>
    %22 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %23 = "stablehlo.is_finite"(%21) : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xi1>
    %24 = "stablehlo.broadcast_in_dim"(%22) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %25 = "stablehlo.select"(%23, %21, %24) : (tensor<1x2x3x1xi1>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
    %26 = "stablehlo.broadcast_in_dim"(%25) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
    %27 = "stablehlo.subtract"(%10, %26) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %28 = "stablehlo.exponential"(%27) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %29 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %30 = "stablehlo.reduce"(%28, %29) ({
      ^bb0(%31: tensor<f32>, %32: tensor<f32>):
      %33 = "stablehlo.add"(%31, %32) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%33) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %34 = "stablehlo.reshape"(%30) : (tensor<1x2x3xf32>) -> tensor<1x2x3x1xf32>
    %35 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %36 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %37 = "stablehlo.broadcast_in_dim"(%36) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %38 = "stablehlo.compare"(%34, %37) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xi1>
    %39 = "stablehlo.broadcast_in_dim"(%35) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %40 = "stablehlo.select"(%38, %39, %34) : (tensor<1x2x3x1xi1>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
    %41 = "stablehlo.broadcast_in_dim"(%40) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
    %42 = "stablehlo.convert"(%28) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf64>
    %43 = "stablehlo.convert"(%41) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf64>
    %44 = "stablehlo.divide"(%42, %43) : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
    %45 = "stablehlo.convert"(%44) : (tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf32>
    %46 = "stablehlo.reshape"(%45) : (tensor<1x2x3x3xf32>) -> tensor<1x1x2x3x3xf32>
    %47 = "stablehlo.dot_general"(%46, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [4], rhs_contracting_dimensions = [2]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x1x2x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x2x3x4xf32>
    %48 = "stablehlo.reshape"(%47) : (tensor<1x1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    "func.return"(%48) : (tensor<1x2x3x4xf32>) -> ()
  }
}
