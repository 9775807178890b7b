#include "plan/plan_check.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/status.h"
#include "plan/plan_format.h"
#include "plan/plan_index.h"

namespace oneflow {
namespace {

// "device 0 (0:0)": the index users pass to --device, and the device's cluster id.
std::string DeviceName(const proto::Plan& plan, int device_index) {
  return absl::StrCat("device ", device_index, " (",
                      DeviceIdText(plan.devices(device_index).device()), ")");
}

std::string ActorName(const proto::ActorDef& actor) {
  return absl::StrCat("actor ", actor.id(), " '", actor.name(), "'");
}

absl::Status Missing(absl::string_view who, absl::string_view verb, absl::string_view what,
                     int64_t id, absl::string_view owner) {
  return absl::InvalidArgumentError(
      absl::StrCat(who, " ", verb, " ", what, " ", id, ", which ", owner, " does not define"));
}

// An unset (empty) NdSbp is printed as "-"; a set one must convert.
absl::Status CheckSbp(const proto::NdSbp& nd_sbp, absl::string_view where) {
  if (nd_sbp.sbp_size() == 0) return absl::OkStatus();
  return WithContext(NdSbp::FromProto(nd_sbp).status(), where);
}

absl::Status CheckPlacement(const proto::Placement& placement, absl::string_view where) {
  if (placement.devices_size() == 0) return absl::OkStatus();
  return WithContext(Placement::FromProto(placement).status(), where);
}

absl::Status CheckVersion(const proto::Plan& plan) {
  if (plan.format_version() == kPlanFormatVersion) return absl::OkStatus();
  if (plan.format_version() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "format_version is 0 (unset): not a plan, or a damaged one; this build reads version ",
        kPlanFormatVersion));
  }
  return absl::InvalidArgumentError(absl::StrCat("format_version is ", plan.format_version(),
                                                 ", but this build reads only version ",
                                                 kPlanFormatVersion));
}

