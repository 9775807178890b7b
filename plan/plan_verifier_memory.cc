// The verifier's memory checks: blocks, slots, and live registers that must not share
// bytes. Every product and sum is checked for overflow, since a crafted plan can hold
// any 64-bit value.
#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plan/bucket_placement.h"
#include "plan/plan_verifier.h"
#include "plan/plan_verifier_internal.h"
#include "oneflow_core/run_tasks.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Slots of the device's activation registers and copies of its arena (plan.proto).
int64_t RegisterCountOf(const proto::Plan& plan, const proto::DevicePlan& device) {
  return device.register_count() > 0 ? device.register_count() : plan.register_count();
}

using plan_verifier_internal::DeviceText;
using plan_verifier_internal::Fail;

absl::Status VerifyBlocks(const proto::Plan& plan, const proto::DevicePlan& device, const std::string& where) {
  int workspace_block = -1;
  for (int b = 0; b < device.memory_blocks_size(); ++b) {
    const proto::MemoryBlock& block = device.memory_blocks(b);
    const std::string who = absl::StrCat(where, ": memory block ", block.id());
    // The runtime finds a register's block by position.
    if (block.id() != b) {
      return Fail(absl::StrCat(where, ": memory block at index ", b, " has id ", block.id(),
                               "; block ids are their index on the device"));
    }
    if (block.size_bytes() < 0 || block.slot_stride_bytes() < 0) {
      return Fail(absl::StrCat(who, " has size ", block.size_bytes(), " and slot stride ",
                               block.slot_stride_bytes(), "; both must be >= 0"));
    }
    if (block.copies() < 0) {
      return Fail(absl::StrCat(who, " has ", block.copies(), " copies; give >= 1, or 0 for the register_count"));
    }
    if (block.persistent() && block.slot_stride_bytes() != 0) {
      return Fail(absl::StrCat(who, " is persistent but has slot stride ", block.slot_stride_bytes(),
                               "; persistent memory has one slot"));
    }
    if (block.workspace()) {
      // The kernels' scratch: one buffer shared by the device's compute acts (plan.proto).
      if (block.persistent() || block.slot_stride_bytes() != 0) {
        return Fail(absl::StrCat(who, " is the kernels' workspace but is ",
                                 block.persistent() ? "persistent" : absl::StrCat("slotted (stride ",
                                                                                   block.slot_stride_bytes(), ")"),
                                 "; a workspace is one buffer"));
      }
      if (workspace_block >= 0) {
        return Fail(absl::StrCat(where, ": memory blocks ", workspace_block, " and ", block.id(),
                                 " are both the kernels' workspace; a device has at most one"));
      }
      workspace_block = b;
      continue;
    }
    // The arena is register_count copies of one iteration's layout (plan.proto), a block
    // with `copies` set that many.
    const int64_t copies = block.copies() > 0 ? block.copies() : RegisterCountOf(plan, device);
    const bool copies_fit = block.slot_stride_bytes() <= INT64_MAX / copies;
    if (!block.persistent() &&
        (!copies_fit || block.size_bytes() != block.slot_stride_bytes() * copies)) {
      return Fail(absl::StrCat(who, " holds ", block.size_bytes(), " bytes, but ", copies,
                               " slot copies of stride ", block.slot_stride_bytes(), " need exactly their product"));
    }
  }
  return absl::OkStatus();
}

