// The N-D SBP signatures an op may take and what each costs: shared by the greedy SBP
// choice (sbp_choice_pass.h), which takes the cheapest for each op in turn, and the SBP
// search (sbp_search_pass.h), which moves ops off the greedy choice where the whole
// graph's modelled seconds drop.
#ifndef COMPILER_PASSES_SBP_CANDIDATES_H_
#define COMPILER_PASSES_SBP_CANDIDATES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "compiler/boxing_cache.h"
#include "compiler/compilation.h"
#include "oneflow_core/ops/op_definition.h"
#include "sbp/compute_cost.h"

namespace oneflow {

// One N-D signature of an op: an SBP per input and per output.
struct SbpCandidate {
  std::vector<NdSbp> inputs;
  std::vector<NdSbp> outputs;
  std::vector<size_t> picks;  // The 1-D signature used on each hierarchy axis.
  // Judged per axis on the local shapes (attrs_for_local_shapes): every axis already checked.
  bool judged_locally = false;
};

struct OpSbpCandidates {
  std::vector<SbpSignature> signatures;  // The op's 1-D signatures.
  // Every combination of them over the placement's hierarchy axes that holds for its
  // device counts and agrees with the hints on the op's outputs, in the greedy choice's
  // tie-break order (whole-tensor combinations first, axis 0 outermost; for ops whose
  // signatures depend on the shapes, then the layouts only the per-axis judgement says).
  std::vector<SbpCandidate> candidates;
};

// The candidates of `op`. Internal error when the op offers no signature at all; an
// empty `candidates` when none agrees with the output hints (the caller names them).
absl::StatusOr<OpSbpCandidates> SbpCandidatesOf(const LogicalGraph& graph, const LogicalOp& op);

// Boxing prices PriceCandidateInputs was asked for before, keyed by (tensor, layouts,
// placements, bucket scale): BoxingCache keys its plans by the question printed as text,
// and building that text for every question was most of the SBP search's time (perf,
// session 52), which asks the same few questions many times. A tensor's boxing options
// are its own (BoxingOptionsOf), so the key leaves them out.
class InputPriceMemo {
 public:
  // The seconds of boxing tensor `t` from `from` to `to` between placements, priced on a
  // tensor `scale` times as large (a bucket member) as PriceCandidateInputs does;
  // infinity for a conversion the planner cannot make; nothing when not asked yet.
  struct Price {
    double seconds = 0;
    double calls = 0;  // collective calls, a bucket member's its share
  };
  std::optional<Price> Find(int64_t t, const NdSbp& from, int64_t from_placement, const NdSbp& to,
                            int64_t to_placement, int64_t scale) const;
  void Insert(int64_t t, const NdSbp& from, int64_t from_placement, const NdSbp& to, int64_t to_placement,
              int64_t scale, Price price);

 private:
  using Key = absl::InlinedVector<int64_t, 12>;
  static Key KeyOf(int64_t t, const NdSbp& from, int64_t from_placement, const NdSbp& to, int64_t to_placement,
                   int64_t scale);
  absl::flat_hash_map<Key, Price> prices_;
};

// The modelled seconds of reading `op`'s inputs, as their tensors are laid out now
// (LogicalTensor::sbp), in `candidate`'s layouts, and the number of inputs converted;
// `input_options` per input (BoxingOptionsOf). A partial integer output's reduction is
// charged too (no op takes a partial index, so it is certain). Nothing when the candidate
// cannot be reached: an in-place updated input would be boxed, or the boxing planner
// cannot make a conversion (e.g. P(max)).
//
// `gradient_bucket_bytes` > 0 prices a variable's gradient as the member of a bucket of
// that many bytes it will be (gradient_bucketing_pass.h): its share, by bytes, of one
// collective moving the whole bucket, so the per-call latency is paid once per bucket and
// not once per gradient. 0 prices every boxing as a call of its own. `memo`, when given,
// answers the questions asked before.
struct InputBoxingPrice {
  double seconds = 0;
  int64_t conversions = 0;
  // The collective steps of the conversions (a bucket member counts its share of the
  // bucket's one call): what a per-call cost beyond the links multiplies
  // (CompileOptions::collective_call_seconds).
  double collective_calls = 0;
};
std::optional<InputBoxingPrice> PriceCandidateInputs(const LogicalGraph& graph, BoxingCache& cache,
                                                     const LogicalOp& op, const SbpCandidate& candidate,
                                                     const std::vector<BoxingOptions>& input_options,
                                                     int64_t gradient_bucket_bytes = 0,
                                                     InputPriceMemo* memo = nullptr);

// Per-device elements of a tensor under `sbp`, a partial one counted double: it will
// need a reduction, which the greedy choice cannot see yet.
double OutputWeight(const LogicalTensor& tensor, const NdSbp& sbp, const Placement& placement);

// One device's kernel seconds for `op` in `candidate` (sbp/compute_cost.h): a GEMM's
// 2 m n k FLOPs on the slices the candidate gives it, any other op's bytes read and
// written on those slices. A split divides the work, B and P do not (a partial sum is a
// whole-sized tensor on every device).
double CandidateComputeSeconds(const LogicalGraph& graph, const LogicalOp& op, const SbpCandidate& candidate,
                               const ComputeRates& rates);

}  // namespace oneflow

#endif  // COMPILER_PASSES_SBP_CANDIDATES_H_
