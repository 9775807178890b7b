// `oneflow report METRICS.jsonl [--plan=PLAN --trace=T.json]`: a training run as one
// self-contained HTML page on stdout (run_report.h for what it shows, docs/report.md for
// the user's view).
#ifndef TOOLS_CLI_REPORT_COMMAND_H_
#define TOOLS_CLI_REPORT_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

// The table entry main.cc dispatches to; owns --plan and shares --trace with run and inspect.
Subcommand ReportSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_REPORT_COMMAND_H_
