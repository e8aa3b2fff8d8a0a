//===- ActGpuKernels.cpp - encode/decode kernels for the GPU target -------===//
//
// LoweringTarget::GPU: the whole tiles of a packed encoding and the whole
// 16-byte pieces of a byte-coded one are encoded and decoded by gpu.launch
// kernels written for memory bandwidth; the ragged rest stays with the
// generic lowering (PackedCodes.cpp; byte-aligned codes in ActLowering.cpp),
// which computes the same bits.
//
// The kernels sit in the tensor program as buffers: their inputs through
// bufferization.to_buffer (read only), their outputs new buffers returned
// through bufferization.to_tensor (restrict writable), so one-shot
// bufferization, deallocation and gpu-kernel-outlining take them as they
// are.
//
// Packed layout (docs/Encodings.md): a tile of 16 * perWord elements fills
// 16 words, element j in word j % 16 at lane j / 16. Thread (tile t, quarter
// q) owns words 4q .. 4q + 3 of tile t: lane l of those words is elements
// t * tile + 16 l + 4q .. + 3, one 16-byte load, and its four words are one
// 16-byte store. Consecutive threads touch consecutive 16-byte pieces of
// each lane (coalesced), and every input element is loaded once. A group's
// statistics are combined over the threads that hold it (a clustered
// gpu.subgroup_reduce, butterfly shuffles); a group of 16 or 32 tiles is one
// warp whose threads own 2 or 4 quarters each.
//
// A decode into byte-sized elements (a mask's i1) takes one thread per tile
// and lane instead, which stores its lane's 16 elements at once.
//
// LoweringTarget::GPUEmulated builds the same kernels for the CPU (launches
// become loops in convert-act-to-linalg; a thread recomputes its cluster's
// parts instead of shuffling), so the CPU tests check them bit for bit.
//
//===----------------------------------------------------------------------===//

#include "LoweringSupport.h"

#include "act/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

using namespace mlir::act;
using namespace mlir::act::detail;

Value mlir::act::detail::toF32(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type();
  if (x.getType() == f32)
    return x;
  if (x.getType().getIntOrFloatBitWidth() < 32)
    return arith::ExtFOp::create(b, loc, f32, x);
  return arith::TruncFOp::create(b, loc, f32, x);
}

Value mlir::act::detail::fromF32(OpBuilder &b, Location loc, Value x,
                                 Type type) {
  if (type == x.getType())
    return x;
  if (type.getIntOrFloatBitWidth() < 32)
    return arith::TruncFOp::create(b, loc, type, x);
  return arith::ExtFOp::create(b, loc, type, x);
}

bool mlir::act::detail::canEncodeOnGpu(PackedFormat f, int64_t group) {
  int64_t tile = f.tileElements();
  if (!group)
    return true;
  if (group % 16 != 0)
    return false;
  if (tile % group == 0)
    return true;
  // A group of whole tiles is 4 * (group / tile) quarters of a tile: up to
  // 32 threads with a quarter each, up to 4 quarters per thread of a warp
  // (at most 128 elements per thread: registers).
  return group % tile == 0 && llvm::isPowerOf2_64(group / tile) &&
         group / tile <= 32;
}

Value mlir::act::detail::readBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  strides.back() = 1;
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  auto memrefType =
      MemRefType::get(type.getShape(), type.getElementType(), layout);
  return bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                           /*read_only=*/true);
}

Value mlir::act::detail::allocRows(OpBuilder &b, Location loc, Value rows,
                                   ArrayRef<int64_t> inner, Type type) {
  SmallVector<Value> dyn;
  SmallVector<int64_t> shape = rowsShape(rows, inner, dyn);
  // 64-byte aligned: the kernels' 16-byte accesses apply whatever the
  // allocator's default.
  return memref::AllocOp::create(b, loc, MemRefType::get(shape, type), dyn,
                                 b.getI64IntegerAttr(64));
}

Value mlir::act::detail::asTensor(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
      buffer, /*restrict=*/true, /*writable=*/true);
}

