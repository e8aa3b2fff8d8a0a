//===- ChunkInPasses.cpp - a backward stage one chunk at a time, in passes ===//
//
// The ops that follow an op spreading a small batch tensor into a large one
// (a max pool's or upsampling's backward, a linear layer's input gradient),
// as far as they tile along the batch, are computed one chunk of the batch
// at a time in loops: one loop per level of batch reductions (BatchNorm's
// sums, weight gradients) whose results the region reads again, each loop
// recomputing the batch-parallel ops it needs (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Codegen/Passes.h"
#include "act/Support/BatchChunks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTCHUNKINPASSESPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// How an op computes along the batch: the dimension of the batch in each
/// operand and result (-1: the tensor has none, it is read or written
/// whole), the loop that runs over it for a linalg op, and whether that
/// loop is a reduction (its results are sums over the batch, whole).
struct Tiling {
  bool reduction = false;
  int64_t loop = -1;
  SmallVector<int64_t> operandDims, resultDims;
};

/// The dimension of the batch in a value of the region, -1 for a whole
/// value of it (a reduction's result), std::nullopt for a value from
/// outside (any dimension of the right size will do).
using DimOf = function_ref<std::optional<int64_t>(Value)>;

std::optional<int64_t> staticDim(Value value, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || dim < 0 || dim >= type.getRank() || type.isDynamicDim(dim))
    return std::nullopt;
  return type.getDimSize(dim);
}

/// A linalg op on tensors tiles along the batch at loop `l` when every
/// tensor operand has d_l as one plain result of its indexing map and no
/// other result depends on d_l (its batch dimension), or none at all.
std::optional<Tiling> classifyLinalg(linalg::LinalgOp op, int64_t batch,
                                     DimOf dimOf,
                                     std::optional<int64_t> wantResult) {
  if (!op.hasPureTensorSemantics())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (auto [l, range] : llvm::enumerate(ranges)) {
    if (range != batch)
      continue;
    Tiling tiling;
    tiling.loop = l;
    tiling.reduction =
        op.getIteratorTypesArray()[l] == utils::IteratorType::reduction;
    bool ok = true, batched = false;
    for (OpOperand &operand : op->getOpOperands()) {
      int64_t dim = -1;
      if (isa<RankedTensorType>(operand.get().getType())) {
        AffineMap map = op.getMatchingIndexingMap(&operand);
        for (auto [i, e] : llvm::enumerate(map.getResults())) {
          if (auto d = dyn_cast<AffineDimExpr>(e);
              d && d.getPosition() == l && dim < 0) {
            dim = i;
            continue;
          }
          if (e.isFunctionOfDim(l))
            ok = false;
        }
        if (dim >= 0 && staticDim(operand.get(), dim) != batch)
          ok = false;
        if (std::optional<int64_t> known = dimOf(operand.get()))
          ok &= *known == dim;
      }
      bool init = op.isDpsInit(&operand);
      // A parallel loop writes its batch into every result; a reduction
      // writes whole results.
      if (init && (tiling.reduction ? dim >= 0 : dim < 0))
        ok = false;
      batched |= !init && dim >= 0;
      tiling.operandDims.push_back(dim);
      if (init)
        tiling.resultDims.push_back(dim);
    }
    if (wantResult &&
        (tiling.resultDims.empty() || tiling.resultDims[0] != *wantResult))
      continue;
    if (ok && (batched || !tiling.reduction) &&
        llvm::any_of(tiling.operandDims, [](int64_t d) { return d >= 0; }))
      return tiling;
  }
  return std::nullopt;
}

/// The batch dimension of `source` for an op that keeps it: the one its
/// region value has, else the first of size `batch` that `keeps` (and
/// whose dimension in the result, `resultOf`, is `wantResult` if given:
/// a tensor whose batch and channels have the same size).
std::optional<int64_t> keptDim(Value source, int64_t batch, DimOf dimOf,
                               function_ref<bool(int64_t)> keeps,
                               function_ref<int64_t(int64_t)> resultOf,
                               std::optional<int64_t> wantResult) {
  auto wanted = [&](int64_t d) {
    return keeps(d) && (!wantResult || resultOf(d) == *wantResult);
  };
  if (std::optional<int64_t> known = dimOf(source)) {
    if (*known < 0 || !wanted(*known))
      return std::nullopt;
    return known;
  }
  auto type = cast<RankedTensorType>(source.getType());
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (staticDim(source, d) == batch && wanted(d))
      return d;
  return std::nullopt;
}

