//===- ActLowering.cpp - building blocks of encoding lowerings ------------===//
//
// Everything is built on tensors with linalg.generic, so that one-shot
// bufferization and the upstream CPU and GPU pipelines take it from there,
// and CPU and GPU compute the same bits. Here: Philox, narrow floats, the
// shared slicing helpers and byte-aligned codes; packed codes in
// PackedCodes.cpp, sparse storage in SparseStorage.cpp, quantized compute
// in FakeQuant.cpp.
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/ActToLinalg/ActLowering.h"

#include "LoweringSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::act;
using namespace mlir::act::detail;

//===----------------------------------------------------------------------===//
// Philox4x32-10
//===----------------------------------------------------------------------===//

SmallVector<Value, 4> mlir::act::buildPhilox4(OpBuilder &b, Location loc,
                                              Value index, Value seed,
                                              int64_t id) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c32 = [&](uint32_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, int64_t(v)).getResult();
  };
  auto lo = [&](Value v) { return arith::TruncIOp::create(b, loc, i32, v); };
  auto hi = [&](Value v) {
    Value shifted = arith::ShRUIOp::create(
        b, loc, v, arith::ConstantIntOp::create(b, loc, i64, 32));
    return arith::TruncIOp::create(b, loc, i32, shifted);
  };
  Value c0 = lo(index), c1 = hi(index);
  Value c2 = c32(uint32_t(id)), c3 = c32(uint32_t(uint64_t(id) >> 32));
  Value k0 = lo(seed), k1 = hi(seed);
  Value m0 = c32(0xD2511F53), m1 = c32(0xCD9E8D57);
  Value w0 = c32(0x9E3779B9), w1 = c32(0xBB67AE85);
  // The high and the low halves of each product as two operations (the
  // high one alone of an extended multiply, the low one a plain multiply):
  // vectorized, LLVM selects each lane vector's high half as a multiply-high
  // (two even/odd 32 x 32 -> 64 multiplies) and its low half as one 32-bit
  // multiply, instead of widening every lane to 64 bits and back.
  auto mulHi = [&](Value m, Value c) {
    return arith::MulUIExtendedOp::create(b, loc, m, c).getHigh();
  };
  auto mulLo = [&](Value m, Value c) {
    return arith::MulIOp::create(b, loc, m, c).getResult();
  };
  for (int round = 0; round < 10; ++round) {
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, mulHi(m1, c2), c1), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, mulHi(m0, c0), c3), k1);
    Value lo1 = mulLo(m1, c2), lo0 = mulLo(m0, c0);
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    if (round < 9) {
      k0 = arith::AddIOp::create(b, loc, k0, w0);
      k1 = arith::AddIOp::create(b, loc, k1, w1);
    }
  }
  return {c0, c1, c2, c3};
}

//===----------------------------------------------------------------------===//
// Narrow floats
//===----------------------------------------------------------------------===//

static int getBias(MiniFloat f) { return (1 << (f.expBits - 1)) - 1; }

double mlir::act::getMaxFinite(MiniFloat f) {
  int bias = getBias(f);
  int maxExp = (1 << f.expBits) - 1 - (f.ieee ? 1 : 0) - bias;
  // e4m3fn: the top exponent is finite except its all-ones mantissa (NaN).
  double maxMantissa = f.ieee ? 2.0 - std::ldexp(1.0, -int(f.manBits))
                              : 2.0 - std::ldexp(2.0, -int(f.manBits));
  return std::ldexp(maxMantissa, maxExp);
}

Value mlir::act::buildMiniFloatEncode(OpBuilder &b, Location loc, Value x,
                                      MiniFloat f) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto ci = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  auto cf = [&](double v) {
    return arith::ConstantFloatOp::create(b, loc, cast<FloatType>(f32),
                                          APFloat(float(v)))
        .getResult();
  };
  int bias = getBias(f), emin = 1 - bias, M = f.manBits;
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, ci(31)),
      ci(f.expBits + f.manBits));
  Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  // |x| clamped to the largest finite value (minnum vectorizes; NaN is
  // handled at the end).
  Value a = arith::MinNumFOp::create(b, loc, math::AbsFOp::create(b, loc, x),
                                     cf(getMaxFinite(f)));
  // Exponent of a (f32 zero and subnormals count as below emin).
  Value e = arith::SubIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, arith::BitcastOp::create(b, loc, i32, a),
                             ci(23)),
      ci(127));
  e = arith::MaxSIOp::create(b, loc, e, ci(emin));
  // t = a / ulp, ulp = 2^(e - M): exact, since ulp is a power of two in the
  // normal f32 range for every format here.
  Value invUlp = arith::BitcastOp::create(
      b, loc, f32,
      arith::ShLIOp::create(
          b, loc, arith::SubIOp::create(b, loc, ci(127 + M), e), ci(23)));
  Value t = arith::MulFOp::create(b, loc, a, invUlp);
  Value r = arith::FPToSIOp::create(b, loc, i32,
                                    math::RoundEvenOp::create(b, loc, t));
  // Rounding up into the next binade: r == 2^(M+1).
  Value carry = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, r,
                                      ci(int64_t(2) << M));
  e = arith::SelectOp::create(b, loc, carry,
                              arith::AddIOp::create(b, loc, e, ci(1)), e);
  r = arith::SelectOp::create(b, loc, carry,
                              arith::ShRUIOp::create(b, loc, r, ci(1)), r);
  // Normal when the hidden bit is set; subnormal (biased exponent 0)
  // otherwise, which only happens at e == emin.
  Value normal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, r,
                                       ci(int64_t(1) << M));
  Value biased = arith::SelectOp::create(
      b, loc, normal, arith::AddIOp::create(b, loc, e, ci(bias)), ci(0));
  Value mant = arith::AndIOp::create(b, loc, r, ci((int64_t(1) << M) - 1));
  Value code = arith::OrIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, biased, ci(M)), mant);
  int64_t nan =
      f.ieee ? (((int64_t(1) << f.expBits) - 1) << M) | (int64_t(1) << (M - 1))
             : (int64_t(1) << (f.expBits + M)) - 1;
  code = arith::SelectOp::create(b, loc, isNan, ci(nan), code);
  return arith::OrIOp::create(b, loc, sign, code);
}

