#include "sbp/boxing_simulator.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

// Calls fn(local_offset, index) for every element of `slice`, in row-major order;
// `index` is the element's logical index.
template <typename Fn>
void ForEachElement(const TensorSlice& slice, Fn&& fn) {
  const int64_t count = slice.NumElements();
  std::vector<int64_t> index;
  for (const Range& range : slice.ranges()) index.push_back(range.begin);
  for (int64_t local = 0; local < count; ++local) {
    fn(local, index);
    for (int64_t axis = slice.rank() - 1; axis >= 0; --axis) {
      if (++index[axis] < slice.range(axis).end) break;
      index[axis] = slice.range(axis).begin;
    }
  }
}

bool Contains(const TensorSlice& slice, const std::vector<int64_t>& index) {
  for (int64_t axis = 0; axis < slice.rank(); ++axis) {
    if (index[axis] < slice.range(axis).begin || index[axis] >= slice.range(axis).end) {
      return false;
    }
  }
  return true;
}

// Row-major offset of `index` inside a box starting at `begins` with sizes `shape`.
int64_t OffsetIn(const TensorSlice& slice, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (int64_t axis = 0; axis < slice.rank(); ++axis) {
    offset = offset * slice.range(axis).size() + (index[axis] - slice.range(axis).begin);
  }
  return offset;
}

int64_t LogicalOffset(const Shape& logical, const std::vector<int64_t>& index) {
  return OffsetIn(TensorSlice::Whole(logical), index);
}

std::string IndexText(const std::vector<int64_t>& index) {
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

// The ranks whose coordinates equal `coordinate` except on `axes`, which take every
// value (row-major over `axes`).
std::vector<int64_t> RanksVarying(const Placement& placement, std::vector<int64_t> coordinate,
                                  const std::vector<int64_t>& axes) {
  std::vector<int64_t> ranks;
  for (int64_t axis : axes) coordinate[axis] = 0;
  while (true) {
    ranks.push_back(placement.RankOf(coordinate));
    int64_t i = static_cast<int64_t>(axes.size()) - 1;
    for (; i >= 0; --i) {
      if (++coordinate[axes[i]] < placement.hierarchy().dim(axes[i])) break;
      coordinate[axes[i]] = 0;
    }
    if (i < 0) return ranks;
  }
}

std::vector<int64_t> PartialAxes(const NdSbp& nd_sbp) {
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < nd_sbp.size(); ++axis) {
    if (nd_sbp.at(axis).is_partial()) axes.push_back(axis);
  }
  return axes;
}

// A reproducible pseudo-random number in [-2, 2) for (seed, element, part).
float RandomPart(uint64_t seed, int64_t element, int64_t part) {
  uint64_t x = seed ^ (static_cast<uint64_t>(element) * 0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(part + 1) * 0xC2B2AE3D27D4EB4Full);
  x ^= x >> 30;  // splitmix64 finalizer
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) / static_cast<float>(1 << 24) * 4.0f - 2.0f;
}

absl::StatusOr<std::vector<TensorSlice>> AllSlices(const Shape& logical, const NdSbp& nd_sbp,
                                                   const Placement& placement) {
  std::vector<TensorSlice> slices;
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(logical, nd_sbp, placement, rank));
    slices.push_back(std::move(slice));
  }
  return slices;
}

}  // namespace

