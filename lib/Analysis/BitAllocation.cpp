//===- BitAllocation.cpp - bits per saved tensor under a budget -----------===//

#include "act/Analysis/BitAllocation.h"

#include "act/runtime/Sensitivity.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>

using namespace mlir::act;
using ::act::rt::quantVarianceFactor;

static void normalize(std::vector<unsigned> &choices) {
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
}

double
mlir::act::allocationObjective(const std::vector<BitAllocationItem> &items,
                               const std::vector<unsigned> &bits) {
  double v = 0.0;
  for (size_t l = 0; l < items.size() && l < bits.size(); ++l)
    v += items[l].sensitivity * quantVarianceFactor(bits[l]);
  return v;
}

static void finish(BitAllocation &a,
                   const std::vector<BitAllocationItem> &items) {
  a.feasible = true;
  a.objective = allocationObjective(items, a.bits);
  a.usedBits = 0;
  for (size_t l = 0; l < items.size(); ++l)
    a.usedBits += int64_t(a.bits[l]) * items[l].elements;
}

namespace {
/// A tensor's useful options: strictly increasing weight, strictly
/// decreasing cost (an option no lighter and no better is never chosen),
/// with their indices in the caller's list.
struct Front {
  std::vector<KnapsackOption> options;
  std::vector<size_t> index;
  /// Positions (into `options`) of the lower convex hull, lightest first.
  std::vector<size_t> hull;
};

Front makeFront(const std::vector<KnapsackOption> &options) {
  std::vector<size_t> order(options.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (options[a].weight != options[b].weight)
      return options[a].weight < options[b].weight;
    return options[a].cost < options[b].cost;
  });
  Front f;
  for (size_t i : order) {
    if (!f.options.empty() && options[i].cost >= f.options.back().cost)
      continue; // heavier (or as heavy) and no better
    f.options.push_back(options[i]);
    f.index.push_back(i);
  }
  // Lower convex hull from the lightest option (monotone chain).
  auto slope = [&](size_t a, size_t b) {
    return (f.options[b].cost - f.options[a].cost) /
           double(f.options[b].weight - f.options[a].weight);
  };
  for (size_t j = 0; j < f.options.size(); ++j) {
    while (f.hull.size() >= 2 &&
           slope(f.hull.back(), j) <=
               slope(f.hull[f.hull.size() - 2], f.hull.back()))
      f.hull.pop_back();
    f.hull.push_back(j);
  }
  return f;
}

std::vector<Front>
makeFronts(const std::vector<std::vector<KnapsackOption>> &items) {
  std::vector<Front> fronts;
  fronts.reserve(items.size());
  for (const auto &options : items)
    fronts.push_back(makeFront(options));
  return fronts;
}

/// The solution of positions `at` into the fronts, or infeasible.
KnapsackSolution finishSolution(const std::vector<Front> &fronts,
                                const std::vector<size_t> &at) {
  KnapsackSolution s;
  s.feasible = true;
  for (size_t l = 0; l < fronts.size(); ++l) {
    s.choice.push_back(fronts[l].index[at[l]]);
    s.objective += fronts[l].options[at[l]].cost;
    s.usedWeight += fronts[l].options[at[l]].weight;
  }
  return s;
}

bool lightestFits(const std::vector<Front> &fronts, int64_t budget) {
  int64_t minimum = 0;
  for (const Front &f : fronts) {
    if (f.options.empty())
      return false;
    minimum += f.options.front().weight;
  }
  return minimum <= budget;
}