namespace {

/// Whether `buffer` (1-D) starts on a 16-byte boundary.
Value isAligned16(OpBuilder &b, Location loc, Value buffer) {
  IndexMath ix{b, loc};
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value offset =
      memref::ExtractStridedMetadataOp::create(b, loc, buffer).getOffset();
  int64_t bytes =
      elementBytes(cast<MemRefType>(buffer.getType()).getElementType());
  Value address = ix.add(base, ix.mul(offset, bytes));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               ix.rem(address, ix.c(16)), ix.c(0));
}

/// `count` consecutive elements of `buffer` (1-D) from `at`: one vector
/// load (16-byte aligned pieces) when `vectorized`, else element by element.
SmallVector<Value> loadRun(OpBuilder &b, Location loc, Value buffer, Value at,
                           int64_t count, bool vectorized) {
  IndexMath ix{b, loc};
  Type type = cast<MemRefType>(buffer.getType()).getElementType();
  SmallVector<Value> elements;
  if (!vectorized) {
    for (int64_t i = 0; i < count; ++i)
      elements.push_back(
          memref::LoadOp::create(b, loc, buffer, ix.add(at, ix.c(i))));
    return elements;
  }
  auto vectorType = VectorType::get({count}, type);
  Value v = vector::LoadOp::create(
      b, loc, vectorType, buffer, ValueRange{at}, /*nontemporal=*/false,
      llvm::MaybeAlign(std::min<int64_t>(16, count * elementBytes(type))));
  for (int64_t i = 0; i < count; ++i)
    elements.push_back(vector::ExtractOp::create(b, loc, v, i));
  return elements;
}

/// Stores `elements` at `at` in `buffer` (1-D): one vector store when
/// `vectorized`, else one by one. (A vector of i1 is stored one byte per
/// element: act-byte-i1-vectors rewrites its llvm.store.)
void storeRun(OpBuilder &b, Location loc, ValueRange elements, Value buffer,
              Value at, bool vectorized) {
  IndexMath ix{b, loc};
  Type type = cast<MemRefType>(buffer.getType()).getElementType();
  if (!vectorized) {
    for (auto [i, e] : llvm::enumerate(elements))
      memref::StoreOp::create(b, loc, e, buffer, ix.add(at, ix.c(i)));
    return;
  }
  auto vectorType = VectorType::get({int64_t(elements.size())}, type);
  Value v = vector::FromElementsOp::create(b, loc, vectorType, elements);
  vector::StoreOp::create(
      b, loc, v, buffer, ValueRange{at}, /*nontemporal=*/false,
      llvm::MaybeAlign(std::min<int64_t>(16, int64_t(elements.size()) *
                                                 elementBytes(type))));
}

/// Builds `then` under `cond` (no results).
void buildIf(OpBuilder &b, Location loc, Value cond,
             function_ref<void(OpBuilder &, Location)> then) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  then(b, loc);
}

/// The kernel body, built by `body(b, loc, thread, valid, vectorized)`.
using KernelBody = function_ref<void(OpBuilder &, Location, Value thread,
                                     Value valid, bool vectorized)>;

