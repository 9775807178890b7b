// B -> P over one hierarchy axis: the device at coordinate 0 keeps the value, the others
// hold zeros, so the sum over the group is the value again.
//
// No traffic. Zeros rather than value/n: exact for integers and free of rounding. This
// is the conversion a P-consuming op (a gradient accumulation) asks of a B input.
#ifndef SBP_BOXING_LOCAL_PARTIAL_H_
#define SBP_BOXING_LOCAL_PARTIAL_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class LocalPartial final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kLocalPartial; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_LOCAL_PARTIAL_H_
