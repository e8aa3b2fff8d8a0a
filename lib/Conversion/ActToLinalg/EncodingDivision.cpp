//===- EncodingDivision.cpp - #act.division lowering model ----------------===//
//
// The EncodingLoweringAttrInterface model of #act.division (EncodingModel.h):
// its storage types, its encode and its decode.
//
//===----------------------------------------------------------------------===//

#include "EncodingModel.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::act;

//===----------------------------------------------------------------------===//
// #act.division
//===----------------------------------------------------------------------===//

/// The quantization model the residual is stored by.
static EncodingLoweringAttrInterface
getResidualLowering(DivisionEncodingAttr encoding) {
  return cast<EncodingLoweringAttrInterface>(
      Attribute(encoding.getResidualEncoding()));
}

/// The index of every dimension of a generic's iteration space over `rank`
/// dimensions.
static SmallVector<Value> loopIndices(OpBuilder &b, Location loc,
                                      unsigned rank) {
  SmallVector<Value> indices;
  for (unsigned d = 0; d < rank; ++d)
    indices.push_back(linalg::IndexOp::create(b, loc, d));
  return indices;
}

/// The position of element `indices`' block average.
static SmallVector<Value> averagePosition(OpBuilder &b, Location loc,
                                          DivisionEncodingAttr encoding,
                                          SmallVector<Value> indices) {
  auto [h, w] = encoding.getSpatialDims();
  Value block = act::detail::indexConst(b, loc, encoding.getBlock());
  for (unsigned d : {h, w})
    indices[d] = arith::DivUIOp::create(b, loc, indices[d], block);
  return indices;
}

/// `f(x, average)` for every element of `input` against its block's
/// average in `averages` (nearest upsampling): a parallel generic writing
/// `type`'s elements.
static Value
buildWithAverages(OpBuilder &b, Location loc, DivisionEncodingAttr encoding,
                  Value input, Value averages, RankedTensorType type,
                  ValueRange dynamicSizes,
                  function_ref<Value(OpBuilder &, Location, Value, Value)> f) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  auto identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  Value init = tensor::EmptyOp::create(b, loc, type, dynamicSizes);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{input}, ValueRange{init},
             {identity, identity},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value average = tensor::ExtractOp::create(
                   nb, nl, averages,
                   averagePosition(nb, nl, encoding,
                                   loopIndices(nb, nl, rank)));
               linalg::YieldOp::create(nb, nl, f(nb, nl, args[0], average));
             })
      .getResult(0);
}

/// The maps of a spatial tensor split into whole blocks: when H and W are
/// multiples of the block (and the target is the CPU), `x` (rank 4) is
/// viewed as rank 6, each spatial dimension split into (blocks, block):
/// NCHW as N x C x I x B x J x B, NHWC as N x I x B x J x B x C. The
/// block-wise generics below then read block averages through a projected
/// permutation (a broadcast) instead of per-element index arithmetic, so
/// act-vectorize turns them into vector code.
struct DivisionBlocks {
  DivisionEncodingAttr encoding;
  bool nhwc;
  int64_t block;

  static std::optional<DivisionBlocks> get(DivisionEncodingAttr encoding,
                                           RankedTensorType type,
                                           const LoweringOptions &options) {
    if (options.target != LoweringTarget::CPU)
      return std::nullopt;
    auto [h, w] = encoding.getSpatialDims();
    int64_t block = encoding.getBlock();
    if (type.getDimSize(h) % block || type.getDimSize(w) % block)
      return std::nullopt;
    return DivisionBlocks{encoding, encoding.getLayout() == SpatialLayout::NHWC,
                          block};
  }

