//===- Sensitivity.cpp - GACT's per-tensor sensitivity estimate -----------===//

#include "act/runtime/Sensitivity.h"

#include <cmath>

using namespace act::rt;

double act::rt::quantVarianceFactor(unsigned bits) {
  if (bits >= 32)
    return 0.0;
  double levels = std::ldexp(1.0, int(bits)) - 1.0;
  return 1.0 / (levels * levels);
}

bool VarianceAccumulator::add(const std::vector<double> &x) {
  if (count == 0) {
    mean.assign(x.size(), 0.0);
    m2.assign(x.size(), 0.0);
  } else if (x.size() != mean.size()) {
    return false;
  }
  ++count;
  for (size_t i = 0; i < x.size(); ++i) {
    double delta = x[i] - mean[i];
    mean[i] += delta / count;
    m2[i] += delta * (x[i] - mean[i]);
  }
  return true;
}

std::optional<double> VarianceAccumulator::getVariance() const {
  if (count < 2)
    return std::nullopt;
  double sum = 0.0;
  for (double v : m2)
    sum += v;
  return sum / (count - 1);
}

SensitivityEstimator::SensitivityEstimator(std::vector<Tensor> tensors)
    : tensors(std::move(tensors)), sums(this->tensors.size(), 0.0),
      samples(this->tensors.size(), 0) {}

double act::rt::squaredDistance(const std::vector<double> &a,
                                const std::vector<double> &b) {
  double d2 = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double d = a[i] - b[i];
    d2 += d * d;
  }
  return d2;
}

bool SensitivityEstimator::beginBatch(std::vector<double> baseGradient) {
  if (!batches.add(baseGradient))
    return false;
  base = std::move(baseGradient);
  return true;
}

bool SensitivityEstimator::add(size_t index,
                               const std::vector<double> &gradient,
                               double weight) {
  if (index >= tensors.size() || gradient.size() != base.size())
    return false;
  double d2 = squaredDistance(gradient, base);
  double s = quantVarianceFactor(tensors[index].bits);
  if (s == 0.0)
    return false;
  sums[index] += weight * d2 / s;
  ++samples[index];
  return true;
}

bool SensitivityEstimator::addRedraw(size_t index,
                                     const std::vector<double> &gradient) {
  // Two independent draws: half their squared distance is the variance.
  return add(index, gradient, 0.5);
}

bool SensitivityEstimator::addAlone(size_t index,
                                    const std::vector<double> &gradient) {
  return add(index, gradient, 1.0);
}

double SensitivityEstimator::getSensitivity(size_t index) const {
  return samples[index] ? sums[index] / samples[index] : 0.0;
}

double
SensitivityEstimator::predictVariance(const std::vector<unsigned> &bits) const {
  double v = 0.0;
  for (size_t l = 0; l < tensors.size() && l < bits.size(); ++l)
    v += getSensitivity(l) * quantVarianceFactor(bits[l]);
  return v;
}
