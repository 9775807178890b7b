// `oneflow`: the project's command-line tool, one subcommand per thing a user does.
//
//   oneflow inspect PLAN [--format=text|json|dot] [--device=K] [--trace=FILE.json]
//   oneflow run PLAN [--iters=N] [--metrics=FILE] [--trace=FILE.json]
//   oneflow launch PLAN --nodes=HOST:PORT,... --token_file=F [--iters=N] [--metrics=FILE] ...
//   oneflow status|list|cancel --nodes=HOST:PORT,... --token_file=F [JOB] ...
//   oneflow checkpoint DIR [--verify]
//   oneflow profile PLAN TRACE.json [--top=N] [--format=text|json]
//   oneflow report METRICS.jsonl [--plan=PLAN --trace=FILE.json] > run.html
//   oneflow calibrate [--out=FILE]
//   oneflow diagnose DUMP... [--format=text|json]
//   oneflow help
//
// Exit codes: 0 success; 1 the subcommand failed (a bad file, a bad flag value, ...);
// 2 a usage error (no or unknown subcommand, a flag of another subcommand, a wrong
// number of arguments). absl's own flag errors (an unknown flag) also exit with 1.
//
// Adding a subcommand: write NAME_command.{h,cc} returning a Subcommand (see
// subcommand.h and inspect_command.cc), add it to Subcommands() below and its library
// to the binary's deps. docs/inspect.md has the walk-through.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cli/calibrate_command.h"
#include "tools/cli/checkpoint_command.h"
#include "tools/cli/diagnose_command.h"
#include "tools/cli/inspect_command.h"
#include "tools/cli/job_commands.h"
#include "tools/cli/launch_command.h"
#include "tools/cli/profile_command.h"
#include "tools/cli/report_command.h"
#include "tools/cli/run_command.h"
#include "tools/cli/subcommand.h"

namespace oneflow::cli {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// In the order `oneflow help` lists them.
const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand>* const subcommands =
      new std::vector<Subcommand>{InspectSubcommand(),    RunSubcommand(),  LaunchSubcommand(),
                                  StatusSubcommand(),     ListSubcommand(), CancelSubcommand(),
                                  CheckpointSubcommand(), ProfileSubcommand(), ReportSubcommand(),
                                  CalibrateSubcommand(),
                                  DiagnoseSubcommand()};
  return *subcommands;
}

std::string UsageLine(const Subcommand& command) {
  return absl::StrCat("oneflow ", command.name, command.arguments.empty() ? "" : " ", command.arguments, " ",
                      command.flag_usage);
}

std::string Usage() {
  std::string text = "usage: oneflow SUBCOMMAND [ARGUMENTS] [--FLAG=VALUE ...]\n\nsubcommands:\n";
  for (const Subcommand& command : Subcommands()) {
    absl::StrAppend(&text, "  ", command.name, "  ", command.summary, "\n    ", UsageLine(command),
                    "\n");
    for (const std::string& flag : command.flags) {
      const absl::CommandLineFlag* found = absl::FindCommandLineFlag(flag);
      absl::StrAppend(&text, "    --", flag, ": ", found == nullptr ? "" : found->Help(), "\n");
    }
  }
  absl::StrAppend(&text, "  help  print this text\n\nSee docs/inspect.md, docs/runtime.md and docs/launcher.md.\n");
  return text;
}

// The flag names written on the command line ("--format=json" and "--format json" both
// give "format"; "--noverbose" gives "noverbose"), up to a bare "--".
std::vector<std::string> FlagNamesOnCommandLine(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    absl::string_view token = argv[i];
    if (token == "--") break;
    if (token.size() < 2 || token[0] != '-') continue;
    token.remove_prefix(token[1] == '-' ? 2 : 1);
    names.emplace_back(token.substr(0, token.find('=')));
  }
  return names;
}

bool Contains(const std::vector<std::string>& names, absl::string_view name) {
  for (const std::string& candidate : names) {
    if (candidate == name) return true;
  }
  return false;
}

// The message, then how to get it right: the subcommand's usage line, or where to look.
int UsageError(absl::string_view message, const Subcommand* command = nullptr) {
  const std::string hint = command == nullptr ? "run 'oneflow help' for the subcommands"
                                              : absl::StrCat("usage: ", UsageLine(*command));
  std::fprintf(stderr, "%s\n%s\n", std::string(message).c_str(), hint.c_str());
  return kExitUsage;
}

int Main(int argc, char** argv) {
  for (const std::string& flag : FlagNamesOnCommandLine(argc, argv)) {
    if (flag == "help" || flag == "h") {
      std::fputs(Usage().c_str(), stdout);
      return 0;
    }
  }
  absl::SetProgramUsageMessage("the oneflow command-line tool; run `oneflow help`");
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) return UsageError("oneflow: no subcommand given");
  const std::string name = positional[1];
  if (name == "help") {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  const Subcommand* command = nullptr;
  std::vector<std::string> valid;
  for (const Subcommand& candidate : Subcommands()) {
    valid.push_back(candidate.name);
    if (candidate.name == name) command = &candidate;
  }
  if (command == nullptr) {
    return UsageError(absl::StrCat("oneflow: unknown subcommand '", name,
                                   "'; valid: ", absl::StrJoin(valid, ", "), ", help"));
  }
  // absl flags are global to the process: refuse one that another subcommand reads.
  for (const std::string& flag : FlagNamesOnCommandLine(argc, argv)) {
    if (Contains(command->flags, flag)) continue;
    for (const Subcommand& other : Subcommands()) {
      if (Contains(other.flags, flag)) {
        return UsageError(
            absl::StrCat("oneflow ", name, ": --", flag, " is a flag of '", other.name, "'; '",
                         name, "' takes: --", absl::StrJoin(command->flags, ", --")),
            command);
      }
    }
  }
  const std::vector<std::string> arguments(positional.begin() + 2, positional.end());
  const int count = static_cast<int>(arguments.size());
  if (count < command->min_arguments || count > command->max_arguments) {
    return UsageError(
        absl::StrCat("oneflow ", name, ": expected ",
                     command->arguments.empty() ? std::string("no arguments") : command->arguments, ", got ",
                     count == 0 ? std::string("no arguments")
                                : absl::StrCat(count, count == 1 ? " argument: " : " arguments: ",
                                               absl::StrJoin(arguments, " "))),
        command);
  }
  const absl::Status status = command->run(arguments, std::cout);
  if (!status.ok()) {
    std::fprintf(stderr, "oneflow %s: %s\n", name.c_str(), std::string(status.message()).c_str());
    return kExitFailure;
  }
  return 0;
}

}  // namespace
}  // namespace oneflow::cli

int main(int argc, char** argv) { return oneflow::cli::Main(argc, argv); }
