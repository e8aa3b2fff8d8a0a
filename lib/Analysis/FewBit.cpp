//===- FewBit.cpp - optimal piecewise-constant derivatives ----------------===//

#include "act/Analysis/FewBit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::act;

//===----------------------------------------------------------------------===//
// ScalarFunction
//===----------------------------------------------------------------------===//

namespace {
enum class Kind {
  Const,
  // Binary.
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Maximum,
  Minimum,
  MaxNum,
  MinNum,
  Pow,
  Atan2,
  CopySign,
  And,
  Or,
  Xor,
  CmpF,
  // Ternary.
  Select,
  Fma,
  // Unary.
  Neg,
  Exp,
  Exp2,
  Expm1,
  Log,
  Log1p,
  Log2,
  Log10,
  Erf,
  Erfc,
  Tanh,
  Sinh,
  Cosh,
  Sin,
  Cos,
  Tan,
  Atan,
  Asin,
  Acos,
  Sqrt,
  Rsqrt,
  Cbrt,
  Abs,
  Floor,
  Ceil,
  Round,
  RoundEven,
  Trunc,
  ToF32,
  Copy
};
} // namespace

static ScalarFunction::Inst makeInst(Kind kind) {
  ScalarFunction::Inst inst;
  inst.kind = unsigned(kind);
  return inst;
}

static bool compare(arith::CmpFPredicate p, double a, double b) {
  bool uno = std::isnan(a) || std::isnan(b);
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse:
    return false;
  case P::OEQ:
    return !uno && a == b;
  case P::OGT:
    return !uno && a > b;
  case P::OGE:
    return !uno && a >= b;
  case P::OLT:
    return !uno && a < b;
  case P::OLE:
    return !uno && a <= b;
  case P::ONE:
    return !uno && a != b;
  case P::ORD:
    return !uno;
  case P::UEQ:
    return uno || a == b;
  case P::UGT:
    return uno || a > b;
  case P::UGE:
    return uno || a >= b;
  case P::ULT:
    return uno || a < b;
  case P::ULE:
    return uno || a <= b;
  case P::UNE:
    return uno || a != b;
  case P::UNO:
    return uno;
  case P::AlwaysTrue:
    return true;
  }
  return false;
}

