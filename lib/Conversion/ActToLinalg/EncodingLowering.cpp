//===- EncodingLowering.cpp - how act's encodings lower -------------------===//
//
// The EncodingLoweringAttrInterface models of act's encodings: each builds
// its explicit storage types and its encode/decode IR from the building
// blocks of ActLowering.h. The dialect promises the interface; this file
// attaches the models (registerEncodingLoweringExternalModels), as
// upstream's BufferizableOpInterfaceImpl.cpp files do for their dialects.
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/ActToLinalg/EncodingLowering.h"
#include "act/Conversion/ActToLinalg/ActLowering.h"
#include "act/Dialect/Act/IR/Act.h"

#include "LoweringSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/DialectRegistry.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::act;

#include "act/Conversion/ActToLinalg/EncodingLowering.cpp.inc"

namespace mlir::act::detail {

/// The lowering model of encoding attribute `Attr`. Each encoding defines
/// the three methods by explicit specialization, in its section below.
template <typename Attr>
struct EncodingModel
    : EncodingLoweringAttrInterface::ExternalModel<EncodingModel<Attr>, Attr> {
  void getStorageTypes(Attribute attr, RankedTensorType type,
                       SmallVectorImpl<Type> &types) const;
  SmallVector<Value> buildEncode(Attribute attr, OpBuilder &b, Location loc,
                                 Value input, Value seed, int64_t id,
                                 const LoweringOptions &options) const;
  Value buildDecode(Attribute attr, OpBuilder &b, Location loc,
                    ValueRange storage, RankedTensorType decodedType,
                    ValueRange dynamicSizes,
                    const LoweringOptions &options) const;
  /// Packed encodings specialize it (packedDecodesPerElement).
  bool decodesPerElement(Attribute, RankedTensorType,
                         const LoweringOptions &) const {
    return false;
  }
};

} // namespace mlir::act::detail

using mlir::act::detail::EncodingModel;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Words of `perWord` elements a static tensor needs; dynamic otherwise.
static int64_t staticWords(RankedTensorType type, int64_t perWord) {
  if (!type.hasStaticShape())
    return ShapedType::kDynamic;
  return llvm::divideCeil(type.getNumElements(), perWord);
}

/// The packed payload of `type` at `perWord` codes to a 32-bit word
/// (docs/Encodings.md, "Packed layout"): tensor<words x i32>.
static RankedTensorType packedPayloadType(RankedTensorType type,
                                          int64_t perWord) {
  return RankedTensorType::get({staticWords(type, perWord)},
                               IntegerType::get(type.getContext(), 32));
}

/// Whether buildPackedDecode decodes `type` per element when asked
/// (LoweringOptions::perElementDecode): CPU, static shapes.
static bool packedDecodesPerElement(RankedTensorType type,
                                    const LoweringOptions &options) {
  return options.target == LoweringTarget::CPU && type.hasStaticShape();
}

using mlir::act::detail::toF32;

using mlir::act::detail::fromF32;

static Value f32Const(OpBuilder &b, Location loc, float v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v));
}

//===----------------------------------------------------------------------===//
// #act.quant
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<QuantEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<QuantEncodingAttr>(attr);
  MLIRContext *ctx = encoding.getContext();
  types.push_back(packedPayloadType(type, 32 / encoding.getBits()));
  types.push_back(RankedTensorType::get(
      {staticWords(type, encoding.getGroup()), 2}, Float32Type::get(ctx)));
}

/// The range of a group's finite elements: a group without any (min +inf,
/// max -inf) quantizes as the constant 0.
static std::pair<Value, Value> finiteRange(OpBuilder &b, Location loc, Value mn,
                                           Value mx) {
  Value some = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, mn, mx);
  Value zero = f32Const(b, loc, 0.0f);
  return {arith::SelectOp::create(b, loc, some, mn, zero),
          arith::SelectOp::create(b, loc, some, mx, zero)};
}

/// True where `mx - mn` overflows (finite extremes more than the largest
/// float apart): the step is then computed from halves.
static Value rangeOverflows(OpBuilder &b, Location loc, Value range) {
  Value inf = arith::ConstantFloatOp::create(
      b, loc, b.getF32Type(), APFloat::getInf(APFloat::IEEEsingle()));
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                               math::AbsFOp::create(b, loc, range), inf);
}

/// mx / 2 - mn / 2, which never overflows.
static Value halfRange(OpBuilder &b, Location loc, Value mn, Value mx) {
  Value half = f32Const(b, loc, 0.5f);
  return arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, mx, half),
                               arith::MulFOp::create(b, loc, mn, half));
}

