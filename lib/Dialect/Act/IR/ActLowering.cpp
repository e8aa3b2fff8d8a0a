//===- ActLowering.cpp - building blocks of encoding lowerings -------------===//
//
// Everything is built on tensors with linalg.generic, so that one-shot
// bufferization and the upstream CPU and GPU pipelines take it from there,
// and CPU and GPU compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/IR/ActLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::act;

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
  for (int round = 0; round < 10; ++round) {
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c0);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c2);
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c1), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c3), k1);
    c0 = n0;
    c1 = p1.getLow();
    c2 = n2;
    c3 = p0.getLow();
    if (round < 9) {
      k0 = arith::AddIOp::create(b, loc, k0, w0);
      k1 = arith::AddIOp::create(b, loc, k1, w1);
    }
  }
  return {c0, c1, c2, c3};
}

Value mlir::act::buildElementRandom(OpBuilder &b, Location loc, Value index,
                                    Value seed, int64_t id, int64_t lane,
                                    SmallVectorImpl<Value> &cache) {
  Type i64 = b.getI64Type();
  auto c64 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v).getResult();
  };
  if (lane >= 0) {
    if (lane % 4 == 0 || cache.size() != 4) {
      Value counter = arith::ShRUIOp::create(b, loc, index, c64(2));
      cache.assign(buildPhilox4(b, loc, counter, seed, id));
    }
    return cache[lane % 4];
  }
  SmallVector<Value, 4> words = buildPhilox4(
      b, loc, arith::ShRUIOp::create(b, loc, index, c64(2)), seed, id);
  Value which = arith::AndIOp::create(b, loc, index, c64(3));
  Value r = words[3];
  for (int w = 2; w >= 0; --w) {
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, which,
                                     c64(w));
    r = arith::SelectOp::create(b, loc, is, words[w], r);
  }
  return r;
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
  int64_t nan = f.ieee ? (((int64_t(1) << f.expBits) - 1) << M) |
                             (int64_t(1) << (M - 1))
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
          b, loc,
          arith::ShRUIOp::create(b, loc, code, ci(f.expBits + M)), ci(1)),
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
      arith::ConstantFloatOp::create(
          b, loc, cast<FloatType>(f32),
          APFloat(std::ldexp(1.0f, emin - int(M)))));
  Value subnormalBits = arith::BitcastOp::create(b, loc, i32, subnormal);
  Value isSub = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      biased, ci(0));
  Value magnitude =
      arith::SelectOp::create(b, loc, isSub, subnormalBits, normalBits);
  // Specials.
  Value nanBits = ci(0x7FC00000), infBits = ci(0x7F800000);
  if (f.ieee) {
    Value top = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      biased, ci(expMask));
    Value zeroMant = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           mant, ci(0));
    Value special =
        arith::SelectOp::create(b, loc, zeroMant, infBits, nanBits);
    magnitude = arith::SelectOp::create(b, loc, top, special, magnitude);
  } else {
    Value isNan = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, loc, code, ci((expMask << M) | ((1 << M) - 1))),
        ci((expMask << M) | ((1 << M) - 1)));
    magnitude = arith::SelectOp::create(b, loc, isNan, nanBits, magnitude);
  }
  return arith::BitcastOp::create(
      b, loc, f32, arith::OrIOp::create(b, loc, sign, magnitude));
}

//===----------------------------------------------------------------------===//
// PackedLowering
//===----------------------------------------------------------------------===//

PackedLowering::PackedLowering(OpBuilder &b, Location loc, unsigned bits,
                               unsigned perWord, int64_t multiple)
    : b(b), loc(loc), bits(bits), perWord(perWord), multiple(multiple) {}

static Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value PackedLowering::ceilDiv(Value n, int64_t d) {
  return b.createOrFold<arith::CeilDivUIOp>(loc, n, indexConst(b, loc, d));
}

void PackedLowering::setNumElements(Value n) {
  numElements = n;
  paddedLength = b.createOrFold<arith::MulIOp>(loc, ceilDiv(n, multiple),
                                               indexConst(b, loc, multiple));
}

/// A static size for a tensor dimension, if `v` folds to a constant.
static int64_t staticOr(Value v) {
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return ShapedType::kDynamic;
}

