// The plan verifier: everything a plan must satisfy before anything runs it, checked on
// the proto alone. The compiler runs it on every plan it emits; every reader of a plan
// (`oneflow inspect`, `oneflow run`, `oneflow launch`, oneflowd, the worker, and
// actors::TrainPlan) runs VerifyPlan before it allocates anything, so a damaged or
// crafted plan is a load-time error naming the place, never a crash or a hang.
//
//   checksum     Plan.checksum matches the contents (plan/plan_checksum.h);
//   structure    actor ids unique in the plan and consecutive on each device, kinds and
//                threads known, register ids = their index on the device; every
//                register's producer and consumers agree with the actors' lists in both
//                directions, without repeats; kernel arguments name the actor's own
//                registers; register sizes = elements x dtype size; control
//                predecessors are earlier actors of the same device; a boxing actor
//                names an existing boxing step and that step's collective;
//   collectives  every member of a collective's group has exactly one actor issuing it;
//                each device lists exactly the collectives whose group contains it, once
//                each, those of one group in increasing id; each group's collectives
//                have `order` 0, 1, 2, ... in id order; streams have ids = their index,
//                every collective names one of them, and all collectives of one group
//                (one communicator) are on one stream;
//   waits        no wait cycle: the acts of one iteration, with a collective's acts on
//                all its members merged into one event (it completes only when every
//                member has issued it), ordered by registers, control predecessors and
//                each device's collective order per communication stream (a stream's
//                thread issues its collectives one after another; streams run apart),
//                form an acyclic graph. With register counts >= 1 that is what lets the
//                engine always make progress; it is the one proof that the devices'
//                stream orders, which may interleave groups in any order, cannot
//                deadlock;
//   memory       blocks have ids = their index; the arena holds exactly register_count
//                slot copies; activation registers have register_count slots and
//                persistent ones 1; every slot lies inside its block (no overflow); two
//                registers of one device whose lifetimes overlap never share bytes
//                (a view's source lives until the view's last reader); peak >= lower
//                bound; a view (RegisterDef.alias_of) names another register of its
//                device of the same size, neither persistent, lies exactly where its
//                source does, is written by one compute kernel reading only the source,
//                and its alias chain ends at a register that owns bytes (no cycle);
//                at most one workspace block, one unslotted buffer without registers,
//                at least as large as every kernel's workspace_bytes, used only by
//                compute-thread acts;
//   recompute    a recomputed op runs its original's kernel on its original's devices,
//                after the original's outputs died (VerifyRecompute below);
//   buckets      gradient buckets agree with their steps, actors and registers
//                (VerifyBuckets below);
//   support      every boxing step is one the runtime executes for its tensor's dtype
//                (kernels/boxing/step_support.h: the same predicate the runtime uses);
//                a compressed step names codecs this build knows, on f32, and a
//                two-level one a group of nodes x equal members listed node by node.
#ifndef PLAN_PLAN_VERIFIER_H_
#define PLAN_PLAN_VERIFIER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "proto/plan.pb.h"

namespace oneflow {

// The plan format this build writes and reads (Plan.format_version). Version 2 added
// the checksum.
inline constexpr int64_t kPlanFormatVersion = 2;

// Each returns FAILED_PRECONDITION naming the device, actor, register, collective or
// boxing step at fault.
absl::Status VerifyPlanStructure(const proto::Plan& plan);
absl::Status VerifyCollectiveOrder(const proto::Plan& plan);
// Preconditions: VerifyPlanStructure and VerifyCollectiveOrder passed.
absl::Status VerifyNoWaitCycle(const proto::Plan& plan);
// Precondition: VerifyPlanStructure passed.
absl::Status VerifyMemory(const proto::Plan& plan);
absl::Status VerifyRuntimeSupport(const proto::Plan& plan);
// Gradient buckets (Plan.buckets): each lists >= 2 dense all_reduce steps on its axis
// that name it back, fits the plan's bucket_bytes_limit, and names an
// all_reduce collective; every bucketed step is listed by its bucket; every bucket
// actor packs member k's input at the next 64-byte aligned offset of its f32 bucket
// register and exposes it as a view of the same size there. Preconditions:
// VerifyPlanStructure and VerifyCollectiveOrder passed.
absl::Status VerifyBuckets(const proto::Plan& plan);

// Recomputed ops (OpDef.recompute_of, compiler/passes/recompute_pass.h): each re-runs an
// op the user wrote, with its type, attributes, placement and SBP signature, on exactly
// the devices that run the original, and after the last reader of the original's
// outputs on each. Precondition: VerifyPlanStructure passed.
absl::Status VerifyRecompute(const proto::Plan& plan);
// The format version and all of the above, in that order; the checksum is not looked
// at (the compiler verifies a plan before it seals it).
absl::Status VerifyPlanContents(const proto::Plan& plan);

// Checks of the above that already passed on a plan's current devices and collectives.
struct PlanChecks {
  bool collective_order = false;
  bool memory = false;
};

// VerifyPlanContents without the checks `passed` names: for the compiler, whose
// verification between passes ran them on the same devices, collectives and register
// count (a reader runs VerifyPlan, all of them).
absl::Status VerifyPlanContents(const proto::Plan& plan, const PlanChecks& passed);

// The one full verifier for every reader: the format version, the checksum, then
// VerifyPlanContents.
absl::Status VerifyPlan(const proto::Plan& plan);

// Whether this build can run the plan's devices: CPU only (kernels/cpu). A plan whose
// cluster or any op's placement names cuda devices is FAILED_PRECONDITION, naming the
// first such op. Not part of VerifyPlan: such a plan is valid and `oneflow inspect`
// shows it; `oneflow run`, the workers and `oneflowd` refuse it before anything runs.
absl::Status CheckDevicesRunHere(const proto::Plan& plan);

}  // namespace oneflow

#endif  // PLAN_PLAN_VERIFIER_H_
