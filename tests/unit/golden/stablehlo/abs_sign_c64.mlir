module @abs_sign_c64 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xcomplex<f32>> loc("z")) -> (tensor<3xf32>, tensor<3xcomplex<f32>>, tensor<3xf32>, tensor<3xf32>) {
    %0 = "stablehlo.abs"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %1 = "stablehlo.real"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %2 = "stablehlo.imag"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %3 = "stablehlo.constant"() {value = dense<0x7F800000> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %5 = "stablehlo.compare"(%1, %1) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %6 = "stablehlo.abs"(%1) : (tensor<3xf32>) -> tensor<3xf32>
    %7 = "stablehlo.compare"(%6, %4) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %8 = "stablehlo.compare"(%2, %2) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %9 = "stablehlo.abs"(%2) : (tensor<3xf32>) -> tensor<3xf32>
    %10 = "stablehlo.compare"(%9, %4) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %11 = "stablehlo.or"(%5, %8) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %12 = "stablehlo.or"(%7, %10) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %13 = "stablehlo.add"(%1, %2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %14 = "stablehlo.select"(%11, %13, %0) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %15 = "stablehlo.select"(%12, %4, %14) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %16 = "stablehlo.sign"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
    %17 = "stablehlo.real"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %18 = "stablehlo.imag"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %19 = "stablehlo.constant"() {value = dense<0x7F800000> : tensor<f32>} : () -> tensor<f32>
    %20 = "stablehlo.broadcast_in_dim"(%19) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %21 = "stablehlo.compare"(%17, %17) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %22 = "stablehlo.abs"(%17) : (tensor<3xf32>) -> tensor<3xf32>
    %23 = "stablehlo.compare"(%22, %20) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %24 = "stablehlo.compare"(%18, %18) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %25 = "stablehlo.abs"(%18) : (tensor<3xf32>) -> tensor<3xf32>
    %26 = "stablehlo.compare"(%25, %20) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %27 = "stablehlo.or"(%21, %24) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %28 = "stablehlo.and"(%23, %26) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %29 = "stablehlo.and"(%27, %28) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %30 = "stablehlo.add"(%17, %18) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %31 = "stablehlo.complex"(%30, %30) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xcomplex<f32>>
    %32 = "stablehlo.select"(%29, %31, %16) : (tensor<3xi1>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
    %33 = "stablehlo.real"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %34 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %35 = "stablehlo.broadcast_in_dim"(%34) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %36 = "stablehlo.imag"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %37 = "stablehlo.constant"() {value = dense<0x7F800000> : tensor<f32>} : () -> tensor<f32>
    %38 = "stablehlo.broadcast_in_dim"(%37) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %39 = "stablehlo.abs"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %40 = "stablehlo.real"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %41 = "stablehlo.imag"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %42 = "stablehlo.constant"() {value = dense<0x7F800000> : tensor<f32>} : () -> tensor<f32>
    %43 = "stablehlo.broadcast_in_dim"(%42) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %44 = "stablehlo.compare"(%40, %40) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %45 = "stablehlo.abs"(%40) : (tensor<3xf32>) -> tensor<3xf32>
    %46 = "stablehlo.compare"(%45, %43) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %47 = "stablehlo.compare"(%41, %41) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %48 = "stablehlo.abs"(%41) : (tensor<3xf32>) -> tensor<3xf32>
    %49 = "stablehlo.compare"(%48, %43) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %50 = "stablehlo.or"(%44, %47) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %51 = "stablehlo.or"(%46, %49) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %52 = "stablehlo.add"(%40, %41) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %53 = "stablehlo.select"(%50, %52, %39) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %54 = "stablehlo.select"(%51, %43, %53) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %55 = "stablehlo.abs"(%33) : (tensor<3xf32>) -> tensor<3xf32>
    %56 = "stablehlo.compare"(%55, %38) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %57 = "stablehlo.abs"(%36) : (tensor<3xf32>) -> tensor<3xf32>
    %58 = "stablehlo.compare"(%57, %38) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %59 = "stablehlo.compare"(%54, %38) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %60 = "stablehlo.and"(%56, %58) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %61 = "stablehlo.and"(%60, %59) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %62 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %63 = "stablehlo.broadcast_in_dim"(%62) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
    %64 = "stablehlo.add"(%63, %63) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %65 = "stablehlo.divide"(%33, %64) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %66 = "stablehlo.divide"(%36, %64) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %67 = "stablehlo.complex"(%65, %66) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xcomplex<f32>>
    %68 = "stablehlo.sign"(%67) : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
    %69 = "stablehlo.select"(%61, %68, %32) : (tensor<3xi1>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
    %70 = "stablehlo.real"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %71 = "stablehlo.imag"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    "func.return"(%15, %69, %70, %71) : (tensor<3xf32>, tensor<3xcomplex<f32>>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