  /// Rank-4 `x` as rank 6 (a view, no copy).
  Value expand(OpBuilder &b, Location loc, Value x) const {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> sizes;
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups;
    auto [h, w] = encoding.getSpatialDims();
    for (int64_t d = 0; d < 4; ++d) {
      ReassociationIndices group = {int64_t(shape.size())};
      if (d == h || d == w) {
        shape.append({type.getDimSize(d) / block, block});
        sizes.append({b.getIndexAttr(type.getDimSize(d) / block),
                      b.getIndexAttr(block)});
        group.push_back(int64_t(shape.size()) - 1);
      } else {
        shape.push_back(type.getDimSize(d));
        sizes.push_back(tensor::getMixedSize(b, loc, x, d));
      }
      groups.push_back(group);
    }
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), x, groups,
        sizes);
  }

  /// Rank-6 `x` back to rank 4.
  Value collapse(OpBuilder &b, Location loc, Value x) const {
    SmallVector<ReassociationIndices> groups =
        nhwc ? SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4}, {5}}
             : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}};
    return tensor::CollapseShapeOp::create(b, loc, x, groups);
  }

  /// In the rank-6 view's loops (its dimensions in order), the map to an
  /// element's block average (rank 4).
  AffineMap averageMap(MLIRContext *ctx) const {
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    return AffineMap::get(6, 0,
                          nhwc
                              ? SmallVector<AffineExpr>{d(0), d(1), d(3), d(5)}
                              : SmallVector<AffineExpr>{d(0), d(1), d(2), d(4)},
                          ctx);
  }

  /// `f(x, average)` over the rank-6 view of `x` (rank 4) into a new
  /// tensor of `type` (rank 4), or into `into` (rank 4, of `type`).
  Value withAverages(OpBuilder &b, Location loc, Value x, Value averages,
                     RankedTensorType type,
                     function_ref<Value(OpBuilder &, Location, Value, Value)> f,
                     Value into = {}) const {
    Value x6 = expand(b, loc, x);
    auto x6Type = cast<RankedTensorType>(x6.getType());
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < 6; ++d)
      if (x6Type.isDynamicDim(d))
        dynamic.push_back(tensor::DimOp::create(b, loc, x6, d));
    Value init = into ? expand(b, loc, into)
                      : tensor::EmptyOp::create(b, loc, x6Type.getShape(),
                                                type.getElementType(), dynamic)
                            .getResult();
    MLIRContext *ctx = b.getContext();
    auto identity = AffineMap::getMultiDimIdentityMap(6, ctx);
    Value out =
        linalg::GenericOp::create(
            b, loc, TypeRange{init.getType()}, ValueRange{x6, averages},
            ValueRange{init}, {identity, averageMap(ctx), identity},
            SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              linalg::YieldOp::create(nb, nl, f(nb, nl, args[0], args[1]));
            })
            .getResult(0);
    return collapse(b, loc, out);
  }

  /// The block averages of `x` (rank 4), in the order of every target
  /// (each column of a block summed down its rows, then the block's column
  /// sums left to right). The column sums of a block row are one parallel
  /// generic reading the block's B rows (NCHW: W columns, NHWC: W x C,
  /// contiguous: vectorized by act-vectorize); each block's sum of its
  /// columns is one reading the B columns (NHWC: a vector of channels), or
  /// for NCHW, whose columns are adjacent, a reduction loop ordered outside
  /// the blocks (not vectorized). No sum is reassociated: the same bits.
  Value averages(OpBuilder &b, Location loc, Value x,
                 RankedTensorType averagesType) const {
    MLIRContext *ctx = b.getContext();
    auto type = cast<RankedTensorType>(x.getType());
    Type f32 = b.getF32Type();
    Value zero = f32Const(b, loc, 0.0f);
    int64_t dyn = ShapedType::kDynamic;
    auto times = [&](int64_t a, int64_t c) {
      return a == dyn || c == dyn ? dyn : a * c;
    };
    auto size = [&](int64_t d) { return tensor::getMixedSize(b, loc, x, d); };
    auto view = [&](Value v, ArrayRef<int64_t> shape,
                    ArrayRef<ReassociationIndices> groups,
                    ArrayRef<OpFoldResult> sizes) -> Value {
      return tensor::ExpandShapeOp::create(
          b, loc,
          RankedTensorType::get(
              shape, cast<RankedTensorType>(v.getType()).getElementType()),
          v, groups, sizes);
    };
    // The shape of `in` without dimension `r`, and its dynamic sizes.
    auto without = [&](Value in, unsigned r, SmallVector<int64_t> &shape,
                       SmallVector<Value> &dynamic) {
      auto inType = cast<RankedTensorType>(in.getType());
      for (unsigned d = 0; d < inType.getRank(); ++d) {
        if (d == r)
          continue;
        shape.push_back(inType.getDimSize(d));
        if (inType.isDynamicDim(d))
          dynamic.push_back(tensor::DimOp::create(b, loc, in, d));
      }
    };
    // ((0 + in[.., 0, ..]) + in[.., 1, ..]) + ...: the B slices of `in` at
    // dimension `r` added in order by one parallel generic.
    auto sumSlices = [&](Value in, unsigned r) -> Value {
      auto inType = cast<RankedTensorType>(in.getType());
      unsigned rank = inType.getRank();
      SmallVector<int64_t> shape;
      SmallVector<Value> dynamic;
      without(in, r, shape, dynamic);
      auto sliceType = RankedTensorType::get(shape, inType.getElementType());
      SmallVector<Value> slices;
      for (int64_t k = 0; k < block; ++k) {
        SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
            sizes = tensor::getMixedSizes(b, loc, in),
            strides(rank, b.getIndexAttr(1));
        offsets[r] = b.getIndexAttr(k);
        sizes[r] = b.getIndexAttr(1);
        slices.push_back(tensor::ExtractSliceOp::create(
            b, loc, sliceType, in, offsets, sizes, strides));
      }
      Value init = tensor::EmptyOp::create(b, loc, shape, f32, dynamic);
      auto identity = AffineMap::getMultiDimIdentityMap(rank - 1, ctx);
      SmallVector<AffineMap> maps(block + 1, identity);
      return linalg::GenericOp::create(
                 b, loc, TypeRange{init.getType()}, slices, ValueRange{init},
                 maps,
                 SmallVector<utils::IteratorType>(
                     rank - 1, utils::IteratorType::parallel),
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value sum = f32Const(nb, nl, 0.0f);
                   for (Value v : args.drop_back())
                     sum = arith::AddFOp::create(nb, nl, sum, toF32(nb, nl, v));
                   linalg::YieldOp::create(nb, nl, sum);
                 })
          .getResult(0);
    };
    ArrayRef<int64_t> s = type.getShape();
    OpFoldResult bAttr = b.getIndexAttr(block);
    Value sums;
    if (nhwc) {
      // (n, H, W, C) -> (n, H / B, B, W C): column sums (n, H / B, W C),
      // viewed (n, H / B, W / B, B, C), summed over the block's columns.
      int64_t wc = times(s[2], s[3]);
      Value flat = tensor::CollapseShapeOp::create(
          b, loc, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
      Value rows =
          view(flat, {s[0], s[1] / block, block, wc}, {{0}, {1, 2}, {3}},
               {size(0), b.getIndexAttr(s[1] / block), bAttr,
                tensor::getMixedSize(b, loc, flat, 2)});
      Value columns = sumSlices(rows, 2);
      sums = sumSlices(view(columns,
                            {s[0], s[1] / block, s[2] / block, block, s[3]},
                            {{0}, {1}, {2, 3, 4}},
                            {size(0), b.getIndexAttr(s[1] / block),
                             b.getIndexAttr(s[2] / block), bAttr, size(3)}),
                       3);
    } else {
      // (n, c, H, W) -> (n, c, H / B, B, W): column sums (n, c, H / B, W),
      // viewed (n, c, H / B, W / B, B), summed over the block's columns.
      Value rows = view(x, {s[0], s[1], s[2] / block, block, s[3]},
                        {{0}, {1}, {2, 3}, {4}},
                        {size(0), size(1), b.getIndexAttr(s[2] / block), bAttr,
                         b.getIndexAttr(s[3])});
      Value columns = sumSlices(rows, 3);
      // (n, c, H / B, W / B, B) summed over its last dimension in loops
      // (n, c, H / B, v, W / B): the blocks of a row innermost, each sum in
      // order.
      Value blockColumns =
          view(columns, {s[0], s[1], s[2] / block, s[3] / block, block},
               {{0}, {1}, {2}, {3, 4}},
               {size(0), size(1), b.getIndexAttr(s[2] / block),
                b.getIndexAttr(s[3] / block), bAttr});
      SmallVector<int64_t> shape;
      SmallVector<Value> dynamic;
      without(blockColumns, 4, shape, dynamic);
      auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
      auto par = utils::IteratorType::parallel;
      Value init =
          linalg::FillOp::create(
              b, loc, zero,
              tensor::EmptyOp::create(b, loc, shape, f32, dynamic).getResult())
              .getResult(0);
      sums = linalg::GenericOp::create(
                 b, loc, TypeRange{init.getType()}, ValueRange{blockColumns},
                 ValueRange{init},
                 {AffineMap::get(5, 0, {d(0), d(1), d(2), d(4), d(3)}, ctx),
                  AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx)},
                 {par, par, par, utils::IteratorType::reduction, par},
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   linalg::YieldOp::create(
                       nb, nl,
                       arith::AddFOp::create(nb, nl, args[1], args[0])
                           .getResult());
                 })
                 .getResult(0);
    }
    SmallVector<Value> dynamic;
    for (int64_t dim = 0; dim < 4; ++dim)
      if (averagesType.isDynamicDim(dim))
        dynamic.push_back(tensor::DimOp::create(b, loc, x, dim));
    Value count = f32Const(b, loc, float(block * block));
    auto identity = AffineMap::getMultiDimIdentityMap(4, ctx);
    auto par = utils::IteratorType::parallel;
    Value init = tensor::EmptyOp::create(b, loc, averagesType, dynamic);
    Type elementType = averagesType.getElementType();
    return linalg::GenericOp::create(
               b, loc, TypeRange{averagesType}, ValueRange{sums},
               ValueRange{init}, {identity, identity}, {par, par, par, par},
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(
                     nb, nl,
                     fromF32(nb, nl,
                             arith::DivFOp::create(nb, nl, args[0], count),
                             elementType));
               })
        .getResult(0);
  }
};

