#include "tools/launcher/server.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "grpcpp/server_builder.h"
#include "tools/launcher/address.h"
#include "tools/launcher/credentials.h"

namespace oneflow::launcher {

absl::StatusOr<StartedServer> StartGrpcServer(const ServerOptions& options,
                                              const std::vector<grpc::Service*>& services) {
  absl::StatusOr<HostPort> listen = ParseHostPort(options.address, "--listen");
  if (!listen.ok()) return listen.status();
  if (options.token.empty()) return absl::InvalidArgumentError("the server needs a non-empty token");
  if (options.max_receive_bytes < 1 || options.max_receive_bytes > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("the receive limit ", options.max_receive_bytes, " bytes is not in 1..", INT_MAX));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls_cert_file, options.tls_key_file);
  if (!credentials.ok()) return credentials.status();

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.address, *credentials, &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_receive_bytes));
  // Accept the clients' keepalive pings (every 10 s, also between calls) instead of
  // closing the connection as an abusive peer.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  for (grpc::Service* service : services) builder.RegisterService(service);
  StartedServer started;
  started.server = builder.BuildAndStart();
  if (started.server == nullptr || port == 0) {
    if (started.server != nullptr) started.server->Shutdown();
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.address,
        ": the port is in use, or the host is not an address of this machine"));
  }
  started.address = absl::StrCat(listen->host, ":", port);
  return started;
}

}  // namespace oneflow::launcher
