//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "act/runtime/Npy.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>

using namespace act::rt;

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

unsigned NpyArray::elementBytes() const {
  if (descr.size() != 3 || descr[2] < '1' || descr[2] > '8')
    return 0;
  return unsigned(descr[2] - '0');
}

static bool knownDescr(const std::string &d) {
  return d == "<f4" || d == "<f8" || d == "<i8" || d == "<i4" || d == "<i2" ||
         d == "|i1" || d == "|u1" || d == "|b1";
}

/// True if some dimension is 0 (no elements, whatever the others).
static bool hasZeroDimension(const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d == 0)
      return true;
  return false;
}

namespace {
/// A strict reader of the header's Python dict literal: string keys,
/// string/bool/tuple-of-int values (what NumPy writes), nothing else.
struct HeaderParser {
  const std::string &text;
  size_t at = 0;
  std::string error;

  void skipSpace() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
      ++at;
  }
  bool eat(char c) {
    skipSpace();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  bool fail(const std::string &why) {
    if (error.empty())
      error = why;
    return false;
  }
  bool string(std::string &out) {
    skipSpace();
    if (at >= text.size() || (text[at] != '\'' && text[at] != '"'))
      return fail("expected a string at offset " + std::to_string(at));
    char quote = text[at++];
    size_t end = text.find(quote, at);
    if (end == std::string::npos)
      return fail("unterminated string");
    out = text.substr(at, end - at);
    at = end + 1;
    return true;
  }
  bool boolean(bool &out) {
    skipSpace();
    if (text.compare(at, 4, "True") == 0) {
      out = true;
      at += 4;
      return true;
    }
    if (text.compare(at, 5, "False") == 0) {
      out = false;
      at += 5;
      return true;
    }
    return fail("expected True or False at offset " + std::to_string(at));
  }
  bool dimension(int64_t &out) {
    skipSpace();
    if (at >= text.size() || text[at] < '0' || text[at] > '9')
      return fail("a dimension is not a non-negative integer (offset " +
                  std::to_string(at) + ")");
    out = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      int digit = text[at++] - '0';
      if (out > (INT64_MAX - digit) / 10)
        return fail("a dimension does not fit in 64 bits");
      out = out * 10 + digit;
    }
    // Python 2 headers may write 3L.
    if (at < text.size() && text[at] == 'L')
      ++at;
    return true;
  }
  bool shape(std::vector<int64_t> &out) {
    out.clear();
    if (!eat('('))
      return fail("the shape is not a tuple");
    if (eat(')'))
      return true;
    while (true) {
      int64_t d;
      if (!dimension(d))
        return false;
      out.push_back(d);
      if (eat(')'))
        return true;
      if (!eat(','))
        return fail("malformed shape tuple");
      if (eat(')'))
        return true;
    }
  }
};
} // namespace