// Registers lie inside their block, with the slot count the block's layout implies.
absl::Status VerifyRegisterPlacement(const proto::Plan& plan, const proto::DevicePlan& device,
                                     const std::string& where) {
  for (const proto::RegisterDef& reg : device.registers()) {
    // Built only for an error: a plan has hundreds of thousands of registers.
    auto who = [&] { return absl::StrCat(where, ": register ", reg.id(), " ('", reg.tensor(), "')"); };
    if (reg.memory_block() < 0 || reg.memory_block() >= device.memory_blocks_size()) {
      return Fail(absl::StrCat(who(), " is in memory block ", reg.memory_block(), ", which does not exist"));
    }
    const proto::MemoryBlock& block = device.memory_blocks(static_cast<int>(reg.memory_block()));
    if (block.workspace()) {
      return Fail(absl::StrCat(who(), " lies in memory block ", block.id(),
                               ", the kernels' workspace, which holds no register"));
    }
    const int64_t expected_count =
        block.persistent() ? 1 : block.copies() > 0 ? block.copies() : RegisterCountOf(plan, device);
    if (reg.count() != expected_count) {
      return Fail(absl::StrCat(who(), " has ", reg.count(), " slots, but registers in ",
                               block.persistent()            ? "persistent memory have 1"
                               : block.copies() > 0          ? absl::StrCat("memory block ", block.id(), " have its copies ")
                               : device.register_count() > 0 ? "the arena have the device's register_count "
                                                             : "the arena have the plan's register_count ",
                               block.persistent() ? "" : absl::StrCat(expected_count)));
    }
    if (reg.persistent() != block.persistent()) {
      return Fail(absl::StrCat(who(), reg.persistent() ? " is persistent but lies in the arena"
                                                     : " is not persistent but lies in persistent memory"));
    }
    if (reg.has_alias_of()) {
      // VerifyPlanStructure checked that alias_of names another register of the device.
      const proto::RegisterDef& source = device.registers(static_cast<int>(reg.alias_of()));
      // A bucket member's view starts alias_offset_bytes into its source (0 for others).
      if (reg.memory_block() != source.memory_block() ||
          reg.offset() != source.offset() + reg.alias_offset_bytes()) {
        const std::string part =
            reg.alias_offset_bytes() != 0 ? absl::StrCat(" byte ", reg.alias_offset_bytes(), " of") : "";
        return Fail(absl::StrCat(who(), " is a view of", part, " register ", source.id(), " but lies in memory block ",
                                 reg.memory_block(), " at offset ", reg.offset(), ", not where", part, " register ",
                                 source.id(), " lies (block ", source.memory_block(), ", offset ",
                                 source.offset() + reg.alias_offset_bytes(), ")"));
      }
    }
    const int64_t limit = block.persistent() ? block.size_bytes() : block.slot_stride_bytes();
    if (reg.offset() < 0 || reg.size_bytes() > limit || reg.offset() > limit - reg.size_bytes()) {
      return Fail(absl::StrCat(who(), " at offset ", reg.offset(), " size ", reg.size_bytes(), " x", reg.count(),
                               " does not fit memory block ", block.id(), " (", block.size_bytes(),
                               " bytes, slot stride ", block.slot_stride_bytes(), ")"));
    }
  }
  return absl::OkStatus();
}

// Per register, the register owning its bytes: itself, or the end of its chain of views
// (VerifyPlanStructure checked that chains end). Each register is walked once, so a
// crafted plan's long chain costs linear time.
std::vector<int64_t> Owners(const proto::DevicePlan& device) {
  std::vector<int64_t> owner(device.registers_size(), -1);
  std::vector<int64_t> path;
  for (int r = 0; r < device.registers_size(); ++r) {
    path.clear();
    int64_t at = r;
    while (owner[at] < 0 && device.registers(static_cast<int>(at)).has_alias_of()) {
      path.push_back(at);
      at = device.registers(static_cast<int>(at)).alias_of();
    }
    const int64_t end = owner[at] < 0 ? at : owner[at];
    owner[at] = end;
    for (int64_t view : path) owner[view] = end;
  }
  return owner;
}

