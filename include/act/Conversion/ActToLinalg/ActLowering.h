//===- ActLowering.h - building blocks of encoding lowerings ----*- C++ -*-===//
//
// Helpers the encodings' lowering models use (EncodingLoweringAttrInterface::
// buildEncode / buildDecode, Encoding<Name>.cpp) to linalg, tensor and arith
// on tensors, with the storage of docs/Encodings.md made explicit: 32-bit
// payload words holding `perWord` elements of `bits` bits each, over the
// row-major flattened element index. The same IR runs on CPU and GPU.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_CONVERSION_ACTTOLINALG_ACTLOWERING_H
#define ACT_CONVERSION_ACTTOLINALG_ACTLOWERING_H

#include "act/Dialect/Act/IR/EncodingLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <optional>

namespace mlir::act {

/// Philox4x32-10 (Salmon et al., SC'11) keyed by (lo32(seed), hi32(seed))
/// with counter (lo32(counter), hi32(counter), lo32(id), hi32(id)); returns
/// the four 32-bit words of the output block. `counter`, `seed`: i64.
SmallVector<Value, 4> buildPhilox4(OpBuilder &b, Location loc, Value counter,
                                   Value seed, int64_t id);
/// A float format narrower than f32 (docs/Encodings.md): `expBits` exponent
/// and `manBits` mantissa bits, a sign; `ieee` formats reserve the top
/// exponent for inf/NaN, the others (e4m3fn) only the all-ones code for NaN.
struct MiniFloat {
  unsigned expBits, manBits;
  bool ieee;
};
/// Code (i32, low 1 + expBits + manBits bits) of f32 `x`: round to nearest
/// even, gradual underflow, magnitudes above the largest finite value
/// (infinities included) clamp to it, NaN stays NaN.
Value buildMiniFloatEncode(OpBuilder &b, Location loc, Value x, MiniFloat f);
/// f32 value of a code produced by buildMiniFloatEncode.
Value buildMiniFloatDecode(OpBuilder &b, Location loc, Value code, MiniFloat f);
/// Largest finite value of `f`.
double getMaxFinite(MiniFloat f);

/// Marks a linalg op built by a lowering as a small static kernel that
/// act-cpu-pipeline turns into vector code (act-vectorize).
constexpr llvm::StringLiteral kVectorizeAttr = "act.vectorize";

/// Byte-aligned codes (8, 16 or 32 bits per element): the payload is
/// tensor<n x iB>, element i at position i: the same bytes as the 32-bit
/// little-endian words of docs/Encodings.md, without the tail padding. Encode
/// and decode are one element-wise generic each, which vectorizes (on the
/// GPU: a thread per 16 bytes of the narrower side, vector loads and
/// stores). `code` maps an element to its code (an i32 in the low `bits`).
Value buildByteEncode(OpBuilder &b, Location loc, Value input, unsigned bits,
                      const LoweringOptions &options,
                      function_ref<Value(OpBuilder &, Location, Value x)> code);
/// `value` maps a code (i32) to the decoded element.
Value buildByteDecode(
    OpBuilder &b, Location loc, Value payload, RankedTensorType type,
    ValueRange dynamicSizes, const LoweringOptions &options,
    function_ref<Value(OpBuilder &, Location, Value code)> value);

/// Reshapes a 1-D tensor to `type`'s shape (element type kept).
Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type,
                ValueRange dynamicSizes);

/// Codes of `bits` bits packed `perWord` to a 32-bit word, in tiles
/// (docs/Encodings.md, "Packed layout"): a tile of 16 * perWord consecutive
/// elements fills 16 consecutive words, its element j in word j % 16 at bit
/// field (lane) j / 16, so each lane of a tile is 16 consecutive elements
/// (one vector on the CPU, coalesced on the GPU). The last, partial tile of
/// k elements is ceil(k / perWord) words wide (element j in word j % width,
/// lane j / width): the payload is ceil(n / perWord) words.
struct PackedFormat {
  unsigned bits, perWord;
  /// Elements per full tile.
  int64_t tileElements() const { return 16 * int64_t(perWord); }
};

