// The verifier's entry points and its structural checks. The collective order and the
// wait graph are in plan_verifier_order.cc, memory in plan_verifier_memory.cc, what the
// runtime supports in plan_verifier_support.cc.
#include "plan/plan_verifier.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier_internal.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/run_tasks.h"
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
absl::Status VerifyView(const proto::DevicePlan& device, absl::FunctionRef<std::string()> who,
                        const proto::RegisterDef& view, const proto::ActorDef& producer) {
  const int64_t s = view.alias_of();
  if (s < 0 || s >= device.registers_size() || s == view.id()) {
    return Fail(absl::StrCat(who(), " is a view of register ", s, ", which is not another register of the device"));
  }
  const proto::RegisterDef& source = device.registers(static_cast<int>(s));
  if (producer.has_bucket_id()) {
    const int64_t offset = view.alias_offset_bytes();
    if (source.producer_actor() != producer.id() || source.has_alias_of() || view.persistent() ||
        source.persistent() || offset < 0 || offset % 4 != 0 || view.size_bytes() > source.size_bytes() ||
        offset > source.size_bytes() - view.size_bytes()) {
      return Fail(absl::StrCat(who(), " is a bucket member's view of register ", s, " ('", source.tensor(),
                               "') at byte ", offset, " (", view.size_bytes(), " bytes), so register ", s,
                               " must be a non-persistent register of ", source.size_bytes(),
                               " bytes owning its bytes, made by the same bucket actor ", ActorText(producer),
                               ", and the view a 4-byte aligned part of it"));
    }
    return absl::OkStatus();
  }
  if (view.alias_offset_bytes() != 0) {
    return Fail(absl::StrCat(who(), " starts ", view.alias_offset_bytes(), " bytes into register ", s,
                             "; only a gradient bucket's member views are parts of their source"));
  }
  if (view.size_bytes() != source.size_bytes()) {
    return Fail(absl::StrCat(who(), " of ", view.size_bytes(), " bytes is a view of register ", s, " ('",
                             source.tensor(), "') of ", source.size_bytes(), " bytes; a view has its source's size"));
  }
  if (view.persistent() || source.persistent()) {
    return Fail(absl::StrCat(who(), " is a view of register ", s, " ('", source.tensor(),
                             "') but one of them is persistent; views alias activations only"));
  }
  const bool only_source_to_view =
      producer.kind() == proto::ACTOR_COMPUTE && producer.kernels_size() == 1 &&
      producer.kernels(0).inputs_size() == 1 && producer.kernels(0).inputs().begin()->second == s &&
      producer.kernels(0).outputs_size() == 1 && producer.kernels(0).outputs().begin()->second == view.id();
  if (!only_source_to_view) {
    return Fail(absl::StrCat(who(), " is a view of register ", s, ", so its producer ", ActorText(producer),
                             " must be a compute actor whose one kernel reads only register ", s,
                             " and writes only register ", view.id()));
  }
  return absl::OkStatus();
}