/// The kind of a supported op with one, two or three operands.
static std::optional<Kind> getKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Kind>>(op)
      .Case([](arith::AddFOp) { return Kind::Add; })
      .Case([](arith::SubFOp) { return Kind::Sub; })
      .Case([](arith::MulFOp) { return Kind::Mul; })
      .Case([](arith::DivFOp) { return Kind::Div; })
      .Case([](arith::RemFOp) { return Kind::Rem; })
      .Case([](arith::MaximumFOp) { return Kind::Maximum; })
      .Case([](arith::MinimumFOp) { return Kind::Minimum; })
      .Case([](arith::MaxNumFOp) { return Kind::MaxNum; })
      .Case([](arith::MinNumFOp) { return Kind::MinNum; })
      .Case([](math::PowFOp) { return Kind::Pow; })
      .Case([](math::Atan2Op) { return Kind::Atan2; })
      .Case([](math::CopySignOp) { return Kind::CopySign; })
      .Case([](arith::AndIOp) { return Kind::And; })
      .Case([](arith::OrIOp) { return Kind::Or; })
      .Case([](arith::XOrIOp) { return Kind::Xor; })
      .Case([](arith::CmpFOp) { return Kind::CmpF; })
      .Case([](arith::SelectOp) { return Kind::Select; })
      .Case([](math::FmaOp) { return Kind::Fma; })
      .Case([](arith::NegFOp) { return Kind::Neg; })
      .Case([](math::ExpOp) { return Kind::Exp; })
      .Case([](math::Exp2Op) { return Kind::Exp2; })
      .Case([](math::ExpM1Op) { return Kind::Expm1; })
      .Case([](math::LogOp) { return Kind::Log; })
      .Case([](math::Log1pOp) { return Kind::Log1p; })
      .Case([](math::Log2Op) { return Kind::Log2; })
      .Case([](math::Log10Op) { return Kind::Log10; })
      .Case([](math::ErfOp) { return Kind::Erf; })
      .Case([](math::ErfcOp) { return Kind::Erfc; })
      .Case([](math::TanhOp) { return Kind::Tanh; })
      .Case([](math::SinhOp) { return Kind::Sinh; })
      .Case([](math::CoshOp) { return Kind::Cosh; })
      .Case([](math::SinOp) { return Kind::Sin; })
      .Case([](math::CosOp) { return Kind::Cos; })
      .Case([](math::TanOp) { return Kind::Tan; })
      .Case([](math::AtanOp) { return Kind::Atan; })
      .Case([](math::AsinOp) { return Kind::Asin; })
      .Case([](math::AcosOp) { return Kind::Acos; })
      .Case([](math::SqrtOp) { return Kind::Sqrt; })
      .Case([](math::RsqrtOp) { return Kind::Rsqrt; })
      .Case([](math::CbrtOp) { return Kind::Cbrt; })
      .Case([](math::AbsFOp) { return Kind::Abs; })
      .Case([](math::FloorOp) { return Kind::Floor; })
      .Case([](math::CeilOp) { return Kind::Ceil; })
      .Case([](math::RoundOp) { return Kind::Round; })
      .Case([](math::RoundEvenOp) { return Kind::RoundEven; })
      .Case([](math::TruncOp) { return Kind::Trunc; })
      // Narrowing to f32 rounds; widening, bool-to-float and the
      // integer casts of booleans keep the value.
      .Case([](arith::TruncFOp op) -> std::optional<Kind> {
        if (op.getType().isF32())
          return Kind::ToF32;
        return std::nullopt;
      })
      .Case<arith::ExtFOp, arith::UIToFPOp, arith::SIToFPOp, arith::ExtUIOp>(
          [](Operation *op) -> std::optional<Kind> {
            Type in = op->getOperand(0).getType();
            if (isa<FloatType>(in) || in.isInteger(1))
              return Kind::Copy;
            return std::nullopt;
          })
      .Default([](Operation *) { return std::nullopt; });
}

FailureOr<ScalarFunction> ScalarFunction::compile(Value argument, Value result,
                                                  Resolver resolve,
                                                  std::string &error) {
  return compile(ArrayRef<Value>{argument}, result, resolve, error);
}

FailureOr<ScalarFunction> ScalarFunction::compile(ArrayRef<Value> arguments,
                                                  Value result,
                                                  Resolver resolve,
                                                  std::string &error) {
  ScalarFunction fn;
  llvm::DenseMap<Value, unsigned> slots;
  // The first slots are the arguments; they need no instruction.
  for (Value argument : arguments) {
    slots.try_emplace(argument, fn.tape.size());
    fn.tape.push_back(makeInst(Kind::Copy));
  }
  fn.numArguments = arguments.size();
  std::function<FailureOr<unsigned>(Value)> slotOf =
      [&](Value v) -> FailureOr<unsigned> {
    if (auto it = slots.find(v); it != slots.end())
      return it->second;
    if (resolve) {
      FailureOr<Value> redirect = resolve(v);
      if (failed(redirect)) {
        llvm::raw_string_ostream os(error);
        os << "value " << v << " is not a function of the argument alone";
        return failure();
      }
      if (*redirect) {
        FailureOr<unsigned> s = slotOf(*redirect);
        if (succeeded(s))
          slots[v] = *s;
        return s;
      }
    }
    Attribute attr;
    if (matchPattern(v, m_Constant(&attr))) {
      Inst inst = makeInst(Kind::Const);
      if (auto f = dyn_cast<FloatAttr>(attr))
        inst.constant = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(attr);
               i && i.getType().isInteger(1))
        inst.constant = i.getValue().isOne() ? 1.0 : 0.0;
      else {
        llvm::raw_string_ostream os(error);
        os << "constant " << attr << " is not a float or a boolean";
        return failure();
      }
      fn.tape.push_back(inst);
      return slots[v] = fn.tape.size() - 1;
    }
    Operation *op = v.getDefiningOp();
    std::optional<Kind> kind = op ? getKind(op) : std::nullopt;
    if (!kind) {
      llvm::raw_string_ostream os(error);
      if (op)
        os << "op '" << op->getName() << "' is not supported";
      else
        os << "block argument " << v << " is not the function's argument";
      return failure();
    }
    Inst inst = makeInst(*kind);
    unsigned *operands[] = {&inst.a, &inst.b, &inst.c};
    if (op->getNumOperands() > 3)
      return failure();
    for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
      FailureOr<unsigned> s = slotOf(operand);
      if (failed(s))
        return failure();
      *operands[k] = *s;
    }
    if (auto cmp = dyn_cast<arith::CmpFOp>(op))
      inst.predicate = unsigned(cmp.getPredicate());
    fn.tape.push_back(inst);
    return slots[v] = fn.tape.size() - 1;
  };
  FailureOr<unsigned> r = slotOf(result);
  if (failed(r))
    return failure();
  fn.result = *r;
  return fn;
}

