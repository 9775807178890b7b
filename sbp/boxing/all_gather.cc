#include "sbp/boxing/all_gather.h"

namespace oneflow {
namespace boxing {

bool AllGather::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_split() && dst.is_broadcast();
}

int64_t AllGather::WireElements(const AxisGroup& group, const Sbp& src, const Sbp& /*dst*/) const {
  return (group.size - 1) * LargestPartElements(group.tensor, src.axis(), group.size);
}

absl::string_view AllGather::Algorithm() const {
  return "ring all-gather, n-1 rounds of one source slice";
}

}  // namespace boxing
}  // namespace oneflow
