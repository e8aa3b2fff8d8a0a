//===- LoweringTest.cpp - lowered encodings against the C++ reference -----===//
//
// Compiles act.encode / act.decode through act-cpu-pipeline, runs them with
// the JIT on host data and compares payload, metadata and decoded values bit
// for bit with runtime/'s reference encoders: the lowering computes exactly
// the documented semantics (rounding, clamping, NaN, subnormals, tails,
// Philox streams).
//
//===----------------------------------------------------------------------===//

#include "act/Execution/Jit.h"
#include "act/InitAll.h"
#include "act/runtime/Reference.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/TargetSelect.h"
#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

using namespace mlir;
using namespace mlir::act;
namespace rt = ::act::rt;

namespace {

class LoweringTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }

  LoweringTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Compiles `@codec(%x: tensor<Nxf32>, %seed: i64)` returning the encoded
  /// value (its storage) and the decoded tensor.
  /// With `skip`, the argument has `skip` more elements and the codec
  /// encodes the view that drops the first `skip` (a buffer that starts off
  /// any 16-byte boundary).
  std::unique_ptr<JitFunction> compileCodec(int64_t n, const std::string &enc,
                                            const std::string &decoded = "f32",
                                            const JitTarget &target = {},
                                            int64_t skip = 0) {
    // n < 0: a dynamic size (one compile for every length).
    auto size = [](int64_t n) { return n < 0 ? "?" : std::to_string(n); };
    std::string t = "tensor<" + size(n) + "xf32>";
    std::string arg = "tensor<" + size(n < 0 ? n : n + skip) + "xf32>";
    std::string e = "!act.encoded<" + t + ", " + enc + ">";
    std::string d = "tensor<" + size(n) + "x" + decoded + ">";
    std::string view =
        skip
            ? "  %v = tensor.extract_slice %x[" + std::to_string(skip) + "] [" +
                  std::to_string(n) + "] [1] : " + arg + " to " + t + "\n"
            : "";
    std::string text = "func.func @codec(%x: " + arg + ", %seed: i64) -> (" +
                       e + ", " + d + ") {\n" + view + "  %e = act.encode " +
                       (skip ? "%v" : "%x") + ", id = 7, seed %seed : " + t +
                       " -> " + e + "\n  %d = act.decode %e : " + e + " -> " +
                       d + "\n  return %e, %d : " + e + ", " + d + "\n}\n";
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    auto jit = JitFunction::compile(*module, "codec", true, target);
    if (!jit) {
      ADD_FAILURE() << llvm::toString(jit.takeError());
      return nullptr;
    }
    return std::move(*jit);
  }

  /// `@codec_<i>(%x: tensor<?xf32>, %seed: i64)` for each encoding of
  /// `encs`, as compileCodec's, compiled together (one JIT: most of a
  /// small codec's compile time is per module).
  std::vector<std::unique_ptr<JitFunction>>
  compileDynamicCodecs(const std::vector<std::string> &encs,
                       const JitTarget &target) {
    std::string text;
    std::vector<std::string> names;
    for (auto [i, enc] : llvm::enumerate(encs)) {
      std::string t = "tensor<?xf32>";
      std::string e = "!act.encoded<" + t + ", " + enc + ">";
      names.push_back("codec_" + std::to_string(i));
      text += "func.func @" + names.back() + "(%x: " + t +
              ", %seed: i64) -> (" + e + ", " + t +
              ") {\n  %e = act.encode %x, id = 7, seed %seed : " + t + " -> " +
              e + "\n  %d = act.decode %e : " + e + " -> " + t +
              "\n  return %e, %d : " + e + ", " + t + "\n}\n";
    }
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    if (!module)
      return {};
    auto jits = JitFunction::compileAll(*module, names, true, target);
    if (!jits) {
      ADD_FAILURE() << llvm::toString(jits.takeError());
      return {};
    }
    return std::move(*jits);
  }

  static HostTensor tensor(const std::vector<float> &x) {
    HostTensor v = HostTensor::allocate(ElementKind::F32, {int64_t(x.size())});
    std::memcpy(v.data(), x.data(), v.byteSize());
    return v;
  }
  static HostTensor scalar(int64_t s) {
    return HostTensor::scalar<int64_t>(ElementKind::I64, s);
  }
  /// Calls `jit`; false with the reason in `error` when it fails.
  static bool callJit(JitFunction &jit, std::vector<HostTensor> args,
                      std::vector<HostTensor> &outs, std::string &error) {
    auto results = jit.call(args);
    if (!results) {
      error = llvm::toString(results.takeError());
      return false;
    }
    outs = std::move(*results);
    return true;
  }
  static std::vector<char> bytes(const HostTensor &v) {
    return std::vector<char>(v.data(), v.data() + v.byteSize());
  }
  template <typename T> static std::vector<T> values(const HostTensor &v) {
    std::vector<T> out(v.byteSize() / sizeof(T));
    if (v.byteSize()) // (an empty tensor's data may be null)
      std::memcpy(out.data(), v.data(), v.byteSize());
    return out;
  }
  static std::vector<float> data(int64_t n, unsigned seed, bool specials) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::vector<float> x(n);
    for (float &v : x)
      v = dist(gen);
    if (specials && n > 16) {
      float s[] = {0.0f,    -0.0f,    INFINITY, -INFINITY, NAN,     1e-30f,
                   3e-39f,  65504.0f, 65520.0f, 1e6f,      -448.0f, 464.0f,
                   0x1p-9f, 0x1p-24f, 0x1p-16f, 57344.0f};
      std::copy(std::begin(s), std::end(s), x.begin());
      // NaNs with payloads: negative quiet, and signaling (an f16 code
      // keeps the sign and the payload's top bits, made quiet).
      if (n > 18) {
        uint32_t nans[] = {0xFFA12345u, 0x7F800001u};
        std::memcpy(&x[16], nans, sizeof(nans));
      }
    }
    return x;
  }

  static std::string quantAttr(unsigned bits, int64_t group, bool stochastic,
                               bool bf16 = false) {
    return "#act.quant<bits = " + std::to_string(bits) +
           ", group = " + std::to_string(group) +
           ", rounding = " + (stochastic ? "stochastic" : "nearest") +
           (bf16 ? ", stats = bf16>" : ">");
  }
  /// The stored group statistics as floats (bf16: i16 holding the top
  /// half of each float's bits).
  static std::vector<float> statValues(const HostTensor &v, bool bf16) {
    if (!bf16)
      return values<float>(v);
    std::vector<float> out;
    for (uint16_t h : values<uint16_t>(v)) {
      uint32_t u = uint32_t(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      out.push_back(f);
    }
    return out;
  }

  /// Runs a quant codec on `x` and compares payload, metadata and decoded
  /// values with the reference bit for bit.
  void checkQuant(JitFunction &jit, const std::vector<float> &x, unsigned bits,
                  int64_t group, bool stochastic, int64_t seed,
                  bool dynamic = false, bool bf16 = false) {
    int64_t n = int64_t(x.size());
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(jit, {tensor(x), scalar(seed)}, outs, error)) << error;
    // Payload, metadata (and, for a dynamic size, the element count), and
    // the decoded values.
    ASSERT_EQ(outs.size(), dynamic ? 4u : 3u);
    rt::QuantParams p{bits, group, stochastic, uint64_t(seed), 7, bf16};
    std::vector<uint32_t> words;
    std::vector<float> meta;
    rt::encodeQuant(x.data(), n, p, words, meta);
    EXPECT_EQ(values<uint32_t>(outs[0]), words);
    EXPECT_EQ(statValues(outs[1], bf16), meta);
    std::vector<float> ref(n);
    rt::decodeQuant(words.data(), meta.data(), n, p, ref.data());
    EXPECT_EQ(values<float>(outs.back()), ref);
  }

  /// Runs a mask codec on `x` and compares words and decoded flags.
  void checkMask(JitFunction &jit, const std::vector<float> &x,
                 rt::MaskPredicate predicate) {
    int64_t n = int64_t(x.size());
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(jit, {tensor(x), scalar(0)}, outs, error)) << error;
    std::vector<uint32_t> words = rt::encodeMask(x.data(), n, predicate);
    EXPECT_EQ(values<uint32_t>(outs[0]), words);
    std::vector<uint8_t> got = values<uint8_t>(outs[1]);
    std::vector<char> ref(n);
    rt::decodeMask(words.data(), n, reinterpret_cast<bool *>(ref.data()));
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(bool(got[i]), bool(ref[i])) << i;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

