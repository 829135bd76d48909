module @constant attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<2xi1>, tensor<0x2xf32>, tensor<f64>) {
    %0 = "stablehlo.constant"() {value = dense<[[1.5, -0.0], [1.0e+10, 3.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
    %1 = "stablehlo.constant"() {value = dense<[-1, 0, 9007199254740993]> : tensor<3xi64>} : () -> tensor<3xi64>
    %2 = "stablehlo.constant"() {value = dense<[true, false]> : tensor<2xi1>} : () -> tensor<2xi1>
    %3 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<0x2xf32>
    %5 = "stablehlo.constant"() {value = dense<0x7FF0000000000000> : tensor<f64>} : () -> tensor<f64>
    "func.return"(%0, %1, %2, %4, %5) : (tensor<2x2xf32>, tensor<3xi64>, tensor<2xi1>, tensor<0x2xf32>, tensor<f64>) -> ()
  }
}
