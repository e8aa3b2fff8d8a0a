//===- Profile.h - the sensitivity profile file -----------------*- C++ -*-===//
//
// The JSON file `act-run --sensitivity` writes and `act-allocate-bits` reads
// (schema: docs/Profile.md). One entry per saved tensor id, plus the
// step's gradient variance; a fingerprint of the graph's saved values lets
// the reader reject a profile measured on a different graph.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_ANALYSIS_PROFILE_H
#define ACT_ANALYSIS_PROFILE_H

#include "act/Analysis/TrainingGraph.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::act {

struct ProfileTensor {
  int64_t id = 0;
  int64_t elements = 0;
  /// Bits of the stochastic quantizer the sensitivity was measured at.
  unsigned bits = 0;
  /// GACT's c_l (gradient variance per unit S(b)).
  double sensitivity = 0.0;
  unsigned samples = 0;
  /// The encoding it was measured with, as MLIR prints it
  /// ("#act.quant<bits = 4>"); version 1 profiles have none: #act.quant.
  std::string encoding;
};

/// How a profile's sensitivities were measured (measurement.estimator):
/// Variance, GACT's seed re-draws ("variance"), or Error, each tensor alone
/// against the step without it, variance and bias ("error").
enum class SensitivityMethod { Variance, Error };
llvm::StringRef getSensitivityMethodName(SensitivityMethod method);
/// The method `name` names, if any.
std::optional<SensitivityMethod> parseSensitivityMethod(llvm::StringRef name);

struct Profile {
  /// Written: 2 (tensors name their encoding). Read: 1 and 2.
  static constexpr int64_t kVersion = 2;
  std::string function;
  std::string fingerprint;
  unsigned batches = 0;
  uint64_t stepSeed = 0;
  uint64_t evaluations = 0;
  /// How the sensitivities were measured (Variance where older files do
  /// not say).
  SensitivityMethod estimator = SensitivityMethod::Variance;
  /// Sampling variance of the step's gradient (sum over components);
  /// unknown with fewer than two batches.
  std::optional<double> gradientVariance;
  std::vector<ProfileTensor> tensors;

  /// The entry of tensor `id` (the first, when several profiles were
  /// merged).
  const ProfileTensor *lookup(int64_t id) const;
};

/// A digest of the graph's saved values (id, producer, type): equal before
/// and after act's passes, different when the graph changes.
std::string getGraphFingerprint(const TrainingGraph &graph);

/// Bounds on what readProfile reads (a profile of a thousand tensors is
/// about 200 KB, nested 4 deep).
constexpr uint64_t kMaxProfileBytes = 64 << 20;
constexpr unsigned kMaxProfileDepth = 64;

llvm::Error writeProfile(const Profile &profile, llvm::StringRef path);
/// Reads and validates a profile; errors name the file and the JSON path.
llvm::Expected<Profile> readProfile(llvm::StringRef path);

} // namespace mlir::act

#endif // ACT_ANALYSIS_PROFILE_H
