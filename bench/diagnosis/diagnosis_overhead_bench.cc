// The cost of hang and slow-rank diagnosis (docs/diagnosis.md, "Cost") on training step
// time, as direct measurements rather than an end-to-end difference lost in the noise of
// a shared machine. An mlp with dp=2 over 2 nodes x 1 device runs through two local
// daemons, alternately with diagnosis off (the workers' ONEFLOW_FLIGHT_RECORDER=off;
// `oneflow launch --hang_seconds=0 --slow_factor=0`: no heartbeats, no stop sampling)
// and on (the defaults), --rounds times each. In every run, between iterations 300 and
// iters - 300:
//   - step_ms: the median of the run's step_ms;
//   - the CPU time per wall second of the threads diagnosis adds: each worker's
//     heartbeat thread ("of-heartbeat") and each daemon's stop sampler ("of-stop-sample"),
//     from /proc/PID/task/TID/schedstat (nanoseconds on the CPU);
//   - the CPU time per wall second of the daemons and of the launch as whole processes
//     (the sum of their threads' schedstat). Most of it is per iteration (each iteration's
//     metrics line travels worker -> daemon -> launch), so it is modelled as
//     a x iterations/s + b: a from the off runs (b = 0 there), and b, what sending,
//     receiving and judging heartbeats costs (the daemon's Heartbeat runs on a gRPC
//     thread, the launch's monitor on its event loop), from each on run;
// and after every run, in this process on the same plan: the flight recorder's cost per
// collective act, a trivial act wrapped by FlightRecorder::Wrap (Begin, End and the
// progress sink's stores into a real status file) against the same act unwrapped.
//
// The figures, one JSON line each: recording = acts per step x ns per act / step time
// (on the step's critical path); heartbeats = the added CPU per wall second of one
// node's worker, its daemon and half the launch (two estimates below, the larger
// taken), as a share of one core: the most it can take from a step is that share of
// the step's time.
//
//   bazel run -c opt //bench/diagnosis:diagnosis_overhead_bench [-- --rounds=3 --iters=4000]
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actors/engine.h"
#include "actors/flight_recorder.h"
#include "bench/lib/statistics.h"
#include "gtest/gtest.h"
#include "plan/collective_groups.h"
#include "plan/plan_io.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double StepMs(const std::vector<std::string>& lines, int from, int to) {
  std::vector<double> steps;
  for (const std::string& line : lines) {
    const int iteration = IterationOf(line);
    const size_t at = line.find("\"step_ms\": ");
    if (iteration >= from && iteration < to && at != std::string::npos) steps.push_back(std::stod(line.substr(at + 11)));
  }
  return Median(steps);
}

