//===- BitAllocationTest.cpp - exact and greedy bit allocation ------------===//

#include "act/Analysis/BitAllocation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir::act;

static const std::vector<unsigned> kChoices = {1, 2, 4, 8, 32};

static double S(unsigned b) {
  return b >= 32 ? 0.0
                 : 1.0 / ((std::ldexp(1.0, b) - 1) * (std::ldexp(1.0, b) - 1));
}

/// Every assignment of every tensor's own options (as when #act.quant and
/// #act.division compete: different weights per tensor, dominated and
/// non-convex options, ties): the optimum, or infinity when none fits.
static double
bruteForceOptions(const std::vector<std::vector<KnapsackOption>> &items,
                  int64_t budget) {
  double best = INFINITY;
  std::vector<size_t> idx(items.size(), 0);
  while (true) {
    int64_t used = 0;
    double cost = 0;
    for (size_t l = 0; l < items.size(); ++l) {
      used += items[l][idx[l]].weight;
      cost += items[l][idx[l]].cost;
    }
    if (used <= budget)
      best = std::min(best, cost);
    size_t l = 0;
    while (l < idx.size() && ++idx[l] == items[l].size())
      idx[l++] = 0;
    if (l == idx.size())
      break;
  }
  return best;
}

/// Every assignment of the widths kChoices: the optimum, or infinity when
/// none fits.
static double bruteForce(const std::vector<BitAllocationItem> &items,
                         int64_t budget) {
  std::vector<std::vector<KnapsackOption>> options(items.size());
  for (size_t l = 0; l < items.size(); ++l)
    for (unsigned b : kChoices)
      options[l].push_back(
          {int64_t(b) * items[l].elements, items[l].sensitivity * S(b)});
  return bruteForceOptions(options, budget);
}

static std::vector<BitAllocationItem> randomItems(std::mt19937_64 &gen,
                                                  size_t n) {
  // Sensitivities over six orders of magnitude, sizes over three (GACT's
  // Fig. 3a spans about that).
  std::uniform_real_distribution<double> logC(-3.0, 3.0), logD(1.0, 4.0);
  std::vector<BitAllocationItem> items(n);
  for (auto &item : items) {
    item.sensitivity = std::pow(10.0, logC(gen));
    item.elements = int64_t(std::pow(10.0, logD(gen)));
  }
  return items;
}

