#include "compiler/passes/sbp_search_pass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/cluster_compute_rates.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "compiler/passes/identical_blocks.h"
#include "compiler/passes/per_iteration.h"
#include "compiler/passes/sbp_candidates.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

constexpr double kUnreachable = std::numeric_limits<double>::infinity();

// The search's view of the graph: each op's candidates and which it holds, and the ops
// reading each op's outputs. Changes go to the graph itself (op and tensor SBPs), so the
// shared pricing (PriceCandidateInputs) reads the layouts as they stand.
class SbpSearch {
 public:
  explicit SbpSearch(Compilation* compilation)
      : compilation_(*compilation),
        graph_(compilation->graph),
        cache_(*compilation->boxing_cache),
        rates_(ClusterComputeRates(compilation->options.cluster)),
        bucket_bytes_(BucketBytesLimit(compilation->options.bucket_mb)),
        call_seconds_(compilation->options.collective_call_seconds) {}

  absl::Status Init() {
    ops_.resize(graph_.ops.size());
    std::vector<bool> derived;
    const std::vector<bool> per_iteration = PerIterationTensors(compilation_, &derived);
    const double micro_batches = static_cast<double>(std::max<int64_t>(1, compilation_.job.micro_batches()));
    for (size_t o = 0; o < graph_.ops.size(); ++o) {
      const LogicalOp& op = graph_.ops[o];
      OpState& state = ops_[o];
      // An op of the micro-batch loop acts once per micro-batch: its boxings and its
      // kernel count that many times in an iteration, an op of per-iteration values once.
      state.acts = OpPerIteration(op, per_iteration) ? 1.0 : micro_batches;
      // The accumulator keeps the greedy layout (a gradient summed where it is made, as
      // partial sums, and reduced once per iteration, bucketed and overlapped with
      // backward: gradient_bucketing_pass.h). Moved to a split, it reduce-scatters each
      // micro-batch's gradient call by call to save the sum's bytes; priced per op, the
      // objective saw the bytes and neither the bucket's overlap nor each call's cost on
      // the host: on the bench's gpt (4 blocks, hidden 256) with 2 micro-batches, 8
      // devices in one process on 2 cores, such plans ran 162 -> 195 ms a step
      // (dp = 8), 4 devices 131 -> 149 ms (dp = 4); session 58.
      state.frozen = op.type == "accumulate";
      OF_ASSIGN_OR_RETURN(OpSbpCandidates candidates, SbpCandidatesOf(graph_, op));
      state.candidates = std::move(candidates.candidates);
      for (int64_t t : op.inputs) {
        state.input_options.push_back(BoxingOptionsOf(compilation_, t, /*into_loss_sink=*/false));
      }
      state.chosen = -1;
      for (size_t c = 0; c < state.candidates.size(); ++c) {
        if (state.candidates[c].inputs == op.input_sbps && state.candidates[c].outputs == op.output_sbps) {
          state.chosen = static_cast<int64_t>(c);
          break;
        }
      }
      if (state.chosen < 0) {
        return absl::InternalError(absl::StrCat("sbp_search: the greedy signature of op '", op.name,
                                                "' is not among its candidates"));
      }
      for (int64_t t : op.outputs) {
        for (int64_t reader : graph_.tensors[t].consumers) state.readers.push_back(reader);
      }
      std::sort(state.readers.begin(), state.readers.end());
      state.readers.erase(std::unique(state.readers.begin(), state.readers.end()), state.readers.end());
    }
    return absl::OkStatus();
  }

  // Searches each class of identical blocks through one of its blocks (the middle one,
  // whose neighbours are blocks of the class too where the class is a run of layers): its
  // ops' moves are applied to the corresponding op of every block of the class. A block
  // whose ops' candidates differ from that block's stays searched on its own. Sets the
  // record's counts.
  void ComposeIdenticalBlocks(LogicalGraph::SbpSearchRecord* record) {
    copies_.assign(ops_.size(), {});
    follows_.assign(ops_.size(), false);
    for (const std::vector<std::vector<int64_t>>& blocks : FindIdenticalBlocks(graph_).classes) {
      const std::vector<int64_t>& searched = blocks[blocks.size() / 2];
      int64_t composed = 0;
      for (const std::vector<int64_t>& block : blocks) {
        if (&block == &searched || !SameCandidates(searched, block)) continue;
        for (size_t i = 0; i < block.size(); ++i) {
          copies_[searched[i]].push_back(block[i]);
          follows_[block[i]] = true;
        }
        ++composed;
      }
      if (composed == 0) continue;
      record->composed_blocks += composed;
      ++record->block_classes;
    }
  }

