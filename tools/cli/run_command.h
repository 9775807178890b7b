// `oneflow run PLAN --iters=N [--metrics=FILE] [--trace=FILE.json]`: trains a plan on
// this machine's CPU devices, one JSON line of metrics per iteration, or a progress bar
// on a terminal. Every device is a thread pair; a plan for several nodes runs all of
// them in this process (the reference for `oneflow launch`, which runs one process per
// node).
#ifndef TOOLS_CLI_RUN_COMMAND_H_
#define TOOLS_CLI_RUN_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand RunSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_RUN_COMMAND_H_
