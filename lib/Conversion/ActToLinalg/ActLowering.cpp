//===- ActLowering.cpp - building blocks of encoding lowerings ------------===//
//
// Everything is built on tensors with linalg.generic, so that one-shot
// bufferization and the upstream CPU and GPU pipelines take it from there,
// and CPU and GPU compute the same bits.
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

static RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type type) {
  return RankedTensorType::get(shape, type);
}

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
static Value insert(OpBuilder &b, Location loc, Value part, Value into,
                    Value offset) {
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

/// The reassociation that collapses all `rank` dims into one.
static SmallVector<ReassociationIndices> collapseAll(int64_t rank) {
  if (rank == 0)
    return {};
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

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

//===----------------------------------------------------------------------===//
// Packed codes
//===----------------------------------------------------------------------===//

/// The CPU's chunk of packed elements (lcm of the group and the tiles that
/// share Philox blocks) and whether the vectorized path takes it.
static std::pair<int64_t, bool> getCpuChunk(PackedFormat f, int64_t group,
                                            int64_t sharedTiles) {
  int64_t tile = f.tileElements();
  int64_t chunk = std::lcm(group ? group : tile, tile * sharedTiles);
  // A lane of a tile (16 elements) must lie in one group; a chunk is
  // unrolled tile by tile and group by group, so both counts are bounded
  // (lcm(48, 512) = 1536 at 1 bit, 32 groups, took 11 s to compile on the
  // transformer example).
  bool fast =
      !group || (group % 16 == 0 && chunk / tile <= 16 && chunk / group <= 8);
  return {chunk, fast};
}

namespace {
/// How a packed tensor of n elements splits: whole chunks of `chunk`
/// elements (lcm of the group and the tile) take the vectorized path, the
/// rest the generic one.
struct PackedSplit {
  int64_t tile, group, chunk;
  bool fast;
  Value n, chunks, mainLength, rest;
  int64_t nStatic, chunksStatic, restStatic;

  /// `sharedTiles`: consecutive tiles a CPU chunk keeps together (those
  /// sharing Philox blocks, LaneRandom::tilesPerBlock).
  PackedSplit(IndexMath &ix, PackedFormat f, int64_t group, Value n,
              LoweringTarget target, bool decode, int64_t sharedTiles = 1) {
    tile = f.tileElements();
    this->group = group;
    switch (target) {
    case LoweringTarget::CPU:
      std::tie(chunk, fast) = getCpuChunk(f, group, sharedTiles);
      break;
    case LoweringTarget::GPU:
    case LoweringTarget::GPUEmulated:
      // Decoding needs no statistics: whole tiles. Encoding: whole groups
      // of whole tiles.
      chunk = decode || !group ? tile : std::max(group, tile);
      fast = decode ? !group || group % 16 == 0 : canEncodeOnGpu(f, group);
      break;
    case LoweringTarget::Generic:
      chunk = tile;
      fast = false;
      break;
    }
    this->n = n;
    nStatic = staticOr(n);
    chunks = fast ? ix.div(n, chunk) : ix.c(0);
    mainLength = ix.mul(chunks, chunk);
    rest = ix.sub(n, mainLength);
    chunksStatic = staticOr(chunks);
    restStatic = staticOr(rest);
  }
};

} // namespace

/// In a run of `rest` packed elements: the elements of tile `t` from its
/// start on, and its width in words (16, or fewer for the last, partial
/// tile; docs/Encodings.md "Packed layout"). Index values.
static std::pair<Value, Value> tileExtent(IndexMath &ix, Value t, Value rest,
                                          int64_t tile, int64_t perWord) {
  Value remaining = ix.sub(rest, ix.mul(t, tile));
  Value width = ix.select(ix.ult(t, ix.div(rest, tile)), ix.c(16),
                          ix.ceilDiv(remaining, perWord));
  return {remaining, width};
}

/// Where element `j` of a packed run of `rest` elements starting at a tile
/// boundary lies: {word index, lane} (the last tile of a run that is not a
/// whole number of tiles is narrower, tileExtent).
static std::pair<Value, Value> wordAndLane(IndexMath &ix, Value j, Value rest,
                                           int64_t tile, int64_t perWord) {
  Value t = ix.div(j, tile);
  Value within = ix.rem(j, ix.c(tile));
  Value width = ix.c(16);
  if (staticOr(rest) == ShapedType::kDynamic || staticOr(rest) % tile != 0)
    width = tileExtent(ix, t, rest, tile, perWord).second;
  return {ix.add(ix.mul(t, 16), ix.rem(within, width)),
          arith::DivUIOp::create(ix.b, ix.loc, within, width)};
}

/// An empty tensor with dim 0 of `rows` (static when it folds).
static Value emptyRows(OpBuilder &b, Location loc, Value rows,
                       ArrayRef<int64_t> inner, Type type) {
  SmallVector<Value> dyn;
  SmallVector<int64_t> shape = rowsShape(rows, inner, dyn);
  return tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>(shape), type,
                                 ValueRange(dyn));
}

/// How many slices buildSplitGroupStats views a group of `group` elements as
/// (0: the group is reduced whole): on GPU targets, groups of 4096 or more
/// elements with a power-of-two factor of at least 64 (at most 1024 slices).
static int64_t splitSlices(const LoweringOptions &options, int64_t group) {
  if (!isGpu(options) || group < 4096)
    return 0;
  int64_t s = group & -group; // the largest power of two dividing it
  s = std::min<int64_t>(s, 1024);
  return s >= 64 ? s : 0;
}

/// Group statistics for large groups on the GPU, from the scalar form of
/// `stats`: a group (row of `rows`, tensor<k x group x T>) is viewed as
/// S x P (element s * P + p); first P partial reductions over s (one thread
/// per (group, p): consecutive threads read consecutive elements), then one
/// over the P partials per group, then `finish` per group. A group is never
/// reduced by one thread alone. `valid` as in GroupStats::build.
static void buildSplitGroupStats(OpBuilder &b, Location loc, Value rows,
                                 Value valid, int64_t slices,
                                 const GroupStats &stats,
                                 SmallVectorImpl<Value> &perGroup,
                                 Value &metaRows) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto rowsType = cast<RankedTensorType>(rows.getType());
  int64_t group = rowsType.getDimSize(1), parts = group / slices;
  int64_t k = rowsType.getDimSize(0);
  SmallVector<Value> dyn;
  if (ShapedType::isDynamic(k))
    dyn.push_back(tensor::DimOp::create(b, loc, rows, 0));
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, rows, 0),
                                     b.getIndexAttr(slices),
                                     b.getIndexAttr(parts)};
  Value view = tensor::ExpandShapeOp::create(
      b, loc, tensorOf({k, slices, parts}, rowsType.getElementType()), rows,
      ArrayRef<ReassociationIndices>{{0}, {1, 2}}, shape);
  auto dims = [&](unsigned n, ArrayRef<unsigned> ds) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : ds)
      exprs.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(n, 0, exprs, ctx);
  };
  auto filled = [&](ArrayRef<int64_t> shape, arith::AtomicRMWKind kind) {
    Value empty = tensor::EmptyOp::create(b, loc, shape, f32, dyn);
    return linalg::FillOp::create(b, loc, statIdentity(b, loc, kind), empty)
        .getResult(0);
  };
  const auto &kinds = stats.reductions;
  int64_t n = kinds.size();

  // Partials: (group, slice s, part p) reduced over s.
  SmallVector<Value> partialInits;
  SmallVector<Type> partialTypes;
  for (auto kind : kinds) {
    partialInits.push_back(filled({k, parts}, kind));
    partialTypes.push_back(partialInits.back().getType());
  }
  SmallVector<AffineMap> maps = {dims(3, {0, 1, 2})};
  maps.append(n, dims(3, {0, 2}));
  auto partial = linalg::GenericOp::create(
      b, loc, partialTypes, ValueRange{view}, partialInits, maps,
      {utils::IteratorType::parallel, utils::IteratorType::reduction,
       utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = toF32(nb, nl, args[0]);
        Value real;
        if (valid) {
          // Padding elements do not count.
          IndexMath ix{nb, nl};
          Value i =
              ix.add(ix.mul(linalg::IndexOp::create(nb, nl, 0), group),
                     ix.add(ix.mul(linalg::IndexOp::create(nb, nl, 1), parts),
                            linalg::IndexOp::create(nb, nl, 2)));
          real = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, i,
                                       valid);
        }
        SmallVector<Value> next;
        for (auto [kind, acc] : llvm::zip(kinds, args.drop_front())) {
          Value v = arith::getReductionOp(kind, nb, nl, acc,
                                          countedElement(nb, nl, kind, x));
          next.push_back(
              real ? arith::SelectOp::create(nb, nl, real, v, acc).getResult()
                   : v);
        }
        linalg::YieldOp::create(nb, nl, next);
      });

  // Per group: the partials reduced, then finished.
  SmallVector<Value> totalInits;
  SmallVector<Type> totalTypes;
  for (auto kind : kinds) {
    totalInits.push_back(filled({k}, kind));
    totalTypes.push_back(totalInits.back().getType());
  }
  SmallVector<AffineMap> totalMaps(n, dims(2, {0, 1}));
  totalMaps.append(n, dims(2, {0}));
  auto total = linalg::GenericOp::create(
      b, loc, totalTypes, partial.getResults(), totalInits, totalMaps,
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> next;
        for (int64_t i = 0; i < n; ++i)
          next.push_back(
              arith::getReductionOp(kinds[i], nb, nl, args[n + i], args[i]));
        linalg::YieldOp::create(nb, nl, next);
      });

  int64_t columns = stats.metaColumns, values = stats.perGroupValues;
  auto vectorType = RankedTensorType::get({k}, f32);
  SmallVector<Value> finishInits;
  for (int64_t i = 0; i < values + columns; ++i)
    finishInits.push_back(tensor::EmptyOp::create(b, loc, vectorType, dyn));
  SmallVector<AffineMap> finishMaps(n + values + columns, dims(1, {0}));
  auto finished = linalg::GenericOp::create(
      b, loc, SmallVector<Type>(values + columns, vectorType),
      total.getResults(), finishInits, finishMaps,
      {utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> groupValues, row;
        stats.finish(nb, nl, args.take_front(n), groupValues, row);
        groupValues.append(row.begin(), row.end());
        linalg::YieldOp::create(nb, nl, groupValues);
      });
  perGroup.assign(finished.getResults().begin(),
                  finished.getResults().begin() + values);

  // The metadata rows from their columns.
  auto metaType = RankedTensorType::get({k, columns}, f32);
  Value metaInit =
      metaRows ? metaRows
               : tensor::EmptyOp::create(b, loc, metaType, dyn).getResult();
  SmallVector<AffineMap> metaMaps(columns, dims(2, {0}));
  metaMaps.push_back(dims(2, {0, 1}));
  metaRows = linalg::GenericOp::create(
                 b, loc, metaInit.getType(),
                 ValueRange(finished.getResults()).drop_front(values), metaInit,
                 metaMaps,
                 {utils::IteratorType::parallel, utils::IteratorType::parallel},
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value column = linalg::IndexOp::create(nb, nl, 1);
                   Value v = args[0];
                   for (int64_t c = 1; c < columns; ++c)
                     v = arith::SelectOp::create(
                         nb, nl,
                         arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                               column, indexConst(nb, nl, c)),
                         args[c], v);
                   linalg::YieldOp::create(nb, nl, v);
                 })
                 .getResult(0);
}

