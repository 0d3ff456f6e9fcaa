module @jit_transpose_reshape attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6x8xf32>) -> (tensor<48x4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<4x6x8xf32>) -> tensor<8x4x6xf32>
    %1 = stablehlo.reshape %0 : (tensor<8x4x6xf32>) -> tensor<8x24xf32>
    %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<8x24xf32>) -> tensor<24x8xf32>
    %3 = stablehlo.reshape %2 : (tensor<24x8xf32>) -> tensor<4x6x8xf32>
    %4 = stablehlo.transpose %3, dims = [1, 2, 0] : (tensor<4x6x8xf32>) -> tensor<6x8x4xf32>
    %5 = stablehlo.reshape %4 : (tensor<6x8x4xf32>) -> tensor<48x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<48x4xf32>
    %7 = stablehlo.multiply %5, %6 : tensor<48x4xf32>
    return %7 : tensor<48x4xf32>
  }
}
