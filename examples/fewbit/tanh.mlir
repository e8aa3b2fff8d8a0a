// tanh: its derivative 1 - tanh(x)^2.
//   act-fewbit-table examples/fewbit/tanh.mlir
func.func @tanh_derivative(%x: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %t = math.tanh %x : f32
  %t2 = arith.mulf %t, %t : f32
  %r = arith.subf %one, %t2 : f32
  return %r : f32
}
