//===- MemoryReport.cpp - saved-activation and peak-memory report ---------===//
//
// Per training graph: the saved values with their sizes before and after
// encoding, totals, and the static peak-memory estimate with and without the
// encodings. As a table and as JSON (docs/MemoryReport.md).
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/MemoryEstimate.h"
#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/Transforms/Insertion.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/OutputFile.h"
#include "act/Support/PrintLocation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTMEMORYREPORTPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;
using namespace mlir::act;

namespace {

/// Version of the JSON report's schema (docs/MemoryReport.md).
constexpr int64_t kReportVersion = 1;

/// One row of the report.
struct Row {
  int64_t id;
  std::string producer, location, shape, dtype, encoding, status, why;
  /// The encoded size depends on the data (an estimate, #act.sparse).
  bool estimated = false;
  SmallVector<int64_t> dims;
  std::optional<int64_t> before, after;
};

/// A buffer live at the peak: what it holds and its bytes.
struct LiveBuffer {
  std::string what;
  int64_t bytes;
};

/// Where the peak is: the op, its location, what is live there.
struct PeakPoint {
  std::string op, location;
  std::vector<LiveBuffer> live;
  std::vector<int64_t> timeline;
};

struct GraphReport {
  std::string form, function, backward;
  PeakPoint peakPointBefore, peakPointAfter;
  std::vector<Row> rows;
  int64_t savedBefore = 0, savedAfter = 0, unknownSizes = 0;
  /// Values that could be encoded but are not (below min-bytes, excluded,
  /// or no encoding of the policy applies), and their bytes.
  int64_t unencoded = 0, unencodedBytes = 0;
  /// Saved values (rows that share an id count once).
  int64_t values = 0;
  PeakMemoryEstimate peakBefore, peakAfter;
};

template <typename T> std::string print(T thing) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << thing;
  return s;
}

Row makeRow(const SavedValue &saved) {
  Row row;
  row.id = saved.id;
  Operation *producer = saved.getProducer();
  row.producer = producer ? producer->getName().getStringRef().str()
                          : std::string("(argument)");
  row.location = printLocation(saved.origin.getLoc());
  row.status = stringifySaveStatus(saved.status).str();
  RankedTensorType type = saved.getTensorType();
  if (!type) {
    row.shape = row.dtype = "?";
    row.encoding = "none";
    return row;
  }
  row.dims.assign(type.getShape().begin(), type.getShape().end());
  row.shape = llvm::join(llvm::map_range(type.getShape(),
                                         [](int64_t d) {
                                           return ShapedType::isDynamic(d)
                                                      ? std::string("?")
                                                      : std::to_string(d);
                                         }),
                         "x");
  if (row.shape.empty())
    row.shape = "scalar";
  row.dtype = print(type.getElementType());
  row.before = getTensorBytes(type);
  if (auto encoded = dyn_cast<EncodedType>(saved.value.getType())) {
    row.encoding = print(encoded.getEncoding());
    if (std::optional<StorageLayout> layout =
            encoded.getEncoding().getStorageLayout(type)) {
      row.after = layout->getTotalBytes();
      row.estimated = layout->estimated;
    }
    // Why: what the analyses proved for the encodings they choose.
    Attribute encoding = encoded.getEncoding();
    row.why =
        isa<MaskEncodingAttr>(encoding)        ? "read only through sign tests"
        : isa<FewBitEncodingAttr>(encoding)    ? "read only through phi(x)"
        : isa<IndexEncodingAttr>(encoding)     ? "integer range proven"
        : isa<RecomputeEncodingAttr>(encoding) ? "recomputed in the backward"
        : isa<SparseEncodingAttr>(encoding) && hasStructuralZeros(saved.origin)
            ? "zeros made by a ReLU-like op"
            : "policy";
  } else {
    row.encoding = "none";
    row.after = row.before;
  }
  return row;
}

/// What a buffer live at the peak holds, by the value that defines it.
std::string describe(Value v, const DenseMap<Value, int64_t> &savedIds) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return "argument " + std::to_string(arg.getArgNumber());
  if (auto it = savedIds.find(v); it != savedIds.end())
    return "saved value " + std::to_string(it->second) + " (" +
           v.getDefiningOp()->getName().getStringRef().str() + ")";
  Operation *op = v.getDefiningOp();
  if (auto encode = dyn_cast<EncodeOp>(op))
    return "stored value " + std::to_string(encode.getId()) + " " +
           print(cast<EncodedType>(encode.getType()).getEncoding());
  if (auto decode = dyn_cast<DecodeOp>(op)) {
    if (auto encode = decode.getInput().getDefiningOp<EncodeOp>())
      return "decoded value " + std::to_string(encode.getId()) + " " +
             print(cast<EncodedType>(encode.getType()).getEncoding());
    return "decoded value";
  }
  return op->getName().getStringRef().str() + " at " +
         printLocation(op->getLoc());
}

