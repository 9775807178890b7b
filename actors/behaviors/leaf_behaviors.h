// Behaviors of the actors at the edges of a plan: data sources (synthetic data or token
// files, by logical index), variables (initialized once from the logical-index RNG, then
// persistent), and the loss sink. They make and read their values in host memory and
// cross to the device's registers through the backend's copies (kernels/device_backend.h),
// as checkpoints do, so they run on any device kind.
#ifndef ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_
#define ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "kernels/device_backend.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

// Each act fills the micro-batch's outputs in host buffers (kept from act to act) and
// copies them into the registers with `backend`'s CopyFromHost. `backend` outlives the
// act function.
absl::StatusOr<ActFunction> BindDataSource(const PlanIndex& index, const ActorBinding& binding,
                                           const DeviceBackend& backend);

// What a variable does besides initializing itself and persisting: restoring its slice
// from a checkpoint and handing it to one (actors/checkpoint/, wired by the runtime).
// `slice` is the variable's register memory on the device (the checkpoint reader and
// writer cross to it with the backend's copies themselves).
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

// The initializer fills the slice in host memory, copied to the register with `backend`'s
// CopyFromHost (once, at the first act). `backend` outlives the act function.
absl::StatusOr<ActFunction> BindVariable(const PlanIndex& index, const ActorBinding& binding,
                                         const DeviceBackend& backend, VariableCheckpointing checkpointing = {});

// Calls `on_loss(iteration, loss)` after reading the loss of each iteration from the
// register with `backend`'s CopyToHost. `backend` outlives the act function.
absl::StatusOr<ActFunction> BindLossSink(const ActorBinding& binding, const DeviceBackend& backend,
                                         std::function<void(int64_t, float)> on_loss);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_LEAF_BEHAVIORS_H_
