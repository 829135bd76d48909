module @collective_broadcast_cpu_masked attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2xf32> loc("x"), %arg1: tensor<2xi1> loc("p")) -> (tensor<2xf32>, tensor<2xi1>) {
    %0 = "stablehlo.bitcast_convert"(%arg0) : (tensor<2xf32>) -> tensor<2xui32>
    %1 = "stablehlo.constant"() {value = dense<[0, 1, 0, 1]> : tensor<4xui8>} : () -> tensor<4xui8>
    %2 = "stablehlo.replica_id"() : () -> tensor<ui32>
    %3 = "stablehlo.dynamic_slice"(%1, %2) {slice_sizes = array<i64: 1>} : (tensor<4xui8>, tensor<ui32>) -> tensor<1xui8>
    %4 = "stablehlo.reshape"(%3) : (tensor<1xui8>) -> tensor<ui8>
    %5 = "stablehlo.constant"() {value = dense<0> : tensor<ui8>} : () -> tensor<ui8>
    %6 = "stablehlo.compare"(%4, %5) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<ui8>, tensor<ui8>) -> tensor<i1>
    %7 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<2xi1>
    %8 = "stablehlo.constant"() {value = dense<0> : tensor<ui32>} : () -> tensor<ui32>
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64>} : (tensor<ui32>) -> tensor<2xui32>
    %10 = "stablehlo.select"(%7, %0, %9) : (tensor<2xi1>, tensor<2xui32>, tensor<2xui32>) -> tensor<2xui32>
    %11 = "stablehlo.all_reduce"(%10) ({
      ^bb0(%12: tensor<ui32>, %13: tensor<ui32>):
      %14 = "stablehlo.add"(%12, %13) : (tensor<ui32>, tensor<ui32>) -> tensor<ui32>
      "stablehlo.return"(%14) : (tensor<ui32>) -> ()
    }) {replica_groups = dense<[[1, 0], [3, 2]]> : tensor<2x2xi64>} : (tensor<2xui32>) -> tensor<2xui32>
    %15 = "stablehlo.bitcast_convert"(%11) : (tensor<2xui32>) -> tensor<2xf32>
    %16 = "stablehlo.convert"(%arg1) : (tensor<2xi1>) -> tensor<2xui8>
    %17 = "stablehlo.constant"() {value = dense<[1, 0, 0, 0]> : tensor<4xui8>} : () -> tensor<4xui8>
    %18 = "stablehlo.replica_id"() : () -> tensor<ui32>
    %19 = "stablehlo.dynamic_slice"(%17, %18) {slice_sizes = array<i64: 1>} : (tensor<4xui8>, tensor<ui32>) -> tensor<1xui8>
    %20 = "stablehlo.reshape"(%19) : (tensor<1xui8>) -> tensor<ui8>
    %21 = "stablehlo.constant"() {value = dense<0> : tensor<ui8>} : () -> tensor<ui8>
    %22 = "stablehlo.compare"(%20, %21) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<ui8>, tensor<ui8>) -> tensor<i1>
    %23 = "stablehlo.broadcast_in_dim"(%22) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<2xi1>
    %24 = "stablehlo.constant"() {value = dense<0> : tensor<ui8>} : () -> tensor<ui8>
    %25 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64>} : (tensor<ui8>) -> tensor<2xui8>
    %26 = "stablehlo.select"(%23, %16, %25) : (tensor<2xi1>, tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
    %27 = "stablehlo.all_reduce"(%26) ({
      ^bb0(%28: tensor<ui8>, %29: tensor<ui8>):
      %30 = "stablehlo.add"(%28, %29) : (tensor<ui8>, tensor<ui8>) -> tensor<ui8>
      "stablehlo.return"(%30) : (tensor<ui8>) -> ()
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<2xui8>) -> tensor<2xui8>
    %31 = "stablehlo.constant"() {value = dense<0> : tensor<ui8>} : () -> tensor<ui8>
    %32 = "stablehlo.broadcast_in_dim"(%31) {broadcast_dimensions = array<i64>} : (tensor<ui8>) -> tensor<2xui8>
    %33 = "stablehlo.compare"(%27, %32) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type UNSIGNED>} : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xi1>
    "func.return"(%15, %33) : (tensor<2xf32>, tensor<2xi1>) -> ()
  }
}
