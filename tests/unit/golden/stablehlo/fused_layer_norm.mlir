module @fused_layer_norm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> loc("gamma"), %arg1: tensor<2x3xf32> loc("x")) -> (tensor<2x3xf32>) {
    %0 = "stablehlo.constant"() {value = dense<0.333333343> : tensor<f32>} : () -> tensor<f32>
    %1 = "stablehlo.abs"(%arg1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%1, %2) ({
      ^bb0(%4: tensor<f32>, %5: tensor<f32>):
      %6 = "stablehlo.bitcast_convert"(%4) : (tensor<f32>) -> tensor<i32>
      %7 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %8 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %9 = "stablehlo.compare"(%6, %7) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %10 = "stablehlo.xor"(%6, %8) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %11 = "stablehlo.select"(%9, %10, %6) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %12 = "stablehlo.bitcast_convert"(%5) : (tensor<f32>) -> tensor<i32>
      %13 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
      %14 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
      %15 = "stablehlo.compare"(%12, %13) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %16 = "stablehlo.xor"(%12, %14) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %17 = "stablehlo.select"(%15, %16, %12) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %18 = "stablehlo.compare"(%11, %17) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %19 = "stablehlo.select"(%18, %4, %5) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %20 = "stablehlo.compare"(%5, %5) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %21 = "stablehlo.select"(%20, %5, %19) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %22 = "stablehlo.compare"(%4, %4) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %23 = "stablehlo.select"(%22, %4, %21) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%23) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %24 = "stablehlo.reshape"(%3) : (tensor<2xf32>) -> tensor<2x1xf32>
    %25 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %26 = "stablehlo.constant"() {value = dense<1.12589991e+15> : tensor<f32>} : () -> tensor<f32>
    %27 = "stablehlo.broadcast_in_dim"(%26) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %28 = "stablehlo.compare"(%24, %27) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xi1>
    %29 = "stablehlo.broadcast_in_dim"(%25) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %30 = "stablehlo.select"(%28, %24, %29) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %31 = "stablehlo.broadcast_in_dim"(%30) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %32 = "stablehlo.convert"(%arg1) : (tensor<2x3xf32>) -> tensor<2x3xf64>
    %33 = "stablehlo.convert"(%31) : (tensor<2x3xf32>) -> tensor<2x3xf64>
    %34 = "stablehlo.divide"(%32, %33) : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    %35 = "stablehlo.convert"(%34) : (tensor<2x3xf64>) -> tensor<2x3xf32>
    %36 = "stablehlo.slice"(%35) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 2, 1>, strides = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
    %37 = "stablehlo.broadcast_in_dim"(%36) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %38 = "stablehlo.subtract"(%35, %37) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %39 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %40 = "stablehlo.reduce"(%38, %39) ({
      ^bb0(%41: tensor<f32>, %42: tensor<f32>):
      %43 = "stablehlo.add"(%41, %42) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%43) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %44 = "stablehlo.reshape"(%40) : (tensor<2xf32>) -> tensor<2x1xf32>
    %45 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %46 = "stablehlo.multiply"(%44, %45) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %47 = "stablehlo.broadcast_in_dim"(%46) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %48 = "stablehlo.subtract"(%38, %47) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %49 = "stablehlo.multiply"(%48, %48) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %50 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %51 = "stablehlo.reduce"(%49, %50) ({
      ^bb0(%52: tensor<f32>, %53: tensor<f32>):
      %54 = "stablehlo.add"(%52, %53) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%54) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %55 = "stablehlo.reshape"(%51) : (tensor<2xf32>) -> tensor<2x1xf32>
    %56 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %57 = "stablehlo.multiply"(%55, %56) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %58 = "stablehlo.constant"() {value = dense<9.99999975e-06> : tensor<f32>} : () -> tensor<f32>
    %59 = "stablehlo.broadcast_in_dim"(%58) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %60 = "stablehlo.convert"(%59) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %61 = "stablehlo.convert"(%30) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %62 = "stablehlo.divide"(%60, %61) : (tensor<2x1xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>
    %63 = "stablehlo.convert"(%62) : (tensor<2x1xf64>) -> tensor<2x1xf32>
    %64 = "stablehlo.convert"(%63) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %65 = "stablehlo.convert"(%30) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %66 = "stablehlo.divide"(%64, %65) : (tensor<2x1xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>
    %67 = "stablehlo.convert"(%66) : (tensor<2x1xf64>) -> tensor<2x1xf32>
    %68 = "stablehlo.constant"() {value = dense<1.17549435e-38> : tensor<f32>} : () -> tensor<f32>
    %69 = "stablehlo.add"(%57, %67) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %70 = "stablehlo.broadcast_in_dim"(%68) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %71 = "stablehlo.bitcast_convert"(%69) : (tensor<2x1xf32>) -> tensor<2x1xi32>
    %72 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %73 = "stablehlo.broadcast_in_dim"(%72) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %74 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %75 = "stablehlo.broadcast_in_dim"(%74) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %76 = "stablehlo.compare"(%71, %73) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %77 = "stablehlo.xor"(%71, %75) : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %78 = "stablehlo.select"(%76, %77, %71) : (tensor<2x1xi1>, tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %79 = "stablehlo.bitcast_convert"(%70) : (tensor<2x1xf32>) -> tensor<2x1xi32>
    %80 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %81 = "stablehlo.broadcast_in_dim"(%80) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %82 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %83 = "stablehlo.broadcast_in_dim"(%82) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %84 = "stablehlo.compare"(%79, %81) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %85 = "stablehlo.xor"(%79, %83) : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %86 = "stablehlo.select"(%84, %85, %79) : (tensor<2x1xi1>, tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %87 = "stablehlo.compare"(%78, %86) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %88 = "stablehlo.select"(%87, %69, %70) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %89 = "stablehlo.compare"(%70, %70) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xi1>
    %90 = "stablehlo.select"(%89, %70, %88) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %91 = "stablehlo.compare"(%69, %69) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xi1>
    %92 = "stablehlo.select"(%91, %69, %90) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %93 = "stablehlo.rsqrt"(%92) : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %94 = "stablehlo.broadcast_in_dim"(%93) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %95 = "stablehlo.multiply"(%48, %94) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %96 = "stablehlo.reshape"(%arg0) : (tensor<3xf32>) -> tensor<1x3xf32>
    %97 = "stablehlo.broadcast_in_dim"(%96) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %98 = "stablehlo.multiply"(%95, %97) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %99 = "stablehlo.reshape"(%arg0) : (tensor<3xf32>) -> tensor<1x3xf32>
    %100 = "stablehlo.broadcast_in_dim"(%99) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %101 = "stablehlo.add"(%98, %100) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%101) : (tensor<2x3xf32>) -> ()
  }
}