//===----------------------------------------------------------------------===//
// Byte-aligned codes
//===----------------------------------------------------------------------===//

/// The reassociation that collapses all `rank` dims into one.
static SmallVector<ReassociationIndices> collapseAll(int64_t rank) {
  if (rank == 0)
    return {};
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

/// `input` as a 1-D tensor (row-major; a view, no copy).
static Value flatten(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t n = type.hasStaticShape() ? type.getNumElements()
                                    : ShapedType::kDynamic;
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
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), elementType, dyn);
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

Value mlir::act::buildByteEncode(
    OpBuilder &b, Location loc, Value input, unsigned bits,
    function_ref<Value(OpBuilder &, Location, Value)> code) {
  Value flat = flatten(b, loc, input);
  Type codeType = b.getIntegerType(bits);
  return elementwise(b, loc, flat, codeType,
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
    sizes.push_back(ShapedType::isDynamic(d) ? OpFoldResult(dynamicSizes[next++])
                                             : OpFoldResult(b.getIndexAttr(d)));
  return tensor::ExpandShapeOp::create(b, loc, shapedType, flat,
                                       collapseAll(type.getRank()), sizes);
}

Value mlir::act::buildByteDecode(
    OpBuilder &b, Location loc, Value payload, RankedTensorType type,
    ValueRange dynamicSizes,
    function_ref<Value(OpBuilder &, Location, Value)> value) {
  Value shaped = unflatten(b, loc, payload, type, dynamicSizes);
  return elementwise(b, loc, shaped, type.getElementType(),
                     [&](OpBuilder &nb, Location nl, Value c) -> Value {
                       return value(nb, nl,
                                    arith::ExtUIOp::create(nb, nl,
                                                           nb.getI32Type(), c));
                     });
}

void PackedLowering::load(Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  Value flat = flatten(b, loc, input);
  int64_t n = type.hasStaticShape() ? type.getNumElements()
                                    : ShapedType::kDynamic;
  Value count = n == ShapedType::kDynamic
                    ? tensor::DimOp::create(b, loc, flat, 0).getResult()
                    : indexConst(b, loc, n);
  setNumElements(count);
  if (n != ShapedType::kDynamic && n % multiple == 0) {
    // Nothing to pad: no copy.
    padded = flat;
    return;
  }
  Value high = b.createOrFold<arith::SubIOp>(loc, paddedLength, numElements);
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(type.getElementType()));
  int64_t length = staticOr(paddedLength);
  if (n != ShapedType::kDynamic)
    length = llvm::alignTo(n, multiple);
  auto paddedType = RankedTensorType::get({length}, type.getElementType());
  padded = tensor::PadOp::create(b, loc, paddedType, flat,
                                 ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
                                 ArrayRef<OpFoldResult>{getAsOpFoldResult(high)},
                                 zero);
}

void PackedLowering::setShape(RankedTensorType type, ValueRange dynamicSizes) {
  Value count = indexConst(b, loc, 1);
  unsigned next = 0;
  for (int64_t d : type.getShape())
    count = b.createOrFold<arith::MulIOp>(loc, count,
                                          ShapedType::isDynamic(d)
                                              ? dynamicSizes[next++]
                                              : indexConst(b, loc, d));
  setNumElements(count);
}

Value PackedLowering::sliceRows(Value t, Value count) {
  auto type = cast<RankedTensorType>(t.getType());
  if (!type.isDynamicDim(0) && staticOr(count) == type.getDimSize(0))
    return t;
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  sizes.push_back(getAsOpFoldResult(count));
  for (int64_t i = 1; i < type.getRank(); ++i)
    sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = staticOr(count);
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, resultType, t, offsets, sizes,
                                        strides);
}

