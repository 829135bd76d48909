module @fft attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8xcomplex<f32>> loc("z"), %arg1: tensor<8xf32> loc("x"), %arg2: tensor<5xcomplex<f64>> loc("h")) -> (tensor<2x8xcomplex<f32>>, tensor<2x8xcomplex<f32>>, tensor<5xcomplex<f32>>, tensor<8xf64>) {
    %0 = "stablehlo.fft"(%arg0) {fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64: 2, 8>} : (tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>>
    %1 = "stablehlo.fft"(%arg0) {fft_type = #stablehlo<fft_type IFFT>, fft_length = array<i64: 8>} : (tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>>
    %2 = "stablehlo.fft"(%arg1) {fft_type = #stablehlo<fft_type RFFT>, fft_length = array<i64: 8>} : (tensor<8xf32>) -> tensor<5xcomplex<f32>>
    %3 = "stablehlo.fft"(%arg2) {fft_type = #stablehlo<fft_type IRFFT>, fft_length = array<i64: 8>} : (tensor<5xcomplex<f64>>) -> tensor<8xf64>
    "func.return"(%0, %1, %2, %3) : (tensor<2x8xcomplex<f32>>, tensor<2x8xcomplex<f32>>, tensor<5xcomplex<f32>>, tensor<8xf64>) -> ()
  }
}