/// How `op` computes along a batch of `batch`, or std::nullopt when it does
/// not treat one of its tensors' dimensions as that batch.
std::optional<Tiling> classify(Operation *op, int64_t batch, DimOf dimOf,
                               std::optional<int64_t> wantResult = {}) {
  if (!llvm::all_of(op->getResultTypes(), [](Type type) {
        auto ranked = dyn_cast<RankedTensorType>(type);
        return ranked && ranked.hasStaticShape();
      }))
    return std::nullopt;
  // A value of the region read inside a body, not as an operand, would be
  // read whole.
  for (Region &region : op->getRegions()) {
    bool captures = false;
    visitUsedValuesDefinedAbove(region, [&](OpOperand *use) {
      captures |= dimOf(use->get()).has_value();
    });
    if (captures)
      return std::nullopt;
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return classifyLinalg(linalgOp, batch, dimOf, wantResult);
  auto same = [](int64_t d) { return d; };
  auto plain = [](int64_t d, int64_t operands) {
    Tiling tiling;
    tiling.operandDims.assign(operands, d);
    tiling.resultDims = {d};
    return tiling;
  };
  // Zero padding of the other dimensions.
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    if (!pad.getConstantPaddingValue() || !pad.getLow().empty() ||
        !pad.getHigh().empty())
      return std::nullopt;
    std::optional<int64_t> d = keptDim(
        pad.getSource(), batch, dimOf,
        [&](int64_t d) {
          return pad.getStaticLow()[d] == 0 && pad.getStaticHigh()[d] == 0;
        },
        same, wantResult);
    if (!d)
      return std::nullopt;
    return plain(*d, 1);
  }
  // The batch inserted whole into a batch of the same size (zero padding
  // built as a fill and an insert).
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    if (insert.getSourceType().getRank() != insert.getDestType().getRank() ||
        !insert.hasUnitStride())
      return std::nullopt;
    std::optional<int64_t> d = keptDim(
        insert.getSource(), batch, dimOf,
        [&](int64_t d) {
          return insert.getStaticOffsets()[d] == 0 &&
                 insert.getStaticSizes()[d] == batch &&
                 staticDim(insert.getDest(), d) == batch &&
                 (!dimOf(insert.getDest()) || *dimOf(insert.getDest()) == d);
        },
        same, wantResult);
    if (!d)
      return std::nullopt;
    return plain(*d, 2);
  }
  // Reshapes that keep the batch as a dimension of its own.
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    std::optional<int64_t> d = keptDim(
        expand.getSrc(), batch, dimOf,
        [&](int64_t d) { return groups[d].size() == 1; },
        [&](int64_t d) { return groups[d][0]; }, wantResult);
    if (!d)
      return std::nullopt;
    Tiling tiling = plain(*d, 1);
    tiling.resultDims = {groups[*d][0]};
    return tiling;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    auto groupOf = [&](int64_t d) -> std::optional<int64_t> {
      for (auto [g, group] : llvm::enumerate(groups))
        if (group.size() == 1 && group[0] == d)
          return g;
      return std::nullopt;
    };
    std::optional<int64_t> d = keptDim(
        collapse.getSrc(), batch, dimOf,
        [&](int64_t d) { return groupOf(d).has_value(); },
        [&](int64_t d) { return groupOf(d).value_or(-1); }, wantResult);
    if (!d)
      return std::nullopt;
    Tiling tiling = plain(*d, 1);
    tiling.resultDims = {*groupOf(*d)};
    return tiling;
  }
  return std::nullopt;
}

int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type ? act::getTensorBytes(type).value_or(0) : 0;
}

