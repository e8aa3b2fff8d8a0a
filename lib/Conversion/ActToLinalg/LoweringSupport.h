//===- LoweringSupport.h - internals shared by act's lowerings --*- C++ -*-===//
//
// Private to lib/Conversion/ActToLinalg: index arithmetic, the Philox lanes of
// a packed word, the slicing helpers of the storage building blocks
// (ActLowering.cpp, PackedCodes.cpp, SparseStorage.cpp), and the GPU kernels
// (ActGpuKernels.cpp) they dispatch to for LoweringTarget::GPU.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_LIB_CONVERSION_ACTTOLINALG_LOWERINGSUPPORT_H
#define ACT_LIB_CONVERSION_ACTTOLINALG_LOWERINGSUPPORT_H

#include "act/Conversion/ActToLinalg/ActLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::act::detail {

inline Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

inline Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

/// 1 + u for the offset `u` a stochastic rounding `floor(y + u)` adds, from
/// an element's 8 random bits `r` (an i32 in [0, 255]): u = (r + 0.5) / 256
/// (act::rt::stochasticOffset; docs/Design.md, "Randomness"). Exact, built from
/// its bits (r in mantissa bits 22..15, the half in bit 14): integer ops
/// LLVM merges with the byte's extraction, no conversion.
inline Value stochasticOnePlusOffset(OpBuilder &b, Location loc, Value r) {
  Type i32 = b.getI32Type();
  Value bits = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc, r,
                            arith::ConstantIntOp::create(b, loc, i32, 15)),
      arith::ConstantIntOp::create(b, loc, i32, 0x3F804000));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// The offset `u` itself: (1 + u) - 1, exact.
inline Value stochasticOffset(OpBuilder &b, Location loc, Value r) {
  FloatType f32 = b.getF32Type();
  return arith::SubFOp::create(
      b, loc, stochasticOnePlusOffset(b, loc, r),
      arith::ConstantFloatOp::create(b, loc, f32, APFloat(1.0f)));
}

/// A static size for a tensor dimension, if `v` folds to a constant.
inline int64_t staticOr(Value v) {
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return ShapedType::kDynamic;
}

/// Index arithmetic that folds constants, so static shapes stay static.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return indexConst(b, loc, v); }
  Value add(Value x, Value y) {
    return b.createOrFold<arith::AddIOp>(loc, x, y);
  }
  Value sub(Value x, Value y) {
    return b.createOrFold<arith::SubIOp>(loc, x, y);
  }
  Value mul(Value x, int64_t y) {
    return b.createOrFold<arith::MulIOp>(loc, x, c(y));
  }
  Value div(Value x, int64_t y) {
    return b.createOrFold<arith::DivUIOp>(loc, x, c(y));
  }
  Value rem(Value x, Value y) {
    return b.createOrFold<arith::RemUIOp>(loc, x, y);
  }
  Value ceilDiv(Value x, int64_t y) {
    return b.createOrFold<arith::CeilDivUIOp>(loc, x, c(y));
  }
  Value ult(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, x, y);
  }
  Value ule(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ule, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return b.createOrFold<arith::SelectOp>(loc, cond, x, y);
  }
  Value min(Value x, Value y) {
    return b.createOrFold<arith::MinUIOp>(loc, x, y);
  }
};

/// The 8 random bits of each lane of one word (docs/Design.md, "Randomness";
/// docs/Encodings.md, "Philox4x32-10"): one Philox block (128 bits) serves
/// 16 lanes. With P = perWord rounded up to a power of two, lane l of word
/// w of tile t has the global lane L = t * P + l; it reads byte L % 4 of
/// word (L % 16) / 4 of the block with counter (L / 16) * 16 + w. Words of
/// P < 16 lanes share a block between 16 / P consecutive tiles (4 bits:
/// two tiles, 8 bits: four); P = 32 (1 bit) uses two blocks per word.
/// Blocks are built once per LaneRandom and block.
struct LaneRandom {
  /// Lanes per word rounded up to a power of two.
  static int64_t paddedLanes(int64_t perWord) {
    return int64_t(llvm::PowerOf2Ceil(uint64_t(perWord)));
  }
  /// Consecutive tiles that share their blocks (1 from 16 lanes on).
  static int64_t tilesPerBlock(int64_t perWord) {
    return std::max<int64_t>(1, 16 / paddedLanes(perWord));
  }

