// Behavior of a boxing actor: one step of a compiler boxing (plan.boxings) on this
// device, through the communicator of the step's group for collectives.
#ifndef ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actors/behaviors/communicator_pool.h"
#include "actors/behaviors/plan_index.h"
#include "actors/compression_meter.h"
#include "actors/engine.h"
#include "actors/sparse_meter.h"

namespace oneflow::actors {

// Collectives wait at most `collective_timeout` for their peers; their errors start with
// "actor 'NAME' collective C sequence S iteration I", S counting the device's
// collectives in the plan's static order across iterations. A compressed step records
// each act's bytes and error in `meter` (none when null), under the act's iteration; a
// row-sparse step (sparse_boxing_behavior.h) its bytes in `sparse_meter`.
absl::StatusOr<ActFunction> BindBoxing(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout,
                                       CompressionMeter* meter = nullptr, SparseMeter* sparse_meter = nullptr);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_
