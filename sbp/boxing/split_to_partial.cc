#include "sbp/boxing/split_to_partial.h"

namespace oneflow {
namespace boxing {

bool SplitToPartial::CanHandle(const Sbp& src, const Sbp& dst) const {
  return src.is_split() && dst.is_partial();
}

int64_t SplitToPartial::WireElements(const AxisGroup& /*group*/, const Sbp& /*src*/,
                                     const Sbp& /*dst*/) const {
  return 0;
}

absl::string_view SplitToPartial::Algorithm() const {
  return "slice placed into zeros, no traffic";
}

}  // namespace boxing
}  // namespace oneflow
