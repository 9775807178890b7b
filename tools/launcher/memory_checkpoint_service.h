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
// The launch drops the scope when it ends. Two bounds of the daemon's own
// (MemoryCheckpointLimits, oneflowd's --memory_checkpoint_limit_bytes and
// --memory_checkpoint_idle): a put that would take the bytes held above the limit is
// refused (RESOURCE_EXHAUSTED naming the limit; the worker warns, the launch falls back to
// an older or a disk checkpoint), and the scope of a launch killed before it could drop
// it is dropped by the first call of any launch once none of its parts was put, listed or
// fetched for the idle time.
#ifndef TOOLS_LAUNCHER_MEMORY_CHECKPOINT_SERVICE_H_
#define TOOLS_LAUNCHER_MEMORY_CHECKPOINT_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include <functional>
#include "proto/memory_checkpoint.grpc.pb.h"
#include "tools/launcher/auth.h"

namespace oneflow::launcher {

// The pieces a part is sent in: 1 MiB of shard bytes each, under gRPC's default 4 MiB
// receive limit on either side.
inline constexpr int64_t kMemoryCheckpointPieceBytes = 1 << 20;

// How many iterations of one owner node a daemon keeps per scope.
inline constexpr int kMemoryCheckpointsKept = 2;

struct MemoryCheckpointLimits {
  // Bytes of shards the daemon holds over every scope at most (0: no limit).
  int64_t limit_bytes = 0;
  // A scope none of whose parts was put, listed or fetched for this long is dropped by
  // the next call (of any scope); InfiniteDuration: never.
  absl::Duration idle = absl::InfiniteDuration();
  // The clock (tests move it) and where the drops of idle scopes are said (the daemon's
  // stderr; nothing when empty).
  std::function<absl::Time()> now = [] { return absl::Now(); };
  std::function<void(const std::string&)> log;
};

class MemoryCheckpointService final : public proto::MemoryCheckpoints::Service {
 public:
  explicit MemoryCheckpointService(std::shared_ptr<const TokenAuthorizer> authorizer,
                                   MemoryCheckpointLimits limits = {});

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
  struct Scope {
    // owner node -> iteration -> part.
    std::map<int64_t, std::map<int64_t, Part>> owners;
    absl::Time last_used;
  };
  // Drops every scope but `keep` idle for limits_.idle; marks `keep` used now.
  void DropIdleScopes(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  int64_t HeldBytes() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  static int64_t ScopeBytes(const Scope& scope);

  std::shared_ptr<const TokenAuthorizer> authorizer_;
  const MemoryCheckpointLimits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, Scope> scopes_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_MEMORY_CHECKPOINT_SERVICE_H_