  std::optional<RandomKey> key;
  int64_t padded;
  /// The tiles' block row (t / tilesPerBlock) and the tile's position in
  /// it: static (`position`) when the caller knows it, else `dynamicPosition`.
  Value row, word; // index
  int64_t position = 0;
  Value dynamicPosition;
  llvm::DenseMap<int64_t, SmallVector<Value, 4>> blocks;

  /// Tile `tile` (any index value).
  LaneRandom(OpBuilder &b, Location loc, std::optional<RandomKey> key,
             int64_t perWord, Value tile, Value word)
      : key(key), padded(paddedLanes(perWord)), word(word) {
    assert((!key || padded >= 4) && "random bytes for at most 8-bit lanes");
    int64_t shared = tilesPerBlock(perWord);
    if (shared == 1) {
      row = tile;
      return;
    }
    IndexMath ix{b, loc};
    row = ix.div(tile, shared);
    dynamicPosition = ix.rem(tile, ix.c(shared));
  }
  /// Tile `row * tilesPerBlock + position` (position static).
  LaneRandom(std::optional<RandomKey> key, int64_t perWord, Value row,
             int64_t position, Value word)
      : key(key), padded(paddedLanes(perWord)), row(row), word(word),
        position(position) {}

  /// Lane `lane`'s random byte, an i32 in [0, 255].
  Value get(OpBuilder &b, Location loc, int64_t lane) {
    // Global lane L = (row * shared + position) * P + lane: its block is
    // row * max(1, P / 16) + (position * P + lane) / 16, its byte
    // (position * P + lane) % 16.
    int64_t inRow = position * padded + lane;
    int64_t blockInRow = padded >= 16 ? inRow / 16 : 0;
    auto &block = blocks[blockInRow];
    if (block.empty()) {
      IndexMath ix{b, loc};
      Value counter =
          ix.add(ix.mul(ix.add(ix.mul(row, std::max<int64_t>(1, padded / 16)),
                               ix.c(blockInRow)),
                        16),
                 word);
      counter = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), counter);
      block = buildPhilox4(b, loc, counter, key->seed, key->id);
    }
    Type i32 = b.getI32Type();
    Value bits = block[(inRow % 16) / 4];
    if (dynamicPosition) {
      // The word (position * P + lane) % 16 / 4 of a position known at run
      // time: position * P / 4 + lane / 4 (P is 4 or 8).
      IndexMath ix{b, loc};
      Value index =
          ix.add(ix.mul(dynamicPosition, padded / 4), ix.c((lane % 16) / 4));
      bits = block[0];
      for (int64_t w = 1; w < 4; ++w)
        bits = arith::SelectOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index,
                                  ix.c(w)),
            block[w], bits);
    }
    if (lane % 4)
      bits = arith::ShRUIOp::create(
          b, loc, bits,
          arith::ConstantIntOp::create(b, loc, i32, 8 * (lane % 4)));
    return arith::AndIOp::create(
        b, loc, bits, arith::ConstantIntOp::create(b, loc, i32, 255));
  }
};

/// `t[offset : offset + size]` along dim 0 (all of the other dims).
Value slice(OpBuilder &b, Location loc, Value t, Value offset, Value size);
/// Inserts `part` into `into` at `offset` along dim 0, in an scf.forall's
/// in_parallel terminator.
void parallelInsert(OpBuilder &b, Location loc, Value part, Value into,
                    Value offset);
/// `input` as a 1-D tensor (row-major; a view, no copy).
Value flatten(OpBuilder &b, Location loc, Value input);
/// One parallel generic over the static `type` (rank > 0) whose element at
/// row-major index i (an index) is `element(b, loc, i)`: the per-element
/// decodes, which an elementwise reader fuses.
Value buildFromFlatIndex(
    OpBuilder &b, Location loc, RankedTensorType type,
    function_ref<Value(OpBuilder &, Location, Value i)> element);
