//===- NarrowFloats.cpp - narrow float formats in the IR ------------------===//
//
// Encode and decode of the narrow floats #act.float stores in formats of
// its own (fp10, e4m3, e5m2; f16 and bf16 are arith.truncf) as integer
// arithmetic on the bits: round to nearest even, gradual underflow,
// magnitudes clamped to the largest finite value, the same on every target.
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
