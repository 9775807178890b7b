#include "sbp/boxing/step_compression.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sbp/collective_cost.h"

namespace oneflow {
namespace boxing {
namespace {

std::string Ms(double seconds) { return absl::StrFormat("%.3g", seconds * 1e3); }

// The encoder a step whose levels use `codecs` runs (compiler/passes/plan_emission_pass.cc
// EmitCompression writes the same into the plan): stochastic rounding where the options
// ask for it and every level's codec has it, else the fitted int4 scale where they ask for
// that (a level whose codec is not int4 encodes plainly: ExtraEncodeSeconds charges it
// nothing), else the plain encoder.
EncoderVariant StepEncoder(const BoxingOptions& options, std::initializer_list<CompressionChoice> codecs) {
  bool every_level_rounds_stochastically = true;
  for (const CompressionChoice& codec : codecs) {
    every_level_rounds_stochastically &=
        !codec.compressed() || HasEncoderVariant(codec, EncoderVariant::kStochasticRounding);
  }
  if (options.stochastic_rounding && every_level_rounds_stochastically) return EncoderVariant::kStochasticRounding;
  return options.fitted_int4_scale ? EncoderVariant::kFittedInt4Scale : EncoderVariant::kPlain;
}

// Adds `encoded` elements encoded by `encoder` and `decoded` elements decoded in `codec`;
// the encode meters its error as it goes (EncodeMeasured) where the phase has no error
// feedback.
void AddPasses(const BoxingContext& context, const CompressionChoice& codec, EncoderVariant encoder,
               int64_t encoded, int64_t decoded, bool error_feedback, PricedCompression* priced) {
  const double element_bytes = SizeOf(context.dtype);
  const CodecThroughput& throughput = context.options.codec_throughput;
  priced->encode_seconds += error_feedback ? throughput.EncodeSeconds(codec, encoded * element_bytes, encoder)
                                           : throughput.EncodeMeasuredSeconds(codec, encoded * element_bytes, encoder);
  priced->decode_seconds += throughput.DecodeSeconds(codec, decoded * element_bytes);
}

// A reduce phase that sends `sent` elements encoded: the receivers decode each once, and
// with error feedback the sender decodes each too (its residual).
void AddReducePhase(const BoxingContext& context, const CompressionChoice& codec, EncoderVariant encoder,
                    int64_t sent, PricedCompression* priced) {
  const bool error_feedback = context.options.error_feedback;
  AddPasses(context, codec, encoder, sent, (error_feedback ? 2 : 1) * sent, error_feedback, priced);
}

// A gather phase of `members` shards of `shard` elements: this device's shard encoded,
// every shard decoded (its own too: the output needs it, and error feedback's residual
// reads that decode). `error_feedback`: a gradient's gather (an all-reduce's second phase
// or an all-gather step) with error feedback.
void AddGatherPhase(const BoxingContext& context, const CompressionChoice& codec, EncoderVariant encoder,
                    int64_t shard, int64_t members, bool error_feedback, PricedCompression* priced) {
  AddPasses(context, codec, encoder, shard, members * shard, error_feedback, priced);
}

// Adds `calls` calls of `elements` elements in `codec` on one level.
void AddWire(const BoxingContext& context, bool crosses_nodes, int64_t calls, int64_t elements,
             const CompressionChoice& codec, PricedCompression* priced) {
  const int64_t bytes = CountWireBytes(elements, context.dtype, codec).bytes;
  priced->wire_bytes += bytes;
  const LinkModel& links = context.links;
  priced->wire_seconds += bytes / (crosses_nodes ? links.inter_node_bandwidth : links.intra_node_bandwidth);
  priced->latency_seconds += calls * (crosses_nodes ? links.inter_node_latency : links.intra_node_latency);
}

void Describe(absl::string_view codecs, PricedCompression* priced) {
  priced->text = absl::StrCat(codecs, ": ", FormatMilliseconds(priced->seconds()), " (encode ",
                              Ms(priced->encode_seconds), " + wire ", Ms(priced->wire_seconds), " + decode ",
                              Ms(priced->decode_seconds), " + latency ", Ms(priced->latency_seconds), " ms)");
}

std::optional<PricedCompression> Flat(const BoxingContext& context, const CompressionChoice& codec,
                                      bool crosses_nodes, BoxingKind kind, int64_t members, int64_t elements) {
  if (!CountWireBytes(elements, context.dtype, codec).compressed) return std::nullopt;
  PricedCompression priced;
  priced.codec = codec;
  const bool reduces = kind != BoxingKind::kAllGather;
  const bool gathers = kind != BoxingKind::kReduceScatter;
  const int64_t chunk = elements / ((reduces && gathers ? 2 : 1) * (members - 1));
  const EncoderVariant encoder = StepEncoder(context.options, {codec});
  if (reduces) AddReducePhase(context, codec, encoder, (members - 1) * chunk, &priced);
  // A gradient's all-gather step feeds back its shard's error as an all-reduce's gather
  // phase does: a plain encode, the own shard's decode (made anyway) read for the residual.
  if (gathers) AddGatherPhase(context, codec, encoder, chunk, members, context.options.error_feedback, &priced);
  // One call per phase; the wire elements are those of the whole step.
  AddWire(context, crosses_nodes, reduces && gathers ? 2 : 1, elements, codec, &priced);
  Describe(CompressionChoiceText(codec), &priced);
  return priced;
}

std::optional<PricedCompression> TwoLevel(const BoxingContext& context, const NodeBlocks& blocks, BoxingKind kind,
                                          int64_t elements) {
  const BoxingOptions& options = context.options;
  const int64_t members = blocks.nodes * blocks.per_node;
  const int64_t phases = kind == BoxingKind::kAllReduce ? 2 : 1;
  const int64_t chunk = elements / (phases * (members - 1));
  const int64_t in_node_elements = (blocks.per_node - 1) * blocks.nodes * chunk;
  const int64_t cross_node_elements = (blocks.nodes - 1) * chunk;
  PricedCompression priced;
  priced.codec = options.reduce_in_node;
  priced.cross_node = options.reduce_cross_node;
  const EncoderVariant encoder = StepEncoder(options, {options.reduce_in_node, options.reduce_cross_node});
  AddReducePhase(context, options.reduce_in_node, encoder, in_node_elements, &priced);
  AddWire(context, false, 1, in_node_elements, options.reduce_in_node, &priced);
  AddReducePhase(context, options.reduce_cross_node, encoder, cross_node_elements, &priced);
  AddWire(context, true, 1, cross_node_elements, options.reduce_cross_node, &priced);
  if (kind == BoxingKind::kAllReduce) {
    // The all-gather phase: each reduced shard encoded once, in the in-node codec.
    AddGatherPhase(context, options.reduce_in_node, encoder, chunk, members, options.error_feedback, &priced);
    AddWire(context, true, 1, cross_node_elements, options.reduce_in_node, &priced);
    AddWire(context, false, 1, in_node_elements, options.reduce_in_node, &priced);
  }
  if (priced.wire_bytes >= elements * SizeOf(context.dtype)) return std::nullopt;
  Describe(absl::StrCat("two-level over ", blocks.nodes, " nodes x ", blocks.per_node, ", ",
                        CompressionChoiceText(options.reduce_in_node), " in-node + ",
                        CompressionChoiceText(options.reduce_cross_node), " cross-node"),
           &priced);
  return priced;
}

}  // namespace

std::optional<PricedCompression> PriceCompression(const BoxingContext& context, const Placement& placement,
                                                  int64_t axis, BoxingKind kind, int64_t elements) {
  const BoxingOptions& options = context.options;
  const bool reduces = kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter;
  if (!reduces && kind != BoxingKind::kAllGather) return std::nullopt;
  const int64_t members = placement.hierarchy().dim(axis);
  if (members < 2 || elements <= 0) return std::nullopt;
  const bool crosses_nodes = AxisCrossesNodes(placement, axis);
  if (!crosses_nodes && !options.compress_intra_node) return std::nullopt;
  if (!reduces) return Flat(context, options.gather, crosses_nodes, kind, members, elements);
  if (!crosses_nodes) return Flat(context, options.reduce_in_node, false, kind, members, elements);
  if (options.two_level && options.reduce_in_node.compressed() && options.reduce_cross_node.compressed()) {
    if (const std::optional<NodeBlocks> blocks = AxisNodeBlocks(placement, axis)) {
      return TwoLevel(context, *blocks, kind, elements);
    }
  }
  return Flat(context, options.reduce_cross_node, true, kind, members, elements);
}

}  // namespace boxing
}  // namespace oneflow
