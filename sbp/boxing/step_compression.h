// The compressed form of one collective step, priced: which codecs, how many bytes on
// which links, how long, and the sentence that says so.
//
// A flat step runs one codec over the step's group: wire = CountWireBytes(E, codec) for
// the E elements the busiest device receives, over the group's bandwidth (inter-node as
// soon as the group crosses nodes). A two-level reduction over M nodes x L devices
// (BoxingOptions::two_level, link_model.h's NodeBlocks) splits those E elements by link:
// with c the largest chunk (E = (n-1) c for a reduce-scatter, n = M L),
//   in-node      (L-1) M c elements in the in-node codec (the all-to-all inside nodes)
//   cross-node   (M-1) c elements in the cross-node codec (node partial sums across)
// and an all-reduce adds its all-gather phase, (L-1) M c + (M-1) c elements more, in the
// in-node codec: the runtime gathers each reduced shard once encoded at in-node
// precision (kernels/boxing/boxing_step.h). Its time is in-node bytes over the intra-node
// bandwidth plus cross-node bytes over the inter-node one. Every codec is charged its
// dense bytes (elements x dtype size) over its throughput (sbp/codec_throughput.h).
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
  // Link time plus codec time.
  double seconds = 0;
  // How it compares with the dense step, e.g. "inter-node 1.25e+08 B/s: 5.2 ms dense vs
  // 1.4 ms taco_fp8 G=128 + 0.3 ms codec".
  std::string comparison;
};

// The compressed form of a `kind` step over hierarchy axis `axis` of `placement` whose
// busiest device receives `elements` elements dense, under context.options; nullopt
// when the options give this step no codec (a kind without a compressed form, an
// in-node step without compress_intra_node) or the encoding would not shrink it.
// `dense_seconds` is the dense step's time, for the comparison.
std::optional<PricedCompression> PriceCompression(const BoxingContext& context, const Placement& placement,
                                                  int64_t axis, BoxingKind kind, int64_t elements,
                                                  double dense_seconds);

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_STEP_COMPRESSION_H_