/// A gpu.launch of `threads` threads (index) in blocks of `blockSize`. Each
/// thread gets its global index (0 for the threads of the last block past
/// `threads`, which load in bounds and store nothing: every thread of a
/// warp reaches the shuffles) and whether it is real. The body is built
/// twice: with 16-byte vector accesses when every buffer in `aligned` starts
/// on a 16-byte boundary, element by element otherwise (a uniform branch).
void buildLaunch(OpBuilder &b, Location loc, Value threads, int64_t blockSize,
                 ValueRange aligned, KernelBody body) {
  IndexMath ix{b, loc};
  auto launchIn = [&](OpBuilder &b, Location loc) {
    IndexMath ix{b, loc};
    Value one = ix.c(1);
    auto launch = gpu::LaunchOp::create(b, loc, ix.ceilDiv(threads, blockSize),
                                        one, one, ix.c(blockSize), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    IndexMath kx{b, loc};
    Value id = kx.add(kx.mul(launch.getBlockIds().x, blockSize),
                      launch.getThreadIds().x);
    Value valid = kx.ult(id, threads);
    Value thread = kx.select(valid, id, kx.c(0));
    Value allAligned;
    for (Value buffer : aligned) {
      Value a = isAligned16(b, loc, buffer);
      allAligned =
          allAligned ? arith::AndIOp::create(b, loc, allAligned, a) : a;
    }
    auto ifOp = scf::IfOp::create(b, loc, allAligned, /*withElseRegion=*/true);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body(b, loc, thread, valid, /*vectorized=*/true);
    b.setInsertionPointToStart(ifOp.elseBlock());
    body(b, loc, thread, valid, /*vectorized=*/false);
    b.setInsertionPointToEnd(&launch.getBody().front());
    gpu::TerminatorOp::create(b, loc);
  };
  // No launch without threads (an empty grid is a launch error).
  if (staticOr(threads) > 0) {
    launchIn(b, loc);
    return;
  }
  buildIf(b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, threads,
                                ix.c(0)),
          launchIn);
}

gpu::AllReduceOperation toGpuReduction(arith::AtomicRMWKind kind) {
  switch (kind) {
  case arith::AtomicRMWKind::minnumf:
    return gpu::AllReduceOperation::MINNUMF;
  case arith::AtomicRMWKind::maxnumf:
    return gpu::AllReduceOperation::MAXNUMF;
  case arith::AtomicRMWKind::minimumf:
    return gpu::AllReduceOperation::MINIMUMF;
  case arith::AtomicRMWKind::maximumf:
    return gpu::AllReduceOperation::MAXIMUMF;
  case arith::AtomicRMWKind::addf:
    return gpu::AllReduceOperation::ADD;
  case arith::AtomicRMWKind::mulf:
    return gpu::AllReduceOperation::MUL;
  default:
    llvm_unreachable("group statistics combine floats");
  }
}

} // namespace

