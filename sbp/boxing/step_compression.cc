#include "sbp/boxing/step_compression.h"

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace boxing {
namespace {

std::string Milliseconds(double seconds) { return absl::StrCat(absl::SixDigits(seconds * 1e3), " ms"); }

// Elements of one level in one codec: their wire bytes and codec time.
struct Part {
  int64_t wire_bytes = 0;
  double codec_seconds = 0;
};

Part Encode(const BoxingContext& context, int64_t elements, const CompressionChoice& codec) {
  const int64_t dense_bytes = elements * SizeOf(context.dtype);
  return Part{CountWireBytes(elements, context.dtype, codec).bytes,
              dense_bytes / context.options.codec_throughput.BytesPerSecond(codec)};
}

std::optional<PricedCompression> Flat(const BoxingContext& context, const CompressionChoice& codec,
                                      bool crosses_nodes, int64_t elements) {
  const WireBytes wire = CountWireBytes(elements, context.dtype, codec);
  if (!wire.compressed) return std::nullopt;
  const double bandwidth = crosses_nodes ? context.links.inter_node_bandwidth : context.links.intra_node_bandwidth;
  const Part part = Encode(context, elements, codec);
  PricedCompression priced;
  priced.codec = codec;
  priced.wire_bytes = wire.bytes;
  priced.seconds = wire.bytes / bandwidth + part.codec_seconds;
  priced.comparison = absl::StrCat(crosses_nodes ? "inter-node " : "intra-node ", absl::SixDigits(bandwidth),
                                   " B/s: ", Milliseconds(elements * SizeOf(context.dtype) / bandwidth),
                                   " dense vs ", Milliseconds(wire.bytes / bandwidth), " ",
                                   CompressionChoiceText(codec), " + ", Milliseconds(part.codec_seconds),
                                   " codec");
  return priced;
}

std::optional<PricedCompression> TwoLevel(const BoxingContext& context, const NodeBlocks& blocks, BoxingKind kind,
                                          int64_t elements, double dense_seconds) {
  const BoxingOptions& options = context.options;
  const int64_t members = blocks.nodes * blocks.per_node;
  const int64_t phases = kind == BoxingKind::kAllReduce ? 2 : 1;
  const int64_t chunk = elements / (phases * (members - 1));
  const int64_t in_node_elements = (blocks.per_node - 1) * blocks.nodes * chunk;
  const int64_t cross_node_elements = (blocks.nodes - 1) * chunk;
  Part in_node = Encode(context, in_node_elements, options.reduce_in_node);
  Part cross_node = Encode(context, cross_node_elements, options.reduce_cross_node);
  if (kind == BoxingKind::kAllReduce) {
    // The all-gather phase: each reduced shard encoded once, in the in-node codec.
    const Part gather_in_node = Encode(context, in_node_elements, options.reduce_in_node);
    const Part gather_cross_node = Encode(context, cross_node_elements, options.reduce_in_node);
    in_node.wire_bytes += gather_in_node.wire_bytes;
    in_node.codec_seconds += gather_in_node.codec_seconds;
    cross_node.wire_bytes += gather_cross_node.wire_bytes;
    cross_node.codec_seconds += gather_cross_node.codec_seconds;
  }
  const int64_t wire_bytes = in_node.wire_bytes + cross_node.wire_bytes;
  if (wire_bytes >= elements * SizeOf(context.dtype)) return std::nullopt;
  const double in_node_seconds = in_node.wire_bytes / context.links.intra_node_bandwidth;
  const double cross_node_seconds = cross_node.wire_bytes / context.links.inter_node_bandwidth;
  const double codec_seconds = in_node.codec_seconds + cross_node.codec_seconds;
  PricedCompression priced;
  priced.codec = options.reduce_in_node;
  priced.cross_node = options.reduce_cross_node;
  priced.wire_bytes = wire_bytes;
  priced.seconds = in_node_seconds + cross_node_seconds + codec_seconds;
  priced.comparison = absl::StrCat(
      "two-level over ", blocks.nodes, " nodes x ", blocks.per_node, " devices, inter-node ",
      absl::SixDigits(context.links.inter_node_bandwidth), " B/s, intra-node ",
      absl::SixDigits(context.links.intra_node_bandwidth), " B/s: ", Milliseconds(dense_seconds), " dense vs ",
      Milliseconds(in_node_seconds), " ", CompressionChoiceText(options.reduce_in_node), " in-node + ",
      Milliseconds(cross_node_seconds), " ", CompressionChoiceText(options.reduce_cross_node), " cross-node + ",
      Milliseconds(codec_seconds), " codec");
  return priced;
}

}  // namespace

std::optional<PricedCompression> PriceCompression(const BoxingContext& context, const Placement& placement,
                                                  int64_t axis, BoxingKind kind, int64_t elements,
                                                  double dense_seconds) {
  const BoxingOptions& options = context.options;
  const bool reduces = kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter;
  if (!reduces && kind != BoxingKind::kAllGather) return std::nullopt;
  const bool crosses_nodes = AxisCrossesNodes(placement, axis);
  if (!crosses_nodes && !options.compress_intra_node) return std::nullopt;
  if (!reduces) return Flat(context, options.gather, crosses_nodes, elements);
  if (!crosses_nodes) return Flat(context, options.reduce_in_node, false, elements);
  if (options.two_level && options.reduce_in_node.compressed() && options.reduce_cross_node.compressed()) {
    if (const std::optional<NodeBlocks> blocks = AxisNodeBlocks(placement, axis)) {
      return TwoLevel(context, *blocks, kind, elements, dense_seconds);
    }
  }
  return Flat(context, options.reduce_cross_node, true, elements);
}

}  // namespace boxing
}  // namespace oneflow
