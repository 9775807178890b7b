#include "compiler/plan_verifier.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

std::string DeviceText(const proto::DeviceId& device) {
  return absl::StrCat(device.node(), ":", device.device());
}

std::string CollectiveText(const proto::CollectiveDef& collective) {
  return absl::StrCat("collective ", collective.id(), " (",
                      proto::CollectiveKind_Name(collective.kind()), " of '", collective.tensor(),
                      "', group [",
                      absl::StrJoin(collective.group(), ", ",
                                    [](std::string* out, const proto::DeviceId& d) {
                                      out->append(DeviceText(d));
                                    }),
                      "])");
}

absl::Status Fail(const std::string& message) { return absl::FailedPreconditionError(message); }

}  // namespace

absl::Status VerifyPlanStructure(const proto::Plan& plan) {
  absl::flat_hash_set<int64_t> actor_ids;
  for (const proto::DevicePlan& device : plan.devices()) {
    const std::string where = absl::StrCat("device ", DeviceText(device.device()));
    absl::flat_hash_map<int64_t, int> actor_index;
    for (int a = 0; a < device.actors_size(); ++a) {
      const proto::ActorDef& actor = device.actors(a);
      if (!actor_ids.insert(actor.id()).second) {
        return Fail(absl::StrCat(where, ": actor id ", actor.id(), " ('", actor.name(),
                                 "') is used twice in the plan"));
      }
      actor_index[actor.id()] = a;
    }
    for (int r = 0; r < device.registers_size(); ++r) {
      const proto::RegisterDef& reg = device.registers(r);
      if (reg.id() != r) {
        return Fail(absl::StrCat(where, ": register at index ", r, " has id ", reg.id(),
                                 "; register ids are their index on the device"));
      }
      auto producer = actor_index.find(reg.producer_actor());
      if (producer == actor_index.end()) {
        return Fail(absl::StrCat(where, ": register ", r, " ('", reg.tensor(), "') has producer ",
                                 reg.producer_actor(), ", which is not an actor of the device"));
      }
      const auto& produced = device.actors(producer->second).produced_registers();
      if (std::find(produced.begin(), produced.end(), r) == produced.end()) {
        return Fail(absl::StrCat(where, ": register ", r, " ('", reg.tensor(), "') names producer ",
                                 reg.producer_actor(), " but that actor does not list it"));
      }
      if (reg.count() < 1) {
        return Fail(absl::StrCat(where, ": register ", r, " ('", reg.tensor(), "') has count ",
                                 reg.count(), "; it must be >= 1"));
      }
      for (int64_t consumer : reg.consumer_actors()) {
        auto it = actor_index.find(consumer);
        const bool listed =
            it != actor_index.end() &&
            std::find(device.actors(it->second).consumed_registers().begin(),
                      device.actors(it->second).consumed_registers().end(),
                      r) != device.actors(it->second).consumed_registers().end();
        if (!listed) {
          return Fail(absl::StrCat(where, ": register ", r, " ('", reg.tensor(), "') names consumer ",
                                   consumer, ", which does not consume it on this device"));
        }
      }
    }
    for (const proto::ActorDef& actor : device.actors()) {
      for (int64_t reg : actor.consumed_registers()) {
        if (reg < 0 || reg >= device.registers_size()) {
          return Fail(absl::StrCat(where, ": actor ", actor.id(), " ('", actor.name(),
                                   "') consumes register ", reg, ", which does not exist"));
        }
      }
      for (int64_t reg : actor.produced_registers()) {
        if (reg < 0 || reg >= device.registers_size() ||
            device.registers(static_cast<int>(reg)).producer_actor() != actor.id()) {
          return Fail(absl::StrCat(where, ": actor ", actor.id(), " ('", actor.name(),
                                   "') produces register ", reg, ", which does not name it"));
        }
      }
      for (int64_t predecessor : actor.control_predecessors()) {
        auto it = actor_index.find(predecessor);
        if (it == actor_index.end() || it->second >= actor_index.at(actor.id())) {
          return Fail(absl::StrCat(where, ": actor ", actor.id(), " ('", actor.name(),
                                   "') waits for actor ", predecessor,
                                   ", which is not an earlier actor of the device"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyCollectiveOrder(const proto::Plan& plan) {
  std::map<std::pair<int64_t, int64_t>, const proto::DevicePlan*> devices;
  for (const proto::DevicePlan& device : plan.devices()) {
    devices[{device.device().node(), device.device().device()}] = &device;
  }
  // How many actors of each device issue each collective.
  std::map<std::pair<int64_t, int64_t>, absl::flat_hash_map<int64_t, int>> issuers_of;
  for (const proto::DevicePlan& device : plan.devices()) {
    auto& issuers = issuers_of[{device.device().node(), device.device().device()}];
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.collective_id() >= 0) ++issuers[actor.collective_id()];
    }
  }
  std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t> next_order;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> expected;
  for (int c = 0; c < plan.collectives_size(); ++c) {
    const proto::CollectiveDef& collective = plan.collectives(c);
    if (collective.id() != c) {
      return Fail(absl::StrCat(CollectiveText(collective), " is at index ", c,
                               "; collective ids are their index in the plan"));
    }
    std::vector<std::pair<int64_t, int64_t>> key;
    for (const proto::DeviceId& member : collective.group()) key.push_back({member.node(), member.device()});
    const int64_t order = next_order[key]++;
    if (collective.order() != order) {
      return Fail(absl::StrCat(CollectiveText(collective), " has order ", collective.order(),
                               " but is its group's collective number ", order));
    }
    for (const auto& member : key) {
      auto it = devices.find(member);
      if (it == devices.end()) {
        return Fail(absl::StrCat(CollectiveText(collective), " names device ", member.first, ":",
                                 member.second, ", which has no device plan"));
      }
      const auto& counts = issuers_of[member];
      const auto count = counts.find(c);
      const int issuers = count == counts.end() ? 0 : count->second;
      if (issuers != 1) {
        return Fail(absl::StrCat(CollectiveText(collective), " is issued by ", issuers,
                                 " actors of device ", member.first, ":", member.second,
                                 "; every member issues it exactly once"));
      }
      expected[member].push_back(c);
    }
  }
  for (const proto::DevicePlan& device : plan.devices()) {
    const std::vector<int64_t>& want = expected[{device.device().node(), device.device().device()}];
    const std::vector<int64_t> have(device.collective_order().begin(), device.collective_order().end());
    if (have != want) {
      // Find the first disagreement to name it.
      size_t i = 0;
      while (i < have.size() && i < want.size() && have[i] == want[i]) ++i;
      return Fail(absl::StrCat(
          "device ", DeviceText(device.device()), " issues collectives [", absl::StrJoin(have, ", "),
          "] but the groups it belongs to need [", absl::StrJoin(want, ", "),
          "] (in increasing id); they first differ at position ", i,
          ": devices issuing a group's collectives in different orders can deadlock"));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyMemory(const proto::Plan& plan) {
  for (const proto::DevicePlan& device : plan.devices()) {
    const std::string where = absl::StrCat("device ", DeviceText(device.device()));
    if (device.memory_blocks_size() == 0) continue;
    const int64_t first_actor = device.actors_size() > 0 ? device.actors(0).id() : 0;
    struct Extent {
      int64_t begin, end, first, last, id;
    };
    std::map<int64_t, std::vector<Extent>> by_block;
    for (const proto::RegisterDef& reg : device.registers()) {
      const auto block = std::find_if(device.memory_blocks().begin(), device.memory_blocks().end(),
                                      [&](const proto::MemoryBlock& b) { return b.id() == reg.memory_block(); });
      if (block == device.memory_blocks().end()) {
        return Fail(absl::StrCat(where, ": register ", reg.id(), " ('", reg.tensor(),
                                 "') is in memory block ", reg.memory_block(), ", which does not exist"));
      }
      const int64_t limit = block->persistent() ? block->size_bytes() : block->slot_stride_bytes();
      if (reg.offset() < 0 || reg.offset() + reg.size_bytes() > limit ||
          (!block->persistent() && reg.count() * block->slot_stride_bytes() > block->size_bytes())) {
        return Fail(absl::StrCat(where, ": register ", reg.id(), " ('", reg.tensor(), "') at offset ",
                                 reg.offset(), " size ", reg.size_bytes(), " x", reg.count(),
                                 " does not fit memory block ", block->id(), " (", block->size_bytes(),
                                 " bytes, slot stride ", block->slot_stride_bytes(), ")"));
      }
      Extent extent{reg.offset(), reg.offset() + reg.size_bytes(), 0, 0, reg.id()};
      if (block->persistent()) {
        extent.last = device.actors_size();  // Always live.
      } else {
        extent.first = extent.last = reg.producer_actor() - first_actor;
        for (int64_t c : reg.consumer_actors()) extent.last = std::max(extent.last, c - first_actor);
      }
      if (reg.size_bytes() > 0) by_block[block->id()].push_back(extent);
    }
    // Sweep the actor positions keeping the live registers by offset: a register that
    // becomes live must not touch its neighbours in that (non-overlapping) set.
    for (auto& [block, extents] : by_block) {
      std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
        return a.first != b.first ? a.first < b.first : a.begin < b.begin;
      });
      std::map<int64_t, const Extent*> live;  // offset -> extent
      std::multimap<int64_t, int64_t> ends;    // last position -> offset
      for (const Extent& extent : extents) {
        while (!ends.empty() && ends.begin()->first < extent.first) {
          live.erase(ends.begin()->second);
          ends.erase(ends.begin());
        }
        auto next = live.lower_bound(extent.begin);
        const Extent* clash = nullptr;
        if (next != live.end() && next->second->begin < extent.end) clash = next->second;
        if (clash == nullptr && next != live.begin() && std::prev(next)->second->end > extent.begin) {
          clash = std::prev(next)->second;
        }
        if (clash != nullptr) {
          return Fail(absl::StrCat(where, ": registers ", clash->id, " and ", extent.id,
                                   " share bytes in memory block ", block,
                                   " while both are live (actor positions ", clash->first, "-",
                                   clash->last, " and ", extent.first, "-", extent.last, ")"));
        }
        live[extent.begin] = &extent;
        ends.insert({extent.last, extent.begin});
      }
    }
    if (device.peak_bytes() < device.lower_bound_bytes()) {
      return Fail(absl::StrCat(where, ": peak ", device.peak_bytes(), " bytes is below the lower bound ",
                               device.lower_bound_bytes()));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyPlan(const proto::Plan& plan) {
  if (plan.format_version() != kPlanFormatVersion) {
    return Fail(absl::StrCat("plan format version ", plan.format_version(), "; this build reads version ",
                             kPlanFormatVersion));
  }
  OF_RETURN_IF_ERROR(VerifyPlanStructure(plan));
  OF_RETURN_IF_ERROR(VerifyCollectiveOrder(plan));
  return VerifyMemory(plan);
}

}  // namespace oneflow
