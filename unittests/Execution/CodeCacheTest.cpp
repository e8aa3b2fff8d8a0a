//===- CodeCacheTest.cpp - compiled code kept between processes -----------===//
//
// CodeCache's entries verify (a truncated or altered file is a miss, never
// code), its size limit removes the least recently used entries, its key
// changes with every input of the code, and a step loaded from the cache
// computes bit for bit what the compiled one does.
//
//===----------------------------------------------------------------------===//

#include "act/Execution/CodeCache.h"
#include "act/InitAll.h"
#include "act/Support/CpuFeatures.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <sys/time.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::act;

namespace {

class CodeCacheTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }

  CodeCacheTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    llvm::SmallString<128> path;
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("act-code-cache-test", path));
    directory = std::string(path);
  }
  ~CodeCacheTest() override { llvm::sys::fs::remove_directories(directory); }

  std::string entry(llvm::StringRef key) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, key + ".o");
    return std::string(path);
  }

  /// A 4-bit stochastic codec: encode then decode, the encoding's storage
  /// returned too.
  OwningOpRef<ModuleOp> parseCodec() {
    const char *text = R"mlir(
func.func @codec(%x: tensor<1000xf32>, %seed: i64)
    -> (!act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>, tensor<1000xf32>) {
  %e = act.encode %x, id = 3, seed %seed
      : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
  %d = act.decode %e
      : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> -> tensor<1000xf32>
  return %e, %d : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>, tensor<1000xf32>
}
)mlir";
    return parseSourceString<ModuleOp>(text, &context);
  }

  MLIRContext context;
  std::string directory;
};

TEST_F(CodeCacheTest, EntriesVerify) {
  CodeCache cache(directory);
  std::string object(5000, '\0');
  for (size_t i = 0; i < object.size(); ++i)
    object[i] = char(i * 7 + 1);
  ASSERT_FALSE(cache.lookup("k"));
  ASSERT_FALSE(llvm::errorToBool(cache.store("k", object)));
  std::unique_ptr<llvm::MemoryBuffer> hit = cache.lookup("k");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->getBuffer(), object);

  // One byte of the object altered: not the stored code, a miss.
  {
    auto bytes = llvm::MemoryBuffer::getFile(entry("k"));
    ASSERT_TRUE(bool(bytes));
    std::string altered = (*bytes)->getBuffer().str();
    altered[altered.size() - 100] ^= 1;
    std::error_code ec;
    llvm::raw_fd_ostream os(entry("k"), ec);
    os << altered;
  }
  EXPECT_FALSE(cache.lookup("k"));
  // Truncated (a process killed while copying it by hand): a miss.
  ASSERT_FALSE(llvm::errorToBool(cache.store("k", object)));
  ASSERT_TRUE(cache.lookup("k"));
  ASSERT_EQ(::truncate(entry("k").c_str(), 1000), 0);
  EXPECT_FALSE(cache.lookup("k"));
  // Not an entry at all.
  ASSERT_EQ(::truncate(entry("k").c_str(), 0), 0);
  EXPECT_FALSE(cache.lookup("k"));
}

TEST_F(CodeCacheTest, SizeLimitRemovesLeastRecentlyUsed) {
  // Room for two entries of 1000 bytes (and their headers).
  CodeCache cache(directory, 2100);
  std::string object(1000, 'x');
  auto age = [&](llvm::StringRef key, long seconds) {
    struct timeval times[2];
    gettimeofday(&times[0], nullptr);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    ASSERT_EQ(::utimes(entry(key).c_str(), times), 0);
  };
  ASSERT_FALSE(llvm::errorToBool(cache.store("a", object)));
  age("a", 300);
  ASSERT_FALSE(llvm::errorToBool(cache.store("b", object)));
  age("b", 200);
  // Using "a" makes "b" the least recently used.
  ASSERT_TRUE(cache.lookup("a"));
  ASSERT_FALSE(llvm::errorToBool(cache.store("c", object)));
  EXPECT_TRUE(llvm::sys::fs::exists(entry("a")));
  EXPECT_FALSE(llvm::sys::fs::exists(entry("b")));
  EXPECT_TRUE(llvm::sys::fs::exists(entry("c")));
  // An entry larger than the whole limit is still kept (the one just
  // compiled); the others go.
  ASSERT_FALSE(llvm::errorToBool(cache.store("d", std::string(3000, 'y'))));
  EXPECT_TRUE(llvm::sys::fs::exists(entry("d")));
  EXPECT_FALSE(llvm::sys::fs::exists(entry("a")));
  EXPECT_FALSE(llvm::sys::fs::exists(entry("c")));
}

