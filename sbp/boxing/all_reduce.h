// P -> B over one hierarchy axis: every device of the group ends with the sum.
//
// Ring all-reduce (Gloo allreduce_ring, NCCL): the flattened group tensor of E
// elements is cut into n balanced chunks; n-1 rounds of reduce-scatter then n-1 rounds
// of all-gather, one chunk per device per round. Bytes per device: 2(n-1) chunks of
// ceil(E/n) elements, the textbook 2(n-1)/n * T.
#ifndef SBP_BOXING_ALL_REDUCE_H_
#define SBP_BOXING_ALL_REDUCE_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class AllReduce final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kAllReduce; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_ALL_REDUCE_H_
