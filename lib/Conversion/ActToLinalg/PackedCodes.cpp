//===- PackedCodes.cpp - packed codes of an encoding ----------------------===//
//
// The packed layout (docs/Encodings.md): codes of `bits` bits, 32 / bits to
// a 32-bit word, per-group statistics (minimum and scale), Philox-driven
// stochastic rounding; encode and decode on the CPU (chunked, vectorized)
// and through the GPU kernels (ActGpuKernels.cpp).
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
  if (staticOr(rest) != ShapedType::kDynamic && staticOr(rest) % tile == 0)
    return {ix.add(ix.mul(t, 16), ix.rem(within, ix.c(16))),
            ix.div(within, 16)};
  // The width varies (the last tile's is narrower): within / width through
  // f32, exact for within < tile (at most 512) and width in [1, 16] (an
  // inexact quotient is at least 1/16 from the next integer, far above
  // f32's rounding), because an integer division by a value that is not a
  // constant has no vector form on x86: a per-element decode's lanes would
  // each divide alone.
  OpBuilder &b = ix.b;
  Location loc = ix.loc;
  Value width = tileExtent(ix, t, rest, tile, perWord).second;
  auto toF32 = [&](Value v) {
    return arith::UIToFPOp::create(
        b, loc, b.getF32Type(),
        arith::IndexCastUIOp::create(b, loc, b.getI32Type(), v));
  };
  Value lane = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      arith::FPToUIOp::create(
          b, loc, b.getI32Type(),
          arith::DivFOp::create(b, loc, toF32(within), toF32(width))));
  Value word = ix.sub(within, arith::MulIOp::create(b, loc, lane, width));
  return {ix.add(ix.mul(t, 16), word), lane};
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
  Type element = stats.metaElement;
  auto metaType = RankedTensorType::get({k, columns}, element);
  Value metaInit =
      metaRows ? metaRows
               : tensor::EmptyOp::create(b, loc, metaType, dyn).getResult();
  SmallVector<AffineMap> metaMaps(columns, dims(2, {0}));
  metaMaps.push_back(dims(2, {0, 1}));
  metaRows =
      linalg::GenericOp::create(
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
            linalg::YieldOp::create(nb, nl, storeStat(nb, nl, v, element));
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
                     stats->metaElement);

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

/// The bits of lane `lane` (index) of the packed `word` (i32) of format `f`.
static Value wordLaneCode(OpBuilder &b, Location loc, Value word, Value lane,
                          PackedFormat f) {
  int64_t mask = (int64_t(1) << f.bits) - 1;
  Value shift = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(),
      arith::MulIOp::create(b, loc, lane, indexConst(b, loc, f.bits)));
  return arith::AndIOp::create(b, loc,
                               arith::ShRUIOp::create(b, loc, word, shift),
                               i32Const(b, loc, mask));
}

Value mlir::act::buildPackedElementCode(OpBuilder &b, Location loc,
                                        Value payload, PackedFormat f, Value k,
                                        Value count) {
  IndexMath ix{b, loc};
  auto [wordIndex, lane] =
      wordAndLane(ix, k, count, f.tileElements(), f.perWord);
  Value word = tensor::ExtractOp::create(b, loc, payload, wordIndex);
  return wordLaneCode(b, loc, word, lane, f);
}

Value mlir::act::buildPackedDecode(OpBuilder &b, Location loc, Value payload,
                                   PackedFormat f,
                                   const LoweringOptions &options,
                                   RankedTensorType type,
                                   ValueRange dynamicSizes, Value meta,
                                   int64_t group, ElementValue value) {
  IndexMath ix{b, loc};
  Value n = elementCount(ix, type, dynamicSizes);
  PackedSplit split(ix, f, meta ? group : 0, n, options.target,
                    /*decode=*/true);
  int64_t tile = split.tile, chunk = split.chunk, perWord = f.perWord;
  int64_t columns =
      meta ? cast<RankedTensorType>(meta.getType()).getDimSize(1) : 0;
  Type metaElement =
      meta ? cast<RankedTensorType>(meta.getType()).getElementType() : Type();
  Type elementType = type.getElementType();
  auto laneCode = [&](OpBuilder &nb, Location nl, Value word, Value lane) {
    return wordLaneCode(nb, nl, word, lane, f);
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
    return buildFromFlatIndex(
        b, loc, type, [&](OpBuilder &nb, Location nl, Value i) -> Value {
          IndexMath nx{nb, nl};
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
          return value(nb, nl, laneCode(nb, nl, word, lane), row);
        });
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
              b, loc, tensorOf({groupsPerTile}, metaElement), chunkMeta,
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
            b, loc, tensorOf({perWord}, metaElement), lanes));
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