void mlir::act::detail::buildGpuPackedEncode(
    OpBuilder &b, Location loc, Value flat, PackedFormat f, Value tiles,
    Value words, Value groups, const LoweringOptions &options,
    const GroupStats *stats, std::optional<RandomKey> random,
    const PackedCodes &codes, Value &payload, Value &meta) {
  IndexMath ix{b, loc};
  const int64_t k = f.perWord, tile = f.tileElements();
  const int64_t group = stats ? stats->group : 0;
  // A "quarter" is four consecutive words of a tile (4 per tile). Lanes of
  // a quarter that share a group, groups a quarter touches, tiles a group
  // spans; the quarters a thread owns (1, or for groups of more than 8
  // tiles as many as make the group one warp) and the threads that hold a
  // group: the cluster its statistics are reduced over.
  const int64_t lanesPerGroup = group ? std::min<int64_t>(k, group / 16) : k;
  const int64_t groupsPerThread = k / lanesPerGroup;
  const int64_t tilesPerGroup = group > tile ? group / tile : 1;
  const int64_t quarters = std::max<int64_t>(1, 4 * tilesPerGroup / 32);
  const uint32_t cluster = 4 * tilesPerGroup / quarters;

  Value in = readBuffer(b, loc, flat);
  Value payloadBuffer = allocRows(b, loc, words, {}, b.getI32Type());
  Value metaBuffer;
  if (stats)
    metaBuffer =
        allocRows(b, loc, groups, {stats->metaColumns}, stats->metaElement);

  // The quarters of thread `thread`: with one, the thread's own index; with
  // r > 1, warp w's lane i owns quarters w * 32r + j * 32 + i (j < r), so a
  // warp's loads stay consecutive and the warp holds one group.
  auto quartersOf = [&](OpBuilder &b, Location loc, Value thread) {
    IndexMath ix{b, loc};
    SmallVector<Value> result;
    Value warp = ix.div(thread, 32), lane = ix.rem(thread, ix.c(32));
    for (int64_t j = 0; j < quarters; ++j)
      result.push_back(quarters == 1 ? thread
                                     : ix.add(ix.mul(warp, 32 * quarters),
                                              ix.add(ix.c(32 * j), lane)));
    return result;
  };
  // x[l][w] of quarter `quarter`: lane l of its word 4q + w.
  auto loadQuarter = [&](OpBuilder &b, Location loc, Value quarter,
                         bool vectorized) {
    IndexMath ix{b, loc};
    Value t = ix.div(quarter, 4), q = ix.rem(quarter, ix.c(4));
    Value first = ix.add(ix.mul(t, tile), ix.mul(q, 4));
    SmallVector<SmallVector<Value>> x;
    for (int64_t l = 0; l < k; ++l)
      x.push_back(
          loadRun(b, loc, in, ix.add(first, ix.c(16 * l)), 4, vectorized));
    return x;
  };
  using Elements = SmallVector<SmallVector<SmallVector<Value>>>; // [j][l][w]
  auto loadThread = [&](OpBuilder &b, Location loc, Value thread,
                        bool vectorized) {
    Elements x;
    for (Value quarter : quartersOf(b, loc, thread))
      x.push_back(loadQuarter(b, loc, quarter, vectorized));
    return x;
  };
  // A thread's part of the statistics of its gi-th group: each reduction
  // over the thread's elements of that group.
  auto threadPart = [&](OpBuilder &b, Location loc, const Elements &x,
                        int64_t gi) {
    SmallVector<Value> part;
    for (arith::AtomicRMWKind kind : stats->reductions) {
      Value acc;
      for (const auto &lanes : x)
        for (int64_t l = gi * lanesPerGroup; l < (gi + 1) * lanesPerGroup; ++l)
          for (Value e : lanes[l]) {
            Value v = countedElement(b, loc, kind, toF32(b, loc, e));
            acc = acc ? arith::getReductionOp(kind, b, loc, acc, v) : v;
          }
      part.push_back(acc);
    }
    return part;
  };
  const bool emulated = options.target == LoweringTarget::GPUEmulated;

  auto body = [&](OpBuilder &b, Location loc, Value thread, Value valid,
                  bool vectorized) {
    IndexMath ix{b, loc};
    SmallVector<Value> mine = quartersOf(b, loc, thread);
    Elements x = loadThread(b, loc, thread, vectorized);
    // The first quarter's tile and quarter in the tile.
    Value t = ix.div(mine[0], 4), q = ix.rem(mine[0], ix.c(4));

    SmallVector<SmallVector<Value>> perGroup(groupsPerThread);
    if (stats) {
      for (int64_t gi = 0; gi < groupsPerThread; ++gi) {
        SmallVector<Value> reduced = threadPart(b, loc, x, gi);
        if (!emulated) {
          // Across the group's threads: `cluster` consecutive lanes of a
          // warp (butterfly shuffles once lowered).
          for (auto [kind, value] : llvm::zip(stats->reductions, reduced))
            value = gpu::SubgroupReduceOp::create(
                b, loc, value, toGpuReduction(kind), /*uniform=*/true, cluster);
        } else {
          // The same parts, recomputed from the other threads' elements.
          Value base = ix.sub(thread, ix.rem(thread, ix.c(cluster)));
          for (int64_t m = 0; m < int64_t(cluster); ++m) {
            Value other = ix.add(base, ix.c(m));
            auto part =
                threadPart(b, loc, loadThread(b, loc, other, vectorized), gi);
            for (auto [kind, value, p] :
                 llvm::zip(stats->reductions, reduced, part))
              value =
                  m == 0 ? p : arith::getReductionOp(kind, b, loc, value, p);
          }
        }
        SmallVector<Value> row;
        stats->finish(b, loc, reduced, perGroup[gi], row);
        // The group's first thread stores its metadata row.
        Value g = group <= tile ? ix.add(ix.mul(t, tile / group), ix.c(gi))
                                : ix.div(t, tilesPerGroup);
        Value leader = arith::AndIOp::create(
            b, loc, valid,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, q,
                                  ix.c(0)));
        if (tilesPerGroup > 1)
          leader = arith::AndIOp::create(
              b, loc, leader,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                    ix.rem(t, ix.c(tilesPerGroup)), ix.c(0)));
        buildIf(b, loc, leader, [&](OpBuilder &b, Location loc) {
          for (auto [column, v] : llvm::enumerate(row))
            memref::StoreOp::create(
                b, loc, storeStat(b, loc, v, stats->metaElement), metaBuffer,
                ValueRange{g, indexConst(b, loc, column)});
        });
      }
    }

    // Each quarter's four words, from registers.
    SmallVector<SmallVector<Value>> packed;
    for (auto [j, quarter] : llvm::enumerate(mine)) {
      Value tj = ix.div(quarter, 4), qj = ix.rem(quarter, ix.c(4));
      auto &words = packed.emplace_back();
      for (int64_t w = 0; w < 4; ++w) {
        LaneRandom rnd(b, loc, random, k, tj, ix.add(ix.mul(qj, 4), ix.c(w)));
        SmallVector<Value> lanes;
        for (int64_t l = 0; l < k; ++l) {
          ValueRange groupValues;
          if (stats)
            groupValues = perGroup[l / lanesPerGroup];
          lanes.push_back(codes.code(b, loc, x[j][l][w], groupValues,
                                     [&] { return rnd.get(b, loc, l); }));
        }
        words.push_back(packLanes(b, loc, lanes, f, codes.bias));
      }
    }
    buildIf(b, loc, valid, [&](OpBuilder &b, Location loc) {
      IndexMath ix{b, loc};
      for (auto [quarter, words] : llvm::zip(mine, packed))
        storeRun(b, loc, words, payloadBuffer, ix.mul(quarter, 4), vectorized);
    });
  };
  buildLaunch(b, loc, ix.div(ix.mul(tiles, 4), quarters), options.gpuBlockSize,
              {in, payloadBuffer}, body);
  payload = asTensor(b, loc, payloadBuffer);
  if (stats)
    meta = asTensor(b, loc, metaBuffer);
}

