// "host:port" addresses as the launcher's flags and RunOptions spell them: a name or an
// IPv4 address ("node1:5001", "127.0.0.1:0"), or a bracketed IPv6 address ("[::1]:5001").
#ifndef TOOLS_LAUNCHER_ADDRESS_H_
#define TOOLS_LAUNCHER_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow::launcher {

struct HostPort {
  std::string host;  // As written, brackets kept for IPv6 ("[::1]").
  int port = 0;      // 0..65535; 0 asks a server to pick one.
};

// INVALID_ARGUMENT naming `what` (e.g. "--listen") and the text when it is not host:port
// with a port in 0..65535 and a non-empty host.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, absl::string_view what);

// True for the wildcard hosts a server listens on for every interface ("0.0.0.0", "[::]",
// "::", ""), which are no address to give a peer.
bool IsWildcardHost(absl::string_view host);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_ADDRESS_H_