/// #act.division on the CPU a span of whole block rows at a time: the
/// `block` image rows of one (n, c) (NCHW) or of one n (NHWC) are
/// contiguous, and a span of them is itself a rank-4 map of the same layout
/// (NCHW 1 x rows x block x W, NHWC rows x block x W x C) whose averages are
/// a contiguous piece of all averages. Each span's averages, residual and
/// codes are computed from the span read once from memory; the residual
/// exists a span at a time (no full-size f32 temporary). Spans are whole
/// chunks of the residual's packed encode, so its groups and Philox
/// counters (RandomKey::firstTile) are those of the whole tensor: the same
/// bits as encoding the whole residual.
struct DivisionSpans {
  DivisionBlocks blocks;
  QuantEncodingAttr quant;
  PackedFormat format;
  /// Elements and averages per span; spans in the tensor.
  int64_t spanElements, spanAverages, spans;
  /// One span (rank 4) and its averages.
  SmallVector<int64_t> spanShape, spanAveragesShape;

  /// Spans of at most about this many elements where the layout allows:
  /// a span is read from memory once, by its column sums, and then
  /// computed on from L1 (residual, codes); short spans let the hardware
  /// prefetcher bring the next span in while the codes of one are computed
  /// (1,024 elements: 0.45 of memcpy at 2 bits, 8,192: 0.33; 256 (one
  /// chunk): 0.41; act-bench-kernels --only=division).
  static constexpr int64_t kTargetElements = 1024;
  /// Spans of at most this many elements (the smallest span of whole block
  /// rows and whole chunks may be larger than the target).
  static constexpr int64_t kMaxElements = 131072;

