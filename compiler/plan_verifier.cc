// The verifier's entry points and its structural checks. The collective order and the
// wait graph are in plan_verifier_order.cc, memory in plan_verifier_memory.cc, what the
// runtime supports in plan_verifier_support.cc.
#include "compiler/plan_verifier.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/plan_checksum.h"
#include "compiler/plan_verifier_internal.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using plan_verifier_internal::ActorText;
using plan_verifier_internal::DeviceText;
using plan_verifier_internal::Fail;

bool Contains(const google::protobuf::RepeatedField<int64_t>& list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The first value listed twice, or -1 when none is (ids are >= 0).
int64_t FirstRepeat(const google::protobuf::RepeatedField<int64_t>& list) {
  // Most lists are a few entries long: comparing pairs costs less than hashing them.
  constexpr int kShortList = 16;
  if (list.size() <= kShortList) {
    for (int j = 1; j < list.size(); ++j) {
      for (int i = 0; i < j; ++i) {
        if (list.Get(i) == list.Get(j)) return list.Get(j);
      }
    }
    return -1;
  }
  absl::flat_hash_set<int64_t> seen;
  for (int64_t value : list) {
    if (!seen.insert(value).second) return value;
  }
  return -1;
}

// Bytes one slot of `reg` needs (elements x dtype size), or an error naming the
// register for a negative dimension, an unknown dtype or an overflow.
absl::StatusOr<int64_t> RegisterBytes(const proto::RegisterDef& reg, absl::FunctionRef<std::string()> who) {
  absl::StatusOr<DType> dtype = FromProto(reg.dtype());
  if (!dtype.ok()) return Fail(absl::StrCat(who(), " has dtype ", reg.dtype(), ": ", dtype.status().message()));
  int64_t bytes = SizeOf(*dtype);
  for (int64_t dim : reg.shape()) {
    if (dim < 0 || (dim > 0 && bytes > INT64_MAX / dim)) {
      return Fail(absl::StrCat(who(), " has shape dimension ", dim, "; dimensions are >= 0 and the size fits 64 bits"));
    }
    bytes *= dim;
  }
  return bytes;
}

// A view (RegisterDef.alias_of) reinterprets the bytes of another register of the device,
// of its size. The runtime runs no kernel for the act that makes it, so that act must be
// one that only reads its source and only writes the view: a compute actor whose one
// kernel has exactly those two arguments. Views alias activations only: a variable's
// in-place update waits for the variable's own readers, not for a view's.
//
// A gradient bucket's member view (producer: a bucket actor, ActorDef.bucket_id) is a
// part of the bucket register that the same actor produces: it lies inside it
// (alias_offset_bytes, a multiple of 4), and the actor writes both in one act.
absl::Status VerifyView(const proto::DevicePlan& device, const std::string& who, const proto::RegisterDef& view,
                        const proto::ActorDef& producer) {
  const int64_t s = view.alias_of();
  if (s < 0 || s >= device.registers_size() || s == view.id()) {
    return Fail(absl::StrCat(who, " is a view of register ", s, ", which is not another register of the device"));
  }
  const proto::RegisterDef& source = device.registers(static_cast<int>(s));
  if (producer.has_bucket_id()) {
    const int64_t offset = view.alias_offset_bytes();
    if (source.producer_actor() != producer.id() || source.has_alias_of() || view.persistent() ||
        source.persistent() || offset < 0 || offset % 4 != 0 || view.size_bytes() > source.size_bytes() ||
        offset > source.size_bytes() - view.size_bytes()) {
      return Fail(absl::StrCat(who, " is a bucket member's view of register ", s, " ('", source.tensor(),
                               "') at byte ", offset, " (", view.size_bytes(), " bytes), so register ", s,
                               " must be a non-persistent register of ", source.size_bytes(),
                               " bytes owning its bytes, made by the same bucket actor ", ActorText(producer),
                               ", and the view a 4-byte aligned part of it"));
    }
    return absl::OkStatus();
  }
  if (view.alias_offset_bytes() != 0) {
    return Fail(absl::StrCat(who, " starts ", view.alias_offset_bytes(), " bytes into register ", s,
                             "; only a gradient bucket's member views are parts of their source"));
  }
  if (view.size_bytes() != source.size_bytes()) {
    return Fail(absl::StrCat(who, " of ", view.size_bytes(), " bytes is a view of register ", s, " ('",
                             source.tensor(), "') of ", source.size_bytes(), " bytes; a view has its source's size"));
  }
  if (view.persistent() || source.persistent()) {
    return Fail(absl::StrCat(who, " is a view of register ", s, " ('", source.tensor(),
                             "') but one of them is persistent; views alias activations only"));
  }
  const bool only_source_to_view =
      producer.kind() == proto::ACTOR_COMPUTE && producer.kernels_size() == 1 &&
      producer.kernels(0).inputs_size() == 1 && producer.kernels(0).inputs().begin()->second == s &&
      producer.kernels(0).outputs_size() == 1 && producer.kernels(0).outputs().begin()->second == view.id();
  if (!only_source_to_view) {
    return Fail(absl::StrCat(who, " is a view of register ", s, ", so its producer ", ActorText(producer),
                             " must be a compute actor whose one kernel reads only register ", s,
                             " and writes only register ", view.id()));
  }
  return absl::OkStatus();
}

// Every chain of views ends at a register that owns its bytes (one walk per device:
// each register is settled once).
absl::Status VerifyViewChains(const proto::DevicePlan& device, const std::string& where) {
  enum class Mark { kUnseen, kOnPath, kSettled };
  std::vector<Mark> marks(device.registers_size(), Mark::kUnseen);
  for (int r = 0; r < device.registers_size(); ++r) {
    std::vector<int64_t> path;
    int64_t at = r;
    while (marks[at] == Mark::kUnseen) {
      marks[at] = Mark::kOnPath;
      path.push_back(at);
      if (!device.registers(static_cast<int>(at)).has_alias_of()) break;
      at = device.registers(static_cast<int>(at)).alias_of();  // In range: VerifyView ran.
    }
    if (marks[at] == Mark::kOnPath && device.registers(static_cast<int>(at)).has_alias_of()) {
      std::vector<int64_t> cycle(std::find(path.begin(), path.end(), at), path.end());
      cycle.push_back(at);
      return Fail(absl::StrCat(where, ": registers ", absl::StrJoin(cycle, " -> "),
                               " are views of each other in a cycle; a chain of views must end at a "
                               "register that owns its bytes"));
    }
    for (int64_t settled : path) marks[settled] = Mark::kSettled;
  }
  return absl::OkStatus();
}

// Where each actor of a device is: its ids are consecutive (VerifyPlanStructure checks
// that first), so an id's position is its distance from the first.
class ActorPositions {
 public:
  explicit ActorPositions(const proto::DevicePlan& device)
      : first_(device.actors_size() > 0 ? device.actors(0).id() : 0), size_(device.actors_size()) {}

  // The position of actor `id` on the device, or -1 when it is not one of its actors.
  int Find(int64_t id) const {
    if (id < first_) return -1;
    const uint64_t distance = static_cast<uint64_t>(id) - static_cast<uint64_t>(first_);
    return distance < static_cast<uint64_t>(size_) ? static_cast<int>(distance) : -1;
  }

 private:
  int64_t first_;
  int size_;
};

absl::Status VerifyRegisters(const proto::DevicePlan& device, const std::string& where,
                             const ActorPositions& positions) {
  for (int r = 0; r < device.registers_size(); ++r) {
    const proto::RegisterDef& reg = device.registers(r);
    // Built only for an error: a plan has hundreds of thousands of registers.
    auto who = [&] { return absl::StrCat(where, ": register ", r, " ('", reg.tensor(), "')"); };
    if (reg.id() != r) {
      return Fail(absl::StrCat(where, ": register at index ", r, " has id ", reg.id(),
                               "; register ids are their index on the device"));
    }
    const int producer = positions.Find(reg.producer_actor());
    if (producer < 0) {
      return Fail(absl::StrCat(who(), " has producer ", reg.producer_actor(),
                               ", which is not an actor of the device"));
    }
    if (!Contains(device.actors(producer).produced_registers(), r)) {
      return Fail(absl::StrCat(who(), " names producer ", reg.producer_actor(),
                               " but that actor does not list it"));
    }
    if (reg.count() < 1) {
      return Fail(absl::StrCat(who(), " has count ", reg.count(), "; it must be >= 1"));
    }
    OF_ASSIGN_OR_RETURN(const int64_t bytes, RegisterBytes(reg, who));
    if (reg.size_bytes() != bytes) {
      return Fail(absl::StrCat(who(), " has size ", reg.size_bytes(), " bytes, but its shape and dtype need ",
                               bytes));
    }
    if (const int64_t repeat = FirstRepeat(reg.consumer_actors()); repeat >= 0) {
      return Fail(absl::StrCat(who(), " lists consumer ", repeat, " twice"));
    }
    for (int64_t consumer : reg.consumer_actors()) {
      const int at = positions.Find(consumer);
      if (at < 0 || !Contains(device.actors(at).consumed_registers(), r)) {
        return Fail(absl::StrCat(who(), " names consumer ", consumer,
                                 ", which does not consume it on this device"));
      }
    }
    if (reg.has_alias_of()) OF_RETURN_IF_ERROR(VerifyView(device, who(), reg, device.actors(producer)));
  }
  return VerifyViewChains(device, where);
}

absl::Status VerifyActor(const proto::DevicePlan& device, const std::string& where,
                         const proto::ActorDef& actor, const ActorPositions& positions) {
  auto who = [&] { return absl::StrCat(where, ": ", ActorText(actor)); };
  if (!proto::ActorKind_IsValid(actor.kind()) || actor.kind() == proto::ACTOR_INVALID) {
    return Fail(absl::StrCat(who(), " has kind ", actor.kind(), ", which this build does not know"));
  }
  if (!proto::ThreadKind_IsValid(actor.thread())) {
    return Fail(absl::StrCat(who(), " runs on thread kind ", actor.thread(), ", which this build does not know"));
  }
  if (actor.kind() != proto::ACTOR_BOXING && actor.collective_id() != -1) {
    return Fail(absl::StrCat(who(), " is not a boxing actor but issues collective ", actor.collective_id()));
  }
  for (const auto* list : {&actor.consumed_registers(), &actor.produced_registers()}) {
    if (const int64_t repeat = FirstRepeat(*list); repeat >= 0) {
      return Fail(absl::StrCat(who(), " lists register ", repeat, " twice"));
    }
  }
  for (int64_t reg : actor.consumed_registers()) {
    if (reg < 0 || reg >= device.registers_size()) {
      return Fail(absl::StrCat(who(), " consumes register ", reg, ", which does not exist"));
    }
    // A consumer the register does not name would never hear that it is readable.
    if (!Contains(device.registers(static_cast<int>(reg)).consumer_actors(), actor.id())) {
      return Fail(absl::StrCat(who(), " consumes register ", reg, ", which does not name it as a consumer"));
    }
  }
  for (int64_t reg : actor.produced_registers()) {
    if (reg < 0 || reg >= device.registers_size() ||
        device.registers(static_cast<int>(reg)).producer_actor() != actor.id()) {
      return Fail(absl::StrCat(who(), " produces register ", reg, ", which does not name it"));
    }
  }
  for (const proto::KernelDef& kernel : actor.kernels()) {
    for (const auto& [argument, reg] : kernel.inputs()) {
      if (!Contains(actor.consumed_registers(), reg) && !Contains(actor.produced_registers(), reg)) {
        return Fail(absl::StrCat(who(), " kernel '", kernel.name(), "' reads argument '", argument,
                                 "' from register ", reg, ", which the actor does not consume"));
      }
    }
    for (const auto& [argument, reg] : kernel.outputs()) {
      if (!Contains(actor.produced_registers(), reg)) {
        return Fail(absl::StrCat(who(), " kernel '", kernel.name(), "' writes argument '", argument,
                                 "' to register ", reg, ", which the actor does not produce"));
      }
    }
  }
  for (int64_t predecessor : actor.control_predecessors()) {
    const int at = positions.Find(predecessor);
    if (at < 0 || at >= positions.Find(actor.id())) {
      return Fail(absl::StrCat(who(), " waits for actor ", predecessor,
                               ", which is not an earlier actor of the device"));
    }
  }
  return absl::OkStatus();
}

// Whether the actor ids of `device` are consecutive and none of them is in `id_ranges`
// (the ids of the devices before it). The common case, checked without hashing.
bool ActorIdsFit(const proto::DevicePlan& device, const std::map<int64_t, int64_t>& id_ranges) {
  const int size = device.actors_size();
  if (size == 0) return true;
  const int64_t first = device.actors(0).id();
  if (first > INT64_MAX - (size - 1)) return false;
  const int64_t last = first + (size - 1);
  for (int a = 0; a < size; ++a) {
    if (device.actors(a).id() != first + a) return false;
  }
  // The range at or after `first` must start after `last`, the one before must end
  // before `first`.
  auto next = id_ranges.lower_bound(first);
  if (next != id_ranges.end() && next->first <= last) return false;
  if (next != id_ranges.begin() && std::prev(next)->second >= first) return false;
  return true;
}

// The actor ids of device `d` looked up one by one: each unused in the plan so far, and
// consecutive on the device.
absl::Status VerifyActorIds(const proto::Plan& plan, int d, const std::string& where) {
  absl::flat_hash_set<int64_t> actor_ids;
  for (int e = 0; e < d; ++e) {
    for (const proto::ActorDef& actor : plan.devices(e).actors()) actor_ids.insert(actor.id());
  }
  const proto::DevicePlan& device = plan.devices(d);
  for (int a = 0; a < device.actors_size(); ++a) {
    const proto::ActorDef& actor = device.actors(a);
    if (!actor_ids.insert(actor.id()).second) {
      return Fail(absl::StrCat(where, ": actor id ", actor.id(), " ('", actor.name(),
                               "') is used twice in the plan"));
    }
    // Lifetimes and memory reuse are measured in actor positions (id - first id).
    if (actor.id() != device.actors(0).id() + a) {
      return Fail(absl::StrCat(where, ": ", ActorText(actor), " is at position ", a,
                               "; a device's actor ids are consecutive from ", device.actors(0).id()));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyVersion(const proto::Plan& plan) {
  if (plan.format_version() == kPlanFormatVersion) return absl::OkStatus();
  return Fail(absl::StrCat("plan format version ", plan.format_version(), "; this build reads version ",
                           kPlanFormatVersion));
}

}  // namespace

absl::Status VerifyPlanStructure(const proto::Plan& plan) {
  // The ids of the devices checked so far: disjoint ranges, keyed by their first id.
  std::map<int64_t, int64_t> id_ranges;  // first -> last
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    const std::string where = absl::StrCat("device ", DeviceText(device.device()));
    if (!ActorIdsFit(device, id_ranges)) {
      // Some id is repeated or out of sequence: name the first, as if every id were
      // looked up in turn among those before it.
      OF_RETURN_IF_ERROR(VerifyActorIds(plan, d, where));
    }
    if (device.actors_size() > 0) {
      id_ranges.emplace(device.actors(0).id(), device.actors(0).id() + device.actors_size() - 1);
    }
    const ActorPositions positions(device);
    OF_RETURN_IF_ERROR(VerifyRegisters(device, where, positions));
    for (const proto::ActorDef& actor : device.actors()) {
      OF_RETURN_IF_ERROR(VerifyActor(device, where, actor, positions));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyPlanContents(const proto::Plan& plan) { return VerifyPlanContents(plan, PlanChecks{}); }

absl::Status VerifyPlanContents(const proto::Plan& plan, const PlanChecks& passed) {
  OF_RETURN_IF_ERROR(VerifyVersion(plan));
  OF_RETURN_IF_ERROR(VerifyPlanStructure(plan));
  if (!passed.collective_order) OF_RETURN_IF_ERROR(VerifyCollectiveOrder(plan));
  OF_RETURN_IF_ERROR(VerifyNoWaitCycle(plan));
  if (!passed.memory) OF_RETURN_IF_ERROR(VerifyMemory(plan));
  OF_RETURN_IF_ERROR(VerifyBuckets(plan));
  return VerifyRuntimeSupport(plan);
}

absl::Status VerifyPlan(const proto::Plan& plan) {
  OF_RETURN_IF_ERROR(VerifyVersion(plan));
  OF_RETURN_IF_ERROR(VerifyPlanChecksum(plan));
  return VerifyPlanContents(plan);
}

}  // namespace oneflow