KnapsackSolution greedy(const std::vector<Front> &fronts, int64_t budget) {
  if (!lightestFits(fronts, budget))
    return {};
  // Every tensor at its widest option (the last hull point); narrow the
  // tensor whose cost grows least per bit saved until the budget holds.
  size_t n = fronts.size();
  std::vector<size_t> level(n);
  int64_t used = 0;
  for (size_t l = 0; l < n; ++l) {
    level[l] = fronts[l].hull.size() - 1;
    used += fronts[l].options[fronts[l].hull.back()].weight;
  }
  using Entry = std::pair<double, size_t>; // (increase per bit, item)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto push = [&](size_t l) {
    if (level[l] == 0)
      return;
    const KnapsackOption &from = fronts[l].options[fronts[l].hull[level[l]]];
    const KnapsackOption &to = fronts[l].options[fronts[l].hull[level[l] - 1]];
    queue.push({(to.cost - from.cost) / double(from.weight - to.weight), l});
  };
  for (size_t l = 0; l < n; ++l)
    push(l);
  while (used > budget && !queue.empty()) {
    size_t l = queue.top().second;
    queue.pop();
    used -= fronts[l].options[fronts[l].hull[level[l]]].weight -
            fronts[l].options[fronts[l].hull[level[l] - 1]].weight;
    --level[l];
    push(l);
  }
  std::vector<size_t> at(n);
  for (size_t l = 0; l < n; ++l)
    at[l] = fronts[l].hull[level[l]];
  return finishSolution(fronts, at);
}

/// One step along a tensor's lower convex hull of (weight, cost).
struct Segment {
  size_t item;
  double weight, cost; // cost <= 0: the variance removed
  double slope() const { return cost / weight; }
};

class BranchAndBound {
public:
  BranchAndBound(const std::vector<Front> &fronts, int64_t budget,
                 uint64_t nodeLimit)
      : fronts(fronts), budget(budget), nodeLimit(nodeLimit) {}

  KnapsackSolution solve(const KnapsackSolution &incumbent,
                         std::vector<size_t> incumbentAt) {
    size_t n = fronts.size();
    // Branch on the tensors with the most variance at stake first.
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    auto stake = [&](size_t l) { return cost(l, 0) - cost(l, last(l)); };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return stake(a) > stake(b); });
    rank.resize(n);
    for (size_t k = 0; k < n; ++k)
      rank[order[k]] = k;
    for (size_t l = 0; l < n; ++l) {
      const Front &f = fronts[l];
      for (size_t k = 1; k < f.hull.size(); ++k)
        segments.push_back({l, weight(l, f.hull[k]) - weight(l, f.hull[k - 1]),
                            cost(l, f.hull[k]) - cost(l, f.hull[k - 1])});
    }
    std::stable_sort(segments.begin(), segments.end(),
                     [](const Segment &a, const Segment &b) {
                       return a.slope() < b.slope();
                     });
    suffixMinWeight.assign(n + 1, 0.0);
    suffixMinCost.assign(n + 1, 0.0);
    for (size_t k = n; k-- > 0;) {
      suffixMinWeight[k] = suffixMinWeight[k + 1] + weight(order[k], 0);
      suffixMinCost[k] = suffixMinCost[k + 1] + cost(order[k], 0);
    }
    best = std::move(incumbentAt);
    bestCost = incumbent.objective;
    current.assign(n, 0);
    search(0, 0.0, 0.0);
    KnapsackSolution result = finishSolution(fronts, best);
    result.provenOptimal = !aborted;
    result.nodes = nodes;
    return result;
  }

