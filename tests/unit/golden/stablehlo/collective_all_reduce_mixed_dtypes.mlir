module @collective_all_reduce_mixed_dtypes attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2xf32> loc("x"), %arg1: tensor<3xi32> loc("y"), %arg2: tensor<2x2xf32> loc("z"), %arg3: tensor<2xbf16> loc("w")) -> (tensor<2xf32>, tensor<3xi32>, tensor<2x2xf32>, tensor<2xbf16>) {
    %0:2 = "stablehlo.all_reduce"(%arg0, %arg2) ({
      ^bb0(%1: tensor<f32>, %2: tensor<f32>):
      %3 = "stablehlo.add"(%1, %2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%3) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>, tensor<2x2xf32>) -> (tensor<2xf32>, tensor<2x2xf32>)
    %4 = "stablehlo.all_reduce"(%arg1) ({
      ^bb0(%5: tensor<i32>, %6: tensor<i32>):
      %7 = "stablehlo.add"(%5, %6) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%7) : (tensor<i32>) -> ()
    }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<3xi32>) -> tensor<3xi32>
    %8 = "stablehlo.convert"(%arg3) : (tensor<2xbf16>) -> tensor<2xf32>
    %9 = "stablehlo.all_reduce"(%8) ({
      ^bb0(%10: tensor<f32>, %11: tensor<f32>):
      %12 = "stablehlo.add"(%10, %11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%12) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    %13 = "stablehlo.convert"(%9) : (tensor<2xf32>) -> tensor<2xbf16>
    "func.return"(%0#0, %4, %0#1, %13) : (tensor<2xf32>, tensor<3xi32>, tensor<2x2xf32>, tensor<2xbf16>) -> ()
  }
}