/// One region: its ops (block order), how each tiles, and its level (the
/// loop that computes it first).
struct Region {
  int64_t batch = 0;
  llvm::SetVector<Operation *> ops;
  DenseMap<Operation *, Tiling> tilings;
  DenseMap<Operation *, int64_t> levels;
  /// Ops outside the region, before its last op, that read its whole
  /// results: they move after the loop of `avail`.
  llvm::SetVector<Operation *> dependents;
  DenseMap<Operation *, int64_t> avail;
  /// Batch values of the region, by dimension of their batch.
  DenseMap<Value, int64_t> dims;
  /// Its waists: batch values at most half its largest, which end it.
  DenseSet<Value> closed;

  bool isReduction(Operation *op) const {
    auto it = tilings.find(op);
    return it != tilings.end() && it->second.reduction;
  }
  std::optional<int64_t> dimOf(Value value) const {
    Operation *def = value.getDefiningOp();
    if (!def || !ops.contains(def))
      return std::nullopt;
    auto it = dims.find(value);
    return it == dims.end() ? -1 : it->second;
  }
  /// The loop after which a whole value is available, for the ops of the
  /// region and its dependents; std::nullopt for a value from outside.
  std::optional<int64_t> availOf(Value value) const {
    Operation *def = value.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (ops.contains(def))
      return levels.lookup(def);
    if (dependents.contains(def))
      return avail.lookup(def);
    return std::nullopt;
  }
  /// The level of an op reading `operands`: a batch value of the region is
  /// read in the loop that computes it, a whole one in the loop after.
  int64_t levelOf(Operation *op) const {
    int64_t level = 0;
    for (Value operand : op->getOperands()) {
      std::optional<int64_t> at = availOf(operand);
      if (!at)
        continue;
      level = std::max(level, dims.count(operand) ? *at : *at + 1);
    }
    return level;
  }
};

