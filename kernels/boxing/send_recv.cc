// RunSendRecv: the step between two placements, as one all-to-all over the union group.
//
// Every member computes the same routing from the two layouts alone: the source slices
// fall into classes of replicas (under an N-D SBP without P, two slices are equal or
// disjoint: they first differ on a split axis, or only on B axes), and each receiving
// destination device takes its piece of every class from one replica. Then one AllToAll
// with a byte matrix that is zero where nothing moves carries all pieces at once, so
// devices that are both sources and destinations cannot wait on each other as ordered
// pairwise sends could. A piece a device holds itself is copied locally and never sent.
// Bytes: each destination receives its slice minus what it holds (docs/sbp_and_boxing.md).
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/slice_boxes.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// One destination device's piece of one source class, and the source chosen to send it.
struct Route {
  int64_t source = 0;       // rank in the source placement
  int64_t destination = 0;  // rank in the destination placement
  TensorSlice box;
};

bool HasPartial(const NdSbp& nd_sbp) {
  for (const Sbp& sbp : nd_sbp.sbps()) {
    if (sbp.is_partial()) return true;
  }
  return false;
}

// Destination devices off coordinate 0 on a P axis start the partial value from zeros.
bool Receives(const NdSbp& dst, const Placement& placement, int64_t rank) {
  const std::vector<int64_t> coordinate = placement.Coordinate(rank);
  for (int64_t axis = 0; axis < dst.size(); ++axis) {
    if (dst.at(axis).is_partial() && coordinate[axis] != 0) return false;
  }
  return true;
}

// The replica of `replicas` (source ranks) that sends to destination `t`: the device
// itself, else one on its node, else any; among several, spread by destination rank.
int64_t ChooseSource(const std::vector<int64_t>& replicas, const Placement& src,
                     const DeviceId& destination, int64_t t) {
  std::vector<int64_t> same_node;
  for (int64_t s : replicas) {
    if (src.device(s) == destination) return s;
    if (src.device(s).node == destination.node) same_node.push_back(s);
  }
  const std::vector<int64_t>& candidates = same_node.empty() ? replicas : same_node;
  return candidates[t % static_cast<int64_t>(candidates.size())];
}

absl::StatusOr<std::vector<Route>> PlanRoutes(const SendRecvArgs& args,
                                              const std::vector<TensorSlice>& sources,
                                              const std::vector<TensorSlice>& destinations,
                                              absl::string_view name) {
  std::vector<std::vector<int64_t>> classes;  // source ranks with equal slices
  for (int64_t s = 0; s < static_cast<int64_t>(sources.size()); ++s) {
    bool placed = false;
    for (std::vector<int64_t>& replicas : classes) {
      if (sources[replicas[0]] == sources[s]) {
        replicas.push_back(s);
        placed = true;
        break;
      }
    }
    if (!placed) classes.push_back({s});
  }
  std::vector<Route> routes;
  for (int64_t t = 0; t < static_cast<int64_t>(destinations.size()); ++t) {
    if (!Receives(args.dst, *args.dst_placement, t)) continue;
    int64_t covered = 0;
    for (const std::vector<int64_t>& replicas : classes) {
      TensorSlice box = Intersect(sources[replicas[0]], destinations[t]);
      if (box.NumElements() == 0) continue;
      covered += box.NumElements();
      const int64_t s =
          ChooseSource(replicas, *args.src_placement, args.dst_placement->device(t), t);
      routes.push_back(Route{s, t, std::move(box)});
    }
    if (covered != destinations[t].NumElements()) {  // Cannot happen for SBPs without P.
      return absl::InternalError(absl::StrCat(name, ": the sources hold ", covered, " of the ",
                                              destinations[t].NumElements(),
                                              " elements of destination rank ", t));
    }
  }
  return routes;
}

}  // namespace