struct FloatCase {
  const char *attr;
  rt::FloatFormat format;
};

TEST_F(LoweringTest, FloatFormatsMatchReferenceBitForBit) {
  FloatCase cases[] = {{"#act.float<format = f16>", rt::FloatFormat::F16},
                       {"#act.float<format = bf16>", rt::FloatFormat::BF16},
                       {"#act.float<format = fp10>", rt::FloatFormat::FP10},
                       {"#act.float<format = e4m3>", rt::FloatFormat::E4M3},
                       {"#act.float<format = e5m2>", rt::FloatFormat::E5M2}};
  for (const FloatCase &c : cases)
    for (int64_t n : {1, 3, 1000, 1001}) {
      SCOPED_TRACE(std::string(c.attr) + " n=" + std::to_string(n));
      auto jit = compileCodec(n, c.attr);
      ASSERT_TRUE(jit);
      std::vector<float> x = data(n, unsigned(n), true);
      std::vector<HostTensor> outs;
      std::string error;
      ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(0)}, outs, error)) << error;
      ASSERT_EQ(outs.size(), 2u);
      std::vector<uint32_t> expected = rt::encodeFloats(x.data(), n, c.format);
      // 8- and 16-bit codes are stored as an array of codes: exactly the
      // bytes of the reference's little-endian words, without tail padding.
      uint32_t codeBits = rt::getElementBits(c.format);
      std::vector<char> payload = bytes(outs[0]);
      if (codeBits == 8 || codeBits == 16)
        EXPECT_EQ(payload.size(), size_t(n) * codeBits / 8);
      payload.resize((payload.size() + 3) / 4 * 4, 0);
      std::vector<uint32_t> words(payload.size() / 4);
      std::memcpy(words.data(), payload.data(), payload.size());
      ASSERT_EQ(words.size(), expected.size());
      std::vector<float> ref(n), got = values<float>(outs[1]);
      rt::decodeFloats(expected.data(), n, c.format, ref.data());
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(x[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << "NaN stays NaN at " << i;
          continue;
        }
        uint32_t bits = rt::getElementBits(c.format);
        unsigned per = rt::getElementsPerWord(c.format);
        uint32_t mask = uint32_t((uint64_t(1) << bits) - 1);
        // Byte codes sit at their index; packed ones in the tile layout.
        int64_t word = i / per, shift = (i % per) * bits;
        if (codeBits != 8 && codeBits != 16) {
          rt::PackedPosition p = rt::locatePacked(i, n, per);
          word = p.tile * 16 + p.word;
          shift = p.lane * bits;
        }
        EXPECT_EQ((words[word] >> shift) & mask,
                  (expected[word] >> shift) & mask)
            << "element " << i << " = " << x[i];
        EXPECT_EQ(got[i], ref[i]) << "element " << i;
      }
    }
}

TEST_F(LoweringTest, LosslessHalfFormatsRoundTripExactly) {
  // Values exact in f16 and bf16 (small integers and halves) come back
  // bitwise identical.
  for (const char *attr :
       {"#act.float<format = f16>", "#act.float<format = bf16>"}) {
    auto jit = compileCodec(777, attr);
    ASSERT_TRUE(jit);
    std::vector<float> x(777);
    for (int i = 0; i < 777; ++i)
      x[i] = float((i * 37) % 255 - 127) * 0.5f;
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(0)}, outs, error)) << error;
    EXPECT_EQ(std::memcmp(outs[1].data(), x.data(), x.size() * 4), 0);
  }
}

TEST_F(LoweringTest, QuantMatchesReferenceBitForBit) {
  for (unsigned bits : {1u, 2u, 4u, 8u})
    for (int64_t group : {256, 64, 48, 7})
      for (bool stochastic : {true, false})
        for (int64_t n : {1000, 256, 5})
          for (bool bf16 : {false, true}) {
            // bf16 statistics: every width and rounding, two group sizes.
            if (bf16 && group != 256 && group != 48)
              continue;
            std::string attr = quantAttr(bits, group, stochastic, bf16);
            SCOPED_TRACE(attr + " n=" + std::to_string(n));
            auto jit = compileCodec(n, attr);
            ASSERT_TRUE(jit);
            std::vector<float> x = data(n, unsigned(bits * 100 + n), false);
            if (n > 300)
              std::fill(x.begin() + 256,
                        x.begin() + 256 + std::min<int64_t>(group, 40), 2.5f);
            checkQuant(*jit, x, bits, group, stochastic,
                       0x123456789abcLL + bits, /*dynamic=*/false, bf16);
          }
}

// bf16 statistics (#act.quant<stats = bf16>): the stored minimum is a bf16
// value at or below the group's, the step one at or above (rounded
// (max - min) / levels), so the grid covers the group and every element
// decodes within a stored step of itself; 4 bytes of statistics a group.
TEST_F(LoweringTest, QuantBf16StatisticsCoverTheGroup) {
  const int64_t n = 4096, group = 256;
  std::vector<float> x = data(n, 5, false);
  for (int64_t i = 0; i < n; ++i)
    x[i] = x[i] * 1.37f + 0.01f * float(i % 97); // not bf16 values
  for (unsigned bits : {1u, 2u, 4u, 8u}) {
    std::string attr = quantAttr(bits, group, /*stochastic=*/true, true);
    SCOPED_TRACE(attr);
    auto jit = compileCodec(n, attr);
    ASSERT_TRUE(jit);
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(3)}, outs, error)) << error;
    EXPECT_EQ(outs[1].byteSize(), size_t(n / group * 2 * 2));
    std::vector<float> meta = statValues(outs[1], true),
                       decoded = values<float>(outs[2]);
    float levels = float((1u << bits) - 1);
    for (int64_t g = 0; g < n / group; ++g) {
      float mn =
          *std::min_element(x.begin() + g * group, x.begin() + (g + 1) * group);
      float mx =
          *std::max_element(x.begin() + g * group, x.begin() + (g + 1) * group);
      float lo = meta[2 * g], step = meta[2 * g + 1];
      EXPECT_LE(lo, mn);
      EXPECT_GE(lo, mn - std::fabs(mn) * 0x1p-7f);
      EXPECT_GE(lo + levels * step, mx);
      EXPECT_LE(step, (mx - lo) / levels * (1.0f + 0x1p-7f));
      for (int64_t i = g * group; i < (g + 1) * group; ++i)
        ASSERT_LE(std::fabs(decoded[i] - x[i]), step * 1.0001f) << i;
    }
  }
}