private:
  size_t last(size_t l) const { return fronts[l].options.size() - 1; }
  double weight(size_t l, size_t j) const {
    return double(fronts[l].options[j].weight);
  }
  double cost(size_t l, size_t j) const { return fronts[l].options[j].cost; }

  /// LP relaxation of the tensors from position k on with `capacity` bits
  /// beyond their lightest options: a lower bound on their cost.
  double bound(size_t k, double capacity) const {
    double total = suffixMinCost[k];
    for (const Segment &s : segments) {
      if (rank[s.item] < k)
        continue;
      if (s.cost >= 0 || capacity <= 0)
        break;
      if (s.weight <= capacity) {
        total += s.cost;
        capacity -= s.weight;
      } else {
        total += s.cost * capacity / s.weight;
        break;
      }
    }
    return total;
  }

  void search(size_t k, double usedWeight, double usedCost) {
    if (aborted)
      return;
    if (++nodes > nodeLimit) {
      aborted = true;
      return;
    }
    size_t n = fronts.size();
    if (k == n) {
      if (usedCost < bestCost) {
        bestCost = usedCost;
        best = current;
      }
      return;
    }
    double capacity = double(budget) - usedWeight - suffixMinWeight[k];
    if (capacity < 0)
      return;
    double lower = usedCost + bound(k, capacity);
    if (lower >= bestCost - 1e-12 * std::abs(bestCost))
      return;
    size_t l = order[k];
    for (size_t j = fronts[l].options.size(); j-- > 0;) {
      double w = usedWeight + weight(l, j);
      if (w + suffixMinWeight[k + 1] > double(budget))
        continue;
      current[l] = j;
      search(k + 1, w, usedCost + cost(l, j));
    }
  }

  const std::vector<Front> &fronts;
  int64_t budget;
  uint64_t nodeLimit, nodes = 0;
  bool aborted = false;
  std::vector<size_t> order, rank, current, best;
  std::vector<Segment> segments;
  std::vector<double> suffixMinWeight, suffixMinCost;
  double bestCost = std::numeric_limits<double>::infinity();
};

/// The positions into the fronts of a solution's choices.
std::vector<size_t> positionsOf(const std::vector<Front> &fronts,
                                const KnapsackSolution &s) {
  std::vector<size_t> at(fronts.size());
  for (size_t l = 0; l < fronts.size(); ++l)
    at[l] = size_t(
        std::find(fronts[l].index.begin(), fronts[l].index.end(), s.choice[l]) -
        fronts[l].index.begin());
  return at;
}
} // namespace

KnapsackSolution mlir::act::solveKnapsackGreedy(
    const std::vector<std::vector<KnapsackOption>> &items, int64_t budget) {
  return greedy(makeFronts(items), budget);
}

KnapsackSolution mlir::act::solveKnapsackExact(
    const std::vector<std::vector<KnapsackOption>> &items, int64_t budget,
    uint64_t nodeLimit) {
  std::vector<Front> fronts = makeFronts(items);
  KnapsackSolution incumbent = greedy(fronts, budget);
  if (!incumbent.feasible)
    return incumbent;
  return BranchAndBound(fronts, budget, nodeLimit)
      .solve(incumbent, positionsOf(fronts, incumbent));
}

/// The bit-width form: every item's options are `choices`.
static std::vector<std::vector<KnapsackOption>>
bitOptions(const std::vector<BitAllocationItem> &items,
           const std::vector<unsigned> &choices) {
  std::vector<std::vector<KnapsackOption>> options(items.size());
  for (size_t l = 0; l < items.size(); ++l)
    for (unsigned b : choices)
      options[l].push_back({int64_t(b) * items[l].elements,
                            items[l].sensitivity * quantVarianceFactor(b)});
  return options;
}

static BitAllocation toBits(const KnapsackSolution &s,
                            const std::vector<BitAllocationItem> &items,
                            const std::vector<unsigned> &choices) {
  BitAllocation result;
  if (!s.feasible)
    return result;
  for (size_t j : s.choice)
    result.bits.push_back(choices[j]);
  finish(result, items);
  result.provenOptimal = s.provenOptimal;
  result.nodes = s.nodes;
  return result;
}

BitAllocation
mlir::act::allocateBitsGreedy(const std::vector<BitAllocationItem> &items,
                              std::vector<unsigned> choices, int64_t budget) {
  normalize(choices);
  if (choices.empty())
    return {};
  return toBits(solveKnapsackGreedy(bitOptions(items, choices), budget), items,
                choices);
}

BitAllocation
mlir::act::allocateBitsExact(const std::vector<BitAllocationItem> &items,
                             std::vector<unsigned> choices, int64_t budget,
                             uint64_t nodeLimit) {
  normalize(choices);
  if (choices.empty())
    return {};
  return toBits(
      solveKnapsackExact(bitOptions(items, choices), budget, nodeLimit), items,
      choices);
}
