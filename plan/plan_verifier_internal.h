// Internal to the plan verifier: message helpers shared by its files.
#ifndef PLAN_PLAN_VERIFIER_INTERNAL_H_
#define PLAN_PLAN_VERIFIER_INTERNAL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "proto/plan.pb.h"

namespace oneflow::plan_verifier_internal {

// "0:1"
inline std::string DeviceText(const proto::DeviceId& device) {
  return absl::StrCat(device.node(), ":", device.device());
}

// "actor 12 ('mm')"
inline std::string ActorText(const proto::ActorDef& actor) {
  return absl::StrCat("actor ", actor.id(), " ('", actor.name(), "')");
}

inline absl::Status Fail(const std::string& message) {
  return absl::FailedPreconditionError(message);
}

}  // namespace oneflow::plan_verifier_internal

#endif  // PLAN_PLAN_VERIFIER_INTERNAL_H_
