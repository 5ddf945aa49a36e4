module @jit_f attributes {mhlo.num_partitions = 4096 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=64, "y"=64]> {stablehlo.mesh = {axes = [{name = "x", size = 64 : i64}, {name = "y", size = 64 : i64}]}}
  func.func public @main(%arg0: tensor<1024x2048x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {}]>}, %arg1: tensor<8192x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg2: tensor<8192x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg3: tensor<8192x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg4: tensor<8192x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}, %arg5: tensor<8192x32768xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg6: tensor<32768x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> (tensor<1024x2048x8192xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.convert %arg0 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_0 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %4 = stablehlo.divide %2, %3 : tensor<1024x2048x1xf32>
    %5 = stablehlo.convert %4 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %7 = stablehlo.subtract %arg0, %6 : tensor<1024x2048x8192xbf16>
    %8 = stablehlo.broadcast_in_dim %5, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %9 = stablehlo.subtract %arg0, %8 : tensor<1024x2048x8192xbf16>
    %10 = stablehlo.multiply %9, %9 : tensor<1024x2048x8192xbf16>
    %11 = stablehlo.convert %10 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.reduce(%11 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_2 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %15 = stablehlo.divide %13, %14 : tensor<1024x2048x1xf32>
    %16 = stablehlo.convert %15 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_3 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %17 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %18 = stablehlo.add %16, %17 : tensor<1024x2048x1xbf16>
    %19 = stablehlo.rsqrt %18 : tensor<1024x2048x1xbf16>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %21 = stablehlo.multiply %7, %20 : tensor<1024x2048x8192xbf16>
    %22 = stablehlo.dot_general %21, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %23 = stablehlo.reshape %22 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %24 = stablehlo.transpose %23, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %25 = stablehlo.dot_general %21, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %26 = stablehlo.reshape %25 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %27 = stablehlo.transpose %26, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %28 = stablehlo.dot_general %21, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %29 = stablehlo.reshape %28 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %30 = stablehlo.transpose %29, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %31 = stablehlo.dot_general %24, %27, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_4 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %32 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %33 = stablehlo.divide %31, %32 : tensor<1024x64x2048x2048xbf16>
    %cst_5 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %34 = stablehlo.reduce(%33 init: %cst_5) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_6 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %35 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %36 = stablehlo.maximum %35, %34 : tensor<1024x64x2048xbf16>
    %37 = stablehlo.broadcast_in_dim %36, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %39 = stablehlo.subtract %33, %38 : tensor<1024x64x2048x2048xbf16>
    %40 = stablehlo.exponential %39 : tensor<1024x64x2048x2048xbf16>
    %41 = stablehlo.convert %40 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %42 = stablehlo.reduce(%41 init: %cst_7) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %43 = stablehlo.broadcast_in_dim %42, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %44 = stablehlo.convert %43 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %45 = stablehlo.broadcast_in_dim %44, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %46 = stablehlo.divide %40, %45 : tensor<1024x64x2048x2048xbf16>
    %47 = stablehlo.dot_general %46, %30, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %48 = stablehlo.transpose %47, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %49 = stablehlo.reshape %48 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %50 = stablehlo.dot_general %49, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %51 = stablehlo.add %arg0, %50 : tensor<1024x2048x8192xbf16>
    %52 = stablehlo.convert %51 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %53 = stablehlo.reduce(%52 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %54 = stablehlo.broadcast_in_dim %53, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_9 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %55 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %56 = stablehlo.divide %54, %55 : tensor<1024x2048x1xf32>
    %57 = stablehlo.convert %56 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %58 = stablehlo.broadcast_in_dim %57, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %59 = stablehlo.subtract %51, %58 : tensor<1024x2048x8192xbf16>
    %60 = stablehlo.broadcast_in_dim %57, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %61 = stablehlo.subtract %51, %60 : tensor<1024x2048x8192xbf16>
    %62 = stablehlo.multiply %61, %61 : tensor<1024x2048x8192xbf16>
    %63 = stablehlo.convert %62 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %64 = stablehlo.reduce(%63 init: %cst_10) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %65 = stablehlo.broadcast_in_dim %64, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_11 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %66 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %67 = stablehlo.divide %65, %66 : tensor<1024x2048x1xf32>
    %68 = stablehlo.convert %67 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_12 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %69 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %70 = stablehlo.add %68, %69 : tensor<1024x2048x1xbf16>
    %71 = stablehlo.rsqrt %70 : tensor<1024x2048x1xbf16>
    %72 = stablehlo.broadcast_in_dim %71, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %73 = stablehlo.multiply %59, %72 : tensor<1024x2048x8192xbf16>
    %74 = stablehlo.dot_general %73, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %75 = stablehlo.multiply %74, %74 : tensor<1024x2048x32768xbf16>
    %76 = stablehlo.multiply %75, %74 : tensor<1024x2048x32768xbf16>
    %cst_13 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %77 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %78 = stablehlo.multiply %77, %76 : tensor<1024x2048x32768xbf16>
    %79 = stablehlo.add %74, %78 : tensor<1024x2048x32768xbf16>
    %cst_14 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %80 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %81 = stablehlo.multiply %80, %79 : tensor<1024x2048x32768xbf16>
    %82 = stablehlo.tanh %81 : tensor<1024x2048x32768xbf16>
    %cst_15 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %83 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %84 = stablehlo.add %83, %82 : tensor<1024x2048x32768xbf16>
    %cst_16 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %85 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %86 = stablehlo.multiply %85, %84 : tensor<1024x2048x32768xbf16>
    %87 = stablehlo.multiply %74, %86 : tensor<1024x2048x32768xbf16>
    %88 = stablehlo.dot_general %87, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %89 = stablehlo.add %51, %88 : tensor<1024x2048x8192xbf16>
    return %89 : tensor<1024x2048x8192xbf16>
  }
}
