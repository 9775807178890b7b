#include "examples/common/parallel_layout.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {

absl::StatusOr<ParallelLayout> ParallelLayout::Create(const ParallelFlags& flags) {
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"nodes", flags.nodes},
                                    {"devices_per_node", flags.devices_per_node},
                                    {"dp", flags.dp},
                                    {"tp", flags.tp}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, "=", value, " must be >= 1"));
    }
  }
  const int64_t devices = flags.nodes * flags.devices_per_node;
  if (flags.dp * flags.tp != devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dp=", flags.dp, " x --tp=", flags.tp, " is ", flags.dp * flags.tp,
        " devices, but --nodes=", flags.nodes, " x --devices_per_node=", flags.devices_per_node,
        " is ", devices, "; they must match"));
  }
  ParallelLayout layout;
  layout.dp_ = flags.dp;
  layout.tp_ = flags.tp;
  Shape hierarchy;
  if (flags.dp > 1 && flags.tp > 1) {
    hierarchy = Shape{flags.dp, flags.tp};
  } else {
    hierarchy = Shape{devices};
  }
  OF_ASSIGN_OR_RETURN(layout.placement_,
                      Placement::Grid(DeviceType::kCpu, flags.nodes, flags.devices_per_node, hierarchy));
  layout.cluster_.set_num_nodes(flags.nodes);
  layout.cluster_.set_devices_per_node(flags.devices_per_node);
  layout.cluster_.set_device_type(proto::DEVICE_CPU);
  layout.cluster_.set_intra_node_bandwidth(flags.intra_node_bandwidth);
  layout.cluster_.set_inter_node_bandwidth(flags.inter_node_bandwidth);
  return layout;
}

NdSbp ParallelLayout::Sbp(const oneflow::Sbp& data_axis, const oneflow::Sbp& model_axis) const {
  if (dp_ > 1 && tp_ > 1) return NdSbp{data_axis, model_axis};
  if (dp_ > 1) return NdSbp{data_axis};
  if (tp_ > 1) return NdSbp{model_axis};
  return NdSbp{oneflow::Sbp::Broadcast()};
}

}  // namespace oneflow::examples