/// The groups of `elements` (1-D, a multiple of `group` long unless
/// `valid` is set, then zero-padded to one) as rows, and their statistics;
/// `vectorize` marks them as small static kernels (a chunk's), never the
/// rest of a tensor, whose whole-tensor vectors would grow compile time
/// with the element count. `finite` as GroupStats::build's (left unset by
/// groups split into slices).
static void buildGroupStats(OpBuilder &b, Location loc, Value elements,
                            Value valid, const GroupStats &stats,
                            const LoweringOptions &options, bool vectorize,
                            SmallVectorImpl<Value> &perGroup, Value &metaRows,
                            Value *finite = nullptr) {
  IndexMath ix{b, loc};
  auto type = cast<RankedTensorType>(elements.getType());
  Value length = b.createOrFold<tensor::DimOp>(loc, elements, 0);
  Value rows = ix.ceilDiv(length, stats.group);
  if (valid) {
    Value high = ix.sub(ix.mul(rows, stats.group), length);
    int64_t padded = ShapedType::isDynamic(staticOr(rows))
                         ? ShapedType::kDynamic
                         : staticOr(rows) * stats.group;
    elements = tensor::PadOp::create(
        b, loc, tensorOf({padded}, type.getElementType()), elements,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{getAsOpFoldResult(high)},
        Value(arith::ConstantOp::create(b, loc,
                                        b.getZeroAttr(type.getElementType()))));
  }
  SmallVector<OpFoldResult> shape = {getAsOpFoldResult(rows),
                                     b.getIndexAttr(stats.group)};
  Value view = tensor::ExpandShapeOp::create(
      b, loc, tensorOf({staticOr(rows), stats.group}, type.getElementType()),
      elements, ArrayRef<ReassociationIndices>{{0, 1}}, shape);
  if (int64_t slices = splitSlices(options, stats.group);
      slices && !stats.reductions.empty()) {
    buildSplitGroupStats(b, loc, view, valid, slices, stats, perGroup,
                         metaRows);
    return;
  }
  stats.build(b, loc, view, valid, vectorize, perGroup, metaRows, finite);
}

int64_t mlir::act::getPackedEncodeChunk(PackedFormat format, int64_t group,
                                        bool random) {
  auto [chunk, fast] = getCpuChunk(
      format, group, random ? LaneRandom::tilesPerBlock(format.perWord) : 1);
  return fast ? chunk : 0;
}

Value mlir::act::packLanes(OpBuilder &b, Location loc, ArrayRef<Value> codes,
                           PackedFormat f, int64_t bias) {
  Value acc;
  uint32_t biases = 0;
  for (auto [l, code] : llvm::enumerate(codes)) {
    Value v = code;
    if (l != 0)
      v = arith::ShLIOp::create(b, loc, v, i32Const(b, loc, l * f.bits));
    biases += uint32_t(bias) << (l * f.bits);
    if (!acc)
      acc = v;
    else if (bias)
      acc = arith::AddIOp::create(b, loc, acc, v);
    else
      acc = arith::OrIOp::create(b, loc, acc, v);
  }
  if (biases)
    acc = arith::SubIOp::create(b, loc, acc, i32Const(b, loc, int32_t(biases)));
  return acc;
}

Value mlir::act::buildPackedEncode(OpBuilder &b, Location loc, Value input,
                                   PackedFormat f,
                                   const LoweringOptions &options,
                                   const GroupStats *stats,
                                   std::optional<RandomKey> random,
                                   const PackedCodes &codes, Value *metaRows) {
  IndexMath ix{b, loc};
  Value flat = flatten(b, loc, input);
  Value n = b.createOrFold<tensor::DimOp>(loc, flat, 0);
  int64_t shared = random ? LaneRandom::tilesPerBlock(f.perWord) : 1;
  PackedSplit split(ix, f, stats ? stats->group : 0, n, options.target,
                    /*decode=*/false, shared);
  int64_t tile = split.tile, chunk = split.chunk, perWord = f.perWord;
  Type i32 = b.getI32Type();

  // Tile `t` of the input as a tile of the tensor the input is a piece of
  // (RandomKey::firstTile): what its Philox counters are computed from.
  auto inTensor = [&](Value t) {
    return random && random->firstTile ? ix.add(random->firstTile, t) : t;
  };

  // The code of lane `l` of a word (plus codes.bias).
  auto laneCode = [&](OpBuilder &nb, Location nl, ElementCode code, Value x,
                      ValueRange group, LaneRandom &rnd, int64_t l) -> Value {
    return code(nb, nl, x, group, [&] { return rnd.get(nb, nl, l); });
  };

  Value payload = emptyRows(b, loc, ix.ceilDiv(n, perWord), {}, i32);
  Value meta;
  if (stats)
    meta = emptyRows(b, loc, ix.ceilDiv(n, stats->group), {stats->metaColumns},
                     b.getF32Type());

  if (split.fast && split.chunksStatic != 0 && isGpu(options)) {
    assert((!random || !random->firstTile) && "pieces are CPU only");
    buildGpuPackedEncode(b, loc, flat, f, ix.mul(split.chunks, chunk / tile),
                         ix.ceilDiv(n, perWord),
                         stats ? ix.ceilDiv(n, stats->group) : Value(), options,
                         stats, random, codes, payload, meta);
  } else if (split.fast && split.chunksStatic != 0) {
    SmallVector<Value> outs = {payload};
    if (stats)
      outs.push_back(meta);
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{getAsOpFoldResult(split.chunks)}, outs,
        std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value c = forall.getInductionVar(0);
    Value x = slice(b, loc, flat, ix.mul(c, chunk), ix.c(chunk));
    // Per-group values as scalars, by group of the chunk.
    SmallVector<SmallVector<Value>> groupScalars;
    Value wordsAt = ix.mul(c, chunk / perWord);
    Value metaAt = stats ? ix.mul(c, chunk / stats->group) : Value();
    // Results are built in place in slices of the shared outputs: nothing
    // is allocated per chunk.
    Value chunkMeta, finite;
    if (stats) {
      SmallVector<Value> perGroup;
      chunkMeta = slice(b, loc, forall.getRegionIterArgs()[1], metaAt,
                        ix.c(chunk / stats->group));
      buildGroupStats(b, loc, x, Value(), *stats, options, /*vectorize=*/true,
                      perGroup, chunkMeta,
                      codes.finiteCode ? &finite : nullptr);
      for (int64_t g = 0; g < chunk / stats->group; ++g) {
        auto &row = groupScalars.emplace_back();
        for (Value t : perGroup)
          row.push_back(tensor::ExtractOp::create(b, loc, t, ix.c(g)));
      }
    }
    // The chunk's words with `code`, into `chunkWords`.
    auto buildTiles = [&](OpBuilder &b, Location loc, ElementCode code,
                          Value chunkWords) {
      IndexMath ix{b, loc};
      auto map = b.getMultiDimIdentityMap(1);
      // One generic per `shared` tiles (those drawing from the same Philox
      // blocks: each block is computed once, for all of them).
      for (int64_t t0 = 0; t0 < chunk / tile; t0 += shared) {
        SmallVector<Value> lanes, inits;
        for (int64_t t = t0; t < t0 + shared; ++t) {
          for (int64_t l = 0; l < perWord; ++l)
            lanes.push_back(
                slice(b, loc, x, ix.c(t * tile + l * 16), ix.c(16)));
          inits.push_back(slice(b, loc, chunkWords, ix.c(t * 16), ix.c(16)));
        }
        SmallVector<AffineMap> maps(lanes.size() + inits.size(), map);
        Value row =
            ix.div(inTensor(ix.add(ix.mul(c, chunk / tile), ix.c(t0))), shared);
        auto generic = linalg::GenericOp::create(
            b, loc, ValueRange(inits).getTypes(), lanes, inits, maps,
            {utils::IteratorType::parallel},
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              Value word = linalg::IndexOp::create(nb, nl, 0);
              SmallVector<Value> results;
              // One LaneRandom for the row's tiles, moved from tile to
              // tile: its blocks are built once.
              LaneRandom rnd(random, perWord, row, 0, word);
              for (int64_t j = 0; j < shared; ++j) {
                rnd.position = j;
                int64_t t = t0 + j;
                SmallVector<Value> laneCodes;
                for (int64_t l = 0; l < perWord; ++l) {
                  ValueRange group;
                  if (stats)
                    group = groupScalars[(t * tile + l * 16) / stats->group];
                  laneCodes.push_back(laneCode(
                      nb, nl, code, args[j * perWord + l], group, rnd, l));
                }
                results.push_back(packLanes(nb, nl, laneCodes, f, codes.bias));
              }
              linalg::YieldOp::create(nb, nl, results);
            });
        generic->setAttr(kVectorizeAttr, b.getUnitAttr());
        for (int64_t j = 0; j < shared; ++j)
          chunkWords = insert(b, loc, generic.getResult(j), chunkWords,
                              ix.c((t0 + j) * 16));
      }
      return chunkWords;
    };
    Value chunkWords = slice(b, loc, forall.getRegionIterArgs()[0], wordsAt,
                             ix.c(chunk / perWord));
    if (finite) {
      // Chunks of plain elements (nearly all) take the cheaper codes; both
      // branches write the same slice in place.
      auto ifOp = scf::IfOp::create(
          b, loc, finite,
          [&](OpBuilder &tb, Location tl) {
            scf::YieldOp::create(
                tb, tl, buildTiles(tb, tl, codes.finiteCode, chunkWords));
          },
          [&](OpBuilder &eb, Location el) {
            scf::YieldOp::create(eb, el,
                                 buildTiles(eb, el, codes.code, chunkWords));
          });
      chunkWords = ifOp.getResult(0);
    } else {
      chunkWords = buildTiles(b, loc, codes.code, chunkWords);
    }
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    parallelInsert(b, loc, chunkWords, forall.getRegionIterArgs()[0], wordsAt);
    if (stats)
      parallelInsert(b, loc, chunkMeta, forall.getRegionIterArgs()[1], metaAt);
    payload = forall.getResult(0);
    if (stats)
      meta = forall.getResult(1);
  }

  if (split.restStatic != 0) {
    // The rest, word by word: its tiles continue the numbering, the last
    // one is narrower.
    Value start = split.mainLength, rest = split.rest;
    Value x = slice(b, loc, flat, start, rest);
    SmallVector<Value> perGroup;
    Value restMeta;
    if (stats)
      buildGroupStats(b, loc, x, rest, *stats, options, /*vectorize=*/false,
                      perGroup, restMeta);
    Value words = ix.ceilDiv(rest, perWord);
    Value init = emptyRows(b, loc, words, {}, i32);
    Value firstTile = inTensor(ix.div(start, tile));
    auto generic = linalg::GenericOp::create(
        b, loc, init.getType(), ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
        {utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange) {
          IndexMath nx{nb, nl};
          Value wr = linalg::IndexOp::create(nb, nl, 0);
          Value t = nx.div(wr, 16);
          Value w = nx.rem(wr, nx.c(16));
          auto [remaining, width] = tileExtent(nx, t, rest, tile, perWord);
          LaneRandom rnd(nb, nl, random, perWord, nx.add(firstTile, t), w);
          Value last = nx.sub(rest, nx.c(1));
          SmallVector<Value> laneCodes;
          for (int64_t l = 0; l < perWord; ++l) {
            Value j = nx.add(arith::MulIOp::create(nb, nl, width, nx.c(l)), w);
            Value valid = nx.ult(j, remaining);
            Value e = nx.min(nx.add(nx.mul(t, tile), j), last);
            Value xe = tensor::ExtractOp::create(nb, nl, x, e);
            SmallVector<Value> group;
            for (Value v : perGroup)
              group.push_back(tensor::ExtractOp::create(
                  nb, nl, v, nx.div(e, stats->group)));
            // Lanes past the end: code 0.
            Value v = laneCode(nb, nl, codes.code, xe, group, rnd, l);
            laneCodes.push_back(arith::SelectOp::create(
                nb, nl, valid, v, i32Const(nb, nl, codes.bias)));
          }
          linalg::YieldOp::create(nb, nl,
                                  packLanes(nb, nl, laneCodes, f, codes.bias));
        });
    payload =
        insert(b, loc, generic.getResult(0), payload, ix.div(start, perWord));
    if (stats)
      meta = insert(b, loc, restMeta, meta, ix.div(start, stats->group));
  }
  if (metaRows)
    *metaRows = meta;
  return payload;
}

