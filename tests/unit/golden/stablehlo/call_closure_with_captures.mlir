module @call_closure_with_captures attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<f32> loc("s")) -> (tensor<3xf32>) {
    %0 = "func.call"(%arg0, %arg1) {callee = @closure1} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }
  func.func private @closure1(%1: tensor<3xf32>, %2: tensor<f32>) -> (tensor<3xf32>) {
    %3 = "stablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %4 = "stablehlo.multiply"(%1, %3) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%4) : (tensor<3xf32>) -> ()
  }
}
