//===- OutlineLoops.cpp - top-level loop nests as functions of their own --===//
//
// act-outline-loops: LLVM's loop passes are superlinear in the size of the
// function around the loops; a training step is one function with a loop
// nest per op. Each top-level loop nest of a large function becomes a
// private, non-inlined function (docs/generated/ActConversionPasses.md).
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTOUTLINELOOPSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// A top-level loop nest the pass moves: no async ops inside (their
/// runtime calls and coroutines stay in the function that owns them).
bool isOutlinable(Operation &op) {
  if (!isa<scf::ForOp, scf::ParallelOp>(op))
    return false;
  WalkResult walk = op.walk([](Operation *inner) {
    return isa<async::AsyncDialect>(inner->getDialect())
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// `loop` in a new private function, called in its place; returns the
/// function and the call.
std::pair<func::FuncOp, func::CallOp> outline(func::FuncOp parent,
                                              Operation *loop, StringRef name,
                                              SymbolTable &symbols) {
  // What the loop reads from the function: its own operands and the values
  // its body uses from above. Constants are cloned, the rest passed.
  SetVector<Value> used;
  for (Value v : loop->getOperands())
    used.insert(v);
  getUsedValuesDefinedAbove(loop->getRegions(), used);
  SmallVector<Value> arguments;
  SmallVector<Operation *> constants;
  for (Value v : used) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumResults() == 1)
      constants.push_back(def);
    else
      arguments.push_back(v);
  }

  OpBuilder b(parent);
  auto type = b.getFunctionType(ValueRange(arguments).getTypes(),
                                loop->getResultTypes());
  auto fn = func::FuncOp::create(b, loop->getLoc(), name, type);
  fn.setPrivate();
  // LLVM's noinline on the function (func-to-llvm passes the attribute
  // through to llvm.func) and on the call.
  fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
  // Internal to the module: no ExecutionEngine wrapper, no symbol to export.
  fn->setAttr("llvm.linkage",
              LLVM::LinkageAttr::get(b.getContext(), LLVM::Linkage::Internal));
  symbols.insert(fn);
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping map;
  for (auto [from, to] : llvm::zip(arguments, body->getArguments()))
    map.map(from, to);
  for (Operation *c : constants)
    b.clone(*c, map);
  Operation *copy = b.clone(*loop, map);
  func::ReturnOp::create(b, loop->getLoc(), copy->getResults());

  b.setInsertionPoint(loop);
  auto call = func::CallOp::create(b, loop->getLoc(), fn, arguments);
  call.setNoInline(true);
  loop->replaceAllUsesWith(call.getResults());
  loop->erase();
  return {fn, call};
}

/// A hash of `fn`'s body that equivalent bodies share: every nested op's
/// name, attributes and result types (not which values it reads).
llvm::hash_code hashBody(func::FuncOp fn) {
  llvm::hash_code hash = hash_value(fn.getFunctionType());
  fn.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

/// Outlined functions with equivalent bodies (the same ops, attributes and
/// types, reading the same arguments and constants in the same places) as
/// one: a training step repeats its loop nests (the timesteps of an
/// unrolled recurrent network, the layers of a transformer), and LLVM
/// compiles each function it is given.
void mergeEquivalent(ArrayRef<std::pair<func::FuncOp, func::CallOp>> outlined,
                     SymbolTable &symbols) {
  DenseMap<llvm::hash_code, SmallVector<func::FuncOp>> buckets;
  for (auto [fn, call] : outlined) {
    SmallVector<func::FuncOp> &bucket = buckets[hashBody(fn)];
    func::FuncOp same;
    for (func::FuncOp kept : bucket)
      if (kept.getFunctionType() == fn.getFunctionType() &&
          OperationEquivalence::isRegionEquivalentTo(
              &kept.getBody(), &fn.getBody(),
              OperationEquivalence::IgnoreLocations)) {
        same = kept;
        break;
      }
    if (!same) {
      bucket.push_back(fn);
      continue;
    }
    call.setCallee(same.getSymName());
    symbols.erase(fn);
  }
}

struct ActOutlineLoopsPass
    : act::impl::ActOutlineLoopsPassBase<ActOutlineLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      SmallVector<Operation *> loops;
      // The loop nests of the function's blocks, and of the cases of its
      // switches (#act.runtime_quant's encode and decode: a case per width).
      std::function<void(Block &)> collect = [&](Block &block) {
        for (Operation &op : block) {
          if (isOutlinable(op))
            loops.push_back(&op);
          else if (isa<scf::IndexSwitchOp>(op))
            for (Region &region : op.getRegions())
              for (Block &inner : region)
                collect(inner);
        }
      };
      for (Block &block : fn.getBody())
        collect(block);
      if (int64_t(loops.size()) < minLoops)
        continue;
      SmallVector<std::pair<func::FuncOp, func::CallOp>> outlined;
      for (auto [k, loop] : llvm::enumerate(loops))
        outlined.push_back(outline(
            fn, loop, (fn.getSymName() + "_loop" + Twine(k)).str(), symbols));
      mergeEquivalent(outlined, symbols);
    }
  }
};

} // namespace
