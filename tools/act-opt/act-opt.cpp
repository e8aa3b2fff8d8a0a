//===- act-opt.cpp - act optimizer driver ---------------------------------===//
//
// mlir-opt with act's dialect and passes and the upstream dialects training
// graphs are written in and lowered through. `--help` shows the driver's own
// options and act's passes and pipelines; the options of LLVM's back ends
// and the list of every upstream pass are in `--help-hidden`.
//
//===----------------------------------------------------------------------===//

#include "act/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory actCategory("act's passes and pipelines");

namespace {
/// `--help-act`: act's passes and pipelines with their options (printed by
/// the pass registry, as mlir-opt prints every pass). `--help` shows the
/// same list in place of the flag's description.
class ActPassesHelp : public cl::Option {
public:
  ActPassesHelp() : Option(cl::ZeroOrMore, cl::NotHidden) {
    setArgStr("help-act");
    setDescription("act's passes and pipelines with their options");
    addCategory(actCategory);
    addArgument();
  }

  static void printPasses() {
    for (llvm::StringRef name : act::getActPassAndPipelineNames()) {
      if (const PassInfo *pass = PassInfo::lookup(name))
        pass->printHelpStr(/*indent=*/2, /*descIndent=*/36);
      else if (const PassPipelineInfo *pipeline =
                   PassPipelineInfo::lookup(name))
        pipeline->printHelpStr(/*indent=*/2, /*descIndent=*/36);
    }
  }

private:
  bool handleOccurrence(unsigned, llvm::StringRef, llvm::StringRef) override {
    llvm::outs() << "act's passes and pipelines (upstream's are available "
                    "too: --help-hidden lists them):\n";
    printPasses();
    std::exit(0);
  }
  enum cl::ValueExpected getValueExpectedFlagDefault() const override {
    return cl::ValueDisallowed;
  }
  size_t getOptionWidth() const override { return ArgStr.size() + 6; }
  void printOptionInfo(size_t) const override {
    llvm::outs() << "  --" << ArgStr << "  - " << HelpStr
                 << " (upstream's: --help-hidden)\n";
    printPasses();
  }
  void printOptionValue(size_t, bool) const override {}
  void setDefault() override {}
};
} // namespace

int main(int argc, char **argv) {
  DialectRegistry registry;
  act::registerAllDialects(registry);
  act::registerAllPasses();

  // Options registered so far are LLVM's and MLIR libraries' own (back ends,
  // codegen, debugging); the driver's are registered next. --help shows the
  // driver's and act's; --help-hidden all of them.
  llvm::DenseSet<cl::Option *> libraryOptions;
  for (auto &entry : cl::getRegisteredOptions())
    libraryOptions.insert(entry.second);
  std::string helpHeader = registerCLIOptions(
      "act-opt: the activation-compressed training compiler (mlir-opt with "
      "act's dialect, passes and pipelines)",
      registry);
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    auto inCategory = [&](llvm::StringRef name) {
      return llvm::any_of(option->Categories, [&](cl::OptionCategory *c) {
        return c->getName() == name;
      });
    };
    // The pass list (one flag per registered pass, upstream's included) is
    // hidden too: --help shows act's passes instead (ActPassesHelp).
    bool hide =
        (libraryOptions.contains(option) && !inCategory("Generic Options")) ||
        inCategory("Remark Options") ||
        option->HelpStr == "Compiler passes to run";
    if (hide && option->getOptionHiddenFlag() == cl::NotHidden)
      option->setHiddenFlag(cl::Hidden);
  }
  static ActPassesHelp passesHelp;

  auto [inputFile, outputFile] = parseCLIOptions(argc, argv, helpHeader);
  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFile, outputFile, registry));
}
