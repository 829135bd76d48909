module @rng_bit_generator attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xui64> loc("state")) -> (tensor<2x2xf32>, tensor<5xui8>, tensor<3xui64>) {
    %0:2 = "stablehlo.rng_bit_generator"(%arg0) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>} : (tensor<3xui64>) -> (tensor<3xui64>, tensor<2x2xui32>)
    %1 = "stablehlo.bitcast_convert"(%0#1) : (tensor<2x2xui32>) -> tensor<2x2xf32>
    %2:2 = "stablehlo.rng_bit_generator"(%0#0) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>} : (tensor<3xui64>) -> (tensor<3xui64>, tensor<5xui8>)
    "func.return"(%1, %2#1, %2#0) : (tensor<2x2xf32>, tensor<5xui8>, tensor<3xui64>) -> ()
  }
}