/// The codes' inverse step of a group with minimum `mn` and maximum `mx`:
/// levels / (mx - mn), or 0 for a constant group.
static Value quantInverse(OpBuilder &b, Location loc, Value mn, Value mx,
                          int64_t levels) {
  Value range = arith::SubFOp::create(b, loc, mx, mn);
  Value zero = f32Const(b, loc, 0.0f);
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, range, zero);
  Value inv =
      arith::DivFOp::create(b, loc, f32Const(b, loc, float(levels)), range);
  Value invHalves =
      arith::DivFOp::create(b, loc, f32Const(b, loc, float(levels) * 0.5f),
                            halfRange(b, loc, mn, mx));
  inv = arith::SelectOp::create(b, loc, rangeOverflows(b, loc, range),
                                invHalves, inv);
  return arith::SelectOp::create(b, loc, positive, inv, zero);
}

/// 1 - 2^-20: shortens the step of a group whose range overflows (the
/// reference's kOverflowStepFactor; LoweringTest checks they agree bit for
/// bit).
static constexpr float kOverflowStepFactor = 1.0f - 0x1p-20f;

/// The stored step: (mx - mn) / levels. When the range overflows it comes
/// from halves (at 1 bit saturated at the largest float) and is shortened by
/// 2^-20 of itself, so that the decode's `fma(levels, step, mn)` stays at or
/// below the group's maximum instead of rounding past the largest float.
static Value quantScale(OpBuilder &b, Location loc, Value mn, Value mx,
                        int64_t levels) {
  Value range = arith::SubFOp::create(b, loc, mx, mn);
  Value scale =
      arith::DivFOp::create(b, loc, range, f32Const(b, loc, float(levels)));
  Value fromHalves = arith::MulFOp::create(
      b, loc,
      arith::MinimumFOp::create(
          b, loc,
          arith::DivFOp::create(b, loc, halfRange(b, loc, mn, mx),
                                f32Const(b, loc, float(levels) * 0.5f)),
          f32Const(b, loc, std::numeric_limits<float>::max())),
      f32Const(b, loc, kOverflowStepFactor));
  return arith::SelectOp::create(b, loc, rangeOverflows(b, loc, range),
                                 fromHalves, scale);
}