std::string ReadText(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The fields of /proc/PID/stat after the command's closing parenthesis (field 3 first).
std::vector<std::string> StatFields(pid_t pid) {
  const std::string text = ReadText(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = text.rfind(')');
  std::vector<std::string> fields;
  if (paren == std::string::npos) return fields;
  std::istringstream rest(text.substr(paren + 2));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

pid_t ParentOf(pid_t pid) {
  const std::vector<std::string> fields = StatFields(pid);
  return fields.size() > 1 ? std::atoi(fields[1].c_str()) : -1;
}

// On-CPU ns of the threads of `pid` named `name` (all of them for ""), from each
// thread's schedstat (first field): nanoseconds, where /proc/PID/stat has clock ticks.
// A thread that ended between two readings takes its time with it; the daemons' and
// the launch's threads live as long as the run.
int64_t ThreadsCpuNs(pid_t pid, const std::string& name = "") {
  int64_t total = 0;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  DIR* directory = opendir(tasks.c_str());
  if (directory == nullptr) return 0;
  while (const dirent* entry = readdir(directory)) {
    if (entry->d_name[0] == '.') continue;
    if (!name.empty()) {
      std::string comm = ReadText(absl::StrCat(tasks, "/", entry->d_name, "/comm"));
      while (!comm.empty() && comm.back() == '\n') comm.pop_back();
      if (comm != name) continue;
    }
    total += std::atoll(ReadText(absl::StrCat(tasks, "/", entry->d_name, "/schedstat")).c_str());
  }
  closedir(directory);
  return total;
}

struct CpuSnapshot {
  Clock::time_point at;
  int64_t worker_heartbeat_ns = 0;  // both workers
  int64_t daemon_sampler_ns = 0;    // both daemons
  int64_t daemons_ns = 0;
  int64_t launch_ns = 0;
};

CpuSnapshot TakeCpu(const std::vector<pid_t>& workers, const std::vector<pid_t>& daemons, pid_t launch) {
  CpuSnapshot snapshot;
  snapshot.at = Clock::now();
  for (const pid_t worker : workers) snapshot.worker_heartbeat_ns += ThreadsCpuNs(worker, "of-heartbeat");
  for (const pid_t daemon : daemons) {
    snapshot.daemon_sampler_ns += ThreadsCpuNs(daemon, "of-stop-sample");
    snapshot.daemons_ns += ThreadsCpuNs(daemon);
  }
  snapshot.launch_ns = ThreadsCpuNs(launch);
  return snapshot;
}

// Per wall second, per node (2 nodes; the launch is shared by both).
struct CpuPerSecond {
  double worker_heartbeat_us = 0, daemon_sampler_us = 0, daemon_us = 0, half_launch_us = 0;
};

CpuPerSecond PerSecond(const CpuSnapshot& a, const CpuSnapshot& b) {
  const double seconds = std::chrono::duration<double>(b.at - a.at).count();
  const double per_node = 2 * seconds * 1000;  // ns -> us per second per node
  return {(b.worker_heartbeat_ns - a.worker_heartbeat_ns) / per_node,
          (b.daemon_sampler_ns - a.daemon_sampler_ns) / per_node, (b.daemons_ns - a.daemons_ns) / per_node,
          (b.launch_ns - a.launch_ns) / per_node};
}

class NoRegisters : public actors::ActContext {
 public:
  void* RegisterSlot(int64_t, int64_t) const override { return nullptr; }
};

// ns per collective act that the flight recorder and its progress sink add, on node 0's
// first device of `plan`, and that device's collective acts per iteration.
std::pair<double, int> RecordingNsPerAct(const proto::Plan& plan, const std::string& status_path) {
  const std::vector<int64_t> local = launcher::NodeDeviceIndices(plan, 0);
  // As the worker keeps it: a group record per (device, group).
  const CollectiveGroups groups = CollectiveGroupsOf(plan);
  std::vector<std::vector<int>> slot_groups;
  for (const int64_t d : local) slot_groups.push_back(groups.of_device[d]);
  absl::StatusOr<std::unique_ptr<launcher::WorkerStatusFile>> status = launcher::WorkerStatusFile::Create(
      status_path, local, /*heartbeat_ms=*/0, slot_groups);
  if (!status.ok() || local.empty()) return {0, 0};
  actors::FlightRecorder recorder(plan, 0);
  recorder.SetProgressSink([&](const actors::FlightRecorder::Progress& progress) {
    const int slot = progress.device_index == local[0] ? 0 : -1;
    (*status)->SetCollectiveActivity(slot, progress.entered, progress.collective_id, progress.collective_ns);
    if (progress.group >= 0) {
      (*status)->SetGroupActivity(slot, progress.group, progress.group_entered, progress.group_completed,
                                  progress.group_collective);
    }
  });
  const int device = static_cast<int>(local[0]);
  std::vector<actors::ActFunction> plain, wrapped;
  volatile int64_t sink = 0;
  for (const proto::ActorDef& actor : plan.devices(device).actors()) {
    const auto& order = plan.devices(device).collective_order();
    if (actor.collective_id() < 0 ||
        std::find(order.begin(), order.end(), actor.collective_id()) == order.end()) {
      continue;
    }
    actors::ActFunction act = [&sink](int64_t iteration, const actors::ActContext&) {
      sink = sink + iteration;
      return absl::OkStatus();
    };
    plain.push_back(act);
    wrapped.push_back(recorder.Wrap({&plan, device, &actor}, act));
  }
  if (plain.empty()) return {0, 0};
  const NoRegisters context;
  auto time_ns = [&](std::vector<actors::ActFunction>& acts) {
    constexpr int64_t kIterations = 200000;
    const auto start = Clock::now();
    for (int64_t i = 0; i < kIterations; ++i) {
      for (actors::ActFunction& act : acts) act(i, context).IgnoreError();
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / (kIterations * acts.size());
  };
  std::vector<double> differences;
  for (int repeat = 0; repeat < 5; ++repeat) differences.push_back(time_ns(wrapped) - time_ns(plain));
  return {Median(differences), plan.devices(device).collective_order_size()};
}

TEST(DiagnosisBench, OverheadOfFlightRecorderAndHeartbeats) {
  if (getenv("TEST_TMPDIR") == nullptr) {
    char directory[] = "/tmp/diagnosis-bench-XXXXXX";
    ASSERT_NE(mkdtemp(directory), nullptr);
    setenv("TEST_TMPDIR", directory, 1);
  }
  const int rounds = BenchFlag("rounds", 3), iterations = std::max(BenchFlag("iters", 4000), 2000);
  const int from = 300, to = iterations - 1000;
  const std::string model = "mlp --batch=64 --hidden=256 --layers=4, 2 nodes x 1 device, dp=2";
  const std::string plan_path = CompilePlan(
      "mlp", {"--batch=64", "--hidden=256", "--layers=4", "--compression=off", "--nodes=2", "--devices_per_node=1",
              "--dp=2"},
      "bench-mlp");
  absl::StatusOr<proto::Plan> plan = ReadPlanFile(plan_path);
  ASSERT_TRUE(plan.ok()) << plan.status();
  setenv("ONEFLOW_FLIGHT_RECORDER", "off", 1);
  Daemons off(2);
  unsetenv("ONEFLOW_FLIGHT_RECORDER");
  Daemons on(2);
  std::vector<double> step_ms[2], record_ns, worker_beat_us, sampler_us, daemon_us[2], launch_us[2], rate[2];
  std::vector<double> idle_daemon_us[2], idle_launch_us[2], idle_sampler_us;
  int acts_per_step = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const bool diagnosis : {false, true}) {
      std::vector<std::string> extra;
      // On: the defaults, but a hang (the workers are stopped below) only warns.
      extra = diagnosis ? std::vector<std::string>{"--hang_action=warn"}
                        : std::vector<std::string>{"--hang_seconds=0", "--slow_factor=0"};
      const std::string job = absl::StrCat("bench-", getpid(), "-", round, diagnosis ? "-on" : "-off");
      std::unique_ptr<Process> launch = Launch(diagnosis ? on : off, plan_path, iterations, job, extra);
      ASSERT_TRUE(launch->WaitForLine([&](const std::string& line) { return IterationOf(line) >= from; },
                                      milliseconds(300000)))
          << launch->Stderr();
      std::vector<pid_t> workers, daemons;
      for (int node = 0; node < 2; ++node) {
        workers.push_back(WorkerPid(job, node));
        daemons.push_back(ParentOf(workers.back()));
      }
      const CpuSnapshot start = TakeCpu(workers, daemons, launch->pid());
      ASSERT_TRUE(launch->WaitForLine([&](const std::string& line) { return IterationOf(line) >= to; },
                                      milliseconds(300000)))
          << launch->Stderr();
      const CpuSnapshot end = TakeCpu(workers, daemons, launch->pid());
      const CpuPerSecond cpu = PerSecond(start, end);
      rate[diagnosis].push_back((to - from) / std::chrono::duration<double>(end.at - start.at).count());
      // Both workers stopped: no metrics travel, only heartbeats (on; the stop sampler
      // at its fast rate) or nothing (off).
      for (const pid_t worker : workers) kill(worker, SIGSTOP);
      std::this_thread::sleep_for(milliseconds(500));
      const CpuSnapshot idle_start = TakeCpu(workers, daemons, launch->pid());
      std::this_thread::sleep_for(milliseconds(4000));
      const CpuPerSecond idle = PerSecond(idle_start, TakeCpu(workers, daemons, launch->pid()));
      for (const pid_t worker : workers) kill(worker, SIGCONT);
      idle_daemon_us[diagnosis].push_back(idle.daemon_us);
      if (diagnosis) idle_sampler_us.push_back(idle.daemon_sampler_us);
      idle_launch_us[diagnosis].push_back(idle.half_launch_us);
      ASSERT_TRUE(launch->Wait(milliseconds(300000)));
      ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
      step_ms[diagnosis].push_back(StepMs(launch->StdoutLines(), from, to));
      daemon_us[diagnosis].push_back(cpu.daemon_us);
      launch_us[diagnosis].push_back(cpu.half_launch_us);
      if (diagnosis) {
        worker_beat_us.push_back(cpu.worker_heartbeat_us);
        sampler_us.push_back(cpu.daemon_sampler_us);
        const auto [ns, acts] = RecordingNsPerAct(*plan, TempPath(absl::StrCat("bench-status-", round)));
        record_ns.push_back(ns);
        acts_per_step = acts;
      }
    }
  }
  const double step_off = Median(step_ms[0]), step_on = Median(step_ms[1]);
  std::printf(
      "{\"bench\": \"diagnosis_overhead\", \"figure\": \"step_ms\", \"model\": \"%s\", \"iterations\": %d, "
      "\"rounds\": %d, \"off\": %.4f, \"on\": %.4f, \"end_to_end_pct\": %.2f, \"off_runs\": [%s], \"on_runs\": [%s]}\n",
      model.c_str(), iterations, rounds, step_off, step_on, 100 * (step_on - step_off) / step_off,
      absl::StrJoin(step_ms[0], ", ").c_str(), absl::StrJoin(step_ms[1], ", ").c_str());
  const double ns_per_act = Median(record_ns);
  const double recording_pct = 100 * acts_per_step * ns_per_act / (step_on * 1e6);
  std::printf(
      "{\"bench\": \"diagnosis_overhead\", \"figure\": \"recording\", \"ns_per_act\": %.1f, \"acts_per_step\": %d, "
      "\"pct_of_step\": %.4f, \"runs_ns\": [%s]}\n",
      ns_per_act, acts_per_step, recording_pct, absl::StrJoin(record_ns, ", ").c_str());
  // Per node and wall second. Daemons and launch: the CPU per iteration of the off runs
  // (a), and what each on run spent beyond a x its iterations/s (b).
  auto added = [&](const std::vector<double>* cpu) {
    std::vector<double> per_iteration, extra;
    for (size_t i = 0; i < cpu[0].size(); ++i) per_iteration.push_back(cpu[0][i] / rate[0][i]);
    const double a = Median(per_iteration);
    for (size_t i = 0; i < cpu[1].size(); ++i) extra.push_back(cpu[1][i] - a * rate[1][i]);
    return std::make_pair(a, Median(extra));
  };
  const double beat = Median(worker_beat_us), sampler = Median(sampler_us);
  const auto [daemon_per_iteration, daemon_added] = added(daemon_us);
  const auto [launch_per_iteration, launch_added] = added(launch_us);
  // The heartbeats' CPU per node and second, two ways, the larger taken: (1) measured
  // while both workers are stopped, when heartbeats are all the daemons and the launch
  // have to do: on minus off, with the stop sampler's CPU at its fast rate (a stopped
  // worker) replaced by its CPU in the running phase, plus the worker's heartbeat
  // thread; (2) the threads plus two messages a second, each costing what an
  // iteration's metrics message costs the daemon and the launch (their CPU per
  // iteration of the off runs; an upper bound: a metrics message also crosses the
  // worker's pipe and is printed). The running on-off difference b is printed too: it
  // is within the noise of the daemons' and the launch's CPU per iteration (~15%
  // between runs), so it is no figure.
  const double idle_daemon = Median(idle_daemon_us[1]) - Median(idle_daemon_us[0]);
  const double idle_launch = Median(idle_launch_us[1]) - Median(idle_launch_us[0]);
  const double fast_sampler = Median(idle_sampler_us);
  const double by_stopped = beat + std::max(0.0, idle_daemon - fast_sampler + sampler) + std::max(0.0, idle_launch);
  const double by_message = beat + sampler + 2 * (daemon_per_iteration + launch_per_iteration);
  const double heartbeat_us = std::max(by_stopped, by_message);
  std::printf(
      "{\"bench\": \"diagnosis_overhead\", \"figure\": \"heartbeat_cpu_us_per_s_per_node\", "
      "\"worker_heartbeat_thread\": %.1f, \"daemon_stop_sampler_thread\": %.1f, "
      "\"daemon_stop_sampler_thread_fast\": %.1f, \"stopped_daemon_off\": %.0f, \"stopped_daemon_on\": %.0f, "
      "\"stopped_half_launch_off\": %.0f, \"stopped_half_launch_on\": %.0f, \"by_stopped\": %.0f, "
      "\"daemon_us_per_iteration\": %.2f, \"half_launch_us_per_iteration\": %.2f, \"by_message\": %.0f, "
      "\"running_daemon_added\": %.0f, \"running_half_launch_added\": %.0f, \"iterations_per_s_off\": [%s], "
      "\"iterations_per_s_on\": [%s]}\n",
      beat, sampler, fast_sampler, Median(idle_daemon_us[0]), Median(idle_daemon_us[1]), Median(idle_launch_us[0]),
      Median(idle_launch_us[1]), by_stopped, daemon_per_iteration, launch_per_iteration, by_message, daemon_added,
      launch_added, absl::StrJoin(rate[0], ", ").c_str(), absl::StrJoin(rate[1], ", ").c_str());
  // A share of a core taken by other threads takes at most that share of a step's time.
  std::printf(
      "{\"bench\": \"diagnosis_overhead\", \"figure\": \"overhead_pct_of_step\", \"recording\": %.4f, "
      "\"heartbeats_at_most\": %.4f, \"total_at_most\": %.4f, \"goal\": 1}\n",
      recording_pct, heartbeat_us / 1e4, recording_pct + heartbeat_us / 1e4);
}

}  // namespace
}  // namespace oneflow::testing
