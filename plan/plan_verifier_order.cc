// The verifier's checks of order: the static collective order, and the absence of a
// wait cycle among the acts of one iteration.
#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/plan_verifier.h"
#include "plan/plan_verifier_internal.h"

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
  // Each distinct device id of the plan gets a slot (two device plans naming the same
  // device share it), under which its issuers are counted and its expected order kept.
  std::map<std::pair<int64_t, int64_t>, int> slot_of;
  std::vector<int> device_slot(plan.devices_size());
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DeviceId& id = plan.devices(d).device();
    device_slot[d] = slot_of.emplace(std::make_pair(id.node(), id.device()), static_cast<int>(slot_of.size()))
                         .first->second;
  }
  // (collective, device slot) of every actor issuing one, sorted: the issuers of each
  // collective on each device are a range.
  std::vector<std::pair<int64_t, int>> issued;
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    for (const proto::ActorDef& actor : device.actors()) {
      const int64_t id = actor.collective_id();
      if (id < -1 || id >= plan.collectives_size()) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), ": ", ActorText(actor),
                                 " issues collective ", actor.collective_id(), ", which the plan lacks"));
      }
      // Transfers pair up in act order on their own thread; anything else on such a
      // thread, or a transfer on a shared one, would be ordered by nothing.
      bool transfer = false;
      if (id >= 0) {
        issued.emplace_back(id, device_slot[d]);
        transfer = plan.collectives(static_cast<int>(id)).kind() == proto::SEND_RECV;
      }
      if (transfer != (actor.thread() == proto::THREAD_TRANSFER)) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), ": ", ActorText(actor), " runs on the ",
                                 proto::ThreadKind_Name(actor.thread()), " thread but ",
                                 transfer ? "issues a send_recv transfer, which needs a THREAD_TRANSFER thread"
                                          : "issues no send_recv transfer; only transfers run on THREAD_TRANSFER"));
      }
    }
  }
  std::sort(issued.begin(), issued.end());
  for (int s = 0; s < plan.streams_size(); ++s) {
    if (plan.streams(s).id() != s) {
      return Fail(absl::StrCat("communication stream ", plan.streams(s).id(), " ('", plan.streams(s).name(),
                               "') is at index ", s, "; stream ids are their index in the plan"));
    }
  }
  const int64_t stream_count = std::max(1, plan.streams_size());
  // Per group: its stream and the first collective that put it there.
  std::map<std::vector<std::pair<int64_t, int64_t>>, std::pair<int64_t, int>> stream_of_group;
  auto issuers = issued.begin();  // At the first issuer of collective c in the loop below.
  std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t> next_order;
  std::vector<std::vector<int64_t>> expected(slot_of.size());
  std::vector<std::pair<int64_t, int64_t>> key;
  for (int c = 0; c < plan.collectives_size(); ++c) {
    const proto::CollectiveDef& collective = plan.collectives(c);
    if (collective.id() != c) {
      return Fail(absl::StrCat(CollectiveText(collective), " is at index ", c,
                               "; collective ids are their index in the plan"));
    }
    while (issuers != issued.end() && issuers->first < c) ++issuers;
    auto issuers_end = issuers;
    while (issuers_end != issued.end() && issuers_end->first == c) ++issuers_end;
    key.clear();
    for (const proto::DeviceId& member : collective.group()) key.push_back({member.node(), member.device()});
    auto next = next_order.find(key);
    if (next == next_order.end()) next = next_order.emplace(key, 0).first;
    const int64_t order = next->second++;
    if (collective.order() != order) {
      return Fail(absl::StrCat(CollectiveText(collective), " has order ", collective.order(),
                               " but is its group's collective number ", order));
    }
    if (collective.stream() < 0 || collective.stream() >= stream_count) {
      return Fail(absl::StrCat(CollectiveText(collective), " is on communication stream ", collective.stream(),
                               "; the plan has streams 0 to ", stream_count - 1));
    }
    // One communicator per group, and one thread per communicator (communicator.h): a
    // group's collectives on two streams would be issued by two threads at once.
    if (collective.kind() != proto::SEND_RECV) {
      auto [group_stream, inserted] = stream_of_group.emplace(key, std::make_pair(collective.stream(), c));
      if (!inserted && group_stream->second.first != collective.stream()) {
        return Fail(absl::StrCat(CollectiveText(collective), " is on communication stream ", collective.stream(),
                                 " but collective ", group_stream->second.second, " of the same group is on stream ",
                                 group_stream->second.first,
                                 ": a group's communicator is used from one thread, so all its collectives "
                                 "must be on one stream"));
      }
    }
    for (const auto& member : key) {
      auto it = slot_of.find(member);
      if (it == slot_of.end()) {
        return Fail(absl::StrCat(CollectiveText(collective), " names device ", member.first, ":",
                                 member.second, ", which has no device plan"));
      }
      const auto range = std::equal_range(issuers, issuers_end, std::make_pair(int64_t{c}, it->second));
      const int64_t count = range.second - range.first;
      if (count != 1) {
        return Fail(absl::StrCat(CollectiveText(collective), " is issued by ", count,
                                 " actors of device ", member.first, ":", member.second,
                                 "; every member issues it exactly once"));
      }
      // A transfer (its own thread and communicator) is in no device's order.
      if (collective.kind() != proto::SEND_RECV) expected[it->second].push_back(c);
    }
  }
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    const std::vector<int64_t>& want = expected[device_slot[d]];
    const auto& have = device.collective_order();
    std::vector<int64_t> listed(have.begin(), have.end());
    std::sort(listed.begin(), listed.end());
    if (listed != want) {
      return Fail(absl::StrCat("device ", DeviceText(device.device()), " issues collectives [",
                               absl::StrJoin(have, ", "), "] but the groups it belongs to need [",
                               absl::StrJoin(want, ", "), "], each once"));
    }
    // Collectives of different groups (or streams) may come in any order: the wait-cycle
    // proof (VerifyNoWaitCycle) decides whether that order can deadlock. Those of one
    // group come in the group's order, the same on every member.
    std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t> last_of_group;
    for (int i = 0; i < have.size(); ++i) {
      const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(have.Get(i)));
      key.clear();
      for (const proto::DeviceId& member : collective.group()) key.push_back({member.node(), member.device()});
      auto [last, inserted] = last_of_group.emplace(key, collective.id());
      if (!inserted && last->second > collective.id()) {
        return Fail(absl::StrCat("device ", DeviceText(device.device()), " issues ", CollectiveText(collective),
                                 " at position ", i, " of its order [", absl::StrJoin(have, ", "),
                                 "], after collective ", last->second, " of the same group, which the group issues "
                                 "later: members issuing a group's collectives in different orders can deadlock"));
      }
      last->second = collective.id();
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyNoWaitCycle(const proto::Plan& plan) {
  // Event k = (device d, actor position a), numbered device by device.
  const int devices = plan.devices_size();
  std::vector<int> first_event(devices);
  std::vector<int64_t> first_id(devices);
  int events_count = 0;
  for (int d = 0; d < devices; ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    first_event[d] = events_count;
    first_id[d] = device.actors_size() > 0 ? device.actors(0).id() : 0;
    events_count += device.actors_size();
  }
  auto event = [&](int d, int64_t actor_id) { return first_event[d] + static_cast<int>(actor_id - first_id[d]); };
  Events events(events_count);
  std::vector<int> issuer_of_collective(plan.collectives_size(), -1);
  for (int d = 0; d < devices; ++d) {
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
  // Each event's representative, found once rather than per edge.
  std::vector<int> representative(events_count);
  for (int k = 0; k < events_count; ++k) representative[k] = events.Find(k);
  // Edges between merged events, (from, to): `to` waits for `from`. Kept in the order
  // they are found, which the cycle named below follows.
  std::vector<std::pair<int, int>> edges;
  edges.reserve(static_cast<size_t>(events_count) * 2);
  auto edge = [&](int from, int to) { edges.emplace_back(representative[from], representative[to]); };
  for (int d = 0; d < devices; ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    for (const proto::RegisterDef& reg : device.registers()) {
      if (reg.consumer_actors().empty()) continue;
      const int producer = event(d, reg.producer_actor());
      for (int64_t consumer : reg.consumer_actors()) edge(producer, event(d, consumer));
    }
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.control_predecessors().empty()) continue;
      const int self = event(d, actor.id());
      for (int64_t predecessor : actor.control_predecessors()) edge(event(d, predecessor), self);
    }
    // Each collective after the previous one of its stream in the device's order: a
    // stream's thread issues one at a time, streams run apart.
    std::map<int64_t, int64_t> last_of_stream;
    for (int64_t id : device.collective_order()) {
      auto [last, inserted] = last_of_stream.emplace(plan.collectives(static_cast<int>(id)).stream(), id);
      if (!inserted) {
        edge(issuer_of_collective[last->second], issuer_of_collective[id]);
        last->second = id;
      }
    }
  }
  // Kahn's algorithm over the representatives, with the successors in one flat array
  // (those of k at [begin[k], begin[k + 1])): no list per event.
  std::vector<int> begin(static_cast<size_t>(events_count) + 1, 0);
  std::vector<int> pending(events_count, 0);
  for (const auto& [from, to] : edges) {
    ++begin[from + 1];
    ++pending[to];
  }
  for (int k = 0; k < events_count; ++k) begin[k + 1] += begin[k];
  std::vector<int> successors(edges.size());
  {
    std::vector<int> next(begin.begin(), begin.end() - 1);
    for (const auto& [from, to] : edges) successors[next[from]++] = to;
  }
  std::vector<int> ready;
  int representatives = 0;
  for (int k = 0; k < events_count; ++k) {
    if (representative[k] != k) continue;
    ++representatives;
    if (pending[k] == 0) ready.push_back(k);
  }
  int done = 0;
  while (!ready.empty()) {
    const int k = ready.back();
    ready.pop_back();
    ++done;
    for (int s = begin[k]; s < begin[k + 1]; ++s) {
      if (--pending[successors[s]] == 0) ready.push_back(successors[s]);
    }
  }
  if (done == representatives) return absl::OkStatus();
  // Every event left waits for another one left: walking back along waiting events
  // must revisit one, and the walk from there is a cycle. Each event's predecessors are
  // tried in the order their edges were found.
  std::vector<std::vector<int>> predecessors(events_count);
  for (const auto& [from, to] : edges) predecessors[to].push_back(from);
  int start = -1;
  for (int k = 0; k < events_count && start < 0; ++k) {
    if (representative[k] == k && pending[k] > 0) start = k;
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
    if (actor.collective_id() >= 0) {
      const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(actor.collective_id()));
      absl::StrAppend(&text, " (collective ", actor.collective_id(),
                      collective.kind() == proto::SEND_RECV ? std::string()
                                                            : absl::StrCat(", stream ", collective.stream()),
                      ")");
    }
    return text;
  };
  std::vector<std::string> names;
  for (int e : cycle) names.push_back(describe(e));
  names.push_back(describe(cycle.front()));
  return Fail(absl::StrCat("the plan would deadlock: these acts of one iteration wait for each other in a cycle: ",
                           absl::StrJoin(names, " -> ")));
}

}  // namespace oneflow
