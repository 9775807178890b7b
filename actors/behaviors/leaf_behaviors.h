// Behaviors of the actors at the edges of a plan: data sources (synthetic data or token
// files, by logical index), variables (initialized once from the logical-index RNG, then
// persistent), and the loss sink.
#ifndef ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_
#define ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_

#include <functional>

#include "absl/status/statusor.h"
#include "actors/behaviors/plan_index.h"
#include "actors/engine.h"

namespace oneflow::actors {

absl::StatusOr<ActFunction> BindDataSource(const PlanIndex& index, const ActorBinding& binding);

absl::StatusOr<ActFunction> BindVariable(const PlanIndex& index, const ActorBinding& binding);

// Calls `on_loss(iteration, loss)` after reading the loss of each iteration.
absl::StatusOr<ActFunction> BindLossSink(const ActorBinding& binding,
                                         std::function<void(int64_t, float)> on_loss);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_
