// What a plan must satisfy before `oneflow inspect` (or anything else that walks it by
// id) can print it; the lookups that walking it needs are plan/plan_index.h.
//
// Protobuf parses many byte strings that are not plans (a text file is often a valid
// message of unknown fields), so reading a file is not enough: a plan is accepted only
// when its format_version is the one this build reads and every id it refers to exists.
// This is deliberately less than the compiler's plan verifier (which checks that every
// device of a group issues the same collectives in the same order, that memory offsets
// fit their blocks, ...): it checks what a reader needs so that it never indexes out of
// bounds or prints a reference to nothing.
#ifndef PLAN_PLAN_CHECK_H_
#define PLAN_PLAN_CHECK_H_

#include "absl/status/status.h"
#include "plan/plan_verifier.h"
#include "proto/plan.pb.h"

namespace oneflow {

// Checks, in this order, and returns INVALID_ARGUMENT describing the first failure:
//  - format_version is kPlanFormatVersion;
//  - ids are unique: collectives and actors in the plan, registers within a device;
//  - every id referred to exists: an actor's consumed/produced registers on the actor's
//    own device; a register's producer and consumer actors anywhere in the plan; a
//    boxing actor's collective (unless negative, meaning none); a device's
//    collective_order; a boxing step's collective (unless -1, a local step); a
//    collective's communication stream (Plan.streams index; 0 when the plan has none),
//    and streams' ids are their index;
//  - every SBP and placement that is set (non-empty) is well formed.
// Names (ops, tensors) are not checked: a name missing from plan.job is printed as is.
// Messages name the place, e.g.
//   device 0 (0:0) actor 2 'mm' consumes register 9, which device 0 does not define
absl::Status CheckPlanForInspection(const proto::Plan& plan);

}  // namespace oneflow

#endif  // PLAN_PLAN_CHECK_H_
