#include "sbp/boxing/all_reduce.h"

#include "oneflow_core/balanced_splitter.h"

namespace oneflow {
namespace boxing {

bool AllReduce::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_partial() && dst.is_broadcast();
}

int64_t AllReduce::WireElements(const AxisGroup& group, const Sbp& /*src*/,
                                const Sbp& /*dst*/) const {
  const int64_t chunk = BalancedPart(group.tensor.NumElements(), group.size, 0).size();
  return 2 * (group.size - 1) * chunk;
}

absl::string_view AllReduce::Algorithm() const {
  return "ring reduce-scatter then all-gather, 2(n-1) rounds of elements/n";
}

}  // namespace boxing
}  // namespace oneflow