Value PackedLowering::padRows(Value t, Value count) {
  auto type = cast<RankedTensorType>(t.getType());
  if (!type.isDynamicDim(0) && staticOr(count) == type.getDimSize(0))
    return t;
  Value rows = b.createOrFold<tensor::DimOp>(loc, t, 0);
  SmallVector<OpFoldResult> low(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> high(type.getRank(), b.getIndexAttr(0));
  high[0] = getAsOpFoldResult(b.createOrFold<arith::SubIOp>(loc, count, rows));
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = staticOr(count);
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(b, loc, resultType, t, low, high, zero);
}

static SmallVector<utils::IteratorType> iterators(bool reduceLanes) {
  return {utils::IteratorType::parallel, reduceLanes
                                             ? utils::IteratorType::reduction
                                             : utils::IteratorType::parallel};
}

/// Maps of `extras` over loops whose element index is `flat`.
static SmallVector<AffineMap> extraMaps(ArrayRef<PerElementInput> extras,
                                        unsigned numDims, AffineExpr flat) {
  SmallVector<AffineMap> maps;
  for (const PerElementInput &extra : extras)
    maps.push_back(AffineMap::get(numDims, 0, extra.indices(flat),
                                  flat.getContext()));
  return maps;
}

Value PackedLowering::pack(
    ArrayRef<PerElementInput> extras,
    function_ref<Value(OpBuilder &, Location, Value, Value, ValueRange,
                       int64_t)>
        elementBits,
    int64_t groupElements) {
  // Loops (word, lane), or (group, word in group, lane) when the extras are
  // per group: then they are read once per group, not through a division
  // per element.
  bool grouped = groupElements > 0 && groupElements % perWord == 0 &&
                 multiple % groupElements == 0;
  int64_t wordsPerRow = grouped ? groupElements / perWord : 1;
  int64_t rowElements = grouped ? groupElements : perWord;
  auto paddedType = cast<RankedTensorType>(padded.getType());
  Value rowsValue = b.createOrFold<arith::DivUIOp>(
      loc, paddedLength, indexConst(b, loc, rowElements));
  int64_t rows = ShapedType::isDynamic(paddedType.getDimSize(0))
                     ? ShapedType::kDynamic
                     : paddedType.getDimSize(0) / rowElements;
  OpFoldResult rowsSize = ShapedType::isDynamic(rows)
                              ? OpFoldResult(rowsValue)
                              : OpFoldResult(b.getIndexAttr(rows));
  SmallVector<int64_t> viewShape = {rows};
  SmallVector<OpFoldResult> viewSizes = {rowsSize};
  if (grouped) {
    viewShape.push_back(wordsPerRow);
    viewSizes.push_back(b.getIndexAttr(wordsPerRow));
  }
  viewShape.push_back(perWord);
  viewSizes.push_back(b.getIndexAttr(perWord));
  unsigned rank = viewShape.size();
  Value view = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(viewShape, paddedType.getElementType()),
      padded, collapseAll(rank), viewSizes);

  SmallVector<int64_t> wordsShape(viewShape.begin(), viewShape.end() - 1);
  SmallVector<Value> dynamicRows;
  if (ShapedType::isDynamic(rows))
    dynamicRows.push_back(rowsValue);
  auto wordsType = RankedTensorType::get(wordsShape, b.getI32Type());
  MLIRContext *ctx = b.getContext();
  unsigned bitsPerElement = bits;
  int64_t lanes = perWord;
  Value n = numElements;
  if (extras.empty() || grouped) {
    // One parallel generic over words; the lanes of a word are unrolled in
    // the body and combined in registers, so each word is stored once and
    // the loop over words is a plain loop LLVM can vectorize.
    unsigned wordRank = rank - 1;
    SmallVector<AffineMap> maps;
    SmallVector<Value> inputs;
    AffineExpr first = getAffineDimExpr(0, ctx) * groupElements;
    for (const PerElementInput &extra : extras) {
      inputs.push_back(extra.value);
      maps.push_back(AffineMap::get(wordRank, 0, extra.indices(first), ctx));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(wordRank, ctx));
    Value outInit = tensor::EmptyOp::create(b, loc, wordsType, dynamicRows);
    SmallVector<utils::IteratorType> its(wordRank,
                                         utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        b, loc, wordsType, inputs, ValueRange{outInit}, maps, its,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          SmallVector<Value> ivs;
          for (unsigned d = 0; d < wordRank; ++d)
            ivs.push_back(linalg::IndexOp::create(nb, nl, d));
          Value word = ivs[0];
          if (wordRank == 2)
            word = arith::AddIOp::create(
                nb, nl,
                arith::MulIOp::create(nb, nl, word,
                                      indexConst(nb, nl, wordsPerRow)),
                ivs[1]);
          Value base = arith::MulIOp::create(nb, nl, word,
                                             indexConst(nb, nl, lanes));
          Value count =
              arith::IndexCastUIOp::create(nb, nl, nb.getI64Type(), n);
          Value acc = arith::ConstantIntOp::create(nb, nl, nb.getI32Type(), 0);
          for (int64_t l = 0; l < lanes; ++l) {
            SmallVector<Value> at(ivs);
            at.push_back(indexConst(nb, nl, l));
            Value x = tensor::ExtractOp::create(nb, nl, view, at);
            Value index = arith::IndexCastUIOp::create(
                nb, nl, nb.getI64Type(),
                arith::AddIOp::create(nb, nl, base, indexConst(nb, nl, l)));
            Value v = elementBits(nb, nl, x, index, args.drop_back(), l);
            Value valid = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ult, index, count);
            v = arith::SelectOp::create(
                nb, nl, valid, v,
                arith::ConstantIntOp::create(nb, nl, nb.getI32Type(), 0));
            if (l > 0)
              v = arith::ShLIOp::create(
                  nb, nl, v,
                  arith::ConstantIntOp::create(nb, nl, nb.getI32Type(),
                                               l * bitsPerElement));
            acc = arith::OrIOp::create(nb, nl, acc, v);
          }
          linalg::YieldOp::create(nb, nl, ValueRange{acc});
        });
    Value result = generic.getResult(0);
    if (rank == 3) {
      int64_t flatWords = ShapedType::isDynamic(rows) ? ShapedType::kDynamic
                                                      : rows * wordsPerRow;
      result = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({flatWords}, b.getI32Type()), result,
          ArrayRef<ReassociationIndices>{{0, 1}});
    }
    return sliceRows(result, ceilDiv(numElements, perWord));
  }

  // Otherwise (extras per element, rank 2): a reduction over the lanes of
  // each word, the extras read at each element's flat index.
  Value empty = tensor::EmptyOp::create(b, loc, wordsType, dynamicRows);
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  AffineExpr flat =
      getAffineDimExpr(0, ctx) * perWord + getAffineDimExpr(1, ctx);
  SmallVector<Value> inputs = {view};
  for (const PerElementInput &extra : extras)
    inputs.push_back(extra.value);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(2, ctx)};
  maps.append(extraMaps(extras, 2, flat));
  maps.push_back(AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx));
  auto generic = linalg::GenericOp::create(
      b, loc, wordsType, inputs, ValueRange{init}, maps, iterators(true),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value lane = linalg::IndexOp::create(nb, nl, 1);
        Value flatIndex = arith::AddIOp::create(
            nb, nl,
            arith::MulIOp::create(nb, nl, linalg::IndexOp::create(nb, nl, 0),
                                  indexConst(nb, nl, lanes)),
            lane);
        Value index = arith::IndexCastUIOp::create(nb, nl, nb.getI64Type(),
                                                   flatIndex);
        Value v = elementBits(nb, nl, args[0], index,
                              args.drop_front().drop_back(), -1);
        Value valid = arith::CmpIOp::create(
            nb, nl, arith::CmpIPredicate::ult, index,
            arith::IndexCastUIOp::create(nb, nl, nb.getI64Type(), n));
        v = arith::SelectOp::create(
            nb, nl, valid, v,
            arith::ConstantIntOp::create(nb, nl, nb.getI32Type(), 0));
        Value shift = arith::IndexCastUIOp::create(
            nb, nl, nb.getI32Type(),
            arith::MulIOp::create(nb, nl, lane,
                                  indexConst(nb, nl, bitsPerElement)));
        Value shifted = arith::ShLIOp::create(nb, nl, v, shift);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::OrIOp::create(nb, nl, args.back(),
                                                    shifted)});
      });
  return sliceRows(generic.getResult(0), ceilDiv(numElements, perWord));
}

