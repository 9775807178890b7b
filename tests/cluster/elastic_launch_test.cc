// Losing a node without losing the job (docs/elastic.md): `oneflow launch --spare_nodes`
// on loopback daemons. An mlp on 3 nodes x 1 device (dp=3) checkpoints every 10
// iterations; node 1's daemon is SIGKILLed mid-run (its worker dies with it); the launch
// finds the daemon gone, gives node 1's rank to the spare, and resumes from the newest
// checkpoint: every iteration's final loss is the uninterrupted run's, the first line
// trained again carries the recovery, `oneflow status` of the recovered job shows it, and
// no worker is left. A worker killed with no --max_restarts left sends its node to the
// spare too. Spares that could not take over are refused before anything trains;
// a damaged newest checkpoint passed over is named.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;

const std::vector<std::string>& Mlp() {
  static const std::vector<std::string> flags = {"--batch=48", "--hidden=128", "--layers=3", "--compression=off"};
  return flags;
}

std::string ThreeNodePlan(const std::string& name) {
  std::vector<std::string> flags = Mlp();
  flags.insert(flags.end(), {"--nodes=3", "--devices_per_node=1", "--dp=3"});
  return CompilePlan("mlp", flags, name);
}

TEST(ElasticLaunchTest, SpareTakesTheRankOfAKilledDaemon) {
  constexpr int kIterations = 300;
  const std::string job = JobId("spare");
  const std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", Mlp(), "mlp-1device"), kIterations);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  const std::string plan = ThreeNodePlan("mlp-3x1");
  const std::string dir = TempPath("spare-checkpoints");
  Daemons daemons(4);  // 0..2 run the job, 3 is the spare.
  ASSERT_EQ(daemons.size(), 4);
  std::unique_ptr<Process> launch =
      Launch(daemons, plan, kIterations, job,
             {"--checkpoint_dir=" + dir, "--checkpoint_every=10", "--spare_nodes=" + daemons.address(3),
              "--collective_timeout_s=20"},
             daemons.Nodes(0, 3));
  ASSERT_TRUE(WaitForStderr(*launch, "iter-00000010 complete")) << launch->Stderr();
  daemons.Signal(1, SIGKILL);  // Its worker dies with it (PR_SET_PDEATHSIG).
  ASSERT_TRUE(launch->Wait(milliseconds(180000))) << launch->Stderr();
  const std::string stderr_text = launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << stderr_text;
  EXPECT_NE(stderr_text.find(absl::StrCat("recovery: node 1 (", daemons.address(1), ") lost (daemon unreachable): spare ",
                                          daemons.address(3), " takes its place; resuming from disk checkpoint ", dir,
                                          "/iter-")),
            std::string::npos)
      << stderr_text;
  EXPECT_NE(stderr_text.find("job '" + job + "-restart1' on 3 nodes, resuming from " + dir + "/iter-"),
            std::string::npos)
      << stderr_text;

  // Every iteration printed; the last print of each is final and the uninterrupted run's.
  std::map<int, double> last;
  int recovery_lines = 0;
  int resumed_at = -1;
  for (const std::string& line : launch->StdoutLines()) {
    const int iteration = IterationOf(line);
    if (iteration < 0) continue;
    if (line.find("\"node_step_ms\": ") != std::string::npos && line.find("\"1\": ") == std::string::npos) {
      // An iteration of the failed attempt whose report went down with node 1: the line of
      // the nodes whose reports arrived (node 2 alone when node 0's was also still on its
      // way when the job failed), printed before the recovery, and a warning whose missing
      // nodes include node 1 ("... only: node 1 (ADDRESS)'s report never arrived ...").
      EXPECT_EQ(recovery_lines, 0) << line;
      EXPECT_EQ(line.find("\"node_step_ms\": {}"), std::string::npos) << line;
      bool names_node_1 = false;
      for (const absl::string_view warning : absl::StrSplit(stderr_text, '\n')) {
        const size_t at = warning.find(" are from the other nodes only: ");
        if (at == absl::string_view::npos) continue;
        const absl::string_view missing = warning.substr(at, warning.find(" never arrived") - at);
        if (absl::StrContains(missing, "node 1 (")) names_node_1 = true;
      }
      EXPECT_TRUE(names_node_1) << line << "\n" << stderr_text;
    }
    if (line.find("\"recovery\": ") != std::string::npos) {
      ++recovery_lines;
      EXPECT_EQ(JsonValue(line, "cause"), "\"daemon unreachable\"") << line;
      EXPECT_EQ(JsonValue(line, "node"), "1") << line;
      EXPECT_EQ(JsonValue(line, "from"), "\"disk\"") << line;
      resumed_at = std::stoi(JsonValue(line, "iteration"));
      EXPECT_EQ(resumed_at, iteration) << "the recovery is reported on the first iteration trained again: " << line;
      EXPECT_GT(std::stod(JsonValue(line, "seconds")), 0) << line;
    }
    last[iteration] = Losses({line})[0];
  }
  EXPECT_EQ(recovery_lines, 1);
  EXPECT_GE(resumed_at, 10);
  EXPECT_EQ(resumed_at % 10, 0) << "resumed at " << resumed_at << ", not at a checkpoint";
  // Every iteration is printed: those whose report the killed daemon's node took with it
  // come from the survivors' reports (node_step_ms without node 1, and a warning).
  EXPECT_EQ(last.size(), static_cast<size_t>(kIterations));
  for (const auto& [iteration, loss] : last) {
    EXPECT_NEAR(loss, reference[iteration], 1e-4 * std::abs(reference[iteration]) + 1e-6) << "iteration " << iteration;
  }

  // `oneflow status` of the recovered job, on its nodes: the spare holds rank 1.
  Process status({Runfile("tools/cli/oneflow"), "status", job + "-restart1",
                  absl::StrCat("--nodes=", daemons.address(0), ",", daemons.address(3), ",", daemons.address(2)),
                  "--token_file=" + daemons.token_file()});
  ASSERT_TRUE(status.Wait(milliseconds(30000)));
  EXPECT_EQ(status.exit_code(), 0) << status.Stderr();
  const std::string status_text = absl::StrJoin(status.StdoutLines(), "\n");
  EXPECT_NE(status_text.find(absl::StrCat("recovered: node 1 (", daemons.address(1), ") lost (daemon unreachable)")),
            std::string::npos)
      << status_text;
  Process status_json({Runfile("tools/cli/oneflow"), "status", job + "-restart1", "--format=json",
                       absl::StrCat("--nodes=", daemons.address(0), ",", daemons.address(3), ",", daemons.address(2)),
                       "--token_file=" + daemons.token_file()});
  ASSERT_TRUE(status_json.Wait(milliseconds(30000)));
  const std::string json_text = absl::StrJoin(status_json.StdoutLines(), "\n");
  EXPECT_NE(json_text.find("\"recoveries\": ["), std::string::npos) << json_text;
  EXPECT_NE(json_text.find("\"cause\": \"daemon unreachable\""), std::string::npos) << json_text;
  EXPECT_NE(json_text.find(absl::StrCat("\"iteration\": ", resumed_at)), std::string::npos) << json_text;
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

// A worker killed on a node whose daemon lives, with no --max_restarts to retry it there:
// the node counts as lost ("worker failed") and the spare takes its rank.
TEST(ElasticLaunchTest, KilledWorkerWithNoRestartsLeftGoesToTheSpare) {
  constexpr int kIterations = 300;
  const std::string job = JobId("spare-worker");
  const std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", Mlp(), "mlp-1device-w"), kIterations);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  const std::string dir = TempPath("spare-worker-checkpoints");
  Daemons daemons(4);
  ASSERT_EQ(daemons.size(), 4);
  std::unique_ptr<Process> launch =
      Launch(daemons, ThreeNodePlan("mlp-3x1-w"), kIterations, job,
             {"--checkpoint_dir=" + dir, "--checkpoint_every=10", "--spare_nodes=" + daemons.address(3)},
             daemons.Nodes(0, 3));
  ASSERT_TRUE(WaitForStderr(*launch, "iter-00000010 complete")) << launch->Stderr();
  const pid_t victim = WorkerPid(job, 2);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_TRUE(launch->Wait(milliseconds(180000))) << launch->Stderr();
  ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
  EXPECT_NE(launch->Stderr().find(absl::StrCat("recovery: node 2 (", daemons.address(2), ") lost (worker failed): spare ",
                                               daemons.address(3), " takes its place")),
            std::string::npos)
      << launch->Stderr();
  std::map<int, double> last;
  for (const std::string& line : launch->StdoutLines()) {
    if (IterationOf(line) >= 0) last[IterationOf(line)] = Losses({line})[0];
  }
  ASSERT_EQ(last.size(), static_cast<size_t>(kIterations));
  for (const auto& [iteration, loss] : last) {
    EXPECT_NEAR(loss, reference[iteration], 1e-4 * std::abs(reference[iteration]) + 1e-6) << "iteration " << iteration;
  }
  EXPECT_TRUE(NoWorkersLeft(job, milliseconds(10000)));
  EXPECT_TRUE(NoWorkersLeft(job + "-restart1", milliseconds(10000)));
}

TEST(ElasticLaunchTest, SparesThatCouldNotTakeOverAreRefusedBeforeTraining) {
  const std::string plan = ThreeNodePlan("mlp-3x1-bad");
  const std::string dir = TempPath("bad-spare-checkpoints");
  Daemons daemons(3);
  const std::string other_token = launcher::testing::WriteTokenFile("another-token-1234");
  Daemons stranger(1, {"--token_file=" + other_token});
  ASSERT_EQ(stranger.size(), 1);
  struct Case {
    std::string spares;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"127.0.0.1:1", "--spare_nodes: spare 127.0.0.1:1 unreachable"},
      {stranger.address(0), absl::StrCat("--spare_nodes: spare ", stranger.address(0), " refused the token")},
      {daemons.address(2), absl::StrCat("--spare_nodes: spare ", daemons.address(2), " is also in --nodes")},
  };
  for (const Case& bad : cases) {
    const std::string job = JobId("bad-spare");
    std::unique_ptr<Process> launch = Launch(
        daemons, plan, 4, job, {"--checkpoint_dir=" + dir, "--checkpoint_every=2", "--spare_nodes=" + bad.spares});
    ASSERT_TRUE(launch->Wait(milliseconds(60000)));
    EXPECT_EQ(launch->exit_code(), 1) << launch->Stderr();
    EXPECT_NE(launch->Stderr().find(bad.expected), std::string::npos) << launch->Stderr();
    // Refused before any node got the job.
    EXPECT_EQ(launch->Stderr().find("oneflow launch: job '"), std::string::npos) << launch->Stderr();
    EXPECT_TRUE(launch->StdoutLines().empty());
  }
  std::unique_ptr<Process> no_checkpoints =
      Launch(daemons, plan, 4, JobId("no-ck"), {"--spare_nodes=" + stranger.address(0)});
  ASSERT_TRUE(no_checkpoints->Wait(milliseconds(60000)));
  EXPECT_EQ(no_checkpoints->exit_code(), 1);
  EXPECT_NE(no_checkpoints->Stderr().find("--spare_nodes needs --checkpoint_dir"), std::string::npos)
      << no_checkpoints->Stderr();
}

