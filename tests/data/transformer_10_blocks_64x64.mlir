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
    %90 = stablehlo.convert %89 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %91 = stablehlo.reduce(%90 init: %cst_17) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %92 = stablehlo.broadcast_in_dim %91, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_18 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %93 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %94 = stablehlo.divide %92, %93 : tensor<1024x2048x1xf32>
    %95 = stablehlo.convert %94 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %96 = stablehlo.broadcast_in_dim %95, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %97 = stablehlo.subtract %89, %96 : tensor<1024x2048x8192xbf16>
    %98 = stablehlo.broadcast_in_dim %95, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %99 = stablehlo.subtract %89, %98 : tensor<1024x2048x8192xbf16>
    %100 = stablehlo.multiply %99, %99 : tensor<1024x2048x8192xbf16>
    %101 = stablehlo.convert %100 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %102 = stablehlo.reduce(%101 init: %cst_19) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %103 = stablehlo.broadcast_in_dim %102, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_20 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %104 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %105 = stablehlo.divide %103, %104 : tensor<1024x2048x1xf32>
    %106 = stablehlo.convert %105 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_21 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %107 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %108 = stablehlo.add %106, %107 : tensor<1024x2048x1xbf16>
    %109 = stablehlo.rsqrt %108 : tensor<1024x2048x1xbf16>
    %110 = stablehlo.broadcast_in_dim %109, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %111 = stablehlo.multiply %97, %110 : tensor<1024x2048x8192xbf16>
    %112 = stablehlo.dot_general %111, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %113 = stablehlo.reshape %112 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %114 = stablehlo.transpose %113, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %115 = stablehlo.dot_general %111, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %116 = stablehlo.reshape %115 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %117 = stablehlo.transpose %116, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %118 = stablehlo.dot_general %111, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %119 = stablehlo.reshape %118 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %120 = stablehlo.transpose %119, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %121 = stablehlo.dot_general %114, %117, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_22 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %122 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %123 = stablehlo.divide %121, %122 : tensor<1024x64x2048x2048xbf16>
    %cst_23 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %124 = stablehlo.reduce(%123 init: %cst_23) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_24 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %125 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %126 = stablehlo.maximum %125, %124 : tensor<1024x64x2048xbf16>
    %127 = stablehlo.broadcast_in_dim %126, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %128 = stablehlo.broadcast_in_dim %127, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %129 = stablehlo.subtract %123, %128 : tensor<1024x64x2048x2048xbf16>
    %130 = stablehlo.exponential %129 : tensor<1024x64x2048x2048xbf16>
    %131 = stablehlo.convert %130 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_25 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %132 = stablehlo.reduce(%131 init: %cst_25) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %133 = stablehlo.broadcast_in_dim %132, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %134 = stablehlo.convert %133 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %135 = stablehlo.broadcast_in_dim %134, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %136 = stablehlo.divide %130, %135 : tensor<1024x64x2048x2048xbf16>
    %137 = stablehlo.dot_general %136, %120, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %138 = stablehlo.transpose %137, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %139 = stablehlo.reshape %138 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %140 = stablehlo.dot_general %139, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %141 = stablehlo.add %89, %140 : tensor<1024x2048x8192xbf16>
    %142 = stablehlo.convert %141 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_26 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %143 = stablehlo.reduce(%142 init: %cst_26) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %144 = stablehlo.broadcast_in_dim %143, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_27 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %145 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %146 = stablehlo.divide %144, %145 : tensor<1024x2048x1xf32>
    %147 = stablehlo.convert %146 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %148 = stablehlo.broadcast_in_dim %147, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %149 = stablehlo.subtract %141, %148 : tensor<1024x2048x8192xbf16>
    %150 = stablehlo.broadcast_in_dim %147, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %151 = stablehlo.subtract %141, %150 : tensor<1024x2048x8192xbf16>
    %152 = stablehlo.multiply %151, %151 : tensor<1024x2048x8192xbf16>
    %153 = stablehlo.convert %152 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_28 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %154 = stablehlo.reduce(%153 init: %cst_28) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %155 = stablehlo.broadcast_in_dim %154, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_29 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %156 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %157 = stablehlo.divide %155, %156 : tensor<1024x2048x1xf32>
    %158 = stablehlo.convert %157 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_30 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %159 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %160 = stablehlo.add %158, %159 : tensor<1024x2048x1xbf16>
    %161 = stablehlo.rsqrt %160 : tensor<1024x2048x1xbf16>
    %162 = stablehlo.broadcast_in_dim %161, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %163 = stablehlo.multiply %149, %162 : tensor<1024x2048x8192xbf16>
    %164 = stablehlo.dot_general %163, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %165 = stablehlo.multiply %164, %164 : tensor<1024x2048x32768xbf16>
    %166 = stablehlo.multiply %165, %164 : tensor<1024x2048x32768xbf16>
    %cst_31 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %167 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %168 = stablehlo.multiply %167, %166 : tensor<1024x2048x32768xbf16>
    %169 = stablehlo.add %164, %168 : tensor<1024x2048x32768xbf16>
    %cst_32 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %170 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %171 = stablehlo.multiply %170, %169 : tensor<1024x2048x32768xbf16>
    %172 = stablehlo.tanh %171 : tensor<1024x2048x32768xbf16>
    %cst_33 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %173 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %174 = stablehlo.add %173, %172 : tensor<1024x2048x32768xbf16>
    %cst_34 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %175 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %176 = stablehlo.multiply %175, %174 : tensor<1024x2048x32768xbf16>
    %177 = stablehlo.multiply %164, %176 : tensor<1024x2048x32768xbf16>
    %178 = stablehlo.dot_general %177, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %179 = stablehlo.add %141, %178 : tensor<1024x2048x8192xbf16>
    %180 = stablehlo.convert %179 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_35 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %181 = stablehlo.reduce(%180 init: %cst_35) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %182 = stablehlo.broadcast_in_dim %181, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_36 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %183 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %184 = stablehlo.divide %182, %183 : tensor<1024x2048x1xf32>
    %185 = stablehlo.convert %184 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %186 = stablehlo.broadcast_in_dim %185, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %187 = stablehlo.subtract %179, %186 : tensor<1024x2048x8192xbf16>
    %188 = stablehlo.broadcast_in_dim %185, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %189 = stablehlo.subtract %179, %188 : tensor<1024x2048x8192xbf16>
    %190 = stablehlo.multiply %189, %189 : tensor<1024x2048x8192xbf16>
    %191 = stablehlo.convert %190 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_37 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %192 = stablehlo.reduce(%191 init: %cst_37) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %193 = stablehlo.broadcast_in_dim %192, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_38 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %194 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %195 = stablehlo.divide %193, %194 : tensor<1024x2048x1xf32>
    %196 = stablehlo.convert %195 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_39 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %197 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %198 = stablehlo.add %196, %197 : tensor<1024x2048x1xbf16>
    %199 = stablehlo.rsqrt %198 : tensor<1024x2048x1xbf16>
    %200 = stablehlo.broadcast_in_dim %199, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %201 = stablehlo.multiply %187, %200 : tensor<1024x2048x8192xbf16>
    %202 = stablehlo.dot_general %201, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %203 = stablehlo.reshape %202 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %204 = stablehlo.transpose %203, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %205 = stablehlo.dot_general %201, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %206 = stablehlo.reshape %205 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %207 = stablehlo.transpose %206, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %208 = stablehlo.dot_general %201, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %209 = stablehlo.reshape %208 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %210 = stablehlo.transpose %209, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %211 = stablehlo.dot_general %204, %207, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_40 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %212 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %213 = stablehlo.divide %211, %212 : tensor<1024x64x2048x2048xbf16>
    %cst_41 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %214 = stablehlo.reduce(%213 init: %cst_41) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_42 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %215 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %216 = stablehlo.maximum %215, %214 : tensor<1024x64x2048xbf16>
    %217 = stablehlo.broadcast_in_dim %216, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %218 = stablehlo.broadcast_in_dim %217, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %219 = stablehlo.subtract %213, %218 : tensor<1024x64x2048x2048xbf16>
    %220 = stablehlo.exponential %219 : tensor<1024x64x2048x2048xbf16>
    %221 = stablehlo.convert %220 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_43 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %222 = stablehlo.reduce(%221 init: %cst_43) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %223 = stablehlo.broadcast_in_dim %222, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %224 = stablehlo.convert %223 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %225 = stablehlo.broadcast_in_dim %224, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %226 = stablehlo.divide %220, %225 : tensor<1024x64x2048x2048xbf16>
    %227 = stablehlo.dot_general %226, %210, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %228 = stablehlo.transpose %227, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %229 = stablehlo.reshape %228 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %230 = stablehlo.dot_general %229, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %231 = stablehlo.add %179, %230 : tensor<1024x2048x8192xbf16>
    %232 = stablehlo.convert %231 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %233 = stablehlo.reduce(%232 init: %cst_44) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %234 = stablehlo.broadcast_in_dim %233, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_45 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %235 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %236 = stablehlo.divide %234, %235 : tensor<1024x2048x1xf32>
    %237 = stablehlo.convert %236 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %238 = stablehlo.broadcast_in_dim %237, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %239 = stablehlo.subtract %231, %238 : tensor<1024x2048x8192xbf16>
    %240 = stablehlo.broadcast_in_dim %237, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %241 = stablehlo.subtract %231, %240 : tensor<1024x2048x8192xbf16>
    %242 = stablehlo.multiply %241, %241 : tensor<1024x2048x8192xbf16>
    %243 = stablehlo.convert %242 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_46 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %244 = stablehlo.reduce(%243 init: %cst_46) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %245 = stablehlo.broadcast_in_dim %244, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_47 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %246 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %247 = stablehlo.divide %245, %246 : tensor<1024x2048x1xf32>
    %248 = stablehlo.convert %247 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_48 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %249 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %250 = stablehlo.add %248, %249 : tensor<1024x2048x1xbf16>
    %251 = stablehlo.rsqrt %250 : tensor<1024x2048x1xbf16>
    %252 = stablehlo.broadcast_in_dim %251, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %253 = stablehlo.multiply %239, %252 : tensor<1024x2048x8192xbf16>
    %254 = stablehlo.dot_general %253, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %255 = stablehlo.multiply %254, %254 : tensor<1024x2048x32768xbf16>
    %256 = stablehlo.multiply %255, %254 : tensor<1024x2048x32768xbf16>
    %cst_49 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %257 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %258 = stablehlo.multiply %257, %256 : tensor<1024x2048x32768xbf16>
    %259 = stablehlo.add %254, %258 : tensor<1024x2048x32768xbf16>
    %cst_50 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %260 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %261 = stablehlo.multiply %260, %259 : tensor<1024x2048x32768xbf16>
    %262 = stablehlo.tanh %261 : tensor<1024x2048x32768xbf16>
    %cst_51 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %263 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %264 = stablehlo.add %263, %262 : tensor<1024x2048x32768xbf16>
    %cst_52 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %265 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %266 = stablehlo.multiply %265, %264 : tensor<1024x2048x32768xbf16>
    %267 = stablehlo.multiply %254, %266 : tensor<1024x2048x32768xbf16>
    %268 = stablehlo.dot_general %267, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %269 = stablehlo.add %231, %268 : tensor<1024x2048x8192xbf16>
    %270 = stablehlo.convert %269 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_53 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %271 = stablehlo.reduce(%270 init: %cst_53) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %272 = stablehlo.broadcast_in_dim %271, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_54 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %273 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %274 = stablehlo.divide %272, %273 : tensor<1024x2048x1xf32>
    %275 = stablehlo.convert %274 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %276 = stablehlo.broadcast_in_dim %275, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %277 = stablehlo.subtract %269, %276 : tensor<1024x2048x8192xbf16>
    %278 = stablehlo.broadcast_in_dim %275, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %279 = stablehlo.subtract %269, %278 : tensor<1024x2048x8192xbf16>
    %280 = stablehlo.multiply %279, %279 : tensor<1024x2048x8192xbf16>
    %281 = stablehlo.convert %280 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_55 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %282 = stablehlo.reduce(%281 init: %cst_55) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %283 = stablehlo.broadcast_in_dim %282, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_56 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %284 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %285 = stablehlo.divide %283, %284 : tensor<1024x2048x1xf32>
    %286 = stablehlo.convert %285 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_57 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %287 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %288 = stablehlo.add %286, %287 : tensor<1024x2048x1xbf16>
    %289 = stablehlo.rsqrt %288 : tensor<1024x2048x1xbf16>
    %290 = stablehlo.broadcast_in_dim %289, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %291 = stablehlo.multiply %277, %290 : tensor<1024x2048x8192xbf16>
    %292 = stablehlo.dot_general %291, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %293 = stablehlo.reshape %292 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %294 = stablehlo.transpose %293, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %295 = stablehlo.dot_general %291, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %296 = stablehlo.reshape %295 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %297 = stablehlo.transpose %296, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %298 = stablehlo.dot_general %291, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %299 = stablehlo.reshape %298 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %300 = stablehlo.transpose %299, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %301 = stablehlo.dot_general %294, %297, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_58 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %302 = stablehlo.broadcast_in_dim %cst_58, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %303 = stablehlo.divide %301, %302 : tensor<1024x64x2048x2048xbf16>
    %cst_59 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %304 = stablehlo.reduce(%303 init: %cst_59) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_60 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %305 = stablehlo.broadcast_in_dim %cst_60, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %306 = stablehlo.maximum %305, %304 : tensor<1024x64x2048xbf16>
    %307 = stablehlo.broadcast_in_dim %306, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %308 = stablehlo.broadcast_in_dim %307, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %309 = stablehlo.subtract %303, %308 : tensor<1024x64x2048x2048xbf16>
    %310 = stablehlo.exponential %309 : tensor<1024x64x2048x2048xbf16>
    %311 = stablehlo.convert %310 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_61 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %312 = stablehlo.reduce(%311 init: %cst_61) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %313 = stablehlo.broadcast_in_dim %312, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %314 = stablehlo.convert %313 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %315 = stablehlo.broadcast_in_dim %314, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %316 = stablehlo.divide %310, %315 : tensor<1024x64x2048x2048xbf16>
    %317 = stablehlo.dot_general %316, %300, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %318 = stablehlo.transpose %317, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %319 = stablehlo.reshape %318 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %320 = stablehlo.dot_general %319, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %321 = stablehlo.add %269, %320 : tensor<1024x2048x8192xbf16>
    %322 = stablehlo.convert %321 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_62 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %323 = stablehlo.reduce(%322 init: %cst_62) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %324 = stablehlo.broadcast_in_dim %323, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_63 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %325 = stablehlo.broadcast_in_dim %cst_63, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %326 = stablehlo.divide %324, %325 : tensor<1024x2048x1xf32>
    %327 = stablehlo.convert %326 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %328 = stablehlo.broadcast_in_dim %327, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %329 = stablehlo.subtract %321, %328 : tensor<1024x2048x8192xbf16>
    %330 = stablehlo.broadcast_in_dim %327, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %331 = stablehlo.subtract %321, %330 : tensor<1024x2048x8192xbf16>
    %332 = stablehlo.multiply %331, %331 : tensor<1024x2048x8192xbf16>
    %333 = stablehlo.convert %332 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_64 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %334 = stablehlo.reduce(%333 init: %cst_64) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %335 = stablehlo.broadcast_in_dim %334, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_65 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %336 = stablehlo.broadcast_in_dim %cst_65, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %337 = stablehlo.divide %335, %336 : tensor<1024x2048x1xf32>
    %338 = stablehlo.convert %337 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_66 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %339 = stablehlo.broadcast_in_dim %cst_66, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %340 = stablehlo.add %338, %339 : tensor<1024x2048x1xbf16>
    %341 = stablehlo.rsqrt %340 : tensor<1024x2048x1xbf16>
    %342 = stablehlo.broadcast_in_dim %341, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %343 = stablehlo.multiply %329, %342 : tensor<1024x2048x8192xbf16>
    %344 = stablehlo.dot_general %343, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %345 = stablehlo.multiply %344, %344 : tensor<1024x2048x32768xbf16>
    %346 = stablehlo.multiply %345, %344 : tensor<1024x2048x32768xbf16>
    %cst_67 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %347 = stablehlo.broadcast_in_dim %cst_67, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %348 = stablehlo.multiply %347, %346 : tensor<1024x2048x32768xbf16>
    %349 = stablehlo.add %344, %348 : tensor<1024x2048x32768xbf16>
    %cst_68 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %350 = stablehlo.broadcast_in_dim %cst_68, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %351 = stablehlo.multiply %350, %349 : tensor<1024x2048x32768xbf16>
    %352 = stablehlo.tanh %351 : tensor<1024x2048x32768xbf16>
    %cst_69 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %353 = stablehlo.broadcast_in_dim %cst_69, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %354 = stablehlo.add %353, %352 : tensor<1024x2048x32768xbf16>
    %cst_70 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %355 = stablehlo.broadcast_in_dim %cst_70, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %356 = stablehlo.multiply %355, %354 : tensor<1024x2048x32768xbf16>
    %357 = stablehlo.multiply %344, %356 : tensor<1024x2048x32768xbf16>
    %358 = stablehlo.dot_general %357, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %359 = stablehlo.add %321, %358 : tensor<1024x2048x8192xbf16>
    %360 = stablehlo.convert %359 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_71 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %361 = stablehlo.reduce(%360 init: %cst_71) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %362 = stablehlo.broadcast_in_dim %361, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_72 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %363 = stablehlo.broadcast_in_dim %cst_72, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %364 = stablehlo.divide %362, %363 : tensor<1024x2048x1xf32>
    %365 = stablehlo.convert %364 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %366 = stablehlo.broadcast_in_dim %365, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %367 = stablehlo.subtract %359, %366 : tensor<1024x2048x8192xbf16>
    %368 = stablehlo.broadcast_in_dim %365, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %369 = stablehlo.subtract %359, %368 : tensor<1024x2048x8192xbf16>
    %370 = stablehlo.multiply %369, %369 : tensor<1024x2048x8192xbf16>
    %371 = stablehlo.convert %370 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_73 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %372 = stablehlo.reduce(%371 init: %cst_73) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %373 = stablehlo.broadcast_in_dim %372, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_74 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %374 = stablehlo.broadcast_in_dim %cst_74, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %375 = stablehlo.divide %373, %374 : tensor<1024x2048x1xf32>
    %376 = stablehlo.convert %375 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_75 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %377 = stablehlo.broadcast_in_dim %cst_75, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %378 = stablehlo.add %376, %377 : tensor<1024x2048x1xbf16>
    %379 = stablehlo.rsqrt %378 : tensor<1024x2048x1xbf16>
    %380 = stablehlo.broadcast_in_dim %379, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %381 = stablehlo.multiply %367, %380 : tensor<1024x2048x8192xbf16>
    %382 = stablehlo.dot_general %381, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %383 = stablehlo.reshape %382 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %384 = stablehlo.transpose %383, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %385 = stablehlo.dot_general %381, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %386 = stablehlo.reshape %385 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %387 = stablehlo.transpose %386, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %388 = stablehlo.dot_general %381, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %389 = stablehlo.reshape %388 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %390 = stablehlo.transpose %389, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %391 = stablehlo.dot_general %384, %387, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_76 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %392 = stablehlo.broadcast_in_dim %cst_76, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %393 = stablehlo.divide %391, %392 : tensor<1024x64x2048x2048xbf16>
    %cst_77 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %394 = stablehlo.reduce(%393 init: %cst_77) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_78 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %395 = stablehlo.broadcast_in_dim %cst_78, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %396 = stablehlo.maximum %395, %394 : tensor<1024x64x2048xbf16>
    %397 = stablehlo.broadcast_in_dim %396, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %398 = stablehlo.broadcast_in_dim %397, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %399 = stablehlo.subtract %393, %398 : tensor<1024x64x2048x2048xbf16>
    %400 = stablehlo.exponential %399 : tensor<1024x64x2048x2048xbf16>
    %401 = stablehlo.convert %400 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_79 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %402 = stablehlo.reduce(%401 init: %cst_79) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %403 = stablehlo.broadcast_in_dim %402, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %404 = stablehlo.convert %403 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %405 = stablehlo.broadcast_in_dim %404, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %406 = stablehlo.divide %400, %405 : tensor<1024x64x2048x2048xbf16>
    %407 = stablehlo.dot_general %406, %390, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %408 = stablehlo.transpose %407, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %409 = stablehlo.reshape %408 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %410 = stablehlo.dot_general %409, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %411 = stablehlo.add %359, %410 : tensor<1024x2048x8192xbf16>
    %412 = stablehlo.convert %411 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_80 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %413 = stablehlo.reduce(%412 init: %cst_80) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %414 = stablehlo.broadcast_in_dim %413, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_81 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %415 = stablehlo.broadcast_in_dim %cst_81, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %416 = stablehlo.divide %414, %415 : tensor<1024x2048x1xf32>
    %417 = stablehlo.convert %416 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %418 = stablehlo.broadcast_in_dim %417, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %419 = stablehlo.subtract %411, %418 : tensor<1024x2048x8192xbf16>
    %420 = stablehlo.broadcast_in_dim %417, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %421 = stablehlo.subtract %411, %420 : tensor<1024x2048x8192xbf16>
    %422 = stablehlo.multiply %421, %421 : tensor<1024x2048x8192xbf16>
    %423 = stablehlo.convert %422 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_82 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %424 = stablehlo.reduce(%423 init: %cst_82) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %425 = stablehlo.broadcast_in_dim %424, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_83 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %426 = stablehlo.broadcast_in_dim %cst_83, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %427 = stablehlo.divide %425, %426 : tensor<1024x2048x1xf32>
    %428 = stablehlo.convert %427 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_84 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %429 = stablehlo.broadcast_in_dim %cst_84, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %430 = stablehlo.add %428, %429 : tensor<1024x2048x1xbf16>
    %431 = stablehlo.rsqrt %430 : tensor<1024x2048x1xbf16>
    %432 = stablehlo.broadcast_in_dim %431, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %433 = stablehlo.multiply %419, %432 : tensor<1024x2048x8192xbf16>
    %434 = stablehlo.dot_general %433, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %435 = stablehlo.multiply %434, %434 : tensor<1024x2048x32768xbf16>
    %436 = stablehlo.multiply %435, %434 : tensor<1024x2048x32768xbf16>
    %cst_85 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %437 = stablehlo.broadcast_in_dim %cst_85, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %438 = stablehlo.multiply %437, %436 : tensor<1024x2048x32768xbf16>
    %439 = stablehlo.add %434, %438 : tensor<1024x2048x32768xbf16>
    %cst_86 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %440 = stablehlo.broadcast_in_dim %cst_86, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %441 = stablehlo.multiply %440, %439 : tensor<1024x2048x32768xbf16>
    %442 = stablehlo.tanh %441 : tensor<1024x2048x32768xbf16>
    %cst_87 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %443 = stablehlo.broadcast_in_dim %cst_87, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %444 = stablehlo.add %443, %442 : tensor<1024x2048x32768xbf16>
    %cst_88 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %445 = stablehlo.broadcast_in_dim %cst_88, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %446 = stablehlo.multiply %445, %444 : tensor<1024x2048x32768xbf16>
    %447 = stablehlo.multiply %434, %446 : tensor<1024x2048x32768xbf16>
    %448 = stablehlo.dot_general %447, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %449 = stablehlo.add %411, %448 : tensor<1024x2048x8192xbf16>
    %450 = stablehlo.convert %449 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_89 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %451 = stablehlo.reduce(%450 init: %cst_89) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %452 = stablehlo.broadcast_in_dim %451, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_90 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %453 = stablehlo.broadcast_in_dim %cst_90, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %454 = stablehlo.divide %452, %453 : tensor<1024x2048x1xf32>
    %455 = stablehlo.convert %454 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %456 = stablehlo.broadcast_in_dim %455, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %457 = stablehlo.subtract %449, %456 : tensor<1024x2048x8192xbf16>
    %458 = stablehlo.broadcast_in_dim %455, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %459 = stablehlo.subtract %449, %458 : tensor<1024x2048x8192xbf16>
    %460 = stablehlo.multiply %459, %459 : tensor<1024x2048x8192xbf16>
    %461 = stablehlo.convert %460 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_91 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %462 = stablehlo.reduce(%461 init: %cst_91) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %463 = stablehlo.broadcast_in_dim %462, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_92 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %464 = stablehlo.broadcast_in_dim %cst_92, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %465 = stablehlo.divide %463, %464 : tensor<1024x2048x1xf32>
    %466 = stablehlo.convert %465 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_93 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %467 = stablehlo.broadcast_in_dim %cst_93, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %468 = stablehlo.add %466, %467 : tensor<1024x2048x1xbf16>
    %469 = stablehlo.rsqrt %468 : tensor<1024x2048x1xbf16>
    %470 = stablehlo.broadcast_in_dim %469, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %471 = stablehlo.multiply %457, %470 : tensor<1024x2048x8192xbf16>
    %472 = stablehlo.dot_general %471, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %473 = stablehlo.reshape %472 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %474 = stablehlo.transpose %473, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %475 = stablehlo.dot_general %471, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %476 = stablehlo.reshape %475 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %477 = stablehlo.transpose %476, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %478 = stablehlo.dot_general %471, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %479 = stablehlo.reshape %478 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %480 = stablehlo.transpose %479, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %481 = stablehlo.dot_general %474, %477, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_94 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %482 = stablehlo.broadcast_in_dim %cst_94, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %483 = stablehlo.divide %481, %482 : tensor<1024x64x2048x2048xbf16>
    %cst_95 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %484 = stablehlo.reduce(%483 init: %cst_95) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_96 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %485 = stablehlo.broadcast_in_dim %cst_96, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %486 = stablehlo.maximum %485, %484 : tensor<1024x64x2048xbf16>
    %487 = stablehlo.broadcast_in_dim %486, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %488 = stablehlo.broadcast_in_dim %487, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %489 = stablehlo.subtract %483, %488 : tensor<1024x64x2048x2048xbf16>
    %490 = stablehlo.exponential %489 : tensor<1024x64x2048x2048xbf16>
    %491 = stablehlo.convert %490 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_97 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %492 = stablehlo.reduce(%491 init: %cst_97) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %493 = stablehlo.broadcast_in_dim %492, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %494 = stablehlo.convert %493 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %495 = stablehlo.broadcast_in_dim %494, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %496 = stablehlo.divide %490, %495 : tensor<1024x64x2048x2048xbf16>
    %497 = stablehlo.dot_general %496, %480, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %498 = stablehlo.transpose %497, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %499 = stablehlo.reshape %498 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %500 = stablehlo.dot_general %499, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %501 = stablehlo.add %449, %500 : tensor<1024x2048x8192xbf16>
    %502 = stablehlo.convert %501 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_98 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %503 = stablehlo.reduce(%502 init: %cst_98) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %504 = stablehlo.broadcast_in_dim %503, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_99 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %505 = stablehlo.broadcast_in_dim %cst_99, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %506 = stablehlo.divide %504, %505 : tensor<1024x2048x1xf32>
    %507 = stablehlo.convert %506 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %508 = stablehlo.broadcast_in_dim %507, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %509 = stablehlo.subtract %501, %508 : tensor<1024x2048x8192xbf16>
    %510 = stablehlo.broadcast_in_dim %507, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %511 = stablehlo.subtract %501, %510 : tensor<1024x2048x8192xbf16>
    %512 = stablehlo.multiply %511, %511 : tensor<1024x2048x8192xbf16>
    %513 = stablehlo.convert %512 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_100 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %514 = stablehlo.reduce(%513 init: %cst_100) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %515 = stablehlo.broadcast_in_dim %514, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_101 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %516 = stablehlo.broadcast_in_dim %cst_101, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %517 = stablehlo.divide %515, %516 : tensor<1024x2048x1xf32>
    %518 = stablehlo.convert %517 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_102 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %519 = stablehlo.broadcast_in_dim %cst_102, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %520 = stablehlo.add %518, %519 : tensor<1024x2048x1xbf16>
    %521 = stablehlo.rsqrt %520 : tensor<1024x2048x1xbf16>
    %522 = stablehlo.broadcast_in_dim %521, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %523 = stablehlo.multiply %509, %522 : tensor<1024x2048x8192xbf16>
    %524 = stablehlo.dot_general %523, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %525 = stablehlo.multiply %524, %524 : tensor<1024x2048x32768xbf16>
    %526 = stablehlo.multiply %525, %524 : tensor<1024x2048x32768xbf16>
    %cst_103 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %527 = stablehlo.broadcast_in_dim %cst_103, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %528 = stablehlo.multiply %527, %526 : tensor<1024x2048x32768xbf16>
    %529 = stablehlo.add %524, %528 : tensor<1024x2048x32768xbf16>
    %cst_104 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %530 = stablehlo.broadcast_in_dim %cst_104, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %531 = stablehlo.multiply %530, %529 : tensor<1024x2048x32768xbf16>
    %532 = stablehlo.tanh %531 : tensor<1024x2048x32768xbf16>
    %cst_105 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %533 = stablehlo.broadcast_in_dim %cst_105, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %534 = stablehlo.add %533, %532 : tensor<1024x2048x32768xbf16>
    %cst_106 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %535 = stablehlo.broadcast_in_dim %cst_106, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %536 = stablehlo.multiply %535, %534 : tensor<1024x2048x32768xbf16>
    %537 = stablehlo.multiply %524, %536 : tensor<1024x2048x32768xbf16>
    %538 = stablehlo.dot_general %537, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %539 = stablehlo.add %501, %538 : tensor<1024x2048x8192xbf16>
    %540 = stablehlo.convert %539 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_107 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %541 = stablehlo.reduce(%540 init: %cst_107) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %542 = stablehlo.broadcast_in_dim %541, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_108 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %543 = stablehlo.broadcast_in_dim %cst_108, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %544 = stablehlo.divide %542, %543 : tensor<1024x2048x1xf32>
    %545 = stablehlo.convert %544 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %546 = stablehlo.broadcast_in_dim %545, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %547 = stablehlo.subtract %539, %546 : tensor<1024x2048x8192xbf16>
    %548 = stablehlo.broadcast_in_dim %545, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %549 = stablehlo.subtract %539, %548 : tensor<1024x2048x8192xbf16>
    %550 = stablehlo.multiply %549, %549 : tensor<1024x2048x8192xbf16>
    %551 = stablehlo.convert %550 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_109 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %552 = stablehlo.reduce(%551 init: %cst_109) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %553 = stablehlo.broadcast_in_dim %552, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_110 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %554 = stablehlo.broadcast_in_dim %cst_110, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %555 = stablehlo.divide %553, %554 : tensor<1024x2048x1xf32>
    %556 = stablehlo.convert %555 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_111 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %557 = stablehlo.broadcast_in_dim %cst_111, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %558 = stablehlo.add %556, %557 : tensor<1024x2048x1xbf16>
    %559 = stablehlo.rsqrt %558 : tensor<1024x2048x1xbf16>
    %560 = stablehlo.broadcast_in_dim %559, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %561 = stablehlo.multiply %547, %560 : tensor<1024x2048x8192xbf16>
    %562 = stablehlo.dot_general %561, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %563 = stablehlo.reshape %562 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %564 = stablehlo.transpose %563, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %565 = stablehlo.dot_general %561, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %566 = stablehlo.reshape %565 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %567 = stablehlo.transpose %566, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %568 = stablehlo.dot_general %561, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %569 = stablehlo.reshape %568 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %570 = stablehlo.transpose %569, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %571 = stablehlo.dot_general %564, %567, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_112 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %572 = stablehlo.broadcast_in_dim %cst_112, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %573 = stablehlo.divide %571, %572 : tensor<1024x64x2048x2048xbf16>
    %cst_113 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %574 = stablehlo.reduce(%573 init: %cst_113) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_114 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %575 = stablehlo.broadcast_in_dim %cst_114, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %576 = stablehlo.maximum %575, %574 : tensor<1024x64x2048xbf16>
    %577 = stablehlo.broadcast_in_dim %576, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %578 = stablehlo.broadcast_in_dim %577, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %579 = stablehlo.subtract %573, %578 : tensor<1024x64x2048x2048xbf16>
    %580 = stablehlo.exponential %579 : tensor<1024x64x2048x2048xbf16>
    %581 = stablehlo.convert %580 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_115 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %582 = stablehlo.reduce(%581 init: %cst_115) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %583 = stablehlo.broadcast_in_dim %582, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %584 = stablehlo.convert %583 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %585 = stablehlo.broadcast_in_dim %584, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %586 = stablehlo.divide %580, %585 : tensor<1024x64x2048x2048xbf16>
    %587 = stablehlo.dot_general %586, %570, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %588 = stablehlo.transpose %587, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %589 = stablehlo.reshape %588 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %590 = stablehlo.dot_general %589, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %591 = stablehlo.add %539, %590 : tensor<1024x2048x8192xbf16>
    %592 = stablehlo.convert %591 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_116 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %593 = stablehlo.reduce(%592 init: %cst_116) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %594 = stablehlo.broadcast_in_dim %593, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_117 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %595 = stablehlo.broadcast_in_dim %cst_117, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %596 = stablehlo.divide %594, %595 : tensor<1024x2048x1xf32>
    %597 = stablehlo.convert %596 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %598 = stablehlo.broadcast_in_dim %597, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %599 = stablehlo.subtract %591, %598 : tensor<1024x2048x8192xbf16>
    %600 = stablehlo.broadcast_in_dim %597, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %601 = stablehlo.subtract %591, %600 : tensor<1024x2048x8192xbf16>
    %602 = stablehlo.multiply %601, %601 : tensor<1024x2048x8192xbf16>
    %603 = stablehlo.convert %602 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_118 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %604 = stablehlo.reduce(%603 init: %cst_118) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %605 = stablehlo.broadcast_in_dim %604, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_119 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %606 = stablehlo.broadcast_in_dim %cst_119, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %607 = stablehlo.divide %605, %606 : tensor<1024x2048x1xf32>
    %608 = stablehlo.convert %607 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_120 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %609 = stablehlo.broadcast_in_dim %cst_120, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %610 = stablehlo.add %608, %609 : tensor<1024x2048x1xbf16>
    %611 = stablehlo.rsqrt %610 : tensor<1024x2048x1xbf16>
    %612 = stablehlo.broadcast_in_dim %611, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %613 = stablehlo.multiply %599, %612 : tensor<1024x2048x8192xbf16>
    %614 = stablehlo.dot_general %613, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %615 = stablehlo.multiply %614, %614 : tensor<1024x2048x32768xbf16>
    %616 = stablehlo.multiply %615, %614 : tensor<1024x2048x32768xbf16>
    %cst_121 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %617 = stablehlo.broadcast_in_dim %cst_121, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %618 = stablehlo.multiply %617, %616 : tensor<1024x2048x32768xbf16>
    %619 = stablehlo.add %614, %618 : tensor<1024x2048x32768xbf16>
    %cst_122 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %620 = stablehlo.broadcast_in_dim %cst_122, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %621 = stablehlo.multiply %620, %619 : tensor<1024x2048x32768xbf16>
    %622 = stablehlo.tanh %621 : tensor<1024x2048x32768xbf16>
    %cst_123 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %623 = stablehlo.broadcast_in_dim %cst_123, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %624 = stablehlo.add %623, %622 : tensor<1024x2048x32768xbf16>
    %cst_124 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %625 = stablehlo.broadcast_in_dim %cst_124, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %626 = stablehlo.multiply %625, %624 : tensor<1024x2048x32768xbf16>
    %627 = stablehlo.multiply %614, %626 : tensor<1024x2048x32768xbf16>
    %628 = stablehlo.dot_general %627, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %629 = stablehlo.add %591, %628 : tensor<1024x2048x8192xbf16>
    %630 = stablehlo.convert %629 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_125 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %631 = stablehlo.reduce(%630 init: %cst_125) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %632 = stablehlo.broadcast_in_dim %631, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_126 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %633 = stablehlo.broadcast_in_dim %cst_126, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %634 = stablehlo.divide %632, %633 : tensor<1024x2048x1xf32>
    %635 = stablehlo.convert %634 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %636 = stablehlo.broadcast_in_dim %635, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %637 = stablehlo.subtract %629, %636 : tensor<1024x2048x8192xbf16>
    %638 = stablehlo.broadcast_in_dim %635, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %639 = stablehlo.subtract %629, %638 : tensor<1024x2048x8192xbf16>
    %640 = stablehlo.multiply %639, %639 : tensor<1024x2048x8192xbf16>
    %641 = stablehlo.convert %640 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_127 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %642 = stablehlo.reduce(%641 init: %cst_127) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %643 = stablehlo.broadcast_in_dim %642, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_128 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %644 = stablehlo.broadcast_in_dim %cst_128, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %645 = stablehlo.divide %643, %644 : tensor<1024x2048x1xf32>
    %646 = stablehlo.convert %645 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_129 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %647 = stablehlo.broadcast_in_dim %cst_129, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %648 = stablehlo.add %646, %647 : tensor<1024x2048x1xbf16>
    %649 = stablehlo.rsqrt %648 : tensor<1024x2048x1xbf16>
    %650 = stablehlo.broadcast_in_dim %649, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %651 = stablehlo.multiply %637, %650 : tensor<1024x2048x8192xbf16>
    %652 = stablehlo.dot_general %651, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %653 = stablehlo.reshape %652 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %654 = stablehlo.transpose %653, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %655 = stablehlo.dot_general %651, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %656 = stablehlo.reshape %655 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %657 = stablehlo.transpose %656, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %658 = stablehlo.dot_general %651, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %659 = stablehlo.reshape %658 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %660 = stablehlo.transpose %659, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %661 = stablehlo.dot_general %654, %657, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_130 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %662 = stablehlo.broadcast_in_dim %cst_130, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %663 = stablehlo.divide %661, %662 : tensor<1024x64x2048x2048xbf16>
    %cst_131 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %664 = stablehlo.reduce(%663 init: %cst_131) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_132 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %665 = stablehlo.broadcast_in_dim %cst_132, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %666 = stablehlo.maximum %665, %664 : tensor<1024x64x2048xbf16>
    %667 = stablehlo.broadcast_in_dim %666, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %668 = stablehlo.broadcast_in_dim %667, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %669 = stablehlo.subtract %663, %668 : tensor<1024x64x2048x2048xbf16>
    %670 = stablehlo.exponential %669 : tensor<1024x64x2048x2048xbf16>
    %671 = stablehlo.convert %670 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_133 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %672 = stablehlo.reduce(%671 init: %cst_133) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %673 = stablehlo.broadcast_in_dim %672, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %674 = stablehlo.convert %673 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %675 = stablehlo.broadcast_in_dim %674, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %676 = stablehlo.divide %670, %675 : tensor<1024x64x2048x2048xbf16>
    %677 = stablehlo.dot_general %676, %660, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %678 = stablehlo.transpose %677, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %679 = stablehlo.reshape %678 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %680 = stablehlo.dot_general %679, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %681 = stablehlo.add %629, %680 : tensor<1024x2048x8192xbf16>
    %682 = stablehlo.convert %681 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_134 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %683 = stablehlo.reduce(%682 init: %cst_134) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %684 = stablehlo.broadcast_in_dim %683, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_135 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %685 = stablehlo.broadcast_in_dim %cst_135, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %686 = stablehlo.divide %684, %685 : tensor<1024x2048x1xf32>
    %687 = stablehlo.convert %686 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %688 = stablehlo.broadcast_in_dim %687, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %689 = stablehlo.subtract %681, %688 : tensor<1024x2048x8192xbf16>
    %690 = stablehlo.broadcast_in_dim %687, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %691 = stablehlo.subtract %681, %690 : tensor<1024x2048x8192xbf16>
    %692 = stablehlo.multiply %691, %691 : tensor<1024x2048x8192xbf16>
    %693 = stablehlo.convert %692 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_136 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %694 = stablehlo.reduce(%693 init: %cst_136) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %695 = stablehlo.broadcast_in_dim %694, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_137 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %696 = stablehlo.broadcast_in_dim %cst_137, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %697 = stablehlo.divide %695, %696 : tensor<1024x2048x1xf32>
    %698 = stablehlo.convert %697 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_138 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %699 = stablehlo.broadcast_in_dim %cst_138, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %700 = stablehlo.add %698, %699 : tensor<1024x2048x1xbf16>
    %701 = stablehlo.rsqrt %700 : tensor<1024x2048x1xbf16>
    %702 = stablehlo.broadcast_in_dim %701, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %703 = stablehlo.multiply %689, %702 : tensor<1024x2048x8192xbf16>
    %704 = stablehlo.dot_general %703, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %705 = stablehlo.multiply %704, %704 : tensor<1024x2048x32768xbf16>
    %706 = stablehlo.multiply %705, %704 : tensor<1024x2048x32768xbf16>
    %cst_139 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %707 = stablehlo.broadcast_in_dim %cst_139, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %708 = stablehlo.multiply %707, %706 : tensor<1024x2048x32768xbf16>
    %709 = stablehlo.add %704, %708 : tensor<1024x2048x32768xbf16>
    %cst_140 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %710 = stablehlo.broadcast_in_dim %cst_140, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %711 = stablehlo.multiply %710, %709 : tensor<1024x2048x32768xbf16>
    %712 = stablehlo.tanh %711 : tensor<1024x2048x32768xbf16>
    %cst_141 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %713 = stablehlo.broadcast_in_dim %cst_141, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %714 = stablehlo.add %713, %712 : tensor<1024x2048x32768xbf16>
    %cst_142 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %715 = stablehlo.broadcast_in_dim %cst_142, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %716 = stablehlo.multiply %715, %714 : tensor<1024x2048x32768xbf16>
    %717 = stablehlo.multiply %704, %716 : tensor<1024x2048x32768xbf16>
    %718 = stablehlo.dot_general %717, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %719 = stablehlo.add %681, %718 : tensor<1024x2048x8192xbf16>
    %720 = stablehlo.convert %719 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_143 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %721 = stablehlo.reduce(%720 init: %cst_143) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %722 = stablehlo.broadcast_in_dim %721, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_144 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %723 = stablehlo.broadcast_in_dim %cst_144, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %724 = stablehlo.divide %722, %723 : tensor<1024x2048x1xf32>
    %725 = stablehlo.convert %724 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %726 = stablehlo.broadcast_in_dim %725, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %727 = stablehlo.subtract %719, %726 : tensor<1024x2048x8192xbf16>
    %728 = stablehlo.broadcast_in_dim %725, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %729 = stablehlo.subtract %719, %728 : tensor<1024x2048x8192xbf16>
    %730 = stablehlo.multiply %729, %729 : tensor<1024x2048x8192xbf16>
    %731 = stablehlo.convert %730 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_145 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %732 = stablehlo.reduce(%731 init: %cst_145) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %733 = stablehlo.broadcast_in_dim %732, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_146 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %734 = stablehlo.broadcast_in_dim %cst_146, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %735 = stablehlo.divide %733, %734 : tensor<1024x2048x1xf32>
    %736 = stablehlo.convert %735 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_147 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %737 = stablehlo.broadcast_in_dim %cst_147, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %738 = stablehlo.add %736, %737 : tensor<1024x2048x1xbf16>
    %739 = stablehlo.rsqrt %738 : tensor<1024x2048x1xbf16>
    %740 = stablehlo.broadcast_in_dim %739, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %741 = stablehlo.multiply %727, %740 : tensor<1024x2048x8192xbf16>
    %742 = stablehlo.dot_general %741, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %743 = stablehlo.reshape %742 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %744 = stablehlo.transpose %743, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %745 = stablehlo.dot_general %741, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %746 = stablehlo.reshape %745 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %747 = stablehlo.transpose %746, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %748 = stablehlo.dot_general %741, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %749 = stablehlo.reshape %748 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %750 = stablehlo.transpose %749, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %751 = stablehlo.dot_general %744, %747, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_148 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %752 = stablehlo.broadcast_in_dim %cst_148, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %753 = stablehlo.divide %751, %752 : tensor<1024x64x2048x2048xbf16>
    %cst_149 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %754 = stablehlo.reduce(%753 init: %cst_149) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_150 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %755 = stablehlo.broadcast_in_dim %cst_150, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %756 = stablehlo.maximum %755, %754 : tensor<1024x64x2048xbf16>
    %757 = stablehlo.broadcast_in_dim %756, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %758 = stablehlo.broadcast_in_dim %757, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %759 = stablehlo.subtract %753, %758 : tensor<1024x64x2048x2048xbf16>
    %760 = stablehlo.exponential %759 : tensor<1024x64x2048x2048xbf16>
    %761 = stablehlo.convert %760 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_151 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %762 = stablehlo.reduce(%761 init: %cst_151) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %763 = stablehlo.broadcast_in_dim %762, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %764 = stablehlo.convert %763 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %765 = stablehlo.broadcast_in_dim %764, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %766 = stablehlo.divide %760, %765 : tensor<1024x64x2048x2048xbf16>
    %767 = stablehlo.dot_general %766, %750, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %768 = stablehlo.transpose %767, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %769 = stablehlo.reshape %768 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %770 = stablehlo.dot_general %769, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %771 = stablehlo.add %719, %770 : tensor<1024x2048x8192xbf16>
    %772 = stablehlo.convert %771 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_152 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %773 = stablehlo.reduce(%772 init: %cst_152) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %774 = stablehlo.broadcast_in_dim %773, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_153 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %775 = stablehlo.broadcast_in_dim %cst_153, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %776 = stablehlo.divide %774, %775 : tensor<1024x2048x1xf32>
    %777 = stablehlo.convert %776 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %778 = stablehlo.broadcast_in_dim %777, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %779 = stablehlo.subtract %771, %778 : tensor<1024x2048x8192xbf16>
    %780 = stablehlo.broadcast_in_dim %777, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %781 = stablehlo.subtract %771, %780 : tensor<1024x2048x8192xbf16>
    %782 = stablehlo.multiply %781, %781 : tensor<1024x2048x8192xbf16>
    %783 = stablehlo.convert %782 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_154 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %784 = stablehlo.reduce(%783 init: %cst_154) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %785 = stablehlo.broadcast_in_dim %784, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_155 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %786 = stablehlo.broadcast_in_dim %cst_155, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %787 = stablehlo.divide %785, %786 : tensor<1024x2048x1xf32>
    %788 = stablehlo.convert %787 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_156 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %789 = stablehlo.broadcast_in_dim %cst_156, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %790 = stablehlo.add %788, %789 : tensor<1024x2048x1xbf16>
    %791 = stablehlo.rsqrt %790 : tensor<1024x2048x1xbf16>
    %792 = stablehlo.broadcast_in_dim %791, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %793 = stablehlo.multiply %779, %792 : tensor<1024x2048x8192xbf16>
    %794 = stablehlo.dot_general %793, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %795 = stablehlo.multiply %794, %794 : tensor<1024x2048x32768xbf16>
    %796 = stablehlo.multiply %795, %794 : tensor<1024x2048x32768xbf16>
    %cst_157 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %797 = stablehlo.broadcast_in_dim %cst_157, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %798 = stablehlo.multiply %797, %796 : tensor<1024x2048x32768xbf16>
    %799 = stablehlo.add %794, %798 : tensor<1024x2048x32768xbf16>
    %cst_158 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %800 = stablehlo.broadcast_in_dim %cst_158, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %801 = stablehlo.multiply %800, %799 : tensor<1024x2048x32768xbf16>
    %802 = stablehlo.tanh %801 : tensor<1024x2048x32768xbf16>
    %cst_159 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %803 = stablehlo.broadcast_in_dim %cst_159, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %804 = stablehlo.add %803, %802 : tensor<1024x2048x32768xbf16>
    %cst_160 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %805 = stablehlo.broadcast_in_dim %cst_160, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %806 = stablehlo.multiply %805, %804 : tensor<1024x2048x32768xbf16>
    %807 = stablehlo.multiply %794, %806 : tensor<1024x2048x32768xbf16>
    %808 = stablehlo.dot_general %807, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %809 = stablehlo.add %771, %808 : tensor<1024x2048x8192xbf16>
    %810 = stablehlo.convert %809 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_161 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %811 = stablehlo.reduce(%810 init: %cst_161) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %812 = stablehlo.broadcast_in_dim %811, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_162 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %813 = stablehlo.broadcast_in_dim %cst_162, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %814 = stablehlo.divide %812, %813 : tensor<1024x2048x1xf32>
    %815 = stablehlo.convert %814 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %816 = stablehlo.broadcast_in_dim %815, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %817 = stablehlo.subtract %809, %816 : tensor<1024x2048x8192xbf16>
    %818 = stablehlo.broadcast_in_dim %815, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %819 = stablehlo.subtract %809, %818 : tensor<1024x2048x8192xbf16>
    %820 = stablehlo.multiply %819, %819 : tensor<1024x2048x8192xbf16>
    %821 = stablehlo.convert %820 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_163 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %822 = stablehlo.reduce(%821 init: %cst_163) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %823 = stablehlo.broadcast_in_dim %822, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_164 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %824 = stablehlo.broadcast_in_dim %cst_164, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %825 = stablehlo.divide %823, %824 : tensor<1024x2048x1xf32>
    %826 = stablehlo.convert %825 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_165 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %827 = stablehlo.broadcast_in_dim %cst_165, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %828 = stablehlo.add %826, %827 : tensor<1024x2048x1xbf16>
    %829 = stablehlo.rsqrt %828 : tensor<1024x2048x1xbf16>
    %830 = stablehlo.broadcast_in_dim %829, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %831 = stablehlo.multiply %817, %830 : tensor<1024x2048x8192xbf16>
    %832 = stablehlo.dot_general %831, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %833 = stablehlo.reshape %832 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %834 = stablehlo.transpose %833, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %835 = stablehlo.dot_general %831, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %836 = stablehlo.reshape %835 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %837 = stablehlo.transpose %836, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %838 = stablehlo.dot_general %831, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %839 = stablehlo.reshape %838 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x64x128xbf16>
    %840 = stablehlo.transpose %839, dims = [0, 2, 1, 3] : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %841 = stablehlo.dot_general %834, %837, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x128xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %cst_166 = stablehlo.constant dense<1.131250e+01> : tensor<bf16>
    %842 = stablehlo.broadcast_in_dim %cst_166, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048x2048xbf16>
    %843 = stablehlo.divide %841, %842 : tensor<1024x64x2048x2048xbf16>
    %cst_167 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %844 = stablehlo.reduce(%843 init: %cst_167) applies stablehlo.maximum across dimensions = [3] : (tensor<1024x64x2048x2048xbf16>, tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %cst_168 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %845 = stablehlo.broadcast_in_dim %cst_168, dims = [] : (tensor<bf16>) -> tensor<1024x64x2048xbf16>
    %846 = stablehlo.maximum %845, %844 : tensor<1024x64x2048xbf16>
    %847 = stablehlo.broadcast_in_dim %846, dims = [0, 1, 2] : (tensor<1024x64x2048xbf16>) -> tensor<1024x64x2048x1xbf16>
    %848 = stablehlo.broadcast_in_dim %847, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %849 = stablehlo.subtract %843, %848 : tensor<1024x64x2048x2048xbf16>
    %850 = stablehlo.exponential %849 : tensor<1024x64x2048x2048xbf16>
    %851 = stablehlo.convert %850 : (tensor<1024x64x2048x2048xbf16>) -> tensor<1024x64x2048x2048xf32>
    %cst_169 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %852 = stablehlo.reduce(%851 init: %cst_169) applies stablehlo.add across dimensions = [3] : (tensor<1024x64x2048x2048xf32>, tensor<f32>) -> tensor<1024x64x2048xf32>
    %853 = stablehlo.broadcast_in_dim %852, dims = [0, 1, 2] : (tensor<1024x64x2048xf32>) -> tensor<1024x64x2048x1xf32>
    %854 = stablehlo.convert %853 : (tensor<1024x64x2048x1xf32>) -> tensor<1024x64x2048x1xbf16>
    %855 = stablehlo.broadcast_in_dim %854, dims = [0, 1, 2, 3] : (tensor<1024x64x2048x1xbf16>) -> tensor<1024x64x2048x2048xbf16>
    %856 = stablehlo.divide %850, %855 : tensor<1024x64x2048x2048xbf16>
    %857 = stablehlo.dot_general %856, %840, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<1024x64x2048x2048xbf16>, tensor<1024x64x2048x128xbf16>) -> tensor<1024x64x2048x128xbf16>
    %858 = stablehlo.transpose %857, dims = [0, 2, 1, 3] : (tensor<1024x64x2048x128xbf16>) -> tensor<1024x2048x64x128xbf16>
    %859 = stablehlo.reshape %858 : (tensor<1024x2048x64x128xbf16>) -> tensor<1024x2048x8192xbf16>
    %860 = stablehlo.dot_general %859, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %861 = stablehlo.add %809, %860 : tensor<1024x2048x8192xbf16>
    %862 = stablehlo.convert %861 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_170 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %863 = stablehlo.reduce(%862 init: %cst_170) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %864 = stablehlo.broadcast_in_dim %863, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_171 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %865 = stablehlo.broadcast_in_dim %cst_171, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %866 = stablehlo.divide %864, %865 : tensor<1024x2048x1xf32>
    %867 = stablehlo.convert %866 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %868 = stablehlo.broadcast_in_dim %867, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %869 = stablehlo.subtract %861, %868 : tensor<1024x2048x8192xbf16>
    %870 = stablehlo.broadcast_in_dim %867, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %871 = stablehlo.subtract %861, %870 : tensor<1024x2048x8192xbf16>
    %872 = stablehlo.multiply %871, %871 : tensor<1024x2048x8192xbf16>
    %873 = stablehlo.convert %872 : (tensor<1024x2048x8192xbf16>) -> tensor<1024x2048x8192xf32>
    %cst_172 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %874 = stablehlo.reduce(%873 init: %cst_172) applies stablehlo.add across dimensions = [2] : (tensor<1024x2048x8192xf32>, tensor<f32>) -> tensor<1024x2048xf32>
    %875 = stablehlo.broadcast_in_dim %874, dims = [0, 1] : (tensor<1024x2048xf32>) -> tensor<1024x2048x1xf32>
    %cst_173 = stablehlo.constant dense<8.192000e+03> : tensor<f32>
    %876 = stablehlo.broadcast_in_dim %cst_173, dims = [] : (tensor<f32>) -> tensor<1024x2048x1xf32>
    %877 = stablehlo.divide %875, %876 : tensor<1024x2048x1xf32>
    %878 = stablehlo.convert %877 : (tensor<1024x2048x1xf32>) -> tensor<1024x2048x1xbf16>
    %cst_174 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %879 = stablehlo.broadcast_in_dim %cst_174, dims = [] : (tensor<bf16>) -> tensor<1024x2048x1xbf16>
    %880 = stablehlo.add %878, %879 : tensor<1024x2048x1xbf16>
    %881 = stablehlo.rsqrt %880 : tensor<1024x2048x1xbf16>
    %882 = stablehlo.broadcast_in_dim %881, dims = [0, 1, 2] : (tensor<1024x2048x1xbf16>) -> tensor<1024x2048x8192xbf16>
    %883 = stablehlo.multiply %869, %882 : tensor<1024x2048x8192xbf16>
    %884 = stablehlo.dot_general %883, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x8192xbf16>, tensor<8192x32768xbf16>) -> tensor<1024x2048x32768xbf16>
    %885 = stablehlo.multiply %884, %884 : tensor<1024x2048x32768xbf16>
    %886 = stablehlo.multiply %885, %884 : tensor<1024x2048x32768xbf16>
    %cst_175 = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %887 = stablehlo.broadcast_in_dim %cst_175, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %888 = stablehlo.multiply %887, %886 : tensor<1024x2048x32768xbf16>
    %889 = stablehlo.add %884, %888 : tensor<1024x2048x32768xbf16>
    %cst_176 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %890 = stablehlo.broadcast_in_dim %cst_176, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %891 = stablehlo.multiply %890, %889 : tensor<1024x2048x32768xbf16>
    %892 = stablehlo.tanh %891 : tensor<1024x2048x32768xbf16>
    %cst_177 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %893 = stablehlo.broadcast_in_dim %cst_177, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %894 = stablehlo.add %893, %892 : tensor<1024x2048x32768xbf16>
    %cst_178 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %895 = stablehlo.broadcast_in_dim %cst_178, dims = [] : (tensor<bf16>) -> tensor<1024x2048x32768xbf16>
    %896 = stablehlo.multiply %895, %894 : tensor<1024x2048x32768xbf16>
    %897 = stablehlo.multiply %884, %896 : tensor<1024x2048x32768xbf16>
    %898 = stablehlo.dot_general %897, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048x32768xbf16>, tensor<32768x8192xbf16>) -> tensor<1024x2048x8192xbf16>
    %899 = stablehlo.add %861, %898 : tensor<1024x2048x8192xbf16>
    return %899 : tensor<1024x2048x8192xbf16>
  }
}
