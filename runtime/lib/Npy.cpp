//===- Npy.cpp - NumPy .npy files ------------------------------------------===//

#include "act/runtime/Npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

using namespace act::rt;

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

unsigned NpyArray::elementBytes() const {
  if (descr.size() < 3)
    return 0;
  return unsigned(std::stoi(descr.substr(2)));
}

static bool knownDescr(const std::string &d) {
  return d == "<f4" || d == "<f8" || d == "<i8" || d == "<i4" || d == "|b1";
}

/// The value of `key` in the header dict (a Python literal), or "".
static std::string field(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  at = header.find(':', at);
  if (at == std::string::npos)
    return "";
  size_t start = header.find_first_not_of(' ', at + 1);
  if (start == std::string::npos)
    return "";
  char open = header[start];
  char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  size_t end = header.find(close, start + 1);
  if (end == std::string::npos)
    return "";
  return header.substr(start, end - start + (close == ',' ? 0 : 1));
}

bool act::rt::readNpy(const std::string &path, NpyArray &array,
                      std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  uint32_t headerLength = 0;
  if (magic[6] == 1) {
    unsigned char len[2];
    in.read(reinterpret_cast<char *>(len), 2);
    headerLength = len[0] | (len[1] << 8);
  } else {
    unsigned char len[4];
    in.read(reinterpret_cast<char *>(len), 4);
    headerLength = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t(len[3]) << 24);
  }
  std::string header(headerLength, '\0');
  if (!in.read(&header[0], headerLength)) {
    error = "'" + path + "': truncated header";
    return false;
  }
  std::string descr = field(header, "descr");
  if (descr.size() < 2) {
    error = "'" + path + "': no dtype in header";
    return false;
  }
  array.descr = descr.substr(1, descr.size() - 2);
  if (!knownDescr(array.descr)) {
    error = "'" + path + "': unsupported dtype '" + array.descr +
            "' (act-run reads <f4, <f8, <i8, <i4, |b1)";
    return false;
  }
  if (field(header, "fortran_order").rfind("True", 0) == 0) {
    error = "'" + path + "': Fortran order is not supported";
    return false;
  }
  std::string shape = field(header, "shape");
  if (shape.empty()) {
    error = "'" + path + "': no shape in header";
    return false;
  }
  array.shape.clear();
  std::stringstream dims(shape.substr(1, shape.size() - 2));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    size_t digit = dim.find_first_of("0123456789");
    if (digit != std::string::npos)
      array.shape.push_back(std::stoll(dim.substr(digit)));
  }
  size_t bytes = size_t(array.numElements()) * array.elementBytes();
  array.data.resize(bytes);
  if (bytes && !in.read(array.data.data(), std::streamsize(bytes))) {
    error = "'" + path + "': expected " + std::to_string(bytes) +
            " bytes of data";
    return false;
  }
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