  double Objective() const {
    double total = 0;
    for (size_t o = 0; o < ops_.size(); ++o) total += Cost(static_cast<int64_t>(o));
    return total;
  }

  // One round over the ops in order; the ops moved.
  int64_t Round() {
    int64_t moved = 0;
    for (size_t o = 0; o < ops_.size(); ++o) {
      if (!follows_.empty() && follows_[o]) continue;
      if (TryMove(static_cast<int64_t>(o))) ++moved;
    }
    return moved;
  }

 private:
  struct OpState {
    std::vector<SbpCandidate> candidates;
    std::vector<BoxingOptions> input_options;
    int64_t chosen = -1;
    double acts = 1;      // Times the op acts in an iteration (Init).
    bool frozen = false;  // Never moved (Init: the accumulators).
    std::vector<int64_t> readers;  // Ops reading an output, each once, in op order.
  };

  // Op `o`'s seconds in an iteration in the candidate it holds, its inputs laid out as
  // they are now.
  double Cost(int64_t o) const {
    const OpState& state = ops_[o];
    const LogicalOp& op = graph_.ops[o];
    const SbpCandidate& candidate = state.candidates[state.chosen];
    const std::optional<InputBoxingPrice> price =
        PriceCandidateInputs(graph_, cache_, op, candidate, state.input_options, bucket_bytes_, &memo_);
    if (!price) return kUnreachable;
    return state.acts * (price->seconds + price->collective_calls * call_seconds_ +
                         CandidateComputeSeconds(graph_, op, candidate, rates_));
  }

  void Hold(int64_t o, int64_t c) {
    OpState& state = ops_[o];
    LogicalOp& op = graph_.ops[o];
    state.chosen = c;
    op.input_sbps = state.candidates[c].inputs;
    op.output_sbps = state.candidates[c].outputs;
    for (size_t k = 0; k < op.outputs.size(); ++k) graph_.tensors[op.outputs[k]].sbp = op.output_sbps[k];
  }

  // True when candidate `c` of reader `p` reads every output of op `o` as `o` lays it out now.
  bool ReadsWithoutBoxing(int64_t p, int64_t c, int64_t o) const {
    const LogicalOp& reader = graph_.ops[p];
    const Shape& hierarchy = graph_.placements[reader.placement].hierarchy();
    for (size_t k = 0; k < reader.inputs.size(); ++k) {
      const LogicalTensor& in = graph_.tensors[reader.inputs[k]];
      if (in.kind != LogicalTensor::Kind::kOpOutput || in.producer != o) continue;
      if (in.placement != reader.placement || !SameLayout(in.sbp, ops_[p].candidates[c].inputs[k], hierarchy)) {
        return false;
      }
    }
    return true;
  }

  // The seconds of `p` and of the ops reading it, as they stand.
  double CostWithReaders(int64_t p) const {
    double total = Cost(p);
    for (int64_t q : ops_[p].readers) total += Cost(q);
    return total;
  }

  // The ops whose cost can differ after the ops of `changed` took other candidates: each
  // of them and the ops reading it, each once, in op order.
  std::vector<int64_t> Region(const std::vector<std::pair<int64_t, int64_t>>& changed) const {
    std::vector<int64_t> region;
    for (const auto& [x, previous] : changed) {
      region.push_back(x);
      for (int64_t reader : ops_[x].readers) region.push_back(reader);
    }
    std::sort(region.begin(), region.end());
    region.erase(std::unique(region.begin(), region.end()), region.end());
    return region;
  }

