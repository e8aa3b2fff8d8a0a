// Softplus log(1 + exp(x)): its derivative is sigmoid(x).
//   act-fewbit-table examples/fewbit/softplus.mlir
func.func @softplus_derivative(%x: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %n = arith.negf %x : f32
  %e = math.exp %n : f32
  %d = arith.addf %one, %e : f32
  %s = arith.divf %one, %d : f32
  return %s : f32
}
