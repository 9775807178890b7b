// Shared-token authentication for both gRPC services (Launcher and Rendezvous).
//
// Every daemon of a cluster, every client and every worker reads the same secret from a
// token file (`--token_file`); every call carries it as the metadata
// "authorization: Bearer <token>". A call without it, or with another token, gets
// UNAUTHENTICATED and is logged to stderr with the peer and the method, so an operator
// sees a misconfigured client (or a stranger) in the daemon's log.
//
// The check is one function, TokenAuthorizer::Check, called first thing by every handler
// of both services (gRPC 1.51's server interceptors cannot answer a call with a status,
// and AuthMetadataProcessor only runs on TLS channels, while the token must also guard
// plaintext ones).
#ifndef TOOLS_LAUNCHER_AUTH_H_
#define TOOLS_LAUNCHER_AUTH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/client_context.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace oneflow::launcher {

// The token in `path`, surrounding whitespace trimmed. Refused: a missing or unreadable
// file (NOT_FOUND / PERMISSION_DENIED), an empty one, one any user may read or write
// (mode & 0006: the secret would not be one; "chmod 600" fixes it), and a token with a
// character gRPC metadata cannot carry (not printable ASCII). Every message names the file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// a == b in time that depends only on the lengths, so a caller cannot find the token one
// byte at a time by timing refusals.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// Adds the token's "authorization" metadata to a client call.
void AttachToken(grpc::ClientContext* context, const std::string& token);

class TokenAuthorizer {
 public:
  // `log_prefix` starts each refusal logged to stderr ("oneflowd", "rendezvous").
  TokenAuthorizer(std::string token, std::string log_prefix);

  // OK when the call carries the token; UNAUTHENTICATED (logged) otherwise. `method` names
  // the call in the log, e.g. "Launcher.Submit".
  grpc::Status Check(const grpc::ServerContext& context, absl::string_view method) const;

 private:
  std::string expected_;  // "Bearer <token>"
  std::string log_prefix_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_AUTH_H_
