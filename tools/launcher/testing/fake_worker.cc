// A stand-in for oneflow_worker in the launcher's tests: it takes exactly the flags of
// the worker contract (docs/launcher.md), meets the job's other workers through the
// rendezvous, keeps the status file, writes events, and then behaves as the plan's job
// name says (the daemon passes no other flags, so the plan carries the test's wishes):
//
//   "fake:BEHAVIOR[;nodeN=BEHAVIOR]..."   BEHAVIOR for every node, or node N's own
//     finish            every iteration, then Finished, exit 0
//     crash_after=K     K iterations, then SIGKILL itself
//     fail=MESSAGE      one iteration, then Failed{MESSAGE}, exit 1
//     peer_failed=MESSAGE  one iteration, then Failed{MESSAGE, caused_by_peer}, exit 1: a
//                       survivor that noticed another node's failure
//     crash_after_ms=T  one iteration, then T ms, then SIGKILL itself
//     exit=C            one iteration, then exit C without a terminal event
//     hang              one iteration, then sleep until killed (SIGTERM ends it)
//     hang_after=K      K iterations (at most --iters), then sleep until killed: a job
//                       that runs until cancelled, with a known iteration
//     hang_ignore_term  the same, ignoring SIGTERM (only SIGKILL ends it)
//
// Iteration i reports loss 10/(i+1) + 0.5*node and step_ms 5 + node, and completes
// kCollectivesPerIteration collectives on each of the node's devices. It prints its pid
// ("fake worker pid P on node N") and its command line as output lines.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "plan/plan_io.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/rendezvous_client.h"
#include "tools/launcher/testing/test_plans.h"
#include "tools/launcher/worker_events.h"
#include "tools/launcher/worker_status_file.h"

ABSL_FLAG(std::string, plan, "", "");
ABSL_FLAG(std::string, job_id, "", "");
ABSL_FLAG(int64_t, node_rank, -1, "");
ABSL_FLAG(int64_t, iters, 0, "");
ABSL_FLAG(std::string, rendezvous, "", "");
ABSL_FLAG(std::string, token_file, "", "");
ABSL_FLAG(std::string, tls_ca, "", "");
ABSL_FLAG(double, collective_timeout_s, 0, "");
ABSL_FLAG(std::string, worker_host, "", "");
ABSL_FLAG(int32_t, events_fd, -1, "");
ABSL_FLAG(std::string, status_file, "", "");