Value mlir::act::buildPackedDecode(OpBuilder &b, Location loc, Value payload,
                                   PackedFormat f,
                                   const LoweringOptions &options,
                                   RankedTensorType type,
                                   ValueRange dynamicSizes, Value meta,
                                   int64_t group, ElementValue value) {
  IndexMath ix{b, loc};
  Value n = ix.c(1);
  unsigned next = 0;
  for (int64_t d : type.getShape())
    n = b.createOrFold<arith::MulIOp>(
        loc, n, ShapedType::isDynamic(d) ? dynamicSizes[next++] : ix.c(d));
  PackedSplit split(ix, f, meta ? group : 0, n, options.target,
                    /*decode=*/true);
  int64_t tile = split.tile, chunk = split.chunk, perWord = f.perWord;
  int64_t columns =
      meta ? cast<RankedTensorType>(meta.getType()).getDimSize(1) : 0;
  Type elementType = type.getElementType();
  int64_t mask = (int64_t(1) << f.bits) - 1;
  // The bits of lane `lane` (i32) of `word`.
  auto laneCode = [&](OpBuilder &nb, Location nl, Value word, Value lane) {
    Value shift = arith::IndexCastUIOp::create(
        nb, nl, nb.getI32Type(),
        arith::MulIOp::create(nb, nl, lane, indexConst(nb, nl, f.bits)));
    return arith::AndIOp::create(nb, nl,
                                 arith::ShRUIOp::create(nb, nl, word, shift),
                                 i32Const(nb, nl, mask));
  };

  // (Rank 0: one element, the chunked form below.)
  if (options.perElementDecode && options.target == LoweringTarget::CPU &&
      type.hasStaticShape() && type.getRank() > 0) {
    // One parallel generic over `type`: element i (row-major) reads lane
    // (i % tile) / width of word (i / tile) * 16 + (i % tile) % width, the
    // width of every tile but a partial last one being 16 words, and row
    // i / group of the metadata (flattened: 1-D reads vectorize as gathers).
    int64_t total = type.getNumElements();
    Value flatMeta;
    if (meta)
      flatMeta = tensor::CollapseShapeOp::create(
          b, loc, meta, SmallVector<ReassociationIndices>{{0, 1}});
    unsigned rank = type.getRank();
    Value init = tensor::EmptyOp::create(b, loc, type.getShape(), elementType);
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{b.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nl, ValueRange) {
          IndexMath nx{nb, nl};
          Value i = nx.c(0);
          int64_t stride = 1;
          for (int64_t d = rank - 1; d >= 0; --d) {
            i = nx.add(i, nx.mul(linalg::IndexOp::create(nb, nl, d), stride));
            stride *= type.getDimSize(d);
          }
          auto [wordIndex, lane] =
              wordAndLane(nx, i, nx.c(total), tile, perWord);
          Value word = tensor::ExtractOp::create(nb, nl, payload, wordIndex);
          SmallVector<Value> row;
          if (meta) {
            Value first = nx.mul(nx.div(i, group), columns);
            for (int64_t col = 0; col < columns; ++col)
              row.push_back(tensor::ExtractOp::create(
                  nb, nl, flatMeta, nx.add(first, nx.c(col))));
          }
          linalg::YieldOp::create(
              nb, nl, value(nb, nl, laneCode(nb, nl, word, lane), row));
        });
    return generic.getResult(0);
  }

  Value out = emptyRows(b, loc, n, {}, elementType);
  if (split.fast && split.chunksStatic != 0 && isGpu(options)) {
    out = buildGpuPackedDecode(b, loc, payload, f, split.chunks, n, elementType,
                               meta, group, options, value);
  } else if (split.fast && split.chunksStatic != 0) {
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{getAsOpFoldResult(split.chunks)},
        ValueRange{out}, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value c = forall.getInductionVar(0);
    Value words = slice(b, loc, payload, ix.mul(c, chunk / perWord),
                        ix.c(chunk / perWord));
    // A tile decodes as (group of the tile, lane in the group, word): each
    // group's metadata is read once and broadcast. Group sizes that neither
    // divide nor are divided by the tile give each lane its own row.
    bool byGroups = !meta || tile % group == 0 || group % tile == 0;
    int64_t groupsPerTile = meta && tile % group == 0 ? tile / group : 1;
    int64_t lanesPerGroup = byGroups ? perWord / groupsPerTile : perWord;
    Value chunkMeta;
    SmallVector<SmallVector<Value>> rows;
    if (meta) {
      chunkMeta =
          slice(b, loc, meta, ix.mul(c, chunk / group), ix.c(chunk / group));
      if (!byGroups)
        for (int64_t g = 0; g < chunk / group; ++g) {
          auto &row = rows.emplace_back();
          for (int64_t col = 0; col < columns; ++col)
            row.push_back(tensor::ExtractOp::create(
                b, loc, chunkMeta, ValueRange{ix.c(g), ix.c(col)}));
        }
    }
    Value outAt = ix.mul(c, chunk);
    // The chunk's output as tiles (chunk / tile x groupsPerTile x
    // lanesPerGroup x 16): each tile's generic is inserted in the shape it
    // computes, so that empty-tensor elimination lets it write into the
    // output (an insert of a reshaped tile is a copy from a scratch tile).
    auto tileType = tensorOf({groupsPerTile, lanesPerGroup, 16}, elementType);
    Value chunkOut = tensor::ExpandShapeOp::create(
        b, loc,
        tensorOf({chunk / tile, groupsPerTile, lanesPerGroup, 16}, elementType),
        slice(b, loc, forall.getRegionIterArgs()[0], outAt, ix.c(chunk)),
        collapseAll(4));
    auto tileAt = [&](int64_t t) {
      return std::make_tuple(
          SmallVector<OpFoldResult>{b.getIndexAttr(t), b.getIndexAttr(0),
                                    b.getIndexAttr(0), b.getIndexAttr(0)},
          SmallVector<OpFoldResult>{
              b.getIndexAttr(1), b.getIndexAttr(groupsPerTile),
              b.getIndexAttr(lanesPerGroup), b.getIndexAttr(16)},
          SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
    };
    MLIRContext *ctx = b.getContext();
    auto dim = [&](unsigned d) {
      return AffineMap::get(3, 0, {getAffineDimExpr(d, ctx)}, ctx);
    };
    for (int64_t t = 0; t < chunk / tile; ++t) {
      SmallVector<Value> inputs = {
          slice(b, loc, words, ix.c(t * 16), ix.c(16))};
      SmallVector<AffineMap> maps = {dim(2)};
      for (int64_t col = 0; col < columns; ++col) {
        if (byGroups) {
          // Column `col` of the tile's groups' rows.
          int64_t first = t * tile / group;
          inputs.push_back(tensor::ExtractSliceOp::create(
              b, loc, tensorOf({groupsPerTile}, b.getF32Type()), chunkMeta,
              ArrayRef<OpFoldResult>{b.getIndexAttr(first),
                                     b.getIndexAttr(col)},
              ArrayRef<OpFoldResult>{b.getIndexAttr(groupsPerTile),
                                     b.getIndexAttr(1)},
              ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)}));
          maps.push_back(dim(0));
          continue;
        }
        SmallVector<Value> lanes;
        for (int64_t l = 0; l < perWord; ++l)
          lanes.push_back(rows[(t * tile + l * 16) / group][col]);
        inputs.push_back(tensor::FromElementsOp::create(
            b, loc, tensorOf({perWord}, b.getF32Type()), lanes));
        maps.push_back(dim(1));
      }
      maps.push_back(b.getMultiDimIdentityMap(3));
      auto [offsets, sizes, strides] = tileAt(t);
      Value init = tensor::ExtractSliceOp::create(b, loc, tileType, chunkOut,
                                                  offsets, sizes, strides);
      auto generic = linalg::GenericOp::create(
          b, loc, init.getType(), inputs, ValueRange{init}, maps,
          SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value lane = arith::AddIOp::create(
                nb, nl,
                arith::MulIOp::create(nb, nl,
                                      linalg::IndexOp::create(nb, nl, 0),
                                      indexConst(nb, nl, lanesPerGroup)),
                linalg::IndexOp::create(nb, nl, 1));
            Value codeValue = laneCode(nb, nl, args[0], lane);
            linalg::YieldOp::create(
                nb, nl,
                value(nb, nl, codeValue, args.drop_front().drop_back()));
          });
      generic->setAttr(kVectorizeAttr, b.getUnitAttr());
      chunkOut = tensor::InsertSliceOp::create(
          b, loc, generic.getResult(0), chunkOut, offsets, sizes, strides);
    }
    chunkOut = tensor::CollapseShapeOp::create(
        b, loc, tensorOf({chunk}, elementType), chunkOut, collapseAll(4));
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    parallelInsert(b, loc, chunkOut, forall.getRegionIterArgs()[0], outAt);
    out = forall.getResult(0);
  }

  if (split.restStatic != 0) {
    Value start = split.mainLength, rest = split.rest;
    Value words = slice(b, loc, payload, ix.div(start, perWord),
                        ix.ceilDiv(rest, perWord));
    Value init = emptyRows(b, loc, rest, {}, elementType);
    auto generic = linalg::GenericOp::create(
        b, loc, init.getType(), ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
        {utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange) {
          IndexMath nx{nb, nl};
          Value j = linalg::IndexOp::create(nb, nl, 0);
          auto [wordIndex, lane] = wordAndLane(nx, j, rest, tile, perWord);
          Value word = tensor::ExtractOp::create(nb, nl, words, wordIndex);
          SmallVector<Value> row;
          if (meta) {
            Value g = nx.div(nx.add(start, j), group);
            for (int64_t col = 0; col < columns; ++col)
              row.push_back(tensor::ExtractOp::create(
                  nb, nl, meta, ValueRange{g, nx.c(col)}));
          }
          linalg::YieldOp::create(
              nb, nl, value(nb, nl, laneCode(nb, nl, word, lane), row));
        });
    out = insert(b, loc, generic.getResult(0), out, start);
  }
  return unflatten(b, loc, out, type, dynamicSizes);
}