/// Inserts `part` into `into` at `offset` along dim 0.
Value insert(OpBuilder &b, Location loc, Value part, Value into, Value offset);
/// The 1-D tensor `t`, or where it is empty one zero element of its type
/// (a constant): what a gather with clamped indices reads from a storage
/// tensor that may hold nothing (the per-element sparse decode's bitmap
/// and values), so that it needs no branch.
Value nonEmpty(OpBuilder &b, Location loc, Value t);

/// The ranked tensor type of `shape` and `type`.
inline RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type type) {
  return RankedTensorType::get(shape, type);
}

/// The reassociation that collapses all `rank` dims into one.
inline SmallVector<ReassociationIndices> collapseAll(int64_t rank) {
  if (rank == 0)
    return {};
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

/// The number of elements of a tensor of `type` whose dynamic dimensions are
/// `dynamicSizes` (in order), as an index.
inline Value elementCount(IndexMath &ix, RankedTensorType type,
                          ValueRange dynamicSizes) {
  Value n = ix.c(1);
  unsigned next = 0;
  for (int64_t d : type.getShape())
    n = ix.b.createOrFold<arith::MulIOp>(
        ix.loc, n, ShapedType::isDynamic(d) ? dynamicSizes[next++] : ix.c(d));
  return n;
}

/// The static shape of `rows` x `inner` (dim 0 dynamic unless `rows` folds)
/// and the dynamic size that goes with it.
inline SmallVector<int64_t> rowsShape(Value rows, ArrayRef<int64_t> inner,
                                      SmallVectorImpl<Value> &dynamic) {
  SmallVector<int64_t> shape = {staticOr(rows)};
  shape.append(inner.begin(), inner.end());
  if (ShapedType::isDynamic(shape[0]))
    dynamic.push_back(rows);
  return shape;
}

/// An empty tensor with dim 0 of `rows` (static when it folds).
inline Value emptyRows(OpBuilder &b, Location loc, Value rows,
                       ArrayRef<int64_t> inner, Type type) {
  SmallVector<Value> dyn;
  SmallVector<int64_t> shape = rowsShape(rows, inner, dyn);
  return tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>(shape), type,
                                 ValueRange(dyn));
}

/// Bytes of an element of `type` in memory (i1: one).
inline int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

/// Whether the GPU kernels build the work (on the GPU or emulated).
inline bool isGpu(const LoweringOptions &options) {
  return options.target == LoweringTarget::GPU ||
         options.target == LoweringTarget::GPUEmulated;
}

/// A group statistic (f32) as metadata of element type `element`: itself
/// for f32; for i16 its bf16 bits (the value must be a bf16 value: the top
/// half of its f32 bits).
inline Value storeStat(OpBuilder &b, Location loc, Value x, Type element) {
  if (element == x.getType())
    return x;
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  bits = arith::ShRUIOp::create(b, loc, bits,
                                arith::ConstantIntOp::create(b, loc, i32, 16));
  return arith::TruncIOp::create(b, loc, element, bits);
}

/// A stored group statistic as f32 (storeStat's inverse).
inline Value loadStat(OpBuilder &b, Location loc, Value x) {
  if (!x.getType().isInteger(16))
    return x;
  Type i32 = b.getI32Type();
  Value bits = arith::ExtUIOp::create(b, loc, i32, x);
  bits = arith::ShLIOp::create(b, loc, bits,
                               arith::ConstantIntOp::create(b, loc, i32, 16));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// f32 view of a float element (extended or truncated).
Value toF32(OpBuilder &b, Location loc, Value x);
/// A float element of `type` from f32 `x` (truncated or extended).
Value fromF32(OpBuilder &b, Location loc, Value x, Type type);

/// The starting value of a group statistic of `kind` (f32), never NaN:
/// +inf for a minimum, -inf for a maximum, the identity otherwise. (MLIR's
/// identity of minnumf/maxnumf is NaN; the statistics' min/max reductions
/// carry `nnan`, under which the x86 vector min/max return whichever
/// operand comes second: an infinity in a group's last lanes emptied or
/// skewed its range.)
inline Value statIdentity(OpBuilder &b, Location loc,
                          arith::AtomicRMWKind kind) {
  bool min = kind == arith::AtomicRMWKind::minnumf ||
             kind == arith::AtomicRMWKind::minimumf;
  bool max = kind == arith::AtomicRMWKind::maxnumf ||
             kind == arith::AtomicRMWKind::maximumf;
  if (!min && !max)
    return arith::getIdentityValue(kind, b.getF32Type(), b, loc);
  return arith::ConstantFloatOp::create(
      b, loc, b.getF32Type(),
      APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/max));
}