TEST_F(LoweringTest, SameSeedSameBitsOtherSeedOtherBits) {
  auto jit = compileCodec(4096, "#act.quant<bits = 2>");
  ASSERT_TRUE(jit);
  std::vector<float> x = data(4096, 9, false);
  std::vector<HostTensor> a, b, c;
  std::string error;
  ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(11)}, a, error)) << error;
  ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(11)}, b, error)) << error;
  ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(12)}, c, error)) << error;
  EXPECT_EQ(bytes(a[0]), bytes(b[0]));
  EXPECT_NE(bytes(a[0]), bytes(c[0]));
}

TEST_F(LoweringTest, StochasticQuantIsUnbiasedOverSeeds) {
  // The mean over S seeds of decode(encode(x)) is within 5 standard errors
  // (scale / (2 sqrt(S)) bounds one) of x, element by element (8 random
  // bits per element bias the mean by at most scale / 512, 1/40 of this
  // bound).
  const int64_t n = 512;
  const int seeds = 400;
  auto jit = compileCodec(n, "#act.quant<bits = 2, group = 256>");
  ASSERT_TRUE(jit);
  std::vector<float> x = data(n, 21, false);
  std::vector<double> sum(n, 0.0);
  std::vector<float> scales;
  for (int s = 0; s < seeds; ++s) {
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(1000 + s)}, outs, error));
    std::vector<float> y = values<float>(outs[2]);
    scales = values<float>(outs[1]);
    for (int64_t i = 0; i < n; ++i)
      sum[i] += y[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    double bound =
        5 * scales[2 * (i / 256) + 1] / (2 * std::sqrt(double(seeds)));
    EXPECT_NEAR(sum[i] / seeds, x[i], bound) << "element " << i;
  }
}

TEST_F(LoweringTest, MaskMatchesReference) {
  for (auto [attr, predicate] : {std::pair{"#act.mask<predicate = positive>",
                                           rt::MaskPredicate::Positive},
                                 std::pair{"#act.mask<predicate = nonnegative>",
                                           rt::MaskPredicate::NonNegative},
                                 std::pair{"#act.mask<predicate = nonzero>",
                                           rt::MaskPredicate::NonZero}}) {
    auto jit = compileCodec(1000, attr, "i1");
    ASSERT_TRUE(jit);
    checkMask(*jit, data(1000, 4, true), predicate);
  }
}

/// A few-bit table with 2^bits pieces over [-4, 4], boundaries spaced
/// unevenly (and two equal: an empty piece), values distinct.
static std::string fewBitAttr(unsigned bits, std::vector<float> &boundaries,
                              std::vector<float> &values) {
  int pieces = 1 << bits;
  boundaries.clear();
  values.clear();
  for (int j = 1; j < pieces; ++j) {
    float t = float(j) / float(pieces);
    boundaries.push_back(-4.0f + 8.0f * t * t);
  }
  if (boundaries.size() > 2)
    boundaries[2] = boundaries[1];
  for (int j = 0; j < pieces; ++j)
    values.push_back(0.25f * float(j) - 1.0f / float(j + 3));
  std::string attr =
      "#act.fewbit<bits = " + std::to_string(bits) + ", boundaries = ";
  auto list = [&](const std::vector<float> &v) {
    for (size_t j = 0; j < v.size(); ++j) {
      char buf[32];
      // Round-trips a float, and keeps the point MLIR's parser needs.
      std::snprintf(buf, sizeof buf, "%#.9g", double(v[j]));
      attr += (j ? ", " : "[") + std::string(buf);
    }
    attr += "]";
  };
  list(boundaries);
  attr += ", values = ";
  list(values);
  return attr + ">";
}

// #act.fewbit: codes (interval indices) and decoded table values bit for
// bit against the reference, on every target, with NaN, infinities and
// elements exactly on a boundary.
TEST_F(LoweringTest, FewBitMatchesReferenceBitForBit) {
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  for (unsigned bits : {1u, 3u, 4u, 8u})
    for (int64_t n : {1000, 5003})
      for (bool gpu : {false, true}) {
        std::vector<float> boundaries, table;
        std::string attr = fewBitAttr(bits, boundaries, table);
        SCOPED_TRACE("bits " + std::to_string(bits) +
                     " n=" + std::to_string(n) + (gpu ? " gpu-emulated" : ""));
        auto jit = compileCodec(n, attr, "f32", gpu ? emulated : JitTarget());
        ASSERT_TRUE(jit);
        std::vector<float> x = data(n, unsigned(bits + n), true);
        for (size_t j = 0; j < boundaries.size() && 40 + j < x.size(); ++j)
          x[40 + j] = boundaries[j];
        std::vector<HostTensor> outs;
        std::string error;
        ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(0)}, outs, error))
            << error;
        std::vector<uint32_t> words =
            rt::encodeFewBit(x.data(), n, bits, boundaries);
        EXPECT_EQ(values<uint32_t>(outs[0]), words);
        std::vector<float> ref(n);
        rt::decodeFewBit(words.data(), n, bits, table, ref.data());
        EXPECT_EQ(values<float>(outs[1]), ref);
      }
}

// #act.index: i64 values in [0, 2^bits) round-trip exactly, and the
// payload is the reference's, on the CPU and GPU-emulated targets.
TEST_F(LoweringTest, IndexMatchesReferenceAndRoundTrips) {
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  for (unsigned bits : {1u, 2u, 4u, 6u, 10u})
    for (int64_t n : {1000, 5003})
      for (bool gpu : {false, true}) {
        SCOPED_TRACE("bits " + std::to_string(bits) +
                     " n=" + std::to_string(n) + (gpu ? " gpu-emulated" : ""));
        std::string t = "tensor<" + std::to_string(n) + "xi64>";
        std::string e = "!act.encoded<" + t +
                        ", #act.index<bits = " + std::to_string(bits) + ">>";
        std::string text = "func.func @codec(%x: " + t + ") -> (" + e + ", " +
                           t + ") {\n  %e = act.encode %x, id = 3 : " + t +
                           " -> " + e + "\n  %d = act.decode %e : " + e +
                           " -> " + t + "\n  return %e, %d : " + e + ", " + t +
                           "\n}\n";
        module = parseSourceString<ModuleOp>(text, &context);
        ASSERT_TRUE(module) << text;
        auto jit = JitFunction::compile(*module, "codec", true,
                                        gpu ? emulated : JitTarget());
        ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
        std::mt19937 gen(bits * 7 + unsigned(n));
        std::vector<int64_t> x(n);
        for (int64_t &v : x)
          v = int64_t(gen() % (uint32_t(1) << bits));
        x[0] = 0;
        x[1] = (int64_t(1) << bits) - 1;
        HostTensor in = HostTensor::allocate(ElementKind::I64, {n});
        std::memcpy(in.data(), x.data(), in.byteSize());
        std::vector<HostTensor> outs;
        std::string error;
        ASSERT_TRUE(callJit(**jit, {in}, outs, error)) << error;
        EXPECT_EQ(values<uint32_t>(outs[0]),
                  rt::encodeIndex(x.data(), n, bits));
        EXPECT_EQ(values<int64_t>(outs[1]), x);
      }
}

