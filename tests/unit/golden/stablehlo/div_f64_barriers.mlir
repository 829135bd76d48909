module @div_f64_barriers attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf64> loc("x"), %arg1: tensor<f64> loc("y")) -> (tensor<3xf64>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64>} : (tensor<f64>) -> tensor<3xf64>
    %1 = "stablehlo.optimization_barrier"(%0) : (tensor<3xf64>) -> tensor<3xf64>
    %2 = "stablehlo.divide"(%arg0, %1) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %3 = "stablehlo.optimization_barrier"(%2) : (tensor<3xf64>) -> tensor<3xf64>
    "func.return"(%3) : (tensor<3xf64>) -> ()
  }
}