/// Per-group minimum and maximum of `rows` (tensor<k x group x T>) over
/// its first `valid` elements (all when null): the values the codes read,
/// (min, (2^bits - 1) / (max - min), or 0 for a constant group), and the
/// stored rows (min, (max - min) / (2^bits - 1)); `vectorize` marks the
/// ops for act-vectorize (a chunk's small static kernels).
static void buildQuantStats(OpBuilder &b, Location loc, Value rows, Value valid,
                            int64_t levels, bool vectorize,
                            SmallVectorImpl<Value> &perGroup, Value &metaRows,
                            Value *finite) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto rowsType = cast<RankedTensorType>(rows.getType());
  int64_t group = rowsType.getDimSize(1);
  SmallVector<Value> dyn;
  if (rowsType.isDynamicDim(0))
    dyn.push_back(tensor::DimOp::create(b, loc, rows, 0));
  auto statType = RankedTensorType::get({rowsType.getDimSize(0)}, f32);
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  auto nnan = arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::nnan);
  // The groups' minima and maxima over their finite elements (`finite`:
  // infinities and NaN take the identity, so minnum/maxnum never see a NaN:
  // plain vector min/max everywhere), or over all elements with a probe per
  // group, the elements' sum: not finite when the group holds an infinity
  // or a NaN (then its min/max are meaningless and the finite form is
  // needed), or when the sum overflows (the finite form, needlessly).
  // `v` everywhere in `into`, or in a new tensor when it is null.
  auto fill = [&](OpBuilder &b, Location loc, float v, Value into) {
    if (!into)
      into = tensor::EmptyOp::create(b, loc, statType, dyn);
    return linalg::FillOp::create(b, loc, f32Const(b, loc, v), into)
        .getResult(0);
  };
  // `into`: the tensors to fill and reduce into (new ones when empty).
  auto reduce = [&](OpBuilder &b, Location loc, bool finite, ValueRange into) {
    SmallVector<Value> inits = {
        fill(b, loc, INFINITY, into.empty() ? Value() : into[0]),
        fill(b, loc, -INFINITY, into.empty() ? Value() : into[1])};
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(2, ctx),
                                   row, row};
    if (!finite) {
      inits.push_back(fill(b, loc, 0.0f, Value()));
      maps.push_back(row);
    }
    auto op = linalg::GenericOp::create(
        b, loc, ValueRange(inits).getTypes(), ValueRange{rows}, inits, maps,
        {utils::IteratorType::parallel, utils::IteratorType::reduction},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value x = toF32(nb, nl, args[0]);
          auto counted = [&](arith::AtomicRMWKind kind) {
            return finite ? act::detail::countedElement(nb, nl, kind, x) : x;
          };
          SmallVector<Value> results = {
              arith::MinNumFOp::create(nb, nl, args[1],
                                       counted(arith::AtomicRMWKind::minnumf),
                                       nnan),
              arith::MaxNumFOp::create(nb, nl, args[2],
                                       counted(arith::AtomicRMWKind::maxnumf),
                                       nnan)};
          if (!finite)
            // (In any order: reassociation keeps a sum finite or not.)
            results.push_back(
                arith::AddFOp::create(nb, nl, args[3], x,
                                      arith::FastMathFlagsAttr::get(
                                          ctx, arith::FastMathFlags::reassoc)));
          if (valid) {
            // Padding elements do not count.
            Value i = arith::AddIOp::create(
                nb, nl,
                arith::MulIOp::create(
                    nb, nl, linalg::IndexOp::create(nb, nl, 0),
                    arith::ConstantIndexOp::create(nb, nl, group)),
                linalg::IndexOp::create(nb, nl, 1));
            Value real = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ult, i, valid);
            for (unsigned r = 0; r < results.size(); ++r)
              results[r] = arith::SelectOp::create(nb, nl, real, results[r],
                                                   args[1 + r]);
          }
          linalg::YieldOp::create(nb, nl, results);
        });
    if (vectorize)
      op->setAttr(kVectorizeAttr, b.getUnitAttr());
    return op;
  };
  Value mn, mx, probe;
  if (!vectorize || valid) {
    auto stats = reduce(b, loc, /*finite=*/true, {});
    mn = stats.getResult(0);
    mx = stats.getResult(1);
  } else {
    // A chunk's groups: plain min/max and the sum (three vector
    // instructions per vector of elements instead of six), the finite form
    // only for a chunk whose probes say it may hold an infinity or a NaN.
    // The same values.
    auto fast = reduce(b, loc, /*finite=*/false, {});
    Value any = tensor::ExtractOp::create(
        b, loc, fast.getResult(2),
        ValueRange{act::detail::indexConst(b, loc, 0)});
    for (int64_t g = 1; g < rowsType.getDimSize(0); ++g)
      any = arith::AddFOp::create(
          b, loc, any,
          tensor::ExtractOp::create(
              b, loc, fast.getResult(2),
              ValueRange{act::detail::indexConst(b, loc, g)}));
    probe = math::AbsFOp::create(b, loc, any);
    Value nonFinite = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGE,
                                            probe, f32Const(b, loc, INFINITY));
    auto ifOp = scf::IfOp::create(
        b, loc, nonFinite,
        [&](OpBuilder &tb, Location tl) {
          // Into the fast form's results (dead after this): no buffer of
          // its own, none yielded out of the branch.
          auto stats = reduce(tb, tl, /*finite=*/true,
                              {fast.getResult(0), fast.getResult(1)});
          scf::YieldOp::create(tb, tl, stats.getResults());
        },
        [&](OpBuilder &eb, Location el) {
          scf::YieldOp::create(
              eb, el, ValueRange{fast.getResult(0), fast.getResult(1)});
        });
    mn = ifOp.getResult(0);
    mx = ifOp.getResult(1);
  }

  auto one = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto inverseOp = linalg::GenericOp::create(
      b, loc, TypeRange{statType, statType}, ValueRange{mn, mx},
      ValueRange{tensor::EmptyOp::create(b, loc, statType, dyn),
                 tensor::EmptyOp::create(b, loc, statType, dyn)},
      {one, one, one, one}, {utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto [lo, hi] = finiteRange(nb, nl, args[0], args[1]);
        linalg::YieldOp::create(
            nb, nl, ValueRange{lo, quantInverse(nb, nl, lo, hi, levels)});
      });
  if (vectorize)
    inverseOp->setAttr(kVectorizeAttr, b.getUnitAttr());
  perGroup.assign({inverseOp.getResult(0), inverseOp.getResult(1)});
  if (finite && probe) {
    // Plain rows: the probe finite, and every group's range and inverse
    // step (a range so small that its inverse overflows). All are >= 0, so
    // their sum is finite only if each is (a sum that overflows only takes
    // the general codes, needlessly).
    Value sum = probe;
    for (int64_t g = 0; g < rowsType.getDimSize(0); ++g) {
      Value at = act::detail::indexConst(b, loc, g);
      auto get = [&](Value t) {
        return tensor::ExtractOp::create(b, loc, t, at);
      };
      sum = arith::AddFOp::create(
          b, loc, sum,
          arith::AddFOp::create(b, loc,
                                arith::SubFOp::create(b, loc, get(mx), get(mn)),
                                get(inverseOp.getResult(1))));
    }
    *finite = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, sum,
                                    f32Const(b, loc, INFINITY));
  }

  auto metaType = RankedTensorType::get({rowsType.getDimSize(0), 2}, f32);
  Value metaInit =
      metaRows ? metaRows
               : tensor::EmptyOp::create(b, loc, metaType, dyn).getResult();
  auto metaOp = linalg::GenericOp::create(
      b, loc, metaInit.getType(), ValueRange{mn, mx}, ValueRange{metaInit},
      {row, row, AffineMap::getMultiDimIdentityMap(2, ctx)},
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto [lo, hi] = finiteRange(nb, nl, args[0], args[1]);
        Value scale = quantScale(nb, nl, lo, hi, levels);
        Value first =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                  linalg::IndexOp::create(nb, nl, 1),
                                  arith::ConstantIndexOp::create(nb, nl, 0));
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, first, lo, scale)});
      });
  if (vectorize)
    metaOp->setAttr(kVectorizeAttr, b.getUnitAttr());
  metaRows = metaOp.getResult(0);
}

