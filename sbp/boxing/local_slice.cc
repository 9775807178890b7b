#include "sbp/boxing/local_slice.h"

namespace oneflow {
namespace boxing {

bool LocalSlice::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_broadcast() && dst.is_split();
}

int64_t LocalSlice::WireElements(const AxisGroup& /*group*/, const Sbp& /*src*/,
                                 const Sbp& /*dst*/) const {
  return 0;
}

absl::string_view LocalSlice::Algorithm() const { return "local slice, no traffic"; }

}  // namespace boxing
}  // namespace oneflow
