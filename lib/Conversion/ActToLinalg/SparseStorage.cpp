//===- SparseStorage.cpp - sparse storage of an encoding ------------------===//
//
// A bitmap of the nonzero elements and their values, compacted per block
// (#act.sparse, Gist's sparse storage).
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

/// Where the values of each of the `words` words of `bitmap` start
/// (tensor<? x i32>): a sequential scan of their popcounts.
static Value wordOffsets(OpBuilder &b, Location loc, Value bitmap,
                         Value words) {
  IndexMath ix{b, loc};
  Value offsetsInit = emptyRows(b, loc, words, {}, b.getI32Type());
  auto scan = scf::ForOp::create(
      b, loc, ix.c(0), words, ix.c(1),
      ValueRange{offsetsInit, i32Const(b, loc, 0)},
      [&](OpBuilder &nb, Location nl, Value w, ValueRange iter) {
        Value word = tensor::ExtractOp::create(nb, nl, bitmap, ValueRange{w});
        Value offsets =
            tensor::InsertOp::create(nb, nl, iter[1], iter[0], ValueRange{w});
        Value total = arith::AddIOp::create(
            nb, nl, iter[1], math::CtPopOp::create(nb, nl, word).getResult());
        scf::YieldOp::create(nb, nl, ValueRange{offsets, total});
      });
  return scan.getResult(0);
}

Value mlir::act::buildSparseDecode(OpBuilder &b, Location loc, Value bitmap,
                                   Value values, RankedTensorType type,
                                   ValueRange dynamicSizes,
                                   const LoweringOptions &options) {
  IndexMath ix{b, loc};
  Value n = elementCount(ix, type, dynamicSizes);
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
  Value offsets = wordOffsets(b, loc, bitmap, stored);
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

Value mlir::act::buildSparseElementDecode(
    OpBuilder &b, Location loc, Value bitmap, Value readable,
    RankedTensorType type,
    function_ref<Value(OpBuilder &, Location, Value k)> valueAt) {
  IndexMath ix{b, loc};
  Type i32 = b.getI32Type();
  Type elementType = type.getElementType();
  Value stored = b.createOrFold<tensor::DimOp>(loc, bitmap, 0);
  Value dense =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, stored, ix.c(0));
  // The dense fallback's bitmap (no words) read as one zero word.
  Value words = nonEmpty(b, loc, bitmap);
  Value wordCount = b.createOrFold<tensor::DimOp>(loc, words, 0);
  Value offsets = wordOffsets(b, loc, words, wordCount);
  Value lastWord = ix.sub(wordCount, ix.c(1));
  Value last = ix.sub(readable, ix.c(1));
  return buildFromFlatIndex(
      b, loc, type, [&](OpBuilder &nb, Location nl, Value i) -> Value {
        IndexMath nx{nb, nl};
        Value w = nx.min(nx.div(i, 32), lastWord);
        Value word = tensor::ExtractOp::create(nb, nl, words, ValueRange{w});
        Value one = i32Const(nb, nl, 1);
        Value bit = arith::ShLIOp::create(
            nb, nl, one,
            arith::IndexCastUIOp::create(nb, nl, i32, nx.rem(i, nx.c(32))));
        Value set = arith::CmpIOp::create(
            nb, nl, arith::CmpIPredicate::ne,
            arith::AndIOp::create(nb, nl, word, bit), i32Const(nb, nl, 0));
        Value below = arith::AndIOp::create(
            nb, nl, word, arith::SubIOp::create(nb, nl, bit, one));
        Value rank = arith::AddIOp::create(
            nb, nl, tensor::ExtractOp::create(nb, nl, offsets, ValueRange{w}),
            math::CtPopOp::create(nb, nl, below).getResult());
        Value k = nx.min(nx.select(dense, i,
                                   arith::IndexCastUIOp::create(
                                       nb, nl, nb.getIndexType(), rank)),
                         last);
        Value v = valueAt(nb, nl, k);
        return arith::SelectOp::create(
            nb, nl, arith::OrIOp::create(nb, nl, dense, set), v,
            arith::ConstantOp::create(nb, nl, nb.getZeroAttr(elementType)));
      });
}
