//===- MemoryEstimate.h - static peak-memory estimate -----------*- C++ -*-===//
//
// Gist's "memory footprint" of a training step, from a static liveness
// analysis over program order. The model is documented in
// docs/MemoryReport.md.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ANALYSIS_MEMORYESTIMATE_H
#define ACT_ANALYSIS_MEMORYESTIMATE_H

#include "act/Analysis/TrainingGraph.h"

namespace mlir::act {

struct PeakMemoryEstimate {
  /// Largest sum of live buffer bytes at any op.
  int64_t peakBytes = 0;
  /// Buffers whose size is not static (counted as 0 bytes).
  int64_t unknownBuffers = 0;
  /// The first op at which the peak is reached (null for an empty step).
  Operation *peakOp = nullptr;
  /// What is live there: one value per buffer (its first definition) and
  /// the buffer's bytes, largest first.
  llvm::SmallVector<std::pair<Value, int64_t>> liveAtPeak;
  /// Live bytes after each op of the step, in program order (split form:
  /// the forward function's ops, then the backward's): the memory timeline.
  llvm::SmallVector<int64_t> timeline;
};

/// Estimates the peak memory of one step of `graph`. With `withEncodings`
/// false, act.encode and act.decode are treated as identities: the estimate
/// is that of the same graph without encodings.
PeakMemoryEstimate estimatePeakMemory(const TrainingGraph &graph,
                                      bool withEncodings);

} // namespace mlir::act

#endif // ACT_ANALYSIS_MEMORYESTIMATE_H
