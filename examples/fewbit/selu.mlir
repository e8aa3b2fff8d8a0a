// SELU: scale * x for x > 0, scale * alpha * (exp(x) - 1) otherwise; its
// derivative is scale, or scale * alpha * exp(x).
//   act-fewbit-table examples/fewbit/selu.mlir
func.func @selu_derivative(%x: f32) -> f32 {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 1.0507009873554804934 : f32
  %sa = arith.constant 1.7580993408473768599 : f32
  %e = math.exp %x : f32
  %neg = arith.mulf %sa, %e : f32
  %pos = arith.cmpf ogt, %x, %zero : f32
  %d = arith.select %pos, %scale, %neg : f32
  return %d : f32
}
