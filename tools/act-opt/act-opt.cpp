//===- act-opt.cpp - act optimizer driver ----------------------------------===//
//
// mlir-opt with act's dialect and passes and the upstream dialects training
// graphs are written in and lowered through.
//
//===----------------------------------------------------------------------===//

#include "act/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::act::registerAllDialects(registry);
  mlir::act::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "act: activation-compressed training compiler\n",
      registry));
}
