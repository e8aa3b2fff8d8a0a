//===- ActPlugin.cpp - act as an mlir-opt plugin --------------------------===//
//
//   mlir-opt --load-dialect-plugin=lib/ActPlugin.so \
//            --load-pass-plugin=lib/ActPlugin.so -p '...act passes...'
//
//===----------------------------------------------------------------------===//

#include "act/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {
      MLIR_PLUGIN_API_VERSION, "Act", LLVM_VERSION_STRING,
      [](DialectRegistry *registry) { act::registerActDialect(*registry); }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "ActPasses", LLVM_VERSION_STRING,
          []() { act::registerActPassesAndPipelines(); }};
}
