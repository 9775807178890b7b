// Behavior of a gradient bucket's actor (ActorDef.bucket_id, Plan.buckets;
// compiler/passes/gradient_bucketing_pass.h): each act packs the members' inputs into
// the bucket register, at the offsets of the members' views, zeroes the padding between
// them, and all-reduces the whole register in place (one dense f32 call) through the
// communicator of this device's group. The members' consumers then read their views.
#ifndef ACTORS_BEHAVIORS_BUCKET_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_BUCKET_BEHAVIOR_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actors/behaviors/communicator_pool.h"
#include "actors/engine.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

// As BindBoxing (boxing_behavior.h): the collective waits at most `collective_timeout`,
// and its errors start with "actor 'NAME' collective C sequence S iteration I".
absl::StatusOr<ActFunction> BindBucket(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_BUCKET_BEHAVIOR_H_
