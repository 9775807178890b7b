// Behavior of a row-sparse boxing actor (proto::Sparsity on its step,
// compiler/sparse_boxing.h): each act reads the ids listing this device's rows from its
// "rows" register and runs the step's row-sparse collective (kernels/boxing/
// sparse_rows.h), which moves only those rows or falls back to the dense collective when
// that is cheaper, the same decision on every member.
#ifndef ACTORS_BEHAVIORS_SPARSE_BOXING_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_SPARSE_BOXING_BEHAVIOR_H_

#include <functional>

#include "absl/status/statusor.h"
#include "actors/behaviors/communicator_pool.h"
#include "actors/engine.h"
#include "actors/sparse_meter.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

// `options_for(act)` gives each act's collective options (timeout, description). Each
// act's bytes go to `meter` (none when null) under the act's iteration.
absl::StatusOr<ActFunction> BindSparseBoxing(const PlanIndex& index, const ActorBinding& binding,
                                             CommunicatorPool* communicators,
                                             std::function<CollectiveOptions(int64_t act)> options_for,
                                             SparseMeter* meter);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_SPARSE_BOXING_BEHAVIOR_H_
