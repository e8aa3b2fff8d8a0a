// #act.runtime_quant: parsed, printed, verified; act.encode's `bits` operand.
// RUN: act-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @roundtrip
// CHECK: act.encode %{{.*}}, id = 2, seed %{{.*}}, bits %{{.*}} : tensor<8x64xf32> -> !act.encoded<tensor<8x64xf32>, #act.runtime_quant<[1, 2, 4, 8, 32], bits = 4>>
// CHECK: act.decode %{{.*}} : !act.encoded<tensor<8x64xf32>, #act.runtime_quant<[2, 4], bits = 2, group = 128, rounding = nearest>>
func.func @roundtrip(%x: tensor<8x64xf32>, %s: i64, %b: i32) -> (tensor<8x64xf32>) {
  %e = act.encode %x, id = 2, seed %s, bits %b : tensor<8x64xf32>
         -> !act.encoded<tensor<8x64xf32>, #act.runtime_quant<[1, 2, 4, 8, 32], bits = 4>>
  %n = act.encode %x, id = 3, bits %b : tensor<8x64xf32>
         -> !act.encoded<tensor<8x64xf32>, #act.runtime_quant<[2, 4], bits = 2, group = 128, rounding = nearest>>
  %d = act.decode %n : !act.encoded<tensor<8x64xf32>, #act.runtime_quant<[2, 4], bits = 2, group = 128, rounding = nearest>> -> tensor<8x64xf32>
  return %d : tensor<8x64xf32>
}

// -----

// bf16 group statistics: printed when not the default f32.
// CHECK-LABEL: func @bf16_stats
// CHECK-SAME: #act.runtime_quant<[2, 4], bits = 2, stats = bf16>
// CHECK-SAME: #act.quant<bits = 4, stats = bf16>
// CHECK-SAME: #act.quant<bits = 2>>
func.func @bf16_stats(%a: !act.encoded<tensor<4xf32>, #act.runtime_quant<[2, 4], bits = 2, stats = bf16>>,
                      %b: !act.encoded<tensor<4xf32>, #act.quant<bits = 4, stats = bf16>>,
                      %c: !act.encoded<tensor<4xf32>, #act.quant<bits = 2, stats = f32>>) { return }

// -----

// expected-error @+3 {{expected one of [f32, bf16] for format of quantization group statistics, got: f16}}
// expected-error @+2 {{failed to parse Act_QuantEncoding parameter 'stats'}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @bad_stats(%a: !act.encoded<tensor<4xf32>, #act.quant<bits = 4, stats = f16>>) { return }

// -----

// expected-error @+2 {{#act.runtime_quant widths must be 1, 2, 4, 8 or 32; got 3}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @width3(%a: !act.encoded<tensor<4xf32>, #act.runtime_quant<[2, 3], bits = 2>>) { return }

// -----

// expected-error @+2 {{#act.runtime_quant bits = 8 is not one of its widths}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @planned(%a: !act.encoded<tensor<4xf32>, #act.runtime_quant<[2, 4], bits = 8>>) { return }

// -----

// expected-error @+2 {{#act.runtime_quant lists width 4 twice}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @twice(%a: !act.encoded<tensor<4xf32>, #act.runtime_quant<[4, 2, 4], bits = 4>>) { return }

// -----

func.func @no_operand(%x: tensor<4xf32>) {
  // expected-error @+1 {{'act.encode' op #act.runtime_quant<[2, 4], bits = 4> takes its bit width at run time: a `bits` operand is needed}}
  %e = act.encode %x, id = 0 : tensor<4xf32> -> !act.encoded<tensor<4xf32>, #act.runtime_quant<[2, 4], bits = 4>>
  return
}

// -----

func.func @fixed(%x: tensor<4xf32>, %b: i32) {
  // expected-error @+1 {{'act.encode' op #act.quant<bits = 4> has a fixed bit width: no `bits` operand}}
  %e = act.encode %x, id = 0, bits %b : tensor<4xf32> -> !act.encoded<tensor<4xf32>, #act.quant<bits = 4>>
  return
}

// -----

func.func @integers(%x: tensor<4xi32>, %b: i32) {
  // expected-error @+1 {{#act.runtime_quant encodes floating-point tensors}}
  %e = act.encode %x, id = 0, bits %b : tensor<4xi32> -> !act.encoded<tensor<4xi32>, #act.runtime_quant<[2, 4], bits = 4>>
  return
}