/// The payload and metadata of `input` under `encoding`; `firstTile` (null:
/// 0) when `input` is a piece of the tensor encoded (RandomKey::firstTile).
static SmallVector<Value> buildQuantEncode(QuantEncodingAttr encoding,
                                           OpBuilder &b, Location loc,
                                           Value input, Value seed, int64_t id,
                                           Value firstTile,
                                           const LoweringOptions &options) {
  int64_t levels = (int64_t(1) << encoding.getBits()) - 1;
  GroupStats stats{
      encoding.getGroup(),
      2,
      [&](OpBuilder &nb, Location nl, Value rows, Value valid, bool vectorize,
          SmallVectorImpl<Value> &perGroup, Value &metaRows, Value *finite) {
        buildQuantStats(nb, nl, rows, valid, levels, vectorize, perGroup,
                        metaRows, finite);
      },
      {arith::AtomicRMWKind::minnumf, arith::AtomicRMWKind::maxnumf},
      /*perGroupValues=*/2,
      [&](OpBuilder &nb, Location nl, ValueRange minMax,
          SmallVectorImpl<Value> &perGroup, SmallVectorImpl<Value> &metaRow) {
        auto [mn, mx] = finiteRange(nb, nl, minMax[0], minMax[1]);
        perGroup.assign({mn, quantInverse(nb, nl, mn, mx, levels)});
        metaRow.assign({mn, quantScale(nb, nl, mn, mx, levels)});
      }};
  std::optional<RandomKey> random;
  if (encoding.isStochastic())
    random =
        RandomKey{seed ? seed
                       : arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0)
                             .getResult(),
                  id, firstTile};
  // Codes (docs/Encodings.md, "Quantization"): v = fma(x - min, inverse
  // step, 1 + u), one rounding, with u = (r + 0.5) / 256 from the
  // element's 8 random bits (1 + u built from its bits, no arithmetic) or
  // 0.5 to round to nearest; the code is floor(v) - 1 clamped to
  // [0, 2^bits - 1]. Returned plus one (PackedCodes::bias): the packing
  // subtracts the ones once per word.
  auto sum = [&](OpBuilder &nb, Location nl, Value x, ValueRange group,
                 function_ref<Value()> randomWord) -> Value {
    Value onePlusU =
        random ? act::detail::stochasticOnePlusOffset(nb, nl, randomWord())
               : f32Const(nb, nl, 1.5f);
    return math::FmaOp::create(
        nb, nl, arith::SubFOp::create(nb, nl, toF32(nb, nl, x), group[0]),
        group[1], onePlusU);
  };
  // In general v is clamped to [1, 2^bits] first: a NaN element (or an
  // infinity in a constant group: inf * 0) gets code 0 (the compare and
  // select is x86's maxps(v, 1) in one instruction); infinities saturate
  // to 0 or 2^bits - 1. The signed conversion (truncating; v >= 1) is one
  // instruction on x86, the unsigned one is not.
  auto code = [&](OpBuilder &nb, Location nl, Value x, ValueRange group,
                  function_ref<Value()> randomWord) -> Value {
    Value v = sum(nb, nl, x, group, randomWord);
    if (levels == 1) {
      // One bit: v >= 2 (false for NaN), a compare the packing folds into
      // a masked or.
      return arith::ExtUIOp::create(
          nb, nl, nb.getI32Type(),
          arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGE, v,
                                f32Const(nb, nl, 2.0f)));
    }
    Value one = f32Const(nb, nl, 1.0f);
    v = arith::SelectOp::create(
        nb, nl,
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, v, one), v,
        one);
    // No NaN here (replaced above).
    auto nnan = arith::FastMathFlagsAttr::get(nb.getContext(),
                                              arith::FastMathFlags::nnan);
    v = arith::MinNumFOp::create(nb, nl, v, f32Const(nb, nl, float(levels + 1)),
                                 nnan);
    return arith::FPToSIOp::create(nb, nl, nb.getI32Type(), v);
  };
  // In chunks of finite elements whose groups' ranges and inverse steps are
  // finite, 0 <= x - min <= max - min, so v is in [1, 2^bits + 1) already
  // (docs/Encodings.md): no clamps.
  auto finiteCode = [&](OpBuilder &nb, Location nl, Value x, ValueRange group,
                        function_ref<Value()> randomWord) -> Value {
    return arith::FPToSIOp::create(nb, nl, nb.getI32Type(),
                                   sum(nb, nl, x, group, randomWord));
  };
  PackedCodes codes{code};
  if (levels > 1) {
    codes.finiteCode = finiteCode;
    codes.bias = 1;
  }
  Value meta;
  Value payload = buildPackedEncode(
      b, loc, input, {encoding.getBits(), 32 / encoding.getBits()}, options,
      &stats, random, codes, &meta);
  return {payload, meta};
}