absl::StatusOr<SimulatedTensor> Distribute(const Shape& logical, const std::vector<float>& values,
                                           const NdSbp& nd_sbp, const Placement& placement,
                                           uint64_t seed) {
  if (static_cast<int64_t>(values.size()) != logical.NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat("a tensor of shape ", logical.ToString(),
                                                   " needs ", logical.NumElements(),
                                                   " values, got ", values.size()));
  }
  OF_ASSIGN_OR_RETURN(std::vector<TensorSlice> slices, AllSlices(logical, nd_sbp, placement));
  const std::vector<int64_t> partial_axes = PartialAxes(nd_sbp);
  int64_t parts = 1;
  for (int64_t axis : partial_axes) parts *= placement.hierarchy().dim(axis);

  SimulatedTensor tensor{nd_sbp, {}};
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    const std::vector<int64_t> coordinate = placement.Coordinate(rank);
    int64_t part = 0;  // Row-major index of this device's coordinates on the P axes.
    for (int64_t axis : partial_axes) {
      part = part * placement.hierarchy().dim(axis) + coordinate[axis];
    }
    std::vector<float> buffer(slices[rank].NumElements());
    ForEachElement(slices[rank], [&](int64_t local, const std::vector<int64_t>& index) {
      const int64_t element = LogicalOffset(logical, index);
      if (part < parts - 1) {
        buffer[local] = RandomPart(seed, element, part);
        return;
      }
      float rest = values[element];  // The last part makes the sum exact(ish).
      for (int64_t other = 0; other < parts - 1; ++other) rest -= RandomPart(seed, element, other);
      buffer[local] = rest;
    });
    tensor.buffers.push_back(std::move(buffer));
  }
  return tensor;
}

absl::Status CheckHoldsLogical(const Shape& logical, const std::vector<float>& values,
                               const SimulatedTensor& tensor, const Placement& placement,
                               float tolerance) {
  OF_ASSIGN_OR_RETURN(std::vector<TensorSlice> slices,
                      AllSlices(logical, tensor.nd_sbp, placement));
  if (static_cast<int64_t>(tensor.buffers.size()) != placement.num_devices()) {
    return absl::InternalError(absl::StrCat("the tensor has ", tensor.buffers.size(),
                                            " buffers for ", placement.num_devices(), " devices"));
  }
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    if (static_cast<int64_t>(tensor.buffers[rank].size()) != slices[rank].NumElements()) {
      return absl::InternalError(absl::StrCat("rank ", rank, " holds ", tensor.buffers[rank].size(),
                                              " elements, its slice ", slices[rank].ToString(),
                                              " has ", slices[rank].NumElements()));
    }
  }
  const std::vector<int64_t> partial_axes = PartialAxes(tensor.nd_sbp);
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    const std::vector<int64_t> coordinate = placement.Coordinate(rank);
    const std::vector<int64_t> summed = RanksVarying(placement, coordinate, partial_axes);
    if (summed.front() != rank) continue;  // Checked with the group's first device.
    absl::Status status = absl::OkStatus();
    ForEachElement(slices[rank], [&](int64_t local, const std::vector<int64_t>& index) {
      float sum = 0;
      for (int64_t member : summed) sum += tensor.buffers[member][local];
      const float want = values[LogicalOffset(logical, index)];
      if (status.ok() && !(std::fabs(sum - want) <= tolerance)) {
        status = absl::InternalError(absl::StrCat(
            "rank ", rank, " (coordinate ", absl::StrJoin(coordinate, ", "), ") element ",
            IndexText(index), ": holds ", sum, ", the logical value is ", want));
      }
    });
    OF_RETURN_IF_ERROR(status);
  }
  return absl::OkStatus();
}

