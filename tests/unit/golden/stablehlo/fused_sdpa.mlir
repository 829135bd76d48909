module @fused_sdpa attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x2x3x4xf32> loc("q"), %arg1: tensor<1x1x3x4xf32> loc("k")) -> (tensor<1x2x3x4xf32>) {
    %0 = "stablehlo.reshape"(%arg0) : (tensor<1x2x3x4xf32>) -> tensor<1x1x2x3x4xf32>
    %1 = "stablehlo.dot_general"(%0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [4], rhs_contracting_dimensions = [3]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x2x3x3xf32>
    %2 = "stablehlo.reshape"(%1) : (tensor<1x1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %3 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %5 = "stablehlo.multiply"(%2, %4) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %6 = "stablehlo.iota"() {iota_dimension = 2 : i64} : () -> tensor<1x1x3x3xi32>
    %7 = "stablehlo.iota"() {iota_dimension = 3 : i64} : () -> tensor<1x1x3x3xi32>
    %8 = "stablehlo.compare"(%7, %6) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<1x1x3x3xi32>, tensor<1x1x3x3xi32>) -> tensor<1x1x3x3xi1>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x1x3x3xi1>) -> tensor<1x2x3x3xi1>
    %10 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %11 = "stablehlo.broadcast_in_dim"(%10) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x3xf32>
    %12 = "stablehlo.select"(%9, %5, %11) : (tensor<1x2x3x3xi1>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %13 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %14 = "stablehlo.reduce"(%12, %13) ({
      ^bb0(%15: tensor<f32>, %16: tensor<f32>):
      %17 = "stablehlo.compare"(%15, %16) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %18 = "stablehlo.select"(%17, %15, %16) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %19 = "stablehlo.compare"(%16, %16) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %20 = "stablehlo.select"(%19, %16, %18) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %21 = "stablehlo.compare"(%15, %15) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %22 = "stablehlo.select"(%21, %15, %20) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%22) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %23 = "stablehlo.reshape"(%14) : (tensor<1x2x3xf32>) -> tensor<1x2x3x1xf32>
    %24 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %25 = "stablehlo.is_finite"(%23) : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xi1>
    %26 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %27 = "stablehlo.select"(%25, %23, %26) : (tensor<1x2x3x1xi1>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
    %28 = "stablehlo.broadcast_in_dim"(%27) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
    %29 = "stablehlo.subtract"(%12, %28) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %30 = "stablehlo.exponential"(%29) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %31 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %32 = "stablehlo.reduce"(%30, %31) ({
      ^bb0(%33: tensor<f32>, %34: tensor<f32>):
      %35 = "stablehlo.add"(%33, %34) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%35) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3xf32>
    %36 = "stablehlo.reshape"(%32) : (tensor<1x2x3xf32>) -> tensor<1x2x3x1xf32>
    %37 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %38 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %39 = "stablehlo.broadcast_in_dim"(%38) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %40 = "stablehlo.compare"(%36, %39) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xi1>
    %41 = "stablehlo.broadcast_in_dim"(%37) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<1x2x3x1xf32>
    %42 = "stablehlo.select"(%40, %41, %36) : (tensor<1x2x3x1xi1>, tensor<1x2x3x1xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
    %43 = "stablehlo.broadcast_in_dim"(%42) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
    %44 = "stablehlo.convert"(%30) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf64>
    %45 = "stablehlo.convert"(%43) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf64>
    %46 = "stablehlo.divide"(%44, %45) : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
    %47 = "stablehlo.convert"(%46) : (tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf32>
    %48 = "stablehlo.reshape"(%47) : (tensor<1x2x3x3xf32>) -> tensor<1x1x2x3x3xf32>
    %49 = "stablehlo.dot_general"(%48, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [4], rhs_contracting_dimensions = [2]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x1x2x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x2x3x4xf32>
    %50 = "stablehlo.reshape"(%49) : (tensor<1x1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    "func.return"(%50) : (tensor<1x2x3x4xf32>) -> ()
  }
}
