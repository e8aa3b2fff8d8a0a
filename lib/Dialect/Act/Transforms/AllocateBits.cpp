//===- AllocateBits.cpp - bits per saved tensor from sensitivities --------===//
//
// GACT's adaptive compression (papers/gact.txt, Sec. 4): the profile gives
// each saved tensor's sensitivity c_l; the budget is an average number of
// bits per element; BitAllocation.h solves the knapsack; Insertion.h places
// the chosen encodings.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/BitAllocation.h"
#include "act/Analysis/Profile.h"
#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/OptionLoc.h"
#include "act/runtime/Sensitivity.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

namespace mlir::act {
#define GEN_PASS_DEF_ACTALLOCATEBITSPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;
using namespace mlir::act;
namespace json = llvm::json;

namespace {

/// One allocated tensor.
struct Entry {
  const SavedValue *saved;
  int64_t elements;
  /// In the profile; otherwise it has default bits and no sensitivity.
  bool measured;
  double sensitivity;
  unsigned exact = 0, greedy = 0, chosen = 0;
  /// Read only through sign tests: stored as a 1-bit mask, no choice.
  bool signOnly = false;
};

struct AllocateBitsPass
    : mlir::act::impl::ActAllocateBitsPassBase<AllocateBitsPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  LogicalResult allocate(TrainingGraph &graph, const Profile &profile);
  void writeReport(TrainingGraph &graph, ArrayRef<Entry> entries,
                   const BitAllocation &exact, const BitAllocation &greedy,
                   int64_t budget, double predicted,
                   std::optional<double> gradientVariance);
};

} // namespace

static bool isAllowedBits(unsigned b) {
  return b == 1 || b == 2 || b == 4 || b == 8 || b == 32;
}

/// The options are the command line's: checked once, before any IR is
/// seen, so the pass never builds an encoding its verifier would reject.
LogicalResult AllocateBitsPass::initialize(MLIRContext *context) {
  auto error = [&](StringRef option) {
    return emitError(getOptionLoc(context, "act-allocate-bits", option))
           << "act-allocate-bits: ";
  };
  if (profileFile.empty())
    return error("profile")
           << "give the sensitivity profile (profile=FILE, written "
              "by act-run --sensitivity)";
  for (unsigned b : bitChoices)
    if (!isAllowedBits(b))
      return error("bits")
             << "bits " << b
             << " is not one of 1, 2, 4, 8 (#act.quant) or 32 (f32)";
  if (!isAllowedBits(defaultBits))
    return error("default-bits") << "default-bits " << unsigned(defaultBits)
                                 << " is not one of 1, 2, 4, 8, 32";
  if (!(averageBits > 0) || !std::isfinite(double(averageBits)))
    return error("average-bits")
           << "average-bits must be positive and finite, got "
           << double(averageBits);
  if (group <= 0)
    return error("group") << "group must be positive, got " << int64_t(group);
  if (minBytes < 0)
    return error("min-bytes")
           << "min-bytes must not be negative, got " << int64_t(minBytes);
  return success();
}

void AllocateBitsPass::runOnOperation() {
  // Diagnostics go to locations, not ops: an error on the module (or the
  // step) would print all of it as a note.
  ModuleOp module = getOperation();
  WalkResult encoded = module.walk([](EncodeOp op) {
    emitError(op.getLoc(),
              "act-allocate-bits: the module already has encodings; run "
              "it on the graph before act-insert-encode-decode");
    return WalkResult::interrupt();
  });
  if (encoded.wasInterrupted())
    return signalPassFailure();
  llvm::Expected<Profile> profile = readProfile(profileFile);
  if (!profile) {
    emitError(module.getLoc(), "act-allocate-bits: ")
        << llvm::toString(profile.takeError());
    return signalPassFailure();
  }
  FailureOr<SmallVector<TrainingGraph>> graphs = analyzeTrainingGraphs(module);
  if (failed(graphs))
    return signalPassFailure();
  TrainingGraph *graph = nullptr;
  std::string names;
  for (TrainingGraph &g : *graphs) {
    names += (names.empty() ? "@" : ", @") + g.forward.getSymName().str();
    if (g.forward.getSymName() == profile->function)
      graph = &g;
  }
  if (!graph) {
    emitError(module.getLoc(), "act-allocate-bits: profile '")
        << profileFile << "' was measured on @" << profile->function
        << ", which this module does not have (training graphs: "
        << (names.empty() ? "none" : names) << ")";
    return signalPassFailure();
  }
  std::string fingerprint = getGraphFingerprint(*graph);
  if (fingerprint != profile->fingerprint) {
    emitError(graph->forward.getLoc(), "act-allocate-bits: profile '")
        << profileFile << "' was measured on a different graph (fingerprint "
        << profile->fingerprint << ", this graph's " << fingerprint
        << "): its saved values differ; measure this graph with act-run "
           "--sensitivity";
    return signalPassFailure();
  }
  if (failed(allocate(*graph, *profile)))
    return signalPassFailure();
}

