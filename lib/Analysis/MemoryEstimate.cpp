//===- MemoryEstimate.cpp - static peak-memory estimate -------------------===//
//
// The step is one sequence of top-level ops (split form: the forward
// function's, then the backward function's). Every tensor value is a buffer
// that lives from the op that defines it to the last op that reads it;
// values that bufferization would place in one buffer share it:
//  - a destination-style op's result reuses its init operand when that op is
//    the init's last reader (in-place update);
//  - reshapes, casts and slices alias their source;
//  - a split pair's saved result is the backward function's argument.
// Function arguments of the step and its results live throughout. The peak
// is the largest sum of live buffers over all ops; O(values) time.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/MemoryEstimate.h"

#include "act/Dialect/Act/IR/Act.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/IntEqClasses.h"

using namespace mlir;
using namespace mlir::act;

namespace {

class LivenessModel {
public:
  LivenessModel(const TrainingGraph &graph, bool withEncodings)
      : graph(graph), withEncodings(withEncodings) {}

  PeakMemoryEstimate run();

private:
  bool isBuffer(Value v) const {
    return isa<RankedTensorType, EncodedType>(v.getType());
  }
  void define(Value v, unsigned pos) {
    if (!isBuffer(v))
      return;
    unsigned id = values.size();
    values.push_back(v);
    index[v] = id;
    def.push_back(pos);
    end.push_back(pos);
  }
  void extend(Value v, unsigned pos) {
    auto it = index.find(v);
    if (it != index.end())
      end[it->second] = std::max(end[it->second], pos);
  }
  void unite(Value a, Value b) {
    auto ia = index.find(a), ib = index.find(b);
    if (ia != index.end() && ib != index.end())
      classes.join(ia->second, ib->second);
  }
  std::optional<int64_t> sizeOf(Value v) const;
  /// Numbers `block`'s ops from `start` on and defines their results.
  unsigned scan(Block &block, unsigned start);
  /// Records the last reads of `block`'s values.
  void recordUses(Block &block, unsigned start);
  void addAliases(Block &block, unsigned start);

  const TrainingGraph &graph;
  bool withEncodings;
  SmallVector<Value> values;
  DenseMap<Value, unsigned> index;
  SmallVector<unsigned> def, end;
  llvm::IntEqClasses classes;
  unsigned endOfStep = 0;
  /// The op at each position (null for argument positions).
  SmallVector<Operation *> ops;
};

} // namespace

std::optional<int64_t> LivenessModel::sizeOf(Value v) const {
  if (auto encoded = dyn_cast<EncodedType>(v.getType())) {
    if (!withEncodings)
      return getTensorBytes(encoded.getTensorType());
    std::optional<StorageLayout> layout =
        encoded.getEncoding().getStorageLayout(encoded.getTensorType());
    if (!layout)
      return std::nullopt;
    return layout->getTotalBytes();
  }
  return getTensorBytes(cast<RankedTensorType>(v.getType()));
}

unsigned LivenessModel::scan(Block &block, unsigned start) {
  unsigned p = start;
  for (Operation &op : block) {
    ++p;
    if (ops.size() <= p)
      ops.resize(p + 1, nullptr);
    ops[p] = &op;
    for (Value result : op.getResults())
      define(result, p);
  }
  return p;
}

void LivenessModel::recordUses(Block &block, unsigned start) {
  // Walking ops in order and extending what they read touches each use once
  // without looking ops up in a map.
  unsigned p = start;
  for (Operation &op : block) {
    ++p;
    forEachValueRead(&op, &block, [&](Value v) { extend(v, p); });
  }
}

void LivenessModel::addAliases(Block &block, unsigned start) {
  unsigned p = start;
  for (Operation &op : block) {
    ++p;
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(&op)) {
      if (dps.hasPureTensorSemantics())
        for (OpOperand &init : dps.getDpsInitsMutable()) {
          auto it = index.find(init.get());
          if (it != index.end() && end[it->second] == p)
            unite(dps.getTiedOpResult(&init), init.get());
        }
      continue;
    }
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::CastOp,
            tensor::ReshapeOp, tensor::ExtractSliceOp>(op)) {
      unite(op.getResult(0), op.getOperand(0));
      continue;
    }
    // act.recomputed is the backward's recomputed tensor itself.
    if (auto recomputed = dyn_cast<RecomputedOp>(op)) {
      unite(recomputed.getResult(), recomputed.getValue());
      continue;
    }
    if (!withEncodings && isa<EncodeOp, DecodeOp>(op))
      unite(op.getResult(0), op.getOperand(0));
  }
}

