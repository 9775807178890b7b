// The measured pipeline bubble of a run: how long each device's compute thread sat idle
// while the iteration went on, from recorded acts (EngineOptions.record_acts, or a trace
// read back with ReadChromeTrace). The model it is compared with is 1F1B's
// (S - 1) / (M + S - 1) (tools/cli/pipeline_stages.h); this is what actually happened.
//
//   OF_ASSIGN_OR_RETURN(std::vector<ActRecord> acts, ReadChromeTrace("t.json", plan));
//   OF_ASSIGN_OR_RETURN(MeasuredBubble bubble, MeasureBubble(plan, acts));
//   bubble.devices[0].idle_fraction  // 0.2: device 0 computed 80% of the window
#ifndef ACTORS_BUBBLE_H_
#define ACTORS_BUBBLE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

struct DeviceIdle {
  // Wall time of the window during which the device's compute thread was acting (the
  // union of its acts, whatever their iteration, clipped to the window), and the rest
  // as a fraction of the window.
  int64_t busy_ns = 0;
  double idle_fraction = 1;
};

struct MeasuredBubble {
  // The iterations measured: the trace's, less the first `warmup_iterations`.
  int64_t first_iteration = 0;
  int64_t last_iteration = 0;
  // The window: from the first act start to the last act end, over every thread of
  // every device, of the acts of the measured iterations.
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  // Per plan.devices index; a device with no act in the trace (another node's) has
  // busy_ns 0 and idle_fraction 1.
  std::vector<DeviceIdle> devices;
};

// An act's iteration: its act index over the acts per iteration of its actor
// (Job.micro_batches for a per-micro-batch actor, 1 for ActorDef.per_iteration).
//
// Errors: FAILED_PRECONDITION when no act belongs to a measured iteration ("the trace
// has acts of iterations 0..0 only; ..."), INVALID_ARGUMENT when an act names an actor
// or device the plan does not have.
absl::StatusOr<MeasuredBubble> MeasureBubble(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                             int64_t warmup_iterations = 1);

// The wall time inside [window_start_ns, window_end_ns) that `intervals` ([start, end)
// pairs, in any order, possibly overlapping) cover: their union clipped to the window.
// MeasureBubble's busy time, and `oneflow profile`'s per-thread busy time
// (actors/step_profile.h).
int64_t CoveredNs(std::vector<std::pair<int64_t, int64_t>> intervals, int64_t window_start_ns,
                  int64_t window_end_ns);

}  // namespace oneflow::actors

#endif  // ACTORS_BUBBLE_H_
