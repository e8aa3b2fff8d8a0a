//===- ActLowering.h - building blocks of encoding lowerings ----*- C++ -*-===//
//
// Helpers the encodings use to lower themselves (EncodingAttrInterface::
// buildEncode / buildDecode) to linalg, tensor and arith on tensors, with the
// storage of docs/Encodings.md made explicit: 32-bit payload words holding
// `perWord` elements of `bits` bits each, over the row-major flattened
// element index. The same IR runs on CPU and GPU.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACTLOWERING_H
#define ACT_DIALECT_ACT_IR_ACTLOWERING_H

#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::act {

/// Philox4x32-10 (Salmon et al., SC'11) keyed by (lo32(seed), hi32(seed))
/// with counter (lo32(counter), hi32(counter), lo32(id), hi32(id)); returns
/// the four 32-bit words of the output block. `counter`, `seed`: i64.
SmallVector<Value, 4> buildPhilox4(OpBuilder &b, Location loc, Value counter,
                                   Value seed, int64_t id);
/// The random word of element `index` (i64) of tensor `id`: word index % 4
/// of the block with counter index / 4 (docs/Encodings.md). `lane` >= 0 is
/// the element's static position in a run of consecutive elements built in
/// order in one region starting at a multiple of 4: then one block serves
/// four elements (`cache` holds it between calls); -1 computes a block per
/// element.
Value buildElementRandom(OpBuilder &b, Location loc, Value index, Value seed,
                         int64_t id, int64_t lane,
                         SmallVectorImpl<Value> &cache);

/// A float format narrower than f32 (docs/Encodings.md): `expBits` exponent
/// and `manBits` mantissa bits, a sign; `ieee` formats reserve the top
/// exponent for inf/NaN, the others (e4m3fn) only the all-ones code for NaN.
struct MiniFloat {
  unsigned expBits, manBits;
  bool ieee;
};
/// Code (i32, low 1 + expBits + manBits bits) of f32 `x`: round to nearest
/// even, gradual underflow, magnitudes above the largest finite value
/// (infinities included) clamp to it, NaN stays NaN.
Value buildMiniFloatEncode(OpBuilder &b, Location loc, Value x, MiniFloat f);
/// f32 value of a code produced by buildMiniFloatEncode.
Value buildMiniFloatDecode(OpBuilder &b, Location loc, Value code,
                           MiniFloat f);
/// Largest finite value of `f`.
double getMaxFinite(MiniFloat f);

/// A tensor read once per element, at indices computed from the element's
/// flattened index (e.g. its quantization group's metadata row).
struct PerElementInput {
  Value value;
  std::function<SmallVector<AffineExpr>(AffineExpr flatIndex)> indices;
};

/// Byte-aligned codes (8 or 16 bits per element): the payload is
/// tensor<n x iB>, element i at position i: the same bytes as the 32-bit
/// little-endian words of docs/Encodings.md, without the tail padding. Encode
/// and decode are one element-wise generic each, which vectorizes.
/// `code` maps an element to its code (an i32 in the low `bits`).
Value buildByteEncode(OpBuilder &b, Location loc, Value input, unsigned bits,
                      function_ref<Value(OpBuilder &, Location, Value x)> code);
/// `value` maps a code (i32) to the decoded element.
Value buildByteDecode(OpBuilder &b, Location loc, Value payload,
                      RankedTensorType type, ValueRange dynamicSizes,
                      function_ref<Value(OpBuilder &, Location, Value code)> value);

/// Reshapes a 1-D tensor to `type`'s shape (element type kept).
Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type,
                ValueRange dynamicSizes);

/// Builds the pieces of a packed lowering for a tensor `input`.
class PackedLowering {
public:
  /// `bits` per element, `perWord` elements per 32-bit word; the flattened
  /// tensor is padded to a multiple of `multiple` (a multiple of `perWord`).
  PackedLowering(OpBuilder &b, Location loc, unsigned bits, unsigned perWord,
                 int64_t multiple);

  /// Flattens and zero-pads `input`; sets the element count and padding.
  void load(Value input);
  /// Sets the element count and padding from a tensor type (for decoding).
  void setShape(RankedTensorType type, ValueRange dynamicSizes);
  /// The padded length (index), a multiple of `multiple`.
  Value getPaddedLength() const { return paddedLength; }

  /// Builds the payload: for every word w and lane l, element i = w*perWord+l
  /// becomes `elementBits(b, loc, x, i, extras, lane)` (an i32 in the low
  /// `bits`; `x` the element, `i` its index as i64; `lane` l when the lanes
  /// of a word are unrolled in order, else -1), or 0 past the end.
  /// `extras` are read per element. With `groupElements` (a multiple of
  /// `perWord` dividing `multiple`) the extras are per group of that many
  /// elements, indexed at the group's first element, and are read once per
  /// group.
  Value pack(ArrayRef<PerElementInput> extras,
             function_ref<Value(OpBuilder &, Location, Value x, Value index,
                                ValueRange extra, int64_t lane)>
                 elementBits,
             int64_t groupElements = 0);

  /// Decodes `payload` (ceil(n / perWord) words) into a tensor of
  /// `elementType` and shape `type` with `dynamicSizes`; `elementValue` maps
  /// the bits of element i (i32) and the per-element extra inputs to it.
  /// Static shapes decode in one generic over the tensor's own dimensions,
  /// straight into the result; dynamic ones through a padded (word, lane)
  /// view.
  Value unpack(Value payload, RankedTensorType type, ValueRange dynamicSizes,
               ArrayRef<PerElementInput> extras,
               function_ref<Value(OpBuilder &, Location, Value bits,
                                  ValueRange extra)>
                   elementValue);

  /// The flattened, padded input (tensor<padded x T>).
  Value getPadded() const { return padded; }
  /// Number of real elements (index).
  Value getNumElements() const { return numElements; }
  /// A ceil-division of the element count (index).
  Value ceilDiv(Value n, int64_t d);
  /// Slices the first `count` rows of a tensor along dim 0.
  Value sliceRows(Value t, Value count);
  /// Pads dim 0 of `t` with zeros to `count` rows.
  Value padRows(Value t, Value count);

  OpBuilder &b;
  Location loc;
  unsigned bits, perWord;
  int64_t multiple;

private:
  /// Sets the element count and the padded length derived from it.
  void setNumElements(Value n);

  Value numElements, padded, paddedLength;
};

} // namespace mlir::act

#endif // ACT_DIALECT_ACT_IR_ACTLOWERING_H
