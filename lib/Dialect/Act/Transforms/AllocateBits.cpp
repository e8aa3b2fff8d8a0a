//===- AllocateBits.cpp - bits per saved tensor from sensitivities --------===//
//
// GACT's adaptive compression (papers/gact.txt, Sec. 4): the profiles give
// each saved tensor's sensitivity c_l per encoding family it was measured
// with (#act.quant, #act.division: gradient variance per unit S(b);
// #act.fewbit: the squared gradient error of its table per unit of the
// table's error L(b), a bias the allocator weighs like variance); the budget
// is an average number of bits per element; every tensor's options are its
// families at each allowed bit width (and f32); BitAllocation.h solves the
// knapsack; Insertion.h places the chosen encodings.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/BitAllocation.h"
#include "act/Analysis/Profile.h"
#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/OptionLoc.h"
#include "act/Support/OutputFile.h"
#include "act/runtime/Sensitivity.h"
#include "mlir/AsmParser/AsmParser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace mlir::act {
#define GEN_PASS_DEF_ACTALLOCATEBITSPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;
using namespace mlir::act;
namespace json = llvm::json;

namespace {

/// One way to store a tensor.
struct Choice {
  /// Null: kept in f32.
  EncodingAttrInterface encoding;
  unsigned bits;
  /// c_l of the encoding's family (0 for f32).
  double sensitivity;
  int64_t weight;
  double cost;
};

/// One allocated tensor.
struct Entry {
  const SavedValue *saved;
  int64_t elements;
  /// In a profile; otherwise it has default bits and no sensitivity.
  bool measured;
  /// Read only through sign tests: stored as a 1-bit mask, no choice.
  bool signOnly = false;
  /// The options (one, fixed, when not measured or sign-only).
  std::vector<Choice> options;
  size_t exact = 0, greedy = 0, chosen = 0;
};

/// A family's short name in the table ("quant", "division").
static StringRef getFamily(EncodingAttrInterface encoding) {
  StringRef name = encoding ? encoding.getAbstractAttribute().getName() : "";
  return name.consume_front("act.") ? name : StringRef("f32");
}

/// "4" for #act.quant (GACT's bits), "division:2", "32" for f32.
static std::string getLabel(const Choice &o) {
  if (!o.encoding || isa<QuantEncodingAttr>(o.encoding))
    return std::to_string(o.bits);
  return (getFamily(o.encoding) + ":" + Twine(o.bits)).str();
}

/// One measurement of a tensor: its family and sensitivity.
struct Measurement {
  EncodingAttrInterface family;
  double sensitivity;
  StringRef file;
};

struct AllocateBitsPass
    : mlir::act::impl::ActAllocateBitsPassBase<AllocateBitsPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  /// The options of a tensor measured with few-bit codes (`measured`, the
  /// profile's table): its tables at the allowed widths up to 4 bits, costed
  /// c * L(b). Fails when this pass's tables are not the measured ones.
  LogicalResult addFewBitOptions(TrainingGraph &graph, const SavedValue &saved,
                                 const Measurement &m,
                                 ArrayRef<unsigned> choices, Entry &e);