/// Groups of consecutive elements that share values (quant: min and scale).
/// `build` gets k groups' elements as tensor<k x group x T> whose first
/// `valid` elements (an index; null when all are real) count, and returns
/// one tensor<k x f32> per value the codes read (`perGroup`) and the rows
/// stored as metadata (tensor<k x m x metaElement>), written into `metaRows`
/// when it
/// is set on entry (a destination), else into a new tensor. With
/// `vectorize`, its linalg ops are small static kernels to mark with
/// kVectorizeAttr. `finite`, when not null, may be set to an i1 that is true
/// when the rows' elements and statistics are plain (quant: every element
/// finite, no range overflowing): then PackedCodes::finiteCode applies.
struct GroupStats {
  int64_t group;
  int64_t metaColumns;
  std::function<void(OpBuilder &, Location, Value rows, Value valid,
                     bool vectorize, SmallVectorImpl<Value> &perGroup,
                     Value &metaRows, Value *finite)>
      build;
  /// The same on scalars, for the GPU kernels: each group's elements (as
  /// f32) are combined with `reductions` (arith's minnumf, maxnumf, addf,
  /// ...; every thread of the group gets the results), then `finish` gives
  /// the per-group values and the metadata row (`metaColumns` scalars).
  SmallVector<arith::AtomicRMWKind> reductions;
  /// How many per-group values `finish` gives.
  int64_t perGroupValues = 0;
  std::function<void(OpBuilder &, Location, ValueRange reduced,
                     SmallVectorImpl<Value> &perGroup,
                     SmallVectorImpl<Value> &metaRow)>
      finish;
  /// The metadata's element type (required): f32, or i16 holding bf16 bits
  /// (#act.quant `stats = bf16`). `finish`'s row values are f32 (of bf16
  /// values then); detail::storeStat converts them where they are stored.
  Type metaElement;
};

/// The random word of an element for stochastic rounding: Philox4x32-10
/// keyed by (seed, id); element (tile t, lane l, word w of its tile) takes
/// word l % 4 of the block with counter (t * ceil(perWord / 4) + l / 4) * 16
/// + w (docs/Encodings.md), so one block serves four lanes and the 16 words
/// of a tile draw from 16 consecutive counters.
struct RandomKey {
  Value seed; // i64
  int64_t id;
  /// The input's first tile in the tensor whose codes these are (index;
  /// null: 0), when that tensor is encoded piece by piece (#act.division's
  /// spans): the counters continue from there. A multiple of
  /// LaneRandom::tilesPerBlock; CPU target only.
  Value firstTile = {};
};

/// The code (an i32 in the low `bits`) of element `x` whose group has the
/// per-group values `group`; `random()` builds the element's 8 random bits
/// (an i32 in [0, 255]).
using ElementCode =
    function_ref<Value(OpBuilder &, Location, Value x, ValueRange group,
                       function_ref<Value()> random)>;
/// An encoding's codes for buildPackedEncode. `code` (and `finiteCode`) may
/// return the element's code plus `bias`: the lanes of a word are then added
/// (not or-ed) and the biases subtracted once per word, which costs one
/// instruction per word instead of one per element.
struct PackedCodes {
  ElementCode code;
  /// When set, the same codes as `code` for the elements of a chunk whose
  /// statistics say they are plain (GroupStats::build's `finite`), built
  /// with fewer instructions; the CPU's chunks branch on it.
  ElementCode finiteCode = {};
  int64_t bias = 0;
};

/// The decoded element of code `code` (i32) whose group's metadata row is
/// `row` (scalars; empty without metadata).
using ElementValue =
    function_ref<Value(OpBuilder &, Location, Value code, ValueRange row)>;

/// The payload (tensor<ceil(n / perWord) x i32>) of `input` (any shape,
/// flattened row-major); with `stats`, also the metadata rows of its groups
/// (`metaRows`, tensor<ceil(n / group) x m x f32>). Whole chunks of
/// lcm(group, tile) elements are encoded in one scf.forall, each chunk's
/// statistics and tiles as small static linalg ops marked for
/// vectorization, so the input is read once from memory; the rest (and
/// group sizes that are not a multiple of 16) by per-word generics.
/// With `codes.finiteCode`, each chunk's tiles are built twice under an
/// scf.if on its statistics' `finite` (GroupStats::build).
/// LoweringTarget::GPU: whole tiles by a gpu.launch kernel (a thread per
/// four words, group statistics by warp shuffles), the rest by per-word
/// generics; Generic: all of it by per-word generics.
Value buildPackedEncode(OpBuilder &b, Location loc, Value input,
                        PackedFormat format, const LoweringOptions &options,
                        const GroupStats *stats,
                        std::optional<RandomKey> random,
                        const PackedCodes &codes, Value *metaRows = nullptr);
