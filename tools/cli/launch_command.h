// `oneflow launch PLAN --nodes=H1:P1,H2:P2,... --token_file=F [--iters=N] [--metrics=FILE]
// [--tls_ca=F] [--collective_timeout_s=S] [--transport=ucx|gloo] [--job_id=ID]`: runs a plan on a cluster, one
// `oneflowd` per node (node i = the i-th --nodes entry), printing the job's metrics like
// `oneflow run` (one JSON line per iteration, or a progress bar on a terminal) and the
// workers' output on stderr as "[node N] ...". Exit 0 only when every node finished;
// SIGINT/SIGTERM cancels the job on every node first. docs/launcher.md has the details.
#ifndef TOOLS_CLI_LAUNCH_COMMAND_H_
#define TOOLS_CLI_LAUNCH_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand LaunchSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_LAUNCH_COMMAND_H_