  FewBitOptions fewBitOptions;
  /// The loss-head option's encoding (null: none).
  EncodingAttrInterface lossHeadEncoding;
  /// The values recompute-cost recomputes (in the budget at 0 bits).
  SmallVector<int64_t> recomputedIds;
  LogicalResult allocate(TrainingGraph &graph,
                         ArrayRef<std::pair<std::string, Profile>> profiles);
  /// Whether runtime-bits places `e` as #act.runtime_quant: measured, and
  /// its choice #act.quant or f32.
  static bool isRuntime(const Entry &e) {
    const auto &c = e.options[e.chosen];
    return e.measured && !e.signOnly &&
           (!c.encoding || isa<QuantEncodingAttr>(c.encoding));
  }
  /// #act.runtime_quant over the allowed widths it has, planned at `bits`.
  EncodingAttrInterface getRuntimeEncoding(unsigned bits) {
    static constexpr unsigned kDefaultWidths[] = {1, 2, 4, 8, 32};
    SmallVector<unsigned> widths;
    for (unsigned b : bitChoices.empty() ? ArrayRef<unsigned>(kDefaultWidths)
                                         : ArrayRef<unsigned>(bitChoices))
      if ((b == 1 || b == 2 || b == 4 || b == 8 || b == 32) &&
          !llvm::is_contained(widths, b))
        widths.push_back(b);
    llvm::sort(widths);
    return RuntimeQuantEncodingAttr::get(&getContext(), widths, bits, group,
                                         Rounding::Stochastic, stats);
  }
  void writeReport(TrainingGraph &graph, ArrayRef<Entry> entries,
                   const KnapsackSolution &exact,
                   const KnapsackSolution &greedy, int64_t budget,
                   double predicted, std::optional<double> gradientVariance);
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
  if (profileFiles.empty())
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
  if (!(recomputeCost >= 0.0) || !std::isfinite(double(recomputeCost)))
    return error("recompute-cost")
           << "recompute-cost must be a non-negative number, got "
           << double(recomputeCost);
  FailureOr<FewBitOptions> options =
      getFewBitOptions(context, "act-allocate-bits", fewBitRange, fewBitSigma);
  if (failed(options))
    return failure();
  fewBitOptions = *options;
  FailureOr<EncodingAttrInterface> head =
      parseValueEncoding(context, "act-allocate-bits", "loss-head", lossHead);
  if (failed(head))
    return failure();
  lossHeadEncoding = *head;
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
  FailureOr<SmallVector<TrainingGraph>> graphs = analyzeTrainingGraphs(module);
  if (failed(graphs))
    return signalPassFailure();
  std::string names;
  for (TrainingGraph &g : *graphs)
    names += (names.empty() ? "@" : ", @") + g.forward.getSymName().str();
  // Every profile measures the same graph (with other encodings).
  TrainingGraph *graph = nullptr;
  SmallVector<std::pair<std::string, Profile>> profiles;
  for (const std::string &file : profileFiles) {
    llvm::Expected<Profile> profile = readProfile(file);
    if (!profile) {
      emitError(module.getLoc(), "act-allocate-bits: ")
          << llvm::toString(profile.takeError());
      return signalPassFailure();
    }
    TrainingGraph *measured = nullptr;
    for (TrainingGraph &g : *graphs)
      if (g.forward.getSymName() == profile->function)
        measured = &g;
    if (!measured || (graph && graph != measured)) {
      emitError(module.getLoc(), "act-allocate-bits: profile '")
          << file << "' was measured on @" << profile->function << ", which "
          << (measured ? "is not the graph of the other profiles"
                       : "this module does not have")
          << " (training graphs: " << (names.empty() ? "none" : names) << ")";
      return signalPassFailure();
    }
    graph = measured;
    std::string fingerprint = getGraphFingerprint(*graph);
    if (fingerprint != profile->fingerprint) {
      emitError(graph->forward.getLoc(), "act-allocate-bits: profile '")
          << file << "' was measured on a different graph (fingerprint "
          << profile->fingerprint << ", this graph's " << fingerprint
          << "): its saved values differ; measure this graph with act-run "
             "--sensitivity";
      return signalPassFailure();
    }
    profiles.push_back({file, std::move(*profile)});
  }
  if (failed(allocate(*graph, profiles)))
    return signalPassFailure();
}

