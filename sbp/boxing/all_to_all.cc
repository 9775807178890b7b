#include "sbp/boxing/all_to_all.h"

#include "oneflow_core/balanced_splitter.h"

namespace oneflow {
namespace boxing {

bool AllToAll::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_split() && dst.is_split() && src.axis() != dst.axis();
}

int64_t AllToAll::WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const {
  const int64_t n = group.size;
  int64_t block = BalancedPart(group.tensor.dim(src.axis()), n, 0).size() *
                  BalancedPart(group.tensor.dim(dst.axis()), n, 0).size();
  for (int64_t axis = 0; axis < group.tensor.rank(); ++axis) {
    if (axis != src.axis() && axis != dst.axis()) block *= group.tensor.dim(axis);
  }
  return (n - 1) * block;
}

absl::string_view AllToAll::Algorithm() const {
  return "pairwise all-to-all, n-1 rounds of one block";
}

}  // namespace boxing
}  // namespace oneflow
