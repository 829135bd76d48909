module @pow_i32 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xi32> loc("x"), %arg1: tensor<3xi32> loc("y")) -> (tensor<3xi32>) {
    %0 = "stablehlo.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %1 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %2 = "stablehlo.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %3 = "stablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %4 = "stablehlo.and"(%arg1, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %5 = "stablehlo.compare"(%4, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %6 = "stablehlo.multiply"(%1, %arg0) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %7 = "stablehlo.select"(%5, %6, %1) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %8 = "stablehlo.multiply"(%arg0, %arg0) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %9 = "stablehlo.shift_right_logical"(%arg1, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %10 = "stablehlo.and"(%9, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %11 = "stablehlo.compare"(%10, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %12 = "stablehlo.multiply"(%7, %8) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %13 = "stablehlo.select"(%11, %12, %7) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %14 = "stablehlo.multiply"(%8, %8) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %15 = "stablehlo.shift_right_logical"(%9, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %16 = "stablehlo.and"(%15, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %17 = "stablehlo.compare"(%16, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %18 = "stablehlo.multiply"(%13, %14) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %19 = "stablehlo.select"(%17, %18, %13) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %20 = "stablehlo.multiply"(%14, %14) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %21 = "stablehlo.shift_right_logical"(%15, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %22 = "stablehlo.and"(%21, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %23 = "stablehlo.compare"(%22, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %24 = "stablehlo.multiply"(%19, %20) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %25 = "stablehlo.select"(%23, %24, %19) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %26 = "stablehlo.multiply"(%20, %20) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %27 = "stablehlo.shift_right_logical"(%21, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %28 = "stablehlo.and"(%27, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %29 = "stablehlo.compare"(%28, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %30 = "stablehlo.multiply"(%25, %26) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %31 = "stablehlo.select"(%29, %30, %25) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %32 = "stablehlo.multiply"(%26, %26) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %33 = "stablehlo.shift_right_logical"(%27, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %34 = "stablehlo.and"(%33, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %35 = "stablehlo.compare"(%34, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %36 = "stablehlo.multiply"(%31, %32) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %37 = "stablehlo.select"(%35, %36, %31) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %38 = "stablehlo.multiply"(%32, %32) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %39 = "stablehlo.shift_right_logical"(%33, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %40 = "stablehlo.and"(%39, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %41 = "stablehlo.compare"(%40, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %42 = "stablehlo.multiply"(%37, %38) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %43 = "stablehlo.select"(%41, %42, %37) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %44 = "stablehlo.multiply"(%38, %38) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %45 = "stablehlo.shift_right_logical"(%39, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %46 = "stablehlo.and"(%45, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %47 = "stablehlo.compare"(%46, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %48 = "stablehlo.multiply"(%43, %44) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %49 = "stablehlo.select"(%47, %48, %43) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %50 = "stablehlo.multiply"(%44, %44) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %51 = "stablehlo.shift_right_logical"(%45, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %52 = "stablehlo.and"(%51, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %53 = "stablehlo.compare"(%52, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %54 = "stablehlo.multiply"(%49, %50) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %55 = "stablehlo.select"(%53, %54, %49) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %56 = "stablehlo.multiply"(%50, %50) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %57 = "stablehlo.shift_right_logical"(%51, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %58 = "stablehlo.and"(%57, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %59 = "stablehlo.compare"(%58, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %60 = "stablehlo.multiply"(%55, %56) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %61 = "stablehlo.select"(%59, %60, %55) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %62 = "stablehlo.multiply"(%56, %56) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %63 = "stablehlo.shift_right_logical"(%57, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %64 = "stablehlo.and"(%63, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %65 = "stablehlo.compare"(%64, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %66 = "stablehlo.multiply"(%61, %62) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %67 = "stablehlo.select"(%65, %66, %61) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %68 = "stablehlo.multiply"(%62, %62) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %69 = "stablehlo.shift_right_logical"(%63, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %70 = "stablehlo.and"(%69, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %71 = "stablehlo.compare"(%70, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %72 = "stablehlo.multiply"(%67, %68) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %73 = "stablehlo.select"(%71, %72, %67) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %74 = "stablehlo.multiply"(%68, %68) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %75 = "stablehlo.shift_right_logical"(%69, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %76 = "stablehlo.and"(%75, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %77 = "stablehlo.compare"(%76, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %78 = "stablehlo.multiply"(%73, %74) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %79 = "stablehlo.select"(%77, %78, %73) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %80 = "stablehlo.multiply"(%74, %74) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %81 = "stablehlo.shift_right_logical"(%75, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %82 = "stablehlo.and"(%81, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %83 = "stablehlo.compare"(%82, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %84 = "stablehlo.multiply"(%79, %80) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %85 = "stablehlo.select"(%83, %84, %79) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %86 = "stablehlo.multiply"(%80, %80) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %87 = "stablehlo.shift_right_logical"(%81, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %88 = "stablehlo.and"(%87, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %89 = "stablehlo.compare"(%88, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %90 = "stablehlo.multiply"(%85, %86) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %91 = "stablehlo.select"(%89, %90, %85) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %92 = "stablehlo.multiply"(%86, %86) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %93 = "stablehlo.shift_right_logical"(%87, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %94 = "stablehlo.and"(%93, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %95 = "stablehlo.compare"(%94, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %96 = "stablehlo.multiply"(%91, %92) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %97 = "stablehlo.select"(%95, %96, %91) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %98 = "stablehlo.multiply"(%92, %92) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %99 = "stablehlo.shift_right_logical"(%93, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %100 = "stablehlo.and"(%99, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %101 = "stablehlo.compare"(%100, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %102 = "stablehlo.multiply"(%97, %98) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %103 = "stablehlo.select"(%101, %102, %97) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %104 = "stablehlo.multiply"(%98, %98) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %105 = "stablehlo.shift_right_logical"(%99, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %106 = "stablehlo.and"(%105, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %107 = "stablehlo.compare"(%106, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %108 = "stablehlo.multiply"(%103, %104) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %109 = "stablehlo.select"(%107, %108, %103) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %110 = "stablehlo.multiply"(%104, %104) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %111 = "stablehlo.shift_right_logical"(%105, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %112 = "stablehlo.and"(%111, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %113 = "stablehlo.compare"(%112, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %114 = "stablehlo.multiply"(%109, %110) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %115 = "stablehlo.select"(%113, %114, %109) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %116 = "stablehlo.multiply"(%110, %110) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %117 = "stablehlo.shift_right_logical"(%111, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %118 = "stablehlo.and"(%117, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %119 = "stablehlo.compare"(%118, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %120 = "stablehlo.multiply"(%115, %116) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %121 = "stablehlo.select"(%119, %120, %115) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %122 = "stablehlo.multiply"(%116, %116) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %123 = "stablehlo.shift_right_logical"(%117, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %124 = "stablehlo.and"(%123, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %125 = "stablehlo.compare"(%124, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %126 = "stablehlo.multiply"(%121, %122) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %127 = "stablehlo.select"(%125, %126, %121) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %128 = "stablehlo.multiply"(%122, %122) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %129 = "stablehlo.shift_right_logical"(%123, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %130 = "stablehlo.and"(%129, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %131 = "stablehlo.compare"(%130, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %132 = "stablehlo.multiply"(%127, %128) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %133 = "stablehlo.select"(%131, %132, %127) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %134 = "stablehlo.multiply"(%128, %128) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %135 = "stablehlo.shift_right_logical"(%129, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %136 = "stablehlo.and"(%135, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %137 = "stablehlo.compare"(%136, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %138 = "stablehlo.multiply"(%133, %134) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %139 = "stablehlo.select"(%137, %138, %133) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %140 = "stablehlo.multiply"(%134, %134) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %141 = "stablehlo.shift_right_logical"(%135, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %142 = "stablehlo.and"(%141, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %143 = "stablehlo.compare"(%142, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %144 = "stablehlo.multiply"(%139, %140) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %145 = "stablehlo.select"(%143, %144, %139) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %146 = "stablehlo.multiply"(%140, %140) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %147 = "stablehlo.shift_right_logical"(%141, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %148 = "stablehlo.and"(%147, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %149 = "stablehlo.compare"(%148, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %150 = "stablehlo.multiply"(%145, %146) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %151 = "stablehlo.select"(%149, %150, %145) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %152 = "stablehlo.multiply"(%146, %146) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %153 = "stablehlo.shift_right_logical"(%147, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %154 = "stablehlo.and"(%153, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %155 = "stablehlo.compare"(%154, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %156 = "stablehlo.multiply"(%151, %152) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %157 = "stablehlo.select"(%155, %156, %151) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %158 = "stablehlo.multiply"(%152, %152) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %159 = "stablehlo.shift_right_logical"(%153, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %160 = "stablehlo.and"(%159, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %161 = "stablehlo.compare"(%160, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %162 = "stablehlo.multiply"(%157, %158) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %163 = "stablehlo.select"(%161, %162, %157) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %164 = "stablehlo.multiply"(%158, %158) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %165 = "stablehlo.shift_right_logical"(%159, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %166 = "stablehlo.and"(%165, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %167 = "stablehlo.compare"(%166, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %168 = "stablehlo.multiply"(%163, %164) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %169 = "stablehlo.select"(%167, %168, %163) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %170 = "stablehlo.multiply"(%164, %164) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %171 = "stablehlo.shift_right_logical"(%165, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %172 = "stablehlo.and"(%171, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %173 = "stablehlo.compare"(%172, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %174 = "stablehlo.multiply"(%169, %170) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %175 = "stablehlo.select"(%173, %174, %169) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %176 = "stablehlo.multiply"(%170, %170) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %177 = "stablehlo.shift_right_logical"(%171, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %178 = "stablehlo.and"(%177, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %179 = "stablehlo.compare"(%178, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %180 = "stablehlo.multiply"(%175, %176) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %181 = "stablehlo.select"(%179, %180, %175) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %182 = "stablehlo.multiply"(%176, %176) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %183 = "stablehlo.shift_right_logical"(%177, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %184 = "stablehlo.and"(%183, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %185 = "stablehlo.compare"(%184, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %186 = "stablehlo.multiply"(%181, %182) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %187 = "stablehlo.select"(%185, %186, %181) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %188 = "stablehlo.multiply"(%182, %182) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %189 = "stablehlo.shift_right_logical"(%183, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %190 = "stablehlo.and"(%189, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %191 = "stablehlo.compare"(%190, %3) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %192 = "stablehlo.multiply"(%187, %188) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %193 = "stablehlo.select"(%191, %192, %187) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %194 = "stablehlo.compare"(%arg1, %3) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %195 = "stablehlo.constant"() {value = dense<-1> : tensor<i32>} : () -> tensor<i32>
    %196 = "stablehlo.broadcast_in_dim"(%195) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<3xi32>
    %197 = "stablehlo.compare"(%arg0, %1) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %198 = "stablehlo.compare"(%arg0, %196) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %199 = "stablehlo.or"(%197, %198) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
    %200 = "stablehlo.select"(%199, %193, %3) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %201 = "stablehlo.select"(%194, %200, %193) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    "func.return"(%201) : (tensor<3xi32>) -> ()
  }
}
