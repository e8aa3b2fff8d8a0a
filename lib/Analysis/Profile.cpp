//===- Profile.cpp - the sensitivity profile file -------------------------===//

#include "act/Analysis/Profile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::act;
namespace json = llvm::json;

const ProfileTensor *Profile::lookup(int64_t id) const {
  for (const ProfileTensor &t : tensors)
    if (t.id == id)
      return &t;
  return nullptr;
}

std::string mlir::act::getGraphFingerprint(const TrainingGraph &graph) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::SmallDenseSet<int64_t> seen;
  for (const SavedValue &s : graph.saved) {
    // A value in two encodings (value and sign mask) counts once.
    if (!seen.insert(s.id).second)
      continue;
    Operation *producer = s.getProducer();
    os << s.id << ':' << (producer ? producer->getName().getStringRef() : "arg")
       << ':' << s.origin.getType() << ';';
  }
  return llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true, 16);
}

namespace mlir::act {
static json::Value toJSON(const ProfileTensor &t) {
  return json::Object{{"id", t.id},
                      {"elements", t.elements},
                      {"bits", int64_t(t.bits)},
                      {"sensitivity", t.sensitivity},
                      {"samples", int64_t(t.samples)},
                      {"encoding", t.encoding}};
}

static bool fromJSON(const json::Value &v, ProfileTensor &t, json::Path p) {
  json::ObjectMapper o(v, p);
  int64_t bits = 0, samples = 0;
  if (!o || !o.map("id", t.id) || !o.map("elements", t.elements) ||
      !o.map("bits", bits) || !o.map("sensitivity", t.sensitivity) ||
      !o.map("samples", samples))
    return false;
  if (bits < 1 || bits > 31) {
    p.field("bits").report("expected bits in 1..31");
    return false;
  }
  if (!(t.sensitivity >= 0.0) || std::isinf(t.sensitivity)) {
    p.field("sensitivity").report("expected a finite non-negative number");
    return false;
  }
  if (t.elements < 0 || samples < 0) {
    p.report("expected non-negative elements and samples");
    return false;
  }
  t.bits = unsigned(bits);
  t.samples = unsigned(samples);
  // Version 2; absent in version 1 (measured with #act.quant).
  if (!o.mapOptional("encoding", t.encoding))
    return false;
  return true;
}
} // namespace mlir::act

llvm::StringRef mlir::act::getSensitivityMethodName(SensitivityMethod method) {
  return method == SensitivityMethod::Error ? "error" : "variance";
}

std::optional<SensitivityMethod>
mlir::act::parseSensitivityMethod(llvm::StringRef name) {
  if (name == "variance")
    return SensitivityMethod::Variance;
  if (name == "error")
    return SensitivityMethod::Error;
  return std::nullopt;
}

llvm::Error mlir::act::writeProfile(const Profile &profile,
                                    llvm::StringRef path) {
  json::Array tensors;
  for (const ProfileTensor &t : profile.tensors)
    tensors.push_back(toJSON(t));
  json::Object root{
      {"version", Profile::kVersion},
      {"graph", json::Object{{"function", profile.function},
                             {"fingerprint", profile.fingerprint}}},
      {"measurement",
       json::Object{
           {"batches", int64_t(profile.batches)},
           {"step_seed", int64_t(profile.stepSeed)},
           {"evaluations", int64_t(profile.evaluations)},
           {"estimator", getSensitivityMethodName(profile.estimator)}}},
      {"gradient_variance", profile.gradientVariance
                                ? json::Value(*profile.gradientVariance)
                                : json::Value(nullptr)},
      {"tensors", std::move(tensors)}};
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError(ec, "cannot write profile '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  os << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return llvm::Error::success();
}

/// The offset where `text` (JSON) nests deeper than `limit` arrays and
/// objects, if it does (brackets inside strings do not count).
static std::optional<size_t> findExcessNesting(llvm::StringRef text,
                                               unsigned limit) {
  unsigned depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

llvm::Expected<Profile> mlir::act::readProfile(llvm::StringRef path) {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "profile '" + path + "': " + message);
  };
  // Bound what is read before parsing: a regular file of at most
  // kMaxProfileBytes (profile=/dev/zero never ended), nested at most
  // kMaxProfileDepth deep (llvm::json's recursive parser overflowed the
  // stack on 100,000 levels).
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return fail(ec.message());
  if (!llvm::sys::fs::is_regular_file(status))
    return fail("not a regular file");
  if (status.getSize() > kMaxProfileBytes)
    return fail("larger than " + llvm::Twine(kMaxProfileBytes) +
                " bytes: not a profile");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail(buffer.getError().message());
  if (std::optional<size_t> at =
          findExcessNesting((*buffer)->getBuffer(), kMaxProfileDepth))
    return fail("nested deeper than " + llvm::Twine(kMaxProfileDepth) +
                " levels at offset " + llvm::Twine(*at) + ": not a profile");
  llvm::Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return fail("not JSON: " + llvm::toString(value.takeError()));
  Profile profile;
  json::Path::Root root("profile");
  json::ObjectMapper o(*value, root);
  int64_t version = 0;
  if (!o || !o.map("version", version)) {
    return fail(llvm::toString(root.getError()));
  }
  if (version != 1 && version != Profile::kVersion)
    return fail("version " + llvm::Twine(version) +
                ", this act reads versions 1 and " +
                llvm::Twine(Profile::kVersion));
  const json::Object *graph = value->getAsObject()->getObject("graph");
  const json::Object *measurement =
      value->getAsObject()->getObject("measurement");
  if (!graph || !measurement)
    return fail("expected objects 'graph' and 'measurement'");
  std::optional<llvm::StringRef> function = graph->getString("function");
  std::optional<llvm::StringRef> fingerprint = graph->getString("fingerprint");
  if (!function || !fingerprint)
    return fail("expected strings graph.function and graph.fingerprint");
  profile.function = function->str();
  profile.fingerprint = fingerprint->str();
  profile.batches = unsigned(measurement->getInteger("batches").value_or(0));
  profile.stepSeed = uint64_t(measurement->getInteger("step_seed").value_or(0));
  profile.evaluations =
      uint64_t(measurement->getInteger("evaluations").value_or(0));
  if (const json::Value *estimator = measurement->get("estimator")) {
    std::optional<llvm::StringRef> name = estimator->getAsString();
    std::optional<SensitivityMethod> method =
        name ? parseSensitivityMethod(*name) : std::nullopt;
    if (!method)
      return fail("measurement.estimator: expected \"variance\" or "
                  "\"error\"");
    profile.estimator = *method;
  }
  if (!o.map("tensors", profile.tensors))
    return fail(llvm::toString(root.getError()));
  const json::Value *variance = value->getAsObject()->get("gradient_variance");
  if (variance && !variance->getAsNull()) {
    std::optional<double> v = variance->getAsNumber();
    if (!v || *v < 0)
      return fail("gradient_variance: expected a non-negative number or null");
    profile.gradientVariance = *v;
  }
  llvm::SmallDenseSet<int64_t> ids;
  for (const ProfileTensor &t : profile.tensors)
    if (!ids.insert(t.id).second)
      return fail("tensor id " + llvm::Twine(t.id) + " appears twice");
  return profile;
}