template <>
SmallVector<Value> EncodingModel<QuantEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value seed,
    int64_t id, const LoweringOptions &options) const {
  return buildQuantEncode(cast<QuantEncodingAttr>(attr), b, loc, input, seed,
                          id, Value(), options);
}

template <>
bool EncodingModel<QuantEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<QuantEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<QuantEncodingAttr>(attr);
  Type elementType = decodedType.getElementType();
  return buildPackedDecode(
      b, loc, storage[0], {encoding.getBits(), 32 / encoding.getBits()},
      options, decodedType, dynamicSizes, storage[1], encoding.getGroup(),
      [&](OpBuilder &nb, Location nl, Value code, ValueRange row) {
        // code < 2^bits: the signed conversion is exact and cheaper on x86.
        Value q = arith::SIToFPOp::create(nb, nl, nb.getF32Type(), code);
        // One rounding: q * step never overflows on its own way to the
        // result (groups whose range overflows decode finite, see
        // quantScale).
        Value x = math::FmaOp::create(nb, nl, q, row[1], row[0]);
        return fromF32(nb, nl, x, elementType);
      });
}

//===----------------------------------------------------------------------===//
// #act.float
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<FloatEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<FloatEncodingAttr>(attr);
  if (encoding.isByteArray()) {
    types.push_back(RankedTensorType::get(
        {type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic},
        IntegerType::get(encoding.getContext(), encoding.getElementBits())));
    return;
  }
  types.push_back(packedPayloadType(type, encoding.getElementsPerWord()));
}

/// The narrow format, or nullopt for f16/bf16 (which use arith.truncf).
static std::optional<MiniFloat> getMiniFloat(FloatFormat format) {
  switch (format) {
  case FloatFormat::FP10:
    return MiniFloat{5, 4, true};
  case FloatFormat::E4M3:
    return MiniFloat{4, 3, false};
  case FloatFormat::E5M2:
    return MiniFloat{5, 2, true};
  default:
    return std::nullopt;
  }
}

/// f16 / bf16 type of a 16-bit format.
static FloatType getHalfType(MLIRContext *ctx, FloatFormat format) {
  if (format == FloatFormat::F16)
    return Float16Type::get(ctx);
  return BFloat16Type::get(ctx);
}

