module @reduce_logical_and_Bool attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xi1> loc("x")) -> (tensor<2xi1>) {
    %0 = "stablehlo.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
    %1 = "stablehlo.reduce"(%arg0, %0) ({
      ^bb0(%2: tensor<i1>, %3: tensor<i1>):
      %4 = "stablehlo.and"(%2, %3) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%4) : (tensor<i1>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xi1>, tensor<i1>) -> tensor<2xi1>
    "func.return"(%1) : (tensor<2xi1>) -> ()
  }
}
