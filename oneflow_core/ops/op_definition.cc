#include "oneflow_core/ops/op_definition.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {
namespace {

std::string JoinSbps(const std::vector<Sbp>& sbps) {
  return absl::StrJoin(sbps, ", ", [](std::string* out, const Sbp& sbp) {
    absl::StrAppend(out, sbp.ToString());
  });
}

}  // namespace

std::string TensorType::ToString() const {
  return absl::StrCat(DTypeName(dtype), shape.ToString());
}

std::string SbpSignature::ToString() const {
  return absl::StrCat(JoinSbps(inputs), " -> ", JoinSbps(outputs));
}

}  // namespace oneflow
