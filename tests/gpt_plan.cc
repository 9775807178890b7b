#include "tests/gpt_plan.h"

#include "absl/status/statusor.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"

namespace oneflow::testing {

proto::Plan CompileGptPlan(const examples::GptConfig& gpt, const examples::ParallelFlags& flags,
                           const examples::CompileSettings& settings) {
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  if (!layout.ok()) return proto::Plan();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(gpt, *layout);
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, nullptr);
  EXPECT_TRUE(options.ok()) << options.status();
  if (!job.ok() || !options.ok()) return proto::Plan();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

examples::GptConfig TinyTrainingGpt(int64_t layers) {
  examples::GptConfig gpt;
  gpt.layers = layers;
  gpt.hidden = 64;
  gpt.heads = 4;
  gpt.seq = 8;
  gpt.batch = 6;
  gpt.vocab = 34;
  gpt.learning_rate = 0.1;
  return gpt;
}

examples::GptConfig HostsBenchGpt() {
  examples::GptConfig gpt;
  gpt.layers = 6;
  gpt.hidden = 96;
  gpt.heads = 12;
  gpt.seq = 32;
  gpt.batch = 24;
  gpt.vocab = 512;
  return gpt;
}

}  // namespace oneflow::testing
