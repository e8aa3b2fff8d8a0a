//===- EncodingRuntimeQuant.cpp - #act.runtime_quant lowering model -------===//
//
// The EncodingLoweringAttrInterface model of #act.runtime_quant
// (EncodingModel.h): #act.quant at a width the step reads at run time. The
// encode switches (scf.index_switch) over the attribute's widths, each case
// #act.quant's own encode at that width, so that the stored codes are bit for
// bit #act.quant<bits = b>'s; the decode switches on the width stored beside
// them. Width 32, and any width that is not a choice, stores the elements as
// they are (f32 bits): a wrong width costs memory, never the values.
//
//===----------------------------------------------------------------------===//

#include "EncodingModel.h"

using namespace mlir;
using namespace mlir::act;
using mlir::act::detail::buildFromFlatIndex;
using mlir::act::detail::i32Const;
using mlir::act::detail::indexConst;
using mlir::act::detail::IndexMath;

/// The widths with a case of their own (those below 32).
static SmallVector<int64_t> codedWidths(RuntimeQuantEncodingAttr encoding) {
  SmallVector<int64_t> widths;
  for (unsigned c : encoding.getChoices())
    if (c < 32)
      widths.push_back(c);
  return widths;
}

/// The group statistics' type of a `type` tensor (#act.quant's second
/// storage tensor; the same at every width).
static Type statsType(RuntimeQuantEncodingAttr encoding,
                      RankedTensorType type) {
  SmallVector<Type> quant;
  cast<EncodingLoweringAttrInterface>(Attribute(encoding.getQuantAt(1)))
      .getStorageTypes(type, quant);
  return quant[1];
}

template <>
void EncodingModel<RuntimeQuantEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<RuntimeQuantEncodingAttr>(attr);
  Type i32 = IntegerType::get(attr.getContext(), 32);
  types.push_back(RankedTensorType::get({ShapedType::kDynamic}, i32));
  types.push_back(statsType(encoding, type));
  types.push_back(RankedTensorType::get({1}, i32));
}

template <>
SmallVector<Value> EncodingModel<RuntimeQuantEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value seed,
    Value bits, int64_t id, const LoweringOptions &options) const {
  auto encoding = cast<RuntimeQuantEncodingAttr>(attr);
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<Type> storage;
  getStorageTypes(attr, type, storage);
  Type payloadType = storage[0], stats = storage[1];
  SmallVector<int64_t> widths = codedWidths(encoding);
  Value selector = arith::IndexCastOp::create(b, loc, b.getIndexType(), bits);
  auto cases = scf::IndexSwitchOp::create(b, loc, TypeRange{payloadType, stats},
                                          selector, widths, widths.size());
  for (auto [width, region] : llvm::zip(widths, cases.getCaseRegions())) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&region.emplaceBlock());
    SmallVector<Value> quant =
        buildQuantEncode(encoding.getQuantAt(unsigned(width)), b, loc, input,
                         seed, id, Value(), options);
    scf::YieldOp::create(
        b, loc,
        ValueRange{tensor::CastOp::create(b, loc, payloadType, quant[0]),
                   tensor::CastOp::create(b, loc, stats, quant[1])});
  }
  {
    // 32 bits (or a width that is not a choice): the f32 bits as they are;
    // the statistics are not read.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&cases.getDefaultRegion().emplaceBlock());
    Value words =
        buildByteEncode(b, loc, input, 32, options,
                        [](OpBuilder &nb, Location nl, Value x) -> Value {
                          return arith::BitcastOp::create(
                              nb, nl, nb.getI32Type(), toF32(nb, nl, x));
                        });
    auto statsShaped = cast<RankedTensorType>(stats);
    // (Dynamic: no rows.)
    SmallVector<Value> noRows(statsShaped.getNumDynamicDims(),
                              indexConst(b, loc, 0));
    Value unused = tensor::EmptyOp::create(
        b, loc, statsShaped.getShape(), statsShaped.getElementType(), noRows);
    scf::YieldOp::create(
        b, loc,
        ValueRange{tensor::CastOp::create(b, loc, payloadType, words), unused});
  }
  Value width = tensor::FromElementsOp::create(b, loc, storage[2], bits);
  return {cases.getResult(0), cases.getResult(1), width};
}

template <>
bool EncodingModel<RuntimeQuantEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options) && type.getRank() > 0;
}