absl::Status RunSendRecv(const SendRecvArgs& args) {
  if (args.src_placement == nullptr || args.dst_placement == nullptr) {
    return absl::InvalidArgumentError("send_recv: a placement is missing");
  }
  const Placement& src = *args.src_placement;
  const Placement& dst = *args.dst_placement;
  const std::string name =
      absl::StrCat("send_recv of ", DTypeName(args.dtype), " ", args.logical.ToString(), ": ",
                   args.src.ToString(), " on ", src.ToString(), " -> ", args.dst.ToString(), " on ",
                   dst.ToString(), ", device ", args.device.ToString());
  auto error = [&](absl::string_view message) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", message));
  };
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(args.logical, args.src, src.hierarchy()),
                                 absl::StrCat(name, ": source")));
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(args.logical, args.dst, dst.hierarchy()),
                                 absl::StrCat(name, ": destination")));
  if (HasPartial(args.src)) {
    return error("a partial value does not travel; reduce it on the source placement first");
  }
  for (const Sbp& sbp : args.dst.sbps()) {
    if (sbp.is_partial() && sbp.reduce_op() != ReduceOp::kSum) {
      return absl::UnimplementedError(
          absl::StrCat(name, ": a destination ", sbp.ToString(), " needs its identity element"));
    }
  }

  // The union group: sources in rank order, then destinations not among them.
  std::vector<DeviceId> members = src.devices();
  for (const DeviceId& device : dst.devices()) {
    if (src.RankOf(device) < 0) members.push_back(device);
  }
  auto member_of = [&](const DeviceId& device) {
    for (size_t u = 0; u < members.size(); ++u) {
      if (members[u] == device) return static_cast<int64_t>(u);
    }
    return int64_t{-1};
  };
  const int64_t me = member_of(args.device);
  if (me < 0) return error("the device is in neither placement");
  const int64_t n = static_cast<int64_t>(members.size());
  if (args.communicator == nullptr || args.communicator->size() != n ||
      args.communicator->rank() != me) {
    return error(absl::StrCat("needs the communicator of the union group (", n,
                              " devices, this one number ", me, "), got ",
                              args.communicator == nullptr ? "none" : args.communicator->Name()));
  }

  std::vector<TensorSlice> sources;
  std::vector<TensorSlice> destinations;
  for (int64_t s = 0; s < src.num_devices(); ++s) {
    OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(args.logical, args.src, src, s));
    sources.push_back(std::move(slice));
  }
  for (int64_t t = 0; t < dst.num_devices(); ++t) {
    OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(args.logical, args.dst, dst, t));
    destinations.push_back(std::move(slice));
  }
  const int64_t element_size = SizeOf(args.dtype);
  const int64_t my_source = src.RankOf(args.device);
  const int64_t my_destination = dst.RankOf(args.device);
  const int64_t input_bytes = my_source < 0 ? 0 : sources[my_source].NumElements() * element_size;
  const int64_t output_bytes =
      my_destination < 0 ? 0 : destinations[my_destination].NumElements() * element_size;
  if (args.input_bytes != input_bytes || args.output_bytes != output_bytes) {
    return error(absl::StrCat("the buffers hold ", args.input_bytes, " and ", args.output_bytes,
                              " bytes; this device's source and destination slices need ",
                              input_bytes, " and ", output_bytes));
  }
  OF_RETURN_IF_ERROR(WithContext(CheckBuffer("input", args.input, input_bytes), name));
  OF_RETURN_IF_ERROR(WithContext(CheckBuffer("output", args.output, output_bytes), name));

  OF_ASSIGN_OR_RETURN(const std::vector<Route> routes,
                      PlanRoutes(args, sources, destinations, name));
  // Union ranks: a source's is its source rank; a destination's is found by device.
  std::vector<int64_t> destination_member(dst.num_devices());
  for (int64_t t = 0; t < dst.num_devices(); ++t) destination_member[t] = member_of(dst.device(t));

  std::vector<int64_t> matrix(n * n, 0);
  std::vector<TensorSlice> outgoing;  // this device's pieces to send, by destination member
  std::vector<TensorSlice> incoming;  // its pieces to receive, by source member
  std::vector<std::vector<const Route*>> by_destination_member(n);
  std::vector<std::vector<const Route*>> by_source_member(n);
  const TensorSlice* local = nullptr;  // a piece it sends itself
  for (const Route& route : routes) {
    const int64_t to = destination_member[route.destination];
    if (route.source == to) {  // same device: a local copy
      if (to == me) local = &route.box;
      continue;
    }
    matrix[route.source * n + to] = route.box.NumElements() * element_size;
    if (route.source == me) by_destination_member[to].push_back(&route);
    if (to == me) by_source_member[route.source].push_back(&route);
  }
  for (int64_t u = 0; u < n; ++u) {
    for (const Route* route : by_destination_member[u]) outgoing.push_back(route->box);
    for (const Route* route : by_source_member[u]) incoming.push_back(route->box);
  }

  if (my_destination >= 0 && !Receives(args.dst, dst, my_destination) && output_bytes > 0) {
    std::memset(args.output, 0, output_bytes);
  }
  if (local != nullptr) {
    CopyBox(sources[my_source], args.input, *local, destinations[my_destination], element_size,
            args.output);
  }
  std::vector<char> send_scratch;
  std::vector<char> receive_scratch;
  const void* send = my_source < 0 ? nullptr
                                   : SendBufferFor(sources[my_source], args.input, outgoing,
                                                   element_size, &send_scratch);
  void* receive = my_destination < 0 ? nullptr
                                     : ReceiveBufferFor(destinations[my_destination], args.output,
                                                        incoming, element_size, &receive_scratch);
  OF_RETURN_IF_ERROR(args.communicator->AllToAll(send, receive, matrix, args.options));
  if (my_destination >= 0) {
    UnpackReceived(receive_scratch, incoming, destinations[my_destination], element_size,
                   args.output);
  }
  return absl::OkStatus();
}

}  // namespace oneflow
