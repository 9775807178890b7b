// `oneflow`: the project's command-line tool, one subcommand per thing a user does.
//
//   oneflow inspect PLAN [--format=text|json|dot] [--device=K] [--trace=FILE.json]
//   oneflow run PLAN [--iters=N] [--metrics=FILE] [--trace=FILE.json]
//   oneflow launch PLAN --nodes=HOST:PORT,... --token_file=F [--iters=N] [--metrics=FILE] ...
//   oneflow status|list|cancel --nodes=HOST:PORT,... --token_file=F [JOB] ...
//   oneflow checkpoint DIR [--verify]
//   oneflow profile PLAN TRACE.json [--top=N] [--format=text|json]
//   oneflow report METRICS.jsonl [--plan=PLAN --trace=FILE.json] > run.html
//   oneflow calibrate [--out=FILE] [--nodes=HOST:PORT,... --token_file=F]
//   oneflow diagnose DUMP... [--format=text|json]
//   oneflow compile GRAPH.txt [--nodes=N --devices_per_node=N --dp=N --tp=N ...] [--plan_out=F]
//   oneflow help [SUBCOMMAND]       (also: oneflow SUBCOMMAND --help; oneflow --version)
//
// Exit codes: 0 success; 1 the subcommand failed (a bad file, a bad flag value, ...);
// 2 a usage error (no or unknown subcommand, a flag of another subcommand, a wrong
// number of arguments, a flag no subcommand knows). absl's own flag errors (a bad value) exit
// with 1.
//
// Adding a subcommand: write NAME_command.{h,cc} returning a Subcommand (see
// subcommand.h and inspect_command.cc), add it to Subcommands() below and its library
// to the binary's deps. docs/inspect.md has the walk-through.
#include <algorithm>
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
#include "kernels/cpu/blas_core.h"
#include "tools/cli/calibrate_command.h"
#include "tools/cli/checkpoint_command.h"
#include "tools/cli/compile_command.h"
#include "tools/cli/diagnose_command.h"
#include "tools/cli/inspect_command.h"
#include "tools/cli/job_commands.h"
#include "tools/cli/launch_command.h"
#include "tools/cli/profile_command.h"
#include "tools/cli/report_command.h"
#include "tools/cli/run_command.h"
#include "tools/cli/subcommand.h"
#include "version.h"

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
                                  DiagnoseSubcommand(), CompileSubcommand()};
  return *subcommands;
}

std::string UsageLine(const Subcommand& command) {
  return absl::StrCat("oneflow ", command.name, command.arguments.empty() ? "" : " ", command.arguments, " ",
                      command.flag_usage);
}

// The overview: one entry per subcommand; `oneflow help NAME` has its flags.
std::string Usage() {
  std::string text = "usage: oneflow SUBCOMMAND [ARGUMENTS] [--FLAG=VALUE ...]\n\nsubcommands:\n";
  for (const Subcommand& command : Subcommands()) {
    absl::StrAppend(&text, "  ", command.name, "  ", command.summary, "\n    ", UsageLine(command), "\n");
  }
  absl::StrAppend(&text,
                  "  help  this text; 'oneflow help SUBCOMMAND' (or 'oneflow SUBCOMMAND --help') prints a "
                  "subcommand's flags\n\nSee docs/first_model.md, docs/inspect.md, docs/runtime.md and "
                  "docs/launcher.md.\n");
  return text;
}

// One subcommand: its usage line, what it does, and each of its flags with its meaning
// for this subcommand and its default.
std::string SubcommandUsage(const Subcommand& command) {
  std::string text = absl::StrCat("usage: ", UsageLine(command), "\n", command.summary, "\n");
  if (command.flags.empty()) return text;
  absl::StrAppend(&text, "\nflags:\n");
  for (const std::string& flag : command.flags) {
    const absl::CommandLineFlag* found = absl::FindCommandLineFlag(flag);
    const auto own = command.flag_help.find(flag);
    const std::string help = own != command.flag_help.end() ? own->second
                             : found != nullptr            ? found->Help()
                                                           : "";
    const std::string default_value = found == nullptr ? "" : found->DefaultValue();
    absl::StrAppend(&text, "  --", flag,
                    default_value.empty() ? "" : absl::StrCat(" (default: ", default_value, ")"), "\n      ",
                    help, "\n");
  }
  return text;
}