PeakPoint makePeakPoint(const PeakMemoryEstimate &estimate,
                        const DenseMap<Value, int64_t> &savedIds) {
  PeakPoint point;
  if (estimate.peakOp) {
    point.op = estimate.peakOp->getName().getStringRef().str();
    point.location = printLocation(estimate.peakOp->getLoc());
  }
  for (auto [value, bytes] : estimate.liveAtPeak)
    point.live.push_back({describe(value, savedIds), bytes});
  point.timeline.assign(estimate.timeline.begin(), estimate.timeline.end());
  return point;
}

GraphReport makeReport(const TrainingGraph &graph) {
  GraphReport report;
  report.form = graph.form == GraphForm::Joint ? "joint" : "split";
  func::FuncOp forward = graph.forward, backward = graph.backward;
  report.function = forward.getSymName().str();
  if (backward)
    report.backward = backward.getSymName().str();
  // A value stored in two encodings (value and sign mask) has two rows;
  // its full-precision bytes count once.
  llvm::SmallDenseSet<int64_t> counted;
  for (const SavedValue &saved : graph.saved) {
    Row row = makeRow(saved);
    bool first = counted.insert(saved.id).second;
    if (row.before && row.after) {
      if (first)
        report.savedBefore += *row.before;
      report.savedAfter += *row.after;
    } else if (first) {
      ++report.unknownSizes;
    }
    if (first)
      ++report.values;
    if (saved.status == SaveStatus::Encodable && row.encoding == "none") {
      ++report.unencoded;
      report.unencodedBytes += row.before.value_or(0);
    }
    report.rows.push_back(std::move(row));
  }
  report.peakBefore = estimatePeakMemory(graph, /*withEncodings=*/false);
  report.peakAfter = estimatePeakMemory(graph, /*withEncodings=*/true);
  DenseMap<Value, int64_t> savedIds;
  for (const SavedValue &saved : graph.saved)
    savedIds[saved.origin] = saved.id;
  report.peakPointBefore = makePeakPoint(report.peakBefore, savedIds);
  report.peakPointAfter = makePeakPoint(report.peakAfter, savedIds);
  return report;
}

std::string bytesOrUnknown(std::optional<int64_t> bytes) {
  return bytes ? std::to_string(*bytes) : std::string("?");
}

double ratio(int64_t before, int64_t after) {
  return after ? double(before) / double(after) : 1.0;
}

void printTable(const GraphReport &report, raw_ostream &os) {
  os << "act memory report: @" << report.function;
  if (!report.backward.empty())
    os << " / @" << report.backward;
  os << " (" << report.form << " form)\n";
  constexpr const char *format =
      "{0,4}  {1,-24} {2,-16} {3,-5} {4,12} {5,12}  {6,-12} {7,-28} {8}"
      "{9}\n";
  os << llvm::formatv(format, "id", "producer", "shape", "dtype", "bytes",
                      "encoded", "status", "encoding", "location", "");
  bool anyEstimated = false;
  for (const Row &row : report.rows) {
    anyEstimated |= row.estimated;
    os << llvm::formatv(format, row.id, row.producer, row.shape, row.dtype,
                        bytesOrUnknown(row.before),
                        (row.estimated ? "~" : "") + bytesOrUnknown(row.after),
                        row.status, row.encoding, row.location,
                        row.why.empty() ? "" : "  (" + row.why + ")");
  }
  if (anyEstimated)
    os << "~: the encoded size depends on the data; estimated at the "
          "encoding's declared density (act-run measures the real peak)\n";
  os << llvm::formatv("saved activations: {0} values, {1} -> {2} bytes "
                      "({3:F2}x)",
                      report.values, report.savedBefore, report.savedAfter,
                      ratio(report.savedBefore, report.savedAfter));
  if (report.unknownSizes)
    os << ", " << report.unknownSizes << " of unknown size";
  os << "\n";
  // Many small tensors below min-bytes can add up: say what stays as is.
  if (report.unencoded)
    os << llvm::formatv("not encoded: {0} encodable values, {1} bytes "
                        "({2:F1}% of the saved bytes; below min-bytes, "
                        "excluded, or no encoding of the policy applies)\n",
                        report.unencoded, report.unencodedBytes,
                        report.savedBefore
                            ? 100.0 * report.unencodedBytes / report.savedBefore
                            : 0.0);
  os << llvm::formatv(
      "peak memory estimate: {0} -> {1} bytes ({2:F2}x)",
      report.peakBefore.peakBytes, report.peakAfter.peakBytes,
      ratio(report.peakBefore.peakBytes, report.peakAfter.peakBytes));
  if (report.peakAfter.unknownBuffers)
    os << ", " << report.peakAfter.unknownBuffers
       << " buffers of unknown size not counted";
  os << "\n";
  // Where the peak is, with the encodings, and the largest buffers there.
  const PeakPoint &peak = report.peakPointAfter;
  if (!peak.op.empty()) {
    os << "peak at " << peak.op << " (" << peak.location << "), "
       << peak.live.size() << " buffers live; the largest:\n";
    for (const LiveBuffer &buffer : ArrayRef(peak.live).take_front(5))
      os << llvm::formatv("  {0,12} bytes  {1}\n", buffer.bytes, buffer.what);
  }
}

