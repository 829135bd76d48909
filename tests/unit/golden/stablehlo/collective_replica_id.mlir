module @collective_replica_id attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main() -> (tensor<ui32>) {
    %0 = "stablehlo.replica_id"() : () -> tensor<ui32>
    "func.return"(%0) : (tensor<ui32>) -> ()
  }
}
