// The Rendezvous gRPC service (proto/launcher.proto): the job-scoped key-value store
// that the workers of a job meet through. Every daemon serves it next to Launcher; rank 0
// of workers started without daemons (Slurm, mpirun) serves it alone through
// StartRendezvousServer. RendezvousClient (rendezvous_client.h) is its client.
//
// KvWait never pins a server thread for long: one call waits at most kMaxWaitPerCall
// (the client repeats the call for longer waits), and returns early when the client goes
// away or the server shuts down.
#ifndef TOOLS_LAUNCHER_RENDEZVOUS_SERVICE_H_
#define TOOLS_LAUNCHER_RENDEZVOUS_SERVICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "proto/launcher.grpc.pb.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/rendezvous_store.h"
#include "tools/launcher/server.h"

namespace oneflow::launcher {

// The longest one KvWait call blocks before answering DEADLINE_EXCEEDED.
inline constexpr absl::Duration kMaxWaitPerCall = absl::Seconds(30);

class RendezvousService final : public proto::Rendezvous::Service {
 public:
  explicit RendezvousService(std::shared_ptr<const TokenAuthorizer> authorizer);

  // The keys, for the daemon to drop a forgotten job's (and to end waits on shutdown).
  RendezvousStore& store() { return store_; }

  grpc::Status KvSet(grpc::ServerContext* context, const proto::KvSetRequest* request,
                     proto::KvSetResponse* response) override;
  grpc::Status KvGet(grpc::ServerContext* context, const proto::KvGetRequest* request,
                     proto::KvGetResponse* response) override;
  grpc::Status KvWait(grpc::ServerContext* context, const proto::KvWaitRequest* request,
                      proto::KvWaitResponse* response) override;
  grpc::Status KvAdd(grpc::ServerContext* context, const proto::KvAddRequest* request,
                     proto::KvAddResponse* response) override;

 private:
  std::shared_ptr<const TokenAuthorizer> authorizer_;
  RendezvousStore store_;
};

// A running server with only the Rendezvous service. Shutdown (or destruction) ends
// pending waits with UNAVAILABLE, then stops the server.
class RendezvousServer {
 public:
  RendezvousServer(std::unique_ptr<RendezvousService> service, StartedServer started);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  // host:port, the port resolved when 0 was asked for.
  const std::string& address() const { return address_; }
  void Shutdown();

 private:
  std::unique_ptr<RendezvousService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

// Starts a Rendezvous server on `options.address` (port 0: a free one), requiring
// `options.token` on every call, with TLS when the cert/key files are given.
absl::StatusOr<std::unique_ptr<RendezvousServer>> StartRendezvousServer(const ServerOptions& options);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_RENDEZVOUS_SERVICE_H_
