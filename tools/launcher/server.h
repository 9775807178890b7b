// Starting a gRPC server for the launcher's services: the listening address (port 0
// picks a free port, and the chosen one is reported), optional TLS, the receive limit,
// and keepalive settings matching the clients' (credentials.h).
#ifndef TOOLS_LAUNCHER_SERVER_H_
#define TOOLS_LAUNCHER_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"

namespace oneflow::launcher {

struct ServerOptions {
  // host:port to listen on; port 0: any free port (StartedServer::address has it).
  std::string address;
  // The secret every call must carry (auth.h); never empty.
  std::string token;
  // PEM files; both empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The largest request message accepted; larger ones get RESOURCE_EXHAUSTED from gRPC.
  int64_t max_receive_bytes = 4 << 20;
  // Prefix of the lines logged to stderr (refused calls).
  std::string log_name = "rendezvous";
};

struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  // host:port with the port resolved, e.g. "127.0.0.1:40123".
  std::string address;
};

// Builds and starts a server for `services` (not owned; they must outlive the server).
// Errors: INVALID_ARGUMENT for a malformed address or a bad TLS/token setting, UNAVAILABLE
// when the address cannot be bound (in use, or not this machine's).
absl::StatusOr<StartedServer> StartGrpcServer(const ServerOptions& options,
                                              const std::vector<grpc::Service*>& services);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_SERVER_H_