  static std::optional<DivisionSpans> get(const DivisionBlocks &blocks,
                                          RankedTensorType type) {
    if (!type.hasStaticShape())
      return std::nullopt;
    QuantEncodingAttr quant = blocks.encoding.getResidualEncoding();
    PackedFormat format{quant.getBits(), 32 / quant.getBits()};
    int64_t chunk =
        getPackedEncodeChunk(format, quant.getGroup(), quant.isStochastic());
    ArrayRef<int64_t> shape = type.getShape();
    int64_t block = blocks.block;
    // A block row: NCHW block x W, NHWC block x W x C.
    int64_t rowElements =
        block * shape[blocks.nhwc ? 2 : 3] * (blocks.nhwc ? shape[3] : 1);
    int64_t rowAverages = rowElements / (block * block);
    int64_t rows = type.getNumElements() / rowElements;
    if (chunk == 0 || rows == 0)
      return std::nullopt;
    int64_t baseRows = std::lcm(chunk, rowElements) / rowElements;
    if (rows % baseRows || baseRows * rowElements > kMaxElements)
      return std::nullopt;
    // The most rows under the target that divide the tensor's.
    int64_t spanRows = baseRows;
    for (int64_t k = 2; k * baseRows * rowElements <= kTargetElements; ++k)
      if (rows % (k * baseRows) == 0)
        spanRows = k * baseRows;
    DivisionSpans spans{blocks,
                        quant,
                        format,
                        spanRows * rowElements,
                        spanRows * rowAverages,
                        rows / spanRows,
                        {},
                        {}};
    int64_t blocksPerRow = rowAverages / (blocks.nhwc ? shape[3] : 1);
    if (blocks.nhwc) {
      spans.spanShape = {spanRows, block, shape[2], shape[3]};
      spans.spanAveragesShape = {spanRows, 1, blocksPerRow, shape[3]};
    } else {
      spans.spanShape = {1, spanRows, block, shape[3]};
      spans.spanAveragesShape = {1, spanRows, 1, blocksPerRow};
    }
    return spans;
  }

