//===- BitAllocation.h - bits per saved tensor under a budget ---*- C++ -*-===//
//
// GACT's problem (papers/gact.txt, Eq. 4 with Thm. 2): choose b_l from a set
// of bit widths for every saved tensor l to
//
//   minimize sum_l c_l S(b_l)   subject to   sum_l b_l D_l <= B,
//
// S(b) = (2^b - 1)^-2 (0 for 32 bits: the tensor is not compressed), c_l the
// measured sensitivity, D_l the element count. A multiple-choice knapsack:
// `allocateBitsExact` solves it by branch and bound with the LP-relaxation
// bound (each tensor's choices reduced to their lower convex hull, filled by
// decreasing efficiency), which proves optimality when the search
// completes; `allocateBitsGreedy` is ActNN/GACT's greedy (start everything at
// the widest choice, repeatedly narrow the tensor whose variance grows least
// per bit saved) for comparison. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ANALYSIS_BITALLOCATION_H
#define ACT_ANALYSIS_BITALLOCATION_H

#include <cstdint>
#include <vector>

namespace mlir::act {

/// Which solver act-allocate-bits uses.
enum class BitSolver { Exact, Greedy };
/// "exact" or "greedy".
inline const char *getBitSolverName(BitSolver solver) {
  return solver == BitSolver::Exact ? "exact" : "greedy";
}

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
