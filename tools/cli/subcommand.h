// One subcommand of the `oneflow` tool (`inspect`, `run`, `launch`, `compile`, ...: the
// *_command.cc files and job_commands.cc), as main.cc dispatches it.
//
// main.cc owns the command line's syntax: it parses flags (absl, process-global), finds
// the subcommand by name, refuses flags that belong to another subcommand and a wrong
// number of positional arguments (usage errors, exit code 2), then calls `run`. The
// subcommand owns the meaning: it reads its flags with absl::GetFlag, does its work,
// writes its result to `out`, and returns a Status whose message main prints as
// "oneflow NAME: MESSAGE" with exit code 1.
#ifndef TOOLS_CLI_SUBCOMMAND_H_
#define TOOLS_CLI_SUBCOMMAND_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace oneflow::cli {

struct Subcommand {
  std::string name;
  // The positional arguments as usage shows them, e.g. "PLAN".
  std::string arguments;
  // The flags as usage shows them, e.g. "[--format=text|json|dot] [--device=K]".
  std::string flag_usage;
  // One line for `oneflow help`.
  std::string summary;
  // Names (without dashes) of the absl flags this subcommand reads; any other
  // subcommand's flag on its command line is a usage error.
  std::vector<std::string> flags;
  // What a flag means for this subcommand where its absl help text, shared by every
  // subcommand that reads it, would mislead (`--nodes` is a count for compile, the daemons'
  // addresses for launch). `oneflow help NAME` prints these instead.
  std::map<std::string, std::string> flag_help;
  int min_arguments = 0;
  int max_arguments = 0;
  // `arguments` are the positional arguments after the subcommand's name.
  absl::Status (*run)(const std::vector<std::string>& arguments, std::ostream& out) = nullptr;
};

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_SUBCOMMAND_H_
