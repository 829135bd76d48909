module @clamp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("x"), %arg1: tensor<f32> loc("lo"), %arg2: tensor<3xi32> loc("i")) -> (tensor<3xf32>, tensor<3xi32>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %1 = "stablehlo.bitcast_convert"(%arg0) : (tensor<3xf32>) -> tensor<3xi32>
    %2 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %3 = "stablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %4 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %5 = "stablehlo.broadcast_in_dim"(%4) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %6 = "stablehlo.compare"(%1, %3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %7 = "stablehlo.xor"(%1, %5) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %8 = "stablehlo.select"(%6, %7, %1) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %9 = "stablehlo.bitcast_convert"(%0) : (tensor<3xf32>) -> tensor<3xi32>
    %10 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %11 = "stablehlo.broadcast_in_dim"(%10) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %12 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %13 = "stablehlo.broadcast_in_dim"(%12) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %14 = "stablehlo.compare"(%9, %11) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %15 = "stablehlo.xor"(%9, %13) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %16 = "stablehlo.select"(%14, %15, %9) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %17 = "stablehlo.compare"(%8, %16) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %18 = "stablehlo.select"(%17, %arg0, %0) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %19 = "stablehlo.compare"(%0, %0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %20 = "stablehlo.select"(%19, %0, %18) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %21 = "stablehlo.compare"(%arg0, %arg0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %22 = "stablehlo.select"(%21, %arg0, %20) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %23 = "stablehlo.bitcast_convert"(%22) : (tensor<3xf32>) -> tensor<3xi32>
    %24 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %25 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %26 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %27 = "stablehlo.broadcast_in_dim"(%26) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %28 = "stablehlo.compare"(%23, %25) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %29 = "stablehlo.xor"(%23, %27) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %30 = "stablehlo.select"(%28, %29, %23) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %31 = "stablehlo.bitcast_convert"(%arg0) : (tensor<3xf32>) -> tensor<3xi32>
    %32 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %33 = "stablehlo.broadcast_in_dim"(%32) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %34 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %35 = "stablehlo.broadcast_in_dim"(%34) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %36 = "stablehlo.compare"(%31, %33) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %37 = "stablehlo.xor"(%31, %35) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %38 = "stablehlo.select"(%36, %37, %31) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %39 = "stablehlo.compare"(%30, %38) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %40 = "stablehlo.select"(%39, %22, %arg0) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %41 = "stablehlo.compare"(%arg0, %arg0) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %42 = "stablehlo.select"(%41, %arg0, %40) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %43 = "stablehlo.compare"(%22, %22) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %44 = "stablehlo.select"(%43, %22, %42) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %45 = "stablehlo.clamp"(%arg2, %arg2, %arg2) : (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    "func.return"(%44, %45) : (tensor<3xf32>, tensor<3xi32>) -> ()
  }
}
