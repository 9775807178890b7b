// P -> S(i) over one hierarchy axis: device k of the group ends with the sum of part k.
//
// Ring reduce-scatter: the chunks are the destination slices (the n balanced parts of
// the group tensor along axis i), so no re-slicing follows. n-1 rounds of one chunk:
// (n-1) * ceil(dim_i / n) * (other dims) elements, the textbook (n-1)/n * T.
#ifndef SBP_BOXING_REDUCE_SCATTER_H_
#define SBP_BOXING_REDUCE_SCATTER_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class ReduceScatter final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kReduceScatter; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_REDUCE_SCATTER_H_
