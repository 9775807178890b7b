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

examples::ParallelLayout TwoDeviceTpLayout() {
  examples::ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.tp = 2;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Job TwoDeviceTpGpt(const examples::GptConfig& config) {
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, TwoDeviceTpLayout());
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

auto_parallel::ModelProfile ProfileOfTwoDevices(const examples::GptConfig& config) {
  absl::StatusOr<auto_parallel::ModelProfile> profile = auto_parallel::ProfileJob(TwoDeviceTpGpt(config), 2);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return *profile;
}

}  // namespace oneflow