TEST_F(CodeCacheTest, UnwritableDirectoryIsAnError) {
  // A file where the directory should be.
  std::string file = entry("file");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    os << "x";
  }
  CodeCache cache(file);
  llvm::Error error = cache.store("k", "object");
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find(file), std::string::npos);
  EXPECT_FALSE(cache.lookup("k"));
}

TEST_F(CodeCacheTest, KeyFollowsModuleAndTarget) {
  OwningOpRef<ModuleOp> module = parseCodec();
  ASSERT_TRUE(module);
  std::vector<std::string> names = {"codec"};
  JitTarget target;
  std::string key =
      CodeCache::getKey(*module, names, true, target, "+avx2,+fma");
  EXPECT_EQ(key.size(), 64u);
  // The same inputs, the same key; the cache's own directory is not one.
  JitTarget elsewhere = target;
  elsewhere.cacheDir = "/elsewhere";
  EXPECT_EQ(CodeCache::getKey(*module, names, true, elsewhere, "+avx2,+fma"),
            key);
  // Any input of the code changes it.
  EXPECT_NE(CodeCache::getKey(*module, names, false, target, "+avx2,+fma"),
            key);
  EXPECT_NE(CodeCache::getKey(*module, names, true, target, "+avx2,-fma"), key);
  JitTarget other = target;
  other.chunkPasses = 0;
  EXPECT_NE(CodeCache::getKey(*module, names, true, other, "+avx2,+fma"), key);
  other = target;
  other.optLevel = 3;
  EXPECT_NE(CodeCache::getKey(*module, names, true, other, "+avx2,+fma"), key);
  OwningOpRef<ModuleOp> changed = parseCodec();
  (*changed)->setAttr("act.changed", UnitAttr::get(&context));
  EXPECT_NE(CodeCache::getKey(*changed, names, true, target, "+avx2,+fma"),
            key);
}

TEST_F(CodeCacheTest, LoadedStepComputesWhatTheCompiledOneDoes) {
  JitTarget target;
  target.cacheDir = directory;
  // With the async runtime (its symbols resolved when loading too).
  target.threads = 2;
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(float(i)) * 3.0f;
  auto run = [&](JitFunction &jit) {
    HostTensor input =
        HostTensor::view(ElementKind::F32, {1000}, x.data(), /*isTensor=*/true);
    HostTensor seed = HostTensor::scalar<int64_t>(ElementKind::I64, 42);
    auto results = jit.call({input, seed});
    EXPECT_TRUE(bool(results)) << llvm::toString(results.takeError());
    std::vector<std::string> bytes;
    if (!results)
      return bytes;
    for (const HostTensor &t : *results)
      bytes.emplace_back(t.data(), t.byteSize());
    // The decoded values are x within a 4-bit step of its range (6 / 15):
    // the code ran.
    const float *decoded = results->back().as<float>();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_LE(std::fabs(decoded[i] - x[i]), 0.41f) << i;
    return bytes;
  };
  std::vector<std::vector<std::string>> outputs;
  for (bool expectCached : {false, true}) {
    OwningOpRef<ModuleOp> module = parseCodec();
    auto jit = JitFunction::compile(*module, "codec", true, target);
    ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
    EXPECT_EQ((*jit)->isFromCache(), expectCached);
    outputs.push_back(run(**jit));
  }
  ASSERT_EQ(outputs[0].size(), outputs[1].size());
  for (size_t i = 0; i < outputs[0].size(); ++i)
    EXPECT_EQ(outputs[0][i], outputs[1][i]) << "result " << i;
}

