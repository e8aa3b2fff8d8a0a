//===- EncodingQuant.cpp - #act.quant lowering model ----------------------===//
//
// The EncodingLoweringAttrInterface model of #act.quant (EncodingModel.h):
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
// #act.quant
//===----------------------------------------------------------------------===//

/// The group statistics' element type: f32, or i16 holding bf16 bits.
static Type statElementType(MLIRContext *ctx, StatFormat format) {
  if (format == StatFormat::BF16)
    return IntegerType::get(ctx, 16);
  return Float32Type::get(ctx);
}

template <>
void EncodingModel<QuantEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<QuantEncodingAttr>(attr);
  MLIRContext *ctx = encoding.getContext();
  types.push_back(packedPayloadType(type, 32 / encoding.getBits()));
  types.push_back(
      RankedTensorType::get({staticWords(type, encoding.getGroup()), 2},
                            statElementType(ctx, encoding.getStats())));
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

/// Finite f32 `x` rounded to a bf16 value toward +inf (`up`) or -inf, as an
/// f32, saturating at the largest finite bf16 (on the bits: the low half
/// dropped, one bf16 step added to the magnitude when that rounded the
/// wrong way; the reference's roundToBf16).
static Value roundToBf16(OpBuilder &b, Location loc, Value x, bool up) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return i32Const(b, loc, v); };
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value low = arith::AndIOp::create(b, loc, bits, c(0xFFFF));
  Value truncated = arith::AndIOp::create(b, loc, bits, c(int32_t(0xFFFF0000)));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, bits, c(0));
  // Dropping bits rounds toward zero: away from it for a positive value
  // rounded up or a negative one rounded down.
  Value away = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, low, c(0)),
      up ? arith::XOrIOp::create(
               b, loc, negative,
               arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1))
               .getResult()
         : negative);
  Value rounded = arith::AddIOp::create(
      b, loc, truncated,
      arith::SelectOp::create(b, loc, away, c(0x10000), c(0)));
  Value infinite = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b, loc, rounded, c(0x7FFFFFFF)), c(0x7F800000));
  Value largest = arith::OrIOp::create(
      b, loc, arith::AndIOp::create(b, loc, rounded, c(int32_t(0x80000000))),
      c(0x7F7F0000));
  return arith::BitcastOp::create(
      b, loc, b.getF32Type(),
      arith::SelectOp::create(b, loc, infinite, largest, rounded));
}

namespace {
/// A group's statistics (f32 scalars) from its finite range [lo, hi]: the
/// stored minimum and step, the inverse step the codes read, and (bf16
/// only) `covered`, false when the stored grid may not reach from lo to hi
/// (a minimum below bf16's range, a step rounded down to keep the decode
/// finite, or hi - min overflowing): the codes then need their clamps.
struct QuantStatValues {
  Value min, step, inverse, covered;
};
} // namespace

/// #act.quant's statistics of a group with finite range [lo, hi]
/// (docs/Encodings.md): f32, the minimum lo, the step (hi - lo) / levels
/// and the inverse levels / (hi - lo); bf16, the minimum rounded down to
/// bf16, the step (hi - min) / levels rounded up (rounded down instead when
/// the top code's decode would overflow), and the inverse 1 / step, so
/// that the codes are computed on the grid the decode uses.
static QuantStatValues quantStatValues(OpBuilder &b, Location loc, Value lo,
                                       Value hi, int64_t levels,
                                       StatFormat format) {
  if (format == StatFormat::F32)
    return {lo, quantScale(b, loc, lo, hi, levels),
            quantInverse(b, loc, lo, hi, levels), Value()};
  Value zero = f32Const(b, loc, 0.0f);
  Value inf = f32Const(b, loc, INFINITY);
  auto isFinite = [&](Value v) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                 math::AbsFOp::create(b, loc, v), inf);
  };
  Value mn = roundToBf16(b, loc, lo, /*up=*/false);
  Value scale = quantScale(b, loc, mn, hi, levels);
  Value up = roundToBf16(b, loc, scale, /*up=*/true);
  Value top =
      math::FmaOp::create(b, loc, f32Const(b, loc, float(levels)), up, mn);
  Value fits = isFinite(top);
  Value step = arith::SelectOp::create(
      b, loc, fits, up, roundToBf16(b, loc, scale, /*up=*/false));
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, step, zero);
  Value inverse = arith::SelectOp::create(
      b, loc, positive,
      arith::DivFOp::create(b, loc, f32Const(b, loc, 1.0f), step), zero);
  Value covered = arith::AndIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc, fits,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, mn, lo)),
      isFinite(arith::SubFOp::create(b, loc, hi, mn)));
  return {mn, step, inverse, covered};
}

