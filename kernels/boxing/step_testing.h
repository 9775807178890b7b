// Test helpers for kernels/boxing: in-process communicators for every group of a step,
// and logical values whose partial decompositions stay exact.
#ifndef KERNELS_BOXING_STEP_TESTING_H_
#define KERNELS_BOXING_STEP_TESTING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/shape.h"

namespace oneflow {

// One in-process group per group of devices along `axis` of `placement` (the devices
// that differ only in that coordinate), each ranked by its coordinate on the axis.
class AxisCommunicators {
 public:
  AxisCommunicators(const Placement& placement, int64_t axis)
      : by_rank_(placement.num_devices(), nullptr) {
    for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
      std::vector<int64_t> coordinate = placement.Coordinate(rank);
      if (coordinate[axis] != 0) continue;
      groups_.push_back(std::move(
          InProcessGroup::Create(placement.hierarchy().dim(axis), absl::StrCat("axis", axis))
              .value()));
      for (int64_t g = 0; g < placement.hierarchy().dim(axis); ++g) {
        coordinate[axis] = g;
        by_rank_[placement.RankOf(coordinate)] = &groups_.back()->communicator(g);
      }
    }
  }

  Communicator* For(int64_t rank) const { return by_rank_[rank]; }

 private:
  std::vector<std::unique_ptr<InProcessGroup>> groups_;
  std::vector<Communicator*> by_rank_;
};

// Integer-valued floats in [-20, 20]: exact as f32 and as i32, so one expected tensor
// serves both dtypes.
inline std::vector<float> LogicalValues(const Shape& shape, int64_t seed) {
  std::vector<float> values(shape.NumElements());
  for (int64_t i = 0; i < shape.NumElements(); ++i) {
    values[i] = static_cast<float>((i * 37 + seed * 13) % 41) - 20.0f;
  }
  return values;
}

}  // namespace oneflow

#endif  // KERNELS_BOXING_STEP_TESTING_H_
