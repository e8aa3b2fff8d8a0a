//===- InitAll.h - register act and the dialects it works with -*- C++ -*-===//
//
// The one registration header every act tool uses (act-opt, act-run, the
// plugin, unit tests): the upstream dialects a training graph and its
// lowering use, act's dialect, and all passes and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_INITALL_H
#define ACT_INITALL_H

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

/// Registers act's passes and pipelines and all upstream passes.
void registerAllPasses();

} // namespace act
} // namespace mlir

#endif // ACT_INITALL_H