template <>
SmallVector<Value> EncodingModel<FloatEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, int64_t,
    const LoweringOptions &options) const {
  auto encoding = cast<FloatEncodingAttr>(attr);
  unsigned bits = encoding.getElementBits(),
           perWord = encoding.getElementsPerWord();
  FloatFormat format = encoding.getFormat();
  std::optional<MiniFloat> mini = getMiniFloat(format);
  auto code = [&](OpBuilder &nb, Location nl, Value x) -> Value {
    Value v = toF32(nb, nl, x);
    if (mini)
      return buildMiniFloatEncode(nb, nl, v, *mini);
    // Saturate finite magnitudes at the largest finite value (NaN and the
    // infinities pass through), then round
    // to nearest even: f16 through the platform's truncation; bf16 on
    // the bits (u + 0x7fff + lsb) >> 16, which keeps f32 subnormals
    // (LLVM's CPU lowering of the bf16 truncation flushes them) and so
    // gives the same bits on every target.
    FloatType half = getHalfType(nb.getContext(), format);
    APFloat max = APFloat::getLargest(half.getFloatSemantics());
    bool lost;
    max.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    Value limit = arith::ConstantFloatOp::create(nb, nl, nb.getF32Type(), max);
    Value negLimit = arith::NegFOp::create(nb, nl, limit);
    // Ordered compares and selects (not minimumf/maximumf, which x86
    // cannot vectorize): NaN compares false and passes through, and so do
    // the infinities (finite magnitudes beyond the format saturate).
    Value inf = arith::ConstantFloatOp::create(
        nb, nl, nb.getF32Type(), APFloat::getInf(APFloat::IEEEsingle()));
    Value negInf = arith::NegFOp::create(nb, nl, inf);
    Value above = arith::AndIOp::create(
        nb, nl,
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, v, limit),
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT, v, inf));
    Value below = arith::AndIOp::create(
        nb, nl,
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT, v, negLimit),
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, v, negInf));
    v = arith::SelectOp::create(
        nb, nl, above, limit,
        arith::SelectOp::create(nb, nl, below, negLimit, v));
    // Both formats build a NaN's code from the bits.
    Type i32 = nb.getI32Type();
    auto ci = [&](int64_t c) {
      return arith::ConstantIntOp::create(nb, nl, i32, c);
    };
    Value u = arith::BitcastOp::create(nb, nl, i32, v);
    Value isNan =
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::UNO, v, v);
    if (format == FloatFormat::BF16) {
      Value lsb = arith::AndIOp::create(
          nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)), ci(1));
      Value rounded = arith::ShRUIOp::create(
          nb, nl,
          arith::AddIOp::create(nb, nl, u,
                                arith::AddIOp::create(nb, nl, lsb, ci(0x7FFF))),
          ci(16));
      Value quiet = arith::OrIOp::create(
          nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)), ci(0x40));
      return arith::SelectOp::create(nb, nl, isNan, quiet, rounded);
    }
    Value h = arith::TruncFOp::create(nb, nl, half, v);
    Value i16 = arith::BitcastOp::create(nb, nl, nb.getI16Type(), h);
    Value code = arith::ExtUIOp::create(nb, nl, i32, i16);
    // A NaN keeps its sign and its payload's top 10 bits, made quiet
    // (x86's and Arm's conversion): NVPTX's cvt.rn.f16.f32 returns the
    // canonical NaN 0x7fff instead, which made an f16 tensor's encoding
    // lossy for NaNs and the GPU's payload differ from the CPU's.
    Value nan = arith::OrIOp::create(
        nb, nl,
        arith::AndIOp::create(nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)),
                              ci(0x8000)),
        arith::OrIOp::create(
            nb, nl, ci(0x7E00),
            arith::AndIOp::create(
                nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(13)), ci(0x3FF))));
    return arith::SelectOp::create(nb, nl, isNan, nan, code);
  };
  if (encoding.isByteArray())
    return {buildByteEncode(b, loc, input, bits, options, code)};
  return {buildPackedEncode(
      b, loc, input, {bits, perWord}, options, nullptr, std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) { return code(nb, nl, x); })};
}

template <>
bool EncodingModel<FloatEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<FloatEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<FloatEncodingAttr>(attr);
  unsigned bits = encoding.getElementBits(),
           perWord = encoding.getElementsPerWord();
  FloatFormat format = encoding.getFormat();
  std::optional<MiniFloat> mini = getMiniFloat(format);
  Type elementType = decodedType.getElementType();
  auto value = [&](OpBuilder &nb, Location nl, Value code) -> Value {
    Value v;
    if (mini) {
      v = buildMiniFloatDecode(nb, nl, code, *mini);
    } else {
      Value i16 = arith::TruncIOp::create(nb, nl, nb.getI16Type(), code);
      Value h = arith::BitcastOp::create(
          nb, nl, getHalfType(nb.getContext(), format), i16);
      if (elementType == h.getType())
        return h;
      v = arith::ExtFOp::create(nb, nl, nb.getF32Type(), h);
    }
    return fromF32(nb, nl, v, elementType);
  };
  if (encoding.isByteArray())
    return buildByteDecode(b, loc, storage[0], decodedType, dynamicSizes,
                           options, value);
  return buildPackedDecode(b, loc, storage[0], {bits, perWord}, options,
                           decodedType, dynamicSizes, Value(), 0,
                           [&](OpBuilder &nb, Location nl, Value code,
                               ValueRange) { return value(nb, nl, code); });
}

