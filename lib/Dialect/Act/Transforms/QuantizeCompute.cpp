//===- QuantizeCompute.cpp - FracTrain's compute quantization -------------===//
//
// Every contraction and convolution of a joint training graph reads its
// operands through act.fake_quant at the forward's or the backward's
// precision; the report is FracTrain's cost model (Sec. 4.1): effective MACs
// = MACs * bits_a / 32 * bits_b / 32.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/OptionLoc.h"
#include "act/Support/PrintLocation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTQUANTIZECOMPUTEPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;
using namespace mlir::act;
namespace json = llvm::json;

namespace {

/// The Philox id of the first gradient's stochastic rounding (2^32: above
/// every encoding's id).
constexpr int64_t kGradientIdBase = int64_t(1) << 32;

/// One quantized op of the report.
struct CostRow {
  std::string op, location;
  bool forward;
  int64_t macs;
  unsigned bits[2];
  double effective() const {
    return double(macs) * bits[0] / 32 * bits[1] / 32;
  }
};

struct QuantizeComputePass
    : act::impl::ActQuantizeComputePassBase<QuantizeComputePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    for (auto [name, bits] :
         {std::pair<StringRef, unsigned>{"forward-bits", forwardBits},
          {"backward-bits", backwardBits}})
      if (bits < 1 || bits > 32)
        return emitError(getOptionLoc(context, "act-quantize-compute", name),
                         "act-quantize-compute: ")
               << name << " must be in 1..32, got " << bits;
    return success();
  }

  void runOnOperation() override;

private:
  /// Gives the gradients' fake_quants `quants` stochastic rounding: each a
  /// new slot of the act.seeds argument and id kGradientIdBase + its index.
  LogicalResult seedGradients(TrainingGraph &graph,
                              ArrayRef<FakeQuantOp> quants);
  LogicalResult writeReport(TrainingGraph &graph, ArrayRef<CostRow> rows);
};

} // namespace

/// The value `v` views or copies: through reshapes, slices, padding,
/// transposes, broadcasts, casts and act.decode.
static Value getViewSource(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
            tensor::ExtractSliceOp, tensor::PadOp, tensor::CastOp,
            linalg::TransposeOp, linalg::BroadcastOp, DecodeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    break;
  }
  return v;
}

/// Whether operand `v` of a backward op is a gradient (a value the backward
/// computes) rather than a forward value it reads (weights, saved
/// activations).
static bool isGradient(TrainingGraph &graph, Value v) {
  Operation *def = getViewSource(v).getDefiningOp();
  return def && !graph.isForward(def);
}

LogicalResult QuantizeComputePass::seedGradients(TrainingGraph &graph,
                                                 ArrayRef<FakeQuantOp> quants) {
  if (quants.empty())
    return success();
  // New slots after the seeds there are; ids from 2^32 on, so no stream is
  // an encoding's.
  // (The analysis checked that an act.seeds argument is a static
  // tensor<K x i64>.)
  int64_t first = 0;
  if (BlockArgument existing = getSeedsArgument(graph.forward))
    first = cast<RankedTensorType>(existing.getType()).getDimSize(0);
  Value seeds = getOrCreateSeeds(graph.forward, first + quants.size());
  if (!seeds)
    return emitError(graph.forward.getLoc(),
                     "act-quantize-compute: the act.seeds argument is not a "
                     "static tensor<K x i64>");
  OpBuilder b = OpBuilder::atBlockBegin(seeds.getParentBlock());
  for (auto [j, constQuant] : llvm::enumerate(quants)) {
    FakeQuantOp quant = constQuant;
    Value index = arith::ConstantIndexOp::create(b, quant.getLoc(), first + j);
    Value seed = tensor::ExtractOp::create(b, quant.getLoc(), seeds, index);
    quant.setIdAttr(b.getI64IntegerAttr(kGradientIdBase + int64_t(j)));
    quant.getSeedMutable().assign(seed);
  }
  return success();
}

/// A linalg op's iterations (its MACs, for a contraction or convolution), or
/// nullopt with dynamic loops.
static std::optional<int64_t> getMacs(linalg::LinalgOp op) {
  int64_t macs = 1;
  for (int64_t range : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    macs *= range;
  }
  return macs;
}

