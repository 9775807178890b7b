// S(i) -> B over one hierarchy axis: every device of the group ends with all slices.
//
// Ring all-gather: n-1 rounds, each device forwarding one slice per round:
// (n-1) * ceil(dim_i / n) * (other dims) elements, the textbook (n-1)/n * T where T is
// the gathered size.
#ifndef SBP_BOXING_ALL_GATHER_H_
#define SBP_BOXING_ALL_GATHER_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class AllGather final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kAllGather; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_ALL_GATHER_H_
