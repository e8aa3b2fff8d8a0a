//===- InitAll.h - register act and the dialects it works with --*- C++ -*-===//
//
// The one registration header every act tool uses (act-opt, act-run, the
// plugin, unit tests): the upstream dialects a training graph and its
// lowering use, act's dialect, and all passes and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_INITALL_H
#define ACT_INITALL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class DialectRegistry;
namespace act {

/// Registers act's dialect only (what a dialect plugin adds to a host tool).
void registerActDialect(DialectRegistry &registry);

/// Registers act's dialect, the upstream dialects training graphs and their
/// CPU/GPU lowering use, and the interface models those need.
void registerAllDialects(DialectRegistry &registry);

/// Registers act's passes and pipelines.
void registerActPassesAndPipelines();

/// The command-line names of act's passes and pipelines (what `act-opt
/// --help-act` lists; test/Tools/act-opt-help.test checks it against the
/// passes' TableGen definitions).
llvm::ArrayRef<llvm::StringRef> getActPassAndPipelineNames();

/// Registers act's passes and pipelines and all upstream passes.
void registerAllPasses();

} // namespace act
} // namespace mlir

#endif // ACT_INITALL_H