LogicalResult AllocateBitsPass::allocate(TrainingGraph &graph,
                                         const Profile &profile) {
  std::vector<unsigned> choices(bitChoices.begin(), bitChoices.end());
  if (choices.empty())
    choices = {1, 2, 4, 8, 32};

  // The tensors to allocate: floating-point candidates of static size;
  // loss-head values only when measured.
  std::vector<Entry> entries;
  int64_t totalElements = 0;
  for (const SavedValue &saved : graph.saved) {
    const ProfileTensor *measured = profile.lookup(saved.id);
    if (!isEncodingCandidate(saved, /*lossHead=*/measured != nullptr, minBytes))
      continue;
    RankedTensorType type = saved.getTensorType();
    if (!isa<FloatType>(type.getElementType()) || !type.hasStaticShape())
      continue;
    Entry e{&saved, type.getNumElements(), measured != nullptr,
            measured ? measured->sensitivity : 0.0};
    if (isReadOnlyThroughSignTests(graph, saved)) {
      // A 1-bit mask, exact for what the backward reads.
      e.measured = false;
      e.signOnly = true;
      e.exact = e.greedy = e.chosen = 1;
      totalElements += e.elements;
      entries.push_back(e);
      continue;
    }
    if (measured && measured->elements != e.elements)
      return emitError(saved.value.getLoc(), "act-allocate-bits: profile '")
             << profileFile << "' gives tensor " << saved.id << " "
             << measured->elements << " elements, the graph " << e.elements;
    if (!measured) {
      emitWarning(saved.value.getLoc(), "act-allocate-bits: saved value ")
          << saved.id << " is not in profile '" << profileFile
          << "'; it gets default-bits = " << unsigned(defaultBits);
      e.exact = e.greedy = e.chosen = defaultBits;
    }
    totalElements += e.elements;
    entries.push_back(e);
  }

  // The budget, less what the defaults and masks take.
  const int64_t totalBudget =
      int64_t(std::floor(averageBits * double(totalElements)));
  int64_t budget = totalBudget;
  std::vector<BitAllocationItem> items;
  int64_t fixedBits = 0, fixedTensors = 0;
  for (const Entry &e : entries) {
    if (e.measured) {
      items.push_back({e.sensitivity, e.elements});
    } else {
      budget -= int64_t(e.chosen) * e.elements;
      fixedBits += int64_t(e.chosen) * e.elements;
      ++fixedTensors;
    }
  }
  BitAllocation exact = allocateBitsExact(items, choices, budget);
  BitAllocation greedy = allocateBitsGreedy(items, choices, budget);
  if (!exact.feasible) {
    // Say what takes the budget: the tensors whose bits are fixed (masks,
    // tensors the profile lacks at default-bits) come first.
    InFlightDiagnostic diag =
        emitError(graph.forward.getLoc(), "act-allocate-bits: average-bits = ")
        << double(averageBits) << " cannot be met: ";
    if (fixedTensors)
      diag << fixedTensors << " tensor(s) with fixed bits (masks, or not in "
           << "the profile at default-bits = " << unsigned(defaultBits)
           << ") take " << fixedBits << " of the " << totalBudget
           << " bits, and the " << items.size() << " measured tensor(s) at "
           << *std::min_element(choices.begin(), choices.end())
           << " bit(s) need more than the rest";
    else
      diag << "every tensor at "
           << *std::min_element(choices.begin(), choices.end())
           << " bit(s) already needs more";
    return diag;
  }
  if (!exact.provenOptimal)
    emitWarning(graph.forward.getLoc(), "act-allocate-bits: the exact search "
                                        "stopped after ")
        << exact.nodes << " nodes; the allocation is the best found, not "
        << "proven optimal";
  const BitAllocation &chosen = solver == BitSolver::Greedy ? greedy : exact;
  for (size_t i = 0, k = 0; i < entries.size(); ++i) {
    if (!entries[i].measured)
      continue;
    entries[i].exact = exact.bits[k];
    entries[i].greedy = greedy.bits[k];
    entries[i].chosen = chosen.bits[k];
    ++k;
  }

  // The table and GACT's variance alert.
  double predicted = chosen.objective;
  auto &os = llvm::errs();
  os << llvm::formatv("act bit allocation: @{0}, {1} tensors, average {2:f2} "
                      "bits (budget {3} bits), solver {4}\n",
                      graph.forward.getSymName(), entries.size(),
                      double(averageBits), totalBudget,
                      getBitSolverName(solver));
  os << llvm::formatv("{0,6} {1,10} {2,13} {3,6} {4,7} {5,13}\n", "id",
                      "elements", "sensitivity", "exact", "greedy",
                      "c*S(bits)");
  for (const Entry &e : entries) {
    if (e.measured)
      os << llvm::formatv(
          "{0,6} {1,10} {2,13:e} {3,6} {4,7} {5,13:e}\n", e.saved->id,
          e.elements, e.sensitivity, e.exact, e.greedy,
          e.sensitivity * ::act::rt::quantVarianceFactor(e.chosen));
    else
      os << llvm::formatv("{0,6} {1,10} {2,13} {3,6} {4,7} {5,13}\n",
                          e.saved->id, e.elements,
                          e.signOnly ? "(sign only)" : "(default)", e.exact,
                          e.greedy, e.signOnly ? "0 (mask)" : "?");
  }
  os << llvm::formatv(
      "objective sum c*S(b): exact {0:e} ({1}, {2} nodes), "
      "greedy {3:e} ({4:f3}x exact)\n",
      exact.objective, exact.provenOptimal ? "proven optimal" : "not proven",
      exact.nodes, greedy.objective,
      exact.objective > 0 ? greedy.objective / exact.objective : 1.0);
  if (profile.gradientVariance) {
    double ratio = predicted / *profile.gradientVariance;
    os << llvm::formatv("predicted compression variance {0:e}, gradient "
                        "variance {1:e}: {2:f1}%\n",
                        predicted, *profile.gradientVariance, 100 * ratio);
    if (ratio > 0.1) {
      std::vector<const Entry *> top;
      for (const Entry &e : entries)
        if (e.measured)
          top.push_back(&e);
      auto contribution = [](const Entry *e) {
        return e->sensitivity * ::act::rt::quantVarianceFactor(e->chosen);
      };
      llvm::sort(top, [&](const Entry *a, const Entry *b) {
        return contribution(a) > contribution(b);
      });
      InFlightDiagnostic w =
          emitWarning(graph.forward.getLoc())
          << llvm::formatv("act: predicted compression variance "
                           "{0:e} is {1:f1}% of the gradient "
                           "variance {2:e} (GACT's limit: 10%); most "
                           "from",
                           predicted, 100 * ratio, *profile.gradientVariance)
                 .str();
      for (size_t i = 0; i < top.size() && i < 3; ++i)
        w << (i ? ", " : " ") << "tensor " << top[i]->saved->id << " ("
          << top[i]->chosen << " bits, "
          << llvm::formatv("{0:f0}%", 100 * contribution(top[i]) /
                                          std::max(predicted, 1e-300))
                 .str()
          << ")";
      w << "; raise average-bits";
    }
  } else {
    os << llvm::formatv("predicted compression variance {0:e} (the profile "
                        "has no gradient variance: measure more than one "
                        "mini-batch for the alert)\n",
                        predicted);
  }
  if (!reportFile.empty())
    writeReport(graph, entries, exact, greedy, totalBudget, predicted,
                profile.gradientVariance);

  // Place the encodings.
  MLIRContext *ctx = &getContext();
  DenseMap<int64_t, unsigned> bitsOf;
  for (const Entry &e : entries)
    bitsOf[e.saved->id] = e.chosen;
  insertEncodings(graph, [&](const SavedValue &saved) -> EncodingAttrInterface {
    // Integers proven small (max-pool indices): narrowed, losslessly, outside
    // the budget (which counts float tensors).
    if (IndexEncodingAttr narrow = getIndexEncoding(saved);
        narrow && isEncodingCandidate(saved, /*lossHead=*/false, minBytes))
      return narrow;
    auto it = bitsOf.find(saved.id);
    if (it == bitsOf.end() || it->second >= 32)
      return nullptr;
    // (A sign-only value becomes its mask under any lossy encoding.)
    return QuantEncodingAttr::get(ctx, it->second, group, Rounding::Stochastic);
  });
  return success();
}

