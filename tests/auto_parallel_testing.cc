#include "tests/auto_parallel_testing.h"

#include "examples/common/parallel_layout.h"
#include "gtest/gtest.h"

namespace oneflow {

examples::GptConfig TinyGpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 16;
  config.layers = 3;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 64;
  return config;
}

examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 32;
  config.layers = 2;
  config.hidden = 128;
  config.heads = 4;
  config.vocab = 64;
  return config;
}

auto_parallel::ModelProfile ProfileOfTwoDevices(const examples::GptConfig& config) {
  examples::ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.tp = 2;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *layout);
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<auto_parallel::ModelProfile> profile = auto_parallel::ProfileJob(*job, 2);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return *profile;
}

}  // namespace oneflow
