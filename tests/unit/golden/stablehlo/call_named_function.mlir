module @call_named_function attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x")) -> (tensor<3xf32>) {
    %0 = "func.call"(%arg0) {callee = @fn1_scale_by_two} : (tensor<3xf32>) -> tensor<3xf32>
    %1 = "func.call"(%0) {callee = @fn1_scale_by_two} : (tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%1) : (tensor<3xf32>) -> ()
  }
  func.func private @fn1_scale_by_two(%2: tensor<3xf32>) -> (tensor<3xf32>) {
    %3 = "stablehlo.add"(%2, %2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%3) : (tensor<3xf32>) -> ()
  }
}
