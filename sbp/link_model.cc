#include "sbp/link_model.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace {

absl::Status CheckBandwidth(absl::string_view name, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("link model: ", name, " must be a finite number of bytes/s > 0, got ", value));
}

absl::Status CheckLatency(absl::string_view name, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("link model: ", name, " must be a finite number of seconds >= 0, got ", value));
}

}  // namespace

absl::Status CheckLinkModel(const LinkModel& links) {
  for (const absl::Status& status :
       {CheckBandwidth("intra_node_bandwidth", links.intra_node_bandwidth),
        CheckBandwidth("inter_node_bandwidth", links.inter_node_bandwidth),
        CheckLatency("intra_node_latency", links.intra_node_latency),
        CheckLatency("inter_node_latency", links.inter_node_latency)}) {
    if (!status.ok()) return status;
  }
  if (links.inter_node_transfer_latency.has_value()) {
    return CheckLatency("inter_node_transfer_latency", *links.inter_node_transfer_latency);
  }
  return absl::OkStatus();
}

bool AxisCrossesNodes(const Placement& placement, int64_t axis) {
  // Every device is in exactly one group along `axis`; comparing each device with the
  // first device of its group (coordinate 0 on `axis`) visits every group. Row-major
  // ranks: the head is `rank` minus its coordinate on `axis` times that axis's stride.
  // (The compiler asks this for every boxing it prices, so no allocation here.)
  const Shape& hierarchy = placement.hierarchy();
  int64_t stride = 1;
  for (int64_t a = hierarchy.rank() - 1; a > axis; --a) stride *= hierarchy.dim(a);
  const int64_t size = hierarchy.dim(axis);
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    const int64_t group_head = rank - (rank / stride) % size * stride;
    if (placement.device(rank).node != placement.device(group_head).node) return true;
  }
  return false;
}

std::optional<NodeBlocks> AxisNodeBlocks(const Placement& placement, int64_t axis) {
  const Shape& hierarchy = placement.hierarchy();
  int64_t stride = 1;
  for (int64_t a = hierarchy.rank() - 1; a > axis; --a) stride *= hierarchy.dim(a);
  const int64_t size = hierarchy.dim(axis);
  std::optional<NodeBlocks> shared;
  // Each group is visited from its head (coordinate 0 on `axis`), members `stride` apart,
  // as runs of consecutive members on one node: (node, length).
  for (int64_t head = 0; head < placement.num_devices(); ++head) {
    if ((head / stride) % size != 0) continue;
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t member = 0; member < size; ++member) {
      const int64_t node = placement.device(head + member * stride).node;
      if (!runs.empty() && runs.back().first == node) {
        ++runs.back().second;
      } else {
        runs.push_back({node, 1});
      }
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].second != runs[0].second) return std::nullopt;
      for (size_t j = 0; j < i; ++j) {
        if (runs[j].first == runs[i].first) return std::nullopt;  // Back to a node it left.
      }
    }
    const NodeBlocks blocks{static_cast<int64_t>(runs.size()), runs[0].second};
    if (blocks.nodes < 2 || blocks.per_node < 2) return std::nullopt;
    if (shared.has_value() && (shared->nodes != blocks.nodes || shared->per_node != blocks.per_node)) {
      return std::nullopt;
    }
    shared = blocks;
  }
  return shared;
}

double AxisBandwidth(const LinkModel& links, const Placement& placement, int64_t axis) {
  return AxisCrossesNodes(placement, axis) ? links.inter_node_bandwidth
                                           : links.intra_node_bandwidth;
}

double PairBandwidth(const LinkModel& links, const DeviceId& a, const DeviceId& b) {
  return a.node == b.node ? links.intra_node_bandwidth : links.inter_node_bandwidth;
}

}  // namespace oneflow
