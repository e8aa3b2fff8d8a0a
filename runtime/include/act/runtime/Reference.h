//===- Reference.h - reference encoders in plain C++ ------------*- C++ -*-===//
//
// Scalar C++ implementations of every encoding with exactly the semantics of
// the IR act generates (docs/Encodings.md): the oracle of the unit tests and
// of bench/cpu_kernels. Not tuned for speed.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_REFERENCE_H
#define ACT_RUNTIME_REFERENCE_H

#include <cstdint>
#include <vector>

namespace act::rt {

/// Philox4x32-10 keyed by (lo32(seed), hi32(seed)) with counter
/// (lo32(index), hi32(index), lo32(id), hi32(id)); all four output words.
void philox4x32(uint64_t index, uint64_t seed, uint64_t id, uint32_t out[4]);
/// Where element `i` of `n` packed `perWord` to a word lies
/// (docs/Encodings.md, "Packed layout"): tiles of 16 words, element j of a
/// tile in word j % width at bit field (lane) j / width; width is 16 but
/// ceil(k / perWord) for a last tile of k < 16 * perWord elements.
struct PackedPosition {
  int64_t tile, lane, word; // word within the tile
};
PackedPosition locatePacked(int64_t i, int64_t n, unsigned perWord);
/// Where element `i` of an n-element tensor quantized `perWord` codes to a
/// word takes its 8 random bits (docs/Design.md, "Randomness"; one Philox block
/// serves 16 lanes): with P = perWord rounded up to a power of two and the
/// global lane L = tile * P + lane, byte L % 4 of word (L % 16) / 4 of the
/// block with counter (L / 16) * 16 + word (at 4 and 8 bits two and four
/// consecutive tiles share each block).
struct RandomSlot {
  uint64_t counter;
  unsigned word, byte;
};
RandomSlot locateRandom(int64_t i, int64_t n, unsigned perWord);
/// The 8 random bits (0..255) of element `i` of tensor `id` under `seed`.
uint32_t philox(int64_t i, int64_t n, unsigned perWord, uint64_t seed,
                uint64_t id);
/// The offset `u` a stochastic rounding `floor(y + u)` adds, from an
/// element's 8 random bits `r` (0..255): (r + 0.5) / 256, exact in f32 (the
/// rounding's bias is at most 1/512 of a step; docs/Design.md, "Randomness").
inline float stochasticOffset(uint32_t r) {
  return (float(r) + 0.5f) * (1.0f / 256.0f);
}
/// The raw generator: counter c[4], key k[2].
void philox4x32Raw(const uint32_t c[4], const uint32_t k[2], uint32_t out[4]);

enum class FloatFormat { F16, BF16, FP10, E4M3, E5M2 };
/// Bits of one element in the payload and elements per 32-bit word.
unsigned getElementBits(FloatFormat format);
unsigned getElementsPerWord(FloatFormat format);
/// One element: its code, and the value of a code.
uint32_t encodeFloat(float x, FloatFormat format);
float decodeFloat(uint32_t code, FloatFormat format);

/// Packs codes of `bits` bits, `32 / bits` per word (fp10: 3 per word).
std::vector<uint32_t> encodeFloats(const float *x, int64_t n,
                                   FloatFormat format);
void decodeFloats(const uint32_t *words, int64_t n, FloatFormat format,
                  float *out);

/// Finite `x` rounded to a bf16 value toward +inf (`up`) or -inf, as a
/// float, saturating at the largest finite bf16.
float roundToBf16(float x, bool up);

struct QuantParams {
  unsigned bits = 4;
  int64_t group = 256;
  bool stochastic = true;
  uint64_t seed = 0;
  uint64_t id = 0;
  /// `stats = bf16`: the minimum rounded down and the step up to bf16
  /// values (meta holds them as floats; the IR stores their top 16 bits).
  bool bf16Stats = false;
};
/// Payload words and per-group (min, scale) pairs.
void encodeQuant(const float *x, int64_t n, const QuantParams &params,
                 std::vector<uint32_t> &words, std::vector<float> &meta);
void decodeQuant(const uint32_t *words, const float *meta, int64_t n,
                 const QuantParams &params, float *out);

/// #act.division on f32 maps: `shape` is the map's four dimensions, with
/// H and W at `hDim`, `wDim` (NCHW: 2, 3; NHWC: 1, 2). The block averages
/// (shape with H, W replaced by ceil(H / block), ceil(W / block); each the
/// f32 sum of its block's column sums, left to right, each column summed
/// top to bottom, divided by the element count) and the #act.quant storage of
/// the residual x - average (`quant`: its bits, group, rounding, seed and id).
struct DivisionParams {
  int64_t shape[4] = {1, 1, 1, 1};
  unsigned hDim = 2, wDim = 3;
  int64_t block = 8;
  QuantParams quant;
};
void encodeDivision(const float *x, const DivisionParams &params,
                    std::vector<uint32_t> &words, std::vector<float> &meta,
                    std::vector<float> &averages);
void decodeDivision(const uint32_t *words, const float *meta,
                    const float *averages, const DivisionParams &params,
                    float *out);

/// act.fake_quant (compute quantization): `x` rounded to one of 2^bits
/// levels over the range of its finite elements (bits clamped to 1..23;
/// from 24 on, and for constant tensors, unchanged; non-finite elements
/// pass through): to the nearest, or `stochastic`ally with element i's 8
/// random bits from byte i % 4 of word (i / 4) % 4 of the Philox block with
/// counter i / 16 keyed by (seed, id).
void fakeQuant(const float *x, int64_t n, int bits, float *out,
               bool stochastic = false, uint64_t seed = 0, uint64_t id = 0);

enum class MaskPredicate { Positive, NonNegative, NonZero };
std::vector<uint32_t> encodeMask(const float *x, int64_t n,
                                 MaskPredicate predicate);
void decodeMask(const uint32_t *words, int64_t n, bool *out);

/// #act.fewbit: the interval index of each element (the number of the
/// sorted `boundaries` it reaches; NaN: 0), `bits` bits packed 32 / bits to
/// a word; decoding yields values[code].
std::vector<uint32_t> encodeFewBit(const float *x, int64_t n, unsigned bits,
                                   const std::vector<float> &boundaries);
void decodeFewBit(const uint32_t *words, int64_t n, unsigned bits,
                  const std::vector<float> &values, float *out);

/// #act.index: the low `bits` bits of each integer, packed 32 / bits to a
/// word; decoding zero-extends (exact for values in [0, 2^bits)).
std::vector<uint32_t> encodeIndex(const int64_t *x, int64_t n, unsigned bits);
void decodeIndex(const uint32_t *words, int64_t n, unsigned bits, int64_t *out);

/// #act.sparse: a bitmap (ceil(n / 32) words, element i in bit i % 32 of
/// word i / 32, set when any of its `elementBytes` bytes is nonzero) and the
/// set elements' bytes in order; in the dense fallback (more than
/// n - ceil(n / 32) set elements) an empty bitmap and all n elements.
struct SparseStorage {
  std::vector<uint32_t> bitmap;
  std::vector<uint8_t> values;
};
SparseStorage encodeSparse(const void *x, int64_t n, unsigned elementBytes);
void decodeSparse(const SparseStorage &storage, int64_t n,
                  unsigned elementBytes, void *out);

} // namespace act::rt

#endif // ACT_RUNTIME_REFERENCE_H
