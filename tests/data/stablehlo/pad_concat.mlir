module @jit_pad_concat attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<3x8xf32>) -> (tensor<10x8xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = call @_pad(%arg0, %c) : (tensor<4x5xf32>, tensor<i32>) -> tensor<7x8xf32>
    %1 = stablehlo.concatenate %0, %arg1, dim = 0 : (tensor<7x8xf32>, tensor<3x8xf32>) -> tensor<10x8xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<10x8xf32>
    %3 = stablehlo.multiply %1, %2 : tensor<10x8xf32>
    return %3 : tensor<10x8xf32>
  }
  func.func private @_pad(%arg0: tensor<4x5xf32>, %arg1: tensor<i32>) -> tensor<7x8xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [2, 3], interior = [0, 0] : (tensor<4x5xf32>, tensor<f32>) -> tensor<7x8xf32>
    return %1 : tensor<7x8xf32>
  }
}