FailureOr<ScalarFunction> ScalarFunction::compile(func::FuncOp func,
                                                  std::string &error) {
  FunctionType type = func.getFunctionType();
  if (func.isExternal() || type.getNumInputs() != 1 ||
      type.getNumResults() != 1 || !isa<FloatType>(type.getInput(0)) ||
      !isa<FloatType>(type.getResult(0))) {
    error = "'" + func.getSymName().str() +
            "' must take one float and return one float";
    return failure();
  }
  Block &body = func.getBody().front();
  if (!llvm::hasSingleElement(func.getBody())) {
    error = "'" + func.getSymName().str() + "' must have one block";
    return failure();
  }
  return compile(body.getArgument(0), body.getTerminator()->getOperand(0),
                 nullptr, error);
}

ScalarFunction ScalarFunction::bindLast(double value) const {
  ScalarFunction fn = *this;
  assert(numArguments > 1 && "nothing to bind");
  fn.numArguments = numArguments - 1;
  fn.tape[fn.numArguments] = makeInst(Kind::Const);
  fn.tape[fn.numArguments].constant = value;
  return fn;
}

double ScalarFunction::evaluate(double x, ArrayRef<double> more) const {
  assert(more.size() + 1 == numArguments && "wrong number of arguments");
  // Small tapes: a stack buffer would do, but the DP calls this ~10^5 times
  // per function at most, so one vector per call is fine.
  std::vector<double> v(tape.size());
  v[0] = x;
  for (auto [k, a] : llvm::enumerate(more))
    v[k + 1] = a;
  for (size_t k = numArguments; k < tape.size(); ++k) {
    const Inst &i = tape[k];
    double a = v[i.a], b = v[i.b], c = v[i.c];
    double r;
    switch (Kind(i.kind)) {
    case Kind::Const:
      r = i.constant;
      break;
    case Kind::Add:
      r = a + b;
      break;
    case Kind::Sub:
      r = a - b;
      break;
    case Kind::Mul:
      r = a * b;
      break;
    case Kind::Div:
      r = a / b;
      break;
    case Kind::Rem:
      r = std::fmod(a, b);
      break;
    case Kind::Maximum:
      r = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
      break;
    case Kind::Minimum:
      r = std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
      break;
    case Kind::MaxNum:
      r = std::fmax(a, b);
      break;
    case Kind::MinNum:
      r = std::fmin(a, b);
      break;
    case Kind::Pow:
      r = std::pow(a, b);
      break;
    case Kind::Atan2:
      r = std::atan2(a, b);
      break;
    case Kind::CopySign:
      r = std::copysign(a, b);
      break;
    case Kind::And:
      r = (a != 0) && (b != 0);
      break;
    case Kind::Or:
      r = (a != 0) || (b != 0);
      break;
    case Kind::Xor:
      r = (a != 0) != (b != 0);
      break;
    case Kind::CmpF:
      r = compare(arith::CmpFPredicate(i.predicate), a, b);
      break;
    case Kind::Select:
      r = a != 0 ? b : c;
      break;
    case Kind::Fma:
      r = std::fma(a, b, c);
      break;
    case Kind::Neg:
      r = -a;
      break;
    case Kind::Exp:
      r = std::exp(a);
      break;
    case Kind::Exp2:
      r = std::exp2(a);
      break;
    case Kind::Expm1:
      r = std::expm1(a);
      break;
    case Kind::Log:
      r = std::log(a);
      break;
    case Kind::Log1p:
      r = std::log1p(a);
      break;
    case Kind::Log2:
      r = std::log2(a);
      break;
    case Kind::Log10:
      r = std::log10(a);
      break;
    case Kind::Erf:
      r = std::erf(a);
      break;
    case Kind::Erfc:
      r = std::erfc(a);
      break;
    case Kind::Tanh:
      r = std::tanh(a);
      break;
    case Kind::Sinh:
      r = std::sinh(a);
      break;
    case Kind::Cosh:
      r = std::cosh(a);
      break;
    case Kind::Sin:
      r = std::sin(a);
      break;
    case Kind::Cos:
      r = std::cos(a);
      break;
    case Kind::Tan:
      r = std::tan(a);
      break;
    case Kind::Atan:
      r = std::atan(a);
      break;
    case Kind::Asin:
      r = std::asin(a);
      break;
    case Kind::Acos:
      r = std::acos(a);
      break;
    case Kind::Sqrt:
      r = std::sqrt(a);
      break;
    case Kind::Rsqrt:
      r = 1.0 / std::sqrt(a);
      break;
    case Kind::Cbrt:
      r = std::cbrt(a);
      break;
    case Kind::Abs:
      r = std::fabs(a);
      break;
    case Kind::Floor:
      r = std::floor(a);
      break;
    case Kind::Ceil:
      r = std::ceil(a);
      break;
    case Kind::Round:
      r = std::round(a);
      break;
    case Kind::RoundEven:
      r = std::nearbyint(a);
      break;
    case Kind::Trunc:
      r = std::trunc(a);
      break;
    case Kind::ToF32:
      r = static_cast<float>(a);
      break;
    case Kind::Copy:
      r = a;
      break;
    }
    v[k] = r;
  }
  return v[result];
}

