//===- SensitivityTest.cpp - GACT's sensitivity estimate ------------------===//

#include "act/runtime/Sensitivity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace act::rt;

TEST(Sensitivity, VarianceFactor) {
  EXPECT_DOUBLE_EQ(quantVarianceFactor(1), 1.0);
  EXPECT_DOUBLE_EQ(quantVarianceFactor(2), 1.0 / 9);
  EXPECT_DOUBLE_EQ(quantVarianceFactor(8), 1.0 / (255.0 * 255.0));
  EXPECT_EQ(quantVarianceFactor(32), 0.0);
}

TEST(Sensitivity, WelfordMatchesTwoPass) {
  std::mt19937_64 gen(3);
  std::normal_distribution<double> n(2.0, 3.0);
  std::vector<std::vector<double>> xs(50, std::vector<double>(4));
  VarianceAccumulator acc;
  for (auto &x : xs) {
    for (double &v : x)
      v = n(gen);
    ASSERT_TRUE(acc.add(x));
  }
  double expected = 0;
  for (int c = 0; c < 4; ++c) {
    double mean = 0;
    for (auto &x : xs)
      mean += x[c] / xs.size();
    for (auto &x : xs)
      expected += (x[c] - mean) * (x[c] - mean) / (xs.size() - 1);
  }
  EXPECT_NEAR(*acc.getVariance(), expected, 1e-9 * expected);
  EXPECT_FALSE(acc.add({1.0}));
  VarianceAccumulator one;
  one.add({1.0, 2.0});
  EXPECT_FALSE(one.getVariance().has_value());
}

// A synthetic step: the gradient is a fixed vector plus, per tensor l,
// noise of variance c_l S(b_l) drawn from tensor l's seed. The estimator
// must recover c_l, and the predicted variance must match the measured one.
TEST(Sensitivity, RecoversPlantedSensitivities) {
  const std::vector<double> planted = {4.0, 0.25, 100.0};
  const unsigned bits = 4, dim = 64;
  std::vector<SensitivityEstimator::Tensor> tensors;
  for (size_t l = 0; l < planted.size(); ++l)
    tensors.push_back({int64_t(l), 1000, bits, ""});
  SensitivityEstimator est(tensors);
  auto gradient = [&](const std::vector<uint64_t> &seeds) {
    std::vector<double> g(dim, 1.0);
    for (size_t l = 0; l < planted.size(); ++l) {
      std::mt19937_64 gen(seeds[l]);
      // Per-component variance so that the sum over components is c S(b).
      std::normal_distribution<double> n(
          0.0, std::sqrt(planted[l] * quantVarianceFactor(bits) / dim));
      for (double &v : g)
        v += n(gen);
    }
    return g;
  };
  uint64_t next = 1;
  for (int batch = 0; batch < 400; ++batch) {
    std::vector<uint64_t> seeds = {next++, next++, next++};
    ASSERT_TRUE(est.beginBatch(gradient(seeds)));
    for (size_t l = 0; l < planted.size(); ++l) {
      std::vector<uint64_t> redrawn = seeds;
      redrawn[l] = next++;
      ASSERT_TRUE(est.addRedraw(l, gradient(redrawn)));
    }
  }
  for (size_t l = 0; l < planted.size(); ++l) {
    EXPECT_EQ(est.getSamples(l), 400u);
    // 400 batches x 64 components: the estimate is within a few percent.
    EXPECT_NEAR(est.getSensitivity(l), planted[l], 0.05 * planted[l]) << l;
  }
  double predicted = est.predictVariance({bits, bits, bits});
  ASSERT_TRUE(est.getGradientVariance().has_value());
  EXPECT_NEAR(*est.getGradientVariance(), predicted, 0.05 * predicted);
  EXPECT_NEAR(est.predictVariance({32, 32, 8}),
              est.getSensitivity(2) * quantVarianceFactor(8), 1e-15);
}

// A step whose compression of tensor l adds a planted bias (a fixed
// offset of squared norm beta_l S(b_l)) besides noise of variance c_l
// S(b_l): re-draws measure c_l alone, the error against the step without
// compression (only that tensor compressed) c_l + beta_l.
TEST(Sensitivity, ErrorEstimateSeesBias) {
  const std::vector<double> variance = {4.0, 0.25}, bias = {0.0, 30.0};
  const unsigned bits = 2, dim = 64;
  std::vector<SensitivityEstimator::Tensor> tensors;
  for (size_t l = 0; l < variance.size(); ++l)
    tensors.push_back({int64_t(l), 1000, bits, "#act.quant<bits = 2>"});
  SensitivityEstimator redraws(tensors), errors(tensors);
  // seeds[l] == 0: tensor l uncompressed.
  auto gradient = [&](const std::vector<uint64_t> &seeds) {
    std::vector<double> g(dim, 1.0);
    for (size_t l = 0; l < variance.size(); ++l) {
      if (!seeds[l])
        continue;
      std::mt19937_64 gen(seeds[l]);
      double s = quantVarianceFactor(bits);
      std::normal_distribution<double> n(0.0, std::sqrt(variance[l] * s / dim));
      for (double &v : g)
        v += n(gen) + std::sqrt(bias[l] * s / dim);
    }
    return g;
  };
  uint64_t next = 1;
  for (int batch = 0; batch < 400; ++batch) {
    std::vector<uint64_t> seeds = {next++, next++};
    ASSERT_TRUE(redraws.beginBatch(gradient(seeds)));
    ASSERT_TRUE(errors.beginBatch(gradient({0, 0})));
    for (size_t l = 0; l < variance.size(); ++l) {
      std::vector<uint64_t> redrawn = seeds, alone = {0, 0};
      redrawn[l] = next++;
      alone[l] = seeds[l];
      ASSERT_TRUE(redraws.addRedraw(l, gradient(redrawn)));
      ASSERT_TRUE(errors.addAlone(l, gradient(alone)));
    }
  }
  for (size_t l = 0; l < variance.size(); ++l) {
    double total = variance[l] + bias[l];
    EXPECT_NEAR(redraws.getSensitivity(l), variance[l], 0.06 * variance[l]);
    EXPECT_NEAR(errors.getSensitivity(l), total, 0.06 * total) << l;
  }
  // The biased tensor ranks first only in the error estimate.
  EXPECT_LT(redraws.getSensitivity(1), redraws.getSensitivity(0));
  EXPECT_GT(errors.getSensitivity(1), errors.getSensitivity(0));
}

TEST(Sensitivity, RejectsMismatchedGradients) {
  SensitivityEstimator est({{0, 10, 4, ""}});
  ASSERT_TRUE(est.beginBatch({1.0, 2.0}));
  EXPECT_FALSE(est.addRedraw(0, {1.0}));
  EXPECT_FALSE(est.addRedraw(1, {1.0, 2.0}));
  EXPECT_FALSE(est.addAlone(0, {1.0}));
  EXPECT_FALSE(est.beginBatch({1.0}));
  EXPECT_EQ(est.getSamples(0), 0u);
}