// #act.sparse: bitmap and values are the reference's and the round trip is
// bitwise (-0.0, NaN payloads and infinities included) at densities from
// all-zero to the dense fallback, on the CPU and GPU-emulated targets.
TEST_F(LoweringTest, SparseMatchesReferenceAndIsBitwiseLossless) {
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  for (int64_t n : {1, 32, 1000, 5003})
    for (double density : {0.0, 0.1, 0.5, 0.97, 1.0})
      for (bool gpu : {false, true}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " density=" +
                     std::to_string(density) + (gpu ? " gpu-emulated" : ""));
        auto jit = compileCodec(n, "#act.sparse<density = 0.5>", "f32",
                                gpu ? emulated : JitTarget());
        ASSERT_TRUE(jit);
        std::vector<float> x = data(n, unsigned(n * 10 + density * 100), true);
        std::mt19937 gen{static_cast<unsigned>(n)};
        for (float &v : x)
          if (std::uniform_real_distribution<double>(0, 1)(gen) >= density)
            v = 0.0f;
        if (n > 40) {
          uint32_t nanPayload = 0x7fc01234u;
          std::memcpy(&x[33], &nanPayload, 4);
          x[34] = -0.0f;
          x[35] = -INFINITY;
        }
        std::vector<HostTensor> outs;
        std::string error;
        ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(0)}, outs, error))
            << error;
        rt::SparseStorage ref = rt::encodeSparse(x.data(), n, 4);
        ASSERT_EQ(outs.size(), 3u);
        EXPECT_EQ(values<uint32_t>(outs[0]), ref.bitmap);
        std::vector<char> stored = bytes(outs[1]);
        EXPECT_EQ(std::vector<uint8_t>(stored.begin(), stored.end()),
                  ref.values);
        EXPECT_EQ(values<uint32_t>(outs[2]),
                  values<uint32_t>(tensor(x))); // bitwise
        // The storage never exceeds the tensor's bytes.
        EXPECT_LE(int64_t(4 * ref.bitmap.size() + ref.values.size()), 4 * n);
      }
}

// #act.sparse with `format` (Gist's precision reduction over its sparse
// storage): the bitmap is the exact one, the stored values are the
// reference's sparse values as #act.float stores them, and the decode is
// the reference's sparse decode of the float-decoded values: zeros stay
// zeros, each nonzero is the format's rounding of it. All-zero, sparse and
// dense-fallback data, on the CPU and GPU-emulated targets.
TEST_F(LoweringTest, SparseWithFormatMatchesReferenceValuesInTheFormat) {
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  const FloatCase formats[] = {{"bf16", rt::FloatFormat::BF16},
                               {"fp10", rt::FloatFormat::FP10},
                               {"e4m3", rt::FloatFormat::E4M3}};
  for (const FloatCase &c : formats)
    for (int64_t n : {1, 37, 1000, 5003})
      for (bool gpu : {false, true}) {
        auto jit = compileCodec(
            n,
            std::string("#act.sparse<density = 0.5, format = ") + c.attr + ">",
            "f32", gpu ? emulated : JitTarget());
        ASSERT_TRUE(jit);
        for (double density : {0.0, 0.1, 0.6, 1.0}) {
          SCOPED_TRACE(std::string(c.attr) + " n=" + std::to_string(n) +
                       " density=" + std::to_string(density) +
                       (gpu ? " gpu-emulated" : ""));
          // (No NaN: the reference does not pin a NaN code's payload.)
          std::vector<float> x =
              data(n, unsigned(n * 10 + density * 100), false);
          std::mt19937 gen{static_cast<unsigned>(n + 1)};
          for (float &v : x)
            if (std::uniform_real_distribution<double>(0, 1)(gen) >= density)
              v = 0.0f;
          if (n > 40) {
            x[34] = -0.0f;  // nonzero bits: stored, and decoded as -0.0
            x[35] = 1e-30f; // below every narrow format but bf16's range
          }
          std::vector<HostTensor> outs;
          std::string error;
          ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(0)}, outs, error))
              << error;
          ASSERT_EQ(outs.size(), 3u);
          rt::SparseStorage ref = rt::encodeSparse(x.data(), n, 4);
          EXPECT_EQ(values<uint32_t>(outs[0]), ref.bitmap);
          int64_t k = int64_t(ref.values.size() / 4);
          std::vector<float> kept(k);
          std::memcpy(kept.data(), ref.values.data(), ref.values.size());
          std::vector<uint32_t> words =
              rt::encodeFloats(kept.data(), k, c.format);
          // bf16's and e4m3's codes are an array of codes: the bytes of the
          // reference's words without their tail.
          uint32_t codeBits = rt::getElementBits(c.format);
          std::vector<char> payload = bytes(outs[1]);
          if (codeBits == 8 || codeBits == 16)
            EXPECT_EQ(payload.size(), size_t(k) * codeBits / 8);
          else
            EXPECT_EQ(payload.size(), words.size() * 4);
          payload.resize(words.size() * 4, 0);
          std::vector<uint32_t> got(words.size());
          std::memcpy(got.data(), payload.data(), payload.size());
          EXPECT_EQ(got, words);
          // The decode: the reference's sparse decode of the values the
          // format gives back, bit for bit.
          std::vector<float> rounded(k), expected(n);
          rt::decodeFloats(words.data(), k, c.format, rounded.data());
          rt::SparseStorage narrowed{ref.bitmap, {}};
          narrowed.values.resize(size_t(k) * 4);
          std::memcpy(narrowed.values.data(), rounded.data(), size_t(k) * 4);
          rt::decodeSparse(narrowed, n, 4, expected.data());
          EXPECT_EQ(values<uint32_t>(outs[2]),
                    values<uint32_t>(tensor(expected)));
          std::vector<float> decoded = values<float>(outs[2]);
          for (int64_t i = 0; i < n; ++i)
            if (x[i] == 0.0f && !std::signbit(x[i]))
              ASSERT_EQ(decoded[i], 0.0f) << i;
        }
      }
}

// The CPU's vector form of the sparse storage on elements of 1, 2 and 8
// bytes (the test above: 4): storage as the reference, decoded bitwise.
TEST_F(LoweringTest, SparseOfOtherWidthsMatchesReference) {
  struct Width {
    const char *type;
    ElementKind kind;
  };
  for (Width width :
       {Width{"i8", ElementKind::I8}, Width{"i16", ElementKind::I16},
        Width{"f64", ElementKind::F64}})
    for (int64_t n : {37, 1000}) {
      SCOPED_TRACE(std::string(width.type) + " n=" + std::to_string(n));
      std::string t = "tensor<" + std::to_string(n) + "x" + width.type + ">";
      std::string e = "!act.encoded<" + t + ", #act.sparse>";
      std::string text = "func.func @codec(%x: " + t + ") -> (" + e + ", " + t +
                         ") {\n  %e = act.encode %x, id = 1 : " + t + " -> " +
                         e + "\n  %d = act.decode %e : " + e + " -> " + t +
                         "\n  return %e, %d : " + e + ", " + t + "\n}\n";
      module = parseSourceString<ModuleOp>(text, &context);
      ASSERT_TRUE(module) << text;
      auto jit = JitFunction::compile(*module, "codec", true, JitTarget());
      ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
      HostTensor x = HostTensor::allocate(width.kind, {n});
      unsigned bytesPer = getElementBytes(width.kind);
      std::mt19937 gen{static_cast<unsigned>(n)};
      for (int64_t i = 0; i < n; ++i)
        for (unsigned k = 0; k < bytesPer; ++k)
          x.data()[i * bytesPer + k] =
              gen() % 3 == 0 ? char(gen() % 256) : char(0);
      std::vector<HostTensor> outs;
      std::string error;
      ASSERT_TRUE(callJit(**jit, {x}, outs, error)) << error;
      rt::SparseStorage ref = rt::encodeSparse(x.data(), n, bytesPer);
      ASSERT_EQ(outs.size(), 3u);
      EXPECT_EQ(values<uint32_t>(outs[0]), ref.bitmap);
      std::vector<char> stored = bytes(outs[1]);
      EXPECT_EQ(std::vector<uint8_t>(stored.begin(), stored.end()), ref.values);
      EXPECT_EQ(bytes(outs[2]), bytes(x));
    }
}

