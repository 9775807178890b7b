// The plan verifier: invariants every plan the compiler emits must hold, checked on the
// proto alone so the runtime and tools can run it on any plan file too.
//
//   structure    actor ids unique in the plan, register ids unique per device, every
//                register's producer and consumers agree with the actors' lists, control
//                predecessors are earlier actors of the same device (so acyclic);
//   collectives  every member of a collective's group has exactly one actor issuing it;
//                each device issues collectives in strictly increasing id, and lists
//                exactly those whose group contains it; each group's collectives have
//                `order` 0, 1, 2, ... in id order. Ids being one global order that all
//                devices follow, no two devices can wait on each other in a cycle.
//   memory       registers lie inside their memory block; two registers of one device
//                whose lifetimes overlap (producer to last consumer, in actor order) never
//                share bytes; peak >= lower bound.
#ifndef COMPILER_PLAN_VERIFIER_H_
#define COMPILER_PLAN_VERIFIER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "proto/plan.pb.h"

namespace oneflow {

// The plan format this build writes and reads (Plan.format_version).
inline constexpr int64_t kPlanFormatVersion = 1;

// FAILED_PRECONDITION naming the device, actor, register or collective at fault.
absl::Status VerifyPlanStructure(const proto::Plan& plan);
absl::Status VerifyCollectiveOrder(const proto::Plan& plan);
absl::Status VerifyMemory(const proto::Plan& plan);

// All of the above plus the format version.
absl::Status VerifyPlan(const proto::Plan& plan);

}  // namespace oneflow

#endif  // COMPILER_PLAN_VERIFIER_H_
