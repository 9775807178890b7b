// `oneflow list`, `oneflow status JOB` and `oneflow cancel JOB`: what the `oneflowd`
// daemons of a cluster are running, asked of every --nodes entry at once
// (tools/launcher/job_control.h), with the flags and the errors of `oneflow launch`.
//
//   oneflow list   --nodes=H:P,... --token_file=F [--tls_ca=F] [--format=text|json]
//     one line per (node, job): state, iterations done of those asked, start time
//   oneflow status --nodes=H:P,... --token_file=F [--tls_ca=F] [--format=text|json] JOB
//     the job on every node: state, iterations, worker pid, times, the reason it ended,
//     each device's last completed collective and iterations
//   oneflow cancel --nodes=H:P,... --token_file=F [--tls_ca=F] JOB
//     stops the job on every node, waits until its workers are gone, prints its status
//
// A node that cannot answer (unreachable, a wrong token, an unknown job) makes the
// command exit 1 naming the node, after printing what the other nodes said.
#ifndef TOOLS_CLI_JOB_COMMANDS_H_
#define TOOLS_CLI_JOB_COMMANDS_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand ListSubcommand();
Subcommand StatusSubcommand();
Subcommand CancelSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_JOB_COMMANDS_H_