  double RegionCost(const std::vector<int64_t>& region) const {
    double total = 0;
    for (int64_t x : region) total += Cost(x);
    return total;
  }

  // After op `o` changed its outputs' layouts: each reader of `o`, in op order, to its
  // cheapest candidate that reads them as they are without boxing (its own readers'
  // seconds counted), when cheaper than what it holds; a reader that changed has its own
  // readers adapted in turn, `depth` levels in all. Appends each change (op, the
  // candidate it held) to `changed`.
  void AdaptReaders(int64_t o, int depth, std::vector<std::pair<int64_t, int64_t>>* changed) {
    for (int64_t p : ops_[o].readers) {
      if (ops_[p].frozen) continue;
      const int64_t held = ops_[p].chosen;
      double best = CostWithReaders(p);
      int64_t pick = held;
      for (size_t pc = 0; pc < ops_[p].candidates.size(); ++pc) {
        if (static_cast<int64_t>(pc) == held || !ReadsWithoutBoxing(p, static_cast<int64_t>(pc), o)) continue;
        Hold(p, static_cast<int64_t>(pc));
        const double seconds = CostWithReaders(p);
        if (seconds < best) {
          best = seconds;
          pick = static_cast<int64_t>(pc);
        }
      }
      Hold(p, pick);
      if (pick == held) continue;
      changed->push_back({p, held});
      if (depth > 1) AdaptReaders(p, depth - 1, changed);
    }
  }

  // Op `o` to candidate `c`, its readers adapted or not; the changes made.
  std::vector<std::pair<int64_t, int64_t>> Apply(int64_t o, int64_t c, bool adapt) {
    std::vector<std::pair<int64_t, int64_t>> changed = {{o, ops_[o].chosen}};
    Hold(o, c);
    if (adapt) AdaptReaders(o, kAdaptDepth, &changed);
    return changed;
  }

  void Revert(const std::vector<std::pair<int64_t, int64_t>>& changed) {
    for (auto it = changed.rbegin(); it != changed.rend(); ++it) Hold(it->first, it->second);
  }

  // True when op i of `block` has the candidates of op i of `searched`, for every i.
  bool SameCandidates(const std::vector<int64_t>& searched, const std::vector<int64_t>& block) const {
    for (size_t i = 0; i < searched.size(); ++i) {
      const std::vector<SbpCandidate>& a = ops_[searched[i]].candidates;
      const std::vector<SbpCandidate>& b = ops_[block[i]].candidates;
      if (a.size() != b.size()) return false;
      for (size_t c = 0; c < a.size(); ++c) {
        if (a[c].inputs != b[c].inputs || a[c].outputs != b[c].outputs) return false;
      }
    }
    return true;
  }

  // Op `o` to candidate `c` and, when it is a searched block's op, each corresponding op
  // of its class to `c` too, readers adapted or not; the changes made, in order.
  std::vector<std::pair<int64_t, int64_t>> ApplyEverywhere(int64_t o, int64_t c, bool adapt) {
    std::vector<std::pair<int64_t, int64_t>> changed = Apply(o, c, adapt);
    if (copies_.empty()) return changed;
    for (int64_t copy : copies_[o]) {
      if (ops_[copy].frozen) continue;
      const std::vector<std::pair<int64_t, int64_t>> more = Apply(copy, c, adapt);
      changed.insert(changed.end(), more.begin(), more.end());
    }
    return changed;
  }

