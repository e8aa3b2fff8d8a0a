//===- act-fewbit-table.cpp - Few-bit's optimal tables for a derivative ---===//
//
// act-fewbit-table FILE.mlir [--bits=1,2,3,4] [--range=-10,10]
//
// FILE holds one func.func taking and returning a float: the derivative
// phi of an activation, in arith and math ops. Prints, per bit width b, the
// optimal piecewise-constant approximation of phi with 2^b pieces (Few-bit,
// papers/fewbit-backward.txt, Sec. 3 and App. G): its error in the measure
// of the paper's Table 3 (L2 with weight 1 on the range) and the table, as
// the #act.fewbit encoding that stores it.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/FewBit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace mlir::act;
namespace cl = llvm::cl;

static cl::OptionCategory category("act-fewbit-table options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<FILE.mlir>"),
                                      cl::cat(category));
static cl::list<unsigned> bitsList("bits", cl::CommaSeparated,
                                   cl::desc("bit widths, each in 1..8 "
                                            "(default 1,2,3,4)"),
                                   cl::cat(category));
static cl::list<double> range("range", cl::CommaSeparated,
                              cl::desc("A,B: the interval [A, B] the error "
                                       "is measured on (default -10,10)"),
                              cl::cat(category));
static cl::opt<int64_t> cells("cells", cl::init(2048),
                              cl::desc("grid cells of the dynamic program"),
                              cl::cat(category));
static cl::opt<int64_t> samples("samples", cl::init(8),
                                cl::desc("integration samples per cell"),
                                cl::cat(category));

/// `x` as printf's %g writes it (`precision` digits).
static std::string num(double x, int precision = 6) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.*g", precision, x);
  return s;
}

/// `x` as an MLIR float literal that reads back as the same f32.
static std::string floatLiteral(double x) {
  std::string s = num(float(x) == 0.0f ? 0.0 : x, 9);
  // %g drops the point of whole numbers; MLIR's parser needs one.
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return s;
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "act-fewbit-table: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Few-bit backward's optimal piecewise-constant tables of a "
      "derivative\n");

  std::vector<unsigned> bits(bitsList.begin(), bitsList.end());
  if (bits.empty())
    bits = {1, 2, 3, 4};
  for (unsigned b : bits)
    if (b < 1 || b > 8)
      return fail("--bits: " + llvm::Twine(b) + " is not in 1..8");
  FewBitOptions options;
  if (!range.empty()) {
    if (range.size() != 2 || !(range[0] < range[1]) ||
        !std::isfinite(range[0]) || !std::isfinite(range[1]))
      return fail("--range must be two finite numbers A,B with A < B");
    options.lo = range[0];
    options.hi = range[1];
  }
  options.cells = cells;
  options.samples = samples;
  unsigned maxBits = *std::max_element(bits.begin(), bits.end());
  if (options.cells < (int64_t(1) << maxBits) || options.cells > (1 << 16))
    return fail("--cells must be in 2^bits.." + llvm::Twine(1 << 16));
  if (options.samples < 1 || options.samples > 1024)
    return fail("--samples must be in 1..1024");

  MLIRContext ctx;
  ctx.loadDialect<arith::ArithDialect, func::FuncDialect, math::MathDialect>();
  llvm::SourceMgr sourceMgr;
  std::string openError;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    return fail("cannot open '" + inputFile +
                "': " + buffer.getError().message());
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return 1;
  auto funcs = llvm::to_vector(module->getBody()->getOps<func::FuncOp>());
  if (funcs.size() != 1) {
    // At the second function, or at the file when there is none.
    emitError(funcs.empty() ? module->getLoc() : funcs[1].getLoc())
        << "expected one func.func (the derivative), found " << funcs.size();
    return 1;
  }
  func::FuncOp func = funcs.front();
  std::string error;
  FailureOr<ScalarFunction> phi = ScalarFunction::compile(func, error);
  if (failed(phi)) {
    emitError(func.getLoc())
        << "cannot evaluate '" << func.getSymName() << "': " << error;
    return 1;
  }

  auto start = std::chrono::steady_clock::now();
  std::vector<PiecewiseConstant> tables = optimalPiecewiseConstant(
      [&](double x) { return (*phi)(x); }, maxBits, options);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (tables.empty()) {
    emitError(func.getLoc())
        << "'" << func.getSymName() << "' is not finite everywhere on ["
        << num(options.lo) << ", " << num(options.hi) << "]";
    return 1;
  }
  llvm::outs() << "# " << func.getSymName() << " on [" << num(options.lo)
               << ", " << num(options.hi) << "], uniform weight, "
               << options.cells << " cells x " << options.samples
               << " samples: " << llvm::format("%.1f", ms) << " ms for 1.."
               << maxBits << " bits\n";
  for (unsigned b : bits) {
    const PiecewiseConstant &t = tables[b - 1];
    llvm::outs() << "bits=" << b << " error=" << llvm::format("%.4f", t.error)
                 << " (" << llvm::format("%.6e", t.error)
                 << ") #act.fewbit<bits = " << b << ", boundaries = ";
    for (auto [k, v] : llvm::enumerate(t.boundaries))
      llvm::outs() << (k ? ", " : "[") << floatLiteral(v);
    llvm::outs() << "], values = ";
    for (auto [k, v] : llvm::enumerate(t.values))
      llvm::outs() << (k ? ", " : "[") << floatLiteral(v);
    llvm::outs() << "]>\n";
  }
  return 0;
}
