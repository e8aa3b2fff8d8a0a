// SiLU (Swish-1) x * sigmoid(x): its derivative s * (1 + x * (1 - s)).
//   act-fewbit-table examples/fewbit/silu.mlir
func.func @silu_derivative(%x: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %n = arith.negf %x : f32
  %e = math.exp %n : f32
  %d = arith.addf %one, %e : f32
  %s = arith.divf %one, %d : f32
  %c = arith.subf %one, %s : f32
  %xc = arith.mulf %x, %c : f32
  %p = arith.addf %one, %xc : f32
  %r = arith.mulf %s, %p : f32
  return %r : f32
}
