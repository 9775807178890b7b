// Pipeline stages across processes: a gpt with pp=2 x dp=2 x tp=2 and 2 micro-batches on
// 2 nodes x 4 devices, stage 0 on node 0 and stage 1 on node 1, through `oneflow launch`
// on two real daemons, trains like one device. Only node 1 holds the loss (the last
// stage's); the launcher takes the job's loss from it.
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

TEST(PipelineLaunchTest, TwoStagesOnTwoNodesTrainLikeOneDevice) {
  // Dense boxing: the comparison is about stages, not codecs. The AdamW peak 0.01 makes
  // the loss fall within 12 iterations despite the 100-step warmup.
  const std::vector<std::string> gpt = {"--batch=8", "--seq=8",   "--layers=4", "--hidden=32",
                                        "--heads=4", "--vocab=34", "--lr=0.01",  "--compression=off"};
  const std::vector<double> reference = RunInOneProcess(CompilePlan("gpt", gpt, "gpt-1device"), kIterations);
  std::vector<std::string> flags = gpt;
  flags.insert(flags.end(), {"--nodes=2", "--devices_per_node=4", "--pp=2", "--dp=2", "--tp=2", "--micro_batches=2"});
  const std::string plan = CompilePlan("gpt", flags, "gpt-pp2-dp2-tp2");
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, kIterations, "gpt-pp2-2nodes");
  ASSERT_TRUE(launch->Wait(milliseconds(120000)));
  ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();
  EXPECT_TRUE(MatchesReference(Losses(launch->StdoutLines()), reference, kIterations))
      << "gpt pp=2 x dp=2 x tp=2, 2 micro-batches, on 2 nodes x 4 devices";
}

}  // namespace
}  // namespace oneflow::testing