// JitTarget::cacheOnly (what a caller that compiles elsewhere uses): a
// miss compiles nothing and leaves the module as it was; once the code is
// in the cache, it loads.
TEST_F(CodeCacheTest, CacheOnlyLoadsAndNeverCompiles) {
  JitTarget target;
  target.cacheDir = directory;
  target.threads = 1;
  JitTarget only = target;
  only.cacheOnly = true;
  OwningOpRef<ModuleOp> module = parseCodec();
  ASSERT_TRUE(module);
  std::string before;
  llvm::raw_string_ostream(before) << *module;
  auto missed = JitFunction::compile(*module, "codec", true, only);
  ASSERT_TRUE(bool(missed)) << llvm::toString(missed.takeError());
  EXPECT_EQ(*missed, nullptr);
  std::string after;
  llvm::raw_string_ostream(after) << *module;
  EXPECT_EQ(after, before); // (not lowered)
  std::error_code ec;
  EXPECT_TRUE(llvm::sys::fs::directory_iterator(directory, ec) ==
              llvm::sys::fs::directory_iterator());
  // Compiled (and cached) as usual, then loaded by cacheOnly.
  OwningOpRef<ModuleOp> compiled = parseCodec();
  auto jit = JitFunction::compile(*compiled, "codec", true, target);
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
  EXPECT_FALSE((*jit)->isFromCache());
  OwningOpRef<ModuleOp> again = parseCodec();
  auto loaded = JitFunction::compile(*again, "codec", true, only);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  ASSERT_NE(*loaded, nullptr);
  EXPECT_TRUE((*loaded)->isFromCache());
}

// The key is the module as given, before act's lowering (a hit skips it);
// an entry that verifies but is no loadable code is compiled anew (the
// module lowered then) and replaced.
TEST_F(CodeCacheTest, KeyIsTheModuleAsGivenAndABadEntryIsCompiledAnew) {
  const char *text = R"mlir(
func.func @roundtrip(%x: tensor<1000xf32>, %seed: i64) -> tensor<1000xf32> {
  %e = act.encode %x, id = 3, seed %seed
      : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
  %d = act.decode %e
      : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}
)mlir";
  JitTarget target;
  target.cacheDir = directory;
  target.threads = 1;
  auto features = getCpuFeatures(target.cpuFeatures);
  ASSERT_TRUE(bool(features)) << llvm::toString(features.takeError());
  OwningOpRef<ModuleOp> given = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(given);
  std::string key =
      CodeCache::getKey(*given, {"roundtrip"}, true, target, *features);
  CodeCache cache(directory);
  ASSERT_FALSE(llvm::errorToBool(cache.store(key, "not an object file")));
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::cos(float(i)) * 2.0f;
  for (bool expectCached : {false, true}) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    auto jit = JitFunction::compile(*module, "roundtrip", true, target);
    ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());
    EXPECT_EQ((*jit)->isFromCache(), expectCached);
    HostTensor input =
        HostTensor::view(ElementKind::F32, {1000}, x.data(), /*isTensor=*/true);
    auto results =
        (*jit)->call({input, HostTensor::scalar<int64_t>(ElementKind::I64, 7)});
    ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
    const float *decoded = results->front().as<float>();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::fabs(decoded[i] - x[i]), 0.28f) << i; // (4 / 15)
    // The bad entry replaced by the code, under the same key.
    auto object = cache.lookup(key);
    ASSERT_TRUE(object);
    EXPECT_NE(object->getBuffer(), "not an object file");
  }
}

} // namespace
