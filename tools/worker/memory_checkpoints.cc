#include "tools/worker/memory_checkpoints.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/launcher/memory_checkpoint_client.h"

namespace oneflow::worker {

std::vector<std::string> MemoryCheckpointTargets(const std::vector<std::string>& daemons, int64_t node) {
  std::vector<std::string> targets;
  const int64_t nodes = static_cast<int64_t>(daemons.size());
  if (node < 0 || node >= nodes) return targets;
  targets.push_back(daemons[node]);
  if (nodes > 1) targets.push_back(daemons[(node + 1) % nodes]);
  return targets;
}

absl::StatusOr<MemoryCheckpointSink> MakeMemoryCheckpointSink(const MemoryCheckpointSettings& settings, int64_t node,
                                                              const std::string& token, const std::string& tls_ca_file,
                                                              std::function<void(const std::string&)> warn) {
  const std::vector<std::string> targets = MemoryCheckpointTargets(settings.daemons, node);
  if (targets.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--memory_checkpoint_daemons lists ", settings.daemons.size(),
                                                   " daemons; node ", node, " has none"));
  }
  std::vector<std::shared_ptr<launcher::MemoryCheckpointClient>> clients;
  for (const std::string& target : targets) {
    absl::StatusOr<std::unique_ptr<launcher::MemoryCheckpointClient>> client =
        launcher::MemoryCheckpointClient::Create(target, token, tls_ca_file, settings.call_timeout);
    if (!client.ok()) return client.status();
    clients.push_back(std::move(*client));
  }
  return MemoryCheckpointSink([clients, node, scope = settings.scope, warn = std::move(warn)](
                                  actors::CheckpointInMemory part, const std::vector<int64_t>& saving_nodes) {
    launcher::MemoryCheckpointPart put;
    put.owner_node = node;
    put.iteration = part.manifest.iteration();
    put.part = std::move(part.manifest);
    put.saving_nodes = saving_nodes;
    put.shards = std::move(part.shards);
    for (size_t i = 0; i < clients.size(); ++i) {
      const absl::Status status = clients[i]->Put(scope, put);
      if (!status.ok() && warn) {
        warn(absl::StrCat("warning: ", i == 0 ? "the" : "the replica of the", " in-memory checkpoint after iteration ",
                          put.iteration, " is not kept on daemon ", clients[i]->address(), ": ",
                          absl::StatusCodeToString(status.code()), ": ", status.message()));
      }
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::shared_ptr<actors::CheckpointInMemory>> FetchMemoryCheckpoint(
    const MemoryCheckpointSettings& settings, const std::string& token, const std::string& tls_ca_file) {
  auto checkpoint = std::make_shared<actors::CheckpointInMemory>();
  checkpoint->name = absl::StrCat("in-memory checkpoint after iteration ", settings.resume_iteration);
  bool first = true;
  for (size_t node = 0; node < settings.resume_holders.size(); ++node) {
    const std::string& holder = settings.resume_holders[node];
    if (holder.empty()) continue;
    absl::StatusOr<std::unique_ptr<launcher::MemoryCheckpointClient>> client =
        launcher::MemoryCheckpointClient::Create(holder, token, tls_ca_file, settings.call_timeout);
    if (!client.ok()) return client.status();
    absl::StatusOr<launcher::MemoryCheckpointPart> part =
        (*client)->Get(settings.scope, static_cast<int64_t>(node), settings.resume_iteration);
    if (!part.ok()) return part.status();
    if (first) {
      // Every part carries the whole checkpoint's tensors; the shards are each node's.
      checkpoint->manifest = part->part;
      checkpoint->manifest.clear_shards();
      first = false;
    }
    for (int s = 0; s < part->part.shards_size(); ++s) {
      *checkpoint->manifest.add_shards() = part->part.shards(s);
      checkpoint->shards.push_back(std::move(part->shards[s]));
    }
  }
  if (first) {
    return absl::InvalidArgumentError(absl::StrCat("--memory_resume_iteration=", settings.resume_iteration,
                                                   " names no daemon holding a part (--memory_resume_holders)"));
  }
  return checkpoint;
}

}  // namespace oneflow::worker
