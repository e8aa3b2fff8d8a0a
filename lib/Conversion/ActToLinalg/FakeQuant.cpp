//===- FakeQuant.cpp - quantized compute (act-quantize-compute) -----------===//
//
// The fake quantization FracTrain's act-quantize-compute lowers to.
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
