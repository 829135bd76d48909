module @collective_all_reduce_types attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2xf32> loc("x"), %arg1: tensor<2xi8> loc("y")) -> (tensor<2xf32>, tensor<2xi8>, tensor<2xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) ({
      ^bb0(%1: tensor<f32>, %2: tensor<f32>):
      %3 = "stablehlo.maximum"(%1, %2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%3) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    %4 = "stablehlo.all_reduce"(%arg1) ({
      ^bb0(%5: tensor<i8>, %6: tensor<i8>):
      %7 = "stablehlo.minimum"(%5, %6) : (tensor<i8>, tensor<i8>) -> tensor<i8>
      "stablehlo.return"(%7) : (tensor<i8>) -> ()
    }) {replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (tensor<2xi8>) -> tensor<2xi8>
    %8 = "stablehlo.all_reduce"(%arg0) ({
      ^bb0(%9: tensor<f32>, %10: tensor<f32>):
      %11 = "stablehlo.multiply"(%9, %10) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%11) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0, %4, %8) : (tensor<2xf32>, tensor<2xi8>, tensor<2xf32>) -> ()
  }
}
