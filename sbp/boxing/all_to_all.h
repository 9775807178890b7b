// S(i) -> S(j), i != j, over one hierarchy axis: re-split the group tensor.
//
// Pairwise exchange: device p sends device q the block (p's part along i) x (q's part
// along j), in n-1 rounds of one block each: (n-1) * ceil(dim_i / n) * ceil(dim_j / n)
// * (other dims) elements, the textbook (n-1)/n^2 * T.
#ifndef SBP_BOXING_ALL_TO_ALL_H_
#define SBP_BOXING_ALL_TO_ALL_H_

#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

class AllToAll final : public AxisConversion {
 public:
  BoxingKind kind() const override { return BoxingKind::kAllToAll; }
  bool CanHandle(const Sbp& src, const Sbp& dst) const override;
  int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const override;
  absl::string_view Algorithm() const override;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_ALL_TO_ALL_H_