Value mlir::act::buildMiniFloatDecode(OpBuilder &b, Location loc, Value code,
                                      MiniFloat f) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto ci = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  int bias = getBias(f), emin = 1 - bias, M = f.manBits;
  int64_t expMask = (int64_t(1) << f.expBits) - 1;
  Value sign = arith::ShLIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, code, ci(f.expBits + M)),
          ci(1)),
      ci(31));
  Value biased = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, code, ci(M)), ci(expMask));
  Value mant = arith::AndIOp::create(b, loc, code, ci((int64_t(1) << M) - 1));
  // Normal: rebias the exponent and widen the mantissa into f32 bits.
  Value normalBits = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(
          b, loc, arith::AddIOp::create(b, loc, biased, ci(127 - bias)),
          ci(23)),
      arith::ShLIOp::create(b, loc, mant, ci(23 - M)));
  // Subnormal: mant * 2^(emin - M), exact in f32.
  Value subnormal = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, mant),
      arith::ConstantFloatOp::create(b, loc, cast<FloatType>(f32),
                                     APFloat(std::ldexp(1.0f, emin - int(M)))));
  Value subnormalBits = arith::BitcastOp::create(b, loc, i32, subnormal);
  Value isSub =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, biased, ci(0));
  Value magnitude =
      arith::SelectOp::create(b, loc, isSub, subnormalBits, normalBits);
  // Specials.
  Value nanBits = ci(0x7FC00000), infBits = ci(0x7F800000);
  if (f.ieee) {
    Value top = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, biased,
                                      ci(expMask));
    Value zeroMant =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, mant, ci(0));
    Value special = arith::SelectOp::create(b, loc, zeroMant, infBits, nanBits);
    magnitude = arith::SelectOp::create(b, loc, top, special, magnitude);
  } else {
    Value isNan = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, loc, code,
                              ci((expMask << M) | ((1 << M) - 1))),
        ci((expMask << M) | ((1 << M) - 1)));
    magnitude = arith::SelectOp::create(b, loc, isNan, nanBits, magnitude);
  }
  return arith::BitcastOp::create(
      b, loc, f32, arith::OrIOp::create(b, loc, sign, magnitude));
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Offsets (`offset` along dim 0, 0 elsewhere) and unit strides of a slice
/// of a rank-`rank` tensor.
static std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>
dim0Slice(OpBuilder &b, int64_t rank, Value offset) {
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[0] = getAsOpFoldResult(offset);
  return {offsets, SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
}

Value mlir::act::detail::slice(OpBuilder &b, Location loc, Value t,
                               Value offset, Value size) {
  auto type = cast<RankedTensorType>(t.getType());
  auto [offsets, strides] = dim0Slice(b, type.getRank(), offset);
  SmallVector<OpFoldResult> sizes = {getAsOpFoldResult(size)};
  for (int64_t d = 1; d < type.getRank(); ++d)
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  return tensor::ExtractSliceOp::create(b, loc, t, offsets, sizes, strides);
}

/// Inserts `part` into `into` at `offset` along dim 0.
Value mlir::act::detail::insert(OpBuilder &b, Location loc, Value part,
                                Value into, Value offset) {
  auto [offsets, strides] =
      dim0Slice(b, cast<RankedTensorType>(part.getType()).getRank(), offset);
  return tensor::InsertSliceOp::create(b, loc, part, into, offsets,
                                       tensor::getMixedSizes(b, loc, part),
                                       strides);
}

void mlir::act::detail::parallelInsert(OpBuilder &b, Location loc, Value part,
                                       Value into, Value offset) {
  auto [offsets, strides] =
      dim0Slice(b, cast<RankedTensorType>(part.getType()).getRank(), offset);
  tensor::ParallelInsertSliceOp::create(b, loc, part, into, offsets,
                                        tensor::getMixedSizes(b, loc, part),
                                        strides);
}

//===----------------------------------------------------------------------===//
// Byte-aligned codes
//===----------------------------------------------------------------------===//

Value mlir::act::detail::flatten(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t n =
      type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic;
  auto flatType = RankedTensorType::get({n}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flatType, input,
                                         collapseAll(0));
  if (type.getRank() > 1)
    return tensor::CollapseShapeOp::create(b, loc, flatType, input,
                                           collapseAll(type.getRank()));
  return input;
}

/// An element-wise parallel generic over `in`'s shape into a new tensor of
/// `elementType`.
static Value elementwise(OpBuilder &b, Location loc, Value in, Type elementType,
                         function_ref<Value(OpBuilder &, Location, Value)> fn) {
  auto type = cast<RankedTensorType>(in.getType());
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(b, loc, in, d));
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), elementType, dyn);
  auto map = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{in}, ValueRange{init},
             ArrayRef<AffineMap>{map, map}, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, fn(nb, nl, args[0]));
             })
      .getResult(0);
}

