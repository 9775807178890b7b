// `oneflow calibrate --nodes`: alpha and beta of both link levels measured between two
// real oneflowd daemons on 127.0.0.1 (running the real worker), written atomically to the
// calibration file the compiler reads, and read back by its parser; and the bad inputs
// (one node, an unreachable node, a wrong token, an unknown transport) refused with a
// message naming what was wrong, leaving an existing file as it was and no worker behind.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sbp/calibration.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"
#include "tools/launcher/testing/daemon_process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// True once no measuring worker runs, within `timeout`. A refused calibrate may exit while
// a daemon still ends the worker it started: when node 1 is unreachable, node 0's stream is
// cut before its daemon reported the job started, and the daemon cancels the job when it
// notices (launch_client.cc, CancelEverywhere), after the client is gone. Under load that
// took longer than the check right after the exit (CI, 2 cores); what must hold is that
// the worker does not outlive its cancellation, as NoWorkersLeft checks for launches.
bool NoMeasuringWorkerWithin(milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ProcessesWithArgument("--measure_links").empty()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true;
}

std::unique_ptr<Process> Calibrate(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {Runfile("tools/cli/oneflow"), "calibrate"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return std::make_unique<Process>(argv);
}

std::vector<std::string> FilesIn(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Seconds the cost model charges for a cross-process all-reduce of `bytes` per rank over
// 2 ranks (sbp/collective_cost.h, flat): one round up to 64 KiB, two beyond.
double InterNodeSeconds(const LinkLevelMeasurement& link, double bytes) {
  return bytes <= 64 * 1024 ? link.latency_seconds + bytes / link.bytes_per_second
                            : 2 * link.latency_seconds + bytes / link.bytes_per_second;
}

class CalibrateNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemons_ = std::make_unique<Daemons>(2);
    ASSERT_EQ(daemons_->size(), 2);
    // One directory per test: each checks that nothing but its own files is there.
    directory_ = TempPath(absl::StrCat("calibrate_nodes_",
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(directory_);
  }

  // Runs calibrate with `flags`; expects it refused (exit 1) with `message` in its error,
  // the file at `out` untouched, and no measuring worker left.
  void ExpectRefused(const std::vector<std::string>& flags, const std::string& message, const std::string& what) {
    const std::string out = absl::StrCat(directory_, "/kept.jsonl");
    std::ofstream(out) << "earlier contents\n";
    std::vector<std::string> all = flags;
    all.push_back("--out=" + out);
    std::unique_ptr<Process> calibrate = Calibrate(all);
    ASSERT_TRUE(calibrate->Wait(milliseconds(60000))) << what;
    EXPECT_EQ(calibrate->exit_code(), 1) << what;
    EXPECT_THAT(calibrate->Stderr(), HasSubstr(message)) << what;
    EXPECT_EQ(Contents(out), "earlier contents\n") << what;
    EXPECT_EQ(FilesIn(directory_), std::vector<std::string>{"kept.jsonl"}) << what;
    EXPECT_TRUE(NoMeasuringWorkerWithin(milliseconds(10000))) << what;
  }

  std::unique_ptr<Daemons> daemons_;
  std::string directory_;
};

TEST_F(CalibrateNodesTest, MeasuresBothLevelsBetweenTheDaemons) {
  const std::string out = absl::StrCat(directory_, "/cluster.jsonl");
  std::unique_ptr<Process> calibrate =
      Calibrate({daemons_->Nodes(), "--token_file=" + daemons_->token_file(), "--out=" + out});
  ASSERT_TRUE(calibrate->Wait(milliseconds(120000)));
  ASSERT_EQ(calibrate->exit_code(), 0) << calibrate->Stderr();
  EXPECT_TRUE(calibrate->StdoutLines().empty()) << "with --out nothing goes to stdout";
  // Atomic: the file and nothing beside it (no temporary left over).
  EXPECT_EQ(FilesIn(directory_), std::vector<std::string>{"cluster.jsonl"});

  std::printf("%s", Contents(out).c_str());  // the figures, for the test log
  absl::StatusOr<Calibration> calibration = ReadCalibrationFile(out);
  ASSERT_TRUE(calibration.ok()) << calibration.status() << "\n" << Contents(out);
  ASSERT_TRUE(calibration->intra_node.has_value()) << Contents(out);
  ASSERT_TRUE(calibration->inter_node.has_value()) << Contents(out);
  for (const LinkLevelMeasurement* link : {&*calibration->intra_node, &*calibration->inter_node}) {
    EXPECT_GT(link->bytes_per_second, 0) << link->method;
    EXPECT_GE(link->latency_seconds, 0) << link->method;
    EXPECT_THAT(link->method, HasSubstr("between daemons: node "));
    EXPECT_THAT(link->method, HasSubstr("slowest of 2 nodes"));
  }
  // Measured by the job's own groups: one worker process per node, the default transport.
  EXPECT_THAT(calibration->inter_node->method, StartsWith("ucx all_reduce, 2 processes (one per node)"));
  EXPECT_THAT(calibration->intra_node->method, StartsWith("in-process all_reduce, 2 ranks"));
  // What the model makes of them: a 16 MiB all-reduce across the 2 workers takes longer
  // than a 4 KiB one, and no longer than a minute (each was timed in well under that).
  const double small = InterNodeSeconds(*calibration->inter_node, 4 << 10);
  const double large = InterNodeSeconds(*calibration->inter_node, 16 << 20);
  EXPECT_LT(small, large);
  EXPECT_LT(large, 60);
  // Nodes 0 and 1 measured a pipeline transfer's round trips between them: one transfer
  // is half a round trip, of which the latency is what the file's beta does not explain.
  ASSERT_TRUE(calibration->inter_node_transfer.has_value()) << Contents(out);
  const TransferMeasurement& transfer = *calibration->inter_node_transfer;
  EXPECT_EQ(transfer.bytes, 64);
  EXPECT_GT(transfer.round_trip_seconds, 0);
  EXPECT_LT(transfer.round_trip_seconds, 60);
  EXPECT_NEAR(transfer.latency_seconds,
              std::max(0.0, transfer.round_trip_seconds / 2 - 64 / calibration->inter_node->bytes_per_second),
              1e-5 * transfer.round_trip_seconds);
  EXPECT_THAT(transfer.method, StartsWith("ucx send_recv round trips, nodes 0 and 1"));
  // Node 0's worker measured the machine lines too: compute rates and the codecs.
  EXPECT_GT(calibration->compute.gemm_flops_per_second, 0);
  EXPECT_GT(calibration->compute.memory_bytes_per_second, 0);
  EXPECT_TRUE(calibration->compute.gemm_shape.measured());
  int codec_lines = 0;
  const std::string text = Contents(out);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "{\"codec\": ")) ++codec_lines;
  }
  EXPECT_GE(codec_lines, 6) << "every codec configuration the compiler picks from";
  // Both daemons run on this machine: their workers read this machine's boot id, so the
  // file says the 2 nodes share it and its cores (those this test may run on: the workers
  // inherit the affinity).
  ASSERT_TRUE(calibration->shared_machine.has_value()) << Contents(out);
  EXPECT_EQ(calibration->shared_machine->nodes, 2);
  cpu_set_t cores;
  CPU_ZERO(&cores);
  ASSERT_EQ(sched_getaffinity(0, sizeof(cores), &cores), 0);
  EXPECT_EQ(calibration->shared_machine->cores, CPU_COUNT(&cores));
  EXPECT_THAT(calibration->shared_machine->method, HasSubstr("every node's worker read boot id "));
  // Calibrate runs on the nodes' machine: with a core per node their devices take no turns,
  // and what an act costs its device's step is measured across 2 processes (a real probe,
  // beside other tests here: 0.085-2.9 us seen, so only its range is checked); on one core
  // the 2 devices' turns are (shared_machine_turns.h).
  if (CPU_COUNT(&cores) >= 2) {
    EXPECT_FALSE(calibration->shared_machine->turns.has_value()) << Contents(out);
    EXPECT_THAT(calibration->shared_machine->method, HasSubstr("; no turns measured: a core per node"));
    ASSERT_TRUE(calibration->shared_machine->own_core_act_seconds.has_value()) << Contents(out);
    EXPECT_GE(*calibration->shared_machine->own_core_act_seconds, 0) << Contents(out);
    EXPECT_LT(*calibration->shared_machine->own_core_act_seconds, 1e-3) << Contents(out);
    EXPECT_THAT(calibration->shared_machine->method,
                HasSubstr("; act on its own core: ")) << Contents(out);
    EXPECT_THAT(calibration->shared_machine->method, HasSubstr("as 2 processes of one device each"));
  } else {
    ASSERT_TRUE(calibration->shared_machine->turns.has_value()) << Contents(out);
    EXPECT_EQ(calibration->shared_machine->turns->devices, 2);
    // The act cost and the share measured across 2 processes, as the launched job runs.
    EXPECT_EQ(calibration->shared_machine->processes, 2);
    EXPECT_GT(calibration->shared_machine->turns->core_share, 0);
    EXPECT_THAT(calibration->shared_machine->method, HasSubstr("; turns: measured by calibrate on the machine"));
  }
  EXPECT_TRUE(ProcessesWithArgument("--measure_links").empty());

  // The other transport, named in the method.
  const std::string gloo_out = absl::StrCat(directory_, "/gloo.jsonl");
  std::unique_ptr<Process> gloo = Calibrate(
      {daemons_->Nodes(), "--token_file=" + daemons_->token_file(), "--transport=gloo", "--out=" + gloo_out});
  ASSERT_TRUE(gloo->Wait(milliseconds(120000)));
  ASSERT_EQ(gloo->exit_code(), 0) << gloo->Stderr();
  absl::StatusOr<Calibration> gloo_calibration = ReadCalibrationFile(gloo_out);
  ASSERT_TRUE(gloo_calibration.ok()) << gloo_calibration.status();
  ASSERT_TRUE(gloo_calibration->inter_node.has_value());
  EXPECT_THAT(gloo_calibration->inter_node->method, StartsWith("gloo all_reduce, 2 processes (one per node)"));
  ASSERT_TRUE(gloo_calibration->inter_node_transfer.has_value());
  EXPECT_THAT(gloo_calibration->inter_node_transfer->method, StartsWith("gloo send_recv round trips, nodes 0 and 1"));
}

