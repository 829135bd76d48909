module @while_with_captures attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32> loc("limit"), %arg1: tensor<2xf32> loc("acc")) -> (tensor<2xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.0> : tensor<20xf32>} : () -> tensor<20xf32>
    %1 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %3:4 = "stablehlo.while"(%2, %arg1, %arg0, %0) ({
      ^bb0(%4: tensor<i32>, %5: tensor<2xf32>, %6: tensor<i32>, %7: tensor<20xf32>):
      %8 = "stablehlo.compare"(%4, %6) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%8) : (tensor<i1>) -> ()
    }, {
      ^bb0(%9: tensor<i32>, %10: tensor<2xf32>, %11: tensor<i32>, %12: tensor<20xf32>):
      %13 = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
      %14 = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
      %15 = "stablehlo.add"(%9, %14) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %16 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
      %17 = "stablehlo.reduce"(%12, %16) ({
        ^bb0(%18: tensor<f32>, %19: tensor<f32>):
        %20 = "stablehlo.add"(%18, %19) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%20) : (tensor<f32>) -> ()
      }) {dimensions = array<i64: 0>} : (tensor<20xf32>, tensor<f32>) -> tensor<f32>
      %21 = "stablehlo.add"(%13, %17) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      %22 = "stablehlo.broadcast_in_dim"(%21) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
      %23 = "stablehlo.add"(%10, %22) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      "stablehlo.return"(%15, %23, %11, %12) : (tensor<i32>, tensor<2xf32>, tensor<i32>, tensor<20xf32>) -> ()
    }) : (tensor<i32>, tensor<2xf32>, tensor<i32>, tensor<20xf32>) -> (tensor<i32>, tensor<2xf32>, tensor<i32>, tensor<20xf32>)
    "func.return"(%3#1) : (tensor<2xf32>) -> ()
  }
}