//===----------------------------------------------------------------------===//
// Sparse storage (bitmap + nonzero values)
//===----------------------------------------------------------------------===//

/// A parallel generic over the 1-D `init`, no inputs: element i is
/// `element(i)` (an index).
static Value
generateFlat(OpBuilder &b, Location loc, Value init,
             function_ref<Value(OpBuilder &, Location, Value)> element) {
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{}, ValueRange{init},
             ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
             {utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location nl, ValueRange) {
               linalg::YieldOp::create(
                   nb, nl, element(nb, nl, linalg::IndexOp::create(nb, nl, 0)));
             })
      .getResult(0);
}

/// Whether element `x`'s bits are not all zero (i1): -0.0 and NaN are set.
static Value isNonzeroBits(OpBuilder &b, Location loc, Value x) {
  // (An element or a vector of them: i1 or a vector of i1.)
  Type element = getElementTypeOrSelf(x.getType());
  Value bits = x;
  if (isa<FloatType>(element)) {
    Type integer = b.getIntegerType(element.getIntOrFloatBitWidth());
    auto vector = dyn_cast<VectorType>(x.getType());
    bits = arith::BitcastOp::create(
        b, loc, vector ? Type(vector.clone(integer)) : integer, x);
  }
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(bits.getType()));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bits, zero);
}

/// Whether the CPU's vector form of the sparse storage applies to elements
/// of `type` (whole bytes: 8, 16, 32 or 64 bits).
static bool isCpuSparse(const LoweringOptions &options, Type type) {
  if (options.target != LoweringTarget::CPU || !type.isIntOrFloat())
    return false;
  unsigned width = type.getIntOrFloatBitWidth();
  return width == 8 || width == 16 || width == 32 || width == 64;
}

/// Lanes of the CPU's sparse vectors of `type`: 16, at most one 512-bit
/// register (8 of 64-bit elements). A bitmap word covers 32 / lanes chunks.
static int64_t sparseLanes(Type type) {
  return std::min<int64_t>(16, 512 / type.getIntOrFloatBitWidth());
}

/// Whether the CPU's sparse compaction of `type` goes through AVX2's vpermps
/// and a permutation table (32-bit elements on a target without AVX-512's
/// vcompressps/vexpandps, which LLVM otherwise expands lane by lane: 0.11 of
/// memcpy on an AVX2-only EPYC).
static bool usesSparsePermute(const LoweringOptions &options, Type type) {
  return !options.cpuVectorCompress && options.cpuAvx2 &&
         type.getIntOrFloatBitWidth() == 32;
}

/// Lanes of the compaction's vectors: sparseLanes, or 8 (one AVX2
/// register) with the permutation table.
static int64_t compactLanes(const LoweringOptions &options, Type type) {
  return usesSparsePermute(options, type) ? 8 : sparseLanes(type);
}

/// The permutation table of 8 lanes by mask byte m (tensor<256x8xi32>):
/// to compact, row m lists m's set lanes in order (the rest 0); to expand,
/// row m gives each set lane i the number of set lanes below it (the rest
/// 0, masked off after the permute).
static Value sparsePermuteTable(OpBuilder &b, Location loc, bool expand) {
  SmallVector<int32_t> table(256 * 8, 0);
  for (int m = 0; m < 256; ++m) {
    int k = 0;
    for (int i = 0; i < 8; ++i)
      if (m & (1 << i)) {
        if (expand)
          table[m * 8 + i] = k;
        else
          table[m * 8 + k] = i;
        ++k;
      }
  }
  auto type = RankedTensorType::get({256, 8}, b.getI32Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<int32_t>(table)));
}

/// The declaration of AVX2's vpermps intrinsic (llvm.x86.avx2.permps), as
/// getCompressIntrinsic declares its own.
static LLVM::LLVMFuncOp getPermuteIntrinsic(OpBuilder &b, Location loc) {
  auto f32x8 = VectorType::get({8}, b.getF32Type());
  auto i32x8 = VectorType::get({8}, b.getI32Type());
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  StringRef name = "llvm.x86.avx2.permps";
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(
      b, loc, name, LLVM::LLVMFunctionType::get(f32x8, {f32x8, i32x8}));
}

/// Lanes of the 8 x 32-bit vector `x` permuted by row `m` (index) of
/// `table` (sparsePermuteTable) with `permps` (getPermuteIntrinsic).
static Value permuteLanes(OpBuilder &b, Location loc, LLVM::LLVMFuncOp permps,
                          Value x, Value table, Value m) {
  auto vectorType = cast<VectorType>(x.getType());
  auto f32x8 = VectorType::get({8}, b.getF32Type());
  auto i32x8 = VectorType::get({8}, b.getI32Type());
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  Value indices = vector::TransferReadOp::create(
      b, loc, i32x8, table,
      ValueRange{m, arith::ConstantIndexOp::create(b, loc, 0)}, zero,
      ArrayRef<bool>{true});
  Value asF32 =
      vectorType == f32x8 ? x : vector::BitCastOp::create(b, loc, f32x8, x);
  Value permuted =
      LLVM::CallOp::create(b, loc, permps, ValueRange{asF32, indices})
          .getResult();
  return vectorType == f32x8
             ? permuted
             : vector::BitCastOp::create(b, loc, vectorType, permuted);
}

