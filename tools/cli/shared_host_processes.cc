#include "tools/cli/shared_host_processes.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/transport.h"
#include "oneflow_core/status.h"
#include "tools/cli/link_calibration.h"

namespace oneflow::cli {
namespace {

std::string ReportPath(const std::string& directory, int64_t rank) {
  return absl::StrCat(directory, "/process", rank, ".txt");
}

// Process `rank` (a fork): trains its node of every plan `rounds` times, each round
// every plan in turn (so that the machine's drift over the measurement falls on every run
// alike, not on the later runs), and writes one line per run and round, run-major
// ("CPU_SECONDS WALL_SECONDS ACTS BOXING_ACTS"), or "error: MESSAGE" when a run fails.
// Never returns.
[[noreturn]] void RunProcess(int64_t rank, pid_t parent, const std::string& directory,
                             const std::vector<proto::Plan>& plans, const std::vector<SharedHostProbeRun>& runs,
                             int64_t rounds) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(3);
  std::vector<std::string> lines(runs.size() * static_cast<size_t>(rounds));
  std::string report;
  int exit_code = 0;
  for (int64_t round = 0; round < rounds && exit_code == 0; ++round) {
    for (size_t run = 0; run < runs.size(); ++run) {
      const int64_t index = static_cast<int64_t>(run) * rounds + round;
      // A directory per run: the groups of every run start from an empty store.
      FileKeyValueStore store(absl::StrCat(directory, "/run", index));
      actors::TrainOptions train;
      train.node = rank;
      train.rendezvous = &store;
      train.worker_host = "127.0.0.1";
      train.transport = kDefaultTransport;
      train.collective_timeout = absl::Seconds(60);
      absl::StatusOr<auto_parallel::RunSample> sample = RunSharedHostProbe(plans[run], runs[run], train);
      if (!sample.ok()) {
        absl::StrAppend(&report, "error: ", sample.status().ToString(), "\n");
        exit_code = 1;
        break;
      }
      lines[index] = absl::StrFormat("%.9g %.9g %d %d\n", sample->cpu_seconds, sample->wall_seconds, sample->acts,
                                     sample->boxing_acts);
    }
  }
  if (exit_code == 0) report = absl::StrJoin(lines, "");
  const std::string path = ReportPath(directory, rank);
  std::ofstream out(path + ".partial");
  out << report;
  out.close();
  // Whole or absent: the parent reads it only after this process exited.
  if (!out || std::rename((path + ".partial").c_str(), path.c_str()) != 0) _exit(2);
  _exit(exit_code);
}

// The lines of process `rank`'s report; INTERNAL with its error line or when it is missing.
absl::StatusOr<std::vector<std::string>> ReadReport(const std::string& directory, int64_t rank) {
  std::ifstream in(ReportPath(directory, rank));
  if (!in) return absl::InternalError(absl::StrCat("probe process ", rank, " left no report"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, "error: ")) {
      return absl::InternalError(absl::StrCat("probe process ", rank, " failed: ", line.substr(7)));
    }
    lines.push_back(line);
  }
  return lines;
}

// Kills and reaps every child still running.
void KillRemaining(const std::vector<pid_t>& children, std::vector<bool>& done) {
  for (size_t k = 0; k < children.size(); ++k) {
    if (!done[k]) kill(children[k], SIGKILL);
  }
  for (size_t k = 0; k < children.size(); ++k) {
    if (done[k]) continue;
    while (waitpid(children[k], nullptr, 0) < 0 && errno == EINTR) {
    }
    done[k] = true;
  }
}