Value mlir::act::detail::buildGpuPackedDecode(
    OpBuilder &b, Location loc, Value payload, PackedFormat f, Value tiles,
    Value n, Type elementType, Value meta, int64_t group,
    const LoweringOptions &options, ElementValue value) {
  IndexMath ix{b, loc};
  const int64_t k = f.perWord, tile = f.tileElements();
  const int64_t mask = (int64_t(1) << f.bits) - 1;
  Value words = readBuffer(b, loc, payload);
  Value metaBuffer = meta ? readBuffer(b, loc, meta) : Value();
  int64_t columns =
      meta ? cast<RankedTensorType>(meta.getType()).getDimSize(1) : 0;
  Value out = allocRows(b, loc, n, {}, elementType);
  // Group `g`'s metadata row.
  auto loadRow = [&](OpBuilder &b, Location loc, Value g) {
    IndexMath ix{b, loc};
    SmallVector<Value> row;
    for (int64_t column = 0; column < columns; ++column)
      row.push_back(memref::LoadOp::create(b, loc, metaBuffer,
                                           ValueRange{g, ix.c(column)}));
    return row;
  };
  // The elements of one lane of `w`'s words: the codes at bit `shift` (an
  // i32; none: bit 0), decoded with `row`.
  auto decodeLane = [&](OpBuilder &b, Location loc, ArrayRef<Value> w,
                        Value shift, ArrayRef<Value> row) {
    SmallVector<Value> values;
    for (Value word : w) {
      Value c = shift ? arith::ShRUIOp::create(b, loc, word, shift) : word;
      c = arith::AndIOp::create(b, loc, c, i32Const(b, loc, mask));
      values.push_back(value(b, loc, c, row));
    }
    return values;
  };

  // Byte-sized elements (a mask's i1): one thread per tile and lane, which
  // reads the tile's 16 words and stores the lane's 16 consecutive
  // elements as one 16-byte vector, so a warp's store is contiguous. (Four
  // threads per tile, each storing its 4 elements of every lane, measured
  // 0.08 of a device copy on an H100: one byte store per element.)
  if (elementBytes(elementType) == 1) {
    auto body = [&](OpBuilder &b, Location loc, Value thread, Value valid,
                    bool vectorized) {
      IndexMath ix{b, loc};
      Value t = ix.div(thread, k), l = ix.rem(thread, ix.c(k));
      SmallVector<Value> w =
          loadRun(b, loc, words, ix.mul(t, 16), 16, vectorized);
      Value first = ix.add(ix.mul(t, tile), ix.mul(l, 16));
      SmallVector<Value> row;
      if (meta)
        row = loadRow(b, loc, ix.div(first, group));
      Value shift = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                               ix.mul(l, int64_t(f.bits)));
      SmallVector<Value> values = decodeLane(b, loc, w, shift, row);
      buildIf(b, loc, valid, [&](OpBuilder &b, Location loc) {
        storeRun(b, loc, values, out, first, vectorized);
      });
    };
    buildLaunch(b, loc, ix.mul(tiles, k), options.gpuBlockSize, {words, out},
                body);
    return asTensor(b, loc, out);
  }

  auto body = [&](OpBuilder &b, Location loc, Value thread, Value valid,
                  bool vectorized) {
    IndexMath ix{b, loc};
    Value t = ix.div(thread, 4), q = ix.rem(thread, ix.c(4));
    SmallVector<Value> w = loadRun(
        b, loc, words, ix.add(ix.mul(t, 16), ix.mul(q, 4)), 4, vectorized);
    Value first = ix.add(ix.mul(t, tile), ix.mul(q, 4));
    SmallVector<SmallVector<Value>> lanes;
    for (int64_t l = 0; l < k; ++l) {
      // The lane's 16 elements lie in one group (group % 16 == 0); lanes of
      // one group read the same row (the same loads, merged by CSE).
      SmallVector<Value> row;
      if (meta) {
        Value g = group % tile == 0 ? ix.div(t, group / tile)
                  : tile % group == 0
                      ? ix.add(ix.mul(t, tile / group), ix.c(16 * l / group))
                      : ix.div(ix.add(ix.mul(t, tile), ix.c(16 * l)), group);
        row = loadRow(b, loc, g);
      }
      lanes.push_back(decodeLane(
          b, loc, w, l == 0 ? Value() : i32Const(b, loc, l * int64_t(f.bits)),
          row));
    }
    buildIf(b, loc, valid, [&](OpBuilder &b, Location loc) {
      IndexMath ix{b, loc};
      for (int64_t l = 0; l < k; ++l)
        storeRun(b, loc, lanes[l], out, ix.add(first, ix.c(16 * l)),
                 vectorized);
    });
  };
  buildLaunch(b, loc, ix.mul(tiles, 4), options.gpuBlockSize, {words, out},
              body);
  return asTensor(b, loc, out);
}

Value mlir::act::detail::buildGpuElementwise(
    OpBuilder &b, Location loc, Value in, Value n, Value count,
    int64_t perThread, Type elementType, const LoweringOptions &options,
    function_ref<Value(OpBuilder &, Location, Value)> fn) {
  IndexMath ix{b, loc};
  Value inBuffer = readBuffer(b, loc, in);
  Value out = allocRows(b, loc, n, {}, elementType);
  auto body = [&](OpBuilder &b, Location loc, Value thread, Value valid,
                  bool vectorized) {
    IndexMath ix{b, loc};
    Value first = ix.mul(thread, perThread);
    SmallVector<Value> values;
    for (Value x : loadRun(b, loc, inBuffer, first, perThread, vectorized))
      values.push_back(fn(b, loc, x));
    buildIf(b, loc, valid, [&](OpBuilder &b, Location loc) {
      storeRun(b, loc, values, out, first, vectorized);
    });
  };
  buildLaunch(b, loc, ix.div(count, perThread), options.gpuBlockSize,
              {inBuffer, out}, body);
  return asTensor(b, loc, out);
}