PeakMemoryEstimate LivenessModel::run() {
  func::FuncOp forward = graph.forward, backward = graph.backward;
  Block &fwd = forward.getBody().front();
  size_t numOps =
      fwd.getOperations().size() +
      (backward ? backward.getBody().front().getOperations().size() : 0);
  values.reserve(numOps);
  index.reserve(numOps);
  def.reserve(numOps);
  end.reserve(numOps);
  for (BlockArgument arg : fwd.getArguments())
    define(arg, 0);
  unsigned last = scan(fwd, 0);
  unsigned bwdStart = last + 1;
  Block *bwd = nullptr;
  if (backward) {
    bwd = &backward.getBody().front();
    for (BlockArgument arg : bwd->getArguments())
      define(arg, bwdStart);
    last = scan(*bwd, bwdStart);
  }
  endOfStep = last + 1;
  classes.grow(values.size());

  recordUses(fwd, 0);
  if (bwd)
    recordUses(*bwd, bwdStart);
  // Inputs and parameters exist for the whole step; so do its results.
  for (BlockArgument arg : fwd.getArguments())
    extend(arg, endOfStep);
  Operation *fwdReturn = fwd.getTerminator();
  unsigned numOutputs = fwdReturn->getNumOperands() - graph.getNumSaved();
  for (OpOperand &operand : fwdReturn->getOpOperands()) {
    if (operand.getOperandNumber() < numOutputs)
      extend(operand.get(), endOfStep);
    else
      unite(operand.get(),
            bwd->getArgument(operand.getOperandNumber() - numOutputs));
  }
  if (bwd)
    for (Value v : bwd->getTerminator()->getOperands())
      extend(v, endOfStep);

  addAliases(fwd, 0);
  if (bwd)
    addAliases(*bwd, bwdStart);

  // Per buffer: its first definition, last read and largest size.
  classes.compress();
  unsigned numBuffers = classes.getNumClasses();
  SmallVector<unsigned> start(numBuffers, endOfStep), stop(numBuffers, 0);
  SmallVector<int64_t> bytes(numBuffers, 0);
  SmallVector<bool> unknown(numBuffers, false);
  for (unsigned v = 0, e = values.size(); v < e; ++v) {
    unsigned b = classes[v];
    start[b] = std::min(start[b], def[v]);
    stop[b] = std::max(stop[b], end[v]);
    if (std::optional<int64_t> size = sizeOf(values[v]))
      bytes[b] = std::max(bytes[b], *size);
    else
      unknown[b] = true;
  }
  PeakMemoryEstimate estimate;
  SmallVector<int64_t> delta(endOfStep + 2, 0);
  for (unsigned b = 0; b < numBuffers; ++b) {
    estimate.unknownBuffers += unknown[b];
    delta[start[b]] += bytes[b];
    delta[stop[b] + 1] -= bytes[b];
  }
  int64_t live = 0;
  unsigned peakAt = 0;
  for (unsigned p = 0; p < delta.size(); ++p) {
    live += delta[p];
    if (live > estimate.peakBytes) {
      estimate.peakBytes = live;
      peakAt = p;
    }
    if (p < ops.size() && ops[p])
      estimate.timeline.push_back(live);
  }
  if (peakAt < ops.size())
    estimate.peakOp = ops[peakAt];
  // What is live at the peak, named by each buffer's first value.
  SmallVector<Value> firstValue(numBuffers);
  for (unsigned v = 0, e = values.size(); v < e; ++v)
    if (!firstValue[classes[v]])
      firstValue[classes[v]] = values[v];
  for (unsigned b = 0; b < numBuffers; ++b)
    if (start[b] <= peakAt && peakAt <= stop[b] && bytes[b] > 0)
      estimate.liveAtPeak.push_back({firstValue[b], bytes[b]});
  llvm::stable_sort(estimate.liveAtPeak,
                    [](auto &a, auto &b) { return a.second > b.second; });
  return estimate;
}

PeakMemoryEstimate mlir::act::estimatePeakMemory(const TrainingGraph &graph,
                                                 bool withEncodings) {
  return LivenessModel(graph, withEncodings).run();
}