// act-cpu-pipeline{threads}: an encode's and a decode's chunks split into
// tasks of MLIR's async runtime give the very bits of one thread (chunks
// are independent; Philox is counter-based), for tensors of many tasks.
TEST_F(LoweringTest, EncodingsAreTheSameOnAnyNumberOfWorkers) {
  const int64_t n = 300007; // 1171 groups of 256 and a partial one
  for (const char *enc :
       {"#act.quant<bits = 4>", "#act.quant<bits = 2, rounding = nearest>",
        "#act.quant<bits = 8>", "#act.float<format = fp10>",
        "#act.fewbit<bits = 2, boundaries = [-0.5, 0.0, 0.5], values = "
        "[0.0, 0.25, 0.75, 1.0]>",
        "#act.sparse<density = 0.5>"}) {
    SCOPED_TRACE(enc);
    std::vector<float> x = data(n, 17, true);
    for (int64_t i = 0; i < n; i += 3)
      x[i] = 0.0f; // (sparse: some zeros)
    std::vector<std::vector<char>> bits[2];
    for (unsigned workers : {1u, 3u}) {
      JitTarget target;
      target.threads = workers;
      auto jit = compileCodec(n, enc, "f32", target);
      ASSERT_TRUE(jit);
      std::vector<HostTensor> outs;
      std::string error;
      ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(99)}, outs, error)) << error;
      for (const HostTensor &out : outs)
        bits[workers > 1].push_back(bytes(out));
    }
    EXPECT_EQ(bits[0], bits[1]);
  }
}

// #act.division: block averages (partial blocks at the borders), the
// residual's quant payload and metadata, and the decoded map are the
// reference's bit for bit, NCHW and NHWC, on the CPU and GPU-emulated
// targets; the decode is within the residual's quantization step of x.
TEST_F(LoweringTest, DivisionMatchesReferenceBitForBit) {
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  // (The CPU's spans split into tasks of the async runtime too.)
  JitTarget workers;
  workers.threads = 3;
  struct Case {
    std::array<int64_t, 4> shape;
    bool nhwc;
    int64_t block;
    unsigned bits;
    int64_t group;
    bool stochastic;
  };
  for (Case c : {Case{{2, 3, 10, 12}, false, 4, 2, 256, true},
                 Case{{1, 2, 32, 32}, false, 8, 2, 1024, true},
                 Case{{2, 9, 7, 3}, true, 4, 4, 64, false},
                 // Whole blocks (the CPU's block-wise generics), NHWC.
                 Case{{2, 8, 12, 16}, true, 4, 2, 256, true},
                 Case{{1, 4, 5, 5}, false, 8, 8, 48, true},
                 // Spans of whole block rows (the CPU encodes and decodes
                 // a span at a time, counters continued): 1 bit (chunks of
                 // 512), several spans; and whole blocks whose rows are no
                 // whole number of chunks (no spans).
                 Case{{4, 16, 16, 16}, false, 4, 1, 256, true},
                 Case{{1, 3, 8, 8}, false, 8, 2, 256, true}})
    for (int kind : {0, 1, 2}) {
      bool gpu = kind == 2;
      std::string dims;
      for (int64_t d : c.shape)
        dims += std::to_string(d) + "x";
      std::string enc =
          "#act.division<block = " + std::to_string(c.block) +
          ", bits = " + std::to_string(c.bits) +
          ", group = " + std::to_string(c.group) +
          ", rounding = " + (c.stochastic ? "stochastic" : "nearest") +
          ", layout = " + (c.nhwc ? "nhwc" : "nchw") + ">";
      SCOPED_TRACE(dims + enc +
                   (gpu    ? " gpu-emulated"
                    : kind ? " 3 workers"
                           : ""));
      std::string t = "tensor<" + dims + "f32>";
      std::string e = "!act.encoded<" + t + ", " + enc + ">";
      std::string text = "func.func @codec(%x: " + t + ", %seed: i64) -> (" +
                         e + ", " + t + ") {\n  %e = act.encode %x, id = 7, " +
                         "seed %seed : " + t + " -> " + e +
                         "\n  %d = act.decode %e : " + e + " -> " + t +
                         "\n  return %e, %d : " + e + ", " + t + "\n}\n";
      module = parseSourceString<ModuleOp>(text, &context);
      ASSERT_TRUE(module) << text;
      auto jit = JitFunction::compile(*module, "codec", true,
                                      gpu    ? emulated
                                      : kind ? workers
                                             : JitTarget());
      ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
      int64_t n = c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3];
      // Maps with a smooth part (what the averages take out) and noise.
      std::vector<float> x = data(n, unsigned(n), false);
      for (int64_t i = 0; i < n; ++i)
        x[i] = 0.25f * x[i] + 4.0f * std::sin(float(i % 97) * 0.05f);
      HostTensor in = HostTensor::allocate(
          ElementKind::F32, {c.shape[0], c.shape[1], c.shape[2], c.shape[3]});
      std::memcpy(in.data(), x.data(), in.byteSize());
      std::vector<HostTensor> outs;
      std::string error;
      ASSERT_TRUE(callJit(**jit, {in, scalar(41)}, outs, error)) << error;
      ASSERT_EQ(outs.size(), 4u);

      rt::DivisionParams p;
      std::copy(c.shape.begin(), c.shape.end(), p.shape);
      p.hDim = c.nhwc ? 1 : 2;
      p.wDim = c.nhwc ? 2 : 3;
      p.block = c.block;
      p.quant = {c.bits, c.group, c.stochastic, 41, 7};
      std::vector<uint32_t> words;
      std::vector<float> meta, averages;
      rt::encodeDivision(x.data(), p, words, meta, averages);
      EXPECT_EQ(values<uint32_t>(outs[0]), words);
      EXPECT_EQ(values<uint32_t>(outs[1]),
                values<uint32_t>(tensor(meta))); // bitwise
      EXPECT_EQ(values<uint32_t>(outs[2]), values<uint32_t>(tensor(averages)));
      std::vector<float> decoded(n);
      rt::decodeDivision(words.data(), meta.data(), averages.data(), p,
                         decoded.data());
      EXPECT_EQ(values<uint32_t>(outs[3]), values<uint32_t>(tensor(decoded)));
      // Each element decodes within its group's step of itself.
      for (int64_t i = 0; i < n; ++i) {
        float step = meta[2 * (i / c.group) + 1];
        ASSERT_LE(std::fabs(decoded[i] - x[i]), step * 1.0001f + 1e-5f)
            << "element " << i;
      }
    }
}

