// RUN: act-opt %s -act-insert-encode-decode -split-input-file -verify-diagnostics
// The memory report analyzes the same way and reports the same errors.
// RUN: act-opt %s -act-memory-report -split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{act: training step @no_results has no results, so no loss: mark the loss result with `act.loss`}}
func.func @no_results(%x: tensor<64x64xf32>) {
  return
}

// -----

// expected-error @+1 {{act: training step @not_scalar has no result marked `act.loss` and result 0 ('tensor<64x64xf32>') is not a scalar loss}}
func.func @not_scalar(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %y = math.exp %x : tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// -----

// expected-error @+1 {{act: @two_losses marks results 0 and 1 as `act.loss`; mark one}}
func.func @two_losses(%x: f32) -> (f32 {act.loss}, f32 {act.loss}) {
  return %x, %x : f32, f32
}

// -----

// expected-error @+1 {{act: training graph @blocks has 2 blocks; only single-block functions (structured control flow) are supported}}
func.func @blocks(%x: f32) -> f32 {
  cf.br ^bb1
^bb1:
  return %x : f32
}

// -----

// expected-error @+1 {{act: `act.backward` of @fwd must name a function with a body in this module; got @missing}}
func.func @fwd(%x: tensor<64xf32>) -> (f32, tensor<64xf32>) attributes {act.backward = @missing, act.num_saved = 1 : i64} {
  %c0 = arith.constant 0 : index
  %l = tensor.extract %x[%c0] : tensor<64xf32>
  return %l, %x : f32, tensor<64xf32>
}

// -----

// expected-error @+1 {{act: split forward function @fwd needs `act.num_saved`, a non-negative integer}}
func.func @fwd(%x: tensor<64xf32>) -> (f32, tensor<64xf32>) attributes {act.backward = @bwd} {
  %c0 = arith.constant 0 : index
  %l = tensor.extract %x[%c0] : tensor<64xf32>
  return %l, %x : f32, tensor<64xf32>
}
func.func @bwd(%s: tensor<64xf32>, %g: f32) -> tensor<64xf32> {
  return %s : tensor<64xf32>
}

// -----

// expected-error @+1 {{act: @fwd declares act.num_saved = 3 but returns 2 values and @bwd takes 2}}
func.func @fwd(%x: tensor<64xf32>) -> (f32, tensor<64xf32>) attributes {act.backward = @bwd, act.num_saved = 3 : i64} {
  %c0 = arith.constant 0 : index
  %l = tensor.extract %x[%c0] : tensor<64xf32>
  return %l, %x : f32, tensor<64xf32>
}
func.func @bwd(%s: tensor<64xf32>, %g: f32) -> tensor<64xf32> {
  return %s : tensor<64xf32>
}

// -----

// expected-error @+1 {{act: saved value 0 is returned by @fwd as 'tensor<64xf32>' but taken by @bwd as 'tensor<32xf32>'}}
func.func @fwd(%x: tensor<64xf32>) -> (f32, tensor<64xf32>) attributes {act.backward = @bwd, act.num_saved = 1 : i64} {
  %c0 = arith.constant 0 : index
  %l = tensor.extract %x[%c0] : tensor<64xf32>
  return %l, %x : f32, tensor<64xf32>
}
func.func @bwd(%s: tensor<32xf32>, %g: f32) -> tensor<32xf32> {
  return %s : tensor<32xf32>
}

// -----

// expected-error @+1 {{act: the split pair @fwd / @bwd is called from elsewhere in the module; act needs the pair's callers outside the module}}
func.func @fwd(%x: tensor<64xf32>) -> (f32, tensor<64xf32>) attributes {act.backward = @bwd, act.num_saved = 1 : i64} {
  %c0 = arith.constant 0 : index
  %l = tensor.extract %x[%c0] : tensor<64xf32>
  return %l, %x : f32, tensor<64xf32>
}
func.func @bwd(%s: tensor<64xf32>, %g: f32) -> tensor<64xf32> {
  return %s : tensor<64xf32>
}
func.func private @driver(%x: tensor<64xf32>) -> f32 {
  %l, %s = func.call @fwd(%x) : (tensor<64xf32>) -> (f32, tensor<64xf32>)
  return %l : f32
}

// -----

// Bufferized graphs: act works on tensors.
func.func @memref_saved(%x: memref<512xf32>) -> (f32 {act.loss}, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-warning @+1 {{act: saved value of type 'memref<512xf32>' is not a tensor and cannot be encoded; act works on tensors (run it before bufferization)}}
  %m = memref.alloc() : memref<512xf32>
  %l = memref.load %m[%c0] : memref<512xf32>
  %g = memref.load %m[%c1] : memref<512xf32>
  return %l, %g : f32, f32
}

// -----

// Ids name tensors in the sensitivity profile: they must be unique.
func.func @duplicate_ids(%x: tensor<64xf32>) -> (f32 {act.loss}, tensor<64xf32>) {
  %c0 = arith.constant 0 : index
  %a = math.exp %x : tensor<64xf32>
  %b = math.tanh %x : tensor<64xf32>
  %ea = act.encode %a, id = 7 : tensor<64xf32> -> !act.encoded<tensor<64xf32>, #act.quant<bits = 4>>
  // expected-error @+1 {{act: saved-activation id 7 is used twice in the module}}
  %eb = act.encode %b, id = 7 : tensor<64xf32> -> !act.encoded<tensor<64xf32>, #act.quant<bits = 4>>
  %ab = arith.addf %a, %b : tensor<64xf32>
  %l = tensor.extract %ab[%c0] : tensor<64xf32>
  %da = act.decode %ea : !act.encoded<tensor<64xf32>, #act.quant<bits = 4>> -> tensor<64xf32>
  %db = act.decode %eb : !act.encoded<tensor<64xf32>, #act.quant<bits = 4>> -> tensor<64xf32>
  %g = arith.mulf %da, %db : tensor<64xf32>
  return %l, %g : f32, tensor<64xf32>
}

// -----

// expected-error @+1 {{act: @dynamic_seeds argument 1: `act.seeds` marks one argument, a static tensor<K x i64>; got 'tensor<?xi64>'}}
func.func @dynamic_seeds(%x: tensor<4xf32>, %s: tensor<?xi64> {act.seeds}) -> (tensor<f32> {act.loss}) {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// expected-error @+1 {{act: @two_seeds argument 2: `act.seeds` marks one argument, a static tensor<K x i64>; got 'tensor<2xi64>' (a second one)}}
func.func @two_seeds(%x: tensor<4xf32>, %s: tensor<2xi64> {act.seeds}, %t: tensor<2xi64> {act.seeds}) -> (tensor<f32> {act.loss}) {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}
