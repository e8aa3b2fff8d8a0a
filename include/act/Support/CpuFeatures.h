//===- CpuFeatures.h - the CPU features code is generated for ---*- C++ -*-===//
//
// One knob for the instruction set of the CPU code: a list of changes to the
// host's LLVM target features (`-avx512f` gives an AVX2 machine's code on an
// AVX-512 host). act-run --cpu-features, act-cpu-pipeline{cpu-features} and
// the ACT_CPU_FEATURES environment variable (what a caller leaves empty) all
// take it; the lowering picks its formulations from the result (#act.sparse:
// vcompressps/vexpandps with AVX-512, a permutation table with AVX2) and the
// JIT generates code for it.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_CPUFEATURES_H
#define ACT_SUPPORT_CPUFEATURES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <cstdlib>
#include <string>

namespace mlir::act {

/// `changes`, or, when empty, those of ACT_CPU_FEATURES (empty if unset).
inline std::string getCpuFeatureChanges(llvm::StringRef changes) {
  if (!changes.empty())
    return changes.str();
  const char *env = std::getenv("ACT_CPU_FEATURES");
  return env ? env : "";
}

/// The host's LLVM target features changed by `changes` (comma-separated
/// `+name` / `-name`; empty: ACT_CPU_FEATURES), as an LLVM feature string
/// (`+avx2,-avx512f,...`; disabling a feature disables those implying it
/// when LLVM reads the string). Fails on a malformed change or a feature
/// this LLVM does not know for the host.
inline llvm::Expected<std::string> getCpuFeatures(llvm::StringRef changes) {
  std::string resolved = getCpuFeatureChanges(changes);
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  llvm::SubtargetFeatures features;
  for (const auto &entry : host)
    features.AddFeature(entry.getKey(), entry.getValue());
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(resolved).split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.size() < 2 || (item.front() != '+' && item.front() != '-'))
      return llvm::createStringError("CPU feature change '" + item.str() +
                                     "' is not +name or -name (e.g. -avx512f)");
    llvm::StringRef name = item.drop_front();
    if (!host.count(name))
      return llvm::createStringError("unknown CPU feature '" + name.str() +
                                     "' (LLVM's names, e.g. avx512f, avx2)");
    features.AddFeature(item);
  }
  return features.getString();
}

/// Whether `features` (getCpuFeatures' string) enables `name`: its last
/// mention decides (`avx512f` is off after `-avx512f`, and so is every
/// AVX-512 feature that implies it).
inline bool hasCpuFeature(llvm::StringRef features, llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> items;
  features.split(items, ',', -1, /*KeepEmpty=*/false);
  bool enabled = false;
  bool avx512Off = false;
  for (llvm::StringRef item : items) {
    if (item.size() < 2)
      continue;
    if (item.drop_front() == name)
      enabled = item.front() == '+';
    if (item == "-avx512f")
      avx512Off = true;
  }
  if (name.starts_with("avx512") && avx512Off)
    return false;
  return enabled;
}

} // namespace mlir::act

#endif // ACT_SUPPORT_CPUFEATURES_H
