module @scatter_min attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x3xf32> loc("x"), %arg1: tensor<2x1xi32> loc("idx"), %arg2: tensor<2x3xf32> loc("upd")) -> (tensor<5x3xf32>) {
    %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) ({
      ^bb0(%1: tensor<f32>, %2: tensor<f32>):
      %3 = "stablehlo.bitcast_convert"(%1) : (tensor<f32>) -> tensor<i32>
      %4 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %5 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %6 = "stablehlo.compare"(%3, %4) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = "stablehlo.xor"(%3, %5) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %8 = "stablehlo.select"(%6, %7, %3) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %9 = "stablehlo.bitcast_convert"(%2) : (tensor<f32>) -> tensor<i32>
      %10 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %11 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %12 = "stablehlo.compare"(%9, %10) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %13 = "stablehlo.xor"(%9, %11) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %14 = "stablehlo.select"(%12, %13, %9) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %15 = "stablehlo.compare"(%8, %14) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %16 = "stablehlo.select"(%15, %1, %2) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %17 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %18 = "stablehlo.select"(%17, %2, %16) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %19 = "stablehlo.compare"(%1, %1) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %20 = "stablehlo.select"(%19, %1, %18) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%20) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<5x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<5x3xf32>
    "func.return"(%0) : (tensor<5x3xf32>) -> ()
  }
}
