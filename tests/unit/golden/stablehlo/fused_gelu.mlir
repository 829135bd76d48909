module @fused_gelu attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x")) -> (tensor<3xf32>, tensor<3xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %2 = "stablehlo.multiply"(%arg0, %1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %3 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.constant"() {value = dense<0.707106769> : tensor<f32>} : () -> tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %6 = "stablehlo.multiply"(%arg0, %5) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %7 = "chlo.erf"(%6) : (tensor<3xf32>) -> tensor<3xf32>
    %8 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %9 = "stablehlo.add"(%8, %7) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %10 = "stablehlo.multiply"(%2, %9) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %11 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %12 = "stablehlo.broadcast_in_dim"(%11) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %13 = "stablehlo.multiply"(%arg0, %12) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %14 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %15 = "stablehlo.multiply"(%arg0, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %16 = "stablehlo.multiply"(%arg0, %15) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %17 = "stablehlo.constant"() {value = dense<0.0447149985> : tensor<f32>} : () -> tensor<f32>
    %18 = "stablehlo.broadcast_in_dim"(%17) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %19 = "stablehlo.multiply"(%16, %18) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %20 = "stablehlo.add"(%arg0, %19) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %21 = "stablehlo.constant"() {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
    %22 = "stablehlo.broadcast_in_dim"(%21) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %23 = "stablehlo.multiply"(%20, %22) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %24 = "stablehlo.tanh"(%23) : (tensor<3xf32>) -> tensor<3xf32>
    %25 = "stablehlo.broadcast_in_dim"(%14) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %26 = "stablehlo.add"(%25, %24) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %27 = "stablehlo.multiply"(%13, %26) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%10, %27) : (tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
