// The client of the daemons' MemoryCheckpoints service (memory_checkpoint_service.h):
// the worker puts its node's part of each in-memory checkpoint on two daemons and, on a
// resume from memory, gets every node's part back; `oneflow launch` lists what the
// surviving daemons hold and drops it all when it ends.
#ifndef TOOLS_LAUNCHER_MEMORY_CHECKPOINT_CLIENT_H_
#define TOOLS_LAUNCHER_MEMORY_CHECKPOINT_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/memory_checkpoint.grpc.pb.h"

namespace oneflow::launcher {

// One node's part of an in-memory checkpoint: the manifest without the other nodes'
// shards, and the bytes of each of its shards (in the order of part.shards).
struct MemoryCheckpointPart {
  int64_t owner_node = 0;
  int64_t iteration = 0;
  proto::CheckpointManifest part;
  std::vector<int64_t> saving_nodes;
  std::vector<std::string> shards;
};

class MemoryCheckpointClient {
 public:
  // `timeout` bounds each call (a Put or Get of a large part included).
  static absl::StatusOr<std::unique_ptr<MemoryCheckpointClient>> Create(const std::string& address,
                                                                        const std::string& token,
                                                                        const std::string& tls_ca_file,
                                                                        absl::Duration timeout);

  const std::string& address() const { return address_; }

  // Errors name the daemon and the part.
  absl::Status Put(const std::string& scope, const MemoryCheckpointPart& part);
  absl::StatusOr<std::vector<proto::MemoryCheckpointEntry>> List(const std::string& scope);
  // Checks that the bytes match the part's shard sizes (DATA_LOSS otherwise); the
  // CRC-32s are checked by the checkpoint reader.
  absl::StatusOr<MemoryCheckpointPart> Get(const std::string& scope, int64_t owner_node, int64_t iteration);
  // The bytes freed.
  absl::StatusOr<int64_t> Drop(const std::string& scope);

 private:
  MemoryCheckpointClient(std::string address, std::string token, absl::Duration timeout,
                         std::unique_ptr<proto::MemoryCheckpoints::Stub> stub);
  void Prepare(grpc::ClientContext* context) const;

  std::string address_;
  std::string token_;
  absl::Duration timeout_;
  std::unique_ptr<proto::MemoryCheckpoints::Stub> stub_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_MEMORY_CHECKPOINT_CLIENT_H_
