// The critical path of one iteration, from recorded acts: the chain of acts that made the
// iteration end when it did. `oneflow profile` prints its top contributors
// (docs/profile.md).
//
// The walk goes backward from the act that ends the iteration (the latest end of any act
// of it). At each act it asks what the act waited for: of everything that had to finish
// before the act could start, the one that finished last. The candidates are the engine's
// rules (actors/engine.h, docs/runtime.md "The engine"):
//   - register: the producers of the registers it reads, of the same iteration;
//   - control: its control predecessors;
//   - slot: the consumers of a register it writes, `count` acts back, which had to give
//     a slot back (how a variable waits for the previous iteration's update);
//   - thread: the previous act on its thread (a thread runs one act at a time);
// and for an act of a collective or transfer, the rendezvous: the call cannot finish
// before the group's last member arrived, so when another device's act of the same call
// started later, the path goes on from that act (its on-path time starts there).
//
// Each step of the path is an act's time on the path plus the wait before it (from the
// end of what it waited for to its start: the engine's own time between acts, and any
// constraint the walk does not model). The walk stops at the end of the previous
// iteration, clipping the act that spans it, so the steps' times and waits add up to the
// iteration's wall time (end of iteration i - end of iteration i - 1) exactly.
#ifndef ACTORS_CRITICAL_PATH_H_
#define ACTORS_CRITICAL_PATH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// Why the path went from one act to the act before it.
enum class PathEdge {
  kStart,       // the first step: nothing before it inside the iteration's span
  kRegister,    // it read a register this act wrote
  kControl,     // a control edge
  kSlot,        // it waited for this act to give a register slot back
  kThread,      // this act occupied its thread
};

const char* PathEdgeName(PathEdge edge);

struct PathStep {
  ActRecord act;
  // The part of the act on the path: [path_start_ns, path_end_ns). path_start_ns is later
  // than act.start_ns for a collective act that waited for a later member, and for the
  // first step when the act began before the iteration's span.
  int64_t path_start_ns = 0;
  int64_t path_end_ns = 0;
  // Before path_start_ns: the gap since the end of the previous step.
  int64_t wait_ns = 0;
  // How the path reached this step from the previous one.
  PathEdge edge = PathEdge::kStart;
  // For a collective act that waited for a later member: that member's device (its act
  // is where the walk went on); -1 otherwise.
  int rendezvous_device = -1;
};

struct CriticalPath {
  int64_t iteration = 0;
  // End of the previous iteration and of this one (StepProfile.iteration_end_ns).
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // In time order; Σ (path_end_ns - path_start_ns + wait_ns) = end_ns - start_ns.
  std::vector<PathStep> steps;
};

// The critical path of `iteration` (>= 1: the walk stops at the end of the one before).
// Errors: INVALID_ARGUMENT when the acts hold no act of it, or an act names an actor the
// plan does not have.
absl::StatusOr<CriticalPath> FindCriticalPath(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                              int64_t iteration);

}  // namespace oneflow::actors

#endif  // ACTORS_CRITICAL_PATH_H_
