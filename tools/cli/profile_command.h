// `oneflow profile PLAN TRACE.json [--top=N] [--format=text|json]`: where the step of a
// traced run went (profile_report.h for what is printed, docs/profile.md for the user's
// view).
#ifndef TOOLS_CLI_PROFILE_COMMAND_H_
#define TOOLS_CLI_PROFILE_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

// The table entry main.cc dispatches to; owns --top and shares --format with inspect.
Subcommand ProfileSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_PROFILE_COMMAND_H_
