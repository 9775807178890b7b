#include "tools/cli/memory_recovery.h"

#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/launcher/memory_checkpoint_client.h"

namespace oneflow::cli {

std::vector<HeldParts> ListMemoryCheckpoints(const std::vector<std::string>& addresses, const std::string& scope,
                                             const std::string& token, const std::string& tls_ca_file,
                                             absl::Duration timeout) {
  std::vector<HeldParts> held(addresses.size());
  // In parallel: the recovery's clock runs.
  std::vector<std::thread> threads;
  for (size_t i = 0; i < addresses.size(); ++i) {
    held[i].address = addresses[i];
    threads.emplace_back([&, i] {
      absl::StatusOr<std::unique_ptr<launcher::MemoryCheckpointClient>> client =
          launcher::MemoryCheckpointClient::Create(addresses[i], token, tls_ca_file, timeout);
      if (!client.ok()) return;
      absl::StatusOr<std::vector<proto::MemoryCheckpointEntry>> entries = (*client)->List(scope);
      if (entries.ok()) held[i].entries = *std::move(entries);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return held;
}

int64_t DropMemoryCheckpoints(const std::vector<std::string>& addresses, const std::string& scope,
                              const std::string& token, const std::string& tls_ca_file, absl::Duration timeout) {
  int64_t freed = 0;
  std::set<std::string> done;
  for (const std::string& address : addresses) {
    if (!done.insert(address).second) continue;
    absl::StatusOr<std::unique_ptr<launcher::MemoryCheckpointClient>> client =
        launcher::MemoryCheckpointClient::Create(address, token, tls_ca_file, timeout);
    if (!client.ok()) continue;
    absl::StatusOr<int64_t> bytes = (*client)->Drop(scope);
    if (bytes.ok()) freed += *bytes;
  }
  return freed;
}

MemoryResumePoint ChooseMemoryCheckpoint(const std::vector<HeldParts>& held, const std::vector<std::string>& daemons) {
  // iteration -> owner node -> a daemon holding its part; and the saving nodes each
  // part lists.
  std::map<int64_t, std::map<int64_t, std::string>> holders;
  std::map<int64_t, std::set<int64_t>> saving;
  for (const HeldParts& daemon : held) {
    for (const proto::MemoryCheckpointEntry& entry : daemon.entries) {
      // A node's own daemon first: the replica is the fallback.
      std::string& holder = holders[entry.iteration()][entry.owner_node()];
      const bool own = entry.owner_node() < static_cast<int64_t>(daemons.size()) &&
                       daemons[entry.owner_node()] == daemon.address;
      if (holder.empty() || own) holder = daemon.address;
      saving[entry.iteration()].insert(entry.saving_nodes().begin(), entry.saving_nodes().end());
    }
  }
  const int64_t nodes = static_cast<int64_t>(daemons.size());
  MemoryResumePoint point;
  for (auto it = holders.rbegin(); it != holders.rend(); ++it) {
    const int64_t iteration = it->first;
    std::vector<std::string> lost;
    for (int64_t node : saving[iteration]) {
      if (it->second.count(node) > 0) continue;
      const std::string own = node < nodes ? daemons[node] : "?";
      const std::string replica = nodes > 1 && node < nodes ? daemons[(node + 1) % nodes] : "";
      lost.push_back(absl::StrCat("node ", node, "'s part is lost (it was on ", own,
                                  replica.empty() ? "" : absl::StrCat(" and its replica on ", replica), ")"));
    }
    if (!lost.empty()) {
      point.incomplete.push_back(absl::StrCat("in-memory checkpoint after iteration ", iteration,
                                              " is incomplete: ", absl::StrJoin(lost, "; ")));
      continue;
    }
    point.iteration = iteration;
    point.holders.assign(static_cast<size_t>(nodes), "");
    for (const auto& [node, address] : it->second) {
      if (node >= 0 && node < nodes) point.holders[node] = address;
    }
    break;
  }
  return point;
}

}  // namespace oneflow::cli
