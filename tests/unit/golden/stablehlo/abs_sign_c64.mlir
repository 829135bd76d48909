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
    %34 = "stablehlo.imag"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    "func.return"(%15, %32, %33, %34) : (tensor<3xf32>, tensor<3xcomplex<f32>>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
