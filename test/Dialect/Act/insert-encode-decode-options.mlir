// Bad pass options are reported, with a non-zero exit.
// RUN: not act-opt %s -act-insert-encode-decode="encoding=#act.nope<>" 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not act-opt %s -act-insert-encode-decode="encoding=42" 2>&1 | FileCheck %s --check-prefix=NOTENC
// RUN: not act-opt %s -act-insert-encode-decode="encoding='#act.mask<predicate = positive>'" 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: not act-opt %s -act-insert-encode-decode="policy=greedy" 2>&1 | FileCheck %s --check-prefix=POLICY
// Saved tensors that the encoding cannot hold get a remark.
// RUN: act-opt %s -act-insert-encode-decode -verify-diagnostics

// PARSE: act-insert-encode-decode option 'encoding':0:0: error: act-insert-encode-decode: cannot parse encoding '#act.nope<>'
// NOTENC: act-insert-encode-decode option 'encoding':0:0: error: act-insert-encode-decode: 42 : i64 is not an act encoding
// MASK: act-insert-encode-decode option 'encoding':0:0: error: act-insert-encode-decode: #act.mask<predicate = positive> decodes to 'i1' elements (a predicate of the value, for any tensor), not to the value; the encoding option needs a value encoding
// POLICY: for the --policy option: Cannot find option named 'greedy'!

func.func @integers(%x: tensor<32x32xf32>) -> (f32 {act.loss}, tensor<32x32xi32>) {
  %c0 = arith.constant 0 : index
  // expected-remark @+1 {{act: saved value 0 is not encoded: #act.quant encodes floating-point tensors, not 'tensor<32x32xi32>'}}
  %i = arith.fptosi %x : tensor<32x32xf32> to tensor<32x32xi32>
  %f = arith.sitofp %i : tensor<32x32xi32> to tensor<32x32xf32>
  %loss = tensor.extract %f[%c0, %c0] : tensor<32x32xf32>
  %g = arith.addi %i, %i : tensor<32x32xi32>
  return %loss, %g : f32, tensor<32x32xi32>
}
