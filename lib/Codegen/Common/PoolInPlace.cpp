//===- PoolInPlace.cpp - a max pool writes into its dying input -----------===//
//
// act-pool-in-place: a window reduction that tiles its input exactly
// writes its output into the input's buffer, which memref.realloc then
// shrinks. act-shrink-reallocs: such a realloc as a call of act's runtime,
// which gives the buffer's tail back in place.
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTPOOLINPLACEPASS
#define GEN_PASS_DEF_ACTSHRINKREALLOCSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kShrinkFunction = "act_shrink_buffer";

/// A static buffer with the identity layout.
MemRefType plainBuffer(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
    return {};
  return type;
}

/// The window `(k0, k1)` if `op` is a window reduction this pass rewrites:
/// loops [parallel x 4, reduction x 2]; input 0 a 4-d buffer read through
/// (d0, d1, d2 * k0 + d4, d3 * k1 + d5) whose H and W the windows tile
/// exactly; input 1 the k0 x k1 window through (d4, d5), which the payload
/// does not read; every output a 4-d buffer written through
/// (d0, d1, d2, d3); output 0 of the input's element type; a payload free
/// of side effects.
std::optional<std::pair<int64_t, int64_t>> matchPool(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != 6 ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() < 1)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i < 6; ++i)
    if ((i < 4) != (iterators[i] == utils::IteratorType::parallel))
      return std::nullopt;
  MemRefType input = plainBuffer(op.getDpsInputs()[0]);
  MemRefType window = plainBuffer(op.getDpsInputs()[1]);
  if (!input || !window || input.getRank() != 4 || window.getRank() != 2)
    return std::nullopt;
  int64_t k0 = window.getDimSize(0), k1 = window.getDimSize(1);
  ArrayRef<int64_t> x = input.getShape();
  if (k0 < 1 || k1 < 1 || x[2] % k0 || x[3] % k1)
    return std::nullopt;
  MLIRContext *context = op.getContext();
  AffineExpr d[6];
  bindDims(context, d[0], d[1], d[2], d[3], d[4], d[5]);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] !=
          AffineMap::get(6, 0, {d[0], d[1], d[2] * k0 + d[4], d[3] * k1 + d[5]},
                         context) ||
      maps[1] != AffineMap::get(6, 0, {d[4], d[5]}, context))
    return std::nullopt;
  SmallVector<int64_t> outShape = {x[0], x[1], x[2] / k0, x[3] / k1};
  AffineMap outMap = AffineMap::get(6, 0, {d[0], d[1], d[2], d[3]}, context);
  for (OpOperand &init : op.getDpsInitsMutable()) {
    MemRefType type = plainBuffer(init.get());
    if (!type || type.getShape() != ArrayRef(outShape) ||
        op.getMatchingIndexingMap(&init) != outMap)
      return std::nullopt;
  }
  if (cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType() !=
      input.getElementType())
    return std::nullopt;
  Block &body = op.getRegion().front();
  if (!body.getArgument(1).use_empty())
    return std::nullopt;
  for (Operation &inner : body.without_terminator())
    if (!isa<linalg::IndexOp>(inner) && !isMemoryEffectFree(&inner))
      return std::nullopt;
  return std::make_pair(k0, k1);
}

/// Whether the ancestor of `user` in `block` comes before `op`.
bool usedBefore(Operation *user, Operation *op) {
  Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
  return ancestor && ancestor->isBeforeInBlock(op);
}

