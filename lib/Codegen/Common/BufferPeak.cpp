//===- BufferPeak.cpp - the peak of a bufferized step's own buffers -------===//

#include "act/Codegen/Passes.h"
#include "act/Support/PrintLocation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace mlir::act {
#define GEN_PASS_DEF_ACTBUFFERPEAKPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

struct Peak {
  int64_t bytes = 0;
  int64_t dynamicBuffers = 0;
  Operation *at = nullptr;
  /// (bytes, where allocated), largest first.
  SmallVector<std::pair<int64_t, Location>> live;
  /// Bytes live while each op of the body runs, in order.
  std::vector<int64_t> timeline;
};

/// A static buffer's bytes (its elements' size from the data layout: index
/// elements, as the sparse storage's block offsets, are 64 bits, not a
/// bit width of their own); dynamic ones are counted apart.
int64_t getBytes(MemRefType type, const DataLayout &layout,
                 int64_t &dynamicBuffers) {
  if (!type.hasStaticShape()) {
    ++dynamicBuffers;
    return 0;
  }
  int64_t bits = int64_t(layout.getTypeSizeInBits(type.getElementType()));
  return (type.getNumElements() * bits + 7) / 8;
}

Peak findPeak(func::FuncOp func) {
  Peak peak;
  DataLayout layout = DataLayout::closest(func);
  std::map<Operation *, int64_t> live; // alloc -> bytes
  int64_t current = 0;
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      int64_t bytes = getBytes(alloc.getType(), layout, peak.dynamicBuffers);
      live[alloc] = bytes;
      current += bytes;
    } else if (auto realloc = dyn_cast<memref::ReallocOp>(op)) {
      // The source's buffer (through its views) becomes the result's.
      Value source = realloc.getSource();
      while (auto view = source.getDefiningOp<ViewLikeOpInterface>())
        source = view.getViewSource();
      auto it = live.find(source.getDefiningOp());
      if (it != live.end()) {
        current -= it->second;
        live.erase(it);
      }
      int64_t bytes = getBytes(realloc.getType(), layout, peak.dynamicBuffers);
      live[realloc] = bytes;
      current += bytes;
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      auto it = live.find(dealloc.getMemref().getDefiningOp());
      if (it != live.end()) {
        current -= it->second;
        live.erase(it);
      }
      peak.timeline.push_back(current);
      continue;
    }
    // Allocations inside the op's regions (loops' temporaries): all live
    // while it runs.
    int64_t nested = 0;
    for (Region &region : op.getRegions())
      region.walk([&](memref::AllocOp alloc) {
        nested += getBytes(alloc.getType(), layout, peak.dynamicBuffers);
      });
    peak.timeline.push_back(current + nested);
    if (current + nested <= peak.bytes)
      continue;
    peak.bytes = current + nested;
    peak.at = &op;
    peak.live.clear();
    for (auto &[alloc, bytes] : live)
      peak.live.push_back({bytes, alloc->getLoc()});
    llvm::stable_sort(peak.live,
                      [](auto &a, auto &b) { return a.first > b.first; });
  }
  return peak;
}

std::string where(Location loc) { return act::printLocation(loc); }

struct BufferPeakPass : act::impl::ActBufferPeakPassBase<BufferPeakPass> {
  using Base::Base;
  void runOnOperation() override {
    std::string error;
    std::unique_ptr<llvm::raw_fd_ostream> file;
    if (report != "-") {
      std::error_code ec;
      file = std::make_unique<llvm::raw_fd_ostream>(report, ec,
                                                    llvm::sys::fs::OF_Text);
      if (ec) {
        getOperation().emitError() << "act-buffer-peak: cannot write '"
                                   << report << "': " << ec.message();
        return signalPassFailure();
      }
    }
    llvm::raw_ostream &os = file ? *file : llvm::errs();
    bool json = StringRef(report).ends_with(".json");
    llvm::json::Array functions;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Peak peak = findPeak(func);
      if (!peak.at)
        continue;
      if (json) {
        llvm::json::Array live;
        for (auto &[bytes, loc] : peak.live)
          live.push_back(
              llvm::json::Object{{"bytes", bytes}, {"location", where(loc)}});
        functions.push_back(
            llvm::json::Object{{"function", func.getSymName()},
                               {"peak_bytes", peak.bytes},
                               {"dynamic_buffers", peak.dynamicBuffers},
                               {"op", peak.at->getName().getStringRef()},
                               {"location", where(peak.at->getLoc())},
                               {"live", std::move(live)},
                               {"timeline", llvm::json::Array(peak.timeline)}});
        continue;
      }
      os << "buffer peak of @" << func.getSymName() << ": " << peak.bytes
         << " bytes at " << peak.at->getName() << " ("
         << where(peak.at->getLoc()) << "), " << peak.live.size()
         << " buffers live; the largest:\n";
      for (auto &[bytes, loc] : ArrayRef(peak.live).take_front(5))
        os << llvm::formatv("  {0,12} bytes  allocated at {1}\n", bytes,
                            where(loc));
      if (peak.dynamicBuffers)
        os << "  (" << peak.dynamicBuffers
           << " buffers of dynamic size counted as 0)\n";
      os << "  (kernel scratch not included; arguments not counted)\n";
    }
    if (json)
      os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                       {"version", 1},
                                       {"functions", std::move(functions)}}))
         << "\n";
  }
};

} // namespace