absl::Status SimulateStep(const Shape& logical, const BoxingStep& step, const Placement& placement,
                          const Placement& next_placement, SimulatedTensor* tensor) {
  const std::string name = BoxingStepToString(step);
  if (step.src != tensor->nd_sbp) {
    return absl::InternalError(absl::StrCat("step ", name, " expects ", step.src.ToString(),
                                            " but the tensor is ", tensor->nd_sbp.ToString()));
  }
  OF_ASSIGN_OR_RETURN(std::vector<TensorSlice> src_slices, AllSlices(logical, step.src, placement));
  const bool send_recv = step.kind == BoxingKind::kSendRecv;
  const Placement& target = send_recv ? next_placement : placement;
  OF_ASSIGN_OR_RETURN(std::vector<TensorSlice> dst_slices, AllSlices(logical, step.dst, target));
  const int64_t axis = step.hierarchy_axis;
  if (send_recv) {
    if (!PartialAxes(step.src).empty()) {
      return absl::InternalError(absl::StrCat("step ", name, " sends a partial value"));
    }
  } else {
    bool other_axes_equal =
        axis >= 0 && axis < step.src.size() && step.src.size() == step.dst.size();
    for (int64_t other = 0; other_axes_equal && other < step.src.size(); ++other) {
      if (other != axis && step.src.at(other) != step.dst.at(other)) other_axes_equal = false;
    }
    if (!other_axes_equal) {
      return absl::InternalError(
          absl::StrCat("step ", name, " changes more than hierarchy axis ", axis));
    }
  }

  std::vector<std::vector<float>> next(target.num_devices());
  for (int64_t rank = 0; rank < target.num_devices(); ++rank) {
    const std::vector<int64_t> coordinate = target.Coordinate(rank);
    // Who this device may read from: every source device for a send/recv, else its group.
    std::vector<int64_t> readable;
    if (send_recv) {
      for (int64_t source = 0; source < placement.num_devices(); ++source)
        readable.push_back(source);
    } else {
      readable = RanksVarying(placement, coordinate, {axis});
    }
    bool zeros = false;  // Devices that start a partial value from zeros.
    if (send_recv) {
      for (int64_t partial : PartialAxes(step.dst)) zeros = zeros || coordinate[partial] != 0;
    } else if (step.kind == BoxingKind::kLocalPartial) {
      zeros = coordinate[axis] != 0;
    }
    std::vector<float>& buffer = next[rank];
    buffer.assign(dst_slices[rank].NumElements(), 0.0f);
    if (zeros) continue;
    absl::Status status = absl::OkStatus();
    ForEachElement(dst_slices[rank], [&](int64_t local, const std::vector<int64_t>& index) {
      auto read = [&](int64_t source) {
        return tensor->buffers[source][OffsetIn(src_slices[source], index)];
      };
      bool found = false;
      switch (step.kind) {
        case BoxingKind::kAllReduce:
        case BoxingKind::kReduceScatter:  // Every group member holds a part to add.
          found = true;
          for (int64_t member : readable) {
            found = found && Contains(src_slices[member], index);
            if (found) buffer[local] += read(member);
          }
          break;
        case BoxingKind::kAllGather:
        case BoxingKind::kAllToAll:
        case BoxingKind::kSendRecv:  // Some reachable device holds the element.
          for (int64_t member : readable) {
            if (Contains(src_slices[member], index)) {
              buffer[local] = read(member);
              found = true;
              break;
            }
          }
          break;
        case BoxingKind::kSplitToPartial:  // Own slice, zeros elsewhere.
          found = true;
          if (Contains(src_slices[rank], index)) buffer[local] = read(rank);
          break;
        case BoxingKind::kIdentity:
        case BoxingKind::kLocalSlice:
        case BoxingKind::kLocalPartial:  // Only the device's own buffer.
          found = Contains(src_slices[rank], index);
          if (found) buffer[local] = read(rank);
          break;
      }
      if (!found && status.ok()) {
        status = absl::InternalError(absl::StrCat(
            "step ", name, ": rank ", rank, " needs element ", IndexText(index),
            send_recv
                ? ", which no source device holds"
                : absl::StrCat(", which its group along hierarchy axis ", axis, " does not hold")));
      }
    });
    OF_RETURN_IF_ERROR(status);
  }
  tensor->nd_sbp = step.dst;
  tensor->buffers = std::move(next);
  return absl::OkStatus();
}

absl::StatusOr<SimulatedTensor> SimulatePlan(const Shape& logical, const std::vector<float>& values,
                                             const NdSbp& src, const Placement& src_placement,
                                             const BoxingPlan& plan, const Placement& dst_placement,
                                             uint64_t seed) {
  OF_ASSIGN_OR_RETURN(SimulatedTensor tensor,
                      Distribute(logical, values, src, src_placement, seed));
  const Placement* placement = &src_placement;
  for (const BoxingStep& step : plan.steps) {
    const Placement& next = step.kind == BoxingKind::kSendRecv ? dst_placement : *placement;
    OF_RETURN_IF_ERROR(SimulateStep(logical, step, *placement, next, &tensor));
    placement = &next;
  }
  if (*placement != dst_placement) {
    return absl::InternalError(absl::StrCat("the plan ends on ", placement->ToString(), ", not on ",
                                            dst_placement.ToString()));
  }
  return tensor;
}

}  // namespace oneflow
