// The slice of a logical tensor that one device holds under an N-D SBP.
//
// For hierarchy axis i (outermost first): S(a) splits the current range of tensor axis
// `a` into hierarchy[i] balanced parts and keeps part coordinate[i]; B and P keep the
// range whole (a P device holds a whole-shaped partial value). Two hierarchy axes may
// split the same tensor axis: [S(0), S(0)] on [2, 2] splits rows into 2 and each half
// into 2 again, as OneFlow does. Example: a [5, 6] tensor, [S(0), S(1)] on [2, 2]:
//   coordinate (0,0): rows [0, 3) cols [0, 3)     (0,1): rows [0, 3) cols [3, 6)
//   coordinate (1,0): rows [3, 5) cols [0, 3)     (1,1): rows [3, 5) cols [3, 6)
#ifndef ONEFLOW_CORE_TENSOR_SLICE_H_
#define ONEFLOW_CORE_TENSOR_SLICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"

namespace oneflow {

// One half-open range per tensor axis.
class TensorSlice {
 public:
  TensorSlice() = default;
  explicit TensorSlice(std::vector<Range> ranges) : ranges_(std::move(ranges)) {}

  // The whole of a tensor of `shape`.
  static TensorSlice Whole(const Shape& shape);

  int64_t rank() const { return static_cast<int64_t>(ranges_.size()); }
  const Range& range(int64_t axis) const { return ranges_[axis]; }
  const std::vector<Range>& ranges() const { return ranges_; }
  // The physical shape: the size of each range.
  Shape shape() const;
  int64_t NumElements() const { return shape().NumElements(); }

  // "[0:3, 3:6]".
  std::string ToString() const;

  friend bool operator==(const TensorSlice& a, const TensorSlice& b) {
    return a.ranges_ == b.ranges_;
  }

 private:
  std::vector<Range> ranges_;
};

// Where a physical tensor sits: its logical shape and the slice it holds (the whole
// tensor for B and P). Kernels and the reference take one per argument.
struct TensorLayout {
  Shape logical;
  TensorSlice slice;
};

// Checks that `nd_sbp` can lay out a tensor of `logical` shape over `hierarchy`: one SBP
// per hierarchy axis and every split axis inside the tensor's rank. The message names
// the tensor shape, the SBP and the hierarchy.
absl::Status CheckNdSbpFits(const Shape& logical, const NdSbp& nd_sbp, const Shape& hierarchy);

// The slice held at hierarchy `coordinate`. Errors as CheckNdSbpFits, or for a
// coordinate outside the hierarchy.
absl::StatusOr<TensorSlice> DeviceSlice(const Shape& logical, const NdSbp& nd_sbp,
                                        const Shape& hierarchy,
                                        const std::vector<int64_t>& coordinate);

// The slice held by the device of rank `rank` in `placement`.
absl::StatusOr<TensorSlice> DeviceSlice(const Shape& logical, const NdSbp& nd_sbp,
                                        const Placement& placement, int64_t rank);

// Calls fn(local_offset, logical_offset, length) for each contiguous run of `slice`
// (a run is a stretch of the innermost axis), where local_offset indexes the device's
// dense row-major buffer of slice.shape() and logical_offset the row-major logical
// tensor of `logical` shape. Copying, generating data by logical index and assembling
// slices all reduce to this loop.
template <typename Fn>
void ForEachContiguousRun(const Shape& logical, const TensorSlice& slice, Fn&& fn) {
  const int64_t rank = slice.rank();
  if (slice.NumElements() == 0) return;
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  const std::vector<int64_t> strides = logical.Strides();
  const int64_t run = slice.range(rank - 1).size();
  std::vector<int64_t> index(rank - 1, 0);  // Position within the outer axes of the slice.
  int64_t local = 0;
  while (true) {
    int64_t logical_offset = slice.range(rank - 1).begin;
    for (int64_t axis = 0; axis < rank - 1; ++axis) {
      logical_offset += (slice.range(axis).begin + index[axis]) * strides[axis];
    }
    fn(local, logical_offset, run);
    local += run;
    int64_t axis = rank - 2;
    for (; axis >= 0; --axis) {
      if (++index[axis] < slice.range(axis).size()) break;
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_TENSOR_SLICE_H_