// Gradients as bucket views (memory_planning_pass.cc): an all-reduce bucket's input may
// lie inside the bucket register, but only exactly at its member's view, with the view's
// size, and read by the bucket actor alone (the act then copies nothing for it, and no
// other reader sees the reduced sums in its place). Such an input owns no bytes of its
// own: the bucket register's bytes are live from its producer on. Returns, per register,
// the position from which a bucket register's bytes are live when that is earlier than
// its own producer (-1 otherwise), and -2 for each input placed in its bucket.
absl::StatusOr<std::vector<int64_t>> BucketPlacedInputs(const proto::DevicePlan& device, const std::string& where) {
  const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
  std::vector<int64_t> placed(device.registers_size(), -1);
  for (const InputInBucket& in_bucket : InputsInBuckets(device)) {
    const proto::ActorDef& actor = *in_bucket.actor;
    const proto::KernelDef& kernel = actor.kernels(0);
    const std::string& name = in_bucket.input;
    const proto::RegisterDef& input = device.registers(static_cast<int>(in_bucket.input_register));
    const proto::RegisterDef& whole = device.registers(static_cast<int>(in_bucket.bucket_register));
    const auto view_it = kernel.outputs().find(absl::StrCat("out_", name.substr(3)));
    const bool at_view = view_it != kernel.outputs().end() && view_it->second >= 0 &&
                         view_it->second < device.registers_size() &&
                         device.registers(static_cast<int>(view_it->second)).offset() == input.offset() &&
                         device.registers(static_cast<int>(view_it->second)).size_bytes() == input.size_bytes();
    const bool only_reader = input.consumer_actors_size() == 1 && input.consumer_actors(0) == actor.id();
    if (kernel.name() != "bucket_all_reduce" || !at_view || !only_reader) {
      return Fail(absl::StrCat(where, ": register ", input.id(), " ('", input.tensor(), "'), input ", name,
                               " of actor ", actor.id(), " '", actor.name(), "', lies inside its bucket register ",
                               whole.id(), ", but an input may lie there only ",
                               kernel.name() != "bucket_all_reduce" ? "in an all-reduce bucket"
                               : !at_view ? "exactly at its member's view (out_" + name.substr(3) + ")"
                                          : "when the bucket actor is its only reader",
                               " (gradients as bucket views)"));
    }
    placed[input.id()] = -2;
    const int64_t producer = input.producer_actor() - first_actor;
    int64_t& first = placed[whole.id()];
    first = first < 0 ? producer : std::min(first, producer);
  }
  return placed;
}

// Sweeps the actor positions keeping the live registers by offset: a register that
// becomes live must not touch its neighbours in that (non-overlapping) set. Bytes that a
// register owns are live until the last reader of it or of any view of it; views
// themselves own nothing, nor do bucket inputs placed in their bucket (above).
absl::Status VerifyNoLiveOverlap(const proto::DevicePlan& device, const std::string& where) {
  const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
  struct Extent {
    int64_t begin, end, first, last, id;
  };
  OF_ASSIGN_OR_RETURN(const std::vector<int64_t> placed, BucketPlacedInputs(device, where));
  const std::vector<int64_t> owner = Owners(device);
  std::vector<int64_t> last_read(device.registers_size(), -1);
  for (const proto::RegisterDef& reg : device.registers()) {
    int64_t& last = last_read[owner[reg.id()]];
    for (int64_t c : reg.consumer_actors()) last = std::max(last, c - first_actor);
  }
  std::map<int64_t, std::vector<Extent>> by_block;
  for (const proto::RegisterDef& reg : device.registers()) {
    if (reg.has_alias_of() || placed[reg.id()] == -2) continue;
    const proto::MemoryBlock& block = device.memory_blocks(static_cast<int>(reg.memory_block()));
    Extent extent{reg.offset(), reg.offset() + reg.size_bytes(), 0, 0, reg.id()};
    if (block.persistent()) {
      extent.last = device.actors_size();  // Always live.
    } else {
      extent.first = reg.producer_actor() - first_actor;
      extent.last = std::max(extent.first, last_read[reg.id()]);
      if (placed[reg.id()] >= 0) extent.first = std::min(extent.first, placed[reg.id()]);
    }
    if (reg.size_bytes() > 0) by_block[block.id()].push_back(extent);
  }
  for (auto& [block, extents] : by_block) {
    std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
      return a.first != b.first ? a.first < b.first : a.begin < b.begin;
    });
    absl::btree_map<int64_t, const Extent*> live;  // offset -> extent
    // (last position, offset) of the live extents, the earliest to end on top.
    std::priority_queue<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>,
                        std::greater<std::pair<int64_t, int64_t>>>
        ends;
    for (const Extent& extent : extents) {
      while (!ends.empty() && ends.top().first < extent.first) {
        live.erase(ends.top().second);
        ends.pop();
      }
      auto next = live.lower_bound(extent.begin);
      const Extent* clash = nullptr;
      if (next != live.end() && next->second->begin < extent.end) clash = next->second;
      if (clash == nullptr && next != live.begin() && std::prev(next)->second->end > extent.begin) {
        clash = std::prev(next)->second;
      }
      if (clash != nullptr) {
        return Fail(absl::StrCat(where, ": registers ", clash->id, " and ", extent.id,
                                 " share bytes in memory block ", block, " while both are live (actor positions ",
                                 clash->first, "-", clash->last, " and ", extent.first, "-", extent.last, ")"));
      }
      live[extent.begin] = &extent;
      ends.push({extent.last, extent.begin});
    }
  }
  return absl::OkStatus();
}

