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

// The two communicators of a two-level step for every device of `placement`: for each
// group along `axis` (whose members must lie node by node, the same number on each
// node), one in-process group per node of its members there (ranked by position on the
// node) and one per position across the nodes (ranked by node), as the runtime's
// communicator pool makes them.
class TwoLevelAxisCommunicators {
 public:
  TwoLevelAxisCommunicators(const Placement& placement, int64_t axis)
      : in_node_(placement.num_devices(), nullptr), cross_node_(placement.num_devices(), nullptr) {
    const int64_t size = placement.hierarchy().dim(axis);
    for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
      std::vector<int64_t> coordinate = placement.Coordinate(rank);
      if (coordinate[axis] != 0) continue;
      std::vector<int64_t> ranks;
      for (int64_t g = 0; g < size; ++g) {
        coordinate[axis] = g;
        ranks.push_back(placement.RankOf(coordinate));
      }
      int64_t local_size = 0;
      while (local_size < size &&
             placement.device(ranks[local_size]).node == placement.device(ranks[0]).node) {
        ++local_size;
      }
      const int64_t nodes = size / local_size;
      const std::string name = absl::StrCat("group of rank ", rank);
      std::vector<InProcessGroup*> in_node, cross_node;
      for (int64_t n = 0; n < nodes; ++n) {
        groups_.push_back(std::move(
            InProcessGroup::Create(local_size, absl::StrCat(name, " node ", n)).value()));
        in_node.push_back(groups_.back().get());
      }
      for (int64_t l = 0; l < local_size; ++l) {
        groups_.push_back(std::move(
            InProcessGroup::Create(nodes, absl::StrCat(name, " position ", l)).value()));
        cross_node.push_back(groups_.back().get());
      }
      for (int64_t g = 0; g < size; ++g) {
        in_node_[ranks[g]] = &in_node[g / local_size]->communicator(g % local_size);
        cross_node_[ranks[g]] = &cross_node[g % local_size]->communicator(g / local_size);
      }
    }
  }

  Communicator* InNode(int64_t rank) const { return in_node_[rank]; }
  Communicator* CrossNode(int64_t rank) const { return cross_node_[rank]; }

 private:
  std::vector<std::unique_ptr<InProcessGroup>> groups_;
  std::vector<Communicator*> in_node_;
  std::vector<Communicator*> cross_node_;
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