/// What element `x` (f32) contributes to a group statistic of `kind`:
/// itself when finite, else statIdentity. Group statistics count finite
/// elements only, so one infinity or NaN cannot poison the group
/// (docs/Encodings.md).
inline Value countedElement(OpBuilder &b, Location loc,
                            arith::AtomicRMWKind kind, Value x) {
  Value inf = arith::ConstantFloatOp::create(
      b, loc, b.getF32Type(), APFloat::getInf(APFloat::IEEEsingle()));
  Value finite = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE,
                                       math::AbsFOp::create(b, loc, x), inf);
  return arith::SelectOp::create(b, loc, finite, x, statIdentity(b, loc, kind));
}

/// A buffer of `tensor` to read in a kernel (bufferization.to_buffer
/// read_only): rows contiguous, any offset.
Value readBuffer(OpBuilder &b, Location loc, Value tensor);
/// A new 64-byte aligned buffer of `rows` x `inner` elements of `type`.
Value allocRows(OpBuilder &b, Location loc, Value rows, ArrayRef<int64_t> inner,
                Type type);
/// The tensor of a buffer a kernel wrote (to_tensor restrict writable).
Value asTensor(OpBuilder &b, Location loc, Value buffer);

/// GPU kernels (ActGpuKernels.cpp). Each takes tensors, launches a
/// gpu.launch over buffers of them (bufferization.to_buffer read_only) and
/// returns its results as tensors of new buffers (to_tensor restrict
/// writable), so one-shot bufferization takes it from there.

/// Encodes the first `tiles` whole tiles of `flat` (1-D) into `payload`
/// (a new tensor<words x i32> of all ceil(n / perWord) words; the words
/// after the tiles are left for the caller) and, with `stats`, the groups
/// of those tiles into `meta` (a new tensor<groups x m x f32>). A thread
/// owns four consecutive words of a tile: it loads each lane's four
/// elements as one 16-byte vector, combines its part of each group's
/// statistics, finishes them over the group's threads with a clustered
/// gpu.subgroup_reduce, and stores its four words as one 16-byte vector.
/// Groups of more than 8 tiles are one warp each, a thread owning up to four
/// quarter-tiles. Requires (canEncodeOnGpu) groups that divide the tile, or
/// are 1, 2, 4, ..., 32 tiles.
void buildGpuPackedEncode(OpBuilder &b, Location loc, Value flat,
                          PackedFormat f, Value tiles, Value words,
                          Value groups, const LoweringOptions &options,
                          const GroupStats *stats,
                          std::optional<RandomKey> random,
                          const PackedCodes &codes, Value &payload,
                          Value &meta);
/// Whether buildGpuPackedEncode handles groups of `group` (0: none).
bool canEncodeOnGpu(PackedFormat f, int64_t group);

/// Decodes the first `tiles` whole tiles of `payload` into a new flat
/// tensor of `n` elements of `elementType` (the rest left for the caller);
/// a thread per four words, one 16-byte load, four-element vector stores.
/// Groups (`meta` rows) must be a multiple of 16 elements.
Value buildGpuPackedDecode(OpBuilder &b, Location loc, Value payload,
                           PackedFormat f, Value tiles, Value n,
                           Type elementType, Value meta, int64_t group,
                           const LoweringOptions &options, ElementValue value);

/// Element-wise `fn` from flat `in` into a new flat tensor of `n` elements of
/// `elementType`, for the first `count` elements (a multiple of
/// `perThread`): a thread per `perThread` elements, vector loads and stores.
Value buildGpuElementwise(OpBuilder &b, Location loc, Value in, Value n,
                          Value count, int64_t perThread, Type elementType,
                          const LoweringOptions &options,
                          function_ref<Value(OpBuilder &, Location, Value)> fn);

} // namespace mlir::act::detail

#endif // ACT_LIB_CONVERSION_ACTTOLINALG_LOWERINGSUPPORT_H
