// The compressed form of one collective step, priced as the runtime runs it: which
// codecs, how many bytes on which links, and how long, pass by pass.
//
// The runtime (kernels/compression/compressed_collectives.h) makes, per device, with c
// the largest chunk (E = (n-1) c dense elements received for a reduce-scatter or an
// all-gather over n members, E = 2 (n-1) c for an all-reduce):
//   reduce-scatter  one AllToAll call: encode (n-1) c, decode (n-1) c (the receiver's);
//                   without error feedback the encode meters its error as it goes
//                   (EncodeMeasured), with it (BoxingOptions::error_feedback) a plain
//                   encode and one more decode (n-1) c, the sender's, for the residual
//   all-gather      one AllGather call: encode c (its shard; metering as it encodes
//                   without error feedback, a plain encode with it: the shard owner's
//                   residual reads the own shard's decode), decode n c (every shard, its
//                   own as the output's)
//   all-reduce      both, so two calls, both phases with the step's error feedback
// A two-level reduction over M nodes x L devices (BoxingOptions::two_level, link_model.h's
// NodeBlocks) makes an in-node call and a cross-node call per phase:
//   in-node      (L-1) M c elements in the in-node codec (the all-to-all inside nodes)
//   cross-node   (M-1) c elements in the cross-node codec (node partial sums across)
// with the reduce-scatter's passes per level, and an all-reduce adds its all-gather phase, each
// reduced shard encoded once at in-node precision (kernels/boxing/boxing_step.h):
// (M-1) c elements across nodes and (L-1) M c inside, encode c, decode M L c.
// Time = the calls' latencies (LinkModel, per level) + wire bytes over each level's
// bandwidth + every pass's dense bytes over that codec's encode, metering-encode or
// decode throughput (sbp/codec_throughput.h), each encode with the extra work of the encoder
// the step runs (stochastic rounding, int4's fitted scale: BoxingOptions::stochastic_rounding,
// fitted_int4_scale; CodecThroughput::ExtraEncodeSeconds). Wire bytes: CountWireBytes of each level's
// elements. Not priced: error feedback's element-wise passes besides the codec's (adding
// the residual, keeping it, comparing for the metering), which stream memory like a copy.
#ifndef SBP_BOXING_STEP_COMPRESSION_H_
#define SBP_BOXING_STEP_COMPRESSION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "oneflow_core/placement.h"
#include "sbp/boxing/context.h"
#include "sbp/boxing_plan.h"

namespace oneflow {
namespace boxing {

struct PricedCompression {
  // The codec of a flat step, or the in-node one of a two-level step.
  CompressionChoice codec;
  // A two-level step's cross-node codec; kNone for a flat step.
  CompressionChoice cross_node;
  int64_t wire_bytes = 0;
  // The parts of the time: the calls' latencies, wire bytes over bandwidth, and the
  // codec passes.
  double latency_seconds = 0;
  double wire_seconds = 0;
  double encode_seconds = 0;
  double decode_seconds = 0;
  // "int4 G=128 hadamard: 1.8 ms (encode 0.3 + wire 1.1 + decode 0.4 + latency 0.05 ms)",
  // for two-level "int8 G=512 hadamard in-node + int4 G=128 hadamard cross-node: ...".
  std::string text;

  double seconds() const { return latency_seconds + wire_seconds + encode_seconds + decode_seconds; }
};

// The compressed form of a `kind` step over hierarchy axis `axis` of `placement` whose
// busiest device receives `elements` elements dense, under context.options; nullopt
// when the options give this step no codec (a kind without a compressed form, an
// in-node step without compress_intra_node) or the encoding would not shrink it.
std::optional<PricedCompression> PriceCompression(const BoxingContext& context, const Placement& placement,
                                                  int64_t axis, BoxingKind kind, int64_t elements);

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_STEP_COMPRESSION_H_