absl::Status CheckUniqueIds(const proto::Plan& plan) {
  absl::flat_hash_set<int64_t> collectives;
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    if (!collectives.insert(collective.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("collective id ", collective.id(), " is defined twice"));
    }
    // A reader names a collective's stream by its index in Plan.streams (none: stream 0).
    const int64_t streams = std::max(1, plan.streams_size());
    if (collective.stream() < 0 || collective.stream() >= streams) {
      return absl::InvalidArgumentError(absl::StrCat("collective ", collective.id(), " is on communication stream ",
                                                     collective.stream(), ", but the plan has streams 0 to ",
                                                     streams - 1));
    }
  }
  for (int s = 0; s < plan.streams_size(); ++s) {
    if (plan.streams(s).id() != s) {
      return absl::InvalidArgumentError(absl::StrCat("communication stream ", plan.streams(s).id(),
                                                     " is at index ", s, "; stream ids are their index"));
    }
  }
  absl::flat_hash_map<int64_t, int> actor_devices;
  for (int d = 0; d < plan.devices_size(); ++d) {
    absl::flat_hash_set<int64_t> registers;
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      auto [it, inserted] = actor_devices.emplace(actor.id(), d);
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("actor id ", actor.id(), " is defined twice, on ",
                         DeviceName(plan, it->second), " and ", DeviceName(plan, d)));
      }
    }
    for (const proto::RegisterDef& reg : plan.devices(d).registers()) {
      if (!registers.insert(reg.id()).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(DeviceName(plan, d), " defines register ", reg.id(), " twice"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDeviceReferences(const proto::Plan& plan, const PlanIndex& index, int d) {
  const proto::DevicePlan& device = plan.devices(d);
  const std::string device_name = DeviceName(plan, d);
  const std::string this_device = absl::StrCat("device ", d);
  for (const proto::ActorDef& actor : device.actors()) {
    const std::string who = absl::StrCat(device_name, " ", ActorName(actor));
    for (int64_t id : actor.consumed_registers()) {
      if (index.FindRegister(d, id) == nullptr) {
        return Missing(who, "consumes", "register", id, this_device);
      }
    }
    for (int64_t id : actor.produced_registers()) {
      if (index.FindRegister(d, id) == nullptr) {
        return Missing(who, "produces", "register", id, this_device);
      }
    }
    // A boxing actor that only slices locally carries a negative collective_id.
    if (actor.kind() == proto::ACTOR_BOXING && actor.collective_id() >= 0 &&
        index.FindCollective(actor.collective_id()) == nullptr) {
      return Missing(who, "issues", "collective", actor.collective_id(), "the plan");
    }
  }
  for (const proto::RegisterDef& reg : device.registers()) {
    const std::string who =
        absl::StrCat(device_name, " register ", reg.id(), " '", reg.tensor(), "'");
    if (index.FindActor(reg.producer_actor()) == nullptr) {
      return Missing(who, "has producer", "actor", reg.producer_actor(), "the plan");
    }
    for (int64_t id : reg.consumer_actors()) {
      if (index.FindActor(id) == nullptr) {
        return Missing(who, "has consumer", "actor", id, "the plan");
      }
    }
  }
  for (int64_t id : device.collective_order()) {
    if (index.FindCollective(id) == nullptr) {
      return Missing(absl::StrCat(device_name, " collective_order"), "lists", "collective", id,
                     "the plan");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLogicalSection(const proto::Plan& plan, const PlanIndex& index) {
  for (const proto::LogicalOpSbp& op : plan.op_sbps()) {
    const std::string who = absl::StrCat("op '", op.op_name(), "'");
    for (const auto& [name, nd_sbp] : op.signature().inputs()) {
      OF_RETURN_IF_ERROR(CheckSbp(nd_sbp, absl::StrCat(who, " input '", name, "' SBP")));
    }
    for (const auto& [name, nd_sbp] : op.signature().outputs()) {
      OF_RETURN_IF_ERROR(CheckSbp(nd_sbp, absl::StrCat(who, " output '", name, "' SBP")));
    }
    OF_RETURN_IF_ERROR(CheckPlacement(op.placement(), absl::StrCat(who, " placement")));
  }
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    const std::string who = absl::StrCat("boxing ", boxing.id(), " '", boxing.tensor(), "'");
    OF_RETURN_IF_ERROR(CheckSbp(boxing.src_sbp(), absl::StrCat(who, " src_sbp")));
    OF_RETURN_IF_ERROR(CheckSbp(boxing.dst_sbp(), absl::StrCat(who, " dst_sbp")));
    OF_RETURN_IF_ERROR(CheckPlacement(boxing.src_placement(), absl::StrCat(who, " src_placement")));
    OF_RETURN_IF_ERROR(CheckPlacement(boxing.dst_placement(), absl::StrCat(who, " dst_placement")));
    for (int s = 0; s < boxing.steps_size(); ++s) {
      const proto::BoxingStepDef& step = boxing.steps(s);
      const std::string step_name = absl::StrCat(who, " step ", s);
      OF_RETURN_IF_ERROR(CheckSbp(step.src_sbp(), absl::StrCat(step_name, " src_sbp")));
      OF_RETURN_IF_ERROR(CheckSbp(step.dst_sbp(), absl::StrCat(step_name, " dst_sbp")));
      if (step.collective_id() != -1 && index.FindCollective(step.collective_id()) == nullptr) {
        return Missing(step_name, "uses", "collective", step.collective_id(), "the plan");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPlanForInspection(const proto::Plan& plan) {
  OF_RETURN_IF_ERROR(CheckVersion(plan));
  OF_RETURN_IF_ERROR(CheckUniqueIds(plan));
  const PlanIndex index(plan);
  for (int d = 0; d < plan.devices_size(); ++d) {
    OF_RETURN_IF_ERROR(CheckDeviceReferences(plan, index, d));
  }
  return CheckLogicalSection(plan, index);
}

}  // namespace oneflow
