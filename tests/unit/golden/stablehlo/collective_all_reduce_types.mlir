module @collective_all_reduce_types attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2xf32> loc("x"), %arg1: tensor<2xi8> loc("y")) -> (tensor<2xf32>, tensor<2xi8>, tensor<2xf32>) {
    %0 = "stablehlo.bitcast_convert"(%arg0) : (tensor<2xf32>) -> tensor<2xi32>
    %1 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %2 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %3 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %5 = "stablehlo.compare"(%0, %2) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %6 = "stablehlo.xor"(%0, %4) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %7 = "stablehlo.select"(%5, %6, %0) : (tensor<2xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %8 = "stablehlo.compare"(%arg0, %arg0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %9 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %10 = "stablehlo.broadcast_in_dim"(%9) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %11 = "stablehlo.select"(%8, %10, %7) : (tensor<2xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %12 = "stablehlo.all_reduce"(%11) ({
      ^bb0(%13: tensor<i32>, %14: tensor<i32>):
      %15 = "stablehlo.maximum"(%13, %14) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%15) : (tensor<i32>) -> ()
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<2xi32>) -> tensor<2xi32>
    %16 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %17 = "stablehlo.broadcast_in_dim"(%16) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %18 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %19 = "stablehlo.broadcast_in_dim"(%18) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %20 = "stablehlo.compare"(%12, %17) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %21 = "stablehlo.xor"(%12, %19) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %22 = "stablehlo.select"(%20, %21, %12) : (tensor<2xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %23 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %24 = "stablehlo.broadcast_in_dim"(%23) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %25 = "stablehlo.constant"() {value = dense<-2147483648> : tensor<i32>} : () -> tensor<i32>
    %26 = "stablehlo.broadcast_in_dim"(%25) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %27 = "stablehlo.compare"(%12, %24) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %28 = "stablehlo.compare"(%12, %26) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %29 = "stablehlo.or"(%27, %28) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
    %30 = "stablehlo.constant"() {value = dense<2143289344> : tensor<i32>} : () -> tensor<i32>
    %31 = "stablehlo.broadcast_in_dim"(%30) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2xi32>
    %32 = "stablehlo.select"(%29, %31, %22) : (tensor<2xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %33 = "stablehlo.bitcast_convert"(%32) : (tensor<2xi32>) -> tensor<2xf32>
    %34 = "stablehlo.all_reduce"(%arg1) ({
      ^bb0(%35: tensor<i8>, %36: tensor<i8>):
      %37 = "stablehlo.minimum"(%35, %36) : (tensor<i8>, tensor<i8>) -> tensor<i8>
      "stablehlo.return"(%37) : (tensor<i8>) -> ()
    }) {replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (tensor<2xi8>) -> tensor<2xi8>
    %38 = "stablehlo.all_reduce"(%arg0) ({
      ^bb0(%39: tensor<f32>, %40: tensor<f32>):
      %41 = "stablehlo.multiply"(%39, %40) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%41) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%33, %34, %38) : (tensor<2xf32>, tensor<2xi8>, tensor<2xf32>) -> ()
  }
}
