// The interface of one SBP conversion over one hierarchy axis.
//
// Boxing on an N-D placement is a sequence of per-axis conversions: on hierarchy axis
// k, the devices that differ only in coordinate k form a group of n = hierarchy[k]
// devices that together hold one sub-tensor (the "group tensor"), laid out under the
// axis's 1-D SBP. A conversion turns that 1-D SBP into another one (P -> B is an
// all-reduce over each group). Each conversion is one small class in its own file,
// named after the collective, with:
//   CanHandle(src, dst)  which 1-D SBP pairs it converts (exactly one conversion
//                        handles each pair src != dst; conversion_list.h orders them);
//   WireElements(...)    its cost: the elements the busiest device receives.
// Whether a per-axis conversion is valid at its place in an N-D SBP, and what it costs
// in bytes and seconds, is decided by axis_step.h; the conversions know only 1-D.
//
// Cost convention for uneven (balanced) splits: a ring or pairwise collective runs in
// n-1 synchronous rounds, and in every round each piece is on some link, so a round
// lasts as long as the LARGEST piece. A conversion is therefore charged
// (rounds) x (largest piece); for even splits this is the textbook (n-1)/n * T.
#ifndef SBP_BOXING_AXIS_CONVERSION_H_
#define SBP_BOXING_AXIS_CONVERSION_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "sbp/boxing_plan.h"

namespace oneflow {
namespace boxing {

// One group of devices along a hierarchy axis.
struct AxisGroup {
  // The shape of the sub-tensor the group holds between them (whole-shaped for B and
  // P). Boxing costs the largest group of the axis, the one at coordinate 0 elsewhere.
  Shape tensor;
  // The number of devices in the group, >= 2 (one-device axes are relabels).
  int64_t size = 0;
};

class AxisConversion {
 public:
  virtual ~AxisConversion() = default;

  virtual BoxingKind kind() const = 0;

  // True when this conversion turns 1-D SBP `src` into `dst` (src != dst).
  virtual bool CanHandle(const Sbp& src, const Sbp& dst) const = 0;

  // The elements the busiest device of `group` receives (see the convention above).
  // Preconditions: CanHandle(src, dst); split axes < group.tensor.rank().
  virtual int64_t WireElements(const AxisGroup& group, const Sbp& src, const Sbp& dst) const = 0;

  // How the data moves, for BoxingStep::reason, e.g.
  // "ring reduce-scatter then all-gather, 2(n-1) rounds of elements/n".
  virtual absl::string_view Algorithm() const = 0;
};

// The elements of the largest of the n balanced parts of `tensor` along `axis`:
// ceil(tensor[axis] / n) times the other dimensions.
int64_t LargestPartElements(const Shape& tensor, int64_t axis, int64_t parts);

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_AXIS_CONVERSION_H_
