//===- Philox.cpp - Philox4x32-10 in the IR -------------------------------===//
//
// The counter-based generator every stochastic encoding draws from
// (Salmon et al., SC'11): ten rounds on i32 lanes, the same bits on the CPU
// and the GPU and in the references (runtime/'s reference encoders,
// python/act/export/randomness.py).
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

SmallVector<Value, 4> mlir::act::buildPhilox4(OpBuilder &b, Location loc,
                                              Value index, Value seed,
                                              int64_t id) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c32 = [&](uint32_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, int64_t(v)).getResult();
  };
  auto lo = [&](Value v) { return arith::TruncIOp::create(b, loc, i32, v); };
  auto hi = [&](Value v) {
    Value shifted = arith::ShRUIOp::create(
        b, loc, v, arith::ConstantIntOp::create(b, loc, i64, 32));
    return arith::TruncIOp::create(b, loc, i32, shifted);
  };
  Value c0 = lo(index), c1 = hi(index);
  Value c2 = c32(uint32_t(id)), c3 = c32(uint32_t(uint64_t(id) >> 32));
  Value k0 = lo(seed), k1 = hi(seed);
  Value m0 = c32(0xD2511F53), m1 = c32(0xCD9E8D57);
  Value w0 = c32(0x9E3779B9), w1 = c32(0xBB67AE85);
  // The high and the low halves of each product as two operations (the
  // high one alone of an extended multiply, the low one a plain multiply):
  // vectorized, LLVM selects each lane vector's high half as a multiply-high
  // (two even/odd 32 x 32 -> 64 multiplies) and its low half as one 32-bit
  // multiply, instead of widening every lane to 64 bits and back.
  auto mulHi = [&](Value m, Value c) {
    return arith::MulUIExtendedOp::create(b, loc, m, c).getHigh();
  };
  auto mulLo = [&](Value m, Value c) {
    return arith::MulIOp::create(b, loc, m, c).getResult();
  };
  for (int round = 0; round < 10; ++round) {
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, mulHi(m1, c2), c1), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, mulHi(m0, c0), c3), k1);
    Value lo1 = mulLo(m1, c2), lo0 = mulLo(m0, c0);
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    if (round < 9) {
      k0 = arith::AddIOp::create(b, loc, k0, w0);
      k1 = arith::AddIOp::create(b, loc, k1, w1);
    }
  }
  return {c0, c1, c2, c3};
}
