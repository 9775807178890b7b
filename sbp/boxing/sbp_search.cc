#include "sbp/boxing/sbp_search.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "sbp/boxing/axis_step.h"

namespace oneflow {
namespace boxing {
namespace {

void AddUnique(std::vector<Sbp>* sbps, const Sbp& sbp) {
  if (std::find(sbps->begin(), sbps->end(), sbp) == sbps->end()) sbps->push_back(sbp);
}

std::vector<Sbp> AxisCandidates(const Shape& logical, const std::vector<NdSbp>& anchors,
                                bool full) {
  std::vector<Sbp> sbps = {Sbp::Broadcast(), Sbp::Partial()};
  // A P(max)/P(min) anchor (reduce_max's output) is a state of its own; axis_step.h
  // never makes one, so the search only reduces it.
  for (const NdSbp& anchor : anchors) {
    for (const Sbp& sbp : anchor.sbps()) {
      if (sbp.is_partial()) AddUnique(&sbps, sbp);
    }
  }
  if (full) {
    for (int64_t axis = 0; axis < logical.rank(); ++axis) sbps.push_back(Sbp::Split(axis));
    return sbps;
  }
  std::vector<int64_t> split_axes;
  for (const NdSbp& anchor : anchors) {
    for (const Sbp& sbp : anchor.sbps()) {
      if (sbp.is_split()) split_axes.push_back(sbp.axis());
    }
  }
  if (logical.rank() > 0) {
    const auto longest = std::max_element(logical.dims().begin(), logical.dims().end());
    split_axes.push_back(longest - logical.dims().begin());
  }
  std::sort(split_axes.begin(), split_axes.end());
  for (int64_t axis : split_axes) AddUnique(&sbps, Sbp::Split(axis));
  return sbps;
}

}  // namespace

PathCost PathCost::Plus(const BoxingStep& step) const {
  const bool reduces =
      step.kind == BoxingKind::kAllReduce || step.kind == BoxingKind::kReduceScatter;
  return PathCost{seconds + step.seconds, bytes + step.bytes_per_device, steps + 1,
                  reductions + (reduces ? 1 : 0)};
}

PathCost PathCost::Plus(const PathCost& other) const {
  return PathCost{seconds + other.seconds, bytes + other.bytes, steps + other.steps,
                  reductions + other.reductions};
}

bool CheaperThan(const PathCost& a, const PathCost& b) {
  const double tolerance = 1e-9 * std::max(a.seconds, b.seconds);
  if (std::abs(a.seconds - b.seconds) > tolerance) return a.seconds < b.seconds;
  if (a.bytes != b.bytes) return a.bytes < b.bytes;
  if (a.steps != b.steps) return a.steps < b.steps;
  return a.reductions < b.reductions;
}

absl::StatusOr<StateSpace> MakeStateSpace(const Shape& logical, int64_t hierarchy_rank,
                                          const std::vector<NdSbp>& anchors) {
  double full_states = std::pow(static_cast<double>(logical.rank() + 2), hierarchy_rank);
  std::vector<Sbp> candidates =
      AxisCandidates(logical, anchors, /*full=*/full_states <= kMaxFullSearchStates);
  const double states = std::pow(static_cast<double>(candidates.size()), hierarchy_rank);
  if (states > kMaxSearchStates) {
    return absl::UnimplementedError(absl::StrCat(
        "boxing search over a ", hierarchy_rank, "-axis hierarchy would visit ", states,
        " N-D SBPs (limit ", kMaxSearchStates, "); flatten some axes of the placement hierarchy"));
  }
  StateSpace space;
  space.per_axis.assign(hierarchy_rank, candidates);
  // Odometer over the per-axis candidates, last axis fastest.
  std::vector<size_t> digit(hierarchy_rank, 0);
  while (true) {
    std::vector<Sbp> sbps;
    for (int64_t axis = 0; axis < hierarchy_rank; ++axis) {
      sbps.push_back(space.per_axis[axis][digit[axis]]);
    }
    space.states.push_back(NdSbp(std::move(sbps)));
    int64_t axis = hierarchy_rank - 1;
    for (; axis >= 0; --axis) {
      if (++digit[axis] < space.per_axis[axis].size()) break;
      digit[axis] = 0;
    }
    if (axis < 0) break;
  }
  return space;
}

SbpSearch::SbpSearch(const BoxingContext& context, const Placement& placement, StateSpace space,
                     const NdSbp& anchor, Direction direction)
    : space_(std::move(space)), direction_(direction) {
  const int64_t rank = static_cast<int64_t>(space_.per_axis.size());
  stride_.assign(rank, 1);
  for (int64_t axis = rank - 2; axis >= 0; --axis) {
    stride_[axis] = stride_[axis + 1] * static_cast<int64_t>(space_.per_axis[axis + 1].size());
  }
  Run(context, placement, IndexOf(anchor));
}

int64_t SbpSearch::IndexOf(const NdSbp& state) const {
  if (state.size() != static_cast<int64_t>(space_.per_axis.size())) return -1;
  int64_t index = 0;
  for (int64_t axis = 0; axis < state.size(); ++axis) {
    const std::vector<Sbp>& candidates = space_.per_axis[axis];
    const auto it = std::find(candidates.begin(), candidates.end(), state.at(axis));
    if (it == candidates.end()) return -1;
    index += (it - candidates.begin()) * stride_[axis];
  }
  return index;
}

void SbpSearch::Run(const BoxingContext& context, const Placement& placement, int64_t anchor) {
  const int64_t count = static_cast<int64_t>(space_.states.size());
  costs_.assign(count, PathCost{});
  link_.assign(count, -1);
  link_step_.assign(count, std::nullopt);
  std::vector<bool> reached(count, false);
  std::vector<bool> settled(count, false);
  reached[anchor] = true;
  // Dijkstra with a linear scan: the spaces are small and the scan keeps ties in
  // enumeration order, which makes plans deterministic.
  while (true) {
    int64_t current = -1;
    for (int64_t i = 0; i < count; ++i) {
      if (reached[i] && !settled[i] && (current < 0 || CheaperThan(costs_[i], costs_[current]))) {
        current = i;
      }
    }
    if (current < 0) return;
    settled[current] = true;
    const NdSbp& state = space_.states[current];
    for (int64_t axis = 0; axis < state.size(); ++axis) {
      const std::vector<Sbp>& candidates = space_.per_axis[axis];
      const int64_t position = (current / stride_[axis]) % static_cast<int64_t>(candidates.size());
      for (int64_t other_position = 0; other_position < static_cast<int64_t>(candidates.size());
           ++other_position) {
        if (other_position == position) continue;
        const Sbp& other = candidates[other_position];
        const int64_t neighbour = current + (other_position - position) * stride_[axis];
        if (settled[neighbour]) continue;
        const NdSbp& neighbour_state = space_.states[neighbour];
        // Forward: current -> neighbour. Backward: neighbour -> current.
        const std::optional<BoxingStep> step =
            direction_ == Direction::kFromAnchor
                ? MakeAxisStep(context, placement, state, axis, other)
                : MakeAxisStep(context, placement, neighbour_state, axis, state.at(axis));
        if (!step.has_value()) continue;
        PathCost candidate = costs_[current].Plus(*step);
        // A gradient reduction that rides in a bucket (dense, or auto-compressed) makes its bucket's
        // calls, not its own: the path adds it without that latency
        // (BoxingStep::bucket_shared_latency_seconds). The bucketing pass takes a step
        // only when every step before it in the chain was a reduction, which a forward
        // search knows (its path so far); a backward one does not, and charges it all.
        // Without this a chain ending in an unbucketed all-gather (reduce-scatter, then a
        // gather per tensor) looked as cheap as one bucketed all-reduce
        // (docs/benchmarks.md, "auto on gpt_dp3tp2, separated").
        if (direction_ == Direction::kFromAnchor && costs_[current].reductions == costs_[current].steps) {
          candidate.seconds -= step->bucket_shared_latency_seconds;
        }
        if (!reached[neighbour] || CheaperThan(candidate, costs_[neighbour])) {
          reached[neighbour] = true;
          costs_[neighbour] = candidate;
          link_[neighbour] = current;
          link_step_[neighbour] = step;
        }
      }
    }
  }
}

std::vector<BoxingStep> SbpSearch::Path(int64_t index) const {
  std::vector<BoxingStep> steps;
  for (int64_t at = index; link_[at] >= 0; at = link_[at]) steps.push_back(*link_step_[at]);
  // Following links walks towards the anchor: backwards in time for kFromAnchor.
  if (direction_ == Direction::kFromAnchor) std::reverse(steps.begin(), steps.end());
  return steps;
}

}  // namespace boxing
}  // namespace oneflow
