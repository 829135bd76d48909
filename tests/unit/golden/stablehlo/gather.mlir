module @gather attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x4x3xf32> loc("x"), %arg1: tensor<2x2x2xi32> loc("idx")) -> (tensor<2x2x2x3xf32>) {
    %0 = "stablehlo.gather"(%arg0, %arg1) {dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 2, 3>, indices_are_sorted = false} : (tensor<5x4x3xf32>, tensor<2x2x2xi32>) -> tensor<2x2x2x3xf32>
    "func.return"(%0) : (tensor<2x2x2x3xf32>) -> ()
  }
}