// act.fake_quant (compute quantization) at a run-time bit width: the
// reference's values bit for bit, one compiled function for every width;
// the levels used are at most 2^bits; 24 bits and more return the input.
TEST_F(LoweringTest, FakeQuantMatchesReferenceAtRunTimeBits) {
  const int64_t n = 1000;
  std::string t = "tensor<" + std::to_string(n) + "xf32>";
  module = parseSourceString<ModuleOp>(
      "func.func @fq(%x: " + t + ", %b: i32) -> " + t +
          " {\n  %q = act.fake_quant %x, bits %b : " + t +
          "\n  return %q : " + t + "\n}\n",
      &context);
  ASSERT_TRUE(module);
  auto jit = JitFunction::compile(*module, "fq", true);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  std::vector<float> x = data(n, 5, false);
  x[3] = INFINITY;
  x[7] = NAN;
  for (int bits : {1, 2, 3, 6, 8, 12, 16, 23, 24, 32, 0}) {
    SCOPED_TRACE("bits=" + std::to_string(bits));
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(
        **jit, {tensor(x), HostTensor::scalar<int32_t>(ElementKind::I32, bits)},
        outs, error))
        << error;
    std::vector<float> want(n);
    rt::fakeQuant(x.data(), n, bits, want.data());
    EXPECT_EQ(values<uint32_t>(outs[0]), values<uint32_t>(tensor(want)));
    std::set<float> levels;
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(x[i]))
        levels.insert(want[i]);
    if (bits >= 24)
      EXPECT_EQ(values<uint32_t>(outs[0]), values<uint32_t>(tensor(x)));
    else
      EXPECT_LE(levels.size(), size_t(1) << std::max(bits, 1));
  }
}

// act.fake_quant with stochastic rounding (id, seed): the reference's values
// bit for bit on a 2-d tensor (the row-major index keys the random bytes),
// different seeds round differently, and the rounding is unbiased: averaged
// over seeds, each element is within a small part of a step of itself.
TEST_F(LoweringTest, StochasticFakeQuantMatchesReferenceAndIsUnbiased) {
  const int64_t rows = 25, cols = 40, n = rows * cols;
  std::string t = "tensor<25x40xf32>";
  module = parseSourceString<ModuleOp>(
      "func.func @fq(%x: " + t + ", %b: i32, %s: i64) -> " + t +
          " {\n  %q = act.fake_quant %x, bits %b, id = 7, seed %s : " + t +
          "\n  return %q : " + t + "\n}\n",
      &context);
  ASSERT_TRUE(module);
  auto jit = JitFunction::compile(*module, "fq", true);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  std::vector<float> x = data(n, 9, false);
  x[11] = INFINITY;
  for (int bits : {2, 4}) {
    SCOPED_TRACE("bits=" + std::to_string(bits));
    std::vector<double> sum(n, 0.0);
    std::vector<float> nearest(n), first;
    rt::fakeQuant(x.data(), n, bits, nearest.data());
    const int seeds = 200;
    for (int seed = 1; seed <= seeds; ++seed) {
      std::vector<HostTensor> outs;
      std::string error;
      HostTensor in = HostTensor::allocate(ElementKind::F32, {rows, cols});
      std::memcpy(in.data(), x.data(), in.byteSize());
      ASSERT_TRUE(
          callJit(**jit,
                  {in, HostTensor::scalar<int32_t>(ElementKind::I32, bits),
                   HostTensor::scalar<int64_t>(ElementKind::I64, seed)},
                  outs, error))
          << error;
      std::vector<float> want(n);
      rt::fakeQuant(x.data(), n, bits, want.data(), true, seed, 7);
      ASSERT_EQ(values<uint32_t>(outs[0]), values<uint32_t>(tensor(want)))
          << "seed " << seed;
      if (seed == 1)
        first = want;
      else if (seed == 2)
        EXPECT_NE(values<uint32_t>(tensor(first)),
                  values<uint32_t>(tensor(want)));
      for (int64_t i = 0; i < n; ++i)
        sum[i] += want[i];
    }
    EXPECT_TRUE(std::isinf(first[11]));
    float mn = INFINITY, mx = -INFINITY;
    for (float v : x)
      if (std::isfinite(v))
        mn = std::fmin(mn, v), mx = std::fmax(mx, v);
    double step = (mx - mn) / ((1 << bits) - 1);
    // 200 draws of a rounding whose spread is at most half a step: the
    // mean's error is below 0.25 step with overwhelming probability, while
    // rounding to the nearest is off by up to half a step (on average a
    // quarter) for most elements.
    double worst = 0, nearestMean = 0;
    int64_t finite = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i]))
        continue;
      ++finite;
      worst = std::max(worst, std::fabs(sum[i] / seeds - x[i]) / step);
      nearestMean += std::fabs(nearest[i] - x[i]) / step;
    }
    EXPECT_LT(worst, 0.2);
    EXPECT_GT(nearestMean / finite, 0.2);
  }
}

/// One quant codec of GpuKernelsEmulatedMatchReferenceBitForBit: bits,
/// group, rounding, statistics' format and length.
struct EmulatedQuantCase {
  unsigned bits;
  int64_t group;
  bool stochastic;
  bool bf16;
  int64_t n;
};
std::string caseName(const EmulatedQuantCase &c) {
  return std::to_string(c.bits) + "bits_group" + std::to_string(c.group) +
         (c.stochastic ? "_stochastic" : "_nearest") + (c.bf16 ? "_bf16" : "") +
         (c.n ? "_n" + std::to_string(c.n) : "_split");
}
void PrintTo(const EmulatedQuantCase &c, std::ostream *os) {
  *os << caseName(c);
}

/// The GPU kernels (convert-act-to-linalg{target=gpu}: whole tiles by a
/// thread per four words, 16-byte accesses, group statistics over each
/// group's threads) run on the CPU as loops (target=gpu-emulated), against
/// the reference: every encoding, group sizes whose groups span 1 to 32
/// tiles (more than 8: a warp per group, threads owning several quarter
/// tiles) or split a tile, groups beyond a warp's reach, the flat tail and
/// the generic lowering for other sizes. A test per quant codec (they run
/// in parallel), then one for the other encodings. What only a GPU run
/// checks: the shuffles (upstream's butterfly lowering) and NVPTX's code;
/// bench/gpu_kernels.sh does.
class GpuQuantEmulatedTest
    : public LoweringTest,
      public ::testing::WithParamInterface<EmulatedQuantCase> {};

std::vector<EmulatedQuantCase> emulatedQuantCases() {
  std::vector<EmulatedQuantCase> cases;
  for (unsigned bits : {1u, 2u, 4u, 8u})
    for (int64_t group : {256, 64, 1024, 2048, 48})
      for (bool stochastic : {true, false})
        for (int64_t n : {5000, 4096}) {
          // 5000: whole groups and a ragged tail; 4096: whole tiles only.
          if ((!stochastic || n == 4096) && group != 256)
            continue;
          // 2048 at 8 bits: 32 tiles, a warp whose threads own 4 quarter
          // tiles each (1024 covers 2 per thread at 8 bits).
          if (group == 2048 && bits != 8)
            continue;
          cases.push_back({bits, group, stochastic, false, n});
          // bf16 statistics at 256 and 2048, stochastic, n = 5000.
          if (stochastic && n == 5000 && (group == 256 || group == 2048))
            cases.push_back({bits, group, stochastic, true, n});
        }
  // Groups beyond a warp's reach (64 and 128 tiles, and 12288 elements at
  // 2 bits: 48 tiles, not a power of two) go through the generic lowering,
  // whose statistics are reduced in slices (one thread per group and slice,
  // then per group): two whole groups and a partial one (n = 0: 2 groups
  // and 3616). The last with bf16 statistics. (Not 8192 at 2 bits: 32
  // tiles, a warp's group, whose emulation recomputes the warp's 8192
  // elements in each thread, unrolled: LLVM took over 10 minutes on it.)
  cases.push_back({4, 8192, true, false, 0});
  cases.push_back({8, 8192, true, false, 0});
  cases.push_back({2, 12288, true, false, 0});
  cases.push_back({4, 8192, true, true, 0});
  return cases;
}

