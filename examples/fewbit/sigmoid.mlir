// Sigmoid s(x) = 1 / (1 + exp(-x)): its derivative s * (1 - s).
//   act-fewbit-table examples/fewbit/sigmoid.mlir
func.func @sigmoid_derivative(%x: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %n = arith.negf %x : f32
  %e = math.exp %n : f32
  %d = arith.addf %one, %e : f32
  %s = arith.divf %one, %d : f32
  %c = arith.subf %one, %s : f32
  %r = arith.mulf %s, %c : f32
  return %r : f32
}
