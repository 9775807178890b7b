// Mixture of experts across processes: the gpt with fssdp experts (row-sparse gather and
// reduce-scatter over Gloo) and with expert parallelism (all-to-all of the token buffers)
// on 2 nodes x 2 devices, through `oneflow launch` on two real daemons, trains like one
// device.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kIterations = 12;

// The integer after "key": in a metrics line, or -1.
int64_t Count(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::stoll(line.substr(at + key.size() + 4));
}

TEST(MoeLaunchTest, FssdpAndExpertParallelOnTwoNodesTrainLikeOneDevice) {
  const std::vector<std::string> gpt = {"--batch=8",     "--seq=8",         "--layers=2",     "--hidden=32",
                                        "--heads=4",     "--vocab=34",      "--lr=0.01",      "--compression=off",
                                        "--moe_experts=4", "--moe_top_k=2"};
  std::vector<std::string> one = gpt;
  one.push_back("--moe_parallel=replicated");
  const std::vector<double> reference = RunInOneProcess(CompilePlan("gpt", one, "moe-1device"), kIterations);
  Daemons daemons(2);
  for (const std::string parallel : {"fssdp", "ep"}) {
    std::vector<std::string> flags = gpt;
    flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=2", "--dp=4", "--moe_parallel=" + parallel});
    const std::string plan = CompilePlan("gpt", flags, "moe-" + parallel);
    std::unique_ptr<Process> launch = Launch(daemons, plan, kIterations, "moe-" + parallel + "-2nodes");
    ASSERT_TRUE(launch->Wait(milliseconds(120000))) << parallel;
    ASSERT_EQ(launch->exit_code(), 0) << parallel << ": " << launch->Stderr();
    EXPECT_TRUE(MatchesReference(Losses(launch->StdoutLines()), reference, kIterations))
        << "gpt with " << parallel << " experts on 2 nodes x 2 devices";
    // The launch merges the nodes' row-sparse bytes into each metrics line: 8 sparse
    // collectives (2 blocks x 2 weights x gather and reduce-scatter) on 4 devices.
    for (const std::string& line : launch->StdoutLines()) {
      if (line.find("\"loss\"") == std::string::npos) continue;
      const bool sparse = line.find("\"sparse_calls\": ") != std::string::npos;
      EXPECT_EQ(sparse, parallel == std::string("fssdp")) << line;
      if (sparse) {
        EXPECT_EQ(Count(line, "sparse_calls") + Count(line, "dense_calls"), 32) << line;
      }
    }
  }
}

// Balanced routing above makes every device use every expert, so the runtime falls back
// to the dense collective; a Zipf(1.5) router over 16 experts (top-1, one sample per
// device) leaves each device a few experts, so the row-sparse calls run across the two
// processes, and the losses still equal one device's.
TEST(MoeLaunchTest, SkewedRoutingRunsFssdpSparseOnTwoNodesAndTrainsLikeOneDevice) {
  const std::vector<std::string> gpt = {"--batch=4",       "--seq=16",        "--layers=2",  "--hidden=32",
                                        "--heads=4",       "--vocab=34",      "--lr=0.01",   "--compression=off",
                                        "--moe_experts=16", "--moe_top_k=1", "--moe_zipf_skew=1.5"};
  std::vector<std::string> one = gpt;
  one.push_back("--moe_parallel=replicated");
  const std::vector<double> reference = RunInOneProcess(CompilePlan("gpt", one, "moe-skewed-1device"), kIterations);
  std::vector<std::string> flags = gpt;
  flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=2", "--dp=4", "--moe_parallel=fssdp"});
  const std::string plan = CompilePlan("gpt", flags, "moe-skewed-fssdp");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, kIterations, "moe-skewed-fssdp-2nodes");
  ASSERT_TRUE(launch->Wait(milliseconds(120000)));
  ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
  EXPECT_TRUE(MatchesReference(Losses(launch->StdoutLines()), reference, kIterations))
      << "gpt with fssdp experts and a skewed router on 2 nodes x 2 devices";
  int lines = 0;
  for (const std::string& line : launch->StdoutLines()) {
    if (line.find("\"loss\"") == std::string::npos) continue;
    ++lines;
    EXPECT_GT(Count(line, "sparse_calls"), 0) << line;
    EXPECT_EQ(Count(line, "sparse_calls") + Count(line, "dense_calls"), 32) << line;
  }
  EXPECT_EQ(lines, kIterations);
}

}  // namespace
}  // namespace oneflow::testing
