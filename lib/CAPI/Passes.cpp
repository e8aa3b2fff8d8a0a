//===- Passes.cpp - act's passes on a module, in process ------------------===//

#include "act-c/Passes.h"

#include "Support.h"

#include "act/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
using ::act::capi::setError;

int actRunPasses(const char *input, const char *pipeline, const char *output,
                 char **error) {
  static std::once_flag registered;
  std::call_once(registered, [] { mlir::act::registerAllPasses(); });
  std::string message;
  auto file = openInputFile(input ? input : "", &message);
  if (!file) {
    setError(error, message);
    return 1;
  }
  DialectRegistry registry;
  mlir::act::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics (with their locations) become the error message.
  std::string messages;
  llvm::raw_string_ostream os(messages);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module) {
    setError(error, messages.empty() ? "cannot parse the module" : messages);
    return 1;
  }
  // As act-opt adds its pass flags (each pass through its registration,
  // op-specific passes nested implicitly), element by element:
  // `name{options}`, separated by commas outside braces.
  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  llvm::StringRef text(pipeline ? pipeline : "");
  std::string parseErrors;
  auto onError = [&](const llvm::Twine &what) {
    parseErrors += what.str();
    return failure();
  };
  auto invalid = [&](const llvm::Twine &why) {
    setError(error, ("invalid pass pipeline '" +
                     llvm::StringRef(pipeline ? pipeline : "") + "': " + why)
                        .str());
    return 1;
  };
  while (!text.trim().empty()) {
    size_t end = 0;
    for (int depth = 0; end < text.size(); ++end) {
      depth += text[end] == '{' ? 1 : text[end] == '}' ? -1 : 0;
      if (text[end] == ',' && depth == 0)
        break;
    }
    llvm::StringRef element = text.take_front(end).trim();
    text = text.drop_front(std::min(end + 1, text.size()));
    llvm::StringRef name = element.take_until([](char c) { return c == '{'; });
    llvm::StringRef options = element.drop_front(name.size());
    if (options.consume_front("{") && !options.consume_back("}"))
      return invalid("unbalanced braces in '" + element + "'");
    const PassRegistryEntry *info = PassInfo::lookup(name.trim());
    if (!info)
      info = PassPipelineInfo::lookup(name.trim());
    if (!info)
      return invalid("no pass or pipeline '" + name.trim() + "'");
    if (failed(info->addToPipeline(pm, options, onError)))
      return invalid(parseErrors);
  }
  if (failed(pm.run(*module))) {
    setError(error, messages.empty() ? "the pass pipeline failed" : messages);
    return 1;
  }
  if (output && *output) {
    auto out = openOutputFile(output, &message);
    if (!out) {
      setError(error, message);
      return 1;
    }
    module->print(out->os());
    out->os() << "\n";
    out->keep();
  }
  return 0;
}
