// S(i) -> P over one hierarchy axis: each device places its slice into a whole-shaped
// buffer of zeros, so the sum over the group is the whole tensor.
//
// No traffic, but the buffer grows n-fold; the compiler sees that in memory planning.
#ifndef SBP_BOXING_SPLIT_TO_PARTIAL_H_
#define SBP_BOXING_SPLIT_TO_PARTIAL_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class SplitToPartial final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kSplitToPartial; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_SPLIT_TO_PARTIAL_H_
