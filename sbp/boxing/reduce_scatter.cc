#include "sbp/boxing/reduce_scatter.h"

namespace oneflow {
namespace boxing {

bool ReduceScatter::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_partial() && dst.is_split();
}

int64_t ReduceScatter::WireElements(const AxisGroup& group, const Sbp& /*src*/,
                                    const Sbp& dst) const {
  return (group.size - 1) * LargestPartElements(group.tensor, dst.axis(), group.size);
}

absl::string_view ReduceScatter::Algorithm() const {
  return "ring reduce-scatter, n-1 rounds of one destination slice";
}

}  // namespace boxing
}  // namespace oneflow