  /// An scf.forall over the spans with `outs`, `b` inside it before its
  /// terminator: the loop, the span's index and its first element.
  std::tuple<scf::ForallOp, Value, Value>
  forEachSpan(OpBuilder &b, Location loc, ValueRange outs) const {
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(spans)}, outs,
        std::nullopt);
    b.setInsertionPoint(forall.getTerminator());
    Value s = forall.getInductionVar(0);
    return {forall, s, act::detail::IndexMath{b, loc}.mul(s, spanElements)};
  }

  /// The elements [offset, offset + |type|) of the 1-D `flat` as `type`
  /// (rank 4; a view).
  static Value slice4(OpBuilder &b, Location loc, Value flat, Value offset,
                      RankedTensorType type) {
    return tensor::ExpandShapeOp::create(
        b, loc, type,
        act::detail::slice(
            b, loc, flat, offset,
            act::detail::indexConst(b, loc, type.getNumElements())),
        SmallVector<ReassociationIndices>{{0, 1, 2, 3}});
  }

  /// The payload, metadata and averages of `input` (storage order).
  SmallVector<Value> encode(OpBuilder &b, Location loc, Value input, Value seed,
                            int64_t id, const LoweringOptions &options) const {
    auto type = cast<RankedTensorType>(input.getType());
    Type elementType = type.getElementType();
    SmallVector<Type> storageTypes;
    cast<EncodingLoweringAttrInterface>(Attribute(blocks.encoding))
        .getStorageTypes(type, storageTypes);
    // The outputs: payload, metadata, and the averages as one flat tensor.
    auto averagesType = cast<RankedTensorType>(storageTypes[2]);
    SmallVector<Value> outs = {
        tensor::EmptyOp::create(b, loc, cast<RankedTensorType>(storageTypes[0]),
                                ValueRange{}),
        tensor::EmptyOp::create(b, loc, cast<RankedTensorType>(storageTypes[1]),
                                ValueRange{}),
        tensor::EmptyOp::create(
            b, loc, ArrayRef<int64_t>{averagesType.getNumElements()},
            elementType)};
    Value flat = act::detail::flatten(b, loc, input);
    OpBuilder::InsertionGuard guard(b);
    auto [forall, s, start] = forEachSpan(b, loc, outs);
    act::detail::IndexMath ix{b, loc};
    auto spanType = RankedTensorType::get(spanShape, elementType);
    Value x = slice4(b, loc, flat, start, spanType);
    Value averages = blocks.averages(
        b, loc, x, RankedTensorType::get(spanAveragesShape, elementType));
    Value residual = blocks.withAverages(
        b, loc, x, averages, spanType.clone(b.getF32Type()),
        [&](OpBuilder &nb, Location nl, Value v, Value average) {
          return arith::SubFOp::create(nb, nl, toF32(nb, nl, v),
                                       toF32(nb, nl, average))
              .getResult();
        });
    SmallVector<Value> codes = buildQuantEncode(
        quant, b, loc, act::detail::flatten(b, loc, residual), seed, id,
        ix.div(start, format.tileElements()), options);
    Value offsets[] = {ix.div(start, format.perWord),
                       ix.div(start, quant.getGroup()),
                       ix.mul(s, spanAverages)};
    Value parts[] = {codes[0], codes[1],
                     act::detail::flatten(b, loc, averages)};
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    for (int i = 0; i < 3; ++i)
      act::detail::parallelInsert(b, loc, parts[i],
                                  forall.getRegionIterArgs()[i], offsets[i]);
    b.setInsertionPointAfter(forall);
    return {forall.getResult(0), forall.getResult(1),
            tensor::ExpandShapeOp::create(
                b, loc, averagesType, forall.getResult(2),
                SmallVector<ReassociationIndices>{{0, 1, 2, 3}})};
  }

  /// The decoded tensor of `type` from `storage` (payload, metadata,
  /// averages).
  Value decode(OpBuilder &b, Location loc, ValueRange storage,
               RankedTensorType type, const LoweringOptions &options) const {
    Type elementType = type.getElementType();
    Value averagesFlat = act::detail::flatten(b, loc, storage[2]);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{type.getNumElements()}, elementType);
    OpBuilder::InsertionGuard guard(b);
    auto [forall, s, start] = forEachSpan(b, loc, ValueRange{init});
    act::detail::IndexMath ix{b, loc};
    int64_t group = quant.getGroup();
    Value payload =
        act::detail::slice(b, loc, storage[0], ix.div(start, format.perWord),
                           ix.c(spanElements / format.perWord));
    Value meta = act::detail::slice(b, loc, storage[1], ix.div(start, group),
                                    ix.c(spanElements / group));
    auto spanType = RankedTensorType::get(spanShape, elementType);
    Value averages =
        slice4(b, loc, averagesFlat, ix.mul(s, spanAverages),
               RankedTensorType::get(spanAveragesShape, elementType));
    Value r = cast<EncodingLoweringAttrInterface>(Attribute(quant))
                  .buildDecode(b, loc, {payload, meta},
                               spanType.clone(b.getF32Type()), {}, options);
    // Written into the output's span (no span-sized copy).
    Value into = slice4(b, loc, forall.getRegionIterArgs()[0], start, spanType);
    Value decoded = blocks.withAverages(
        b, loc, r, averages, spanType,
        [&](OpBuilder &nb, Location nl, Value v, Value average) {
          return fromF32(
              nb, nl, arith::AddFOp::create(nb, nl, toF32(nb, nl, average), v),
              elementType);
        },
        into);
    decoded = act::detail::flatten(b, loc, decoded);
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    act::detail::parallelInsert(b, loc, decoded, forall.getRegionIterArgs()[0],
                                start);
    b.setInsertionPointAfter(forall);
    return tensor::ExpandShapeOp::create(
        b, loc, type, forall.getResult(0),
        SmallVector<ReassociationIndices>{{0, 1, 2, 3}});
  }
};

