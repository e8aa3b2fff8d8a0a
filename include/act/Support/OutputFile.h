//===- OutputFile.h - where a pass writes a table or a report ---*- C++ -*-===//
//
// Passes that print (act-memory-report's table and JSON, act-allocate-bits'
// table) take a path option with one convention: empty is stderr, '-' is
// stdout, anything else a file, created or replaced. A caller that runs the
// pass in its own process (the C API, act.compile) names a file and reads
// it, rather than finding the text on its stderr.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_OUTPUTFILE_H
#define ACT_SUPPORT_OUTPUTFILE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace mlir::act {

/// Writes what `writer` prints to `path` (empty: stderr, '-': stdout, else
/// the file); an error at `loc` naming `pass` when the file cannot be
/// opened.
inline LogicalResult writeOutput(Location loc, StringRef pass, StringRef path,
                                 function_ref<void(raw_ostream &)> writer) {
  if (path.empty()) {
    writer(llvm::errs());
    return success();
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError(loc, pass) << ": " << error;
  writer(file->os());
  file->keep();
  return success();
}

} // namespace mlir::act

#endif // ACT_SUPPORT_OUTPUTFILE_H