Value PackedLowering::unpack(
    Value payload, RankedTensorType type, ValueRange dynamicSizes,
    ArrayRef<PerElementInput> extras,
    function_ref<Value(OpBuilder &, Location, Value, ValueRange)>
        elementValue) {
  MLIRContext *ctx = b.getContext();
  unsigned bitsPerElement = bits, lanes = perWord;
  auto decodeWord = [&](OpBuilder &nb, Location nl, Value word, Value lane,
                        ValueRange extra) {
    Value shift = arith::IndexCastUIOp::create(
        nb, nl, nb.getI32Type(),
        arith::MulIOp::create(nb, nl, lane,
                              indexConst(nb, nl, bitsPerElement)));
    Value v = arith::AndIOp::create(
        nb, nl, arith::ShRUIOp::create(nb, nl, word, shift),
        arith::ConstantIntOp::create(nb, nl, nb.getI32Type(),
                                     (int64_t(1) << bitsPerElement) - 1));
    return elementValue(nb, nl, v, extra);
  };

  if (type.hasStaticShape()) {
    // One generic over the tensor's dimensions; element i reads word
    // i / perWord, which every real element has: no padding, no reshapes.
    unsigned rank = type.getRank();
    AffineExpr flat = getAffineConstantExpr(0, ctx);
    int64_t stride = 1;
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      flat = flat + getAffineDimExpr(unsigned(d), ctx) * stride;
      stride *= type.getDimSize(d);
    }
    SmallVector<Value> inputs = {payload};
    for (const PerElementInput &extra : extras)
      inputs.push_back(extra.value);
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, {flat.floorDiv(int64_t(perWord))}, ctx)};
    maps.append(extraMaps(extras, rank, flat));
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                         type.getElementType());
    SmallVector<utils::IteratorType> its(rank, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               b, loc, type, inputs, ValueRange{init}, maps, its,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 // lane = flat index mod perWord
                 Value index = indexConst(nb, nl, 0);
                 int64_t s = 1;
                 for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
                   index = arith::AddIOp::create(
                       nb, nl, index,
                       arith::MulIOp::create(
                           nb, nl, linalg::IndexOp::create(nb, nl, d),
                           indexConst(nb, nl, s)));
                   s *= type.getDimSize(d);
                 }
                 Value lane = arith::RemUIOp::create(
                     nb, nl, index, indexConst(nb, nl, lanes));
                 linalg::YieldOp::create(
                     nb, nl,
                     ValueRange{decodeWord(nb, nl, args[0], lane,
                                           args.drop_front().drop_back())});
               })
        .getResult(0);
  }

  Value words = b.createOrFold<arith::DivUIOp>(loc, paddedLength,
                                              indexConst(b, loc, perWord));
  Value full = padRows(payload, words);
  int64_t staticWords = cast<RankedTensorType>(full.getType()).getDimSize(0);
  auto outType = RankedTensorType::get({staticWords, int64_t(perWord)},
                                       type.getElementType());
  SmallVector<Value> dynamicWords;
  if (ShapedType::isDynamic(staticWords))
    dynamicWords.push_back(words);
  Value init = tensor::EmptyOp::create(b, loc, outType, dynamicWords);

  AffineExpr flatIndex =
      getAffineDimExpr(0, ctx) * perWord + getAffineDimExpr(1, ctx);
  SmallVector<Value> inputs = {full};
  for (const PerElementInput &extra : extras)
    inputs.push_back(extra.value);
  SmallVector<AffineMap> maps = {
      AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx)};
  maps.append(extraMaps(extras, 2, flatIndex));
  maps.push_back(AffineMap::getMultiDimIdentityMap(2, ctx));
  auto generic = linalg::GenericOp::create(
      b, loc, outType, inputs, ValueRange{init}, maps, iterators(false),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{decodeWord(nb, nl, args[0],
                                  linalg::IndexOp::create(nb, nl, 1),
                                  args.drop_front().drop_back())});
      });

  // Back to the tensor's shape: flatten, drop the padding, reshape.
  int64_t paddedStatic = ShapedType::isDynamic(staticWords)
                             ? ShapedType::kDynamic
                             : staticWords * perWord;
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({paddedStatic}, type.getElementType()),
      generic.getResult(0), ArrayRef<ReassociationIndices>{{0, 1}});
  return unflatten(b, loc, sliceRows(flat, numElements), type, dynamicSizes);
}
