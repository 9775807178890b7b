// Behavior of a boxing actor: one step of a compiler boxing (plan.boxings) on this
// device, through the communicator of the step's group for collectives.
#ifndef ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "actors/behaviors/communicator_pool.h"
#include "actors/compression_meter.h"
#include "actors/engine.h"
#include "actors/sparse_meter.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

// What a step with error feedback (proto::Compression.error_feedback) does with its
// residual besides using it: restoring it from a checkpoint and handing it to one
// (actors/checkpoint/, wired by the runtime). `key` names the step on this device
// (ResidualKey); the residual is host memory, owned by the step.
struct ResidualCheckpointing {
  // When set, called once at binding: fills the residual from the checkpoint resumed
  // from, or leaves the zeros (returning false) when it holds none of this key and size.
  std::function<bool(const std::string& key, absl::Span<float> residual)> restore;
  // When set, called once at binding; what it returns (when set) is called at the first
  // act of every iteration k, before the step runs, with the residual after k iterations
  // and must be done with it when it returns (the act then changes it).
  // `device_index`: the step's device in the plan.
  std::function<std::function<absl::Status(int64_t iteration, const float* residual)>(
      int device_index, const std::string& key, int64_t elements)>
      save;
};

// "boxing of 'w_grad' step 0 (all_reduce on hierarchy axis 0 of cpu{0:0-1,1:0-1}[2, 2]) on
// device 1:0": a reduction's residual on one device, the same in every run of the same
// layout and different on any other, so a checkpoint's residuals are restored only where
// they fit.
std::string ResidualKey(const std::string& tensor, int64_t step, absl::string_view kind, int64_t hierarchy_axis,
                        const std::string& placement, const DeviceId& device);

// Collectives wait at most `collective_timeout` for their peers; their errors start with
// "actor 'NAME' collective C sequence S iteration I", S counting the device's
// collectives in the plan's static order across iterations. A compressed step records
// each act's bytes and error in `meter` (none when null), under the act's iteration; a
// row-sparse step (sparse_boxing_behavior.h) its bytes in `sparse_meter`.
absl::StatusOr<ActFunction> BindBoxing(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout,
                                       CompressionMeter* meter = nullptr, SparseMeter* sparse_meter = nullptr,
                                       const ResidualCheckpointing& residuals = {});

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_
