//===- CodeCache.h - compiled steps kept between processes ------*- C++ -*-===//
//
// A persistent cache of the JIT's object code: a step compiled once (the
// lowering pipeline and LLVM, seconds to tens of seconds) is loaded by the
// next process that compiles the same module for the same target in
// milliseconds. An entry is one file, `<key>.o`, in the cache's directory:
// a header (magic, the object's SHA-256) and the object file. The key is the
// SHA-256 of everything the code depends on: the module as the JIT is
// given it (before act's lowering, which a hit then skips), the functions
// compiled, every JitTarget field, the CPU the
// code is generated for, LLVM's version and the act binary that compiles it
// (its path, size and modification time: a rebuild invalidates every entry).
// An entry that does not verify is ignored and replaced; the directory is
// kept under a size limit by removing the entries used least recently.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_EXECUTION_CODECACHE_H
#define ACT_EXECUTION_CODECACHE_H

#include "act/Execution/Jit.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir::act {

class CodeCache {
public:
  /// The cache in `directory` (made when the first entry is stored), at
  /// most `maxBytes` of entries.
  explicit CodeCache(std::string directory, uint64_t maxBytes = uint64_t(1)
                                                                << 30)
      : directory(std::move(directory)), maxBytes(maxBytes) {}

  /// The key of `module` (as JitFunction::compileAll is given it) compiled for
  /// `target`: the functions `names`, allocations counted or not, code for
  /// the CPU features `cpuFeatures` (getCpuFeatures' string; empty: GPU).
  static std::string getKey(ModuleOp module, llvm::ArrayRef<std::string> names,
                            bool countAllocations, const JitTarget &target,
                            llvm::StringRef cpuFeatures);

  /// The object code stored under `key`, or null when there is none or it
  /// does not verify (a truncated or altered file). A hit marks the entry
  /// as recently used.
  std::unique_ptr<llvm::MemoryBuffer> lookup(llvm::StringRef key) const;

  /// Stores `object` under `key` (written to a temporary file and renamed:
  /// concurrent processes see the whole entry or none), then removes the
  /// least recently used entries beyond the size limit.
  llvm::Error store(llvm::StringRef key, llvm::StringRef object) const;

  const std::string &getDirectory() const { return directory; }

private:
  std::string directory;
  uint64_t maxBytes;
};

} // namespace mlir::act

#endif // ACT_EXECUTION_CODECACHE_H
