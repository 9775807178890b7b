#include "sbp/boxing/axis_step.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing/conversion_list.h"

namespace oneflow {
namespace boxing {

bool IsAxisStepValid(const NdSbp& from, int64_t axis, const Sbp& to, const Shape& hierarchy) {
  if (hierarchy.dim(axis) == 1) return true;  // One part of a split is the whole range.
  const Sbp& before = from.at(axis);
  for (int64_t inner = axis + 1; inner < from.size(); ++inner) {
    const Sbp& nested = from.at(inner);
    if (!nested.is_split() || hierarchy.dim(inner) == 1) continue;
    if ((before.is_split() && before.axis() == nested.axis()) ||
        (to.is_split() && to.axis() == nested.axis())) {
      return false;
    }
  }
  return true;
}

Shape GroupTensorShape(const Shape& logical, const NdSbp& from, int64_t axis,
                       const Shape& hierarchy) {
  std::vector<Sbp> others = from.sbps();
  others[axis] = Sbp::Broadcast();
  const std::vector<int64_t> first_group(hierarchy.rank(), 0);
  return DeviceSlice(logical, NdSbp(std::move(others)), hierarchy, first_group)->shape();
}

std::optional<BoxingStep> MakeAxisStep(const BoxingContext& context, const Placement& placement,
                                       const NdSbp& from, int64_t axis, const Sbp& to) {
  const Shape& hierarchy = placement.hierarchy();
  if (!IsAxisStepValid(from, axis, to, hierarchy)) return std::nullopt;
  std::vector<Sbp> after = from.sbps();
  after[axis] = to;

  BoxingStep step;
  step.hierarchy_axis = axis;
  step.src = from;
  step.dst = NdSbp(std::move(after));
  const Sbp& before = from.at(axis);
  if (hierarchy.dim(axis) == 1) {
    step.kind = BoxingKind::kIdentity;
    step.reason = absl::StrCat("hierarchy axis ", axis, " has one device, so ", before.ToString(),
                               " and ", to.ToString(), " hold the same data: relabel only");
    return step;
  }
  const AxisConversion* conversion = FindAxisConversion(before, to);
  if (conversion == nullptr) return std::nullopt;

  const AxisGroup group{GroupTensorShape(context.logical, from, axis, hierarchy),
                        hierarchy.dim(axis)};
  const int64_t elements = conversion->WireElements(group, before, to);
  const bool crosses_nodes = AxisCrossesNodes(placement, axis);
  const bool compressible = conversion->kind() == BoxingKind::kAllReduce ||
                            conversion->kind() == BoxingKind::kReduceScatter ||
                            conversion->kind() == BoxingKind::kAllGather;
  const double bandwidth =
      crosses_nodes ? context.links.inter_node_bandwidth : context.links.intra_node_bandwidth;
  const int64_t dense_bytes = elements * SizeOf(context.dtype);
  WireBytes wire = StepWireBytes(context, elements, crosses_nodes, compressible);
  // Encoding and decoding pass over the dense bytes once each side: charged at the
  // codec throughput, so `automatic` compresses only where the link is slow enough.
  const double codec_seconds = dense_bytes / context.options.codec_bytes_per_second;
  const double dense_seconds = dense_bytes / bandwidth;
  const double compressed_seconds = wire.bytes / bandwidth + codec_seconds;
  std::string decision;
  if (wire.compressed && context.options.automatic) {
    decision = absl::StrCat("; ", crosses_nodes ? "inter-node " : "intra-node ", absl::SixDigits(bandwidth),
                            " B/s: ", absl::SixDigits(dense_seconds * 1e3), " ms dense vs ",
                            absl::SixDigits(wire.bytes / bandwidth * 1e3), " ms ",
                            CompressionName(context.options.compression), " + ",
                            absl::SixDigits(codec_seconds * 1e3), " ms codec");
    if (compressed_seconds >= dense_seconds) wire = WireBytes{dense_bytes, false};
  }
  step.kind = conversion->kind();
  step.bytes_per_device = wire.bytes;
  step.seconds = wire.compressed ? compressed_seconds : dense_seconds;
  if (wire.compressed) step.compression = context.options.compression;
  step.reason = absl::StrCat(before.ToString(), " -> ", to.ToString(), " on hierarchy axis ", axis,
                             " (groups of ", group.size, " devices ",
                             crosses_nodes ? "across nodes" : "within a node", ", group tensor ",
                             group.tensor.ToString(), "): ", conversion->Algorithm());
  if (wire.compressed) {
    absl::StrAppend(&step.reason, "; ", CompressionName(step.compression), " on the wire, ",
                    dense_bytes, " bytes dense");
  }
  absl::StrAppend(&step.reason, decision, decision.empty() ? "" : (wire.compressed ? ": compressed" : ": dense"));
  return step;
}

}  // namespace boxing
}  // namespace oneflow
