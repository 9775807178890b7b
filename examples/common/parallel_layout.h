// The layout flags every example shares: how many nodes and devices, and how they are
// split between data parallelism (dp) and Megatron-style tensor parallelism (tp).
//
// dp x tp devices form the hierarchy [dp, tp] (axes of size 1 are dropped, so pure data
// parallelism is the 1-D hierarchy [dp]). Models ask for SBP hints by role:
//   layout.Sbp(Sbp::Split(0), Sbp::Broadcast())   data: rows split over dp, whole over tp
//   layout.Sbp(Sbp::Broadcast(), Sbp::Split(1))   column-parallel weight
#ifndef EXAMPLES_COMMON_PARALLEL_LAYOUT_H_
#define EXAMPLES_COMMON_PARALLEL_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "proto/plan.pb.h"

namespace oneflow::examples {

struct ParallelFlags {
  int64_t nodes = 1;
  int64_t devices_per_node = 1;
  int64_t dp = 1;
  int64_t tp = 1;
  // Link bandwidths of the cluster description, bytes per second.
  double intra_node_bandwidth = 100e9;
  double inter_node_bandwidth = 12.5e9;
};

class ParallelLayout {
 public:
  // Errors name the flags: "--dp=2 x --tp=3 is 6 devices, but --nodes=1 x
  // --devices_per_node=4 is 4; they must match".
  static absl::StatusOr<ParallelLayout> Create(const ParallelFlags& flags);

  const Placement& placement() const { return placement_; }
  const proto::Cluster& cluster() const { return cluster_; }
  int64_t dp() const { return dp_; }
  int64_t tp() const { return tp_; }

  // One SBP per kept hierarchy axis: `data_axis` for dp, `model_axis` for tp.
  NdSbp Sbp(const oneflow::Sbp& data_axis, const oneflow::Sbp& model_axis) const;

 private:
  Placement placement_;
  proto::Cluster cluster_;
  int64_t dp_ = 1;
  int64_t tp_ = 1;
};

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_PARALLEL_LAYOUT_H_