// A truncated manifest of the newest checkpoint: the resume passes over it to the one
// before, and the launch names it.
TEST(ElasticLaunchTest, DamagedNewestCheckpointIsNamedWhenSkipped) {
  constexpr int kIterations = 8;
  const std::vector<double> reference = RunInOneProcess(CompilePlan("mlp", Mlp(), "mlp-1device-short"), kIterations);
  std::vector<std::string> flags = Mlp();
  flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=1", "--dp=2"});
  const std::string plan = CompilePlan("mlp", flags, "mlp-2x1");
  const std::string dir = TempPath("damaged-checkpoints");
  Daemons daemons(2);
  std::unique_ptr<Process> save =
      Launch(daemons, plan, 5, JobId("damaged-save"), {"--checkpoint_dir=" + dir, "--checkpoint_every=2"});
  ASSERT_TRUE(save->Wait(milliseconds(120000)));
  ASSERT_EQ(save->exit_code(), 0) << save->Stderr();
  const std::string newest = dir + "/iter-00000004";
  const std::filesystem::path manifest = std::filesystem::path(newest) / "manifest.pb";
  ASSERT_TRUE(std::filesystem::exists(manifest));
  std::filesystem::resize_file(manifest, std::filesystem::file_size(manifest) / 2);

  std::unique_ptr<Process> resume =
      Launch(daemons, plan, kIterations, JobId("damaged-resume"), {"--resume_from=" + dir});
  ASSERT_TRUE(resume->Wait(milliseconds(120000)));
  ASSERT_EQ(resume->exit_code(), 0) << resume->Stderr();
  EXPECT_NE(resume->Stderr().find("oneflow launch: warning: checkpoint " + newest + " is damaged and skipped ("),
            std::string::npos)
      << resume->Stderr();
  EXPECT_NE(resume->Stderr().find("resuming from " + dir + "/iter-00000002"), std::string::npos) << resume->Stderr();
  const std::vector<double> losses = Losses(resume->StdoutLines());
  ASSERT_EQ(losses.size(), static_cast<size_t>(kIterations - 2)) << resume->Stderr();
  for (size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], reference[i + 2], 1e-4 * std::abs(reference[i + 2]) + 1e-6) << "iteration " << i + 2;
  }
}

}  // namespace
}  // namespace oneflow::testing
