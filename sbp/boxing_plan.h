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
#include "sbp/boxing_options.h"

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
  // Modelled time: bytes over the bandwidth of the links the step uses.
  double seconds = 0;
  // The format the bytes travel in: kNone is dense.
  BoxingOptions::Compression compression = BoxingOptions::Compression::kNone;
  // One line for humans: what moves where, over which links, by which algorithm.
  std::string reason;
};

struct BoxingPlan {
  std::vector<BoxingStep> steps;
  // Sums over the steps, which run one after another.
  int64_t bytes_per_device = 0;
  double seconds = 0;
};

// "all_reduce axis 0: P -> B, 216 bytes/device", with " (fp8e4m3)" appended for a
// compressed step; "send_recv: S(0) -> B, 84 bytes/device" for a send/recv.
std::string BoxingStepToString(const BoxingStep& step);

// One BoxingStepToString line per step, joined by '\n'; "" for an empty plan.
std::string BoxingPlanToString(const BoxingPlan& plan);

}  // namespace oneflow

#endif  // SBP_BOXING_PLAN_H_