/// Rewrites `op` (a matchPool window reduction) if its input is a buffer
/// of its block that dies there and its outputs are fresh buffers filled
/// just for it.
LogicalResult rewritePool(linalg::GenericOp op, int64_t k0, int64_t k1,
                          BufferViewFlowAnalysis &aliases) {
  Block *block = op->getBlock();
  Value input = op.getDpsInputs()[0];
  auto inputAlloc = input.getDefiningOp<memref::AllocOp>();
  if (!inputAlloc || inputAlloc->getBlock() != block)
    return failure();
  // Every use of the input's buffer but one dealloc after `op` is before it.
  memref::DeallocOp inputDealloc;
  for (Value alias : aliases.resolve(input)) {
    for (Operation *user : alias.getUsers()) {
      if (user == op)
        continue;
      auto dealloc = dyn_cast<memref::DeallocOp>(user);
      if (dealloc && alias == input && dealloc->getBlock() == block &&
          op->isBeforeInBlock(dealloc) && !inputDealloc) {
        inputDealloc = dealloc;
        continue;
      }
      if (!usedBefore(user, op))
        return failure();
    }
  }
  if (!inputDealloc)
    return failure();
  // Each output: a buffer of the block whose only use before `op` is one
  // fill (its initial value); nothing reads it through another view.
  SmallVector<Value> initValues;
  SmallVector<linalg::FillOp> fills;
  for (Value init : op.getDpsInits()) {
    auto alloc = init.getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != block)
      return failure();
    linalg::FillOp fill;
    for (Value alias : aliases.resolve(init))
      for (Operation *user : alias.getUsers()) {
        if (user == op || !usedBefore(user, op))
          continue;
        auto f = dyn_cast<linalg::FillOp>(user);
        if (!f || alias != init || fill || f->getBlock() != block)
          return failure();
        fill = f;
      }
    if (!fill)
      return failure();
    initValues.push_back(fill.value());
    fills.push_back(fill);
  }
  Value out = op.getDpsInits()[0];
  memref::DeallocOp outDealloc;
  for (Operation *user : out.getUsers())
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (outDealloc || dealloc->getBlock() != block)
        return failure();
      outDealloc = dealloc;
    }

  Location loc = op.getLoc();
  OpBuilder b(op);
  auto outType = cast<MemRefType>(out.getType());
  ArrayRef<int64_t> shape = outType.getShape();
  SmallVector<int64_t> strides = {shape[1] * shape[2] * shape[3],
                                  shape[2] * shape[3], shape[3], 1};
  // Output 0 at its row-major place in the input's buffer.
  Value inPlace = memref::ReinterpretCastOp::create(b, loc, outType, input, 0,
                                                    shape, strides);
  SmallVector<Value> stores(op.getDpsInits());
  stores[0] = inPlace;

  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value zero = index(0), one = index(1), rowsEnd = index(k0),
        colsEnd = index(k1);
  SmallVector<Value> ends = llvm::map_to_vector(shape, index);
  Block &body = op.getRegion().front();
  SmallVector<Value> ivs;
  // The output loops, in row-major order (the order the in-place stores
  // need), each window reduced in registers from the fills' values.
  for (Value end : ends) {
    auto loop = scf::ForOp::create(b, loc, zero, end, one);
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  Value h = arith::MulIOp::create(b, loc, ivs[2], rowsEnd);
  Value w = arith::MulIOp::create(b, loc, ivs[3], colsEnd);
  auto rows = scf::ForOp::create(
      b, loc, zero, rowsEnd, one, initValues,
      [&](OpBuilder &rb, Location, Value i, ValueRange rowAcc) {
        auto cols = scf::ForOp::create(
            rb, loc, zero, colsEnd, one, rowAcc,
            [&](OpBuilder &cb, Location, Value j, ValueRange acc) {
              Value y = arith::AddIOp::create(cb, loc, h, i);
              Value x = arith::AddIOp::create(cb, loc, w, j);
              Value v = memref::LoadOp::create(
                  cb, loc, input, ValueRange{ivs[0], ivs[1], y, x});
              SmallVector<Value> loopIvs(ivs);
              loopIvs.append({i, j});
              IRMapping mapping;
              mapping.map(body.getArgument(0), v);
              for (auto [arg, value] :
                   llvm::zip(body.getArguments().drop_front(2), acc))
                mapping.map(arg, value);
              for (Operation &inner : body.without_terminator()) {
                if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
                  mapping.map(idx.getResult(), loopIvs[idx.getDim()]);
                  continue;
                }
                cb.clone(inner, mapping);
              }
              SmallVector<Value> next;
              for (Value yielded : body.getTerminator()->getOperands())
                next.push_back(mapping.lookupOrDefault(yielded));
              scf::YieldOp::create(cb, loc, next);
            });
        scf::YieldOp::create(rb, loc, cols.getResults());
      });
  for (auto [result, buffer] : llvm::zip(rows.getResults(), stores))
    memref::StoreOp::create(b, loc, result, buffer, ivs);

  // The input's buffer shrinks to the output: the output is that buffer.
  b.setInsertionPointAfter(op);
  ReassociationIndices all = {0, 1, 2, 3};
  Value flat = memref::CollapseShapeOp::create(b, loc, input, {all});
  auto smallType =
      MemRefType::get({outType.getNumElements()}, outType.getElementType());
  Value small = memref::ReallocOp::create(b, loc, smallType, flat);
  Value result = memref::ExpandShapeOp::create(b, loc, outType, small, {all});
  if (outDealloc) {
    OpBuilder at(outDealloc);
    memref::DeallocOp::create(at, outDealloc.getLoc(), small);
    outDealloc.erase();
  }
  inputDealloc.erase();
  for (linalg::FillOp fill : fills)
    fill.erase();
  op.erase();
  // What is left of the output's uses comes after the pool.
  out.replaceAllUsesWith(result);
  out.getDefiningOp()->erase();
  return success();
}

