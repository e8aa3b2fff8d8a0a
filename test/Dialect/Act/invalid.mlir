// RUN: act-opt %s -split-input-file -verify-diagnostics

// expected-error @+2 {{#act.quant bits must be one of 1, 2, 4, 8; got 3}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @bits3(%a: !act.encoded<tensor<4xf32>, #act.quant<bits = 3>>) { return }

// -----

// expected-error @+2 {{#act.quant group size must be positive; got 0}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @group0(%a: !act.encoded<tensor<4xf32>, #act.quant<bits = 4, group = 0>>) { return }

// -----

// expected-error @+2 {{#act.quant group size must be positive; got -4}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @group_negative(%a: !act.encoded<tensor<4xf32>, #act.quant<bits = 4, group = -4>>) { return }

// -----

// expected-error @+3 {{expected one of [stochastic, nearest] for rounding of quantized values, got: up}}
// expected-error @+2 {{failed to parse Act_QuantEncoding parameter 'rounding'}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @rounding(%a: !act.encoded<tensor<4xf32>, #act.quant<bits = 4, rounding = up>>) { return }

// -----

// expected-error @+2 {{struct is missing required parameter: bits}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @nobits(%a: !act.encoded<tensor<4xf32>, #act.quant<group = 4>>) { return }

// -----

// expected-error @+3 {{expected one of [f16, bf16, fp10, e4m3, e5m2] for reduced floating format, got: fp9}}
// expected-error @+2 {{failed to parse Act_FloatEncoding parameter 'format'}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @format(%a: !act.encoded<tensor<4xf32>, #act.float<format = fp9>>) { return }

// -----

// expected-error @+3 {{expected one of [positive, nonnegative, nonzero] for predicate kept by a mask, got: odd}}
// expected-error @+2 {{failed to parse Act_MaskEncoding parameter 'predicate'}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @predicate(%a: !act.encoded<tensor<4xf32>, #act.mask<predicate = odd>>) { return }

// -----

// expected-error @+2 {{#act.fewbit bits must be in 1..8; got 9}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @fewbit_bits(%a: !act.encoded<tensor<4xf32>, #act.fewbit<bits = 9, boundaries = [0.0], values = [0.0, 1.0]>>) { return }

// -----

// expected-error @+2 {{#act.fewbit<bits = 2> needs 4 values; got 2}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @fewbit_values(%a: !act.encoded<tensor<4xf32>, #act.fewbit<bits = 2, boundaries = [0.0, 1.0, 2.0], values = [0.0, 1.0]>>) { return }

// -----

// expected-error @+2 {{#act.fewbit<bits = 1> needs 1 boundaries; got 2}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @fewbit_boundaries(%a: !act.encoded<tensor<4xf32>, #act.fewbit<bits = 1, boundaries = [0.0, 1.0], values = [0.0, 1.0]>>) { return }

// -----

// expected-error @+2 {{#act.fewbit boundaries must be sorted: boundary 2 (1.000000e+00) is below boundary 1 (2.000000e+00)}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @fewbit_unsorted(%a: !act.encoded<tensor<4xf32>, #act.fewbit<bits = 2, boundaries = [0.0, 2.0, 1.0], values = [0.0, 1.0, 2.0, 3.0]>>) { return }

// -----

// expected-error @+2 {{#act.fewbit value 1 is not finite}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @fewbit_inf(%a: !act.encoded<tensor<4xf32>, #act.fewbit<bits = 1, boundaries = [0.0], values = [0.0, 1.0e39]>>) { return }

// -----

