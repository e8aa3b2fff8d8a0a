// GELU's derivative, as the exporter writes aten.gelu_backward:
// Phi(x) + x * phi(x), Phi the normal CDF, phi its density.
//   act-fewbit-table examples/fewbit/gelu.mlir
func.func @gelu_derivative(%x: f32) -> f32 {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.70710678118654752 : f32
  %mhalf = arith.constant -0.5 : f32
  %rsqrt2pi = arith.constant 0.39894228040143268 : f32
  %u = arith.mulf %x, %rsqrt2 : f32
  %e = math.erf %u : f32
  %e1 = arith.addf %one, %e : f32
  %cdf = arith.mulf %half, %e1 : f32
  %x2 = arith.mulf %x, %x : f32
  %t = arith.mulf %mhalf, %x2 : f32
  %g = math.exp %t : f32
  %pdf = arith.mulf %g, %rsqrt2pi : f32
  %xpdf = arith.mulf %x, %pdf : f32
  %d = arith.addf %cdf, %xpdf : f32
  return %d : f32
}
