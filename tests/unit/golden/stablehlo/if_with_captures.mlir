module @if_with_captures attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32> loc("n")) -> (tensor<i32>) {
    %0 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %1 = "stablehlo.compare"(%arg0, %0) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = "stablehlo.if"(%1) ({
      %3 = "stablehlo.multiply"(%arg0, %arg0) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%3) : (tensor<i32>) -> ()
    }, {
      %4 = "stablehlo.negate"(%arg0) : (tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%4) : (tensor<i32>) -> ()
    }) : (tensor<i1>) -> tensor<i32>
    "func.return"(%2) : (tensor<i32>) -> ()
  }
}
