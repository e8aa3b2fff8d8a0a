//===- FewBitTest.cpp - Few-bit's dynamic program and phi's compiler ------===//

#include "act/Analysis/FewBit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace mlir::act;

static double geluDerivative(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
         x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
}

/// L of a piecewise-constant table, integrated like the DP (same grid).
static double tableError(const PiecewiseConstant &t, double (*phi)(double),
                         const FewBitOptions &o) {
  double h = (o.hi - o.lo) / double(o.cells * o.samples), e = 0;
  for (int64_t s = 0; s < o.cells * o.samples; ++s) {
    double x = o.lo + (double(s) + 0.5) * h;
    double d = phi(x) - t(x);
    e += d * d * h;
  }
  return e;
}

// The DP is exact on its grid: against every placement of the boundaries on
// a small grid, it finds the minimum.
TEST(FewBitTest, DynamicProgramIsExactOnItsGrid) {
  FewBitOptions o;
  o.lo = -4;
  o.hi = 4;
  o.cells = 12;
  o.samples = 4;
  auto phi = [](double x) { return geluDerivative(x); };
  std::vector<PiecewiseConstant> tables = optimalPiecewiseConstant(phi, 2, o);
  ASSERT_EQ(tables.size(), 2u);
  ASSERT_EQ(tables[1].values.size(), 4u);
  ASSERT_EQ(tables[1].boundaries.size(), 3u);
  double best = INFINITY;
  double h = (o.hi - o.lo) / double(o.cells);
  for (int a = 1; a < o.cells; ++a)
    for (int b = a + 1; b < o.cells; ++b)
      for (int c = b + 1; c < o.cells; ++c) {
        PiecewiseConstant t;
        int cuts[] = {0, a, b, c, int(o.cells)};
        for (int p = 0; p < 4; ++p) {
          // The optimal constant of a piece is phi's mean over it.
          double sum = 0;
          int count = 0;
          for (int s = cuts[p] * o.samples; s < cuts[p + 1] * o.samples;
               ++s, ++count)
            sum += phi(o.lo + (s + 0.5) * h / o.samples);
          t.values.push_back(sum / count);
          if (p > 0)
            t.boundaries.push_back(o.lo + h * cuts[p]);
        }
        best = std::min(best, tableError(t, geluDerivative, o));
      }
  EXPECT_NEAR(tables[1].error, best, 1e-12);
  // The returned table attains the reported error.
  EXPECT_NEAR(tableError(tables[1], geluDerivative, o), tables[1].error, 1e-12);
  EXPECT_LE(tables[1].error, tables[0].error);
}

// Table 3 of the paper (uniform weight on [-10, 10]), GELU row.
TEST(FewBitTest, ReproducesTable3ForGelu) {
  std::vector<PiecewiseConstant> tables =
      optimalPiecewiseConstant(geluDerivative, 4);
  ASSERT_EQ(tables.size(), 4u);
  const double paper[] = {0.1410, 0.0406, 0.0119, 0.0031};
  for (int b = 0; b < 4; ++b) {
    EXPECT_NEAR(tables[b].error, paper[b], 0.00005) << "bits " << b + 1;
    EXPECT_EQ(tables[b].values.size(), size_t(2) << b);
    EXPECT_TRUE(std::is_sorted(tables[b].boundaries.begin(),
                               tables[b].boundaries.end()));
  }
  // GELU' goes from 0 to 1 (with an overshoot): the end pieces hold them.
  EXPECT_NEAR(tables[3].values.front(), 0.0, 0.02);
  EXPECT_NEAR(tables[3].values.back(), 1.0, 0.02);
}

TEST(FewBitTest, RefusesNonFiniteFunctionsAndBadOptions) {
  FewBitOptions o;
  o.lo = -1;
  o.hi = 1;
  o.cells = 64;
  EXPECT_TRUE(
      optimalPiecewiseConstant([](double x) { return std::log(x); }, 2, o)
          .empty());
  EXPECT_TRUE(optimalPiecewiseConstant([](double) { return 1.0; }, 9).empty());
  std::swap(o.lo, o.hi);
  EXPECT_TRUE(
      optimalPiecewiseConstant([](double) { return 1.0; }, 3, o).empty());
}

