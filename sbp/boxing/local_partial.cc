#include "sbp/boxing/local_partial.h"

namespace oneflow {
namespace boxing {

bool LocalPartial::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_broadcast() && dst.is_partial();
}

int64_t LocalPartial::WireElements(const AxisGroup& /*group*/, const Sbp& /*src*/,
                                   const Sbp& /*dst*/) const {
  return 0;
}

absl::string_view LocalPartial::Algorithm() const {
  return "coordinate 0 keeps the value, the others zeros, no traffic";
}

}  // namespace boxing
}  // namespace oneflow