// Every kernel's declared scratch fits the device's workspace block, and only compute
// acts, which run one at a time on the device's compute thread, share it.
absl::Status VerifyKernelWorkspaces(const proto::DevicePlan& device, const std::string& where) {
  int64_t workspace = -1;
  for (const proto::MemoryBlock& block : device.memory_blocks()) {
    if (block.workspace()) workspace = block.size_bytes();
  }
  for (const proto::ActorDef& actor : device.actors()) {
    for (const proto::KernelDef& kernel : actor.kernels()) {
      if (kernel.workspace_bytes() == 0) continue;
      const std::string who = absl::StrCat(where, ": actor ", actor.id(), " '", actor.name(), "' kernel '",
                                           kernel.name(), "'");
      if (kernel.workspace_bytes() < 0) {
        return Fail(absl::StrCat(who, " declares ", kernel.workspace_bytes(), " bytes of workspace; it must be >= 0"));
      }
      if (actor.thread() != proto::THREAD_COMPUTE) {
        return Fail(absl::StrCat(who, " declares a workspace but does not run on the compute thread, whose acts "
                                      "alone share the workspace block"));
      }
      if (workspace < kernel.workspace_bytes()) {
        return Fail(absl::StrCat(who, " declares ", kernel.workspace_bytes(), " bytes of workspace, but the device's ",
                                 workspace < 0 ? "plan has no workspace block"
                                               : absl::StrCat("workspace block holds ", workspace)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyMemory(const proto::Plan& plan) {
  if (plan.register_count() < 1) {
    return Fail(absl::StrCat("plan register_count is ", plan.register_count(), "; it must be >= 1"));
  }
  // Each device's memory is checked on its own, on threads; the first failing device in
  // device order is named.
  return RunChecksOnThreads(plan.devices_size(), [&plan](int d) -> absl::Status {
    const proto::DevicePlan& device = plan.devices(d);
    const std::string where = absl::StrCat("device ", DeviceText(device.device()));
    if (device.register_count() < 0) {
      return Fail(absl::StrCat(where, ": register_count is ", device.register_count(), "; it must be >= 0"));
    }
    OF_RETURN_IF_ERROR(VerifyBlocks(plan, device, where));
    OF_RETURN_IF_ERROR(VerifyRegisterPlacement(plan, device, where));
    OF_RETURN_IF_ERROR(VerifyNoLiveOverlap(device, where));
    OF_RETURN_IF_ERROR(VerifyKernelWorkspaces(device, where));
    if (device.peak_bytes() < device.lower_bound_bytes()) {
      return Fail(absl::StrCat(where, ": peak ", device.peak_bytes(), " bytes is below the lower bound ",
                               device.lower_bound_bytes()));
    }
    return absl::OkStatus();
  });
}

}  // namespace oneflow
