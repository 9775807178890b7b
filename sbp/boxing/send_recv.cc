#include "sbp/boxing/send_recv.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace boxing {
namespace {

int64_t OverlapElements(const TensorSlice& a, const TensorSlice& b) {
  int64_t elements = 1;
  for (int64_t axis = 0; axis < a.rank(); ++axis) {
    const int64_t begin = std::max(a.range(axis).begin, b.range(axis).begin);
    const int64_t end = std::min(a.range(axis).end, b.range(axis).end);
    if (end <= begin) return 0;
    elements *= end - begin;
  }
  return elements;
}

// Source ranks grouped by their coordinates on the B axes of `src`: each group holds
// every element exactly once (src has no P axis).
std::vector<std::vector<int64_t>> Replicas(const NdSbp& src, const Placement& placement) {
  std::vector<std::vector<int64_t>> replicas;
  absl::flat_hash_map<std::string, size_t> replica_of;
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    const std::vector<int64_t> coordinate = placement.Coordinate(rank);
    std::vector<int64_t> broadcast_coordinate;
    for (int64_t axis = 0; axis < src.size(); ++axis) {
      if (src.at(axis).is_broadcast()) broadcast_coordinate.push_back(coordinate[axis]);
    }
    const std::string key = absl::StrJoin(broadcast_coordinate, ",");
    auto [it, inserted] = replica_of.emplace(key, replicas.size());
    if (inserted) replicas.emplace_back();
    replicas[it->second].push_back(rank);
  }
  return replicas;
}

bool ReceivesNothing(const NdSbp& dst, const std::vector<int64_t>& coordinate) {
  for (int64_t axis = 0; axis < dst.size(); ++axis) {
    if (dst.at(axis).is_partial() && coordinate[axis] != 0) return true;
  }
  return false;
}

struct Receipt {
  int64_t bytes = 0;
  double seconds = 0;
};

}  // namespace

BoxingStep MakeSendRecvStep(const BoxingContext& context, const NdSbp& src,
                            const Placement& src_placement, const NdSbp& dst,
                            const Placement& dst_placement) {
  std::vector<TensorSlice> src_slices;
  for (int64_t rank = 0; rank < src_placement.num_devices(); ++rank) {
    src_slices.push_back(*DeviceSlice(context.logical, src, src_placement, rank));
  }
  const std::vector<std::vector<int64_t>> replicas = Replicas(src, src_placement);
  const bool same_device_type = src_placement.device_type() == dst_placement.device_type();

  Receipt busiest;
  int64_t busiest_rank = 0;
  for (int64_t rank = 0; rank < dst_placement.num_devices(); ++rank) {
    if (ReceivesNothing(dst, dst_placement.Coordinate(rank))) continue;
    const TensorSlice slice = *DeviceSlice(context.logical, dst, dst_placement, rank);
    const DeviceId& receiver = dst_placement.device(rank);
    std::optional<Receipt> best;
    for (const std::vector<int64_t>& replica : replicas) {
      int64_t intra_elements = 0;
      int64_t inter_elements = 0;
      for (int64_t source : replica) {
        const int64_t overlap = OverlapElements(slice, src_slices[source]);
        const DeviceId& sender = src_placement.device(source);
        if (same_device_type && sender == receiver) continue;  // A local copy.
        (sender.node == receiver.node ? intra_elements : inter_elements) += overlap;
      }
      // Send/recv has no compressed form: its bytes travel dense.
      const int64_t element_size = SizeOf(context.dtype);
      const int64_t intra_bytes = intra_elements * element_size;
      const int64_t inter_bytes = inter_elements * element_size;
      // One message round on each level that carries bytes (the transfers run at once).
      const double latency = inter_bytes > 0   ? context.links.inter_node_latency
                             : intra_bytes > 0 ? context.links.intra_node_latency
                                               : 0.0;
      const Receipt receipt{intra_bytes + inter_bytes,
                            latency + intra_bytes / context.links.intra_node_bandwidth +
                                inter_bytes / context.links.inter_node_bandwidth};
      if (!best.has_value() || receipt.seconds < best->seconds ||
          (receipt.seconds == best->seconds && receipt.bytes < best->bytes)) {
        best = receipt;
      }
    }
    if (best->seconds > busiest.seconds ||
        (best->seconds == busiest.seconds && best->bytes > busiest.bytes)) {
      busiest = *best;
      busiest_rank = rank;
    }
  }

  BoxingStep step;
  step.kind = BoxingKind::kSendRecv;
  step.hierarchy_axis = -1;
  step.src = src;
  step.dst = dst;
  step.bytes_per_device = busiest.bytes;
  step.seconds = busiest.seconds;
  step.dense_bytes_per_device = busiest.bytes;
  step.dense_seconds = busiest.seconds;
  step.reason = absl::StrCat(
      src.ToString(), " on ", src_placement.ToString(), " -> ", dst.ToString(), " on ",
      dst_placement.ToString(),
      ": each destination device receives the part of its slice it does not hold, from "
      "the fastest source replica; the slowest is rank ",
      busiest_rank, " of the destination");
  return step;
}

}  // namespace boxing
}  // namespace oneflow
