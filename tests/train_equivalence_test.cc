// The project's main correctness oracle: a model trained on 1 device and on N devices
// with any SBP follows the same loss curve (dense boxing), up to float reassociation.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

constexpr int64_t kIterations = 30;

struct Layout {
  const char* name;
  int64_t nodes, devices_per_node, dp, tp;
};

std::vector<float> Train(bool gpt, const Layout& l, const std::string& record_file = "") {
  ParallelFlags flags;
  flags.nodes = l.nodes;
  flags.devices_per_node = l.devices_per_node;
  flags.dp = l.dp;
  flags.tp = l.tp;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job;
  if (gpt) {
    examples::GptConfig config;
    config.batch = 4;
    config.seq = 8;
    config.layers = 1;
    config.hidden = 32;
    config.heads = 4;
    config.vocab = 32;
    config.learning_rate = 1e-2;
    config.warmup_steps = 5;
    job = examples::BuildGpt(config, *layout);
  } else {
    examples::MlpConfig config;
    config.batch = 32;
    config.in_features = 16;
    config.hidden = 32;
    config.classes = 4;
    config.record_file = record_file;
    job = examples::BuildMlp(config, *layout);
  }
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  actors::TrainOptions train;
  train.iterations = kIterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << l.name << ": " << result.status();
  std::vector<float> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

void ExpectSameCurve(bool gpt) {
  const std::vector<float> reference = Train(gpt, {"1 device", 1, 1, 1, 1});
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  // Training works at all: the last losses are below the first ones.
  EXPECT_LT(reference[kIterations - 1], reference[0] * 0.9) << "loss does not decrease";
  for (const Layout& layout : {Layout{"dp=4", 1, 4, 4, 1}, Layout{"tp=4", 1, 4, 1, 4},
                               Layout{"dp=2 x tp=2", 1, 4, 2, 2}}) {
    const std::vector<float> losses = Train(gpt, layout);
    ASSERT_EQ(losses.size(), reference.size()) << layout.name;
    for (int64_t i = 0; i < kIterations; ++i) {
      EXPECT_NEAR(losses[i], reference[i], 1e-4 * std::abs(reference[i]) + 1e-6)
          << layout.name << " iteration " << i;
    }
  }
}

TEST(TrainEquivalenceTest, Mlp) { ExpectSameCurve(false); }

TEST(TrainEquivalenceTest, Gpt) { ExpectSameCurve(true); }

// A record file (16 features then the label per record, 80 records: batches wrap around
// it) trains the same on one device and on dp=2 x tp=2, and the loss decreases.
TEST(TrainEquivalenceTest, MlpFromRecordFile) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/records.f32";
  std::vector<float> records;
  for (int r = 0; r < 80; ++r) {
    float score[4] = {0, 0, 0, 0};
    for (int f = 0; f < 16; ++f) {
      const float x = std::sin(0.37f * static_cast<float>(r * 16 + f));
      records.push_back(x);
      score[f % 4] += x;
    }
    records.push_back(static_cast<float>(std::max_element(score, score + 4) - score));
  }
  FILE* file = fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(fwrite(records.data(), sizeof(float), records.size(), file), records.size());
  fclose(file);
  const std::vector<float> reference = Train(false, {"1 device", 1, 1, 1, 1}, path);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  EXPECT_LT(reference[kIterations - 1], reference[0] * 0.9) << "loss does not decrease";
  const std::vector<float> losses = Train(false, {"dp=2 x tp=2", 1, 4, 2, 2}, path);
  ASSERT_EQ(losses.size(), reference.size());
  for (int64_t i = 0; i < kIterations; ++i) {
    EXPECT_NEAR(losses[i], reference[i], 1e-4 * std::abs(reference[i]) + 1e-6) << "iteration " << i;
  }
}

}  // namespace
}  // namespace oneflow
