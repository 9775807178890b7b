// `oneflow inspect PLAN [--format=text|json|dot] [--device=K]`: reads a plan file and
// prints it (see inspect.h for what is printed, docs/inspect.md for the user's view).
#ifndef TOOLS_CLI_INSPECT_COMMAND_H_
#define TOOLS_CLI_INSPECT_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

// The table entry main.cc dispatches to; owns the flags --format and --device.
Subcommand InspectSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_INSPECT_COMMAND_H_