/// Elements [L h, L h + L) of bitmap word `w` of `flat` as one vector of L
/// = `lanes` (default sparseLanes; those past the end read as zero). With
/// `plainWhereInside`, a plain load wherever the chunk lies inside `flat`
/// and the masked one only at its end (AVX2's masked loads, vmaskmovps,
/// are slow on AMD's cores; AVX-512's are not).
static Value readWordChunk(OpBuilder &b, Location loc, Value flat, Value w,
                           int64_t h, int64_t lanes = 0,
                           bool plainWhereInside = false) {
  IndexMath ix{b, loc};
  Type elementType = cast<ShapedType>(flat.getType()).getElementType();
  if (!lanes)
    lanes = sparseLanes(elementType);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  Value at = ix.add(ix.mul(w, 32), ix.c(lanes * h));
  auto read = [&](OpBuilder &rb, Location rl, bool inBounds) {
    return vector::TransferReadOp::create(
               rb, rl, VectorType::get({lanes}, elementType), flat,
               ValueRange{at}, zero, ArrayRef<bool>{inBounds})
        .getResult();
  };
  if (!plainWhereInside)
    return read(b, loc, false);
  Value n = b.createOrFold<tensor::DimOp>(loc, flat, 0);
  return scf::IfOp::create(
             b, loc, ix.ule(ix.add(at, ix.c(lanes)), n),
             [&](OpBuilder &tb, Location tl) {
               scf::YieldOp::create(tb, tl, read(tb, tl, true));
             },
             [&](OpBuilder &eb, Location el) {
               scf::YieldOp::create(eb, el, read(eb, el, false));
             })
      .getResult(0);
}

/// Bits [L h, L h + L) of bitmap word `word` (i32) as an index.
static Value wordChunkBits(OpBuilder &b, Location loc, Value word, int64_t h,
                           int64_t lanes) {
  Value bits = word;
  if (h)
    bits = arith::ShRUIOp::create(b, loc, bits, i32Const(b, loc, lanes * h));
  bits = arith::AndIOp::create(b, loc, bits,
                               i32Const(b, loc, int32_t((1u << lanes) - 1)));
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), bits);
}

/// Bits [L h, L h + L) of bitmap word `word` (i32): the mask of those
/// `lanes` = L elements (vector<L x i1>) and how many are set (index).
static std::pair<Value, Value> wordChunkMask(OpBuilder &b, Location loc,
                                             Value word, int64_t h,
                                             int64_t lanes) {
  Type chunkType = b.getIntegerType(lanes);
  Value bits = word;
  if (h)
    bits = arith::ShRUIOp::create(b, loc, bits, i32Const(b, loc, lanes * h));
  bits = arith::TruncIOp::create(b, loc, chunkType, bits);
  Value mask = vector::BitCastOp::create(
      b, loc, VectorType::get({lanes}, b.getI1Type()),
      vector::BroadcastOp::create(b, loc, VectorType::get({1}, chunkType),
                                  bits));
  Value count = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(), math::CtPopOp::create(b, loc, bits));
  return {mask, count};
}

/// The declaration of llvm.experimental.vector.compress for `type` (a
/// 1-D vector), added to the module being lowered: called through llvm.call
/// (a call op, whose effects bufferization and deallocation leave to the
/// callee) rather than llvm.call_intrinsic (an op of unknown effects to
/// them). LLVM's translation makes the call the intrinsic.
static LLVM::LLVMFuncOp getCompressIntrinsic(OpBuilder &b, Location loc,
                                             VectorType type) {
  Type element = type.getElementType();
  std::string suffix =
      element.isBF16() ? "bf16"
      : isa<FloatType>(element)
          ? "f" + std::to_string(element.getIntOrFloatBitWidth())
          : "i" + std::to_string(element.getIntOrFloatBitWidth());
  std::string name = "llvm.experimental.vector.compress.v" +
                     std::to_string(type.getNumElements()) + suffix;
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fnType = LLVM::LLVMFunctionType::get(
      type, {type, VectorType::get(type.getShape(), b.getI1Type()), type});
  return LLVM::LLVMFuncOp::create(b, loc, name, fnType);
}

/// Bitmap words per block of the CPU's sparse encode and decode (512
/// elements): their loops over blocks are scf.forall, parallel with threads
/// (a task of MLIR's async runtime takes at least 512 blocks).
static constexpr int64_t kSparseBlockWords = 16;

namespace {
/// One scf.forall over the blocks of a bitmap of `words` words, built by
/// the constructor with `outs`; `b` is then inside it, before its
/// terminator, and `k`, `first`, `size` are the block's index, first word
/// and word count. `finish` inserts each part (1-D) into its shared
/// output at [offset, offset + size) and leaves `b` after the loop.
struct SparseBlocks {
  OpBuilder &b;
  Location loc;
  OpBuilder::InsertPoint after;
  scf::ForallOp forall;
  Value k, first, size;

  SparseBlocks(OpBuilder &b, Location loc, Value words, ValueRange outs)
      : b(b), loc(loc) {
    IndexMath ix{b, loc};
    Value blocks = ix.ceilDiv(words, kSparseBlockWords);
    forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{getAsOpFoldResult(blocks)}, outs,
        std::nullopt);
    after = b.saveInsertionPoint();
    b.setInsertionPoint(forall.getTerminator());
    k = forall.getInductionVar(0);
    first = ix.mul(k, kSparseBlockWords);
    size = ix.min(ix.c(kSparseBlockWords), ix.sub(words, first));
  }

  /// Part `i` goes into shared output `i`: {part, offset, size}.
  ValueRange finish(ArrayRef<std::array<Value, 3>> parts) {
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [i, part] : llvm::enumerate(parts))
      tensor::ParallelInsertSliceOp::create(
          b, loc, part[0], forall.getRegionIterArgs()[i],
          ArrayRef<OpFoldResult>{part[1]},
          ArrayRef<OpFoldResult>{getAsOpFoldResult(part[2])},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    b.restoreInsertionPoint(after);
    return forall.getResults();
  }
};
} // namespace

/// Where each block's values start (an exclusive scan of `counts`, i32 per
/// block, in sequence: a few thousand blocks) and the total, index values.
static std::pair<Value, Value> blockOffsets(OpBuilder &b, Location loc,
                                            Value counts, Value blocks) {
  IndexMath ix{b, loc};
  auto scan = scf::ForOp::create(
      b, loc, ix.c(0), blocks, ix.c(1),
      ValueRange{emptyRows(b, loc, blocks, {}, b.getIndexType()), ix.c(0)},
      [&](OpBuilder &nb, Location nl, Value k, ValueRange iter) {
        Value offsets =
            tensor::InsertOp::create(nb, nl, iter[1], iter[0], ValueRange{k});
        Value count = arith::IndexCastUIOp::create(
            nb, nl, nb.getIndexType(),
            tensor::ExtractOp::create(nb, nl, counts, ValueRange{k}));
        scf::YieldOp::create(
            nb, nl,
            ValueRange{
                offsets,
                arith::AddIOp::create(nb, nl, iter[1], count).getResult()});
      });
  return {scan.getResult(0), scan.getResult(1)};
}