// Every chain of views ends at a register that owns its bytes (one walk per device:
// each register is settled once). `alias_of[r]`: the register r is a view of, -1 when
// it owns its bytes (VerifyView checked that every alias_of names another register).
absl::Status VerifyViewChains(const std::vector<int64_t>& alias_of, const std::string& where) {
  enum class Mark { kUnseen, kOnPath, kSettled };
  std::vector<Mark> marks(alias_of.size(), Mark::kUnseen);
  std::vector<int64_t> path;
  for (size_t r = 0; r < alias_of.size(); ++r) {
    if (marks[r] != Mark::kUnseen) continue;  // Settled on an earlier register's walk.
    path.clear();
    int64_t at = static_cast<int64_t>(r);
    while (marks[at] == Mark::kUnseen) {
      marks[at] = Mark::kOnPath;
      path.push_back(at);
      if (alias_of[at] < 0) break;
      at = alias_of[at];
    }
    if (marks[at] == Mark::kOnPath && alias_of[at] >= 0) {
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

// VerifyActor less what VerifyActors infers from counts: whether each register the
// actor consumes names it as a consumer, and each one it produces names it as the
// producer. True when every other check of VerifyActor passes; builds no message.
bool ActorChecksPass(const proto::ActorDef& actor, int position, const ActorPositions& positions) {
  if (!proto::ActorKind_IsValid(actor.kind()) || actor.kind() == proto::ACTOR_INVALID ||
      !proto::ThreadKind_IsValid(actor.thread()) ||
      (actor.kind() != proto::ACTOR_BOXING && actor.collective_id() != -1) ||
      FirstRepeat(actor.consumed_registers()) >= 0 || FirstRepeat(actor.produced_registers()) >= 0) {
    return false;
  }
  for (const proto::KernelDef& kernel : actor.kernels()) {
    for (const auto& [argument, reg] : kernel.inputs()) {
      if (!Contains(actor.consumed_registers(), reg) && !Contains(actor.produced_registers(), reg)) return false;
    }
    for (const auto& [argument, reg] : kernel.outputs()) {
      if (!Contains(actor.produced_registers(), reg)) return false;
    }
  }
  for (int64_t predecessor : actor.control_predecessors()) {
    const int at = positions.Find(predecessor);
    if (at < 0 || at >= position) return false;
  }
  return true;
}

// The consumed and produced registers of each actor of a device, copied side by side
// (the actor at position a lists its own at [begin[a], begin[a + 1])). The registers'
// checks look up hundreds of thousands of entries, which in the protos lie far apart.
class ActorLists {
 public:
  // Copies the lists of `device`'s actors. True when every actor passes
  // ActorChecksPass, checked on the same walk, which also sees whether the actor ids
  // are consecutive (ids_consecutive()).
  bool Index(const proto::DevicePlan& device, const ActorPositions& positions) {
    consumed_.clear();
    produced_.clear();
    consumed_begin_.assign(1, 0);
    produced_begin_.assign(1, 0);
    ids_consecutive_ = true;
    bool pass = true;
    const int64_t first = device.actors_size() > 0 ? device.actors(0).id() : 0;
    for (int a = 0; a < device.actors_size(); ++a) {
      const proto::ActorDef& actor = device.actors(a);
      // Unsigned: a crafted id must not overflow.
      ids_consecutive_ = ids_consecutive_ && static_cast<uint64_t>(actor.id()) ==
                                                 static_cast<uint64_t>(first) + static_cast<uint64_t>(a);
      pass = pass && ActorChecksPass(actor, a, positions);
      consumed_.insert(consumed_.end(), actor.consumed_registers().begin(), actor.consumed_registers().end());
      produced_.insert(produced_.end(), actor.produced_registers().begin(), actor.produced_registers().end());
      consumed_begin_.push_back(consumed_.size());
      produced_begin_.push_back(produced_.size());
    }
    return pass;
  }

  // Whether the actor at `position` lists `reg` among the registers it consumes
  // (produces).
  bool Consumes(int position, int64_t reg) const { return Lists(consumed_, consumed_begin_, position, reg); }
  bool Produces(int position, int64_t reg) const { return Lists(produced_, produced_begin_, position, reg); }

  bool ids_consecutive() const { return ids_consecutive_; }

  // Entries of all the actors' lists.
  size_t consumed_total() const { return consumed_.size(); }
  size_t produced_total() const { return produced_.size(); }

 private:
  static bool Lists(const std::vector<int64_t>& entries, const std::vector<size_t>& begin, int position,
                    int64_t reg) {
    const auto first = entries.begin() + static_cast<std::ptrdiff_t>(begin[position]);
    const auto last = entries.begin() + static_cast<std::ptrdiff_t>(begin[position + 1]);
    return std::find(first, last, reg) != last;
  }

  std::vector<int64_t> consumed_, produced_;
  std::vector<size_t> consumed_begin_, produced_begin_;
  bool ids_consecutive_ = true;
};

// `lists` holds the device's actor lists (ActorLists::Index). Sets *consumers to the
// number of (register, consumer) entries.
absl::Status VerifyRegisters(const proto::DevicePlan& device, const std::string& where,
                             const ActorPositions& positions, const ActorLists& lists, size_t* consumers) {
  std::vector<int64_t> alias_of(device.registers_size(), -1);
  *consumers = 0;
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
    if (!lists.Produces(producer, r)) {
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
      if (at < 0 || !lists.Consumes(at, r)) {
        return Fail(absl::StrCat(who(), " names consumer ", consumer,
                                 ", which does not consume it on this device"));
      }
    }
    *consumers += reg.consumer_actors_size();
    if (reg.has_alias_of()) {
      OF_RETURN_IF_ERROR(VerifyView(device, who, reg, device.actors(producer)));
      alias_of[r] = reg.alias_of();
    }
  }
  return VerifyViewChains(alias_of, where);
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

// Every actor of the device passes VerifyActor; the first that does not is named.
// `checks_pass`: ActorLists::Index's result; `consumers`: VerifyRegisters'.
//
// Decided without looking up each consumed and produced register: once VerifyRegisters
// passed, every (register, consumer) pair the registers list is a pair (actor, consumed
// register) the actors list, and every register is listed as produced by its producer.
// No list repeats an entry, so when the actors list exactly as many consumed registers
// as the registers list consumers, and as many produced registers as there are
// registers, those are all their entries: each register an actor consumes exists and
// names it, each one it produces exists and names it. Otherwise (or when another check
// failed) VerifyActor runs on each actor in turn to name the first error.
absl::Status VerifyActors(const proto::DevicePlan& device, const std::string& where,
                          const ActorPositions& positions, const ActorLists& lists, bool checks_pass,
                          size_t consumers) {
  if (checks_pass && lists.consumed_total() == consumers &&
      lists.produced_total() == static_cast<size_t>(device.registers_size())) {
    return absl::OkStatus();
  }
  for (const proto::ActorDef& actor : device.actors()) {
    OF_RETURN_IF_ERROR(VerifyActor(device, where, actor, positions));
  }
  return absl::InternalError(absl::StrCat(where, ": the plan verifier's actor checks disagree"));
}

// Whether the actor ids of `device` are consecutive and none of them is in `id_ranges`
// (the ids of the devices before it). The common case, checked without hashing.
// `consecutive`: whether each actor's id is the first one's plus its position
// (ActorLists::Index finds that on its walk).
bool ActorIdsFit(const proto::DevicePlan& device, bool consecutive, const std::map<int64_t, int64_t>& id_ranges) {
  const int size = device.actors_size();
  if (size == 0) return true;
  const int64_t first = device.actors(0).id();
  if (first > INT64_MAX - (size - 1) || !consecutive) return false;
  const int64_t last = first + (size - 1);
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
  // Whether each device's ids, taken as the range from its first id over its size,
  // overlap those of the devices before it: the only check that looks across devices.
  // Computed in device order before the devices are checked, so each device's checks
  // read nothing another's write, and the devices are checked on threads. The ranges of
  // the devices before are what the loop in order held when it reached a device: every
  // one of them had passed.
  const int devices = plan.devices_size();
  std::vector<char> ranges_fit(devices, 1);
  {
    std::map<int64_t, int64_t> id_ranges;  // first -> last, of the devices so far
    for (int d = 0; d < devices; ++d) {
      const proto::DevicePlan& device = plan.devices(d);
      ranges_fit[d] = ActorIdsFit(device, /*consecutive=*/true, id_ranges);
      if (device.actors_size() > 0) {
        id_ranges.emplace(device.actors(0).id(), device.actors(0).id() + device.actors_size() - 1);
      }
    }
  }
  // Every device is checked on its own (the first failing one in device order is
  // named, as the loop in order would): the structure check walks every actor, kernel
  // and register of the plan, a quarter of the compiler's verification.
  return RunChecksOnThreads(devices, [&](int d) -> absl::Status {
    const proto::DevicePlan& device = plan.devices(d);
    const std::string where = absl::StrCat("device ", DeviceText(device.device()));
    const ActorPositions positions(device);
    ActorLists lists;
    const bool checks_pass = lists.Index(device, positions);
    if (!ranges_fit[d] || !lists.ids_consecutive()) {
      // Some id is repeated or out of sequence: name the first, as if every id were
      // looked up in turn among those before it.
      OF_RETURN_IF_ERROR(VerifyActorIds(plan, d, where));
    }
    size_t consumers = 0;
    OF_RETURN_IF_ERROR(VerifyRegisters(device, where, positions, lists, &consumers));
    return VerifyActors(device, where, positions, lists, checks_pass, consumers);
  });
}

absl::Status VerifyPlanContents(const proto::Plan& plan) { return VerifyPlanContents(plan, PlanChecks{}); }

absl::Status VerifyPlanContents(const proto::Plan& plan, const PlanChecks& passed) {
  OF_RETURN_IF_ERROR(VerifyVersion(plan));
  OF_RETURN_IF_ERROR(VerifyPlanStructure(plan));
  if (!passed.collective_order) OF_RETURN_IF_ERROR(VerifyCollectiveOrder(plan));
  OF_RETURN_IF_ERROR(VerifyNoWaitCycle(plan));
  if (!passed.memory) OF_RETURN_IF_ERROR(VerifyMemory(plan));
  OF_RETURN_IF_ERROR(VerifyBuckets(plan));
  OF_RETURN_IF_ERROR(VerifyRecompute(plan));
  return VerifyRuntimeSupport(plan);
}

absl::Status VerifyPlan(const proto::Plan& plan) {
  OF_RETURN_IF_ERROR(VerifyVersion(plan));
  OF_RETURN_IF_ERROR(VerifyPlanChecksum(plan));
  return VerifyPlanContents(plan);
}

}  // namespace oneflow
