// The worker's side of in-memory checkpoints (`oneflow launch --memory_checkpoint_every`,
// docs/elastic.md): where its node's part of each checkpoint goes (its own daemon, and a
// replica on the next node's daemon in ring order), and the fetch of every node's part
// when the job resumes from memory.
#ifndef TOOLS_WORKER_MEMORY_CHECKPOINTS_H_
#define TOOLS_WORKER_MEMORY_CHECKPOINTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actors/checkpoint/checkpoint_format.h"

namespace oneflow::worker {

struct MemoryCheckpointSettings {
  // Every `every` iterations (0: none), under `scope`, to the daemons of `daemons` (one per
  // node, node order).
  int64_t every = 0;
  std::string scope;
  std::vector<std::string> daemons;
  // Resume from the in-memory checkpoint after `resume_iteration` iterations (0: not):
  // node i's part is on daemon `resume_holders[i]` (empty: node i saves no part).
  int64_t resume_iteration = 0;
  std::vector<std::string> resume_holders;
  // Bounds each put and get.
  absl::Duration call_timeout = absl::Seconds(120);
};

// The daemons node `node` puts its parts on: its own, then the next node's (none with one
// node). `daemons` has one entry per node.
std::vector<std::string> MemoryCheckpointTargets(const std::vector<std::string>& daemons, int64_t node);

using MemoryCheckpointSink =
    std::function<absl::Status(actors::CheckpointInMemory part, const std::vector<int64_t>& saving_nodes)>;

// CheckpointOptions.to_memory for node `node`: puts each part on its targets. A put that
// fails is a warning (`warn`), not an error: training goes on, and the launch, finding
// the part missing, falls back to the disk checkpoint.
absl::StatusOr<MemoryCheckpointSink> MakeMemoryCheckpointSink(const MemoryCheckpointSettings& settings, int64_t node,
                                                              const std::string& token, const std::string& tls_ca_file,
                                                              std::function<void(const std::string&)> warn);

// Every node's part of the in-memory checkpoint after settings.resume_iteration, from
// its holder, put together (the manifest with every node's shards). Errors name the
// daemon and the part.
absl::StatusOr<std::shared_ptr<actors::CheckpointInMemory>> FetchMemoryCheckpoint(
    const MemoryCheckpointSettings& settings, const std::string& token, const std::string& tls_ca_file);

}  // namespace oneflow::worker

#endif  // TOOLS_WORKER_MEMORY_CHECKPOINTS_H_
