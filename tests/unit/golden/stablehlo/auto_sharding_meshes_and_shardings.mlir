module @auto_sharding_meshes_and_shardings attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh_grid = <["data"=2, "model"=2]>
  sdy.mesh @mesh_line = <["x"=4], device_ids=[3, 2, 1, 0]>
  func.func public @main(%arg0: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh_grid, [{"data"}, {}]>} loc("x"), %arg1: tensor<3x2xf32> {sdy.sharding = #sdy.sharding<@mesh_grid, [{}, {"model"}]>} loc("w"), %arg2: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh_line, [{"x"}]>} loc("v"), %arg3: tensor<f32> {sdy.sharding = #sdy.sharding<@mesh_grid, []>} loc("s")) -> (tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh_grid, [{"data"}, {"model"}]>}, tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh_line, [{"x"}]>}, tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh_grid, [{}, {}]>}) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<8xf32>
    %2 = "stablehlo.multiply"(%arg2, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    "func.return"(%0, %2, %0) : (tensor<4x2xf32>, tensor<8xf32>, tensor<4x2xf32>) -> ()
  }
}