//===----------------------------------------------------------------------===//
// #act.mask
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<MaskEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  types.push_back(packedPayloadType(type, 32));
}

template <>
SmallVector<Value> EncodingModel<MaskEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, int64_t,
    const LoweringOptions &options) const {
  auto encoding = cast<MaskEncodingAttr>(attr);
  MaskPredicate predicate = encoding.getPredicate();
  return {buildPackedEncode(
      b, loc, input, {1, 32}, options, nullptr, std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) -> Value {
        Value zero =
            arith::ConstantOp::create(nb, nl, nb.getZeroAttr(x.getType()));
        Value p;
        if (isa<FloatType>(x.getType())) {
          auto pred = predicate == MaskPredicate::Positive
                          ? arith::CmpFPredicate::OGT
                      : predicate == MaskPredicate::NonNegative
                          ? arith::CmpFPredicate::OGE
                          : arith::CmpFPredicate::UNE;
          p = arith::CmpFOp::create(nb, nl, pred, x, zero);
        } else {
          auto pred = predicate == MaskPredicate::Positive
                          ? arith::CmpIPredicate::sgt
                      : predicate == MaskPredicate::NonNegative
                          ? arith::CmpIPredicate::sge
                          : arith::CmpIPredicate::ne;
          p = arith::CmpIOp::create(nb, nl, pred, x, zero);
        }
        return arith::ExtUIOp::create(nb, nl, nb.getI32Type(), p);
      })};
}

template <>
bool EncodingModel<MaskEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<MaskEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  return buildPackedDecode(
      b, loc, storage[0], {1, 32}, options, decodedType, dynamicSizes, Value(),
      0, [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        return arith::TruncIOp::create(nb, nl, nb.getI1Type(), code);
      });
}

//===----------------------------------------------------------------------===//
// #act.fewbit
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<FewBitEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<FewBitEncodingAttr>(attr);
  types.push_back(packedPayloadType(type, encoding.getElementsPerWord()));
}

template <>
SmallVector<Value> EncodingModel<FewBitEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, int64_t,
    const LoweringOptions &options) const {
  auto encoding = cast<FewBitEncodingAttr>(attr);
  ArrayRef<float> boundaries = encoding.getBoundaries().asArrayRef();
  return {buildPackedEncode(
      b, loc, input, {encoding.getBits(), encoding.getElementsPerWord()},
      options, nullptr, std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) -> Value {
        // The interval: how many boundaries x reaches (ordered compares:
        // NaN reaches none). Sorted boundaries make this the index, and a
        // sum of compares vectorizes where a search would branch.
        Value v = toF32(nb, nl, x);
        Type i32 = nb.getI32Type();
        Value code = arith::ConstantIntOp::create(nb, nl, i32, 0);
        for (float boundary : boundaries) {
          Value c =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(boundary));
          Value ge =
              arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGE, v, c);
          code = arith::AddIOp::create(nb, nl, code,
                                       arith::ExtUIOp::create(nb, nl, i32, ge));
        }
        return code;
      })};
}

template <>
bool EncodingModel<FewBitEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<FewBitEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<FewBitEncodingAttr>(attr);
  unsigned bits = encoding.getBits();
  ArrayRef<float> table = encoding.getValues().asArrayRef();
  Type elementType = decodedType.getElementType();
  return buildPackedDecode(
      b, loc, storage[0], {bits, encoding.getElementsPerWord()}, options,
      decodedType, dynamicSizes, Value(), 0,
      [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        // values[code] by a tree of selects on the code's bits, lowest bit
        // first: element-wise on every target (no table in memory).
        SmallVector<Value> level;
        for (float v : table)
          level.push_back(
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v)));
        Type i32 = nb.getI32Type();
        for (unsigned bit = 0; bit < bits; ++bit) {
          Value set = arith::TruncIOp::create(
              nb, nl, nb.getI1Type(),
              arith::ShRUIOp::create(
                  nb, nl, code,
                  arith::ConstantIntOp::create(nb, nl, i32, bit)));
          SmallVector<Value> next;
          for (size_t k = 0; k + 1 < level.size(); k += 2)
            next.push_back(
                arith::SelectOp::create(nb, nl, set, level[k + 1], level[k]));
          level = std::move(next);
        }
        return fromF32(nb, nl, level.front(), elementType);
      });
}

//===----------------------------------------------------------------------===//
// #act.index
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<IndexEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<IndexEncodingAttr>(attr);
  types.push_back(packedPayloadType(type, encoding.getElementsPerWord()));
}

