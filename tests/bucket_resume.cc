#include "tests/bucket_resume.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "actors/checkpoint/checkpoint_format.h"
#include "actors/runtime.h"
#include "gtest/gtest.h"
#include "tests/plan_losses.h"

namespace oneflow::testing {

void ExpectBucketedTrainsAndResumesLikeUnbucketed(const proto::Plan& unbucketed, const proto::Plan& bucketed,
                                                  int64_t iterations, int64_t checkpoint_at,
                                                  const std::string& directory_name) {
  namespace fs = std::filesystem;
  const std::string dir = (fs::path(::testing::TempDir()) / directory_name).string();
  fs::remove_all(dir);
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  options.checkpoint.dir = dir;
  options.checkpoint.every = checkpoint_at;
  absl::StatusOr<actors::TrainResult> reference = actors::TrainPlan(unbucketed, options);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<float> losses;
  for (const actors::IterationMetrics& metrics : reference->iterations) losses.push_back(metrics.loss);
  EXPECT_EQ(TrainedLosses(bucketed, iterations), losses);

  actors::TrainOptions resume;
  resume.node = -1;
  resume.iterations = iterations;
  resume.resume_from = (fs::path(dir) / actors::CheckpointDirName(checkpoint_at)).string();
  std::vector<std::string> warnings;
  resume.on_warning = [&](const std::string& line) {
    if (line.find("error-feedback") != std::string::npos) warnings.push_back(line);
  };
  absl::StatusOr<actors::TrainResult> resumed = actors::TrainPlan(bucketed, resume);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_EQ(resumed->iterations.size(), static_cast<size_t>(iterations - checkpoint_at));
  for (size_t i = 0; i < resumed->iterations.size(); ++i) {
    const float expected = losses[static_cast<size_t>(checkpoint_at) + i];
    EXPECT_NEAR(resumed->iterations[i].loss, expected, 1e-4 * std::abs(expected))
        << "iteration " << checkpoint_at + static_cast<int64_t>(i);
  }
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

}  // namespace oneflow::testing
