module @scatter_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x3xf32> loc("x"), %arg1: tensor<2x1xi32> loc("idx"), %arg2: tensor<2x3xf32> loc("upd")) -> (tensor<5x3xf32>) {
    %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) ({
      ^bb0(%1: tensor<f32>, %2: tensor<f32>):
      %3 = "stablehlo.add"(%1, %2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%3) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<5x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<5x3xf32>
    "func.return"(%0) : (tensor<5x3xf32>) -> ()
  }
}