  // Tries every other candidate of `o`, its readers kept and adapted; takes the move that
  // lowers the seconds of the ops it touches most, if any does. For a searched block's
  // op the moves are ranked by what they save in that block and its readers, and the
  // first of them that also lowers the seconds once applied to every block of the class
  // is taken. True when one was taken.
  bool TryMove(int64_t o) {
    if (ops_[o].frozen) return false;
    const int64_t original = ops_[o].chosen;
    struct Move {
      double delta;
      int64_t candidate;
      bool adapt;
    };
    // The moves that save, in the order tried; the best is the first whose saving beats
    // every earlier one's by more than the tolerance.
    std::vector<Move> saving;
    double best_delta = 0;
    int64_t best = -1;
    for (size_t c = 0; c < ops_[o].candidates.size(); ++c) {
      if (static_cast<int64_t>(c) == original) continue;
      for (bool adapt : {false, true}) {
        const std::vector<std::pair<int64_t, int64_t>> changed = Apply(o, static_cast<int64_t>(c), adapt);
        const std::vector<int64_t> region = Region(changed);
        const double after = RegionCost(region);
        Revert(changed);
        const double before = RegionCost(region);
        const double delta = after - before;
        if (delta >= -Tolerance(before)) continue;
        if (delta < best_delta - Tolerance(before)) {
          best_delta = delta;
          best = static_cast<int64_t>(saving.size());
        }
        saving.push_back({delta, static_cast<int64_t>(c), adapt});
      }
    }
    if (best < 0) return false;
    if (copies_.empty() || copies_[o].empty()) {
      Apply(o, saving[best].candidate, saving[best].adapt);  // The same changes again.
      return true;
    }
    // The best first, then the others by saving (equal savings in the order tried).
    std::vector<Move> order = {saving[best]};
    for (size_t i = 0; i < saving.size(); ++i) {
      if (static_cast<int64_t>(i) != best) order.push_back(saving[i]);
    }
    std::stable_sort(order.begin() + 1, order.end(), [](const Move& a, const Move& b) { return a.delta < b.delta; });
    for (const Move& move : order) {
      const std::vector<std::pair<int64_t, int64_t>> changed = ApplyEverywhere(o, move.candidate, move.adapt);
      const std::vector<int64_t> region = Region(changed);
      const double after = RegionCost(region);
      Revert(changed);
      const double before = RegionCost(region);
      if (after - before < -Tolerance(before)) {
        ApplyEverywhere(o, move.candidate, move.adapt);  // The same changes again.
        return true;
      }
    }
    return false;
  }

  // Float noise in a region's sum is far below this; a real saving is far above.
  static double Tolerance(double seconds) { return std::max(1e-12, 1e-9 * std::abs(seconds)); }

  const Compilation& compilation_;
  LogicalGraph& graph_;
  BoxingCache& cache_;
  ComputeRates rates_;
  int64_t bucket_bytes_;
  double call_seconds_;  // CompileOptions::collective_call_seconds, per collective call
  mutable InputPriceMemo memo_;
  std::vector<OpState> ops_;
  // For a searched block's op, the corresponding ops of the other blocks of its class;
  // true for those ops (ComposeIdenticalBlocks). Empty when blocks are not composed.
  std::vector<std::vector<int64_t>> copies_;
  std::vector<bool> follows_;
};

}  // namespace

absl::StatusOr<bool> SbpSearchPass::Run(Compilation* compilation) {
  LogicalGraph::SbpSearchRecord& record = compilation->graph.sbp_search;
  record = LogicalGraph::SbpSearchRecord();
  if (!compilation->options.search_sbp) return false;
  SbpSearch search(compilation);
  OF_RETURN_IF_ERROR(search.Init());
  if (compilation->options.search_identical_blocks_once) search.ComposeIdenticalBlocks(&record);
  std::vector<std::vector<NdSbp>> greedy_outputs;
  for (const LogicalOp& op : compilation->graph.ops) greedy_outputs.push_back(op.output_sbps);
  std::vector<std::vector<NdSbp>> greedy_inputs;
  for (const LogicalOp& op : compilation->graph.ops) greedy_inputs.push_back(op.input_sbps);
  record.ran = true;
  record.greedy_seconds = search.Objective();
  while (record.rounds < kMaxSbpSearchRounds) {
    ++record.rounds;
    if (search.Round() == 0) break;
  }
  record.searched_seconds = search.Objective();
  for (size_t o = 0; o < compilation->graph.ops.size(); ++o) {
    const LogicalOp& op = compilation->graph.ops[o];
    if (op.input_sbps != greedy_inputs[o] || op.output_sbps != greedy_outputs[o]) ++record.moved_ops;
  }
  return record.moved_ops > 0;
}

}  // namespace oneflow
