// The op registry: an explicit, ordered list of every op definition (registry.cc).
// Adding an op means writing its definition function and adding one line to the list;
// nothing registers itself at static-initialization time, so the set of ops is visible
// in one place and a missing op fails to link rather than at run time.
#ifndef ONEFLOW_CORE_OPS_REGISTRY_H_
#define ONEFLOW_CORE_OPS_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/ops/op_definition.h"

namespace oneflow {

class OpRegistry {
 public:
  // The registry of all built-in ops (built once, immutable, thread-safe to read).
  static const OpRegistry& Get();

  // NOT_FOUND naming the type and listing the known ones.
  absl::StatusOr<const OpDefinition*> Find(absl::string_view type) const;
  const std::vector<OpDefinition>& definitions() const { return definitions_; }

 private:
  explicit OpRegistry(std::vector<OpDefinition> definitions)
      : definitions_(std::move(definitions)) {}

  std::vector<OpDefinition> definitions_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_REGISTRY_H_
