#include "tools/cli/daemon_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "tools/launcher/auth.h"

ABSL_FLAG(std::string, nodes, "", "HOST:PORT of each node's oneflowd, comma-separated, node 0 first.");
ABSL_FLAG(std::string, token_file, "", "File holding the daemons' shared token.");
ABSL_FLAG(std::string, tls_ca, "", "PEM certificate to verify TLS daemons with (their --tls_cert when self-signed).");

namespace oneflow::cli {

absl::StatusOr<DaemonFlags> ReadDaemonFlags() {
  DaemonFlags flags;
  for (absl::string_view entry : absl::StrSplit(absl::GetFlag(FLAGS_nodes), ',', absl::SkipWhitespace())) {
    flags.nodes.emplace_back(absl::StripAsciiWhitespace(entry));
  }
  if (flags.nodes.empty()) {
    return absl::InvalidArgumentError("--nodes=HOST:PORT,... is required: one oneflowd per node, node 0 first");
  }
  absl::StatusOr<std::string> token = launcher::ReadTokenFile(absl::GetFlag(FLAGS_token_file));
  if (!token.ok()) return token.status();
  flags.token = *std::move(token);
  flags.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  return flags;
}

}  // namespace oneflow::cli
