// Checks that memory reuse never makes an actor wait for a collective it should run beside:
// the plan's control predecessors (memory_planning_pass.cc) against the last readers of what
// a watched actor (a gradient bucket, a reduction running early) produces.
#ifndef TESTS_REUSE_WAIT_TESTING_H_
#define TESTS_REUSE_WAIT_TESTING_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "proto/plan.pb.h"

namespace oneflow::testing {

// The actors of `device` that wait (a control predecessor: the last readers of memory
// their outputs reuse) for one of `watched` (actor ids) before the last reader of what it
// produces, its registers' views included: "NAME waits for actor P before its output's
// last reader R". Empty when none does.
inline std::vector<std::string> WaitsBeforeLastReader(const proto::DevicePlan& device,
                                                      const absl::flat_hash_set<int64_t>& watched) {
  absl::flat_hash_map<int64_t, int64_t> last_reader;
  for (int64_t actor : watched) last_reader[actor] = actor;
  for (const proto::RegisterDef& reg : device.registers()) {
    const int64_t producer = reg.has_alias_of()
                                 ? device.registers(static_cast<int>(reg.alias_of())).producer_actor()
                                 : reg.producer_actor();
    auto it = last_reader.find(producer);
    if (it == last_reader.end()) continue;
    for (int64_t reader : reg.consumer_actors()) it->second = std::max(it->second, reader);
  }
  std::vector<std::string> waits;
  for (const proto::ActorDef& actor : device.actors()) {
    for (int64_t predecessor : actor.control_predecessors()) {
      auto it = last_reader.find(predecessor);
      if (it == last_reader.end() || actor.id() > it->second) continue;
      waits.push_back(absl::StrCat(actor.name(), " waits for actor ", predecessor, " before its output's last reader ",
                                   it->second));
    }
  }
  return waits;
}

}  // namespace oneflow::testing

#endif  // TESTS_REUSE_WAIT_TESTING_H_