LogicalResult
AllocateBitsPass::allocate(TrainingGraph &graph,
                           ArrayRef<std::pair<std::string, Profile>> profiles) {
  MLIRContext *ctx = &getContext();
  recomputedIds.clear();
  std::vector<unsigned> choices(bitChoices.begin(), bitChoices.end());
  if (choices.empty())
    choices = {1, 2, 4, 8, 32};
  llvm::sort(choices);
  choices.erase(llvm::unique(choices), choices.end());

  // Each tensor's measurements: one per encoding family.
  DenseMap<int64_t, SmallVector<Measurement>> measurements;
  for (const auto &[file, profile] : profiles) {
    for (const ProfileTensor &t : profile.tensors) {
      EncodingAttrInterface family;
      if (t.encoding.empty()) {
        family = QuantEncodingAttr::get(ctx, t.bits, group,
                                        Rounding::Stochastic, stats);
      } else {
        Attribute parsed = parseAttribute(t.encoding, ctx);
        family = dyn_cast_or_null<EncodingAttrInterface>(parsed);
        if (!family ||
            (!family.getQuantizerBits() && !isa<FewBitEncodingAttr>(family)))
          return emitError(graph.forward.getLoc(),
                           "act-allocate-bits: profile '")
                 << file << "' measured tensor " << t.id << " with '"
                 << t.encoding
                 << "', not an act encoding with a quantizer (#act.quant, "
                    "#act.division) or few-bit codes (#act.fewbit)";
        if (isa<FewBitEncodingAttr>(family) && recomputeCost > 0)
          return emitError(graph.forward.getLoc(),
                           "act-allocate-bits: profile '")
                 << file << "' measures few-bit codes, which do not combine "
                 << "with recompute-cost = " << double(recomputeCost)
                 << " (a recomputed value may read the tensor the codes "
                    "would replace); give one or the other";
        // The `group` and `stats` options apply to #act.quant.
        if (auto quant = dyn_cast<QuantEncodingAttr>(parsed))
          family = QuantEncodingAttr::get(ctx, quant.getBits(), group,
                                          Rounding::Stochastic, stats);
      }
      SmallVector<Measurement> &list = measurements[t.id];
      for (const Measurement &m : list)
        if (getFamily(m.family) == getFamily(family))
          return emitError(graph.forward.getLoc(), "act-allocate-bits: tensor ")
                 << t.id << " is measured with #act." << getFamily(family)
                 << " twice (profiles '" << m.file << "' and '" << file << "')";
      list.push_back({family, t.sensitivity, file});
    }
  }
  auto lookup = [&](int64_t id) -> const ProfileTensor * {
    for (const auto &[file, profile] : profiles)
      if (const ProfileTensor *t = profile.lookup(id))
        return t;
    return nullptr;
  };

  // The tensors to allocate: floating-point candidates of static size;
  // loss-head values only when measured.
  std::vector<Entry> entries;
  int64_t totalElements = 0;
  // Values the placement re-derives in the backward (reshapes of a value
  // stored anyway) store nothing: outside the budget, as in a uniform
  // encoding's bytes. Those recompute-cost adds are in it at 0 bits: the
  // budget stays the stored step's.
  RecomputePolicy recompute{double(recomputeCost), {}};
  llvm::DenseSet<Value> recomputed, reshaped;
  for (auto &[saved, slice] : planRecomputation(graph, {}, recompute))
    recomputed.insert(saved->value);
  if (recomputeCost > 0)
    for (auto &[saved, slice] : planRecomputation(graph))
      reshaped.insert(saved->value);
  else
    reshaped = recomputed;
  int64_t recomputedElements = 0;
  for (const SavedValue &saved : graph.saved) {
    bool isRecomputed = recomputed.contains(saved.value);
    if (isRecomputed && reshaped.contains(saved.value))
      continue;
    // (A recomputed value is not in the profile: the measuring step
    // recomputes it too.)
    const ProfileTensor *measured = isRecomputed ? nullptr : lookup(saved.id);
    if (!isEncodingCandidate(saved, /*lossHead=*/measured != nullptr, minBytes))
      continue;
    RankedTensorType type = saved.getTensorType();
    if (!isa<FloatType>(type.getElementType()) || !type.hasStaticShape())
      continue;
    if (isRecomputed) {
      recomputedElements += type.getNumElements();
      recomputedIds.push_back(saved.id);
      continue;
    }
    Entry e{&saved, type.getNumElements(), measured != nullptr,
            /*signOnly=*/false, /*options=*/{}};
    totalElements += e.elements;
    auto quantAt = [&](unsigned bits) -> EncodingAttrInterface {
      if (bits >= 32)
        return nullptr;
      return QuantEncodingAttr::get(ctx, bits, group, Rounding::Stochastic,
                                    stats);
    };
    if (isReadOnlyThroughSignTests(graph, saved)) {
      // A 1-bit mask, exact for what the backward reads.
      e.measured = false;
      e.signOnly = true;
      e.options.push_back({quantAt(1), 1, 0.0, e.elements, 0.0});
      entries.push_back(e);
      continue;
    }
    if (measured && measured->elements != e.elements)
      return emitError(saved.value.getLoc(), "act-allocate-bits: profile ")
             << "gives tensor " << saved.id << " " << measured->elements
             << " elements, the graph " << e.elements;
    if (!measured) {
      InFlightDiagnostic w =
          emitWarning(saved.value.getLoc(), "act-allocate-bits: saved value ")
          << saved.id << " is not in profile";
      for (auto [i, p] : llvm::enumerate(profiles))
        w << (i ? ", '" : " '") << p.first << "'";
      w << "; it gets default-bits = " << unsigned(defaultBits);
      e.options.push_back({quantAt(defaultBits), defaultBits, 0.0,
                           int64_t(defaultBits) * e.elements, 0.0});
      entries.push_back(e);
      continue;
    }
    // Every measured family at every allowed width; f32 at 32. A width a
    // family does not allow is not an option of it.
    for (unsigned b : choices) {
      if (b >= 32) {
        // (The table shows the first family's sensitivity.)
        e.options.push_back({nullptr, 32,
                             measurements[saved.id].front().sensitivity,
                             32 * e.elements, 0.0});
        continue;
      }
      for (const Measurement &m : measurements[saved.id]) {
        if (isa<FewBitEncodingAttr>(m.family))
          continue;
        EncodingAttrInterface encoding = m.family.withQuantizerBits(b);
        if (!encoding)
          continue;
        // The budget counts element data (codes, DIVISION's averages), not
        // per-group side data: GACT's b D_l for #act.quant.
        int64_t weight =
            isa<QuantEncodingAttr>(encoding)
                ? int64_t(b) * e.elements
                : encoding.getStorageLayout(type)->payloadBytes * 8;
        e.options.push_back(
            {encoding, b, m.sensitivity, weight,
             m.sensitivity * ::act::rt::quantVarianceFactor(b)});
      }
    }
    for (const Measurement &m : measurements[saved.id])
      if (isa<FewBitEncodingAttr>(m.family) &&
          failed(addFewBitOptions(graph, saved, m, choices, e)))
        return failure();
    if (e.options.empty())
      return emitError(saved.value.getLoc(), "act-allocate-bits: tensor ")
             << saved.id << " has no option at bits "
             << llvm::join(
                    llvm::map_range(
                        choices, [](unsigned b) { return std::to_string(b); }),
                    ",");
    entries.push_back(e);
  }

  // The budget, less what the defaults and masks take.
  // More than every tensor's widest option takes cannot be spent: the
  // budget is capped there, so a huge average-bits (1e308) neither
  // overflows int64 nor changes the answer.
  int64_t widest = 0;
  for (const Entry &e : entries) {
    int64_t most = 0;
    for (const Choice &o : e.options)
      most = std::max(most, o.weight);
    if (llvm::AddOverflow(widest, most, widest))
      widest = std::numeric_limits<int64_t>::max();
  }
  const double wanted =
      std::floor(averageBits * double(totalElements + recomputedElements));
  const int64_t totalBudget =
      wanted >= double(widest) ? widest : int64_t(wanted);
  int64_t budget = totalBudget;
  std::vector<std::vector<KnapsackOption>> items;
  int64_t fixedBits = 0, fixedTensors = 0;
  for (const Entry &e : entries) {
    if (e.measured) {
      std::vector<KnapsackOption> &options = items.emplace_back();
      for (const Choice &o : e.options)
        options.push_back({o.weight, o.cost});
    } else {
      budget -= e.options.front().weight;
      fixedBits += e.options.front().weight;
      ++fixedTensors;
    }
  }
  KnapsackSolution exact = solveKnapsackExact(items, budget);
  KnapsackSolution greedy = solveKnapsackGreedy(items, budget);
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
           << choices.front() << " bit(s) need more than the rest";
    else
      diag << "every tensor at " << choices.front()
           << " bit(s) already needs more";
    return diag;
  }
  if (!exact.provenOptimal)
    emitWarning(graph.forward.getLoc(), "act-allocate-bits: the exact search "
                                        "stopped after ")
        << exact.nodes << " nodes; the allocation is the best found, not "
        << "proven optimal";
  const KnapsackSolution &chosen = solver == BitSolver::Greedy ? greedy : exact;
  for (size_t i = 0, k = 0; i < entries.size(); ++i) {
    if (!entries[i].measured)
      continue;
    entries[i].exact = exact.choice[k];
    entries[i].greedy = greedy.choice[k];
    entries[i].chosen = chosen.choice[k];
    ++k;
  }

  // The table and GACT's variance alert.
  double predicted = chosen.objective;
  std::string table;
  llvm::raw_string_ostream os(table);
  bool capped = wanted > double(widest);
  os << llvm::formatv(
      "act bit allocation: @{0}, {1} tensors, average {2} "
      "bits (budget {3} bits{4}), solver {5}\n",
      graph.forward.getSymName(), entries.size(),
      capped ? llvm::formatv("{0:e2}", double(averageBits)).str()
             : llvm::formatv("{0:f2}", double(averageBits)).str(),
      totalBudget, capped ? ": every tensor's widest option" : "",
      getBitSolverName(solver));
  os << llvm::formatv("{0,6} {1,10} {2,13} {3,6} {4,7} {5,13}\n", "id",
                      "elements", "sensitivity", "exact", "greedy", "cost");
  for (const Entry &e : entries) {
    const Choice &c = e.options[e.chosen];
    if (e.measured)
      os << llvm::formatv("{0,6} {1,10} {2,13:e} {3,6} {4,7} {5,13:e}\n",
                          e.saved->id, e.elements, c.sensitivity,
                          getLabel(e.options[e.exact]),
                          getLabel(e.options[e.greedy]), c.cost);
    else
      os << llvm::formatv("{0,6} {1,10} {2,13} {3,6} {4,7} {5,13}\n",
                          e.saved->id, e.elements,
                          e.signOnly ? "(sign only)" : "(default)", c.bits,
                          c.bits, e.signOnly ? "0 (mask)" : "?");
  }
  os << llvm::formatv(
      "objective sum c*S(b): exact {0:e} ({1}, {2} nodes), "
      "greedy {3:e} ({4:f3}x exact)\n",
      exact.objective, exact.provenOptimal ? "proven optimal" : "not proven",
      exact.nodes, greedy.objective,
      exact.objective > 0 ? greedy.objective / exact.objective : 1.0);
  if (!recomputedIds.empty()) {
    os << "recomputed in the backward (recompute-cost "
       << llvm::formatv("{0:f1}", double(recomputeCost))
       << "; 0 bits, in the budget):";
    for (int64_t id : recomputedIds)
      os << " " << id;
    os << "\n";
  }
  std::optional<double> gradientVariance;
  for (const auto &[file, profile] : profiles)
    if (!gradientVariance)
      gradientVariance = profile.gradientVariance;
  std::optional<double> ratio;
  if (gradientVariance)
    ratio = predicted / *gradientVariance;
  if (ratio)
    os << llvm::formatv("predicted compression variance {0:e}, gradient "
                        "variance {1:e}: {2:f1}%\n",
                        predicted, *gradientVariance, 100 * *ratio);
  else
    os << llvm::formatv("predicted compression variance {0:e} (the profile "
                        "has no gradient variance: measure more than one "
                        "mini-batch for the alert)\n",
                        predicted);
  if (failed(writeOutput(graph.forward.getLoc(), "act-allocate-bits", tableFile,
                         [&](raw_ostream &out) { out << table; })))
    return failure();
  if (ratio && *ratio > 0.1) {
    std::vector<const Entry *> top;
    for (const Entry &e : entries)
      if (e.measured)
        top.push_back(&e);
    auto contribution = [](const Entry *e) {
      return e->options[e->chosen].cost;
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
                         predicted, 100 * *ratio, *gradientVariance)
               .str();
    for (size_t i = 0; i < top.size() && i < 3; ++i) {
      const Choice &c = top[i]->options[top[i]->chosen];
      w << (i ? ", " : " ") << "tensor " << top[i]->saved->id << " ("
        << (isa_and_nonnull<QuantEncodingAttr>(c.encoding) || !c.encoding
                ? ""
                : (getFamily(c.encoding) + " ").str())
        << c.bits << " bits, "
        << llvm::formatv("{0:f0}%", 100 * contribution(top[i]) /
                                        std::max(predicted, 1e-300))
               .str()
        << ")";
    }
    w << "; raise average-bits";
  }
  if (!reportFile.empty())
    writeReport(graph, entries, exact, greedy, totalBudget, predicted,
                gradientVariance);

  // Place the encodings.
  DenseMap<int64_t, EncodingAttrInterface> encodingOf;
  for (const Entry &e : entries)
    encodingOf[e.saved->id] = runtimeBits && isRuntime(e)
                                  ? getRuntimeEncoding(e.options[e.chosen].bits)
                                  : e.options[e.chosen].encoding;
  insertEncodings(
      graph,
      [&](const SavedValue &saved) -> EncodingAttrInterface {
        // Integers proven small (max-pool indices): narrowed, losslessly,
        // outside the budget (which counts float tensors).
        if (IndexEncodingAttr narrow = getIndexEncoding(saved);
            narrow && isEncodingCandidate(saved, /*lossHead=*/false, minBytes))
          return narrow;
        // (A sign-only value becomes its mask under any lossy encoding.)
        if (auto chosen = encodingOf.find(saved.id); chosen != encodingOf.end())
          return chosen->second;
        // The loss head, where the profile does not measure it.
        return getLossHeadEncoding(saved, lossHeadEncoding, minBytes);
      },
      {}, recompute);
  return success();
}

