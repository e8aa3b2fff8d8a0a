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

/// One 1-D parallel generic from `in` (1-D) to a new tensor of `element`.
static Value mapElements(OpBuilder &b, Location loc, Value in, Type element,
                         function_ref<Value(OpBuilder &, Location, Value)> f) {
  auto inType = cast<RankedTensorType>(in.getType());
  SmallVector<Value> dyn;
  if (inType.isDynamicDim(0))
    dyn.push_back(tensor::DimOp::create(b, loc, in, 0));
  Value init = tensor::EmptyOp::create(b, loc, inType.getShape(), element, dyn);
  AffineMap id = b.getMultiDimIdentityMap(1);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{in}, ValueRange{init},
             ArrayRef<AffineMap>{id, id},
             ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, f(nb, nl, args[0]));
             })
      .getResult(0);
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
        mapElements(b, loc, act::detail::flatten(b, loc, input), b.getI32Type(),
                    [](OpBuilder &nb, Location nl, Value x) -> Value {
                      return arith::BitcastOp::create(nb, nl, nb.getI32Type(),
                                                      toF32(nb, nl, x));
                    });
    auto statsShaped = cast<RankedTensorType>(stats);
    // (Dynamic: no rows.)
    Value unused;
    if (statsShaped.hasStaticShape())
      unused = tensor::EmptyOp::create(b, loc, statsShaped.getShape(),
                                       b.getF32Type());
    else
      unused = tensor::EmptyOp::create(
          b, loc, statsShaped.getShape(), b.getF32Type(),
          ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
    scf::YieldOp::create(
        b, loc,
        ValueRange{tensor::CastOp::create(b, loc, payloadType, words), unused});
  }
  Value width = tensor::FromElementsOp::create(b, loc, storage[2], bits);
  return {cases.getResult(0), cases.getResult(1), width};
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
    Value flat = mapElements(b, loc, storage[0], element,
                             [&](OpBuilder &nb, Location nl, Value w) -> Value {
                               Value x = arith::BitcastOp::create(
                                   nb, nl, nb.getF32Type(), w);
                               return fromF32(nb, nl, x, element);
                             });
    if (decodedType.hasStaticShape())
      flat = tensor::CastOp::create(
          b, loc,
          RankedTensorType::get({decodedType.getNumElements()}, element), flat);
    scf::YieldOp::create(b, loc,
                         unflatten(b, loc, flat, decodedType, dynamicSizes));
  }
  return cases.getResult(0);
}
