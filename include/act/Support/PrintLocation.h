//===- PrintLocation.h - a location as reports print it ---------*- C++ -*-===//
//
// Reports (act-memory-report, act-quantize-compute) name ops by where they
// are in the input: file:line:col of the first file location inside `loc`
// (fused and call-site locations included), else the location as MLIR
// prints it.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_PRINTLOCATION_H
#define ACT_SUPPORT_PRINTLOCATION_H

#include "mlir/IR/Location.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::act {

inline std::string printLocation(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return llvm::formatv("{0}:{1}:{2}", file.getFilename(), file.getLine(),
                         file.getColumn());
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return s;
}

} // namespace mlir::act

#endif // ACT_SUPPORT_PRINTLOCATION_H