void AllocateBitsPass::writeReport(TrainingGraph &graph,
                                   ArrayRef<Entry> entries,
                                   const BitAllocation &exact,
                                   const BitAllocation &greedy, int64_t budget,
                                   double predicted,
                                   std::optional<double> gradientVariance) {
  json::Array tensors;
  for (const Entry &e : entries)
    tensors.push_back(
        json::Object{{"id", e.saved->id},
                     {"elements", e.elements},
                     {"sensitivity", e.measured ? json::Value(e.sensitivity)
                                                : json::Value(nullptr)},
                     {"sign_only", e.signOnly},
                     {"bits", int64_t(e.chosen)},
                     {"bits_exact", int64_t(e.exact)},
                     {"bits_greedy", int64_t(e.greedy)}});
  json::Object root{
      {"version", 1},
      {"function", graph.forward.getSymName()},
      {"average_bits", double(averageBits)},
      {"budget_bits", budget},
      {"solver", getBitSolverName(solver)},
      {"exact", json::Object{{"objective", exact.objective},
                             {"used_bits", exact.usedBits},
                             {"proven_optimal", exact.provenOptimal},
                             {"nodes", int64_t(exact.nodes)}}},
      {"greedy", json::Object{{"objective", greedy.objective},
                              {"used_bits", greedy.usedBits}}},
      {"predicted_variance", predicted},
      {"gradient_variance", gradientVariance ? json::Value(*gradientVariance)
                                             : json::Value(nullptr)},
      {"tensors", std::move(tensors)}};
  std::error_code ec;
  llvm::raw_fd_ostream os(reportFile, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    emitError(graph.forward.getLoc(), "act-allocate-bits: cannot write '")
        << reportFile << "': " << ec.message();
    return signalPassFailure();
  }
  os << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
}
