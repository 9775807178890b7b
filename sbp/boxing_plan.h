// The result of boxing: an ordered list of steps that turn one tensor layout into
// another, each with its bytes on the wire and its modelled time.
//
// A plan is what the graph compiler lowers (one collective or local kernel per step)
// and what `inspect` prints, so every step says what it does (kind, hierarchy axis,
// SBP before and after), what it costs, and why it is there (`reason`).
//
// Placement of the steps: steps before a kSendRecv run on the source placement, steps
// after it on the destination placement. A plan has at most one kSendRecv, and only
// when the two placements differ. An empty plan means nothing to do (same SBP, same
// placement).
#ifndef SBP_BOXING_PLAN_H_
#define SBP_BOXING_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "oneflow_core/sbp.h"
#include "sbp/compression.h"

namespace oneflow {

enum class BoxingKind {
  kIdentity,        // relabel only: the hierarchy axis has one device; no traffic
  kAllReduce,       // P -> B
  kReduceScatter,   // P -> S(i)
  kAllGather,       // S(i) -> B
  kAllToAll,        // S(i) -> S(j), i != j
  kLocalSlice,      // B -> S(i): keep one's own part; no traffic
  kLocalPartial,    // B -> P: coordinate 0 keeps the value, the others hold zeros
  kSplitToPartial,  // S(i) -> P: place one's slice into zeros; no traffic
  kSendRecv,        // between two different placements
};

// "identity", "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "local_slice",
// "local_partial", "split_to_partial", "send_recv".
absl::string_view BoxingKindName(BoxingKind kind);

struct BoxingStep {
  BoxingKind kind = BoxingKind::kIdentity;
  // The hierarchy axis whose groups run the step; -1 for kSendRecv, which moves data
  // between whole placements.
  int64_t hierarchy_axis = -1;
  // The N-D SBP before and after. A per-axis step changes only `hierarchy_axis`;
  // for kSendRecv, `src` is on the source placement and `dst` on the destination one.
  NdSbp src;
  NdSbp dst;
  // Bytes the busiest device receives (docs/sbp_and_boxing.md has the convention and
  // the formula of each kind). Counted compressed when `compression` is not kNone.
  int64_t bytes_per_device = 0;
  // Modelled time: bytes over the bandwidth of the links the step uses, plus the codec
  // time of a compressed step.
  double seconds = 0;
  // The format the bytes travel in (kNone: dense); for a two-level reduction, the format
  // of the exchange inside each node.
  CompressionChoice compression;
  // A two-level reduction's format across nodes; kNone for a one-level step.
  CompressionChoice cross_node_compression;
  // The same step dense: equal to bytes_per_device and seconds when nothing compresses,
  // so `dense_seconds - seconds` is the modelled time compression saves.
  int64_t dense_bytes_per_device = 0;
  double dense_seconds = 0;
  // For a gradient reduction in a gradient bucket (BoxingOptions::dense_in_bucket), dense
  // or compressed by `--compression=auto`: the part of `seconds` that is its calls'
  // latency, which the bucket's collective makes once for all its members. The boxing
  // search charges such a step without it (sbp_search.cc); 0 for every other step (a
  // forced codec's keeps its chain, so its bucketed and unbucketed plans train alike).
  double bucket_shared_latency_seconds = 0;
  // One line for humans: what moves where, over which links, by which algorithm, and
  // `compression_reason` when it is set.
  std::string reason;
  // The cost model's compression decision for a step the options could compress, e.g.
  // "inter-node 1.25e+08 B/s: 5.2 ms dense vs 1.4 ms fp8e4m3 G=128 hadamard + 0.3 ms codec:
  // compressed, saves 3.5 ms" (or ": dense"); empty when no codec applies.
  std::string compression_reason;
};

struct BoxingPlan {
  std::vector<BoxingStep> steps;
  // Sums over the steps, which run one after another.
  int64_t bytes_per_device = 0;
  double seconds = 0;
};

// "all_reduce axis 0: P -> B, 216 bytes/device", with " (fp8e4m3 G=128)" appended for a
// compressed step (" (int8 G=512 hadamard in-node, int4 G=128 hadamard cross-node)" for a
// two-level one); "send_recv: S(0) -> B, 84 bytes/device" for a send/recv.
std::string BoxingStepToString(const BoxingStep& step);

// One BoxingStepToString line per step, joined by '\n'; "" for an empty plan.
std::string BoxingPlanToString(const BoxingPlan& plan);

}  // namespace oneflow

#endif  // SBP_BOXING_PLAN_H_
