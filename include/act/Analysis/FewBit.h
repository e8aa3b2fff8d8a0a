//===- FewBit.h - optimal piecewise-constant derivatives --------*- C++ -*-===//
//
// Few-bit backward (papers/fewbit-backward.txt, Sec. 3 and App. G): a saved
// value x that the backward reads only through an elementwise function
// phi(x) (the derivative of an activation) is stored as the index of the
// interval x falls in, and the backward reads the interval's constant. The
// intervals and constants minimize the weighted L2 error
//
//   L(s, y) = sum_i  int_{s_i}^{s_{i+1}} (phi(x) - y_i)^2 w(x) dx,
//
// found by the paper's dynamic program (Eq. 7, 9, 10) on a grid of the range
// [A, B] with a uniform weight w = 1 on it (Table 3's measure).
//
// `ScalarFunction` is phi: compiled from the arith/math ops that compute it
// (a func.func of one float, or a slice of a backward graph that crosses
// linalg.generic bodies) into a tape evaluated in double, so that the DP's
// tens of thousands of samples neither create attributes nor need a JIT.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ANALYSIS_FEWBIT_H
#define ACT_ANALYSIS_FEWBIT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <string>
#include <vector>

namespace mlir::act {

/// A function of one float built from arith and math ops, evaluated in
/// double (booleans as 0 and 1).
class ScalarFunction {
public:
  /// Where a value comes from while compiling: the argument, or another
  /// value to compile instead (the tensor operand behind a linalg.generic
  /// block argument, the scalar a generic yields for its result); null to
  /// compile the value's defining op.
  using Resolver = llvm::function_ref<FailureOr<Value>(Value)>;

  /// Compiles `result` as a function of `argument`. Values other than the
  /// argument must be constants or results of supported arith/math ops,
  /// unless `resolve` redirects them. On failure, `error` names the value or
  /// op that cannot be compiled.
  static FailureOr<ScalarFunction>
  compile(Value argument, Value result, Resolver resolve, std::string &error);
  /// The same with several arguments, in order.
  static FailureOr<ScalarFunction> compile(ArrayRef<Value> arguments,
                                           Value result, Resolver resolve,
                                           std::string &error);
  /// The function of a func.func taking one float and returning one float.
  static FailureOr<ScalarFunction> compile(func::FuncOp func,
                                           std::string &error);

  double operator()(double x) const { return evaluate(x); }
  /// The value at the arguments (`x`, then `more`).
  double evaluate(double x, ArrayRef<double> more = {}) const;
  /// The function of its first argument with the last one fixed at
  /// `value` (a function of two arguments becomes one of one).
  ScalarFunction bindLast(double value) const;
  /// Whether the function is its argument (no op applied).
  bool isIdentity() const { return result == 0; }
  /// Ops on the tape (for tests and reports).
  size_t size() const { return tape.size(); }

  /// One op of the tape: its kind (FewBit.cpp), its operands' slots, a
  /// constant or a comparison predicate.
  struct Inst {
    unsigned kind = 0;
    unsigned a = 0, b = 0, c = 0;
    double constant = 0.0;
    unsigned predicate = 0;
  };

private:
  std::vector<Inst> tape;
  /// Slot of the result; slots 0.. are the arguments.
  unsigned result = 0;
  unsigned numArguments = 1;
};

/// The weight and grid of the dynamic program.
struct FewBitOptions {
  /// The range [lo, hi] of Table 3 (weight 0 outside).
  double lo = -10.0, hi = 10.0;
  /// w on the range: 1 (Table 3's measure), or the density of N(0, sigma^2)
  /// (the paper's other suggestion: where pre-activations lie), which
  /// spends the pieces near zero.
  enum class Weight { Uniform, Normal } weight = Weight::Uniform;
  double sigma = 1.0;
  /// Grid cells t_0 < ... < t_n; boundaries are grid points.
  int64_t cells = 2048;
  /// Midpoint samples per cell for the integrals (Eq. 10).
  int64_t samples = 8;
};

/// The optimal approximation with `values.size()` pieces: piece i holds
/// [boundaries[i-1], boundaries[i]) (the first and last extend to -inf and
/// +inf), its constant values[i]; `error` is L (Eq. 3) at the optimum.
struct PiecewiseConstant {
  std::vector<double> boundaries;
  std::vector<double> values;
  double error = 0.0;

  /// The constant of the piece holding x (NaN: piece 0).
  double operator()(double x) const;
};

/// The optimal approximations of `phi` with 2^b pieces for b = 1..maxBits
/// (element b - 1), from one dynamic program over 2^maxBits pieces:
/// O(cells^2 * 2^maxBits) time, O(cells * 2^maxBits) space. Fails (empty)
/// when phi is not finite on the grid or maxBits is not in 1..8.
std::vector<PiecewiseConstant>
optimalPiecewiseConstant(llvm::function_ref<double(double)> phi,
                         unsigned maxBits, const FewBitOptions &options = {});

/// Whether phi flattens out at both ends of the range (over the outer
/// eighth on each side it moves by at most `tolerance` times its spread
/// over the range): what makes a few-bit table valid for inputs beyond the
/// range, as for the derivatives of GELU, SiLU, tanh, sigmoid, softplus,
/// ELU/SELU. A linear phi (the backward of a product) is not.
bool isSaturating(llvm::function_ref<double(double)> phi,
                  const FewBitOptions &options = {}, double tolerance = 0.01);

} // namespace mlir::act

#endif // ACT_ANALYSIS_FEWBIT_H