/// Per-group minimum and maximum of `rows` (tensor<k x group x T>) over
/// its first `valid` elements (all when null): the values the codes read
/// (the minimum and inverse step of quantStatValues), and the stored rows
/// (its minimum and step, as `format` stores them); `vectorize` marks the
/// ops for act-vectorize (a chunk's small static kernels).
static void buildQuantStats(OpBuilder &b, Location loc, Value rows, Value valid,
                            int64_t levels, StatFormat format, bool vectorize,
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
  // (bf16: a third result, 0 where the group's grid is covered, else +inf,
  // summed into `finite` below.)
  bool bf16 = format == StatFormat::BF16;
  SmallVector<Value> inverseInits;
  for (int i = 0; i < (bf16 ? 3 : 2); ++i)
    inverseInits.push_back(tensor::EmptyOp::create(b, loc, statType, dyn));
  SmallVector<AffineMap> inverseMaps(2 + inverseInits.size(), one);
  auto inverseOp = linalg::GenericOp::create(
      b, loc, ValueRange(inverseInits).getTypes(), ValueRange{mn, mx},
      inverseInits, inverseMaps, {utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto [lo, hi] = finiteRange(nb, nl, args[0], args[1]);
        QuantStatValues v = quantStatValues(nb, nl, lo, hi, levels, format);
        SmallVector<Value> results = {v.min, v.inverse};
        if (bf16)
          results.push_back(
              arith::SelectOp::create(nb, nl, v.covered, f32Const(nb, nl, 0.0f),
                                      f32Const(nb, nl, INFINITY)));
        linalg::YieldOp::create(nb, nl, results);
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
      if (bf16)
        sum = arith::AddFOp::create(b, loc, sum, get(inverseOp.getResult(2)));
    }
    *finite = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, sum,
                                    f32Const(b, loc, INFINITY));
  }

  Type element = statElementType(ctx, format);
  auto metaType = RankedTensorType::get({rowsType.getDimSize(0), 2}, element);
  Value metaInit =
      metaRows ? metaRows
               : tensor::EmptyOp::create(b, loc, metaType, dyn).getResult();
  auto metaOp = linalg::GenericOp::create(
      b, loc, metaInit.getType(), ValueRange{mn, mx}, ValueRange{metaInit},
      {row, row, AffineMap::getMultiDimIdentityMap(2, ctx)},
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto [lo, hi] = finiteRange(nb, nl, args[0], args[1]);
        QuantStatValues v = quantStatValues(nb, nl, lo, hi, levels, format);
        Value first =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                  linalg::IndexOp::create(nb, nl, 1),
                                  arith::ConstantIndexOp::create(nb, nl, 0));
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{storeStat(
                nb, nl, arith::SelectOp::create(nb, nl, first, v.min, v.step),
                element)});
      });
  if (vectorize)
    metaOp->setAttr(kVectorizeAttr, b.getUnitAttr());
  metaRows = metaOp.getResult(0);
}

// (Declared in EncodingModel.h; RandomKey::firstTile.)
SmallVector<Value> buildQuantEncode(QuantEncodingAttr encoding, OpBuilder &b,
                                    Location loc, Value input, Value seed,
                                    int64_t id, Value firstTile,
                                    const LoweringOptions &options) {
  int64_t levels = (int64_t(1) << encoding.getBits()) - 1;
  StatFormat format = encoding.getStats();
  GroupStats stats{
      encoding.getGroup(),
      2,
      [&](OpBuilder &nb, Location nl, Value rows, Value valid, bool vectorize,
          SmallVectorImpl<Value> &perGroup, Value &metaRows, Value *finite) {
        buildQuantStats(nb, nl, rows, valid, levels, format, vectorize,
                        perGroup, metaRows, finite);
      },
      {arith::AtomicRMWKind::minnumf, arith::AtomicRMWKind::maxnumf},
      /*perGroupValues=*/2,
      [&](OpBuilder &nb, Location nl, ValueRange minMax,
          SmallVectorImpl<Value> &perGroup, SmallVectorImpl<Value> &metaRow) {
        auto [lo, hi] = finiteRange(nb, nl, minMax[0], minMax[1]);
        QuantStatValues v = quantStatValues(nb, nl, lo, hi, levels, format);
        perGroup.assign({v.min, v.inverse});
        metaRow.assign({v.min, v.step});
      },
      statElementType(b.getContext(), format)};
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
    Attribute attr, OpBuilder &b, Location loc, Value input, Value seed, Value,
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
        // quantScale and quantStatValues).
        Value x = math::FmaOp::create(nb, nl, q, loadStat(nb, nl, row[1]),
                                      loadStat(nb, nl, row[0]));
        return fromF32(nb, nl, x, elementType);
      });
}
