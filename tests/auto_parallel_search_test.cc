// The auto-parallel search on the examples' real models (compiler/auto_parallel/): the
// profiles it reads from their jobs, the layouts it picks in clear-cut cases, its
// determinism and its errors. No training here: tests/auto_parallel_training_test.cc
// runs the chosen plans against one device.
#include <string>

#include "absl/strings/match.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/search.h"
#include "compiler/plan_io.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using auto_parallel::LayoutName;
using examples::ParallelFlags;
using examples::ParallelLayout;

examples::MlpConfig TinyMlp() {
  examples::MlpConfig config;
  config.batch = 32;
  config.in_features = 16;
  config.hidden = 32;
  config.classes = 4;
  return config;
}

examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 32;
  config.layers = 4;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 64;
  return config;
}

examples::JobBuilder MlpBuilder(const examples::MlpConfig& config) {
  return [config](const ParallelLayout& layout) { return examples::BuildMlp(config, layout); };
}
examples::JobBuilder GptBuilder(const examples::GptConfig& config) {
  return [config](const ParallelLayout& layout) { return examples::BuildGpt(config, layout); };
}

// The model built for a tp=2 probe (as the driver does) and profiled.
auto_parallel::ModelProfile ProfileOf(const examples::JobBuilder& build) {
  ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.tp = 2;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = build(*layout);
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<auto_parallel::ModelProfile> profile = auto_parallel::ProfileJob(*job, 2);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return *profile;
}

auto_parallel::SearchOptions Cluster(int64_t nodes, int64_t devices_per_node, double inter_node_bandwidth,
                                     double inter_node_latency) {
  auto_parallel::SearchOptions options;
  proto::Cluster& cluster = options.price.cluster;
  cluster.set_num_nodes(nodes);
  cluster.set_devices_per_node(devices_per_node);
  cluster.set_intra_node_bandwidth(100e9);
  cluster.set_inter_node_bandwidth(inter_node_bandwidth);
  cluster.set_intra_node_latency(1e-5);
  cluster.set_inter_node_latency(inter_node_latency);
  return options;
}

TEST(AutoParallelSearchTest, Explore) {
  const auto_parallel::ModelProfile gpt = ProfileOf(GptBuilder(SmallGpt()));
  for (const auto_parallel::ProfileUnit& unit : gpt.units) {
    std::printf("%s stageable=%d gemm=%g tp_gemm=%g mem=%g tp_mem=%g params=%lld tp_params=%lld act=%lld tp_act=%lld in=%lld fwdAR=%zu bwdAR=%zu\n",
                unit.name.c_str(), unit.stageable, unit.gemm_flops, unit.tp_gemm_flops, unit.memory_bytes,
                unit.tp_memory_bytes, (long long)unit.parameter_bytes, (long long)unit.tp_parameter_bytes,
                (long long)unit.activation_bytes, (long long)unit.tp_activation_bytes, (long long)unit.input_bytes,
                unit.tp_forward_all_reduce_bytes.size(), unit.tp_backward_all_reduce_bytes.size());
  }
  std::printf("distinct %lld stageable %lld\n", (long long)gpt.distinct_units, (long long)gpt.stageable_units);
  {
    proto::AutoParallelLayout l; l.set_dp(8); l.set_tp(1); l.set_pp(1); l.set_micro_batches(1);
    auto p = auto_parallel::PriceLayout(gpt, Cluster(2, 4, 1e9, 1e-4).price, l);
    std::printf("%s\n", p.status().ToString().c_str());
  }
  for (auto [inter, lat] : {std::pair{100e9, 1e-5}, std::pair{1.25e8, 5e-4}}) {
    absl::StatusOr<auto_parallel::SearchResult> result = auto_parallel::Search(gpt, Cluster(2, 4, inter, lat));
    ASSERT_TRUE(result.ok()) << result.status();
    for (int i = 0; i < 8 && i < (int)result->fitting.size(); ++i) {
      const auto& p = result->fitting[i];
      std::printf("%s step %g compute %g comm %g bubble %g peak %lld\n", LayoutName(p.layout()).c_str(),
                  auto_parallel::StepSeconds(p), p.compute_seconds(), p.exposed_communication_seconds(),
                  p.bubble_seconds(), (long long)p.peak_bytes());
    }
  }
}

}  // namespace
}  // namespace oneflow
