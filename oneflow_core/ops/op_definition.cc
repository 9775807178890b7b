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
  // Updates have no outputs: "S(0), S(0), S(0) -> ()".
  std::string text =
      absl::StrCat(JoinSbps(inputs), " -> ", outputs.empty() ? "()" : JoinSbps(outputs));
  if (devices_must_divide > 0) absl::StrAppend(&text, " if devices divide ", devices_must_divide);
  return text;
}

}  // namespace oneflow
