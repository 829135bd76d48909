module @fused_layer_norm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("gamma"), %arg1: tensor<2x3xf32> loc("x")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.333333343> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.reduce"(%arg1, %1) ({
      ^bb0(%3: tensor<f32>, %4: tensor<f32>):
      %5 = "stablehlo.add"(%3, %4) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%5) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %6 = "stablehlo.reshape"(%2) : (tensor<2xf32>) -> tensor<2x1xf32>
    %7 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %8 = "stablehlo.multiply"(%6, %7) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %10 = "stablehlo.subtract"(%arg1, %9) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %11 = "stablehlo.multiply"(%10, %10) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %12 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %13 = "stablehlo.reduce"(%11, %12) ({
      ^bb0(%14: tensor<f32>, %15: tensor<f32>):
      %16 = "stablehlo.add"(%14, %15) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%16) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %17 = "stablehlo.reshape"(%13) : (tensor<2xf32>) -> tensor<2x1xf32>
    %18 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %19 = "stablehlo.multiply"(%17, %18) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %20 = "stablehlo.constant"() {value = dense<9.99999975e-06> : tensor<f32>} : () -> tensor<f32>
    %21 = "stablehlo.broadcast_in_dim"(%20) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %22 = "stablehlo.add"(%19, %21) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %23 = "stablehlo.rsqrt"(%22) : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %24 = "stablehlo.broadcast_in_dim"(%23) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %25 = "stablehlo.multiply"(%10, %24) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %26 = "stablehlo.reshape"(%arg0) : (tensor<3xf32>) -> tensor<1x3xf32>
    %27 = "stablehlo.broadcast_in_dim"(%26) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %28 = "stablehlo.multiply"(%25, %27) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %29 = "stablehlo.reshape"(%arg0) : (tensor<3xf32>) -> tensor<1x3xf32>
    %30 = "stablehlo.broadcast_in_dim"(%29) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %31 = "stablehlo.add"(%28, %30) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%31) : (tensor<2x3xf32>) -> ()
  }
}
