#include "compiler/ring_shift.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

constexpr char kRingShift[] = "ring_shift";

int64_t IntAttr(const proto::OpDef& def, const char* name, int64_t fallback) {
  auto it = def.attrs().find(name);
  if (it == def.attrs().end()) return fallback;
  return it->second.value_case() == proto::AttrValue::kI ? it->second.i() : fallback;
}

int64_t IndexOf(const std::vector<Placement>& placements, const Placement& placement) {
  for (size_t i = 0; i < placements.size(); ++i) {
    if (placements[i] == placement) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

Placement RingShiftedPlacement(const Placement& placement, int64_t hierarchy_axis, int64_t shift) {
  const int64_t size = placement.hierarchy().dim(hierarchy_axis);
  std::vector<DeviceId> devices;
  devices.reserve(placement.num_devices());
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    std::vector<int64_t> coordinate = placement.Coordinate(rank);
    coordinate[hierarchy_axis] = ((coordinate[hierarchy_axis] + shift) % size + size) % size;
    devices.push_back(placement.device(placement.RankOf(coordinate)));
  }
  // A permutation of a valid placement's devices over the same hierarchy is valid.
  return *Placement::Create(placement.device_type(), std::move(devices), placement.hierarchy());
}

absl::Status AddRingShiftPlacements(const proto::Job& job, LogicalGraph* graph) {
  for (size_t o = 0; o < graph->ops.size(); ++o) {
    const LogicalOp& op = graph->ops[o];
    if (op.type != kRingShift) continue;
    const proto::OpDef& def = job.ops(static_cast<int>(o));
    const Placement placement = graph->placements[op.placement];
    const int64_t blocks = IntAttr(def, "blocks", 1);
    for (int64_t axis = 0; axis < placement.hierarchy().rank(); ++axis) {
      if (placement.hierarchy().dim(axis) != blocks || blocks < 2) continue;
      Placement shifted = RingShiftedPlacement(placement, axis, IntAttr(def, "shift", 1));
      if (IndexOf(graph->placements, shifted) < 0) graph->placements.push_back(std::move(shifted));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InputPlacementOf(const Compilation& compilation, int64_t o) {
  const LogicalGraph& graph = compilation.graph;
  const LogicalOp& op = graph.ops[o];
  if (op.type != kRingShift || op.input_sbps.empty()) return op.placement;
  const proto::OpDef& def = compilation.job.ops(static_cast<int>(o));
  const Placement& placement = graph.placements[op.placement];
  const Sbp split = Sbp::Split(IntAttr(def, "axis", 0));
  const int64_t blocks = IntAttr(def, "blocks", 1);
  std::vector<int64_t> ring_axes;
  for (int64_t axis = 0; axis < op.input_sbps[0].size(); ++axis) {
    if (op.input_sbps[0].at(axis) == split && placement.hierarchy().dim(axis) > 1) ring_axes.push_back(axis);
  }
  if (ring_axes.empty()) return op.placement;
  if (ring_axes.size() > 1 || placement.hierarchy().dim(ring_axes[0]) != blocks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op.name, "' (ring_shift) splits its axis ", split.ToString(), " as ", op.input_sbps[0].ToString(),
        " over ", placement.ToString(), ": the ring needs one block per device of exactly one hierarchy axis of ",
        blocks, " devices (blocks=", blocks, ")"));
  }
  const int64_t index =
      IndexOf(graph.placements, RingShiftedPlacement(placement, ring_axes[0], IntAttr(def, "shift", 1)));
  if (index < 0) {
    return absl::InternalError(absl::StrCat("op '", op.name, "' (ring_shift): the rotated placement was not indexed"));
  }
  return index;
}

}  // namespace oneflow