/// The decode as one parallel generic over `type` in which each element
/// reads its own code at the stored width `width` (an i32): the packed
/// layout's word and lane (docs/Encodings.md) computed from k = 32 / width
/// codes a word, so that an elementwise reader fuses it as it fuses
/// #act.quant's (buildPackedDecode's per-element form, with the width a
/// value). At 32 (k = 1) the word is the element itself, its f32 bits.
static Value buildPerElementDecode(OpBuilder &b, Location loc, Value payload,
                                   Value stats, Value width,
                                   RankedTensorType type, int64_t group) {
  int64_t total = type.getNumElements();
  Type element = type.getElementType();
  Value flatStats = tensor::CollapseShapeOp::create(
      b, loc, stats, SmallVector<ReassociationIndices>{{0, 1}});
  Value raw = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, width,
                                    i32Const(b, loc, 32));
  // log2 of the width (1, 2, 4, 8 or 32): k = 32 / width codes a word and
  // tiles of 16 k elements are shifts, not divisions.
  Value log2 = indexConst(b, loc, 5);
  for (int64_t w : {8, 4, 2, 1})
    log2 = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, width,
                              i32Const(b, loc, w)),
        indexConst(b, loc, llvm::Log2_64(w)), log2);
  Value tileShift =
      arith::SubIOp::create(b, loc, indexConst(b, loc, 9), log2); // 16 * k
  // Every width's tile (at most 16 * 32 elements) divides the tensor: no
  // partial last tile to locate.
  bool wholeTiles = total % 512 == 0;
  return buildFromFlatIndex(
      b, loc, type, [&](OpBuilder &nb, Location nl, Value i) -> Value {
        IndexMath ix{nb, nl};
        Value t = arith::ShRUIOp::create(nb, nl, i, tileShift);
        Value within = arith::SubIOp::create(
            nb, nl, i, arith::ShLIOp::create(nb, nl, t, tileShift));
        Value wordIndex, lane;
        if (wholeTiles) {
          wordIndex = ix.add(arith::ShLIOp::create(nb, nl, t, ix.c(4)),
                             arith::AndIOp::create(nb, nl, within, ix.c(15)));
          lane = arith::ShRUIOp::create(nb, nl, within, ix.c(4));
        } else {
          // Tiles are 16 words wide but a partial last one (tileExtent).
          Value perWord = arith::ShRUIOp::create(nb, nl, ix.c(32), log2);
          Value n = ix.c(total);
          Value remaining = ix.sub(
              n, arith::ShLIOp::create(nb, nl, t, tileShift).getResult());
          Value lastWidth =
              arith::CeilDivUIOp::create(nb, nl, remaining, perWord);
          Value full = arith::ShRUIOp::create(nb, nl, n, tileShift);
          Value wide = ix.select(ix.ult(t, full), ix.c(16), lastWidth);
          wordIndex = ix.add(ix.mul(t, 16), ix.rem(within, wide));
          lane = arith::DivUIOp::create(nb, nl, within, wide);
        }
        Value word = tensor::ExtractOp::create(nb, nl, payload, wordIndex);
        Value shift = arith::IndexCastUIOp::create(
            nb, nl, nb.getI32Type(), arith::ShLIOp::create(nb, nl, lane, log2));
        // (2^width - 1 for width < 32: the shifted-out ones.)
        Value mask = arith::ShRUIOp::create(
            nb, nl, i32Const(nb, nl, -1),
            arith::SubIOp::create(nb, nl, i32Const(nb, nl, 32), width));
        Value code = arith::AndIOp::create(
            nb, nl, arith::ShRUIOp::create(nb, nl, word, shift), mask);
        Value first = ix.mul(ix.div(i, group), 2);
        Value mn = loadStat(
            nb, nl, tensor::ExtractOp::create(nb, nl, flatStats, first));
        Value scale = loadStat(nb, nl,
                               tensor::ExtractOp::create(
                                   nb, nl, flatStats, ix.add(first, ix.c(1))));
        // code < 2^bits: the signed conversion is exact (as #act.quant's).
        Value q = arith::SIToFPOp::create(nb, nl, nb.getF32Type(), code);
        Value coded = math::FmaOp::create(nb, nl, q, scale, mn);
        Value asIs = arith::BitcastOp::create(nb, nl, nb.getF32Type(), word);
        Value x = arith::SelectOp::create(nb, nl, raw, asIs, coded);
        return fromF32(nb, nl, x, element);
      });
}

template <>
Value EncodingModel<RuntimeQuantEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<RuntimeQuantEncodingAttr>(attr);
  Value width = tensor::ExtractOp::create(
      b, loc, storage[2],
      ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
  if (options.perElementDecode &&
      decodesPerElement(attr, decodedType, options)) {
    // (A width that is not a choice was stored as it is: read it so.)
    Value coded = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    for (int64_t w : codedWidths(encoding))
      coded = arith::OrIOp::create(
          b, loc, coded,
          arith::ExtUIOp::create(
              b, loc, b.getI32Type(),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, width,
                                    i32Const(b, loc, w))));
    Value effective = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, coded,
                              i32Const(b, loc, 0)),
        width, i32Const(b, loc, 32));
    return buildPerElementDecode(b, loc, storage[0], storage[1], effective,
                                 decodedType, encoding.getGroup());
  }
  Value selector = arith::IndexCastOp::create(b, loc, b.getIndexType(), width);
  SmallVector<int64_t> widths = codedWidths(encoding);
  auto cases = scf::IndexSwitchOp::create(b, loc, TypeRange{decodedType},
                                          selector, widths, widths.size());
  // The inner decodes build whole tensors (no per-element decode into
  // consumers across the switch).
  LoweringOptions whole = options;
  whole.perElementDecode = false;
  for (auto [w, region] : llvm::zip(widths, cases.getCaseRegions())) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&region.emplaceBlock());
    QuantEncodingAttr quant = encoding.getQuantAt(unsigned(w));
    auto lowering = cast<EncodingLoweringAttrInterface>(Attribute(quant));
    SmallVector<Type> quantTypes;
    lowering.getStorageTypes(decodedType, quantTypes);
    Value payload = tensor::CastOp::create(b, loc, quantTypes[0], storage[0]);
    Value decoded = lowering.buildDecode(b, loc, {payload, storage[1]},
                                         decodedType, dynamicSizes, whole);
    scf::YieldOp::create(b, loc, decoded);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&cases.getDefaultRegion().emplaceBlock());
    Type element = decodedType.getElementType();
    Value payload = storage[0];
    if (decodedType.hasStaticShape())
      payload = tensor::CastOp::create(
          b, loc,
          RankedTensorType::get({decodedType.getNumElements()}, b.getI32Type()),
          payload);
    scf::YieldOp::create(
        b, loc,
        buildByteDecode(b, loc, payload, decodedType, dynamicSizes, whole,
                        [&](OpBuilder &nb, Location nl, Value w) -> Value {
                          Value x = arith::BitcastOp::create(
                              nb, nl, nb.getF32Type(), w);
                          return fromF32(nb, nl, x, element);
                        }));
  }
  return cases.getResult(0);
}
