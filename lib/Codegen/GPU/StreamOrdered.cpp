//===- StreamOrdered.cpp - GPU steps whose host code never touches memory -===//
//
// act-gpu-pipeline's host code allocates, frees, launches kernels and calls
// cuBLAS/cuDNN; upstream's gpu-async-region makes the host wait for the GPU
// before every host op with side effects (an allocation, a library call), so
// a VGG step synchronized hundreds of times. When the host code reads and
// writes no buffer itself, every launch and library call can go on one
// stream in order and the host need wait only at the end of the step: the
// runtime's stream-ordered mode (act/runtime/Cuda.h), which the JIT turns on
// for a function marked act.stream_ordered.
//
// act-scalar-ops-to-kernels: a linalg op with no parallel loop (a sum to a
// scalar, a 0-d fill) has no loop to map to threads and became host code;
// it gets a parallel loop of one iteration, so it becomes a one-thread
// kernel.
//
// act-seeds-in-kernels: the seeds' loads move from the host code into the
// launches that use them, so that kernels read the seeds from device
// memory (what a CUDA graph's replay needs: kernel parameters are fixed
// at capture).
//
// act-mark-stream-ordered: after kernel outlining, marks each function
// whose host code touches no memory but the integer arguments it reads
// (seeds, which only the host writes) act.stream_ordered, and lists those
// arguments in act.host_read_arguments.
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTSCALAROPSTOKERNELSPASS
#define GEN_PASS_DEF_ACTMARKSTREAMORDEREDPASS
#define GEN_PASS_DEF_ACTSEEDSINKERNELSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// `op` (no parallel loop, 0-d outputs) as a generic with one more, outer,
/// parallel loop of one iteration writing 1-element views of its outputs.
LogicalResult addUnitParallelLoop(RewriterBase &rewriter, linalg::LinalgOp op) {
  rewriter.setInsertionPoint(op);
  linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(*op);
  if (!generic) {
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return failure();
    generic = *generalized;
  }
  Location loc = generic.getLoc();
  unsigned numLoops = generic.getNumLoops();
  SmallVector<Value> inits;
  for (Value init : generic.getDpsInits()) {
    auto type = cast<MemRefType>(init.getType());
    auto oneType =
        MemRefType::get({1}, type.getElementType(), MemRefLayoutAttrInterface(),
                        type.getMemorySpace());
    // A 0-d buffer with an offset: its layout, one dim of stride 1.
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)))
      return failure();
    if (offset != 0)
      oneType = MemRefType::get(
          {1}, type.getElementType(),
          StridedLayoutAttr::get(rewriter.getContext(), offset, {1}),
          type.getMemorySpace());
    inits.push_back(memref::ExpandShapeOp::create(
        rewriter, loc, oneType, init, ArrayRef<ReassociationIndices>{}));
  }
  SmallVector<AffineMap> maps;
  for (OpOperand *input : generic.getDpsInputOperands())
    maps.push_back(generic.getMatchingIndexingMap(input).shiftDims(1));
  for (size_t i = 0; i < inits.size(); ++i)
    maps.push_back(
        AffineMap::get(numLoops + 1, 0, rewriter.getAffineDimExpr(0)));
  SmallVector<utils::IteratorType> iterators{utils::IteratorType::parallel};
  llvm::append_range(iterators, generic.getIteratorTypesArray());
  auto wrapped =
      linalg::GenericOp::create(rewriter, loc, TypeRange(),
                                generic.getDpsInputs(), inits, maps, iterators);
  rewriter.inlineRegionBefore(generic.getRegion(), wrapped.getRegion(),
                              wrapped.getRegion().end());
  // The body's loop indices move one dim out.
  wrapped.getRegion().walk([&](linalg::IndexOp index) {
    rewriter.setInsertionPoint(index);
    rewriter.replaceOpWithNewOp<linalg::IndexOp>(index, index.getDim() + 1);
  });
  rewriter.eraseOp(generic);
  return success();
}

struct ActScalarOpsToKernelsPass
    : act::impl::ActScalarOpsToKernelsPassBase<ActScalarOpsToKernelsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && op.getNumParallelLoops() == 0 &&
          op.getNumDpsInits() > 0 &&
          llvm::all_of(op.getDpsInits(),
                       [](Value init) {
                         return cast<MemRefType>(init.getType()).getRank() == 0;
                       }) &&
          !op->getParentOfType<scf::ParallelOp>() &&
          !op->getParentOfType<scf::ForallOp>())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops)
      if (failed(addUnitParallelLoop(rewriter, op))) {
        op->emitError("cannot give this scalar op a parallel loop");
        return signalPassFailure();
      }
  }
};