std::pair<Value, Value>
mlir::act::buildSparseEncode(OpBuilder &b, Location loc, Value input,
                             const LoweringOptions &options) {
  IndexMath ix{b, loc};
  Value flat = flatten(b, loc, input);
  Type elementType = cast<RankedTensorType>(flat.getType()).getElementType();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value n = b.createOrFold<tensor::DimOp>(loc, flat, 0);
  Value words = ix.ceilDiv(n, 32);

  // The bitmap: a parallel generic over words, its 32 lanes unrolled
  // (elements past n read element n - 1 and count as unset). On the CPU, a
  // loop over words whose word is the bits of one vector compare.
  bool vectors = isCpuSparse(options, elementType);
  Value bitmapInit = emptyRows(b, loc, words, {}, i32);
  Value bitmap, counts, blocks;
  if (vectors) {
    // By blocks (scf.forall): each block's words and how many bits it
    // sets.
    blocks = ix.ceilDiv(words, kSparseBlockWords);
    SparseBlocks loop(b, loc, words,
                      {bitmapInit, emptyRows(b, loc, blocks, {}, i32)});
    Value first = loop.first;
    auto wordLoop = scf::ForOp::create(
        b, loc, ix.c(0), loop.size, ix.c(1),
        ValueRange{
            slice(b, loc, loop.forall.getRegionIterArgs()[0], first, loop.size),
            i32Const(b, loc, 0)},
        [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
          Value w = arith::AddIOp::create(nb, nl, first, i);
          Value word;
          int64_t lanes = sparseLanes(elementType);
          for (int64_t h = 0; h < 32 / lanes; ++h) {
            Value set = isNonzeroBits(
                nb, nl,
                readWordChunk(nb, nl, flat, w, h, lanes,
                              /*plainWhereInside=*/!options.cpuVectorCompress));
            Value chunk = arith::ExtUIOp::create(
                nb, nl, i32,
                vector::ExtractOp::create(
                    nb, nl,
                    vector::BitCastOp::create(
                        nb, nl, VectorType::get({1}, nb.getIntegerType(lanes)),
                        set),
                    ArrayRef<int64_t>{0}));
            if (h)
              chunk = arith::ShLIOp::create(nb, nl, chunk,
                                            i32Const(nb, nl, lanes * h));
            word = h ? arith::OrIOp::create(nb, nl, word, chunk).getResult()
                     : chunk;
          }
          Value count = arith::AddIOp::create(
              nb, nl, iter[1], math::CtPopOp::create(nb, nl, word));
          scf::YieldOp::create(
              nb, nl,
              ValueRange{
                  tensor::InsertOp::create(nb, nl, word, iter[0], ValueRange{i})
                      .getResult(),
                  count});
        });
    Value count = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({1}, i32), wordLoop.getResult(1));
    ValueRange results = loop.finish(
        {{wordLoop.getResult(0), first, loop.size}, {count, loop.k, ix.c(1)}});
    bitmap = results[0];
    counts = results[1];
  } else
    bitmap = generateFlat(
        b, loc, bitmapInit, [&](OpBuilder &nb, Location nl, Value w) -> Value {
          IndexMath nx{nb, nl};
          Value base = nx.mul(w, 32);
          Value last = nx.sub(n, nx.c(1));
          Value word = i32Const(nb, nl, 0);
          for (int64_t l = 0; l < 32; ++l) {
            Value i = nx.add(base, nx.c(l));
            Value x = tensor::ExtractOp::create(nb, nl, flat,
                                                ValueRange{nx.min(i, last)});
            Value set = arith::AndIOp::create(nb, nl, nx.ult(i, n),
                                              isNonzeroBits(nb, nl, x));
            word = arith::OrIOp::create(
                nb, nl, word,
                arith::ShLIOp::create(nb, nl,
                                      arith::ExtUIOp::create(nb, nl, i32, set),
                                      i32Const(nb, nl, l)));
          }
          return word;
        });

  // How many bits are set: the blocks' counts in sequence (also where
  // each block's values start), or a reduction.
  Value nonzeros, offsets;
  if (vectors) {
    std::tie(offsets, nonzeros) = blockOffsets(b, loc, counts, blocks);
  } else {
    Value zero64 = arith::ConstantIntOp::create(b, loc, i64, 0);
    Value acc = linalg::FillOp::create(
                    b, loc, zero64,
                    tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i64)
                        .getResult())
                    .getResult(0);
    MLIRContext *ctx = b.getContext();
    Value count =
        linalg::GenericOp::create(
            b, loc, acc.getType(), ValueRange{bitmap}, ValueRange{acc},
            ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1),
                                AffineMap::get(1, 0, {}, ctx)},
            {utils::IteratorType::reduction},
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              Value pop = arith::ExtUIOp::create(
                  nb, nl, i64,
                  math::CtPopOp::create(nb, nl, args[0]).getResult());
              linalg::YieldOp::create(
                  nb, nl,
                  arith::AddIOp::create(nb, nl, args[1], pop).getResult());
            })
            .getResult(0);
    nonzeros = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        tensor::ExtractOp::create(b, loc, count, ValueRange{}));
  }

  // Dense fallback when the bitmap costs more than the zeros it saves
  // (isSparseDenseFallback).
  Value dense = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                      nonzeros, ix.sub(n, words));
  auto bitmapType = RankedTensorType::get({ShapedType::kDynamic}, i32);
  auto valuesType = RankedTensorType::get({ShapedType::kDynamic}, elementType);
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{bitmapType, valuesType},
                                dense, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value none = tensor::EmptyOp::create(b, loc, {ShapedType::kDynamic}, i32,
                                         ValueRange{ix.c(0)});
    // The value itself, no copy (its buffer becomes the storage).
    scf::YieldOp::create(
        b, loc,
        ValueRange{none, tensor::CastOp::create(b, loc, valuesType, flat)});

    b.setInsertionPointToStart(ifOp.elseBlock());
    if (vectors) {
      // The compaction on the CPU, 16 elements (one register) at a time:
      // compressed in a
      // register (llvm.experimental.vector.compress: vcompressps on
      // AVX-512, a generic expansion elsewhere) and stored under a mask of
      // its first `count` lanes (vector.compressstore's memory form of
      // vcompressps is microcoded and slow on AMD's Zen 4).
      Value values = tensor::EmptyOp::create(b, loc, {ShapedType::kDynamic},
                                             elementType, ValueRange{nonzeros});
      // AVX2 (no vcompressps): 8 lanes at a time, permuted by the table.
      bool permute = usesSparsePermute(options, elementType);
      int64_t lanes = compactLanes(options, elementType);
      auto vectorType = VectorType::get({lanes}, elementType);
      Value poison = ub::PoisonOp::create(b, loc, vectorType);
      LLVM::LLVMFuncOp compress =
          permute ? LLVM::LLVMFuncOp()
                  : getCompressIntrinsic(b, loc, vectorType);
      Value table =
          permute ? sparsePermuteTable(b, loc, /*expand=*/false) : Value();
      LLVM::LLVMFuncOp permps =
          permute ? getPermuteIntrinsic(b, loc) : LLVM::LLVMFuncOp();
      // Block by block (scf.forall), each into its own span of the values.
      SparseBlocks loop(b, loc, words, {values});
      Value first = loop.first;
      Value start =
          tensor::ExtractOp::create(b, loc, offsets, ValueRange{loop.k});
      Value count = arith::IndexCastUIOp::create(
          b, loc, b.getIndexType(),
          tensor::ExtractOp::create(b, loc, counts, ValueRange{loop.k}));
      Value spanLength = count;
      auto wordLoop = scf::ForOp::create(
          b, loc, ix.c(0), loop.size, ix.c(1),
          ValueRange{
              slice(b, loc, loop.forall.getRegionIterArgs()[0], start, count),
              ix.c(0)},
          [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
            Value w = arith::AddIOp::create(nb, nl, first, i);
            Value word =
                tensor::ExtractOp::create(nb, nl, bitmap, ValueRange{w});
            Value into = iter[0], at = iter[1];
            for (int64_t h = 0; h < 32 / lanes; ++h) {
              auto [mask, count] = wordChunkMask(nb, nl, word, h, lanes);
              Value chunk = readWordChunk(nb, nl, flat, w, h, lanes,
                                          /*plainWhereInside=*/permute);
              Value packed =
                  permute
                      ? permuteLanes(nb, nl, permps, chunk, table,
                                     wordChunkBits(nb, nl, word, h, lanes))
                      : LLVM::CallOp::create(nb, nl, compress,
                                             ValueRange{chunk, mask, poison})
                            .getResult();
              Value prefix = vector::CreateMaskOp::create(
                  nb, nl, VectorType::get({lanes}, nb.getI1Type()),
                  ValueRange{count});
              auto masked = [&](OpBuilder &wb, Location wl) {
                return vector::TransferWriteOp::create(
                           wb, wl, packed, into, ValueRange{at},
                           AffineMapAttr::get(wb.getMultiDimIdentityMap(1)),
                           prefix, wb.getBoolArrayAttr({false}))
                    .getResult();
              };
              if (permute) {
                // A masked store (vmaskmovps) is slow on AMD's cores: all
                // lanes where the block's span has room for them (the lanes
                // past `count` are overwritten by the next chunk), masked
                // only at the span's end, whose next element is another
                // block's.
                IndexMath wx{nb, nl};
                Value room = wx.ule(wx.add(at, wx.c(lanes)), spanLength);
                into = scf::IfOp::create(
                           nb, nl, room,
                           [&](OpBuilder &tb, Location tl) {
                             scf::YieldOp::create(
                                 tb, tl,
                                 vector::TransferWriteOp::create(
                                     tb, tl, packed, into, ValueRange{at},
                                     ArrayRef<bool>{true})
                                     .getResult());
                           },
                           [&](OpBuilder &eb, Location el) {
                             scf::YieldOp::create(eb, el, masked(eb, el));
                           })
                           .getResult(0);
              } else {
                into = masked(nb, nl);
              }
              at = arith::AddIOp::create(nb, nl, at, count);
            }
            scf::YieldOp::create(nb, nl, ValueRange{into, at});
          });
      Value blockValues =
          loop.finish({{wordLoop.getResult(0), start, count}})[0];
      scf::YieldOp::create(
          b, loc,
          ValueRange{tensor::CastOp::create(b, loc, bitmapType, bitmap),
                     blockValues});
      return {ifOp.getResult(0), ifOp.getResult(1)};
    }
    Value values = tensor::EmptyOp::create(b, loc, {ShapedType::kDynamic},
                                           elementType, ValueRange{nonzeros});
    // The compaction: word by word, a loop over the word's set bits.
    auto loop = scf::ForOp::create(
        b, loc, ix.c(0), words, ix.c(1), ValueRange{values, ix.c(0)},
        [&](OpBuilder &nb, Location nl, Value w, ValueRange iter) {
          IndexMath nx{nb, nl};
          Value word = tensor::ExtractOp::create(nb, nl, bitmap, ValueRange{w});
          Value base = nx.mul(w, 32);
          Type indexType = nb.getIndexType();
          auto whileOp = scf::WhileOp::create(
              nb, nl, TypeRange{i32, valuesType, indexType},
              ValueRange{word, iter[0], iter[1]},
              [&](OpBuilder &wb, Location wl, ValueRange args) {
                Value more =
                    arith::CmpIOp::create(wb, wl, arith::CmpIPredicate::ne,
                                          args[0], i32Const(wb, wl, 0));
                scf::ConditionOp::create(wb, wl, more, args);
              },
              [&](OpBuilder &wb, Location wl, ValueRange args) {
                IndexMath wx{wb, wl};
                Value lane = arith::IndexCastUIOp::create(
                    wb, wl, indexType,
                    math::CountTrailingZerosOp::create(wb, wl, args[0]));
                Value x = tensor::ExtractOp::create(
                    wb, wl, flat, ValueRange{wx.add(base, lane)});
                Value next = tensor::InsertOp::create(wb, wl, x, args[1],
                                                      ValueRange{args[2]});
                Value rest = arith::AndIOp::create(
                    wb, wl, args[0],
                    arith::SubIOp::create(wb, wl, args[0],
                                          i32Const(wb, wl, 1)));
                scf::YieldOp::create(
                    wb, wl, ValueRange{rest, next, wx.add(args[2], wx.c(1))});
              });
          scf::YieldOp::create(
              nb, nl, ValueRange{whileOp.getResult(1), whileOp.getResult(2)});
        });
    Value bitmapOut = tensor::CastOp::create(b, loc, bitmapType, bitmap);
    scf::YieldOp::create(b, loc, ValueRange{bitmapOut, loop.getResult(0)});
  }
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

