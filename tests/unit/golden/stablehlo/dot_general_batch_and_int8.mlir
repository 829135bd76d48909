module @dot_general_batch_and_int8 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x4xf32> loc("a"), %arg1: tensor<2x4x5xf32> loc("b"), %arg2: tensor<2x3xi8> loc("qa"), %arg3: tensor<3x4xi8> loc("qb")) -> (tensor<2x3x5xf32>, tensor<2x4xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    %1 = "stablehlo.convert"(%arg2) : (tensor<2x3xi8>) -> tensor<2x3xi32>
    %2 = "stablehlo.convert"(%arg3) : (tensor<3x4xi8>) -> tensor<3x4xi32>
    %3 = "stablehlo.dot_general"(%1, %2) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
    %4 = "stablehlo.convert"(%3) : (tensor<2x4xi32>) -> tensor<2x4xf32>
    "func.return"(%0, %4) : (tensor<2x3x5xf32>, tensor<2x4xf32>) -> ()
  }
}
