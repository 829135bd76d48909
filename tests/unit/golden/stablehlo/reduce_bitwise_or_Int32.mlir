module @reduce_bitwise_or_Int32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xi32> loc("x")) -> (tensor<2xi32>) {
    %0 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
      ^bb0(%2: tensor<i32>, %3: tensor<i32>):
      %4 = "stablehlo.or"(%2, %3) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%4) : (tensor<i32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>
    "func.return"(%1) : (tensor<2xi32>) -> ()
  }
}
