//===- Support.h - what the C API's files share -----------------*- C++ -*-===//

#ifndef ACT_LIB_CAPI_SUPPORT_H
#define ACT_LIB_CAPI_SUPPORT_H

#include <cstdlib>
#include <cstring>
#include <string>

namespace act::capi {

/// Stores `message` in `*error` (when `error` is not null) for the caller
/// to free with actStringFree.
inline void setError(char **error, const std::string &message) {
  if (!error)
    return;
  *error = static_cast<char *>(std::malloc(message.size() + 1));
  if (*error)
    std::memcpy(*error, message.c_str(), message.size() + 1);
}

} // namespace act::capi

#endif // ACT_LIB_CAPI_SUPPORT_H