template <>
SmallVector<Value> EncodingModel<IndexEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, int64_t,
    const LoweringOptions &options) const {
  auto encoding = cast<IndexEncodingAttr>(attr);
  unsigned bits = encoding.getBits();
  return {buildPackedEncode(
      b, loc, input, {bits, encoding.getElementsPerWord()}, options, nullptr,
      std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) -> Value {
        // The low `bits` bits (the promised values are below 2^bits).
        Type i32 = nb.getI32Type();
        unsigned width = x.getType().getIntOrFloatBitWidth();
        Value v = width > 32   ? arith::TruncIOp::create(nb, nl, i32, x)
                  : width < 32 ? arith::ExtUIOp::create(nb, nl, i32, x)
                               : x;
        return arith::AndIOp::create(
            nb, nl, v,
            arith::ConstantIntOp::create(nb, nl, i32,
                                         (int64_t(1) << bits) - 1));
      })};
}

template <>
bool EncodingModel<IndexEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<IndexEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<IndexEncodingAttr>(attr);
  Type elementType = decodedType.getElementType();
  return buildPackedDecode(
      b, loc, storage[0], {encoding.getBits(), encoding.getElementsPerWord()},
      options, decodedType, dynamicSizes, Value(), 0,
      [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        unsigned width = elementType.getIntOrFloatBitWidth();
        if (width > 32)
          return arith::ExtUIOp::create(nb, nl, elementType, code);
        if (width < 32)
          return arith::TruncIOp::create(nb, nl, elementType, code);
        return code;
      });
}

//===----------------------------------------------------------------------===//
// #act.sparse
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<SparseEncodingAttr>::getStorageTypes(
    Attribute, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  // Sizes depend on the data: the bitmap (empty in the dense fallback) and
  // the stored values.
  types.push_back(RankedTensorType::get(
      {ShapedType::kDynamic}, IntegerType::get(type.getContext(), 32)));
  types.push_back(
      RankedTensorType::get({ShapedType::kDynamic}, type.getElementType()));
}

template <>
SmallVector<Value> EncodingModel<SparseEncodingAttr>::buildEncode(
    Attribute, OpBuilder &b, Location loc, Value input, Value, int64_t,
    const LoweringOptions &options) const {
  auto [bitmap, values] = buildSparseEncode(b, loc, input, options);
  return {bitmap, values};
}

template <>
Value EncodingModel<SparseEncodingAttr>::buildDecode(
    Attribute, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  return buildSparseDecode(b, loc, storage[0], storage[1], decodedType,
                           dynamicSizes, options);
}

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
    Attribute attr, OpBuilder &b, Location loc, Value input, Value seed,
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
      b, loc, residual, seed, id, options);
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

//===----------------------------------------------------------------------===//
// #act.recompute
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<RecomputeEncodingAttr>::getStorageTypes(
    Attribute, RankedTensorType, SmallVectorImpl<Type> &) const {
  // Nothing is stored.
}

template <>
SmallVector<Value> EncodingModel<RecomputeEncodingAttr>::buildEncode(
    Attribute, OpBuilder &, Location, Value, Value, int64_t,
    const LoweringOptions &) const {
  return {};
}

template <>
Value EncodingModel<RecomputeEncodingAttr>::buildDecode(
    Attribute, OpBuilder &, Location, ValueRange, RankedTensorType, ValueRange,
    const LoweringOptions &) const {
  // act.decode's verifier rejects #act.recompute: act.recomputed reads it.
  llvm_unreachable("#act.recompute is never decoded");
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void mlir::act::registerEncodingLoweringExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, ActDialect *) {
    QuantEncodingAttr::attachInterface<EncodingModel<QuantEncodingAttr>>(*ctx);
    FloatEncodingAttr::attachInterface<EncodingModel<FloatEncodingAttr>>(*ctx);
    MaskEncodingAttr::attachInterface<EncodingModel<MaskEncodingAttr>>(*ctx);
    FewBitEncodingAttr::attachInterface<EncodingModel<FewBitEncodingAttr>>(
        *ctx);
    IndexEncodingAttr::attachInterface<EncodingModel<IndexEncodingAttr>>(*ctx);
    SparseEncodingAttr::attachInterface<EncodingModel<SparseEncodingAttr>>(
        *ctx);
    DivisionEncodingAttr::attachInterface<EncodingModel<DivisionEncodingAttr>>(
        *ctx);
    RecomputeEncodingAttr::attachInterface<
        EncodingModel<RecomputeEncodingAttr>>(*ctx);
  });
}