bool act::rt::readNpy(const std::string &path, NpyArray &array,
                      std::string &error) {
  // Only a regular file: opening a FIFO blocks until a writer comes, and a
  // device may never end.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    error = "cannot open '" + path + "'";
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    error = "'" + path + "' is not a regular file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  // The file's size bounds everything the header may claim (a regular file;
  // a device or pipe is refused before any read that could block forever).
  in.seekg(0, std::ios::end);
  std::streamoff fileSize = in.tellg();
  in.seekg(0, std::ios::beg);
  if (fileSize < 0 || !in) {
    error = "'" + path + "' is not a regular file";
    return false;
  }
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  unsigned major = static_cast<unsigned char>(magic[6]);
  unsigned minor = static_cast<unsigned char>(magic[7]);
  if (major < 1 || major > 3 || minor != 0) {
    error = "'" + path + "': unsupported .npy format version " +
            std::to_string(major) + "." + std::to_string(minor) +
            " (1.0, 2.0 and 3.0 are read)";
    return false;
  }
  uint64_t headerLength = 0;
  unsigned char len[4] = {0, 0, 0, 0};
  unsigned lengthBytes = major == 1 ? 2 : 4;
  if (!in.read(reinterpret_cast<char *>(len), lengthBytes)) {
    error = "'" + path + "': truncated header";
    return false;
  }
  headerLength = len[0] | (len[1] << 8) | (uint64_t(len[2]) << 16) |
                 (uint64_t(len[3]) << 24);
  uint64_t dataStart = 8 + lengthBytes + headerLength;
  if (dataStart > uint64_t(fileSize)) {
    error = "'" + path + "': truncated header (" +
            std::to_string(headerLength) + " bytes claimed, the file has " +
            std::to_string(fileSize) + ")";
    return false;
  }
  std::string header(headerLength, '\0');
  if (!in.read(&header[0], std::streamsize(headerLength))) {
    error = "'" + path + "': truncated header";
    return false;
  }
  // The header is a dict literal ended by a newline (padding spaces before).
  size_t close = header.find_last_not_of(" \n");
  if (header.empty() || header.back() != '\n' || close == std::string::npos ||
      header[close] != '}') {
    error = "'" + path + "': unterminated header";
    return false;
  }
  HeaderParser parser{header, 0, ""};
  std::string descr;
  bool fortran = false, haveDescr = false, haveOrder = false, haveShape = false;
  std::vector<int64_t> shape;
  bool ok = parser.eat('{') || parser.fail("the header is not a dict");
  while (ok) {
    if (parser.eat('}'))
      break;
    std::string key;
    ok = parser.string(key) && (parser.eat(':') || parser.fail("expected ':'"));
    if (!ok)
      break;
    if (key == "descr")
      ok = haveDescr = parser.string(descr);
    else if (key == "fortran_order")
      ok = haveOrder = parser.boolean(fortran);
    else if (key == "shape")
      ok = haveShape = parser.shape(shape);
    else
      ok = parser.fail("unknown key '" + key + "'");
    if (!ok || parser.eat(','))
      continue;
    if (parser.eat('}'))
      break;
    ok = parser.fail("expected ',' or '}'");
  }
  if (ok && (!haveDescr || !haveOrder || !haveShape))
    ok = parser.fail(std::string("missing '") +
                     (!haveDescr   ? "descr"
                      : !haveOrder ? "fortran_order"
                                   : "shape") +
                     "'");
  if (!ok) {
    error = "'" + path + "': malformed header: " + parser.error;
    return false;
  }
  if (!knownDescr(descr)) {
    error = "'" + path + "': unsupported dtype '" + descr +
            "' (act reads <f4, <f8, <i8, <i4, <i2, |i1, |u1, |b1)";
    return false;
  }
  if (fortran) {
    error = "'" + path +
            "': Fortran order is not supported (write the array with "
            "numpy.ascontiguousarray)";
    return false;
  }
  // The data the header claims must be in the file: checked before
  // allocating, with overflow-checked arithmetic.
  NpyArray result;
  result.descr = descr;
  result.shape = shape;
  uint64_t bytes = result.elementBytes();
  uint64_t available = uint64_t(fileSize) - dataStart;
  bool overflow = false;
  if (hasZeroDimension(shape))
    bytes = 0;
  for (int64_t d : shape)
    overflow |= __builtin_mul_overflow(bytes, uint64_t(d), &bytes);
  if (overflow || bytes != available) {
    error = "'" + path + "': the header's shape and dtype need " +
            (overflow ? std::string("more than 2^64") : std::to_string(bytes)) +
            " bytes of data, the file holds " + std::to_string(available);
    return false;
  }
  result.data.resize(size_t(bytes));
  if (bytes && !in.read(result.data.data(), std::streamsize(bytes))) {
    error =
        "'" + path + "': expected " + std::to_string(bytes) + " bytes of data";
    return false;
  }
  array = std::move(result);
  return true;
}

bool act::rt::writeNpy(const std::string &path, const NpyArray &array,
                       std::string &error) {
  std::string shape = "(";
  for (int64_t d : array.shape)
    shape += std::to_string(d) + ", ";
  if (array.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (array.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + array.descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  unsigned char len[2] = {uint8_t(header.size() & 0xff),
                          uint8_t(header.size() >> 8)};
  out.write(reinterpret_cast<char *>(len), 2);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(array.data.data(), std::streamsize(array.data.size()));
  if (!out) {
    error = "failed writing '" + path + "'";
    return false;
  }
  return true;
}
