// B -> S(i) over one hierarchy axis: each device keeps its own part of what it holds.
//
// No traffic: a broadcast device already holds every part. The kernel is a strided copy
// (or a view when the part is contiguous).
#ifndef SBP_BOXING_LOCAL_SLICE_H_
#define SBP_BOXING_LOCAL_SLICE_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class LocalSlice final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kLocalSlice; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_LOCAL_SLICE_H_
