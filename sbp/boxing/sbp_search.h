// The cheapest sequence of per-axis steps between two N-D SBPs on one placement.
//
// The states are N-D SBPs, the edges are the valid single-axis steps of axis_step.h,
// and an edge's cost is its modelled seconds, then its bytes, then one step, then
// whether it reduces (so among equally fast sequences the one moving fewer bytes, then
// the shorter one, then the one that does not sum zeros into partial values, wins: a
// re-layout such as [S(0), S(1)] -> [S(1), S(0)] should move data, not build n-fold
// larger partial buffers and reduce them, when both cost the same on the wire).
// Dijkstra over this graph finds, e.g., that [P, P] -> [B, B] on 2 nodes x 4 devices is
// cheapest as reduce-scatter inside nodes, all-reduce of the quarter across nodes,
// all-gather inside nodes, and that [S(0), S(1)] -> [S(1), S(0)] must pass through an
// intermediate because neither axis can change first.
//
// The state space is every combination of per-axis SBPs among {B, P, S(0..rank-1)}
// while that is at most kMaxFullSearchStates states (a rank-2 tensor on up to 6
// hierarchy axes, rank 4 on up to 4);
// beyond that each axis is restricted to B, P, the split axes the source and target
// use, and the longest tensor axis. Every state can reach every other (through all-B),
// so the search always finds a path. Ties are broken by enumeration order (axis 0
// first, candidates in the order B, P, S(0), S(1), ...), so plans are deterministic.
#ifndef SBP_BOXING_SBP_SEARCH_H_
#define SBP_BOXING_SBP_SEARCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing/context.h"
#include "sbp/boxing_plan.h"

namespace oneflow {
namespace boxing {

inline constexpr int64_t kMaxFullSearchStates = 4096;
// A restricted space larger than this is refused (UNIMPLEMENTED): hierarchies of 6+
// axes are not a use case today, and the search is quadratic in states.
inline constexpr int64_t kMaxSearchStates = 20000;

struct PathCost {
  double seconds = 0;
  int64_t bytes = 0;
  int64_t steps = 0;
  int64_t reductions = 0;  // kAllReduce and kReduceScatter steps.

  PathCost Plus(const BoxingStep& step) const;
  PathCost Plus(const PathCost& other) const;
};

// Lexicographic (seconds within a relative 1e-9, bytes, steps, reductions).
bool CheaperThan(const PathCost& a, const PathCost& b);

// The N-D SBPs the search may pass through on a hierarchy of `hierarchy_rank` axes,
// for a tensor of shape `logical`; `anchors` (source and target) decide the
// restricted space. Errors: UNIMPLEMENTED past kMaxSearchStates.
struct StateSpace {
  std::vector<std::vector<Sbp>> per_axis;  // Candidates of each hierarchy axis.
  std::vector<NdSbp> states;               // Their product, axis 0 outermost.
};
absl::StatusOr<StateSpace> MakeStateSpace(const Shape& logical, int64_t hierarchy_rank,
                                          const std::vector<NdSbp>& anchors);

// The best paths between one anchor state and every state of a space.
class SbpSearch {
 public:
  enum class Direction { kFromAnchor, kToAnchor };

  // Runs Dijkstra on `placement`: kFromAnchor finds anchor -> state for every state,
  // kToAnchor finds state -> anchor. `anchor` must be a state of `space`.
  SbpSearch(const BoxingContext& context, const Placement& placement, StateSpace space,
            const NdSbp& anchor, Direction direction);

  const std::vector<NdSbp>& states() const { return space_.states; }
  // The cost of the best path for state `index` (always reachable).
  const PathCost& cost(int64_t index) const { return costs_[index]; }
  // The steps of that path, in execution order.
  std::vector<BoxingStep> Path(int64_t index) const;
  // The index of `state`, or -1 when it is not in the space.
  int64_t IndexOf(const NdSbp& state) const;

 private:
  void Run(const BoxingContext& context, const Placement& placement, int64_t anchor);

  StateSpace space_;
  Direction direction_;
  // states[i]'s index is the sum over axes of (its candidate's position on the axis) x
  // stride[axis]: the odometer of MakeStateSpace, last axis fastest. Computed, not
  // hashed: the search asks for every neighbour of every state it settles.
  std::vector<int64_t> stride_;
  std::vector<PathCost> costs_;
  // The neighbour on the best path (towards the anchor) and the step between them.
  std::vector<int64_t> link_;
  std::vector<std::optional<BoxingStep>> link_step_;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_SBP_SEARCH_H_