const Subcommand* FindSubcommand(absl::string_view name) {
  for (const Subcommand& candidate : Subcommands()) {
    if (candidate.name == name) return &candidate;
  }
  return nullptr;
}

// Levenshtein distance, for "did you mean".
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `name` when it is near enough to be a typo (at most a third
// of the name's letters off), else "".
std::string Nearest(absl::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = name.size() / 3 + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = EditDistance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
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

// The first argument that is not a flag: the subcommand's name as written ("" if none).
// A flag's value given as the next argument ("--format json") is not taken for it.
std::string SubcommandOnCommandLine(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view token = argv[i];
    if (token == "--") return i + 1 < argc ? argv[i + 1] : "";
    if (!token.empty() && token[0] == '-') {
      const bool takes_next = token.find('=') == absl::string_view::npos && i + 1 < argc &&
                              FindSubcommand(argv[i + 1]) == nullptr && std::string(argv[i + 1]) != "help";
      if (takes_next) {
        // Only a non-bool flag takes the next argument as its value.
        token.remove_prefix(token.size() > 1 && token[1] == '-' ? 2 : 1);
        const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(token);
        if (flag != nullptr && !flag->IsOfType<bool>()) ++i;
      }
      continue;
    }
    return std::string(token);
  }
  return "";
}

int Main(int argc, char** argv) {
  const std::vector<std::string> flags_written = FlagNamesOnCommandLine(argc, argv);
  const std::string written = SubcommandOnCommandLine(argc, argv);
  for (const std::string& flag : flags_written) {
    if (flag == "version") {
      std::printf("oneflow %s\n", ONEFLOW_VERSION);
      return 0;
    }
    if (flag == "help" || flag == "h") {
      const Subcommand* command = FindSubcommand(written);
      std::fputs(command == nullptr ? Usage().c_str() : SubcommandUsage(*command).c_str(), stdout);
      return 0;
    }
  }
  std::vector<std::string> valid;
  for (const Subcommand& candidate : Subcommands()) valid.push_back(candidate.name);
  // A flag no subcommand reads would stop absl's parser with a bare "unknown flag"; say
  // which one was meant instead. (absl's own flags, --flagfile and the like, pass.)
  const Subcommand* written_command = FindSubcommand(written);
  for (const std::string& flag : flags_written) {
    const bool negated_bool = absl::StartsWith(flag, "no") && absl::FindCommandLineFlag(flag.substr(2)) != nullptr;
    if (absl::FindCommandLineFlag(flag) != nullptr || negated_bool) continue;
    std::vector<std::string> candidates;
    for (const Subcommand& candidate : Subcommands()) {
      if (written_command != nullptr && &candidate != written_command) continue;
      candidates.insert(candidates.end(), candidate.flags.begin(), candidate.flags.end());
    }
    const std::string nearest = Nearest(flag, candidates);
    const std::string prefix = written_command == nullptr ? "oneflow" : absl::StrCat("oneflow ", written);
    return UsageError(absl::StrCat(prefix, ": unknown flag --", flag,
                                   nearest.empty() ? "" : absl::StrCat("; did you mean --", nearest, "?")),
                      written_command);
  }
  absl::SetProgramUsageMessage("the oneflow command-line tool; run `oneflow help`");
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) return UsageError("oneflow: no subcommand given");
  const std::string name = positional[1];
  if (name == "help") {
    if (positional.size() == 2) {
      std::fputs(Usage().c_str(), stdout);
      return 0;
    }
    const Subcommand* command = FindSubcommand(positional[2]);
    if (command == nullptr || positional.size() > 3) {
      return UsageError(absl::StrCat("oneflow help: expected one of ", absl::StrJoin(valid, ", "), "; got ",
                                     absl::StrJoin(positional.begin() + 2, positional.end(), " ")));
    }
    std::fputs(SubcommandUsage(*command).c_str(), stdout);
    return 0;
  }
  const Subcommand* command = FindSubcommand(name);
  if (command == nullptr) {
    const std::string nearest = Nearest(name, valid);
    return UsageError(absl::StrCat("oneflow: unknown subcommand '", name, "'; ",
                                   nearest.empty() ? "" : absl::StrCat("did you mean '", nearest, "'? "),
                                   "valid: ", absl::StrJoin(valid, ", "), ", help"));
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

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  return oneflow::cli::Main(argc, argv);
}
