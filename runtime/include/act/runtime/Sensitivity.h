//===- Sensitivity.h - GACT's per-tensor sensitivity estimate ---*- C++ -*-===//
//
// GACT (papers/gact.txt, Sec. 4, Alg. 1): compressing saved tensor l to b_l
// bits adds gradient variance c_l * S(b_l), S(b) = (2^b - 1)^-2 for a
// stochastic-rounding quantizer. c_l is measured by evaluating the step twice
// with random streams that differ only in tensor l's seed:
//   c_l ~= 1/2 ||g0 - g1||^2 / S(b_l)
// (the two draws are independent, so half the squared distance estimates
// the variance). act evaluates one base gradient per mini-batch and one
// re-draw per tensor: L + 1 evaluations per batch.
//
// The error estimate (addAlone) is act's extension: the step without
// compression g and the step with only tensor l compressed g_l, also L + 1
// evaluations per batch,
//   c_l ~= ||g_l - g||^2 / S(b_l),
// the variance plus the squared bias that a nonlinear backward read
// (softmax's, LayerNorm's) makes of unbiased codes, which GACT's re-draw
// cannot see (docs/Tuning.md).
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_SENSITIVITY_H
#define ACT_RUNTIME_SENSITIVITY_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace act::rt {

/// S(b) = (2^b - 1)^-2; 0 for b >= 32 (a tensor kept in float32).
double quantVarianceFactor(unsigned bits);

/// ||a - b||^2 over vectors of one length (the caller checks it).
double squaredDistance(const std::vector<double> &a,
                       const std::vector<double> &b);

/// Welford's running mean and variance of vectors of one length; the
/// variance is the sum over components of the unbiased sample variance,
/// the E||g - E g||^2 of GACT.
class VarianceAccumulator {
public:
  /// Returns false (and ignores `x`) when its length differs from earlier ones.
  bool add(const std::vector<double> &x);
  unsigned getCount() const { return count; }
  /// nullopt with fewer than two samples.
  std::optional<double> getVariance() const;
  const std::vector<double> &getMean() const { return mean; }

private:
  unsigned count = 0;
  std::vector<double> mean, m2;
};

class SensitivityEstimator {
public:
  struct Tensor {
    int64_t id = 0;
    int64_t elements = 0;
    /// Bits of the stochastic quantizer the step was compiled with.
    unsigned bits = 0;
    /// The encoding it was measured with, as printed (the profile's
    /// "encoding"); empty when unknown.
    std::string encoding;
  };

  explicit SensitivityEstimator(std::vector<Tensor> tensors);

  /// Starts a mini-batch with its gradient at the base seeds.
  bool beginBatch(std::vector<double> baseGradient);
  /// The gradient of the current batch with tensor `index`'s seed re-drawn,
  /// every other seed unchanged. False on a length mismatch.
  bool addRedraw(size_t index, const std::vector<double> &gradient);
  /// The gradient of the current batch with only tensor `index` compressed,
  /// where beginBatch was given the step's gradient without compression:
  /// adds ||g_l - g||^2 / S(b_l), the tensor's variance plus its squared
  /// bias (what training sees of it; a re-draw sees the variance only).
  /// False on a length mismatch.
  bool addAlone(size_t index, const std::vector<double> &gradient);

  const std::vector<Tensor> &getTensors() const { return tensors; }
  /// c_l averaged over the batches measured so far.
  double getSensitivity(size_t index) const;
  unsigned getSamples(size_t index) const { return samples[index]; }
  unsigned getNumBatches() const { return batches.getCount(); }
  /// The sampling variance of the step's gradient over the batches (at the
  /// base seeds, so compression noise included); nullopt below two batches.
  std::optional<double> getGradientVariance() const {
    return batches.getVariance();
  }
  /// Predicted compression variance sum_l c_l S(b_l) for the given bits.
  double predictVariance(const std::vector<unsigned> &bits) const;

private:
  bool add(size_t index, const std::vector<double> &gradient, double weight);
  std::vector<Tensor> tensors;
  std::vector<double> sums;
  std::vector<unsigned> samples;
  std::vector<double> base;
  VarianceAccumulator batches;
};

} // namespace act::rt

#endif // ACT_RUNTIME_SENSITIVITY_H