namespace oneflow::launcher::testing {
namespace {

std::string BehaviorFor(const std::string& job_name, int64_t node) {
  std::vector<std::string> parts = absl::StrSplit(job_name, ';');
  std::string behavior(absl::StripPrefix(parts[0], "fake:"));
  const std::string prefix = absl::StrCat("node", node, "=");
  for (size_t i = 1; i < parts.size(); ++i) {
    if (absl::StartsWith(parts[i], prefix)) behavior = parts[i].substr(prefix.size());
  }
  return behavior;
}

int Fail(WorkerEventWriter& events, const std::string& reason, bool caused_by_peer = false) {
  proto::JobEvent event;
  event.mutable_failed()->set_reason(reason);
  event.mutable_failed()->set_caused_by_peer(caused_by_peer);
  (void)events.Write(event);
  return 1;
}

int Main(int argc, char** argv) {
  std::vector<std::string> command_line(argv + 1, argv + argc);
  absl::ParseCommandLine(argc, argv);
  const int64_t node = absl::GetFlag(FLAGS_node_rank);
  std::printf("fake worker pid %d on node %lld\n", static_cast<int>(getpid()), static_cast<long long>(node));
  std::printf("fake worker flags: %s\n", absl::StrJoin(command_line, " ").c_str());
  std::fflush(stdout);
  if (absl::GetFlag(FLAGS_events_fd) < 0) {
    std::fprintf(stderr, "fake worker: no --events_fd\n");
    return 2;
  }
  WorkerEventWriter events(absl::GetFlag(FLAGS_events_fd));
  // Every flag of the contract must come (tls_ca only with TLS).
  for (const char* missing :
       {absl::GetFlag(FLAGS_plan).empty() ? "--plan" : nullptr, absl::GetFlag(FLAGS_job_id).empty() ? "--job_id" : nullptr,
        node < 0 ? "--node_rank" : nullptr, absl::GetFlag(FLAGS_iters) < 1 ? "--iters" : nullptr,
        absl::GetFlag(FLAGS_rendezvous).empty() ? "--rendezvous" : nullptr,
        absl::GetFlag(FLAGS_token_file).empty() ? "--token_file" : nullptr,
        absl::GetFlag(FLAGS_collective_timeout_s) <= 0 ? "--collective_timeout_s" : nullptr,
        absl::GetFlag(FLAGS_worker_host).empty() ? "--worker_host" : nullptr,
        absl::GetFlag(FLAGS_status_file).empty() ? "--status_file" : nullptr}) {
    if (missing != nullptr) return Fail(events, absl::StrCat("fake worker: missing ", missing));
  }
  absl::StatusOr<proto::Plan> plan = ReadPlanFile(absl::GetFlag(FLAGS_plan));
  if (!plan.ok()) return Fail(events, std::string(plan.status().message()));
  const std::vector<int64_t> devices = NodeDeviceIndices(*plan, node);
  absl::StatusOr<std::unique_ptr<WorkerStatusFile>> status =
      WorkerStatusFile::Create(absl::GetFlag(FLAGS_status_file), devices);
  if (!status.ok()) return Fail(events, std::string(status.status().message()));

  // Meet the other nodes' workers, as a real worker's communicators would.
  absl::StatusOr<std::string> token = ReadTokenFile(absl::GetFlag(FLAGS_token_file));
  if (!token.ok()) return Fail(events, std::string(token.status().message()));
  RendezvousClientOptions rendezvous_options;
  rendezvous_options.address = absl::GetFlag(FLAGS_rendezvous);
  rendezvous_options.job_id = absl::GetFlag(FLAGS_job_id);
  rendezvous_options.token = *token;
  rendezvous_options.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  absl::StatusOr<std::unique_ptr<RendezvousClient>> store = RendezvousClient::Create(rendezvous_options);
  if (!store.ok()) return Fail(events, std::string(store.status().message()));
  std::vector<std::string> keys;
  for (int64_t n = 0; n < plan->cluster().num_nodes(); ++n) keys.push_back(absl::StrCat("fake/node", n));
  absl::Status met = (*store)->Set(keys[node], absl::GetFlag(FLAGS_worker_host));
  if (met.ok()) met = (*store)->Wait(keys, absl::Seconds(absl::GetFlag(FLAGS_collective_timeout_s)));
  if (met.ok()) met = (*store)->Add("fake/arrived", 1).status();
  if (!met.ok()) return Fail(events, absl::StrCat("node ", node, " rendezvous: ", met.message()));

  const std::string behavior = BehaviorFor(plan->job().name(), node);
  int64_t iterations = absl::GetFlag(FLAGS_iters);
  int64_t crash_after = -1;
  if (absl::StartsWith(behavior, "crash_after=")) {
    if (!absl::SimpleAtoi(behavior.substr(12), &crash_after)) return Fail(events, "bad crash_after");
  } else if (absl::StartsWith(behavior, "hang_after=")) {
    int64_t before_hang = 0;
    if (!absl::SimpleAtoi(behavior.substr(11), &before_hang)) return Fail(events, "bad hang_after");
    iterations = std::min(iterations, before_hang);
  } else if (behavior != "finish") {
    iterations = 1;
  }
  if (behavior == "hang_ignore_term") signal(SIGTERM, SIG_IGN);
  for (int64_t i = 0; i < iterations; ++i) {
    if (i == crash_after) raise(SIGKILL);
    for (size_t slot = 0; slot < devices.size(); ++slot) {
      (*status)->SetCompletedCollectives(static_cast<int>(slot), (i + 1) * kCollectivesPerIteration);
      (*status)->SetCompletedIterations(static_cast<int>(slot), i + 1);
    }
    absl::SleepFor(absl::Milliseconds(5));
    proto::JobEvent event;
    event.mutable_metrics()->set_iteration(i);
    event.mutable_metrics()->set_loss(10.0 / static_cast<double>(i + 1) + 0.5 * static_cast<double>(node));
    event.mutable_metrics()->set_step_ms(5.0 + static_cast<double>(node));
    event.mutable_metrics()->set_samples_per_s(1.0);
    if (!events.Write(event).ok()) return 1;
  }
  if (crash_after >= 0) raise(SIGKILL);  // crash_after >= iterations: crash at the end.
  if (absl::StartsWith(behavior, "fail=")) return Fail(events, behavior.substr(5));
  if (absl::StartsWith(behavior, "peer_failed=")) return Fail(events, behavior.substr(12), /*caused_by_peer=*/true);
  if (absl::StartsWith(behavior, "crash_after_ms=")) {
    int64_t milliseconds = 0;
    if (!absl::SimpleAtoi(behavior.substr(15), &milliseconds)) return Fail(events, "bad crash_after_ms");
    absl::SleepFor(absl::Milliseconds(milliseconds));
    raise(SIGKILL);
  }
  if (absl::StartsWith(behavior, "exit=")) {
    int code = 0;
    return absl::SimpleAtoi(behavior.substr(5), &code) ? code : 2;
  }
  if (absl::StartsWith(behavior, "hang")) {
    std::fprintf(stderr, "fake worker on node %lld hangs\n", static_cast<long long>(node));
    while (true) pause();
  }
  if (behavior != "finish") return Fail(events, absl::StrCat("fake worker: unknown behavior '", behavior, "'"));
  proto::JobEvent finished;
  finished.mutable_finished();
  return events.Write(finished).ok() ? 0 : 1;
}

}  // namespace
}  // namespace oneflow::launcher::testing

int main(int argc, char** argv) { return oneflow::launcher::testing::Main(argc, argv); }