/// `fn` element-wise from flat `in` into a new flat tensor of `type`
/// elements: on the GPU a kernel whose threads each store one 16-byte piece
/// (a warp's store is then 512 contiguous bytes) and a generic for the
/// rest, else one generic. (Pieces of 16 input bytes, which made an fp8
/// decode store 64 bytes per thread, measured 0.54 of a device copy on an
/// H100.)
static Value
byteElementwise(OpBuilder &b, Location loc, Value in, Type type,
                const LoweringOptions &options,
                function_ref<Value(OpBuilder &, Location, Value)> fn) {
  if (!isGpu(options))
    return elementwise(b, loc, in, type, fn);
  IndexMath ix{b, loc};
  int64_t perThread = 16 / elementBytes(type);
  Value n = b.createOrFold<tensor::DimOp>(loc, in, 0);
  Value count = ix.mul(ix.div(n, perThread), perThread);
  if (staticOr(count) == 0)
    return elementwise(b, loc, in, type, fn);
  Value out =
      buildGpuElementwise(b, loc, in, n, count, perThread, type, options, fn);
  Value rest = ix.sub(n, count);
  if (staticOr(rest) == 0)
    return out;
  Value tail = elementwise(b, loc, slice(b, loc, in, count, rest), type, fn);
  return insert(b, loc, tail, out, count);
}

Value mlir::act::buildByteEncode(
    OpBuilder &b, Location loc, Value input, unsigned bits,
    const LoweringOptions &options,
    function_ref<Value(OpBuilder &, Location, Value)> code) {
  Value flat = flatten(b, loc, input);
  Type codeType = b.getIntegerType(bits);
  return byteElementwise(b, loc, flat, codeType, options,
                         [&](OpBuilder &nb, Location nl, Value x) -> Value {
                           return arith::TruncIOp::create(nb, nl, codeType,
                                                          code(nb, nl, x));
                         });
}

Value mlir::act::unflatten(OpBuilder &b, Location loc, Value flat,
                           RankedTensorType type, ValueRange dynamicSizes) {
  auto flatType = cast<RankedTensorType>(flat.getType());
  auto shapedType = type.clone(flatType.getElementType());
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, shapedType, flat,
                                           collapseAll(0));
  if (type.getRank() == 1)
    return flat;
  SmallVector<OpFoldResult> sizes;
  unsigned next = 0;
  for (int64_t d : type.getShape())
    sizes.push_back(ShapedType::isDynamic(d)
                        ? OpFoldResult(dynamicSizes[next++])
                        : OpFoldResult(b.getIndexAttr(d)));
  if (type.getNumDynamicDims() > 1) {
    // An expand_shape whose one group has several dynamic sizes crashes
    // upstream's expand-strided-metadata (LLVM 22): reshape by a shape
    // tensor instead, which bufferizes to memref.reshape.
    SmallVector<Value> shape;
    for (OpFoldResult size : sizes)
      shape.push_back(isa<Value>(size)
                          ? cast<Value>(size)
                          : indexConst(b, loc, *getConstantIntValue(size)));
    Value shapeTensor = tensor::FromElementsOp::create(b, loc, shape);
    return tensor::ReshapeOp::create(b, loc, shapedType, flat, shapeTensor);
  }
  return tensor::ExpandShapeOp::create(b, loc, shapedType, flat,
                                       collapseAll(type.getRank()), sizes);
}

Value mlir::act::buildByteDecode(
    OpBuilder &b, Location loc, Value payload, RankedTensorType type,
    ValueRange dynamicSizes, const LoweringOptions &options,
    function_ref<Value(OpBuilder &, Location, Value)> value) {
  auto decodeOne = [&](OpBuilder &nb, Location nl, Value c) -> Value {
    return value(nb, nl, arith::ExtUIOp::create(nb, nl, nb.getI32Type(), c));
  };
  if (!isGpu(options)) {
    Value shaped = unflatten(b, loc, payload, type, dynamicSizes);
    return elementwise(b, loc, shaped, type.getElementType(), decodeOne);
  }
  Value flat = byteElementwise(b, loc, payload, type.getElementType(), options,
                               decodeOne);
  return unflatten(b, loc, flat, type, dynamicSizes);
}
