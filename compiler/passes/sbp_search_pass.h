#ifndef COMPILER_PASSES_SBP_SEARCH_PASS_H_
#define COMPILER_PASSES_SBP_SEARCH_PASS_H_

#include "compiler/pass.h"

namespace oneflow {

// Searches the per-op SBP signatures from the greedy choice (sbp_choice_pass.h) when
// CompileOptions::search_sbp is set; otherwise changes nothing.
//
// Why: the greedy choice decides each op in topological order by what its inputs cost,
// blind to what its outputs will cost its readers. An op that takes a free slice of a
// replicated input keeps its output split, and the next op must then gather it again.
//
// The objective is the sum over the graph's ops of the modelled seconds of boxing each
// op's inputs into its signature (the greedy choice's prices: BoxingCache over the
// cluster's links, compression as boxing insertion will plan it) and of one device's
// kernel seconds in that signature (CandidateComputeSeconds: split work divides, B and P
// do not), each counted as many times as the op acts in an iteration (with micro-batches:
// once per micro-batch in the micro-batch loop, once for ops of per-iteration values,
// per_iteration.h), and of each collective call of those boxings at
// CompileOptions::collective_call_seconds (the host's cost of a call beyond its links,
// when the compile knows one). Overlap is not modelled: a boxing's seconds count whole. Variables
// and inputs keep their SBPs (hints or defaults); hints on op outputs stay constraints;
// the gradient accumulators keep the greedy layout (sbp_search_pass.cc says why).
//
// The moves, over the ops in topological order, until a round changes nothing (at most
// kMaxSbpSearchRounds): each other candidate of an op, with each reader of its outputs
// either kept or switched to its cheapest candidate that reads the new layout without
// boxing; a move is taken when the seconds of the op, its readers and their readers drop.
// Every accepted move lowers the objective, so the search ends; it is deterministic (same
// graph, same moves). The record (LogicalGraph::sbp_search) keeps the objective before
// and after and the ops moved.
//
// Identical blocks (identical_blocks.h; CompileOptions::search_identical_blocks_once) are
// searched once: only the middle block of each class of copies tries moves, ranked by
// what they save around it, and the first that also lowers the seconds once applied to
// the corresponding op of every copy (each copy's readers adapted as they stand) is taken
// for all. The copies' ops try no moves of their own. The global check keeps "every
// accepted move lowers the objective"; on the examples' gpt and llama the objective
// reached is the one of searching every op (bench/auto_parallel:sbp_search_bench), in a
// fraction of the time.
class SbpSearchPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "sbp_search"; }
  VerifierChecks Checks() const override { return VerifierChecks{.sbps = true}; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kBoxingCache}; }
  StateParts Writes() const override { return {StatePart::kGraph, StatePart::kBoxingCache}; }
};

inline constexpr int kMaxSbpSearchRounds = 8;
// How many levels of readers a move adapts (its readers, theirs, ...). Three levels were
// measured (session 52) on the examples' gpt and llama at 4-8 devices: the objective
// within 0.6% of one level's, now above, now below, and the gpt's predicted step at
// 2 nodes x 2 devices 13.3 ms against 12.8 ms, so one level.
inline constexpr int kAdaptDepth = 1;

}  // namespace oneflow

#endif  // COMPILER_PASSES_SBP_SEARCH_PASS_H_