/// Whether `op`, in host code, may read or write a buffer the GPU
/// computes: a memory effect on a memref value other than an integer
/// function argument (seeds), or a call other than act's library kernels
/// and runtime hooks. The integer arguments it reads go to `hostReads`.
bool touchesDeviceMemory(Operation *op, func::FuncOp func,
                         llvm::SmallSetVector<int64_t, 4> &hostReads) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return !(call.getCallee().starts_with("act_gpu_kernel_") ||
             call.getCallee() == "act_record_storage" ||
             call.getCallee() == "act_release_argument");
  if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
          memref::ReallocOp>(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
           !isa<gpu::LaunchFuncOp, gpu::WaitOp>(op) &&
           op->getNumRegions() == 0 && !isPure(op);
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (const MemoryEffects::EffectInstance &effect : list) {
    if (!isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect()))
      continue;
    Value value = effect.getValue();
    auto arg = dyn_cast_or_null<BlockArgument>(value);
    bool seedRead =
        isa<MemoryEffects::Read>(effect.getEffect()) && arg &&
        arg.getOwner() == &func.getBody().front() &&
        cast<MemRefType>(arg.getType()).getElementType().isSignlessInteger();
    if (!seedRead)
      return true;
    hostReads.insert(arg.getArgNumber());
  }
  return false;
}

/// Whether a launch reads `value` (a kernel operand, or a view of it).
bool reachesKernel(Value value) {
  SmallVector<Value> work{value};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      if (isa<gpu::LaunchFuncOp>(user))
        return true;
      if (isa<ViewLikeOpInterface, memref::CastOp>(user))
        llvm::append_range(work, user->getResults());
    }
  }
  return false;
}

struct ActSeedsInKernelsPass
    : act::impl::ActSeedsInKernelsPassBase<ActSeedsInKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), "act.seeds"))
        continue;
      for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
        auto load = dyn_cast<memref::LoadOp>(user);
        if (!load || load->getParentOfType<gpu::LaunchOp>() ||
            !llvm::all_of(
                load.getIndices(),
                [](Value i) { return matchPattern(i, m_Constant()); }) ||
            !llvm::all_of(load->getUses(), [](OpOperand &use) {
              return use.getOwner()->getParentOfType<gpu::LaunchOp>();
            }))
          continue;
        // (Upstream's sinkOperationsIntoLaunchOp sinks an op only where
        // its operands are already used in the launch; the seeds' memref
        // is not.)
        llvm::DenseMap<Operation *, Value> inLaunch;
        for (OpOperand &use : llvm::make_early_inc_range(load->getUses())) {
          auto launch = use.getOwner()->getParentOfType<gpu::LaunchOp>();
          Value &clone = inLaunch[launch];
          if (!clone) {
            auto b = OpBuilder::atBlockBegin(&launch.getBody().front());
            IRMapping map;
            for (Value index : load.getIndices())
              map.map(index, b.clone(*index.getDefiningOp())->getResult(0));
            clone = b.clone(*load, map)->getResult(0);
          }
          use.set(clone);
        }
        load.erase();
      }
    }
  }
};

struct ActMarkStreamOrderedPass
    : act::impl::ActMarkStreamOrderedPassBase<ActMarkStreamOrderedPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    llvm::SmallSetVector<int64_t, 4> hostReads;
    WalkResult walk = func.walk([&](Operation *op) {
      if (isa<gpu::LaunchFuncOp>(op))
        return WalkResult::skip();
      if (touchesDeviceMemory(op, func, hostReads))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return;
    func->setAttr("act.stream_ordered", UnitAttr::get(&getContext()));
    // Which arguments must be host-reachable (a runtime on device tensors
    // fills only the seeds and widths on the host).
    SmallVector<int64_t> reads(hostReads.begin(), hostReads.end());
    llvm::sort(reads);
    if (!reads.empty())
      func->setAttr("act.host_read_arguments",
                    DenseI64ArrayAttr::get(&getContext(), reads));
    // Those a kernel reads too: a runtime that stages them for the host
    // cannot reuse their memory before the step's kernels have run.
    SmallVector<int64_t> both;
    for (int64_t i : reads)
      if (reachesKernel(func.getArgument(unsigned(i))))
        both.push_back(i);
    if (!both.empty())
      func->setAttr("act.kernel_read_host_arguments",
                    DenseI64ArrayAttr::get(&getContext(), both));
  }
};

} // namespace
