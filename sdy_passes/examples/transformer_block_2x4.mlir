module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {}]>}, %arg1: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg2: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg3: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg4: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}, %arg5: tensor<32x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg6: tensor<128x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> (tensor<4x16x32xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_0 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<4x16x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<4x16x32xf32>
    %6 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %7 = stablehlo.subtract %arg0, %6 : tensor<4x16x32xf32>
    %8 = stablehlo.multiply %7, %7 : tensor<4x16x32xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%8 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_2 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %12 = stablehlo.divide %10, %11 : tensor<4x16x1xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %14 = stablehlo.add %12, %13 : tensor<4x16x1xf32>
    %15 = stablehlo.rsqrt %14 : tensor<4x16x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %17 = stablehlo.multiply %5, %16 : tensor<4x16x32xf32>
    %18 = stablehlo.dot_general %17, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x32xf32>) -> tensor<4x16x32xf32>
    %19 = stablehlo.reshape %18 : (tensor<4x16x32xf32>) -> tensor<4x16x4x8xf32>
    %20 = stablehlo.transpose %19, dims = [0, 2, 1, 3] : (tensor<4x16x4x8xf32>) -> tensor<4x4x16x8xf32>
    %21 = stablehlo.dot_general %17, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x32xf32>) -> tensor<4x16x32xf32>
    %22 = stablehlo.reshape %21 : (tensor<4x16x32xf32>) -> tensor<4x16x4x8xf32>
    %23 = stablehlo.transpose %22, dims = [0, 2, 1, 3] : (tensor<4x16x4x8xf32>) -> tensor<4x4x16x8xf32>
    %24 = stablehlo.dot_general %17, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x32xf32>) -> tensor<4x16x32xf32>
    %25 = stablehlo.reshape %24 : (tensor<4x16x32xf32>) -> tensor<4x16x4x8xf32>
    %26 = stablehlo.transpose %25, dims = [0, 2, 1, 3] : (tensor<4x16x4x8xf32>) -> tensor<4x4x16x8xf32>
    %27 = stablehlo.dot_general %20, %23, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>) -> tensor<4x4x16x16xf32>
    %cst_4 = stablehlo.constant dense<2.82842708> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4x4x16x16xf32>
    %29 = stablehlo.divide %27, %28 : tensor<4x4x16x16xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %30 = stablehlo.reduce(%29 init: %cst_5) applies stablehlo.maximum across dimensions = [3] : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %31 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<4x4x16xf32>
    %32 = stablehlo.maximum %31, %30 : tensor<4x4x16xf32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [0, 1, 2] : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2, 3] : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %35 = stablehlo.subtract %29, %34 : tensor<4x4x16x16xf32>
    %36 = stablehlo.exponential %35 : tensor<4x4x16x16xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %37 = stablehlo.reduce(%36 init: %cst_7) applies stablehlo.add across dimensions = [3] : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 1, 2] : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2, 3] : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %40 = stablehlo.divide %36, %39 : tensor<4x4x16x16xf32>
    %41 = stablehlo.dot_general %40, %26, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<4x4x16x16xf32>, tensor<4x4x16x8xf32>) -> tensor<4x4x16x8xf32>
    %42 = stablehlo.transpose %41, dims = [0, 2, 1, 3] : (tensor<4x4x16x8xf32>) -> tensor<4x16x4x8xf32>
    %43 = stablehlo.reshape %42 : (tensor<4x16x4x8xf32>) -> tensor<4x16x32xf32>
    %44 = stablehlo.dot_general %43, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x32xf32>) -> tensor<4x16x32xf32>
    %45 = stablehlo.add %arg0, %44 : tensor<4x16x32xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %46 = stablehlo.reduce(%45 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_9 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %49 = stablehlo.divide %47, %48 : tensor<4x16x1xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %51 = stablehlo.subtract %45, %50 : tensor<4x16x32xf32>
    %52 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %53 = stablehlo.subtract %45, %52 : tensor<4x16x32xf32>
    %54 = stablehlo.multiply %53, %53 : tensor<4x16x32xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %55 = stablehlo.reduce(%54 init: %cst_10) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %56 = stablehlo.broadcast_in_dim %55, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_11 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %58 = stablehlo.divide %56, %57 : tensor<4x16x1xf32>
    %cst_12 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %60 = stablehlo.add %58, %59 : tensor<4x16x1xf32>
    %61 = stablehlo.rsqrt %60 : tensor<4x16x1xf32>
    %62 = stablehlo.broadcast_in_dim %61, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %63 = stablehlo.multiply %51, %62 : tensor<4x16x32xf32>
    %64 = stablehlo.dot_general %63, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x128xf32>) -> tensor<4x16x128xf32>
    %65 = stablehlo.multiply %64, %64 : tensor<4x16x128xf32>
    %66 = stablehlo.multiply %65, %64 : tensor<4x16x128xf32>
    %cst_13 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %67 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<4x16x128xf32>
    %68 = stablehlo.multiply %67, %66 : tensor<4x16x128xf32>
    %69 = stablehlo.add %64, %68 : tensor<4x16x128xf32>
    %cst_14 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<4x16x128xf32>
    %71 = stablehlo.multiply %70, %69 : tensor<4x16x128xf32>
    %72 = stablehlo.tanh %71 : tensor<4x16x128xf32>
    %cst_15 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %73 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<4x16x128xf32>
    %74 = stablehlo.add %73, %72 : tensor<4x16x128xf32>
    %cst_16 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %75 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<4x16x128xf32>
    %76 = stablehlo.multiply %75, %74 : tensor<4x16x128xf32>
    %77 = stablehlo.multiply %64, %76 : tensor<4x16x128xf32>
    %78 = stablehlo.dot_general %77, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x128xf32>, tensor<128x32xf32>) -> tensor<4x16x32xf32>
    %79 = stablehlo.add %45, %78 : tensor<4x16x32xf32>
    return %79 : tensor<4x16x32xf32>
  }
}
