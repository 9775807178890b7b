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

auto_parallel::PriceOptions TwoNodesOfOneDevice(double inter_node_bytes_per_second, double flops_per_second,
                                                double memory_bytes_per_second) {
  auto_parallel::PriceOptions options;
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(1);
  options.cluster.set_inter_node_bandwidth(inter_node_bytes_per_second);
  options.cluster.set_inter_node_latency(0);
  options.cluster.set_gemm_flops_per_second(flops_per_second);
  options.cluster.set_memory_bytes_per_second(memory_bytes_per_second);
  return options;
}

proto::AutoParallelLayout LayoutOf(int64_t dp, int64_t tp, int64_t pp, int64_t micro_batches) {
  proto::AutoParallelLayout layout;
  layout.set_dp(dp);
  layout.set_tp(tp);
  layout.set_pp(pp);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(0);
  layout.set_recompute(proto::RECOMPUTE_NONE);
  return layout;
}

}  // namespace oneflow
