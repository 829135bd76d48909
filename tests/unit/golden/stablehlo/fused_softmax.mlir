module @fused_softmax attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x")) -> (tensor<2x3xf32>) {
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
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %10 = "stablehlo.reshape"(%1) : (tensor<2xf32>) -> tensor<2x1xf32>
    %11 = "stablehlo.broadcast_in_dim"(%10) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %12 = "stablehlo.subtract"(%arg0, %11) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %13 = "stablehlo.exponential"(%12) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %14 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %15 = "stablehlo.reduce"(%13, %14) ({
      ^bb0(%16: tensor<f32>, %17: tensor<f32>):
      %18 = "stablehlo.add"(%16, %17) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%18) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %19 = "stablehlo.reshape"(%15) : (tensor<2xf32>) -> tensor<2x1xf32>
    %20 = "stablehlo.broadcast_in_dim"(%19) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %21 = "stablehlo.convert"(%13) : (tensor<2x3xf32>) -> tensor<2x3xf64>
    %22 = "stablehlo.convert"(%20) : (tensor<2x3xf32>) -> tensor<2x3xf64>
    %23 = "stablehlo.divide"(%21, %22) : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    %24 = "stablehlo.convert"(%23) : (tensor<2x3xf64>) -> tensor<2x3xf32>
    "func.return"(%24) : (tensor<2x3xf32>) -> ()
  }
}
