// Where in the user's C++ source a tensor or op was created.
//
// Every DSL function takes `SourceLocation location = SourceLocation::Current()` as its
// last argument; the default argument is evaluated at the call site, so errors found
// while building or compiling the graph can say "mlp.cc:42". (C++17 has no
// std::source_location; GCC and Clang provide these builtins.)
#ifndef ONEFLOW_CORE_DSL_SOURCE_LOCATION_H_
#define ONEFLOW_CORE_DSL_SOURCE_LOCATION_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oneflow {

struct SourceLocation {
  const char* file = "";
  int line = 0;

  static constexpr SourceLocation Current(const char* file = __builtin_FILE(),
                                          int line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }

  // "mlp.cc:42": the file's base name keeps messages short and independent of where
  // the build ran.
  std::string ToString() const {
    absl::string_view path(file);
    const size_t slash = path.rfind('/');
    if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
    return absl::StrCat(path, ":", line);
  }
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_SOURCE_LOCATION_H_
