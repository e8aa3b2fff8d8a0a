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

BitAllocation
mlir::act::allocateBitsGreedy(const std::vector<BitAllocationItem> &items,
                              std::vector<unsigned> choices, int64_t budget) {
  normalize(choices);
  BitAllocation result;
  if (choices.empty())
    return result;
  int64_t minimum = 0;
  for (const BitAllocationItem &item : items)
    minimum += int64_t(choices.front()) * item.elements;
  if (minimum > budget)
    return result;
  // Everything at the widest choice; narrow the tensor whose variance grows
  // least per bit saved until the budget holds.
  std::vector<size_t> level(items.size(), choices.size() - 1);
  int64_t used = 0;
  for (const BitAllocationItem &item : items)
    used += int64_t(choices.back()) * item.elements;
  using Entry = std::pair<double, size_t>; // (increase per bit, item)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto push = [&](size_t l) {
    if (level[l] == 0 || items[l].elements == 0)
      return;
    double from = quantVarianceFactor(choices[level[l]]);
    double to = quantVarianceFactor(choices[level[l] - 1]);
    double saved =
        double(choices[level[l]] - choices[level[l] - 1]) * items[l].elements;
    queue.push({items[l].sensitivity * (to - from) / saved, l});
  };
  for (size_t l = 0; l < items.size(); ++l)
    push(l);
  while (used > budget && !queue.empty()) {
    size_t l = queue.top().second;
    queue.pop();
    used -=
        int64_t(choices[level[l]] - choices[level[l] - 1]) * items[l].elements;
    --level[l];
    push(l);
  }
  result.bits.resize(items.size());
  for (size_t l = 0; l < items.size(); ++l)
    result.bits[l] = choices[level[l]];
  finish(result, items);
  return result;
}

namespace {
/// One step along a tensor's lower convex hull of (weight, cost).
struct Segment {
  size_t item;
  double weight, cost; // cost <= 0: the variance removed
  double slope() const { return cost / weight; }
};

class BranchAndBound {
public:
  BranchAndBound(const std::vector<BitAllocationItem> &items,
                 const std::vector<unsigned> &choices, int64_t budget,
                 uint64_t nodeLimit)
      : items(items), choices(choices), budget(budget), nodeLimit(nodeLimit) {}

  BitAllocation solve(BitAllocation incumbent) {
    size_t n = items.size();
    // Branch on the tensors with the most variance at stake first.
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    auto stake = [&](size_t l) {
      return items[l].sensitivity * quantVarianceFactor(choices.front());
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return stake(a) > stake(b); });
    rank.resize(n);
    for (size_t k = 0; k < n; ++k)
      rank[order[k]] = k;
    buildHulls();
    suffixMinWeight.assign(n + 1, 0.0);
    suffixMinCost.assign(n + 1, 0.0);
    for (size_t k = n; k-- > 0;) {
      suffixMinWeight[k] = suffixMinWeight[k + 1] + weight(order[k], 0);
      suffixMinCost[k] = suffixMinCost[k + 1] + cost(order[k], 0);
    }
    best = incumbent.bits;
    bestCost = incumbent.objective;
    current.assign(n, 0);
    search(0, 0.0, 0.0);
    BitAllocation result;
    result.bits = best;
    finish(result, items);
    result.provenOptimal = !aborted;
    result.nodes = nodes;
    return result;
  }

private:
  double weight(size_t l, size_t j) const {
    return double(choices[j]) * double(items[l].elements);
  }
  double cost(size_t l, size_t j) const {
    return items[l].sensitivity * quantVarianceFactor(choices[j]);
  }

  void buildHulls() {
    for (size_t l = 0; l < items.size(); ++l) {
      // Lower convex hull from the narrowest choice (monotone chain).
      std::vector<size_t> hull = {0};
      for (size_t j = 1; j < choices.size(); ++j) {
        if (cost(l, j) >= cost(l, hull.back()))
          continue; // wider and no better: never on the hull
        while (hull.size() >= 2) {
          size_t a = hull[hull.size() - 2], b = hull.back();
          double s1 = (cost(l, b) - cost(l, a)) / (weight(l, b) - weight(l, a));
          double s2 = (cost(l, j) - cost(l, b)) / (weight(l, j) - weight(l, b));
          if (s2 <= s1)
            hull.pop_back();
          else
            break;
        }
        hull.push_back(j);
      }
      for (size_t k = 1; k < hull.size(); ++k) {
        double w = weight(l, hull[k]) - weight(l, hull[k - 1]);
        if (w > 0)
          segments.push_back({l, w, cost(l, hull[k]) - cost(l, hull[k - 1])});
      }
    }
    std::stable_sort(segments.begin(), segments.end(),
                     [](const Segment &a, const Segment &b) {
                       return a.slope() < b.slope();
                     });
  }

  /// LP relaxation of the tensors from position k on with `capacity` bits
  /// beyond their narrowest choices: a lower bound on their cost.
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
    size_t n = items.size();
    if (k == n) {
      if (usedCost < bestCost) {
        bestCost = usedCost;
        best.resize(n);
        for (size_t l = 0; l < n; ++l)
          best[l] = choices[current[l]];
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
    for (size_t j = choices.size(); j-- > 0;) {
      double w = usedWeight + weight(l, j);
      if (w + suffixMinWeight[k + 1] > double(budget))
        continue;
      current[l] = j;
      search(k + 1, w, usedCost + cost(l, j));
    }
  }

  const std::vector<BitAllocationItem> &items;
  const std::vector<unsigned> &choices;
  int64_t budget;
  uint64_t nodeLimit, nodes = 0;
  bool aborted = false;
  std::vector<size_t> order, rank, current;
  std::vector<Segment> segments;
  std::vector<double> suffixMinWeight, suffixMinCost;
  std::vector<unsigned> best;
  double bestCost = std::numeric_limits<double>::infinity();
};
} // namespace

BitAllocation
mlir::act::allocateBitsExact(const std::vector<BitAllocationItem> &items,
                             std::vector<unsigned> choices, int64_t budget,
                             uint64_t nodeLimit) {
  normalize(choices);
  BitAllocation greedy = allocateBitsGreedy(items, choices, budget);
  if (!greedy.feasible)
    return greedy;
  return BranchAndBound(items, choices, budget, nodeLimit).solve(greedy);
}