//===----------------------------------------------------------------------===//
// The dynamic program
//===----------------------------------------------------------------------===//

double PiecewiseConstant::operator()(double x) const {
  size_t piece = 0;
  while (piece < boundaries.size() && x >= boundaries[piece])
    ++piece;
  return values[piece];
}

std::vector<PiecewiseConstant>
mlir::act::optimalPiecewiseConstant(llvm::function_ref<double(double)> phi,
                                    unsigned maxBits,
                                    const FewBitOptions &options) {
  if (maxBits < 1 || maxBits > 8 || options.cells < 2 || options.samples < 1 ||
      !(options.lo < options.hi))
    return {};
  const int64_t n = options.cells, m = options.samples;
  const int64_t K = int64_t(1) << maxBits;
  if (K > n)
    return {};
  const double h = (options.hi - options.lo) / double(n);
  auto grid = [&](int64_t i) { return options.lo + h * double(i); };
  // Eq. (10): prefix integrals of phi^2 w, w and phi w at the grid points,
  // each cell by the midpoint rule on m sub-cells.
  std::vector<double> F2(n + 1, 0.0), W(n + 1, 0.0), FW(n + 1, 0.0);
  const bool normal = options.weight == FewBitOptions::Weight::Normal;
  if (normal && !(options.sigma > 0))
    return {};
  auto weight = [&](double x) {
    if (!normal)
      return 1.0;
    double z = x / options.sigma;
    return std::exp(-0.5 * z * z) / (options.sigma * std::sqrt(2 * M_PI));
  };
  for (int64_t i = 0; i < n; ++i) {
    double f2 = 0, fw = 0, w = 0, sub = h / double(m);
    for (int64_t s = 0; s < m; ++s) {
      double x = grid(i) + (double(s) + 0.5) * sub;
      double f = phi(x);
      if (!std::isfinite(f))
        return {};
      double ws = weight(x) * sub;
      f2 += f * f * ws;
      fw += f * ws;
      w += ws;
    }
    F2[i + 1] = F2[i] + f2;
    W[i + 1] = W[i] + w;
    FW[i + 1] = FW[i] + fw;
  }
  // Eq. (9): the error of one piece over grid cells [j, i).
  auto T = [&](int64_t j, int64_t i) {
    double dw = W[i] - W[j], df = FW[i] - FW[j];
    if (!(dw > 0))
      return std::max(0.0, F2[i] - F2[j]);
    return std::max(0.0, F2[i] - F2[j] - df * df / dw);
  };
  // Eq. (7): DP[k][i], the best k pieces over [t_0, t_i), and the start of
  // its last piece.
  std::vector<std::vector<double>> dp(K + 1,
                                      std::vector<double>(n + 1, INFINITY));
  std::vector<std::vector<int32_t>> from(K + 1, std::vector<int32_t>(n + 1));
  for (int64_t i = 1; i <= n; ++i)
    dp[1][i] = T(0, i);
  for (int64_t k = 2; k <= K; ++k) {
    for (int64_t i = k; i <= n; ++i) {
      double best = INFINITY;
      int32_t arg = 0;
      for (int64_t j = k - 1; j < i; ++j) {
        double c = dp[k - 1][j] + T(j, i);
        if (c < best) {
          best = c;
          arg = int32_t(j);
        }
      }
      dp[k][i] = best;
      from[k][i] = arg;
    }
  }
  std::vector<PiecewiseConstant> tables;
  for (unsigned b = 1; b <= maxBits; ++b) {
    int64_t k = int64_t(1) << b;
    PiecewiseConstant table;
    table.error = dp[k][n];
    std::vector<int64_t> starts(k);
    int64_t end = n;
    for (int64_t piece = k; piece >= 1; --piece) {
      int64_t start = piece == 1 ? 0 : from[piece][end];
      starts[piece - 1] = start;
      end = start;
    }
    for (int64_t piece = 0; piece < k; ++piece) {
      int64_t j = starts[piece], i = piece + 1 < k ? starts[piece + 1] : n;
      // A piece of zero weight (far in a normal's tail) takes phi's value
      // at its middle.
      double dw = W[i] - W[j];
      table.values.push_back(dw > 0 ? (FW[i] - FW[j]) / dw
                                    : phi(0.5 * (grid(j) + grid(i))));
      if (piece > 0)
        table.boundaries.push_back(grid(j));
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

bool mlir::act::isSaturating(llvm::function_ref<double(double)> phi,
                             const FewBitOptions &options, double tolerance) {
  const int64_t n = 256;
  double lo = INFINITY, hi = -INFINITY;
  std::vector<double> values(n + 1);
  for (int64_t i = 0; i <= n; ++i) {
    double x = options.lo + (options.hi - options.lo) * double(i) / double(n);
    double f = phi(x);
    if (!std::isfinite(f))
      return false;
    values[i] = f;
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  double allowed = tolerance * std::max(hi - lo, 1e-30);
  auto spread = [&](int64_t from, int64_t to) {
    auto [mn, mx] =
        std::minmax_element(values.begin() + from, values.begin() + to + 1);
    return *mx - *mn;
  };
  return spread(0, n / 8) <= allowed && spread(n - n / 8, n) <= allowed;
}
