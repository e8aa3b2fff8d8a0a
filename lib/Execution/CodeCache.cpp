//===- CodeCache.cpp - compiled steps kept between processes --------------===//

#include "act/Execution/CodeCache.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <dlfcn.h>
#include <sys/time.h>
#include <vector>

using namespace mlir;
using namespace mlir::act;

/// The entry's header: this magic, then the object's SHA-256.
static constexpr llvm::StringLiteral kMagic = "ACT-OBJ1";
static constexpr size_t kHashBytes = 32;

namespace {
/// Feeds what is written to a SHA-256 (the module is hashed as it is
/// printed, never held as text).
class HashingStream : public llvm::raw_ostream {
public:
  explicit HashingStream(llvm::SHA256 &hash) : hash(hash) {}
  ~HashingStream() override { flush(); }

private:
  void write_impl(const char *data, size_t size) override {
    hash.update(llvm::StringRef(data, size));
    written += size;
  }
  uint64_t current_pos() const override { return written; }
  llvm::SHA256 &hash;
  uint64_t written = 0;
};
} // namespace

/// The act binary this code is part of (act-run, libActCAPI.so, a test):
/// its path, size and modification time.
static std::string getBuildIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&getBuildIdentity), &info) ||
        !info.dli_fname)
      return std::string("unknown");
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(info.dli_fname, status))
      return std::string(info.dli_fname);
    return std::string(info.dli_fname) + " " +
           std::to_string(status.getSize()) + " " +
           std::to_string(
               status.getLastModificationTime().time_since_epoch().count());
  }();
  return identity;
}

// Every field of JitTarget changes the code, except cacheDir and cacheOnly
// (where the code is kept, whether a miss compiles): one added must be
// hashed below (this fails to compile until the size is updated).
static_assert(sizeof(JitTarget) == 248,
              "a new JitTarget field: add it to CodeCache::getKey");

std::string CodeCache::getKey(ModuleOp module,
                              llvm::ArrayRef<std::string> names,
                              bool countAllocations, const JitTarget &target,
                              llvm::StringRef cpuFeatures) {
  llvm::SHA256 hash;
  {
    HashingStream os(hash);
    os << "act code cache 1\n"
       << "llvm " << LLVM_VERSION_STRING << "\n"
       << "build " << getBuildIdentity() << "\n"
       << "cpu " << llvm::sys::getHostCPUName() << " " << cpuFeatures << "\n";
    for (const std::string &name : names)
      os << "function " << name << "\n";
    os << "countAllocations " << countAllocations << "\n"
       << "gpu " << target.gpu << "\n"
       << "deviceTensors " << target.deviceTensors << "\n"
       << "cpuFeatures " << target.cpuFeatures << "\n"
       << "chip " << target.chip << " " << target.features << "\n"
       << "maxPartialBytes " << target.maxPartialBytes << "\n"
       << "gpuLibraries " << target.gpuLibraries << "\n"
       << "emulateGpuLibraries " << target.emulateGpuLibraries << "\n"
       << "emulateGpuKernels " << target.emulateGpuKernels << "\n"
       << "recordStorage " << target.recordStorage << "\n"
       << "peakReport " << target.peakReport << "\n"
       << "decodeIntoConsumers " << target.decodeIntoConsumers << "\n"
       << "optLevel " << target.optLevel << "\n"
       << "outlineMinLoops " << target.outlineMinLoops << "\n"
       << "fuseMaxOperands " << target.fuseMaxOperands << "\n"
       << "chunkPasses " << target.chunkPasses << "\n"
       << "poolInPlace " << target.poolInPlace << "\n"
       << "prefetchDistance " << target.prefetchDistance << "\n"
       << "threads " << target.threads << "\n"
       << "module\n";
    module->print(os);
  }
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

static std::string entryPath(llvm::StringRef directory, llvm::StringRef key) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + ".o");
  return std::string(path);
}

static std::array<uint8_t, 32> sha256(llvm::StringRef data) {
  return llvm::SHA256::hash(llvm::arrayRefFromStringRef(data));
}

std::unique_ptr<llvm::MemoryBuffer>
CodeCache::lookup(llvm::StringRef key) const {
  std::string path = entryPath(directory, key);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return nullptr;
  llvm::StringRef bytes = (*file)->getBuffer();
  if (bytes.size() <= kMagic.size() + kHashBytes || !bytes.starts_with(kMagic))
    return nullptr;
  llvm::StringRef stored = bytes.substr(kMagic.size(), kHashBytes);
  llvm::StringRef object = bytes.drop_front(kMagic.size() + kHashBytes);
  std::array<uint8_t, 32> digest = sha256(object);
  if (stored != llvm::toStringRef(llvm::ArrayRef<uint8_t>(digest)))
    return nullptr;
  // Recently used: the size limit removes the oldest modification first.
  ::utimes(path.c_str(), nullptr);
  return llvm::MemoryBuffer::getMemBufferCopy(object, path);
}

llvm::Error CodeCache::store(llvm::StringRef key,
                             llvm::StringRef object) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot make the code cache " + directory +
                                   ": " + ec.message());
  std::string path = entryPath(directory, key);
  std::array<uint8_t, 32> digest = sha256(object);
  if (llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
        os << kMagic << llvm::toStringRef(llvm::ArrayRef<uint8_t>(digest))
           << object;
        return llvm::Error::success();
      }))
    return llvm::createStringError("cannot write to the code cache " +
                                   directory + ": " +
                                   llvm::toString(std::move(error)));
  // Within the limit: the least recently used entries go first.
  struct Entry {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".o")
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status))
      continue;
    entries.push_back(
        {it->path(), status.getSize(), status.getLastModificationTime()});
    total += status.getSize();
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &entry : entries) {
    if (total <= maxBytes)
      break;
    if (entry.path == path)
      continue;
    if (!llvm::sys::fs::remove(entry.path))
      total -= entry.size;
  }
  return llvm::Error::success();
}