TEST_P(GpuQuantEmulatedTest, MatchesReferenceBitForBit) {
  // LLVM at -O0: the bits do not depend on it, and a warp's group unrolls
  // its cluster's elements into each emulated thread.
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  emulated.optLevel = 0;
  const EmulatedQuantCase &c = GetParam();
  const bool split = c.n == 0;
  const int64_t n = split ? 2 * c.group + 3616 : c.n;
  std::string attr = quantAttr(c.bits, c.group, c.stochastic, c.bf16);
  SCOPED_TRACE(attr + " n=" + std::to_string(n));
  auto jit = compileCodec(n, attr, "f32", emulated);
  ASSERT_TRUE(jit);
  std::vector<float> x;
  if (split) {
    x = data(n, 17, false);
    std::fill(x.begin() + c.group, x.begin() + 2 * c.group, 0.75f);
    checkQuant(*jit, x, c.bits, c.group, true, 0xabcdef, /*dynamic=*/false,
               c.bf16);
    return;
  }
  x = data(n, unsigned(c.bits * 10 + n), false);
  if (n > 1000)
    std::fill(x.begin() + 1024, x.begin() + 1024 + c.group, -1.5f);
  checkQuant(*jit, x, c.bits, c.group, c.stochastic, 0x5eed0000LL + c.bits,
             /*dynamic=*/false, c.bf16);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, GpuQuantEmulatedTest, ::testing::ValuesIn(emulatedQuantCases()),
    [](const ::testing::TestParamInfo<EmulatedQuantCase> &info) {
      return caseName(info.param);
    });

/// The other encodings' GPU kernels, emulated (see GpuQuantEmulatedTest):
/// the float formats, a misaligned input view and the mask.
TEST_F(LoweringTest, GpuKernelsEmulatedMatchReferenceBitForBit) {
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  const FloatCase floats[] = {
      {"#act.float<format = f16>", rt::FloatFormat::F16},
      {"#act.float<format = bf16>", rt::FloatFormat::BF16},
      {"#act.float<format = fp10>", rt::FloatFormat::FP10},
      {"#act.float<format = e4m3>", rt::FloatFormat::E4M3},
      {"#act.float<format = e5m2>", rt::FloatFormat::E5M2}};
  for (const FloatCase &c : floats)
    for (int64_t n : {1000, 1003}) {
      SCOPED_TRACE(std::string(c.attr) + " n=" + std::to_string(n));
      auto jit = compileCodec(n, c.attr, "f32", emulated);
      ASSERT_TRUE(jit);
      // Specials but no NaN, whose code's payload bits the reference does
      // not pin (FloatFormatsMatchReferenceBitForBit checks NaN stays NaN).
      std::vector<float> x = data(n, 11, true);
      for (float &v : x)
        if (std::isnan(v))
          v = -2.0f;
      std::vector<HostTensor> outs;
      std::string error;
      ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(0)}, outs, error)) << error;
      std::vector<uint32_t> words = rt::encodeFloats(x.data(), n, c.format);
      std::vector<uint8_t> payload = values<uint8_t>(outs[0]);
      ASSERT_LE(payload.size(), words.size() * 4);
      EXPECT_EQ(std::memcmp(payload.data(), words.data(), payload.size()), 0);
      std::vector<float> ref(n), got = values<float>(outs[1]);
      rt::decodeFloats(words.data(), n, c.format, ref.data());
      for (int64_t i = 0; i < n; ++i)
        EXPECT_TRUE(std::memcmp(&got[i], &ref[i], 4) == 0 ||
                    (std::isnan(got[i]) && std::isnan(ref[i])))
            << i << ": " << got[i] << " vs " << ref[i];
    }

  // An input view one float off a 16-byte boundary: the kernels' element-
  // by-element body.
  for (const char *attr :
       {"#act.quant<bits = 4>", "#act.float<format = bf16>"}) {
    SCOPED_TRACE(std::string(attr) + " misaligned");
    const int64_t n = 5000;
    auto jit = compileCodec(n, attr, "f32", emulated, /*skip=*/1);
    ASSERT_TRUE(jit);
    std::vector<float> x = data(n + 1, 21, false);
    std::vector<HostTensor> outs;
    std::string error;
    ASSERT_TRUE(callJit(*jit, {tensor(x), scalar(99)}, outs, error)) << error;
    std::vector<uint32_t> words;
    if (std::string(attr).find("quant") != std::string::npos) {
      std::vector<float> meta;
      rt::encodeQuant(x.data() + 1, n, {4, 256, true, 99, 7}, words, meta);
      EXPECT_EQ(values<uint32_t>(outs[0]), words);
      EXPECT_EQ(values<float>(outs[1]), meta);
    } else {
      words = rt::encodeFloats(x.data() + 1, n, rt::FloatFormat::BF16);
      std::vector<uint8_t> payload = values<uint8_t>(outs[0]);
      EXPECT_EQ(std::memcmp(payload.data(), words.data(), payload.size()), 0);
    }
  }

  auto jit =
      compileCodec(1000, "#act.mask<predicate = positive>", "i1", emulated);
  ASSERT_TRUE(jit);
  checkMask(*jit, data(1000, 4, true), rt::MaskPredicate::Positive);
}

} // namespace

