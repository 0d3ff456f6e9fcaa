module @jit_concat_slice attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x8xf32>) -> (tensor<6x16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.concatenate %arg0, %arg1, %arg0, dim = 1 : (tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x40xf32>
    %1 = stablehlo.slice %0 [1:7, 4:36:2] : (tensor<8x40xf32>) -> tensor<6x16xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x16xf32>
    %3 = stablehlo.add %1, %2 : tensor<6x16xf32>
    return %3 : tensor<6x16xf32>
  }
}
