//===- ActOps.td - act operations --------------------------*- tablegen -*-===//

#ifndef ACT_DIALECT_ACT_IR_ACTOPS_TD
#define ACT_DIALECT_ACT_IR_ACTOPS_TD

include "act/Dialect/Act/IR/ActTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Act_EncodeOp : Act_Op<"encode", [Pure, AttrSizedOperandSegments]> {
  let summary = "store a tensor in encoded form";
  let description = [{
    Encodes `input` with the encoding of the result type. `id` is the tensor's
    stable id: it names the tensor in the sensitivity profile and the bit
    allocator and keys its random stream. Stochastic encodings draw from
    Philox4x32-10 keyed by the run-time `seed` (0 when absent) and `id`.
    An encoding whose width is chosen at run time (#act.runtime_quant)
    takes it as `bits`, an `i32` (the step's `act.bits` argument at `id`).

    ```mlir
    %e = act.encode %x, id = 3 : tensor<64x256xf32>
           -> !act.encoded<tensor<64x256xf32>, #act.quant<bits = 4>>
    %r = act.encode %x, id = 4, seed %s, bits %b : tensor<64x256xf32>
           -> !act.encoded<tensor<64x256xf32>, #act.runtime_quant<[2, 4, 8], bits = 4>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$id,
                       Optional<I64>:$seed, Optional<I32>:$bits);
  let results = (outs Act_EncodedType:$result);
  let assemblyFormat = [{
    $input `,` custom<IdSeedAndBits>($id, $seed, $bits) attr-dict
    `:` type($input) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Act_DecodeOp : Act_Op<"decode", [Pure]> {
  let summary = "recover what an encoding keeps of a tensor";
  let description = [{
    Decodes `input`. The result type is the encoding's decoded type: the
    tensor type itself for value encodings, an `i1` tensor for masks.

    ```mlir
    %x = act.decode %e : !act.encoded<tensor<64x256xf32>, #act.quant<bits = 4>>
           -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Act_EncodedType:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Act_RecomputedOp : Act_Op<"recomputed", [Pure,
    TypesMatchWith<"result type matches the value's", "value", "result",
                   "$_self">]> {
  let summary = "the backward's recomputation of a saved value";
  let description = [{
    Yields `value`, a tensor the backward recomputed with a copy of the
    forward ops that computed the saved value `token` stands for (encoded
    `#act.recompute`: nothing stored). The token keeps the saved value, its
    id and its zero-byte encoding visible to the analyses and the memory
    report; lowering replaces the op by `value`.

    ```mlir
    %e = act.encode %c, id = 5 : tensor<2x32x16x16xf32>
           -> !act.encoded<tensor<2x32x16x16xf32>, #act.recompute>
    ...
    %c2 = linalg.conv_2d_nchw_fchw ins(%xd, %w : ...) outs(%f : ...) -> ...
    %r = act.recomputed %e, %c2
           : !act.encoded<tensor<2x32x16x16xf32>, #act.recompute>,
             tensor<2x32x16x16xf32>
    ```
  }];
  let arguments = (ins Act_EncodedType:$token, AnyRankedTensor:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $token `,` $value attr-dict `:` qualified(type($token)) `,` type($value)
  }];
  let hasVerifier = 1;
}


def Act_FakeQuantOp : Act_Op<"fake_quant", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "quantize and dequantize a tensor at a run-time bit width";
  let description = [{
    Compute quantization (FracTrain, papers/fractrain.txt): yields `input`
    rounded to one of `2^bits` levels spread over the range of its finite
    elements (one range for the whole tensor, as FracTrain's per-layer
    precisions): with `min`, `max` the finite extremes,
    `scale = (max - min) / (2^bits - 1)`, each finite element becomes
    `fma(q, scale, min)` with `q = clamp(floor((x - min) / scale + u), 0,
    2^bits - 1)` (computed with the inverse step `(2^bits - 1) / (max -
    min)`, in f32). Non-finite elements pass through; a constant tensor is
    unchanged. `bits` is an `i32` operand, so the precision can change at
    run time without recompiling: below 1 it counts as 1; from 24 on (f32's
    significand) the tensor is returned as it is.

    Without `id` and `seed`, `u = 0.5` (round to nearest). With them, the
    rounding is stochastic (unbiased, as SBM's gradient quantization that
    FracTrain builds on): `u = (r + 0.5) / 256` from the element's 8 random
    bits `r`, byte `i % 4` of word `(i / 4) % 4` of the Philox4x32-10 block
    with counter `i / 16` keyed by (`seed`, `id`), `i` the element's
    row-major index (docs/Design.md, "Randomness"; `id` keeps its stream apart
    from the encodings').

    ```mlir
    %b = arith.constant 6 : i32
    %q = act.fake_quant %x, bits %b : tensor<64x256xf32>
    %g = act.fake_quant %dy, bits %b, id = 12, seed %s : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I32:$bits,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$id,
                       Optional<I64>:$seed);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` `bits` $bits (`,` `id` `=` $id^ `,` `seed` $seed)? attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
}

#endif // ACT_DIALECT_ACT_IR_ACTOPS_TD