template <>
void EncodingModel<DivisionEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<DivisionEncodingAttr>(attr);
  getResidualLowering(encoding).getStorageTypes(
      type.clone(Float32Type::get(type.getContext())), types);
  types.push_back(RankedTensorType::get(
      encoding.getAveragesShape(type.getShape()), type.getElementType()));
}

/// The block averages: a parallel generic over them, each summing its
/// block in f32 in loops of its own, column by column (the same order on
/// every target; no vectorized reassociation).
static Value buildAveragesInLoops(OpBuilder &b, Location loc,
                                  DivisionEncodingAttr encoding, Value input,
                                  RankedTensorType averagesType,
                                  ValueRange dynamicSizes) {
  auto type = cast<RankedTensorType>(input.getType());
  Type elementType = type.getElementType();
  unsigned rank = type.getRank();
  unsigned hDim, wDim;
  std::tie(hDim, wDim) = encoding.getSpatialDims();
  int64_t block = encoding.getBlock();
  Value averagesInit =
      tensor::EmptyOp::create(b, loc, averagesType, dynamicSizes);
  MLIRContext *ctx = b.getContext();
  Value averages =
      linalg::GenericOp::create(
          b, loc, TypeRange{averagesType}, ValueRange{},
          ValueRange{averagesInit},
          {AffineMap::getMultiDimIdentityMap(rank, ctx)},
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange) {
            act::detail::IndexMath m{nb, nl};
            SmallVector<Value> at = loopIndices(nb, nl, rank);
            auto span = [&](unsigned d) {
              Value start = m.mul(at[d], block);
              Value end =
                  m.min(m.add(start, m.c(block)), m.c(type.getDimSize(d)));
              return std::make_pair(start, end);
            };
            Value h0, h1, w0, w1;
            std::tie(h0, h1) = span(hDim);
            std::tie(w0, w1) = span(wDim);
            Value zero = f32Const(nb, nl, 0.0f);
            // Each column summed top to bottom, the column sums left to
            // right.
            auto cols = scf::ForOp::create(
                nb, nl, w0, w1, m.c(1), ValueRange{zero},
                [&](OpBuilder &cb, Location cl, Value w, ValueRange sum) {
                  auto rows = scf::ForOp::create(
                      cb, cl, h0, h1, act::detail::indexConst(cb, cl, 1),
                      ValueRange{f32Const(cb, cl, 0.0f)},
                      [&](OpBuilder &rb, Location rl, Value h,
                          ValueRange column) {
                        SmallVector<Value> element = at;
                        element[hDim] = h;
                        element[wDim] = w;
                        Value x = toF32(
                            rb, rl,
                            tensor::ExtractOp::create(rb, rl, input, element));
                        scf::YieldOp::create(rb, rl,
                                             ValueRange{arith::AddFOp::create(
                                                 rb, rl, column[0], x)});
                      });
                  scf::YieldOp::create(cb, cl,
                                       ValueRange{arith::AddFOp::create(
                                           cb, cl, sum[0], rows.getResult(0))});
                });
            Value count =
                arith::MulIOp::create(nb, nl, m.sub(h1, h0), m.sub(w1, w0));
            Value countF = arith::UIToFPOp::create(
                nb, nl, nb.getF32Type(),
                arith::IndexCastUIOp::create(nb, nl, nb.getI32Type(), count));
            Value mean =
                arith::DivFOp::create(nb, nl, cols.getResult(0), countF);
            linalg::YieldOp::create(nb, nl, fromF32(nb, nl, mean, elementType));
          })
          .getResult(0);

  return averages;
}