// Quantization of groups holding infinities, NaN or finite extremes whose
// range overflows (docs/Encodings.md): statistics count finite elements
// only, the step comes from halves when max - min overflows, infinities
// saturate, NaN elements get code 0, a group without finite elements
// decodes to 0. One extreme element used to turn its whole group into NaN.
// Every target against the reference, bit for bit, and no NaN anywhere.
TEST_F(LoweringTest, QuantGroupsWithSpecialsAndExtremeRanges) {
  const int64_t group = 256, n = 6 * group + 100;
  std::vector<float> x = data(n, 77, false);
  x[3] = INFINITY;      // group 0: +inf
  x[group + 1] = 3e38f; // group 1: range overflows
  x[group + 2] = -3e38f;
  x[2 * group + 5] = NAN; // group 2: a NaN
  x[2 * group + 6] = -INFINITY;
  std::fill(x.begin() + 3 * group, x.begin() + 4 * group, INFINITY); // group 3
  x[3 * group + 7] = NAN;
  x[4 * group + 9] = -3.4e38f; // group 4: 1-bit extreme
  x[4 * group + 10] = 3.4e38f;
  // Group 5: a range so small (the least subnormal) that the inverse step
  // overflows: finite elements, but not plain ones for the codes.
  std::fill(x.begin() + 5 * group, x.begin() + 6 * group, 0.0f);
  x[5 * group + 11] = 0x1p-149f;
  JitTarget emulated;
  emulated.emulateGpuKernels = true;
  // (bf16 statistics: the minimum of group 4 is below bf16's range, a grid
  // that does not cover its group; the steps are rounded up, so the
  // bounds below are the stored steps.)
  for (const JitTarget &target : {JitTarget(), emulated})
    for (unsigned bits : {1u, 2u, 4u, 8u})
      for (bool stochastic : {true, false})
        for (bool bf16 : {false, true}) {
          std::string attr = quantAttr(bits, group, stochastic, bf16);
          SCOPED_TRACE(attr +
                       (target.emulateGpuKernels ? " gpu-emulated" : ""));
          auto jit = compileCodec(n, attr, "f32", target);
          ASSERT_TRUE(jit);
          checkQuant(*jit, x, bits, group, stochastic, 0xfeedLL + bits,
                     /*dynamic=*/false, bf16);
          std::vector<HostTensor> outs;
          std::string error;
          ASSERT_TRUE(
              callJit(*jit, {tensor(x), scalar(0xfeedLL + bits)}, outs, error))
              << error;
          std::vector<float> decoded = values<float>(outs[2]);
          for (int64_t i = 0; i < n; ++i)
            ASSERT_FALSE(std::isnan(decoded[i])) << "element " << i;
          // Group 0: +inf saturates at the top code, which decodes as the
          // group's finite maximum (within the step's rounding), and the
          // finite neighbours are within a step of themselves.
          float mx = -INFINITY, mn = INFINITY;
          for (int64_t i = 0; i < group; ++i)
            if (std::isfinite(x[i])) {
              mx = std::max(mx, x[i]);
              mn = std::min(mn, x[i]);
            }
          float step = (mx - mn) / float((1u << bits) - 1);
          if (bf16)
            step = statValues(outs[1], true)[1];
          if (!bf16)
            EXPECT_NEAR(decoded[3], mx, std::fabs(mx) * 0x1p-22f);
          else // the top of the stored grid, at or above the maximum
            EXPECT_EQ(decoded[3], std::fma(float((1u << bits) - 1), step,
                                           statValues(outs[1], true)[0]));
          if (bf16)
            EXPECT_GE(decoded[3], mx);
          for (int64_t i = 0; i < group; ++i)
            if (i != 3)
              EXPECT_LE(std::fabs(decoded[i] - x[i]), step * 1.0001f) << i;
          // Group 1: the extremes decode finite, near themselves (2+ bits).
          EXPECT_TRUE(std::isfinite(decoded[group + 1]));
          if (bits > 1) {
            float near = bf16 ? 0x1p-7f : 1e-5f;
            EXPECT_NEAR(decoded[group + 1] / 3e38f, 1.0f, near);
            EXPECT_NEAR(decoded[group + 2] / -3e38f, 1.0f, near);
          }
          // Group 3: no finite element but NaN: everything decodes to 0.
          for (int64_t i = 3 * group; i < 4 * group; ++i)
            EXPECT_EQ(decoded[i], 0.0f) << i;
        }
}

// Specials in the last group of a tensor, at every group size from 1 to 256
// and every length of the last (partial) group: the CPU (vector chunks for
// groups of a multiple of 16, the generic loop for the rest), the emulated
// GPU kernels and the reference agree bit for bit, and no finite element
// decodes more than a step away. The statistics' min/max started from
// MLIR's identity of minnumf/maxnumf, NaN, under `nnan`: an infinity in the
// last lanes of a chunk's last group emptied or skewed the group's range
// on the CPU (x[978] = -4.40387 decoded as 1.0 with -inf at x[1022] in
// #act.quant<bits = 4, group = 64>).
/// Group sizes [start, start + 32) of
/// QuantSpecialsInTheLastGroupAtEveryGroupSizeAndTail: eight tests that run
/// in parallel.
class QuantLastGroupTest : public LoweringTest,
                           public ::testing::WithParamInterface<int64_t> {};

TEST_P(QuantLastGroupTest, QuantSpecialsInTheLastGroupAtEveryGroupSizeAndTail) {
  // 512 compiles: LLVM at -O0 (the bits do not depend on it).
  JitTarget cpu, emulated;
  cpu.optLevel = emulated.optLevel = 0;
  emulated.emulateGpuKernels = true;
  auto bitsOf = [](int64_t group) {
    return std::array<unsigned, 4>{1, 2, 4, 8}[group % 4];
  };
  auto stochasticOf = [](int64_t group) { return (group / 4) % 2 == 1; };
  // A third of the group sizes store bf16 statistics.
  auto bf16Of = [](int64_t group) { return group % 3 == 0; };
  // Group sizes 1 to 256, compiled 32 at a time.
  const int64_t start = GetParam();
  for (const JitTarget &target : {cpu, emulated}) {
    std::vector<std::string> attrs;
    for (int64_t group = start; group < start + 32; ++group)
      attrs.push_back(
          quantAttr(bitsOf(group), group, stochasticOf(group), bf16Of(group)));
    auto jits = compileDynamicCodecs(attrs, target);
    ASSERT_EQ(jits.size(), attrs.size());
    for (int64_t group = start; group < start + 32; ++group) {
      unsigned bits = bitsOf(group);
      bool stochastic = stochasticOf(group);
      SCOPED_TRACE(attrs[group - start] +
                   (target.emulateGpuKernels ? " gpu-emulated" : ""));
      JitFunction *jit = jits[group - start].get();
      // At least one whole chunk of the CPU's vector path (at most 8
      // groups of at most 256) before the last group.
      int64_t whole = group * ((2048 + group - 1) / group + 1);
      for (int64_t tail = 0; tail < group; ++tail) {
        int64_t n = whole + tail;
        std::vector<float> x(n, 1.0f);
        for (int64_t i = 0; i < n; ++i)
          x[i] = float((i * 37) % 23) * 0.25f - 2.0f;
        // The last group: the tail (or the last whole group), with -inf at
        // its very end, +inf or NaN before it, and a finite outlier.
        int64_t size = tail ? tail : group;
        int64_t first = n - size;
        x[n - 1] = -INFINITY;
        if (size > 1)
          x[first + (tail * 7) % (size - 1)] = tail % 2 ? NAN : INFINITY;
        if (size > 2)
          x[first + (tail * 3) % (size - 2)] = -4.40387f;
        // The last whole group before a partial one holds specials too.
        if (tail) {
          x[first - 1] = INFINITY;
          x[first - group + (tail % group)] = -INFINITY;
        }
        SCOPED_TRACE("n = " + std::to_string(n));
        checkQuant(*jit, x, bits, group, stochastic, 0x5eedLL + tail,
                   /*dynamic=*/true, bf16Of(group));
        if (::testing::Test::HasFailure())
          return;
        std::vector<HostTensor> outs;
        std::string error;
        ASSERT_TRUE(
            callJit(*jit, {tensor(x), scalar(0x5eedLL + tail)}, outs, error))
            << error;
        std::vector<float> decoded = values<float>(outs.back());
        // Every finite element within a step of itself (the step of its
        // group's finite range).
        for (int64_t g0 = 0; g0 < n; g0 += group) {
          int64_t g1 = std::min(n, g0 + group);
          float mn = INFINITY, mx = -INFINITY;
          for (int64_t i = g0; i < g1; ++i)
            if (std::isfinite(x[i])) {
              mn = std::min(mn, x[i]);
              mx = std::max(mx, x[i]);
            }
          float step = mx > mn ? (mx - mn) / float((1u << bits) - 1) : 0.0f;
          if (bf16Of(group)) // the stored step, rounded up
            step =
                std::max(step, statValues(outs[1], true)[2 * (g0 / group) + 1]);
          for (int64_t i = g0; i < g1; ++i) {
            ASSERT_TRUE(std::isfinite(decoded[i])) << "element " << i;
            if (std::isfinite(x[i]))
              ASSERT_LE(std::fabs(decoded[i] - x[i]), step * 1.0001f + 1e-6f)
                  << "element " << i << " of " << x[i];
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, QuantLastGroupTest,
                         ::testing::Range<int64_t>(1, 257, 32));