TEST_F(CalibrateNodesTest, RefusesBadInputNamingIt) {
  const std::string token = "--token_file=" + daemons_->token_file();
  ExpectRefused({"--nodes=" + daemons_->address(0), token},
                "oneflow calibrate: --nodes lists 1 daemon; measuring the link between nodes needs at least 2",
                "one node");
  const std::string unreachable = absl::StrCat("127.0.0.1:", UnusedLocalPort());
  ExpectRefused({absl::StrCat("--nodes=", daemons_->address(0), ",", unreachable), token},
                absl::StrCat("node 1 (", unreachable, ") is unreachable"), "unreachable node");
  ExpectRefused({daemons_->Nodes(), "--token_file=" + launcher::testing::WriteTokenFile("another-token")},
                "Launcher.Submit: wrong token", "wrong token");
  ExpectRefused({daemons_->Nodes(), token, "--transport=tcp"}, "--transport: ", "unknown transport");
  // The daemons still serve: a good calibration after the refusals works.
  const std::string out = absl::StrCat(directory_, "/after.jsonl");
  std::unique_ptr<Process> calibrate = Calibrate({daemons_->Nodes(), token, "--out=" + out});
  ASSERT_TRUE(calibrate->Wait(milliseconds(120000)));
  EXPECT_EQ(calibrate->exit_code(), 0) << calibrate->Stderr();
}

}  // namespace
}  // namespace oneflow::testing
