#include "tests/plan_losses.h"

#include <cmath>

#include "absl/status/statusor.h"
#include "actors/runtime.h"
#include "gtest/gtest.h"

namespace oneflow::testing {

std::vector<float> TrainedLosses(const proto::Plan& plan, int64_t iterations) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<float> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

void ExpectLossesNear(const std::vector<float>& losses, const std::vector<float>& reference, double relative,
                      const std::string& what) {
  ASSERT_EQ(losses.size(), reference.size()) << what;
  for (size_t i = 0; i < losses.size(); ++i) {
    EXPECT_LE(std::abs(losses[i] - reference[i]), relative * std::abs(reference[i])) << what << " iteration " << i;
  }
}

}  // namespace oneflow::testing