TEST(BitAllocation, ExactMatchesBruteForce) {
  std::mt19937_64 gen(7);
  int cases = 0;
  for (size_t n = 1; n <= 6; ++n) {
    for (int trial = 0; trial < 25; ++trial) {
      auto items = randomItems(gen, n);
      int64_t elements = 0;
      for (auto &item : items)
        elements += item.elements;
      for (double avg : {1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0, 33.0}) {
        int64_t budget = int64_t(avg * double(elements));
        double expected = bruteForce(items, budget);
        BitAllocation exact = allocateBitsExact(items, kChoices, budget);
        BitAllocation greedy = allocateBitsGreedy(items, kChoices, budget);
        ASSERT_TRUE(exact.feasible);
        ASSERT_TRUE(exact.provenOptimal);
        EXPECT_LE(exact.usedBits, budget);
        EXPECT_NEAR(exact.objective, expected, 1e-12 * std::max(1.0, expected))
            << "n=" << n << " avg=" << avg;
        EXPECT_NEAR(exact.objective, allocationObjective(items, exact.bits),
                    1e-15);
        // The greedy is never better than the exact solver.
        ASSERT_TRUE(greedy.feasible);
        EXPECT_LE(greedy.usedBits, budget);
        EXPECT_GE(greedy.objective, exact.objective * (1 - 1e-12));
        EXPECT_FALSE(greedy.provenOptimal);
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 6 * 25 * 8);
}

TEST(BitAllocation, GreedyCanLose) {
  // One large insensitive tensor and one small sensitive one: the greedy
  // narrows by the cheapest step first and strands budget that the exact
  // solver spends. (Found by the brute-force sweep above; kept as a witness
  // that the comparison is meaningful.)
  std::mt19937_64 gen(11);
  int strictlyBetter = 0;
  for (int trial = 0; trial < 400; ++trial) {
    auto items = randomItems(gen, 5);
    int64_t elements = 0;
    for (auto &item : items)
      elements += item.elements;
    int64_t budget = 4 * elements;
    double e = allocateBitsExact(items, kChoices, budget).objective;
    double g = allocateBitsGreedy(items, kChoices, budget).objective;
    strictlyBetter += e < g * (1 - 1e-9);
  }
  EXPECT_GT(strictlyBetter, 0);
}

TEST(BitAllocation, InfeasibleAndEdgeBudgets) {
  std::vector<BitAllocationItem> items = {{1.0, 100}, {2.0, 50}};
  EXPECT_FALSE(allocateBitsExact(items, kChoices, 149).feasible);
  EXPECT_FALSE(allocateBitsGreedy(items, kChoices, 149).feasible);
  BitAllocation tight = allocateBitsExact(items, kChoices, 150);
  ASSERT_TRUE(tight.feasible);
  EXPECT_EQ(tight.bits, (std::vector<unsigned>{1, 1}));
  BitAllocation loose = allocateBitsExact(items, kChoices, 32 * 150);
  EXPECT_EQ(loose.bits, (std::vector<unsigned>{32, 32}));
  EXPECT_EQ(loose.objective, 0.0);
}

TEST(BitAllocation, LargeInstanceIsProven) {
  // resnet18-sized: 82 tensors.
  std::mt19937_64 gen(5);
  auto items = randomItems(gen, 82);
  int64_t elements = 0;
  for (auto &item : items)
    elements += item.elements;
  for (double avg : {2.0, 4.0, 8.0}) {
    BitAllocation exact =
        allocateBitsExact(items, kChoices, int64_t(avg * elements));
    BitAllocation greedy =
        allocateBitsGreedy(items, kChoices, int64_t(avg * elements));
    EXPECT_TRUE(exact.provenOptimal) << avg << " nodes " << exact.nodes;
    EXPECT_GE(greedy.objective, exact.objective * (1 - 1e-12));
  }
}

TEST(Knapsack, PerTensorOptionsMatchBruteForce) {
  std::mt19937_64 gen(3);
  std::uniform_int_distribution<int> count(1, 6), weight(1, 60);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  int cases = 0, nonConvex = 0;
  for (size_t n = 1; n <= 6; ++n) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<std::vector<KnapsackOption>> items(n);
      int64_t lightest = 0, heaviest = 0;
      for (auto &options : items) {
        int k = count(gen);
        int64_t lo = INT64_MAX, hi = 0;
        for (int j = 0; j < k; ++j) {
          options.push_back({weight(gen), cost(gen)});
          lo = std::min(lo, options.back().weight);
          hi = std::max(hi, options.back().weight);
        }
        if (k >= 2 && gen() % 3 == 0) // a tie in weight
          options.push_back({options[0].weight, cost(gen)});
        lightest += lo;
        heaviest += hi;
      }
      for (int64_t budget : {lightest - 1, lightest, (lightest + heaviest) / 2,
                             (3 * lightest + heaviest) / 4, heaviest}) {
        double expected = bruteForceOptions(items, budget);
        KnapsackSolution exact = solveKnapsackExact(items, budget);
        KnapsackSolution greedy = solveKnapsackGreedy(items, budget);
        if (std::isinf(expected)) {
          EXPECT_FALSE(exact.feasible);
          EXPECT_FALSE(greedy.feasible);
          continue;
        }
        ASSERT_TRUE(exact.feasible);
        ASSERT_TRUE(exact.provenOptimal);
        ASSERT_EQ(exact.choice.size(), n);
        // The choices are indices into the caller's lists and add up.
        int64_t used = 0;
        double objective = 0;
        for (size_t l = 0; l < n; ++l) {
          ASSERT_LT(exact.choice[l], items[l].size());
          used += items[l][exact.choice[l]].weight;
          objective += items[l][exact.choice[l]].cost;
        }
        EXPECT_EQ(used, exact.usedWeight);
        EXPECT_LE(used, budget);
        EXPECT_NEAR(objective, exact.objective, 1e-12);
        EXPECT_NEAR(exact.objective, expected, 1e-9) << "n=" << n;
        ASSERT_TRUE(greedy.feasible);
        EXPECT_LE(greedy.usedWeight, budget);
        EXPECT_GE(greedy.objective, exact.objective - 1e-9);
        nonConvex += greedy.objective > exact.objective + 1e-9;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 500);
  EXPECT_GT(nonConvex, 0);
}
