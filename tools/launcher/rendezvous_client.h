// The KeyValueStore (oneflow_core/comm/key_value_store.h) of a job, kept by a Rendezvous
// server (rendezvous_service.h): what a worker hands its cross-process communicators.
//
//   RendezvousClientOptions options;
//   options.address = "10.0.0.1:5001";       // the rendezvous daemon (node 0's)
//   options.job_id = job_id;
//   options.token = *ReadTokenFile(token_file);
//   OF_ASSIGN_OR_RETURN(std::unique_ptr<RendezvousClient> store, RendezvousClient::Create(options));
//
// Every call has a deadline (rpc_timeout; a Wait its own timeout on top). Errors keep
// gRPC's code and name the server: "rendezvous server 10.0.0.1:5001: KvGet 'k':
// failed to connect to all addresses" (UNAVAILABLE: the daemon is down or unreachable).
#ifndef TOOLS_LAUNCHER_RENDEZVOUS_CLIENT_H_
#define TOOLS_LAUNCHER_RENDEZVOUS_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/key_value_store.h"
#include "proto/launcher.grpc.pb.h"

namespace oneflow::launcher {

struct RendezvousClientOptions {
  std::string address;  // host:port of the server
  std::string job_id;   // scopes every key
  std::string token;    // the shared secret (auth.h)
  // PEM certificate(s) to verify a TLS server with; empty: plaintext.
  std::string tls_ca_file;
  // Deadline of each call (beyond the wait itself for Wait).
  absl::Duration rpc_timeout = absl::Seconds(30);
  // When set, calls wait (within their deadline) for a server that is not listening yet
  // instead of failing at once with UNAVAILABLE: for workers started without a daemon,
  // where rank 0 starts the server as the others start.
  bool wait_for_server = false;
};

class RendezvousClient final : public KeyValueStore {
 public:
  // INVALID_ARGUMENT for an empty address/job/token or a bad address; the --tls_ca
  // file's errors. Does not connect (the first call does).
  static absl::StatusOr<std::unique_ptr<RendezvousClient>> Create(const RendezvousClientOptions& options);

  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  RendezvousClientOptions options_;
  std::unique_ptr<proto::Rendezvous::Stub> stub_;

  RendezvousClient(RendezvousClientOptions options, std::unique_ptr<proto::Rendezvous::Stub> stub);
  void Prepare(grpc::ClientContext* context, absl::Duration extra = absl::ZeroDuration()) const;
  absl::Status Error(const grpc::Status& status, const std::string& call) const;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_RENDEZVOUS_CLIENT_H_