struct PoolInPlacePass : act::impl::ActPoolInPlacePassBase<PoolInPlacePass> {
  void runOnOperation() override {
    SmallVector<std::tuple<linalg::GenericOp, int64_t, int64_t>> pools;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto window = matchPool(op))
        pools.push_back({op, window->first, window->second});
    });
    for (auto [op, k0, k1] : pools) {
      // Each rewrite changes the buffers' aliases: analysed afresh.
      BufferViewFlowAnalysis aliases(getOperation());
      (void)rewritePool(op, k0, k1, aliases);
    }
  }
};

struct ShrinkReallocsPass
    : act::impl::ActShrinkReallocsPassBase<ShrinkReallocsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::ReallocOp> shrinks;
    module.walk([&](memref::ReallocOp op) {
      MemRefType source = plainBuffer(op.getSource());
      MemRefType result = op.getType();
      // Only blocks of the allocation hooks carry the runtime's header: the
      // source must be (a view of) a memref.alloc or realloc.
      Value root = op.getSource();
      while (auto view = root.getDefiningOp<ViewLikeOpInterface>())
        root = view.getViewSource();
      if (source && result.hasStaticShape() &&
          isa_and_nonnull<memref::AllocOp, memref::ReallocOp>(
              root.getDefiningOp()) &&
          result.getLayout().isIdentity() &&
          result.getNumElements() < source.getNumElements())
        shrinks.push_back(op);
    });
    if (shrinks.empty())
      return;
    OpBuilder b(module.getContext());
    Type i64 = b.getI64Type();
    if (!module.lookupSymbol(kShrinkFunction)) {
      b.setInsertionPointToStart(module.getBody());
      auto decl = func::FuncOp::create(b, module.getLoc(), kShrinkFunction,
                                       b.getFunctionType({i64, i64}, {}));
      decl.setPrivate();
    }
    for (memref::ReallocOp op : shrinks) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      MemRefType type = op.getType();
      Value pointer = arith::IndexCastOp::create(
          b, loc, i64,
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc,
                                                         op.getSource()));
      int64_t bytes =
          type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
      Value size = arith::ConstantIntOp::create(b, loc, i64, bytes);
      func::CallOp::create(b, loc, kShrinkFunction, TypeRange{},
                           ValueRange{pointer, size});
      Value same = memref::ReinterpretCastOp::create(
          b, loc, type, op.getSource(), 0, type.getShape(), {1});
      op.replaceAllUsesWith(same);
      op.erase();
    }
  }
};

} // namespace
