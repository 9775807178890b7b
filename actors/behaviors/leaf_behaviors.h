// Behaviors of the actors at the edges of a plan: data sources (synthetic data or token
// files, by logical index), variables (initialized once from the logical-index RNG, then
// persistent), and the loss sink.
#ifndef ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_
#define ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

absl::StatusOr<ActFunction> BindDataSource(const PlanIndex& index, const ActorBinding& binding);

// What a variable does besides initializing itself and persisting: restoring its slice
// from a checkpoint and handing it to one (actors/checkpoint/, wired by the runtime).
struct VariableCheckpointing {
  // The iteration of its first act (the run's first iteration): it initializes then.
  int64_t first_iteration = 0;
  // When set, fills the slice (dense row-major) at the first act instead of the
  // initializer.
  std::function<absl::Status(void* slice)> restore;
  // When set, called at every act with the slice. At the act of iteration k the update of
  // iteration k - 1 has written it and the update of k has not started (the update
  // consumes the variable's register of iteration k): it holds the state after k
  // iterations.
  std::function<absl::Status(int64_t iteration, const void* slice)> snapshot;
};

absl::StatusOr<ActFunction> BindVariable(const PlanIndex& index, const ActorBinding& binding,
                                         VariableCheckpointing checkpointing = {});

// Calls `on_loss(iteration, loss)` after reading the loss of each iteration.
absl::StatusOr<ActFunction> BindLossSink(const ActorBinding& binding,
                                         std::function<void(int64_t, float)> on_loss);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_