// Waits for every child; the first that fails (or the deadline) kills the others, whose
// collectives would otherwise wait for it until their timeout.
absl::Status WaitForProcesses(const std::vector<pid_t>& children, const std::string& directory) {
  std::vector<bool> done(children.size(), false);
  size_t finished = 0;
  const absl::Time deadline = absl::Now() + kProcessProbeDeadline;
  while (finished < children.size()) {
    for (size_t k = 0; k < children.size(); ++k) {
      if (done[k]) continue;
      int status = 0;
      const pid_t reaped = waitpid(children[k], &status, WNOHANG);
      if (reaped != children[k]) continue;
      done[k] = true;
      ++finished;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      KillRemaining(children, done);
      // Its own error when it wrote one, else how it ended.
      absl::StatusOr<std::vector<std::string>> report = ReadReport(directory, static_cast<int64_t>(k));
      if (!report.ok() && absl::StrContains(report.status().message(), " failed: ")) return report.status();
      return absl::InternalError(absl::StrCat("probe process ", k, " ended with wait status ", status));
    }
    if (absl::Now() > deadline) {
      KillRemaining(children, done);
      return absl::DeadlineExceededError(absl::StrCat("the ", children.size(), " probe processes did not finish in ",
                                                      absl::FormatDuration(kProcessProbeDeadline)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SharedHostProbe> MeasureSharedHostInProcesses(int64_t processes, int64_t cores,
                                                             bool data_parallel_only, int64_t rounds_per_run) {
  if (processes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the shared host is measured across processes for 2 or more of them, not ", processes));
  }
  if (cores < 1) return absl::InvalidArgumentError(absl::StrCat("cores must be >= 1, not ", cores));
  if (rounds_per_run < 1) {
    return absl::InvalidArgumentError(absl::StrCat("each probe run needs 1 or more rounds, not ", rounds_per_run));
  }
  std::vector<SharedHostProbeRun> runs = SharedHostProbeRuns(processes);
  if (data_parallel_only) {
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [](const SharedHostProbeRun& run) { return run.tensor_parallel; }),
               runs.end());
  }
  std::vector<proto::Plan> plans;
  for (const SharedHostProbeRun& run : runs) {
    OF_ASSIGN_OR_RETURN(proto::Plan plan, CompileSharedHostProbe(processes, 1, run));
    plans.push_back(std::move(plan));
  }
  const std::string talk = KeepProcessesOnTcp("collectives");
  OF_ASSIGN_OR_RETURN(const std::unique_ptr<MeetingDirectory> meeting,
                      MeetingDirectory::Create("oneflow_process_probe"));
  // The forks below leave with _exit: only this process removes it.
  const std::string& directory = meeting->path();
  const int64_t rounds = static_cast<int64_t>(runs.size()) * rounds_per_run;
  for (int64_t index = 0; index < rounds; ++index) {
    const std::string run_directory = absl::StrCat(directory, "/run", index);
    if (mkdir(run_directory.c_str(), 0700) != 0) {
      return absl::InternalError(absl::StrCat("cannot create ", run_directory, ": ", std::strerror(errno)));
    }
  }
  const pid_t parent = getpid();
  std::vector<pid_t> children;
  for (int64_t rank = 0; rank < processes; ++rank) {
    const pid_t child = fork();
    if (child == 0) RunProcess(rank, parent, directory, plans, runs, rounds_per_run);
    if (child < 0) {
      const int error = errno;
      std::vector<bool> done(children.size(), false);
      KillRemaining(children, done);
      return absl::InternalError(absl::StrCat("cannot fork probe process ", rank, ": ", std::strerror(error)));
    }
    children.push_back(child);
  }
  OF_RETURN_IF_ERROR(WaitForProcesses(children, directory));
  // Per run and round: every process's CPU time, the mean of their wall times.
  std::vector<auto_parallel::RunSample> combined(rounds);
  for (int64_t rank = 0; rank < processes; ++rank) {
    absl::StatusOr<std::vector<std::string>> report = ReadReport(directory, rank);
    if (!report.ok()) return report.status();
    if (static_cast<int64_t>(report->size()) != rounds) {
      return absl::InternalError(
          absl::StrCat("probe process ", rank, " reported ", report->size(), " runs of ", rounds));
    }
    for (int64_t index = 0; index < rounds; ++index) {
      const std::vector<std::string> fields = absl::StrSplit((*report)[index], ' ');
      double cpu = 0, wall = 0;
      int64_t acts = 0, boxing_acts = 0;
      if (fields.size() != 4 || !absl::SimpleAtod(fields[0], &cpu) || !absl::SimpleAtod(fields[1], &wall) ||
          !absl::SimpleAtoi(fields[2], &acts) || !absl::SimpleAtoi(fields[3], &boxing_acts)) {
        return absl::InternalError(
            absl::StrCat("probe process ", rank, " reported '", (*report)[index], "'"));
      }
      auto_parallel::RunSample& sample = combined[index];
      sample.cpu_seconds += cpu;
      sample.wall_seconds += wall / static_cast<double>(processes);
      sample.acts = acts;
      sample.boxing_acts = boxing_acts;
      sample.reference = runs[index / rounds_per_run].tensor_parallel ? 1 : 0;
    }
  }
  std::vector<auto_parallel::RunSample> samples;
  std::vector<auto_parallel::RunSample> least_wall_samples;
  for (size_t run = 0; run < runs.size(); ++run) {
    const auto_parallel::RunSample* least = nullptr;
    const auto_parallel::RunSample* fastest = nullptr;
    for (int64_t round = 0; round < rounds_per_run; ++round) {
      const auto_parallel::RunSample& sample = combined[run * rounds_per_run + round];
      if (least == nullptr || sample.cpu_seconds < least->cpu_seconds) least = &sample;
      if (fastest == nullptr || sample.wall_seconds < fastest->wall_seconds) fastest = &sample;
    }
    samples.push_back(*least);
    least_wall_samples.push_back(*fastest);
  }
  OF_ASSIGN_OR_RETURN(SharedHostProbe probe,
                      FitSharedHostProbe(samples, processes, cores,
                                         absl::StrCat("as ", processes, " processes of one device each (", talk, ")"),
                                         rounds_per_run));
  probe.least_wall_samples = std::move(least_wall_samples);
  return probe;
}

}  // namespace oneflow::cli