LogicalResult AllocateBitsPass::addFewBitOptions(TrainingGraph &graph,
                                                 const SavedValue &saved,
                                                 const Measurement &m,
                                                 ArrayRef<unsigned> choices,
                                                 Entry &e) {
  auto measured = cast<FewBitEncodingAttr>(m.family);
  // Few-bit widths up to 4 (at 8 bits the dynamic program is 16x longer
  // and quantization is as good). One dynamic program gives every width's
  // table (element b - 1): its best 2^b pieces do not depend on the widest.
  unsigned widest = measured.getBits();
  for (unsigned b : choices)
    if (b <= 4)
      widest = std::max(widest, b);
  SmallVector<FewBitTable> tables =
      getFewBitTables(graph, saved, FewBitPolicy{widest, fewBitOptions});
  if (tables.empty())
    return emitError(saved.value.getLoc(), "act-allocate-bits: profile '")
           << m.file << "' measured tensor " << saved.id
           << " with few-bit codes, but the backward does not read it only "
              "through an activation's derivative phi(x)";
  auto same = [](ArrayRef<float> a, ArrayRef<float> b) {
    return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto p) {
             auto [x, y] = p;
             return std::abs(x - y) <= 2e-6f * std::max(1.0f, std::abs(x));
           });
  };
  // The measured table again: the sensitivity is per unit of its error.
  const FewBitTable &table = tables[measured.getBits() - 1];
  if (!same(table.encoding.getBoundaries().asArrayRef(),
            measured.getBoundaries().asArrayRef()) ||
      !same(table.encoding.getValues().asArrayRef(),
            measured.getValues().asArrayRef()))
    return emitError(saved.value.getLoc(), "act-allocate-bits: profile '")
           << m.file << "' measured tensor " << saved.id
           << " with a few-bit table other than the one this pass computes "
              "at "
           << measured.getBits()
           << " bits: measure and allocate with the same few-bit-range and "
              "few-bit-sigma";
  if (!(table.error > 0))
    return emitError(saved.value.getLoc(), "act-allocate-bits: tensor ")
           << saved.id
           << "'s few-bit table is exact (error 0): nothing to "
              "weigh its measured error against";
  for (unsigned b : choices) {
    if (b > 4)
      continue;
    const FewBitTable &t = tables[b - 1];
    int64_t weight = cast<EncodingAttrInterface>(t.encoding)
                         .getStorageLayout(saved.getTensorType())
                         ->payloadBytes *
                     8;
    e.options.push_back(
        {t.encoding, b, m.sensitivity, weight, m.sensitivity * t.error});
  }
  return success();
}

