// A split pair: %h is read by the backward only through `h > 0` (ReLU's
// derivative), %r as a value (the second layer's weight gradient).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @relu_fwd(%x: tensor<8x64xf32>, %w: tensor<64x256xf32>, %w2: tensor<256x16xf32>) -> (tensor<f32> {act.loss}, tensor<8x256xf32>, tensor<8x256xf32>)
    attributes {act.backward = @relu_bwd, act.num_saved = 2 : i64} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x256xf32>) -> tensor<8x256xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x256xf32>) outs(%acc : tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x256xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<8x256xf32>, tensor<256x16xf32>) outs(%acc2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%y : tensor<8x16xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  return %s, %h, %r : tensor<f32>, tensor<8x256xf32>, tensor<8x256xf32>
}
func.func @relu_bwd(%h: tensor<8x256xf32>, %r: tensor<8x256xf32>, %ds: tensor<f32>) -> (tensor<8x256xf32>, tensor<256x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %dy0 = tensor.empty() : tensor<8x16xf32>
  %dy = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ds : tensor<f32>) outs(%dy0 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x16xf32>
  %rt0 = tensor.empty() : tensor<256x8xf32>
  %rt = linalg.transpose ins(%r : tensor<8x256xf32>) outs(%rt0 : tensor<256x8xf32>) permutation = [1, 0]
  %g0 = tensor.empty() : tensor<256x16xf32>
  %g1 = linalg.fill ins(%zero : f32) outs(%g0 : tensor<256x16xf32>) -> tensor<256x16xf32>
  %dw2 = linalg.matmul ins(%rt, %dy : tensor<256x8xf32>, tensor<8x16xf32>) outs(%g1 : tensor<256x16xf32>) -> tensor<256x16xf32>
  %dh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.cmpf ogt, %a, %zero : f32
    %one = arith.constant 1.0 : f32
    %v = arith.select %p, %one, %zero : f32
    linalg.yield %v : f32
  } -> tensor<8x256xf32>
  return %dh, %dw2 : tensor<8x256xf32>, tensor<256x16xf32>
}
