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

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

// The forward op a compiled op comes from: "matmul_3_grad/matmul_9" -> "matmul_3" (a
// forward op's own name unchanged).
absl::string_view ForwardOpOf(absl::string_view op);

// A boxing actor whose steps move data between devices (a collective, a send/receive):
// its ranks meet, so on shared cores its act costs what PriceOptions::boxing_act_seconds
// says. False for other actors and for a boxing of local steps alone (identity, local
// slice, local partial, split to partial: ZeRO's slice of a gradient to its shard), whose
// act is one device's copy like a kernel's.
bool BoxingActMeetsPeers(const proto::Plan& plan, const proto::ActorDef& actor);

// Sets every unit's acts_per_micro_batch and acts_per_iteration from the actors of the
// first device of `probe_plan` (the profile's probe job compiled: every device of it runs
// every unit), and profile->acts_counted. INVALID_ARGUMENT when the plan has no device or
// its first device has no actor.
absl::Status CountActs(const proto::Plan& probe_plan, ModelProfile* profile);

// The probe layout of `layout`'s family: the smallest layout whose plan has the actors
// every unit has in `layout`'s plan: dp 2 when dp > 1 (with its ZeRO stage), tp 2 when
// tp > 1, 2 micro-batches when it has more than one (the gradient accumulators, and the
// per-iteration marks that tell the acts of a variable's copies from a micro-batch's), one
// stage, no recomputation. (The pipeline's sends and receives and recomputation's re-run
// acts are not a family: pp and recompute keep the family of the layout without them.)
proto::AutoParallelLayout ActFamilyProbe(const proto::AutoParallelLayout& layout);

// Counts the acts of every unit on the first device of `plan`, the model compiled for
// `probe` (an ActFamilyProbe), as CountActs maps actors to units, into
// profile->layout_acts (replacing the family's earlier count). INVALID_ARGUMENT when
// `probe` is no family probe, or the plan has no device or its first device no actor.
absl::Status CountLayoutActs(const proto::Plan& plan, const proto::AutoParallelLayout& probe, ModelProfile* profile);

// Sets every unit's full_recompute (and full_recompute_ops) to the work of the forward ops
// the recompute pass copied in `plan`, the model compiled with --recompute=full (a copy's
// kernel runs op "NAME/recompute"; each op counted once, whichever devices and actors run
// it), and profile->full_recompute_counted. A copy whose outputs the plan makes views
// (RegisterDef.alias_of: a reshape's output is its input's bytes) acts without running its
// kernel: its act is counted, its work is not. INVALID_ARGUMENT when the plan has no device
// or its first device no actor, or when the profile has blocks and the plan re-runs none of
// their ops (not compiled with --recompute=full).
absl::Status CountFullRecomputation(const proto::Plan& plan, ModelProfile* profile);

// The acts of unit `unit` on one device in `layout`: its family's count when
// CountLayoutActs counted it, else the unit's acts_per_micro_batch and
// acts_per_iteration (CountActs' probe plan).
UnitActs ActsOf(const ModelProfile& profile, size_t unit, const proto::AutoParallelLayout& layout);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_ACT_COUNT_H_