inline Value buildPackedEncode(OpBuilder &b, Location loc, Value input,
                               PackedFormat format,
                               const LoweringOptions &options,
                               const GroupStats *stats,
                               std::optional<RandomKey> random,
                               ElementCode code, Value *metaRows = nullptr) {
  return buildPackedEncode(b, loc, input, format, options, stats, random,
                           PackedCodes{code}, metaRows);
}

/// The word of a packed format from its lanes' codes (each plus `bias`, as
/// PackedCodes), lane l at bits [l * bits, (l + 1) * bits).
Value packLanes(OpBuilder &b, Location loc, ArrayRef<Value> codes,
                PackedFormat format, int64_t bias);

/// The elements of one chunk of buildPackedEncode's vectorized CPU path for
/// `format` with groups of `group` (0: none), or 0 when that path does not
/// apply: a tensor that is a whole number of such chunks is encoded with
/// the same bits in pieces of whole chunks (RandomKey::firstTile).
int64_t getPackedEncodeChunk(PackedFormat format, int64_t group, bool random);

/// Decodes a payload built by buildPackedEncode into a tensor of `type`
/// (with `dynamicSizes`); with `meta` (tensor<groups x m x f32>, groups of
/// `group` elements) each element also reads its group's row.
Value buildPackedDecode(OpBuilder &b, Location loc, Value payload,
                        PackedFormat format, const LoweringOptions &options,
                        RankedTensorType type, ValueRange dynamicSizes,
                        Value meta, int64_t group, ElementValue value);

/// The code (i32, in the low `format.bits` bits) of element `k` of a payload
/// that buildPackedEncode built from `count` elements (index values): one
/// read of its word, for decodes that gather (#act.sparse's values).
Value buildPackedElementCode(OpBuilder &b, Location loc, Value payload,
                             PackedFormat format, Value k, Value count);

/// #act.sparse (docs/Encodings.md): the bitmap (tensor<? x i32>,
/// ceil(n / 32) words, element i in bit i % 32 of word i / 32, set when its
/// bits are not all zero) and the values (tensor<? x T>: the set elements in
/// order) of `input`; in the dense fallback, an empty bitmap and all n
/// elements. The bitmap and the count are parallel generics; the compaction
/// is one sequential pass over the words (a loop over each word's set bits).
std::pair<Value, Value> buildSparseEncode(OpBuilder &b, Location loc,
                                          Value input,
                                          const LoweringOptions &options);
/// Decodes buildSparseEncode's storage into a tensor of `type`: a
/// sequential scan of the words' popcounts, then a parallel gather.
Value buildSparseDecode(OpBuilder &b, Location loc, Value bitmap, Value values,
                        RankedTensorType type, ValueRange dynamicSizes,
                        const LoweringOptions &options);
/// The per-element form of buildSparseDecode for a static `type`, whose
/// values are read through `valueAt(k)`, k the element's place among the
/// stored values (its own index in the dense fallback), kept below
/// `readable` (index, at least 1: the values' reader must be able to read
/// that many): one parallel generic over `type` without inputs, element i
/// `valueAt(k)` where its bit is set (or in the dense fallback), else zero,
/// after a sequential scan of the words' popcounts. Every read stays in
/// bounds (the dense fallback's empty bitmap reads as one zero word), so
/// the generic vectorizes as gathers, fuses into its elementwise readers and
/// tiles with a weight gradient's convolution as the packed decodes do.
Value buildSparseElementDecode(
    OpBuilder &b, Location loc, Value bitmap, Value readable,
    RankedTensorType type,
    function_ref<Value(OpBuilder &, Location, Value k)> valueAt);

/// act.fake_quant (compute quantization): the finite extremes of `input` by
/// one reduction generic, then every element rounded to one of 2^bits
/// levels over them by one parallel generic (to the nearest, or
/// stochastically with `random`: element i's 8 random bits are byte i % 4
/// of word (i / 4) % 4 of the block with counter i / 16, the blocks'
/// words computed first by a generic over the blocks, one Philox per 16
/// elements); `bits` (i32) is read at run time.
Value buildFakeQuant(OpBuilder &b, Location loc, Value input, Value bits,
                     std::optional<RandomKey> random = std::nullopt);

} // namespace mlir::act

#endif // ACT_CONVERSION_ACTTOLINALG_ACTLOWERING_H