void writeJson(ArrayRef<GraphReport> reports, raw_ostream &os) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  auto optional = [&](StringRef key, std::optional<int64_t> value) {
    if (value)
      json.attribute(key, *value);
    else
      json.attribute(key, nullptr);
  };
  json.object([&] {
    json.attribute("version", kReportVersion);
    json.attributeArray("graphs", [&] {
      for (const GraphReport &report : reports)
        json.object([&] {
          json.attribute("form", report.form);
          json.attribute("function", report.function);
          if (report.backward.empty())
            json.attribute("backward", nullptr);
          else
            json.attribute("backward", report.backward);
          json.attributeArray("saved", [&] {
            for (const Row &row : report.rows)
              json.object([&] {
                json.attribute("id", row.id);
                json.attribute("producer", row.producer);
                json.attribute("location", row.location);
                json.attributeArray("shape", [&] {
                  for (int64_t d : row.dims)
                    if (ShapedType::isDynamic(d))
                      json.value(nullptr);
                    else
                      json.value(d);
                });
                json.attribute("dtype", row.dtype);
                optional("bytes_before", row.before);
                optional("bytes_after", row.after);
                json.attribute("encoding", row.encoding);
                json.attribute("status", row.status);
                if (row.estimated)
                  json.attribute("bytes_after_estimated", true);
                if (!row.why.empty())
                  json.attribute("why", row.why);
              });
          });
          json.attributeObject("totals", [&] {
            json.attribute("saved_values", report.values);
            json.attribute("saved_bytes_before", report.savedBefore);
            json.attribute("saved_bytes_after", report.savedAfter);
            json.attribute("unknown_sizes", report.unknownSizes);
            json.attribute("unencoded_values", report.unencoded);
            json.attribute("unencoded_bytes", report.unencodedBytes);
            json.attribute("compression_ratio",
                           ratio(report.savedBefore, report.savedAfter));
          });
          json.attributeObject("peak_estimate", [&] {
            json.attribute("bytes_before", report.peakBefore.peakBytes);
            json.attribute("bytes_after", report.peakAfter.peakBytes);
            json.attribute("unknown_buffers", report.peakAfter.unknownBuffers);
            json.attribute("ratio", ratio(report.peakBefore.peakBytes,
                                          report.peakAfter.peakBytes));
            for (const auto &[key, peakPoint] :
                 {std::pair<StringRef, const PeakPoint *>{
                      "point_before", &report.peakPointBefore},
                  {"point_after", &report.peakPointAfter}})
              json.attributeObject(key, [&, point = peakPoint] {
                json.attribute("op", point->op);
                json.attribute("location", point->location);
                json.attributeArray("live", [&] {
                  for (const LiveBuffer &buffer : point->live)
                    json.object([&] {
                      json.attribute("what", buffer.what);
                      json.attribute("bytes", buffer.bytes);
                    });
                });
                json.attributeArray("timeline", [&] {
                  for (int64_t bytes : point->timeline)
                    json.value(bytes);
                });
              });
          });
        });
    });
  });
  os << "\n";
}

struct MemoryReportPass : act::impl::ActMemoryReportPassBase<MemoryReportPass> {
  using Base::Base;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    FailureOr<SmallVector<TrainingGraph>> graphs =
        analyzeTrainingGraphs(getOperation());
    if (failed(graphs))
      return signalPassFailure();
    std::vector<GraphReport> reports;
    for (const TrainingGraph &graph : *graphs)
      reports.push_back(makeReport(graph));

    if (failed(write(tableFile, [&](raw_ostream &os) {
          for (const GraphReport &report : reports)
            printTable(report, os);
        })))
      return signalPassFailure();
    if (!jsonFile.empty() && failed(write(jsonFile, [&](raw_ostream &os) {
          writeJson(reports, os);
        })))
      return signalPassFailure();
  }

  LogicalResult write(StringRef path,
                      function_ref<void(raw_ostream &)> writer) {
    return writeOutput(getOperation().getLoc(), "act-memory-report", path,
                       writer);
  }
};

} // namespace
