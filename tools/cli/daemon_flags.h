// The flags of every subcommand that talks to the `oneflowd` daemons (`launch`,
// `status`, `list`, `cancel`): --nodes, --token_file, --tls_ca, defined once here so that
// they mean the same everywhere.
#ifndef TOOLS_CLI_DAEMON_FLAGS_H_
#define TOOLS_CLI_DAEMON_FLAGS_H_

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"

ABSL_DECLARE_FLAG(std::string, nodes);
ABSL_DECLARE_FLAG(std::string, token_file);
ABSL_DECLARE_FLAG(std::string, tls_ca);

namespace oneflow::cli {

struct DaemonFlags {
  // The --nodes entries, node 0 first, whitespace trimmed.
  std::vector<std::string> nodes;
  // The contents of --token_file (launcher::ReadTokenFile).
  std::string token;
  std::string tls_ca_file;
};

// INVALID_ARGUMENT when --nodes is empty; the token file's errors (ReadTokenFile).
absl::StatusOr<DaemonFlags> ReadDaemonFlags();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_DAEMON_FLAGS_H_