Value mlir::act::buildSparseDecode(OpBuilder &b, Location loc, Value bitmap,
                                   Value values, RankedTensorType type,
                                   ValueRange dynamicSizes,
                                   const LoweringOptions &options) {
  IndexMath ix{b, loc};
  Value n = ix.c(1);
  unsigned next = 0;
  for (int64_t d : type.getShape())
    n = b.createOrFold<arith::MulIOp>(
        loc, n, ShapedType::isDynamic(d) ? dynamicSizes[next++] : ix.c(d));
  Type elementType = type.getElementType();
  Type i32 = b.getI32Type();
  // The words stored: ceil(n / 32), or none in the dense fallback.
  Value stored = b.createOrFold<tensor::DimOp>(loc, bitmap, 0);
  Value dense =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, stored, ix.c(0));
  if (isCpuSparse(options, elementType)) {
    // On the CPU: the values themselves (dense fallback), or word by word
    // the word's values expand-loaded (vexpandps) into its 32 elements.
    auto flatType = RankedTensorType::get({staticOr(n)}, elementType);
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{flatType}, dense,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(
        b, loc, tensor::CastOp::create(b, loc, flatType, values).getResult());
    b.setInsertionPointToStart(ifOp.elseBlock());
    Value from = readBuffer(b, loc, values);
    Value valuesLength = b.createOrFold<tensor::DimOp>(loc, values, 0);
    // AVX2 (no vexpandps): 8 lanes at a time, the chunk's values loaded
    // under a mask of their count and permuted into place by the table.
    bool permute = usesSparsePermute(options, elementType);
    int64_t lanes = compactLanes(options, elementType);
    Value table =
        permute ? sparsePermuteTable(b, loc, /*expand=*/true) : Value();
    Value laneMasks = Value();
    if (permute) {
      SmallVector<int32_t> rows(256 * 8);
      for (int m = 0; m < 256; ++m)
        for (int i = 0; i < 8; ++i)
          rows[m * 8 + i] = (m >> i) & 1 ? -1 : 0;
      laneMasks = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(
              RankedTensorType::get({256, 8}, b.getI32Type()),
              ArrayRef<int32_t>(rows)));
    }
    LLVM::LLVMFuncOp permps =
        permute ? getPermuteIntrinsic(b, loc) : LLVM::LLVMFuncOp();
    auto vectorType = VectorType::get({lanes}, elementType);
    Value zeros = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vectorType, b.getZeroAttr(elementType)));
    // By blocks (scf.forall) as the encode's: each block's count of set
    // bits, where its values start, then each block's elements.
    Value blocks = ix.ceilDiv(stored, kSparseBlockWords);
    SparseBlocks counting(b, loc, stored, {emptyRows(b, loc, blocks, {}, i32)});
    auto countLoop = scf::ForOp::create(
        b, loc, ix.c(0), counting.size, ix.c(1),
        ValueRange{i32Const(b, loc, 0)},
        [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
          Value word = tensor::ExtractOp::create(
              nb, nl, bitmap,
              ValueRange{arith::AddIOp::create(nb, nl, counting.first, i)});
          scf::YieldOp::create(
              nb, nl,
              arith::AddIOp::create(nb, nl, iter[0],
                                    math::CtPopOp::create(nb, nl, word))
                  .getResult());
        });
    Value count = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({1}, i32), countLoop.getResult(0));
    Value counts = counting.finish({{count, counting.k, ix.c(1)}})[0];
    Value offsets = blockOffsets(b, loc, counts, blocks).first;

    SparseBlocks loop(b, loc, stored, {emptyRows(b, loc, n, {}, elementType)});
    Value first = loop.first;
    Value start = ix.mul(first, 32);
    Value extent = ix.min(ix.mul(loop.size, 32), ix.sub(n, start));
    Value valuesAt =
        tensor::ExtractOp::create(b, loc, offsets, ValueRange{loop.k});
    auto wordLoop = scf::ForOp::create(
        b, loc, ix.c(0), loop.size, ix.c(1),
        ValueRange{
            slice(b, loc, loop.forall.getRegionIterArgs()[0], start, extent),
            valuesAt},
        [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
          IndexMath nx{nb, nl};
          Value word = tensor::ExtractOp::create(
              nb, nl, bitmap,
              ValueRange{arith::AddIOp::create(nb, nl, first, i)});
          Value into = iter[0], at = iter[1];
          for (int64_t h = 0; h < 32 / lanes; ++h) {
            auto [mask, count] = wordChunkMask(nb, nl, word, h, lanes);
            Value x;
            if (permute) {
              // The chunk's values (and those after them) with a plain
              // load, masked only within a vector of the values' end.
              Value present = vector::CreateMaskOp::create(
                  nb, nl, VectorType::get({lanes}, nb.getI1Type()),
                  ValueRange{count});
              Value room = nx.ule(nx.add(at, nx.c(lanes)), valuesLength);
              Value packed =
                  scf::IfOp::create(
                      nb, nl, room,
                      [&](OpBuilder &tb, Location tl) {
                        scf::YieldOp::create(
                            tb, tl,
                            vector::LoadOp::create(tb, tl, vectorType, from,
                                                   ValueRange{at})
                                .getResult());
                      },
                      [&](OpBuilder &eb, Location el) {
                        scf::YieldOp::create(eb, el,
                                             vector::MaskedLoadOp::create(
                                                 eb, el, vectorType, from,
                                                 ValueRange{at}, present, zeros)
                                                 .getResult());
                      })
                      .getResult(0);
              // The unset lanes cleared by the chunk's row of lane masks
              // (one load and an and, where a mask from the bits takes
              // seven instructions on AVX2).
              Value m = wordChunkBits(nb, nl, word, h, lanes);
              auto i32x8 = VectorType::get({8}, nb.getI32Type());
              Value keep = vector::TransferReadOp::create(
                  nb, nl, i32x8, laneMasks, ValueRange{m, nx.c(0)},
                  i32Const(nb, nl, 0), ArrayRef<bool>{true});
              Value permuted = permuteLanes(nb, nl, permps, packed, table, m);
              x = vector::BitCastOp::create(
                  nb, nl, vectorType,
                  arith::AndIOp::create(
                      nb, nl,
                      vector::BitCastOp::create(nb, nl, i32x8, permuted),
                      keep));
            } else {
              x = vector::ExpandLoadOp::create(nb, nl, vectorType, from,
                                               ValueRange{at}, mask, zeros);
            }
            Value offset = nx.add(nx.mul(i, 32), nx.c(lanes * h));
            auto write = [&](OpBuilder &wb, Location wl, bool inBounds) {
              return vector::TransferWriteOp::create(wb, wl, x, into,
                                                     ValueRange{offset},
                                                     ArrayRef<bool>{inBounds})
                  .getResult();
            };
            if (permute) {
              // A masked store (vmaskmovps) is slow on AMD's cores: a
              // plain one wherever the chunk lies within the tensor.
              into = scf::IfOp::create(
                         nb, nl, nx.ule(nx.add(offset, nx.c(lanes)), extent),
                         [&](OpBuilder &tb, Location tl) {
                           scf::YieldOp::create(tb, tl, write(tb, tl, true));
                         },
                         [&](OpBuilder &eb, Location el) {
                           scf::YieldOp::create(eb, el, write(eb, el, false));
                         })
                         .getResult(0);
            } else {
              into = write(nb, nl, false);
            }
            at = arith::AddIOp::create(nb, nl, at, count);
          }
          scf::YieldOp::create(nb, nl, ValueRange{into, at});
        });
    Value decoded = loop.finish({{wordLoop.getResult(0), start, extent}})[0];
    scf::YieldOp::create(
        b, loc, tensor::CastOp::create(b, loc, flatType, decoded).getResult());
    b.setInsertionPointAfter(ifOp);
    return unflatten(b, loc, ifOp.getResult(0), type, dynamicSizes);
  }
  // Where each word's values start: a sequential scan of popcounts.
  Value offsetsInit = emptyRows(b, loc, stored, {}, i32);
  auto scan = scf::ForOp::create(
      b, loc, ix.c(0), stored, ix.c(1),
      ValueRange{offsetsInit, i32Const(b, loc, 0)},
      [&](OpBuilder &nb, Location nl, Value w, ValueRange iter) {
        Value word = tensor::ExtractOp::create(nb, nl, bitmap, ValueRange{w});
        Value offsets =
            tensor::InsertOp::create(nb, nl, iter[1], iter[0], ValueRange{w});
        Value total = arith::AddIOp::create(
            nb, nl, iter[1], math::CtPopOp::create(nb, nl, word).getResult());
        scf::YieldOp::create(nb, nl, ValueRange{offsets, total});
      });
  Value offsets = scan.getResult(0);
  // One parallel gather: element i is values[i] (dense fallback), or, when
  // its bit is set, values[offset of its word + set bits below it], else
  // zero.
  Value init = emptyRows(b, loc, n, {}, elementType);
  Value out = generateFlat(
      b, loc, init, [&](OpBuilder &nb, Location nl, Value i) -> Value {
        IndexMath nx{nb, nl};
        auto pick =
            scf::IfOp::create(nb, nl, TypeRange{elementType}, dense, true);
        OpBuilder::InsertionGuard g(nb);
        nb.setInsertionPointToStart(pick.thenBlock());
        scf::YieldOp::create(
            nb, nl,
            tensor::ExtractOp::create(nb, nl, values, ValueRange{i})
                .getResult());
        nb.setInsertionPointToStart(pick.elseBlock());
        Value w = nx.div(i, 32);
        Value lane =
            arith::IndexCastUIOp::create(nb, nl, i32, nx.rem(i, nx.c(32)));
        Value word = tensor::ExtractOp::create(nb, nl, bitmap, ValueRange{w});
        Value one = i32Const(nb, nl, 1);
        Value bit = arith::ShLIOp::create(nb, nl, one, lane);
        Value set = arith::CmpIOp::create(
            nb, nl, arith::CmpIPredicate::ne,
            arith::AndIOp::create(nb, nl, word, bit), i32Const(nb, nl, 0));
        Value below = arith::AndIOp::create(
            nb, nl, word, arith::SubIOp::create(nb, nl, bit, one));
        auto gather =
            scf::IfOp::create(nb, nl, TypeRange{elementType}, set, true);
        scf::YieldOp::create(nb, nl, gather.getResult(0));
        nb.setInsertionPointToStart(gather.thenBlock());
        Value rank = arith::AddIOp::create(
            nb, nl, tensor::ExtractOp::create(nb, nl, offsets, ValueRange{w}),
            math::CtPopOp::create(nb, nl, below).getResult());
        Value at =
            arith::IndexCastUIOp::create(nb, nl, nb.getIndexType(), rank);
        scf::YieldOp::create(
            nb, nl,
            tensor::ExtractOp::create(nb, nl, values, ValueRange{at})
                .getResult());
        nb.setInsertionPointToStart(gather.elseBlock());
        scf::YieldOp::create(
            nb, nl,
            arith::ConstantOp::create(nb, nl, nb.getZeroAttr(elementType))
                .getResult());
        return pick.getResult(0);
      });
  return unflatten(b, loc, out, type, dynamicSizes);
}