struct ChunkInPassesPass
    : act::impl::ActChunkInPassesPassBase<ChunkInPassesPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (maxPasses < 1)
      return emitError(act::getOptionLoc(context, "act-chunk-in-passes",
                                         "max-passes"))
             << "act-chunk-in-passes: max-passes must be positive, got "
             << static_cast<int64_t>(maxPasses);
    return act::checkChunkBytes(context, "act-chunk-in-passes", chunkBytes);
  }

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (Block &block : getOperation().getBody()) {
      // The regions worth chunking, by seed, with their largest tensor.
      SmallVector<std::pair<Operation *, int64_t>> seeds;
      int64_t widest = 0;
      for (Operation &op : block)
        if (std::optional<Region> region = grow(&op))
          if (std::optional<int64_t> saved = savedBytes(*region)) {
            seeds.push_back({&op, *saved});
            widest = std::max(widest, *saved);
          }
      // The widest region's tensor: where the backward's peak is. Narrower
      // stages are left whole unless all-regions: chunking them costs
      // recomputation without lowering the step's peak (it raised it on the
      // VGG-style CNN: a chunked stage holds its inputs and sums longer).
      // Each region is grown again before it is chunked (an earlier one
      // moved ops), unless an earlier one took its seed.
      DenseSet<Operation *> erased;
      for (auto [seed, largest] : seeds) {
        if ((!allRegions && largest < widest) || erased.contains(seed))
          continue;
        std::optional<Region> region = grow(seed);
        std::optional<int64_t> saved =
            region ? savedBytes(*region) : std::nullopt;
        if (!saved)
          continue;
        erased.insert(region->ops.begin(), region->ops.end());
        transform(rewriter, *region, *saved);
      }
    }
  }

  /// The region seeded at `seed`, when it spreads an outside batch value
  /// into a result at least twice as large and larger than a chunk.
  std::optional<Region> grow(Operation *seed) {
    auto none = [](Value) -> std::optional<int64_t> { return std::nullopt; };
    auto linalgOp = dyn_cast<linalg::LinalgOp>(seed);
    if (!linalgOp || seed->getNumResults() != 1)
      return std::nullopt;
    Region region;
    // The batch: a parallel loop of the seed along which it tiles.
    for (int64_t range : linalgOp.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(range) || range < 2)
        continue;
      // Its batch is dimension 0 of its result.
      std::optional<Tiling> tiling = classify(seed, range, none, 0);
      if (!tiling || tiling->reduction)
        continue;
      int64_t in = 0;
      for (auto [operand, dim] :
           llvm::zip(linalgOp.getDpsInputs(), tiling->operandDims))
        if (dim >= 0)
          in = std::max(in, bytesOf(operand));
      // (A spread no larger than a chunk starts no stage worth chunking.)
      int64_t out = bytesOf(seed->getResult(0));
      if (in == 0 || out < 2 * in || out <= chunkBytes)
        continue;
      region.batch = range;
      add(region, seed, *tiling);
      break;
    }
    if (!region.batch)
      return std::nullopt;

    // Forward along the block: an op joins when it reads a batch value of
    // the region that is still open and tiles along it, in a loop below
    // max-passes. A result at most half the region's largest is a waist
    // (the next stage's input gradient): the region stops there.
    DenseSet<Value> &closed = region.closed;
    int64_t largest = bytesOf(seed->getResult(0));
    // The ops of the block still to read a value of the region or of its
    // dependents: the walk ends with the last of them.
    DenseSet<Operation *> pending;
    auto await = [&](Operation *op) {
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (Operation *at = seed->getBlock()->findAncestorOpInBlock(*user))
            pending.insert(at);
    };
    await(seed);
    for (Operation *op = seed->getNextNode(); op && !pending.empty();
         op = op->getNextNode()) {
      if (!pending.erase(op))
        continue;
      bool reads = false, readsRegion = false, readsInside = false;
      for (Value operand : op->getOperands()) {
        readsRegion |= region.availOf(operand).has_value();
        reads |= region.dims.count(operand) && !closed.count(operand);
      }
      // Reads inside bodies are reads of the whole value.
      int64_t insideAvail = 0;
      op->walk([&](Operation *nested) {
        if (nested == op)
          return;
        for (Value operand : nested->getOperands())
          if (std::optional<int64_t> at = region.availOf(operand)) {
            readsInside = true;
            insideAvail = std::max(insideAvail, *at);
          }
      });
      readsRegion |= readsInside;
      std::optional<Tiling> tiling;
      if (reads && !readsInside)
        tiling = classify(op, region.batch,
                          [&](Value v) { return region.dimOf(v); });
      if (tiling) {
        if (region.levelOf(op) < maxPasses) {
          add(region, op, *tiling);
          await(op);
          for (Value result : op->getResults()) {
            int64_t bytes = bytesOf(result);
            if (region.dims.count(result) && 2 * bytes <= largest)
              closed.insert(result);
            if (region.dims.count(result))
              largest = std::max(largest, bytes);
          }
          continue;
        }
      }
      if (!readsRegion)
        continue;
      // It reads a value of the region whole: it waits for the loop that
      // completes it, if it can move.
      if (!isMemoryEffectFree(op) || op->hasTrait<OpTrait::IsTerminator>())
        break;
      region.dependents.insert(op);
      await(op);
      region.avail[op] = insideAvail;
      for (Value operand : op->getOperands())
        if (std::optional<int64_t> at = region.availOf(operand))
          region.avail[op] = std::max(region.avail[op], *at);
    }
    // Dependents after the region's last op stay where they are.
    Operation *last = region.ops.back();
    region.dependents.remove_if(
        [&](Operation *op) { return last->isBeforeInBlock(op); });
    pull(region);
    return region;
  }

  void add(Region &region, Operation *op, const Tiling &tiling) {
    region.levels[op] = region.levelOf(op);
    region.tilings[op] = tiling;
    for (auto [result, dim] : llvm::zip(op->getResults(), tiling.resultDims))
      if (dim >= 0)
        region.dims[result] = dim;
    region.ops.insert(op);
  }

  /// Producers of the batch operands the region reads from outside that
  /// nothing else reads, and that compute without reducing (a decode, a
  /// fill, a padding or transpose of them), are computed chunk by chunk in
  /// the loops too: their whole value never exists.
  void pull(Region &region) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation *op : llvm::to_vector(region.ops)) {
        Tiling tiling = region.tilings.lookup(op);
        for (auto [i, use] : llvm::enumerate(op->getOperands())) {
          Value operand = use;
          int64_t dim = tiling.operandDims[i];
          Operation *def = operand.getDefiningOp();
          if (dim < 0 || !def || region.ops.contains(def) ||
              isa<tensor::EmptyOp>(def) || def->getNumResults() != 1 ||
              def->getBlock() != op->getBlock() ||
              region.dependents.contains(def))
            continue;
          bool onlyRegion = llvm::all_of(def->getUsers(), [&](Operation *u) {
            return region.ops.contains(u);
          });
          if (!onlyRegion || !isMemoryEffectFree(def))
            continue;
          // The dimension its reader expects (the batch and the channels
          // of a weight gradient's transposed input may be the same size).
          std::optional<Tiling> pulled = classify(
              def, region.batch, [&](Value v) { return region.dimOf(v); }, dim);
          if (!pulled || pulled->reduction)
            continue;
          auto linalgDef = dyn_cast<linalg::LinalgOp>(def);
          if (linalgDef && linalgDef.getNumReductionLoops() != 0)
            continue;
          // Consistent with every reader.
          bool agree = llvm::all_of(def->getUsers(), [&](Operation *u) {
            Tiling t = region.tilings.lookup(u);
            for (auto [o, d] : llvm::zip(u->getOperands(), t.operandDims))
              if (o == operand && d != dim)
                return false;
            return true;
          });
          if (!agree)
            continue;
          region.tilings[def] = *pulled;
          region.levels[def] = 0;
          region.dims[operand] = dim;
          region.ops.insert(def);
          changed = true;
        }
      }
    }
    llvm::SmallVector<Operation *> sorted(region.ops.begin(), region.ops.end());
    llvm::sort(sorted, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    region.ops = llvm::SetVector<Operation *>(sorted.begin(), sorted.end());
    // Levels again, in block order (a pulled op feeds ops of any level).
    for (Operation *op : region.ops)
      region.levels[op] = region.levelOf(op);
  }

  /// Whether a value of the region escapes: read by an op outside it.
  static bool escapes(const Region &region, Value value) {
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      Operation *at = value.getParentBlock()->findAncestorOpInBlock(*user);
      return !at || !region.ops.contains(at);
    });
  }

  /// The largest batch value that only the region reads: what the loops
  /// keep from existing whole.
  int64_t largestInternal(const Region &region) {
    int64_t largest = 0;
    for (auto [value, dim] : region.dims)
      if (!escapes(region, value))
        largest = std::max(largest, bytesOf(value));
    return largest;
  }

  /// The largest tensor chunking the region keeps from existing whole, when
  /// it is worth it: the region decodes a lossy encoding, that tensor is
  /// larger than a chunk, and every batch value read outside it is a waist
  /// (a region that must assemble a large value whole, a forward block
  /// whose activations are saved, gains nothing).
  std::optional<int64_t> savedBytes(const Region &region) {
    // Only where it decodes a lossy encoding element by element (a generic
    // without inputs, as convert-act-to-linalg{decode-into-consumers}
    // builds): its sums over the batch are then taken chunk by chunk, a
    // float32 reassociation a lossy step allows, while a step without
    // encodings or with lossless ones stays bitwise as it was.
    if (llvm::none_of(region.ops, [](Operation *op) {
          auto generic = dyn_cast<linalg::GenericOp>(op);
          return generic && generic.getNumDpsInputs() == 0 &&
                 generic.getNumReductionLoops() == 0;
        }))
      return std::nullopt;
    for (auto [value, dim] : region.dims)
      if (!region.closed.count(value) && escapes(region, value))
        return std::nullopt;
    int64_t computing = llvm::count_if(
        region.ops, [](Operation *op) { return !isa<linalg::FillOp>(op); });
    if (computing < 2)
      return std::nullopt;
    int64_t largest = largestInternal(region);
    // What it costs: the batch values it reads from outside live until the
    // loops, where they may have died earlier (the saved activations of a
    // step without encodings, read whole by its backward: holding them
    // for the loops costs more than the gradients the loops save).
    Operation *last = region.ops.back();
    int64_t held = 0;
    llvm::SmallPtrSet<Value, 8> counted;
    for (Operation *op : region.ops)
      for (auto [operand, dim] : llvm::zip(
               op->getOperands(), region.tilings.lookup(op).operandDims)) {
        Operation *def = operand.getDefiningOp();
        if (dim < 0 || !def || region.ops.contains(def) ||
            isa<tensor::EmptyOp>(def) || !counted.insert(operand).second)
          continue;
        bool readLater = llvm::any_of(operand.getUsers(), [&](Operation *u) {
          Operation *at = last->getBlock()->findAncestorOpInBlock(*u);
          return at && last->isBeforeInBlock(at);
        });
        if (!readLater)
          held += bytesOf(operand);
      }
    if (largest <= chunkBytes || largest <= held ||
        !act::getChunkSize(region.batch, largest / region.batch, chunkBytes))
      return std::nullopt;
    return largest;
  }

  /// The region's ops, as loops over chunks of the batch after its last
  /// op: loop k computes the level-k reductions and the batch values of
  /// level k read outside, recomputing the batch-parallel ops they need.
  /// Chunks take at most chunk-bytes of `largest` (savedBytes).
  void transform(IRRewriter &rewriter, Region &region, int64_t largest) {
    int64_t size =
        act::getChunkSize(region.batch, largest / region.batch, chunkBytes);
    int64_t passes = 0;
    for (Operation *op : region.ops)
      passes = std::max(passes, region.levels[op] + 1);

    // The loops go after the region's last op; each dependent moves after
    // the loop that completes what it reads.
    Operation *last = region.ops.back();
    Location loc = last->getLoc();
    rewriter.setInsertionPointAfter(last);
    Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value upper = arith::ConstantIndexOp::create(rewriter, loc, region.batch);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, size);

    // Whole values computed by earlier loops, by original value.
    IRMapping whole;
    for (int64_t k = 0; k < passes; ++k) {
      // What loop k yields: its reductions and its escaping batch values.
      SmallVector<Value> yielded;
      for (Operation *op : region.ops) {
        if (region.levels[op] != k)
          continue;
        for (Value result : op->getResults())
          if (region.isReduction(op) ||
              (region.dims.count(result) && escapes(region, result)))
            yielded.push_back(result);
      }
      if (yielded.empty())
        continue;
      // The ops it needs: producers within the region, from the yielded
      // values up, stopping at whole values of earlier loops.
      DenseSet<Operation *> needed;
      SmallVector<Operation *> stack;
      for (Value v : yielded)
        stack.push_back(v.getDefiningOp());
      while (!stack.empty()) {
        Operation *op = stack.pop_back_val();
        if (!needed.insert(op).second)
          continue;
        for (Value operand : op->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (def && region.ops.contains(def) && !whole.contains(operand))
            stack.push_back(def);
        }
      }
      SmallVector<Value> inits;
      for (Value v : yielded) {
        if (region.dims.count(v)) {
          auto type = cast<RankedTensorType>(v.getType());
          inits.push_back(tensor::EmptyOp::create(
              rewriter, loc, type.getShape(), type.getElementType()));
          continue;
        }
        // A reduction starts from its init, whole.
        Operation *def = v.getDefiningOp();
        auto dps = cast<DestinationStyleOpInterface>(def);
        Value init = dps.getDpsInits()[cast<OpResult>(v).getResultNumber()];
        inits.push_back(whole.lookupOrDefault(init));
      }
      auto loop = scf::ForOp::create(rewriter, loc, lower, upper, step, inits);
      {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(loop.getBody());
        Value first = loop.getInductionVar();
        IRMapping chunk;
        DenseMap<std::pair<Value, int64_t>, Value> slices;
        auto sliceOf = [&](Value value, int64_t dim) -> Value {
          Value source = whole.lookupOrDefault(value);
          Value &slice = slices[{source, dim}];
          if (slice)
            return slice;
          RankedTensorType chunkType =
              act::withBatch(source.getType(), size, dim);
          if (source.getDefiningOp<tensor::EmptyOp>()) {
            slice = tensor::EmptyOp::create(rewriter, loc, chunkType.getShape(),
                                            chunkType.getElementType());
            return slice;
          }
          act::BatchSlice chunk(rewriter, source.getType(), first, size, dim);
          slice = tensor::ExtractSliceOp::create(rewriter, loc, chunkType,
                                                 source, chunk.offsets,
                                                 chunk.sizes, chunk.strides);
          return slice;
        };
        DenseMap<Value, Value> accumulators;
        for (auto [v, arg] : llvm::zip(yielded, loop.getRegionIterArgs()))
          accumulators[v] = arg;
        for (Operation *op : region.ops) {
          if (!needed.contains(op))
            continue;
          const Tiling &tiling = region.tilings[op];
          IRMapping map;
          for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
            int64_t dim = tiling.operandDims[i];
            if (chunk.contains(operand))
              map.map(operand, chunk.lookup(operand));
            else if (dim >= 0)
              map.map(operand, sliceOf(operand, dim));
            else
              map.map(operand, whole.lookupOrDefault(operand));
          }
          // A reduction accumulates into its loop-carried value.
          if (tiling.reduction) {
            auto dps = cast<DestinationStyleOpInterface>(op);
            for (OpOperand &init : dps.getDpsInitsMutable())
              map.map(init.get(),
                      accumulators.lookup(op->getResult(
                          dps.getTiedOpResult(&init).getResultNumber())));
          }
          Operation *clone = cloneChunk(rewriter, op, tiling, map, first, size);
          for (auto [result, cloned] :
               llvm::zip(op->getResults(), clone->getResults()))
            chunk.map(result, cloned);
        }
        SmallVector<Value> results;
        for (Value v : yielded) {
          Value value = chunk.lookup(v);
          auto it = region.dims.find(v);
          if (it == region.dims.end()) {
            results.push_back(value);
            continue;
          }
          act::BatchSlice chunk(rewriter, v.getType(), first, size, it->second);
          results.push_back(tensor::InsertSliceOp::create(
              rewriter, loc, value, accumulators.lookup(v), chunk.offsets,
              chunk.sizes, chunk.strides));
        }
        scf::YieldOp::create(rewriter, loc, results);
      }
      for (auto [v, result] : llvm::zip(yielded, loop.getResults()))
        whole.map(v, result);
      // Ops that read whole values of this loop and no later one.
      for (Operation *dependent : region.dependents)
        if (region.avail[dependent] == k)
          dependent->moveBefore(rewriter.getInsertionBlock(),
                                rewriter.getInsertionPoint());
    }
    for (Operation *op : region.ops)
      for (Value result : op->getResults())
        if (whole.contains(result))
          rewriter.replaceAllUsesWith(result, whole.lookup(result));
    for (Operation *op : llvm::reverse(region.ops))
      rewriter.eraseOp(op);
  }

  /// `op` on one chunk of `size` batch elements from `first`: its
  /// operands mapped by `map`, its batch results that size.
  Operation *cloneChunk(IRRewriter &rewriter, Operation *op,
                        const Tiling &tiling, IRMapping &map, Value first,
                        int64_t size) {
    auto chunkType = [&](Type type, int64_t dim) -> Type {
      return dim < 0 ? type : act::withBatch(type, size, dim);
    };
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      SmallVector<OpFoldResult> sizes = insert.getMixedSizes();
      sizes[tiling.operandDims[0]] = rewriter.getIndexAttr(size);
      return tensor::InsertSliceOp::create(
          rewriter, insert.getLoc(), map.lookup(insert.getSource()),
          map.lookup(insert.getDest()), insert.getMixedOffsets(), sizes,
          insert.getMixedStrides());
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
      return tensor::ExpandShapeOp::create(
          rewriter, expand.getLoc(),
          chunkType(expand.getType(), tiling.resultDims[0]),
          map.lookup(expand.getSrc()), expand.getReassociationIndices());
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
      return tensor::CollapseShapeOp::create(
          rewriter, collapse.getLoc(), map.lookup(collapse.getSrc()),
          collapse.getReassociationIndices());
    Operation *clone = rewriter.clone(*op, map);
    for (auto [result, dim] : llvm::zip(clone->getResults(), tiling.resultDims))
      result.setType(chunkType(result.getType(), dim));
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(clone);
        linalgOp && linalgOp.hasIndexSemantics()) {
      SmallVector<OpFoldResult> offsets(linalgOp.getNumLoops(),
                                        rewriter.getIndexAttr(0));
      offsets[tiling.loop] = first;
      linalg::offsetIndices(rewriter, linalgOp, offsets);
    }
    return clone;
  }
};

} // namespace
