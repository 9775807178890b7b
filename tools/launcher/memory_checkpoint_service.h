// The MemoryCheckpoints gRPC service (proto/memory_checkpoint.proto): the daemon's RAM
// copy of its node's in-memory checkpoints and the replicas of the previous node's
// (`oneflow launch --memory_checkpoint_every=K`, docs/elastic.md).
//
// Why the daemon and not the worker holds them: a worker that dies (killed, out of
// memory, a failed collective) takes its memory with it, and that is the commonest
// failure; the daemon outlives every attempt of the job. The replica on the next node's
// daemon is what survives the loss of the whole node (its daemon included).
//
// Memory: per scope and owner node the two newest iterations, so a daemon holds at most
// four parts per scope (its own node's and the previous node's, two iterations each).
// The launch drops the scope when it ends.
#ifndef TOOLS_LAUNCHER_MEMORY_CHECKPOINT_SERVICE_H_
#define TOOLS_LAUNCHER_MEMORY_CHECKPOINT_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/memory_checkpoint.grpc.pb.h"
#include "tools/launcher/auth.h"

namespace oneflow::launcher {

// The pieces a part is sent in: 1 MiB of shard bytes each, under gRPC's default 4 MiB
// receive limit on either side.
inline constexpr int64_t kMemoryCheckpointPieceBytes = 1 << 20;

// How many iterations of one owner node a daemon keeps per scope.
inline constexpr int kMemoryCheckpointsKept = 2;

class MemoryCheckpointService final : public proto::MemoryCheckpoints::Service {
 public:
  explicit MemoryCheckpointService(std::shared_ptr<const TokenAuthorizer> authorizer);

  grpc::Status Put(grpc::ServerContext* context, grpc::ServerReader<proto::MemoryCheckpointPiece>* reader,
                   proto::MemoryPutResponse* response) override;
  grpc::Status List(grpc::ServerContext* context, const proto::MemoryListRequest* request,
                    proto::MemoryListResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const proto::MemoryGetRequest* request,
                   grpc::ServerWriter<proto::MemoryCheckpointPiece>* writer) override;
  grpc::Status Drop(grpc::ServerContext* context, const proto::MemoryDropRequest* request,
                    proto::MemoryDropResponse* response) override;

  // Bytes of shards held over every scope (tests, the daemon's log).
  int64_t held_bytes() const;

 private:
  struct Part {
    proto::CheckpointManifest part;
    std::vector<int64_t> saving_nodes;
    // Shared: a Get streams it without holding the lock or copying it.
    std::shared_ptr<const std::string> data;
  };
  std::shared_ptr<const TokenAuthorizer> authorizer_;
  mutable absl::Mutex mutex_;
  // scope -> owner node -> iteration -> part.
  std::map<std::string, std::map<int64_t, std::map<int64_t, Part>>> scopes_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_MEMORY_CHECKPOINT_SERVICE_H_
