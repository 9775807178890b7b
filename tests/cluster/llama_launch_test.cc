// examples/llama across processes: dp=2 x tp=2 with sequence parallelism on 2 nodes x 2
// devices, through `oneflow launch` on two real daemons, follows the one-device curve
// (within 1e-4 for 20 iterations).
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

constexpr int kIterations = 20;

TEST(LlamaLaunchTest, TwoNodesOfTwoDevicesTrainLikeOneDevice) {
  // Dense boxing: the comparison is about the layout, not codecs. The AdamW peak 0.01
  // makes the loss fall within 20 iterations despite the 100-step warmup.
  const std::vector<std::string> llama = {"--batch=4",    "--seq=8",      "--layers=2",  "--hidden=32",
                                          "--heads=4",    "--kv_heads=2", "--vocab=32",  "--ffn_hidden=48",
                                          "--lr=0.01",    "--compression=off"};
  const std::vector<double> reference = RunInOneProcess(CompilePlan("llama", llama, "llama-1device"), kIterations);
  std::vector<std::string> flags = llama;
  flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=2", "--dp=2", "--tp=2"});
  const std::string plan = CompilePlan("llama", flags, "llama-dp2-tp2");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, kIterations, "llama-2nodes");
  ASSERT_TRUE(launch->Wait(milliseconds(120000)));
  ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
  EXPECT_TRUE(MatchesReference(Losses(launch->StdoutLines()), reference, kIterations))
      << "llama dp=2 x tp=2 with sequence parallelism on 2 nodes x 2 devices";
}

}  // namespace
}  // namespace oneflow::testing
