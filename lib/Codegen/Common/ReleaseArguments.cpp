//===- ReleaseArguments.cpp - free saved arguments after their last use ---===//
//
// act-release-arguments (Passes.td): in a function marked
// act.release_arguments, a call to act_release_argument(index) after the
// last use of each memref argument, so that the caller (act's step engine)
// can free a split backward's saved values as the joint step would.
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTRELEASEARGUMENTSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kReleaseAttr = "act.release_arguments";
constexpr llvm::StringLiteral kReleaseFunction = "act_release_argument";

struct ReleaseArgumentsPass
    : act::impl::ActReleaseArgumentsPassBase<ReleaseArgumentsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func->hasAttr(kReleaseAttr))
      return;
    Block &entry = func.getBody().front();
    BufferViewFlowAnalysis aliases(func);
    // After which op of the entry block each releasable argument dies
    // (null: never used, released at the start).
    SmallVector<std::pair<unsigned, Operation *>> releases;
    for (BlockArgument arg : func.getArguments()) {
      if (!isa<MemRefType>(arg.getType()))
        continue;
      Operation *last = nullptr;
      bool releasable = true;
      for (Value alias : aliases.resolve(arg)) {
        for (Operation *user : alias.getUsers()) {
          if (isa<func::ReturnOp>(user) ||
              user->getParentOfType<async::ExecuteOp>()) {
            releasable = false;
            break;
          }
          Operation *ancestor = entry.findAncestorOpInBlock(*user);
          if (!ancestor || ancestor->hasTrait<OpTrait::IsTerminator>()) {
            releasable = false;
            break;
          }
          if (!last || last->isBeforeInBlock(ancestor))
            last = ancestor;
        }
        if (!releasable)
          break;
      }
      if (releasable)
        releases.emplace_back(arg.getArgNumber(), last);
    }
    func->removeAttr(kReleaseAttr);
    if (releases.empty())
      return;
    auto module = func->getParentOfType<ModuleOp>();
    OpBuilder b(func.getContext());
    Type i64 = b.getI64Type();
    if (!module.lookupSymbol(kReleaseFunction)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto decl = func::FuncOp::create(b, module.getLoc(), kReleaseFunction,
                                       b.getFunctionType({i64}, {}));
      decl.setPrivate();
    }
    for (auto [index, last] : releases) {
      if (last)
        b.setInsertionPointAfter(last);
      else
        b.setInsertionPointToStart(&entry);
      Location loc = func.getArgument(index).getLoc();
      Value position = arith::ConstantIntOp::create(b, loc, i64, index);
      func::CallOp::create(b, loc, kReleaseFunction, TypeRange{},
                           ValueRange{position});
    }
  }
};

} // namespace