// The normal weight spends the pieces where N(0, sigma^2) has its mass:
// GELU's 3-bit boundaries move toward zero, and the table's error weighted
// that way is below the uniform table's.
TEST(FewBitTest, NormalWeightConcentratesPiecesNearZero) {
  FewBitOptions uniform, normal;
  normal.weight = FewBitOptions::Weight::Normal;
  normal.sigma = 1.0;
  std::vector<PiecewiseConstant> u =
      optimalPiecewiseConstant(geluDerivative, 3, uniform);
  std::vector<PiecewiseConstant> n =
      optimalPiecewiseConstant(geluDerivative, 3, normal);
  ASSERT_EQ(u.size(), 3u);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_LT(std::fabs(n[2].boundaries.front()),
            std::fabs(u[2].boundaries.front()));
  // The uniform table's error under the normal weight.
  double h = 20.0 / (2048 * 8), e = 0;
  for (int s = 0; s < 2048 * 8; ++s) {
    double x = -10 + (s + 0.5) * h;
    double d = geluDerivative(x) - u[2](x);
    e += d * d * std::exp(-x * x / 2) / std::sqrt(2 * M_PI) * h;
  }
  EXPECT_LT(n[2].error, e);
  EXPECT_GT(n[2].error, 0.0);
}

TEST(FewBitTest, Saturation) {
  EXPECT_TRUE(isSaturating(geluDerivative));
  EXPECT_TRUE(isSaturating([](double x) { return 1 / (1 + std::exp(-x)); }));
  EXPECT_FALSE(isSaturating([](double x) { return 2 * x; }));
  EXPECT_FALSE(isSaturating([](double x) { return std::sin(x); }));
}

static OwningOpRef<ModuleOp> parse(MLIRContext &ctx, StringRef text) {
  ctx.loadDialect<arith::ArithDialect, math::MathDialect, func::FuncDialect>();
  return parseSourceString<ModuleOp>(text, &ctx);
}

TEST(FewBitTest, CompilesAFunctionOfOneFloat) {
  MLIRContext ctx;
  // SiLU's derivative s * (1 + x * (1 - s)), s = sigmoid(x), as the
  // exporter writes it, with a select on a comparison.
  OwningOpRef<ModuleOp> m = parse(ctx, R"mlir(
    func.func @phi(%x: f32) -> f32 {
      %one = arith.constant 1.0 : f32
      %zero = arith.constant 0.0 : f32
      %n = arith.negf %x : f32
      %e = math.exp %n : f32
      %d = arith.addf %one, %e : f32
      %s = arith.divf %one, %d : f32
      %c = arith.subf %one, %s : f32
      %xc = arith.mulf %x, %c : f32
      %p = arith.addf %xc, %one : f32
      %r = arith.mulf %s, %p : f32
      %nan = arith.cmpf uno, %x, %x : f32
      %out = arith.select %nan, %zero, %r : f32
      return %out : f32
    })mlir");
  ASSERT_TRUE(m);
  auto func = cast<func::FuncOp>(m->getBody()->front());
  std::string error;
  FailureOr<ScalarFunction> fn = ScalarFunction::compile(func, error);
  ASSERT_TRUE(succeeded(fn)) << error;
  EXPECT_FALSE(fn->isIdentity());
  for (double x : {-7.5, -1.0, 0.0, 0.3, 2.0, 9.0}) {
    double s = 1 / (1 + std::exp(-x));
    EXPECT_NEAR((*fn)(x), s * (1 + x * (1 - s)), 1e-12) << x;
  }
  EXPECT_EQ((*fn)(NAN), 0.0);
}

TEST(FewBitTest, NamesWhatItCannotCompile) {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> m = parse(ctx, R"mlir(
    func.func @two(%x: f32, %y: f32) -> f32 {
      return %x : f32
    }
    func.func @bits(%x: f32) -> f32 {
      %i = arith.bitcast %x : f32 to i32
      %f = arith.bitcast %i : i32 to f32
      return %f : f32
    }
    func.func @id(%x: f32) -> f32 {
      return %x : f32
    })mlir");
  ASSERT_TRUE(m);
  auto funcs = llvm::to_vector(m->getBody()->getOps<func::FuncOp>());
  std::string error;
  EXPECT_TRUE(failed(ScalarFunction::compile(funcs[0], error)));
  EXPECT_NE(error.find("must take one float and return one float"),
            std::string::npos);
  error.clear();
  EXPECT_TRUE(failed(ScalarFunction::compile(funcs[1], error)));
  EXPECT_NE(error.find("'arith.bitcast' is not supported"), std::string::npos)
      << error;
  FailureOr<ScalarFunction> id = ScalarFunction::compile(funcs[2], error);
  ASSERT_TRUE(succeeded(id));
  EXPECT_TRUE(id->isIdentity());
  EXPECT_EQ((*id)(3.5), 3.5);
}
