//===- BitAllocation.h - bits per saved tensor under a budget ---*- C++ -*-===//
//
// GACT's problem (papers/gact.txt, Eq. 4 with Thm. 2): choose for every
// saved tensor l one of its encodings e (a bit width of #act.quant, of
// #act.division's residual, or f32) to
//
//   minimize sum_l c_l^e S(b_e)   subject to   sum_l W_l(e) <= B,
//
// S(b) = (2^b - 1)^-2 (0 when the tensor is not compressed), c_l^e the
// sensitivity measured with that encoding's family, W_l(e) its element bits
// (b D_l for #act.quant). A multiple-choice knapsack over each tensor's own
// options (`solveKnapsackExact/Greedy`); the bit-width form
// (`allocateBits*`: one family, the same widths for every tensor) is the
// special case GACT states. The exact solver is branch and bound with the
// LP-relaxation bound (each tensor's options reduced to their lower convex
// hull, filled by decreasing efficiency), which proves optimality when the
// search completes; the greedy is ActNN/GACT's (start every tensor at its
// widest option, repeatedly narrow the tensor whose cost grows least per bit
// saved, along its hull) for comparison. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ANALYSIS_BITALLOCATION_H
#define ACT_ANALYSIS_BITALLOCATION_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlir::act {

/// Which solver act-allocate-bits uses.
enum class BitSolver { Exact, Greedy };
/// "exact" or "greedy".
inline const char *getBitSolverName(BitSolver solver) {
  return solver == BitSolver::Exact ? "exact" : "greedy";
}

/// One way to store a tensor: `weight` bits of the budget, `cost` of
/// predicted variance.
struct KnapsackOption {
  int64_t weight = 0;
  double cost = 0.0;
};

struct KnapsackSolution {
  /// The chosen option per item (empty when infeasible).
  std::vector<size_t> choice;
  /// sum of the chosen costs and weights.
  double objective = 0.0;
  int64_t usedWeight = 0;
  bool feasible = false;
  /// The exact solver's search completed (the greedy never claims this).
  bool provenOptimal = false;
  uint64_t nodes = 0;
};

/// `items[l]`: tensor l's options (any order, at least one each). Infeasible
/// when even every tensor's lightest option exceeds `budget`.
KnapsackSolution
solveKnapsackExact(const std::vector<std::vector<KnapsackOption>> &items,
                   int64_t budget, uint64_t nodeLimit = 20000000);
KnapsackSolution
solveKnapsackGreedy(const std::vector<std::vector<KnapsackOption>> &items,
                    int64_t budget);

struct BitAllocationItem {
  double sensitivity = 0.0;
  int64_t elements = 0;
};

struct BitAllocation {
  /// Bits per item (empty when infeasible).
  std::vector<unsigned> bits;
  /// sum_l c_l S(b_l).
  double objective = 0.0;
  /// sum_l b_l D_l.
  int64_t usedBits = 0;
  bool feasible = false;
  /// The exact solver's search completed (the greedy never claims this).
  bool provenOptimal = false;
  uint64_t nodes = 0;
};

/// `choices`: the allowed bit widths (each in 1..32, any order). `budget`:
/// B in bits. Infeasible when even the narrowest choice exceeds B.
BitAllocation allocateBitsExact(const std::vector<BitAllocationItem> &items,
                                std::vector<unsigned> choices, int64_t budget,
                                uint64_t nodeLimit = 20000000);
BitAllocation allocateBitsGreedy(const std::vector<BitAllocationItem> &items,
                                 std::vector<unsigned> choices, int64_t budget);
/// sum_l c_l S(b_l) of given bits.
double allocationObjective(const std::vector<BitAllocationItem> &items,
                           const std::vector<unsigned> &bits);

} // namespace mlir::act

#endif // ACT_ANALYSIS_BITALLOCATION_H