// expected-error @+1 {{#act.fewbit encodes floating-point tensors, not 'tensor<4xi32>'}}
func.func @fewbit_int(%a: !act.encoded<tensor<4xi32>, #act.fewbit<bits = 1, boundaries = [0.0], values = [0.0, 1.0]>>) { return }

// -----

// expected-error @+2 {{#act.index bits must be in 1..16; got 17}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @index_bits(%a: !act.encoded<tensor<4xi64>, #act.index<bits = 17>>) { return }

// -----

// expected-error @+1 {{#act.index<bits = 4> encodes integers wider than 4 bits, not 'tensor<4xf32>'}}
func.func @index_float(%a: !act.encoded<tensor<4xf32>, #act.index<bits = 4>>) { return }

// -----

// expected-error @+1 {{#act.index<bits = 8> encodes integers wider than 8 bits, not 'tensor<4xi8>'}}
func.func @index_narrow(%a: !act.encoded<tensor<4xi8>, #act.index<bits = 8>>) { return }

// -----

// expected-error @+1 {{#act.quant encodes floating-point tensors, not 'tensor<4xi32>'}}
func.func @quant_int(%a: !act.encoded<tensor<4xi32>, #act.quant<bits = 4>>) { return }

// -----

// expected-error @+1 {{#act.float encodes floating-point tensors, not 'tensor<4xi8>'}}
func.func @float_int(%a: !act.encoded<tensor<4xi8>, #act.float<format = f16>>) { return }

// -----

// Not an encoding.
// expected-error @+2 {{invalid kind of attribute specified}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding' which is to be a `::mlir::act::EncodingAttrInterface`}}
func.func @not_encoding(%a: !act.encoded<tensor<4xf32>, 3 : i32>) { return }

// -----

// Unranked tensors have no layout to encode.
// expected-error @+2 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'tensorType' which is to be a `::mlir::RankedTensorType`}}
func.func @unranked(%a: !act.encoded<tensor<*xf32>, #act.quant<bits = 4>>) { return }

// -----

func.func @decode_type(%e: !act.encoded<tensor<4xf32>, #act.quant<bits = 4>>) -> tensor<4xf16> {
  // expected-error @+1 {{'act.decode' op result type 'tensor<4xf16>' does not match what #act.quant<bits = 4> decodes to: 'tensor<4xf32>'}}
  %d = act.decode %e : !act.encoded<tensor<4xf32>, #act.quant<bits = 4>> -> tensor<4xf16>
  return %d : tensor<4xf16>
}

// -----

func.func @decode_mask_type(%e: !act.encoded<tensor<4xf32>, #act.mask<predicate = positive>>) -> tensor<4xf32> {
  // expected-error @+1 {{'act.decode' op result type 'tensor<4xf32>' does not match what #act.mask<predicate = positive> decodes to: 'tensor<4xi1>'}}
  %d = act.decode %e : !act.encoded<tensor<4xf32>, #act.mask<predicate = positive>> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

func.func @encode_shape(%x: tensor<8xf32>) {
  // expected-error @+1 {{'act.encode' op result holds 'tensor<4xf32>' but the input is 'tensor<8xf32>'}}
  %e = act.encode %x, id = 0 : tensor<8xf32> -> !act.encoded<tensor<4xf32>, #act.quant<bits = 4>>
  return
}

// -----

func.func @encode_id(%x: tensor<8xf32>) {
  // expected-error @+1 {{'act.encode' op attribute 'id' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %e = act.encode %x, id = -1 : tensor<8xf32> -> !act.encoded<tensor<8xf32>, #act.quant<bits = 4>>
  return
}

// -----

func.func @encode_noid(%x: tensor<8xf32>) {
  // expected-error @+1 {{expected ','}}
  %e = act.encode %x : tensor<8xf32> -> !act.encoded<tensor<8xf32>, #act.quant<bits = 4>>
  return
}

// -----

// expected-error @+2 {{#act.sparse density must be in [0, 1]; got 1.5}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @sparse_density(%a: !act.encoded<tensor<4xf32>, #act.sparse<density = 1.5>>) { return }

// -----

// expected-error @+1 {{#act.sparse encodes tensors of 8- to 64-bit floats or integers, not 'tensor<4xi1>'}}
func.func @sparse_i1(%a: !act.encoded<tensor<4xi1>, #act.sparse>) { return }

// -----

// expected-error @+1 {{#act.sparse with format = bf16 encodes floating-point tensors, not 'tensor<4xi32>'}}
func.func @sparse_format_int(%a: !act.encoded<tensor<4xi32>, #act.sparse<format = bf16>>) { return }

// -----

// expected-error @+3 {{expected one of [f16, bf16, fp10, e4m3, e5m2] for reduced floating format, got: fp9}}
// expected-error @+2 {{failed to parse Act_SparseEncoding parameter 'format'}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @sparse_format_unknown(%a: !act.encoded<tensor<4xf32>, #act.sparse<format = fp9>>) { return }

// -----

// expected-error @+1 {{#act.division encodes spatial maps (rank 4, nchw, static H and W), not 'tensor<64x256xf32>'}}
func.func @division_matrix(%a: !act.encoded<tensor<64x256xf32>, #act.division<>>) { return }

// -----

// expected-error @+1 {{#act.division encodes spatial maps (rank 4, nhwc, static H and W), not 'tensor<2x?x8x3xf32>'}}
func.func @division_dynamic_spatial(%a: !act.encoded<tensor<2x?x8x3xf32>, #act.division<layout = nhwc>>) { return }

// -----

// expected-error @+1 {{#act.division encodes floating-point tensors, not 'tensor<2x3x8x8xi32>'}}
func.func @division_int(%a: !act.encoded<tensor<2x3x8x8xi32>, #act.division<>>) { return }

// -----

// expected-error @+2 {{#act.division block must be in 1..1024; got 0}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @division_block(%a: !act.encoded<tensor<2x3x8x8xf32>, #act.division<block = 0>>) { return }

// -----

// expected-error @+2 {{#act.division bits must be one of 1, 2, 4, 8; got 3}}
// expected-error @+1 {{failed to parse Act_EncodedType parameter 'encoding'}}
func.func @division_bits(%a: !act.encoded<tensor<2x3x8x8xf32>, #act.division<bits = 3>>) { return }

// -----

func.func @decode_recompute(%e: !act.encoded<tensor<4xf32>, #act.recompute>) -> tensor<4xf32> {
  // expected-error @+1 {{'act.decode' op cannot decode #act.recompute: nothing is stored; the backward recomputes the value (act.recomputed)}}
  %d = act.decode %e : !act.encoded<tensor<4xf32>, #act.recompute> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

func.func @recomputed_not_recompute(%e: !act.encoded<tensor<4xf32>, #act.mask<predicate = positive>>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'act.recomputed' op stands for a value encoded #act.recompute, not #act.mask<predicate = positive>}}
  %r = act.recomputed %e, %y : !act.encoded<tensor<4xf32>, #act.mask<predicate = positive>>, tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @recomputed_type(%e: !act.encoded<tensor<4xf32>, #act.recompute>, %y: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'act.recomputed' op value type 'tensor<5xf32>' is not the saved value's, 'tensor<4xf32>'}}
  %r = act.recomputed %e, %y : !act.encoded<tensor<4xf32>, #act.recompute>, tensor<5xf32>
  return %r : tensor<5xf32>
}

// -----

func.func @fake_quant_int(%x: tensor<4xi32>, %b: i32) -> tensor<4xi32> {
  // expected-error @+1 {{'act.fake_quant' op quantizes floating-point tensors, not 'tensor<4xi32>'}}
  %q = act.fake_quant %x, bits %b : tensor<4xi32>
  return %q : tensor<4xi32>
}

// -----

func.func @fake_quant_id_without_seed(%x: tensor<4xf32>, %b: i32) -> tensor<4xf32> {
  // expected-error @+1 {{'act.fake_quant' op rounds stochastically with both an id and a seed, not one of them}}
  %q = "act.fake_quant"(%x, %b) <{id = 3 : i64}> : (tensor<4xf32>, i32) -> tensor<4xf32>
  return %q : tensor<4xf32>
}
