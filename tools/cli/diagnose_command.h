// `oneflow diagnose DUMP... [--format=text|json]`: hangs, slow ranks and mismatched
// collectives from the workers' flight recorder dumps (diagnose.h, docs/diagnosis.md).
#ifndef TOOLS_CLI_DIAGNOSE_COMMAND_H_
#define TOOLS_CLI_DIAGNOSE_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

// The table entry main.cc dispatches to; shares --format with inspect.
Subcommand DiagnoseSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_DIAGNOSE_COMMAND_H_