void QuantizeComputePass::runOnOperation() {
  FailureOr<SmallVector<TrainingGraph>> graphs =
      analyzeTrainingGraphs(getOperation());
  if (failed(graphs))
    return signalPassFailure();
  for (TrainingGraph &graph : *graphs) {
    if (graph.form != GraphForm::Joint) {
      emitError(graph.forward.getLoc(),
                "act-quantize-compute: the split form is not supported; run "
                "it on the joint step (act.export writes both)");
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> ops;
    graph.forward.walk([&](linalg::LinalgOp op) {
      if (op->getParentOp() == graph.forward.getOperation() &&
          isContractionLike(op) && op.getNumDpsInputs() == 2 &&
          llvm::all_of(op.getDpsInputs(), [](Value v) {
            auto type = dyn_cast<RankedTensorType>(v.getType());
            return type && isa<FloatType>(type.getElementType());
          }))
        ops.push_back(op);
    });
    OpBuilder b = OpBuilder::atBlockBegin(&graph.forward.getBody().front());
    llvm::DenseMap<unsigned, Value> constants;
    auto bitsValue = [&](unsigned bits) {
      Value &c = constants[bits];
      if (!c)
        c = arith::ConstantIntOp::create(b, graph.forward.getLoc(),
                                         b.getI32Type(), bits);
      return c;
    };
    SmallVector<CostRow> rows;
    SmallVector<FakeQuantOp> stochastic;
    for (linalg::LinalgOp op : ops) {
      bool forward = graph.isForward(op);
      CostRow row{op->getName().getStringRef().str(),
                  printLocation(op.getLoc()),
                  forward,
                  getMacs(op).value_or(0),
                  {0, 0}};
      for (auto [i, operand] : llvm::enumerate(op.getDpsInputOperands())) {
        bool gradient = !forward && isGradient(graph, operand->get());
        unsigned bits =
            gradient ? unsigned(backwardBits) : unsigned(forwardBits);
        row.bits[i] = bits;
        if (bits >= 32)
          continue;
        OpBuilder at(op);
        Value q = FakeQuantOp::create(at, op.getLoc(), operand->get().getType(),
                                      operand->get(), bitsValue(bits),
                                      /*id=*/nullptr, /*seed=*/Value());
        operand->set(q);
        if (gradient && stochasticGradients)
          stochastic.push_back(q.getDefiningOp<FakeQuantOp>());
      }
      rows.push_back(std::move(row));
    }
    if (failed(seedGradients(graph, stochastic)))
      return signalPassFailure();
    if (failed(writeReport(graph, rows)))
      return signalPassFailure();
  }
}

LogicalResult QuantizeComputePass::writeReport(TrainingGraph &graph,
                                               ArrayRef<CostRow> rows) {
  double macs = 0, forwardMacs = 0, effective = 0, eightBit = 0;
  for (const CostRow &row : rows) {
    macs += row.macs;
    if (row.forward)
      forwardMacs += row.macs;
    effective += row.effective();
    eightBit += double(row.macs) * 8 / 32 * 8 / 32;
  }
  auto saving = [&](double base) {
    return base > 0 ? 100.0 * (1.0 - effective / base) : 0.0;
  };
  llvm::raw_ostream &os = llvm::errs();
  os << "act compute cost: @" << graph.forward.getName() << " at FW-"
     << forwardBits << "/BW-" << backwardBits << "\n";
  os << llvm::formatv("  {0,-26} {1,-9} {2,14} {3,6} {4,16}  {5}\n", "op",
                      "pass", "MACs", "bits", "effective MACs", "location");
  for (const CostRow &row : rows)
    os << llvm::formatv("  {0,-26} {1,-9} {2,14} {3,6} {4,16:F0}  {5}\n",
                        row.op, row.forward ? "forward" : "backward", row.macs,
                        llvm::formatv("{0}x{1}", row.bits[0], row.bits[1]),
                        row.effective(), row.location);
  os << llvm::formatv("total: {0} ops, {1:F0} MACs ({2:F0} forward, {3:F0} "
                      "backward); effective {4:F0} MACs: {5:F2}% saved "
                      "against fp32, {6:F2}% against FW-8/BW-8\n",
                      rows.size(), macs, forwardMacs, macs - forwardMacs,
                      effective, saving(macs), saving(eightBit));
  if (reportFile.empty())
    return success();
  json::Array ops;
  for (const CostRow &row : rows)
    ops.push_back(json::Object{{"op", row.op},
                               {"location", row.location},
                               {"pass", row.forward ? "forward" : "backward"},
                               {"macs", row.macs},
                               {"bits", json::Array{row.bits[0], row.bits[1]}},
                               {"effective_macs", row.effective()}});
  json::Object root{
      {"function", graph.forward.getName()},
      {"forward_bits", unsigned(forwardBits)},
      {"backward_bits", unsigned(backwardBits)},
      {"ops", std::move(ops)},
      {"totals", json::Object{{"macs", macs},
                              {"forward_macs", forwardMacs},
                              {"backward_macs", macs - forwardMacs},
                              {"effective_macs", effective},
                              {"saved_vs_fp32_percent", saving(macs)},
                              {"saved_vs_8bit_percent", saving(eightBit)}}}};
  std::error_code ec;
  llvm::raw_fd_ostream file(reportFile, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return emitError(graph.forward.getLoc(),
                     "act-quantize-compute: cannot write '")
           << reportFile << "': " << ec.message();
  file << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return success();
}