//===----------------------------------------------------------------------===//
// Compute quantization
//===----------------------------------------------------------------------===//

Value mlir::act::buildFakeQuant(OpBuilder &b, Location loc, Value input,
                                Value bits, std::optional<RandomKey> random) {
  MLIRContext *ctx = b.getContext();
  auto shapedType = cast<RankedTensorType>(input.getType());
  Type f32 = b.getF32Type();
  SmallVector<Value> shapedSizes =
      tensor::createDynamicDimValues(b, loc, input);
  // Over the row-major elements (a view): one loop, whose index is the
  // element's index for stochastic rounding.
  input = flatten(b, loc, input);
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = 1;
  SmallVector<Value> dynamicSizes =
      tensor::createDynamicDimValues(b, loc, input);
  auto constF = [&](OpBuilder &nb, Location nl, float v) -> Value {
    return arith::ConstantFloatOp::create(nb, nl, nb.getF32Type(), APFloat(v));
  };
  // |x| is infinite or NaN.
  auto isNonFinite = [&](OpBuilder &nb, Location nl, Value x) -> Value {
    return arith::CmpFOp::create(
        nb, nl, arith::CmpFPredicate::UGE, math::AbsFOp::create(nb, nl, x),
        constF(nb, nl, std::numeric_limits<float>::infinity()));
  };

  // The finite extremes: one reduction over every element.
  auto scalarType = RankedTensorType::get({}, f32);
  auto filled = [&](float v) {
    Value empty = tensor::EmptyOp::create(b, loc, scalarType, ValueRange{});
    return linalg::FillOp::create(b, loc, constF(b, loc, v), empty)
        .getResult(0);
  };
  AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap none = AffineMap::get(rank, 0, {}, ctx);
  auto extremes = linalg::GenericOp::create(
      b, loc, TypeRange{scalarType, scalarType}, ValueRange{input},
      ValueRange{filled(INFINITY), filled(-INFINITY)}, {all, none, none},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::reduction),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        // Finite elements only, as in the quant groups' statistics.
        Value x = detail::toF32(nb, nl, args[0]);
        Value mn = arith::MinNumFOp::create(
            nb, nl, args[1],
            detail::countedElement(nb, nl, arith::AtomicRMWKind::minnumf, x));
        Value mx = arith::MaxNumFOp::create(
            nb, nl, args[2],
            detail::countedElement(nb, nl, arith::AtomicRMWKind::maxnumf, x));
        linalg::YieldOp::create(nb, nl, ValueRange{mn, mx});
      });
  Value mn =
      tensor::ExtractOp::create(b, loc, extremes.getResult(0), ValueRange{});
  Value mx =
      tensor::ExtractOp::create(b, loc, extremes.getResult(1), ValueRange{});

  // levels = 2^clamp(bits, 1, 23) - 1; bits >= 24 keeps the tensor.
  Value clamped = arith::MaxSIOp::create(
      b, loc,
      arith::MinSIOp::create(b, loc, bits, detail::i32Const(b, loc, 23)),
      detail::i32Const(b, loc, 1));
  Value levels = arith::UIToFPOp::create(
      b, loc, f32,
      arith::SubIOp::create(
          b, loc,
          arith::ShLIOp::create(b, loc, detail::i32Const(b, loc, 1), clamped),
          detail::i32Const(b, loc, 1)));
  Value exact = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, bits,
                                      detail::i32Const(b, loc, 24));
  Value range = arith::SubFOp::create(b, loc, mx, mn);
  Value zero = constF(b, loc, 0.0f);
  Value notPositive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ULE, range, zero);
  Value scale = arith::DivFOp::create(b, loc, range, levels);
  Value inverse = arith::DivFOp::create(b, loc, levels, range);
  // No finite element, a constant tensor, a range past the largest float or
  // 24 bits and more: the tensor as it is.
  Value keep = arith::OrIOp::create(
      b, loc, exact,
      arith::OrIOp::create(b, loc, notPositive, isNonFinite(b, loc, range)));

  // Stochastic rounding: one Philox block per 16 elements, its four words
  // computed once by a generic over the blocks (not once per element).
  SmallVector<Value> inputs{input};
  SmallVector<AffineMap> maps{all};
  if (random) {
    Value n = tensor::DimOp::create(b, loc, input, 0);
    Value blocks = arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, n,
                              arith::ConstantIndexOp::create(b, loc, 15)),
        arith::ConstantIndexOp::create(b, loc, 16));
    int64_t staticBlocks = type.isDynamicDim(0)
                               ? ShapedType::kDynamic
                               : (type.getDimSize(0) + 15) / 16;
    auto wordType = RankedTensorType::get({staticBlocks}, b.getI32Type());
    SmallVector<Value> blockSizes;
    if (ShapedType::isDynamic(staticBlocks))
      blockSizes.push_back(blocks);
    SmallVector<Value> empties;
    for (int w = 0; w < 4; ++w)
      empties.push_back(
          tensor::EmptyOp::create(b, loc, wordType, blockSizes).getResult());
    auto words = linalg::GenericOp::create(
        b, loc, SmallVector<Type>(4, wordType), ValueRange{}, empties,
        SmallVector<AffineMap>(4, all),
        SmallVector<utils::IteratorType>(1, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nl, ValueRange) {
          Value counter = arith::IndexCastUIOp::create(
              nb, nl, nb.getI64Type(), linalg::IndexOp::create(nb, nl, 0));
          linalg::YieldOp::create(
              nb, nl, buildPhilox4(nb, nl, counter, random->seed, random->id));
        });
    AffineMap ofBlock =
        AffineMap::get(1, 0, {getAffineDimExpr(0, ctx).floorDiv(16)}, ctx);
    for (Value w : words.getResults()) {
      inputs.push_back(w);
      maps.push_back(ofBlock);
    }
  }
  maps.push_back(all);

  Value init = tensor::EmptyOp::create(b, loc, type, dynamicSizes);
  Value out =
      linalg::GenericOp::create(
          b, loc, TypeRange{type}, inputs, ValueRange{init}, maps,
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value x = detail::toF32(nb, nl, args[0]);
            Value y = arith::MulFOp::create(
                nb, nl, arith::SubFOp::create(nb, nl, x, mn), inverse);
            Value offset = constF(nb, nl, 0.5f);
            if (random) {
              // Element i takes byte i % 4 of word (i / 4) % 4 of the
              // block with counter i / 16.
              Value flat = linalg::IndexOp::create(nb, nl, 0);
              Type i32 = nb.getI32Type();
              ValueRange block = args.slice(1, 4);
              Value low = arith::IndexCastUIOp::create(nb, nl, i32, flat);
              Value word = arith::AndIOp::create(
                  nb, nl,
                  arith::ShRUIOp::create(nb, nl, low,
                                         detail::i32Const(nb, nl, 2)),
                  detail::i32Const(nb, nl, 3));
              Value picked = block[0];
              for (int w = 1; w < 4; ++w)
                picked = arith::SelectOp::create(
                    nb, nl,
                    arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                          word, detail::i32Const(nb, nl, w)),
                    block[w], picked);
              Value shift = arith::ShLIOp::create(
                  nb, nl,
                  arith::AndIOp::create(nb, nl, low,
                                        detail::i32Const(nb, nl, 3)),
                  detail::i32Const(nb, nl, 3));
              Value r = arith::AndIOp::create(
                  nb, nl, arith::ShRUIOp::create(nb, nl, picked, shift),
                  detail::i32Const(nb, nl, 255));
              offset = detail::stochasticOffset(nb, nl, r);
            }
            Value q = math::FloorOp::create(
                nb, nl, arith::AddFOp::create(nb, nl, y, offset));
            q = arith::MinimumFOp::create(
                nb, nl, arith::MaximumFOp::create(nb, nl, q, zero), levels);
            Value v = math::FmaOp::create(nb, nl, q, scale, mn);
            Value pass =
                arith::OrIOp::create(nb, nl, keep, isNonFinite(nb, nl, x));
            v = detail::fromF32(nb, nl, v, type.getElementType());
            // The input element itself where it passes through (no
            // round trip through f32 for f64 tensors).
            v = arith::SelectOp::create(nb, nl, pass, args[0], v);
            linalg::YieldOp::create(nb, nl, v);
          })
          .getResult(0);
  return unflatten(b, loc, out, shapedType, shapedSizes);
}
