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
    %36 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %37 = "stablehlo.reduce"(%35, %36) ({
      ^bb0(%38: tensor<f32>, %39: tensor<f32>):
      %40 = "stablehlo.add"(%38, %39) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%40) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %41 = "stablehlo.reshape"(%37) : (tensor<2xf32>) -> tensor<2x1xf32>
    %42 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %43 = "stablehlo.multiply"(%41, %42) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %44 = "stablehlo.broadcast_in_dim"(%43) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %45 = "stablehlo.subtract"(%35, %44) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %46 = "stablehlo.multiply"(%45, %45) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %47 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %48 = "stablehlo.reduce"(%46, %47) ({
      ^bb0(%49: tensor<f32>, %50: tensor<f32>):
      %51 = "stablehlo.add"(%49, %50) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%51) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %52 = "stablehlo.reshape"(%48) : (tensor<2xf32>) -> tensor<2x1xf32>
    %53 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %54 = "stablehlo.multiply"(%52, %53) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %55 = "stablehlo.constant"() {value = dense<9.99999975e-06> : tensor<f32>} : () -> tensor<f32>
    %56 = "stablehlo.broadcast_in_dim"(%55) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %57 = "stablehlo.convert"(%56) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %58 = "stablehlo.convert"(%30) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %59 = "stablehlo.divide"(%57, %58) : (tensor<2x1xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>
    %60 = "stablehlo.convert"(%59) : (tensor<2x1xf64>) -> tensor<2x1xf32>
    %61 = "stablehlo.convert"(%60) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %62 = "stablehlo.convert"(%30) : (tensor<2x1xf32>) -> tensor<2x1xf64>
    %63 = "stablehlo.divide"(%61, %62) : (tensor<2x1xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>
    %64 = "stablehlo.convert"(%63) : (tensor<2x1xf64>) -> tensor<2x1xf32>
    %65 = "stablehlo.constant"() {value = dense<1.17549435e-38> : tensor<f32>} : () -> tensor<f32>
    %66 = "stablehlo.add"(%54, %64) : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %67 = "stablehlo.broadcast_in_dim"(%65) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x1xf32>
    %68 = "stablehlo.bitcast_convert"(%66) : (tensor<2x1xf32>) -> tensor<2x1xi32>
    %69 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %70 = "stablehlo.broadcast_in_dim"(%69) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %71 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %72 = "stablehlo.broadcast_in_dim"(%71) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %73 = "stablehlo.compare"(%68, %70) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %74 = "stablehlo.xor"(%68, %72) : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %75 = "stablehlo.select"(%73, %74, %68) : (tensor<2x1xi1>, tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %76 = "stablehlo.bitcast_convert"(%67) : (tensor<2x1xf32>) -> tensor<2x1xi32>
    %77 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %78 = "stablehlo.broadcast_in_dim"(%77) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %79 = "stablehlo.constant"() {value = dense<2147483647> : tensor<i32>} : () -> tensor<i32>
    %80 = "stablehlo.broadcast_in_dim"(%79) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<2x1xi32>
    %81 = "stablehlo.compare"(%76, %78) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %82 = "stablehlo.xor"(%76, %80) : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %83 = "stablehlo.select"(%81, %82, %76) : (tensor<2x1xi1>, tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi32>
    %84 = "stablehlo.compare"(%75, %83) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
    %85 = "stablehlo.select"(%84, %66, %67) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %86 = "stablehlo.compare"(%67, %67) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xi1>
    %87 = "stablehlo.select"(%86, %67, %85) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %88 = "stablehlo.compare"(%66, %66) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xi1>
    %89 = "stablehlo.select"(%88, %66, %87) : (tensor<2x1xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %90 = "stablehlo.rsqrt"(%89) : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %91 = "stablehlo.broadcast_in_dim"(%90) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
    %92 = "stablehlo.multiply"(%45, %91) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %93 = "stablehlo.reshape"(%arg0) : (tensor<3xf32>) -> tensor<1x3xf32>
    %94 = "stablehlo.broadcast_in_dim"(%93) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %95 = "stablehlo.multiply"(%92, %94) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %96 = "stablehlo.reshape"(%arg0) : (tensor<3xf32>) -> tensor<1x3xf32>
    %97 = "stablehlo.broadcast_in_dim"(%96) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %98 = "stablehlo.add"(%95, %97) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%98) : (tensor<2x3xf32>) -> ()
  }
}
