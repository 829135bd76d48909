module @quantized_embedding_lookup_q8_0 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x34xui8> loc("data"), %arg1: tensor<2x1xi32> loc("indices")) -> (tensor<2x32xf32>) {
    %0 = "stablehlo.gather"(%arg0, %arg1) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 34>, indices_are_sorted = false} : (tensor<4x34xui8>, tensor<2x1xi32>) -> tensor<2x34xui8>
    %1 = "stablehlo.reshape"(%0) : (tensor<2x34xui8>) -> tensor<2x34xui8>
    %2 = "stablehlo.reshape"(%1) : (tensor<2x34xui8>) -> tensor<2x1x34xui8>
    %3 = "stablehlo.slice"(%2) {start_indices = array<i64: 0, 0, 2>, limit_indices = array<i64: 2, 1, 34>, strides = array<i64: 1, 1, 1>} : (tensor<2x1x34xui8>) -> tensor<2x1x32xui8>
    %4 = "stablehlo.bitcast_convert"(%3) : (tensor<2x1x32xui8>) -> tensor<2x1x32xi8>
    %5 = "stablehlo.slice"(%2) {start_indices = array<i64: 0, 0, 0>, limit_indices = array<i64: 2, 1, 2>, strides = array<i64: 1, 1, 1>} : (tensor<2x1x34xui8>) -> tensor<2x1x2xui8>
    %6 = "stablehlo.bitcast_convert"(%5) : (tensor<2x1x2xui8>) -> tensor<2x1xf16>
    %7 = "stablehlo.convert"(%6) : (tensor<2x1xf16>) -> tensor<2x1xf32>
    %8 = "stablehlo.reshape"(%7) : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
    %9 = "stablehlo.convert"(%4) : (tensor<2x1x32xi8>) -> tensor<2x1x32xf32>
    %10 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64: 0, 1, 2>} : (tensor<2x1x1xf32>) -> tensor<2x1x32xf32>
    %11 = "stablehlo.multiply"(%9, %10) : (tensor<2x1x32xf32>, tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
    %12 = "stablehlo.reshape"(%11) : (tensor<2x1x32xf32>) -> tensor<2x32xf32>
    %13 = "stablehlo.reshape"(%12) : (tensor<2x32xf32>) -> tensor<2x32xf32>
    "func.return"(%13) : (tensor<2x32xf32>) -> ()
  }
}
