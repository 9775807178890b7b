// How many acts a layout's devices run: the actors of a compiled probe plan mapped back to
// the profile's units, so the cost model can price the runtime's fixed cost per act
// (PriceOptions::act_seconds), which dominates small models.
//
// An actor belongs to the unit of the logical op it runs: a forward op's own name, a
// backward op's "FORWARD_grad/..." prefix, a boxing's producer op. Variables and optimizer
// updates run once per iteration; everything else once per micro-batch. Actors of no
// unit's op (data source, sink, the loss's seed) go to the unit whose op fed or read them,
// else to the prologue.
#ifndef COMPILER_AUTO_PARALLEL_ACT_COUNT_H_
#define COMPILER_AUTO_PARALLEL_ACT_COUNT_H_

#include "absl/status/status.h"
#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

// Sets every unit's acts_per_micro_batch and acts_per_iteration from the actors of the
// first device of `probe_plan` (the profile's probe job compiled: every device of it runs
// every unit), and profile->acts_counted. INVALID_ARGUMENT when the plan has no device or
// its first device has no actor.
absl::Status CountActs(const proto::Plan& probe_plan, ModelProfile* profile);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_ACT_COUNT_H_
