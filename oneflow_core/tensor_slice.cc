#include "oneflow_core/tensor_slice.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/status.h"

namespace oneflow {

TensorSlice TensorSlice::Whole(const Shape& shape) {
  std::vector<Range> ranges;
  for (int64_t dim : shape.dims()) ranges.push_back(Range{0, dim});
  return TensorSlice(std::move(ranges));
}

Shape TensorSlice::shape() const {
  std::vector<int64_t> dims;
  for (const Range& range : ranges_) dims.push_back(range.size());
  return Shape(std::move(dims));
}

std::string TensorSlice::ToString() const {
  return absl::StrCat("[",
                      absl::StrJoin(ranges_, ", ",
                                    [](std::string* out, const Range& range) {
                                      absl::StrAppend(out, range.begin, ":", range.end);
                                    }),
                      "]");
}

absl::Status CheckNdSbpFits(const Shape& logical, const NdSbp& nd_sbp, const Shape& hierarchy) {
  if (nd_sbp.size() != hierarchy.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SBP ", nd_sbp.ToString(), " has ", nd_sbp.size(), " axes but the placement hierarchy ",
        hierarchy.ToString(), " has ", hierarchy.rank(), "; give one SBP per hierarchy axis"));
  }
  for (const Sbp& sbp : nd_sbp.sbps()) {
    if (sbp.is_split() && sbp.axis() >= logical.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SBP ", nd_sbp.ToString(), " splits axis ", sbp.axis(), " of a tensor of shape ",
          logical.ToString(),
          logical.rank() == 0 ? "; a scalar cannot be split, use B or P"
                              : absl::StrCat("; valid split axes are 0..", logical.rank() - 1)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorSlice> DeviceSlice(const Shape& logical, const NdSbp& nd_sbp,
                                        const Shape& hierarchy,
                                        const std::vector<int64_t>& coordinate) {
  OF_RETURN_IF_ERROR(CheckNdSbpFits(logical, nd_sbp, hierarchy));
  if (static_cast<int64_t>(coordinate.size()) != hierarchy.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("coordinate has ", coordinate.size(),
                                                   " axes but the hierarchy ",
                                                   hierarchy.ToString(), " has ",
                                                   hierarchy.rank()));
  }
  std::vector<Range> ranges = TensorSlice::Whole(logical).ranges();
  for (int64_t axis = 0; axis < hierarchy.rank(); ++axis) {
    if (coordinate[axis] < 0 || coordinate[axis] >= hierarchy.dim(axis)) {
      return absl::InvalidArgumentError(
          absl::StrCat("coordinate ", coordinate[axis], " on hierarchy axis ", axis,
                       " is outside [0, ", hierarchy.dim(axis), ")"));
    }
    const Sbp& sbp = nd_sbp.at(axis);
    if (!sbp.is_split()) continue;
    Range& range = ranges[sbp.axis()];
    const Range part = BalancedPart(range.size(), hierarchy.dim(axis), coordinate[axis]);
    range = Range{range.begin + part.begin, range.begin + part.end};
  }
  return TensorSlice(std::move(ranges));
}

absl::StatusOr<TensorSlice> DeviceSlice(const Shape& logical, const NdSbp& nd_sbp,
                                        const Placement& placement, int64_t rank) {
  if (rank < 0 || rank >= placement.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is outside placement ",
                                                   placement.ToString()));
  }
  return DeviceSlice(logical, nd_sbp, placement.hierarchy(), placement.Coordinate(rank));
}

}  // namespace oneflow
