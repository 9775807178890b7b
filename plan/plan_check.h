// What a plan must satisfy before `oneflow inspect` (or anything else that walks it by
// id) can print it, and the lookups by name and id that walking it needs.
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

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// Lookups into one plan by name and id; the plan must outlive the index. Where a plan
// repeats a name or id (CheckPlanForInspection refuses repeated ids), the first wins.
class PlanIndex {
 public:
  explicit PlanIndex(const proto::Plan& plan);

  // An actor and the index in plan.devices of the device that runs it.
  struct ActorEntry {
    int device_index = 0;
    const proto::ActorDef* actor = nullptr;
  };

  // Each returns nullptr when the plan has no such entry.
  const proto::OpDef* FindOp(absl::string_view name) const;
  const proto::TensorDef* FindTensor(absl::string_view name) const;
  const proto::CollectiveDef* FindCollective(int64_t id) const;
  const ActorEntry* FindActor(int64_t id) const;
  const proto::RegisterDef* FindRegister(int device_index, int64_t id) const;

  // True when `tensor` is a variable of plan.job, or an output of one of its data sources.
  bool IsVariable(absl::string_view tensor) const;
  bool IsDataSourceOutput(absl::string_view tensor) const;

 private:
  absl::flat_hash_map<std::string, const proto::OpDef*> ops_;
  absl::flat_hash_map<std::string, const proto::TensorDef*> tensors_;
  absl::flat_hash_set<std::string> variables_;
  absl::flat_hash_set<std::string> data_source_outputs_;
  absl::flat_hash_map<int64_t, const proto::CollectiveDef*> collectives_;
  absl::flat_hash_map<int64_t, ActorEntry> actors_;
  // Keyed by (device index, register id): register ids need only be unique per device.
  absl::flat_hash_map<std::pair<int, int64_t>, const proto::RegisterDef*> registers_;
};

}  // namespace oneflow

#endif  // PLAN_PLAN_CHECK_H_
