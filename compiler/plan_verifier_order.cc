// The verifier's checks of order: the static collective order, and the absence of a
// wait cycle among the acts of one iteration.
#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/plan_verifier.h"
#include "compiler/plan_verifier_internal.h"

namespace oneflow {
namespace {

using plan_verifier_internal::ActorText;
using plan_verifier_internal::DeviceText;
using plan_verifier_internal::Fail;

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

// Union-find over act events: the acts of one collective's members are one event.
class Events {
 public:
  explicit Events(int size) : parent_(size) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Merge(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int> parent_;
};

}  // namespace

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
      if (actor.collective_id() < -1 || actor.collective_id() >= plan.collectives_size()) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), ": ", ActorText(actor),
                                 " issues collective ", actor.collective_id(), ", which the plan lacks"));
      }
      if (actor.collective_id() >= 0) ++issuers[actor.collective_id()];
      // Transfers pair up in act order on their own thread; anything else on such a
      // thread, or a transfer on a shared one, would be ordered by nothing.
      const bool transfer = actor.collective_id() >= 0 &&
                            plan.collectives(static_cast<int>(actor.collective_id())).kind() == proto::SEND_RECV;
      if (transfer != (actor.thread() == proto::THREAD_TRANSFER)) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), ": ", ActorText(actor), " runs on the ",
                                 proto::ThreadKind_Name(actor.thread()), " thread but ",
                                 transfer ? "issues a send_recv transfer, which needs a THREAD_TRANSFER thread"
                                          : "issues no send_recv transfer; only transfers run on THREAD_TRANSFER"));
      }
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
      // A transfer (its own thread and communicator) is in no device's order.
      if (collective.kind() != proto::SEND_RECV) expected[member].push_back(c);
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

absl::Status VerifyNoWaitCycle(const proto::Plan& plan) {
  // Event k = (device d, actor position a), numbered device by device.
  std::vector<int> first_event;
  int events_count = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    first_event.push_back(events_count);
    events_count += device.actors_size();
  }
  auto event = [&](int d, int64_t actor_id) {
    return first_event[d] + static_cast<int>(actor_id - plan.devices(d).actors(0).id());
  };
  Events events(events_count);
  std::vector<int> issuer_of_collective(plan.collectives_size(), -1);
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      if (actor.collective_id() < 0) continue;
      int& issuer = issuer_of_collective[actor.collective_id()];
      const int self = event(d, actor.id());
      if (issuer < 0) {
        issuer = self;
      } else {
        events.Merge(self, issuer);
      }
    }
  }
  // Edges between merged events: what each must wait for.
  std::vector<std::vector<int>> successors(events_count), predecessors(events_count);
  auto edge = [&](int from, int to) {
    from = events.Find(from);
    to = events.Find(to);
    successors[from].push_back(to);
    predecessors[to].push_back(from);
  };
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    for (const proto::RegisterDef& reg : device.registers()) {
      for (int64_t consumer : reg.consumer_actors()) {
        edge(event(d, reg.producer_actor()), event(d, consumer));
      }
    }
    std::vector<int> issuer_at;  // collective order position -> event
    for (const proto::ActorDef& actor : device.actors()) {
      for (int64_t predecessor : actor.control_predecessors()) {
        edge(event(d, predecessor), event(d, actor.id()));
      }
    }
    for (int64_t collective : device.collective_order()) {
      issuer_at.push_back(issuer_of_collective[collective]);
    }
    for (size_t p = 1; p < issuer_at.size(); ++p) edge(issuer_at[p - 1], issuer_at[p]);
  }
  // Kahn's algorithm over the representatives.
  std::vector<int> pending(events_count, 0);
  std::vector<int> ready;
  int representatives = 0;
  for (int k = 0; k < events_count; ++k) {
    if (events.Find(k) != k) continue;
    ++representatives;
    pending[k] = static_cast<int>(predecessors[k].size());
    if (pending[k] == 0) ready.push_back(k);
  }
  int done = 0;
  while (!ready.empty()) {
    const int k = ready.back();
    ready.pop_back();
    ++done;
    for (int next : successors[k]) {
      if (--pending[next] == 0) ready.push_back(next);
    }
  }
  if (done == representatives) return absl::OkStatus();
  // Every event left waits for another one left: walking back along waiting events
  // must revisit one, and the walk from there is a cycle.
  int start = -1;
  for (int k = 0; k < events_count && start < 0; ++k) {
    if (events.Find(k) == k && pending[k] > 0) start = k;
  }
  std::vector<int> walk;
  absl::flat_hash_map<int, size_t> position;
  int k = start;
  while (!position.contains(k)) {
    position[k] = walk.size();
    walk.push_back(k);
    for (int p : predecessors[k]) {
      if (pending[p] > 0) {
        k = p;
        break;
      }
    }
  }
  std::vector<int> cycle(walk.begin() + static_cast<std::ptrdiff_t>(position[k]), walk.end());
  std::reverse(cycle.begin(), cycle.end());  // In waiting order: each waits for the previous.
  auto describe = [&](int e) {
    int d = static_cast<int>(std::upper_bound(first_event.begin(), first_event.end(), e) -
                             first_event.begin()) - 1;
    const proto::ActorDef& actor = plan.devices(d).actors(e - first_event[d]);
    std::string text = absl::StrCat("device ", DeviceText(plan.devices(d).device()), " ", ActorText(actor));
    if (actor.collective_id() >= 0) absl::StrAppend(&text, " (collective ", actor.collective_id(), ")");
    return text;
  };
  std::vector<std::string> names;
  for (int e : cycle) names.push_back(describe(e));
  names.push_back(describe(cycle.front()));
  return Fail(absl::StrCat("the plan would deadlock: these acts of one iteration wait for each other in a cycle: ",
                           absl::StrJoin(names, " -> ")));
}

}  // namespace oneflow
