module @if_inside_while_body attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32> loc("n")) -> (tensor<i32>) {
    %0 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %1:2 = "stablehlo.while"(%0, %arg0) ({
      ^bb0(%2: tensor<i32>, %3: tensor<i32>):
      %4 = "stablehlo.compare"(%2, %3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%4) : (tensor<i1>) -> ()
    }, {
      ^bb0(%5: tensor<i32>, %6: tensor<i32>):
      %7 = "stablehlo.constant"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
      %8 = "stablehlo.compare"(%5, %7) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %9 = "stablehlo.if"(%8) ({
        %10 = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
        %11 = "stablehlo.add"(%5, %10) : (tensor<i32>, tensor<i32>) -> tensor<i32>
        "stablehlo.return"(%11) : (tensor<i32>) -> ()
      }, {
        %12 = "stablehlo.add"(%5, %5) : (tensor<i32>, tensor<i32>) -> tensor<i32>
        "stablehlo.return"(%12) : (tensor<i32>) -> ()
      }) : (tensor<i1>) -> tensor<i32>
      "stablehlo.return"(%9, %6) : (tensor<i32>, tensor<i32>) -> ()
    }) : (tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)
    "func.return"(%1#0) : (tensor<i32>) -> ()
  }
}