void AllocateBitsPass::writeReport(TrainingGraph &graph,
                                   ArrayRef<Entry> entries,
                                   const KnapsackSolution &exact,
                                   const KnapsackSolution &greedy,
                                   int64_t budget, double predicted,
                                   std::optional<double> gradientVariance) {
  json::Array tensors;
  auto print = [](const Choice &o) -> std::string {
    if (!o.encoding)
      return "f32";
    std::string text;
    llvm::raw_string_ostream os(text);
    o.encoding.print(os);
    return text;
  };
  for (const Entry &e : entries) {
    const Choice &c = e.options[e.chosen];
    tensors.push_back(json::Object{
        {"id", e.saved->id},
        {"elements", e.elements},
        {"sensitivity",
         e.measured ? json::Value(c.sensitivity) : json::Value(nullptr)},
        // Its share of the predicted compression variance, c * S(bits).
        {"variance", e.measured ? json::Value(c.cost) : json::Value(nullptr)},
        {"sign_only", e.signOnly},
        {"bits", int64_t(c.bits)},
        {"runtime", runtimeBits && isRuntime(e)},
        {"encoding", e.signOnly ? "mask" : print(c)},
        {"bits_exact", int64_t(e.options[e.exact].bits)},
        {"encoding_exact", e.signOnly ? "mask" : print(e.options[e.exact])},
        {"bits_greedy", int64_t(e.options[e.greedy].bits)},
        {"encoding_greedy", e.signOnly ? "mask" : print(e.options[e.greedy])}});
  }
  json::Object root{
      {"version", 1},
      {"function", graph.forward.getSymName()},
      {"average_bits", double(averageBits)},
      {"budget_bits", budget},
      {"solver", getBitSolverName(solver)},
      {"exact", json::Object{{"objective", exact.objective},
                             {"used_bits", exact.usedWeight},
                             {"proven_optimal", exact.provenOptimal},
                             {"nodes", int64_t(exact.nodes)}}},
      {"greedy", json::Object{{"objective", greedy.objective},
                              {"used_bits", greedy.usedWeight}}},
      {"predicted_variance", predicted},
      {"recompute_cost", double(recomputeCost)},
      {"recomputed", json::Array(recomputedIds)},
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