template <>
SmallVector<Value> EncodingModel<DivisionEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value seed, Value,
    int64_t id, const LoweringOptions &options) const {
  auto encoding = cast<DivisionEncodingAttr>(attr);
  auto type = cast<RankedTensorType>(input.getType());
  Type elementType = type.getElementType();
  SmallVector<Value> dynamicSizes =
      tensor::createDynamicDimValues(b, loc, input);

  auto averagesType = RankedTensorType::get(
      encoding.getAveragesShape(type.getShape()), elementType);
  // The residual against the stored average, in f32, quantized.
  auto subtract = [&](OpBuilder &nb, Location nl, Value x, Value average) {
    return arith::SubFOp::create(nb, nl, toF32(nb, nl, x),
                                 toF32(nb, nl, average))
        .getResult();
  };
  Value averages, residual;
  auto blocks = DivisionBlocks::get(encoding, type, options);
  if (blocks)
    if (auto spans = DivisionSpans::get(*blocks, type))
      return spans->encode(b, loc, input, seed, id, options);
  if (blocks) {
    // Whole blocks on the CPU: vectorizable generics, the same bits.
    averages = blocks->averages(b, loc, input, averagesType);
    residual = blocks->withAverages(b, loc, input, averages,
                                    type.clone(b.getF32Type()), subtract);
  } else {
    averages = buildAveragesInLoops(b, loc, encoding, input, averagesType,
                                    dynamicSizes);
    residual =
        buildWithAverages(b, loc, encoding, input, averages,
                          type.clone(b.getF32Type()), dynamicSizes, subtract);
  }
  SmallVector<Value> storage = getResidualLowering(encoding).buildEncode(
      b, loc, residual, seed, Value(), id, options);
  storage.push_back(averages);
  return storage;
}

template <>
bool EncodingModel<DivisionEncodingAttr>::decodesPerElement(
    Attribute attr, RankedTensorType type,
    const LoweringOptions &options) const {
  // The residual's decode, then one generic adding the block averages.
  return getResidualLowering(cast<DivisionEncodingAttr>(attr))
      .decodesPerElement(type.clone(Float32Type::get(type.getContext())),
                         options);
}

template <>
Value EncodingModel<DivisionEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<DivisionEncodingAttr>(attr);
  Type elementType = decodedType.getElementType();
  auto blocks = DivisionBlocks::get(encoding, decodedType, options);
  // (A per-element decode is one generic a consumer takes in.)
  if (blocks && !options.perElementDecode)
    if (auto spans = DivisionSpans::get(*blocks, decodedType))
      return spans->decode(b, loc, storage, decodedType, options);
  Value residual = getResidualLowering(encoding).buildDecode(
      b, loc, storage.drop_back(), decodedType.clone(b.getF32Type()),
      dynamicSizes, options);
  auto add = [&](OpBuilder &nb, Location nl, Value r, Value average) {
    return fromF32(nb, nl,
                   arith::AddFOp::create(nb, nl, toF32(nb, nl, average), r),
                   elementType);
  };
  if (blocks)
    return blocks->withAverages(b, loc, residual, storage.back(), decodedType,
                                add);
  return buildWithAverages(b, loc, encoding, residual, storage.back(),
                           decodedType, dynamicSizes, add);
}
