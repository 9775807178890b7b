// ZeRO stages 0..3 (docs/zero.md) on the gpt of bench/train (2 layers, hidden 128,
// 4 heads, seq 64, vocab 512, batch 8, AdamW) at dp=4 on this machine's CPU devices, in
// one process. The stages run in alternating rounds, so a load change on the machine
// touches all of them alike. One JSON line per stage:
// {"bench":"zero","model":"gpt","dp":4,"zero":2,"persistent_bytes_per_device":..,
//  "persistent_ratio":..,"peak_bytes_per_device":..,"bytes_sent_per_iter":..,
//  "median_step_ms":..,"step_ratio":..,"final_loss":..}
// persistent_ratio and step_ratio are to stage 0 of the same run; the per-device figures
// are the largest over the devices (an uneven split gives device 0 the most).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "actors/runtime.h"
#include "bench/lib/statistics.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, dp, 4, "Data-parallel devices.");
ABSL_FLAG(int64_t, iterations, 30, "Iterations per stage and round; the first 5 are warm-up.");
ABSL_FLAG(int64_t, rounds, 3, "Rounds over the four stages; a stage's step is the median of its rounds' medians.");

namespace oneflow {
namespace {

struct Stage {
  int64_t zero = 0;
  proto::Plan plan;
  int64_t persistent_bytes = 0;  // Largest over the devices.
  int64_t peak_bytes = 0;
  std::vector<double> round_medians;
  double final_loss = 0;
};

absl::Status Compile(Stage& stage, int64_t dp) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp;
  flags.dp = dp;
  flags.zero = stage.zero;
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  examples::GptConfig gpt;  // bench/train/bench_models.cc's gpt.
  gpt.batch = 8;
  gpt.seq = 64;
  gpt.layers = 2;
  gpt.hidden = 128;
  gpt.heads = 4;
  gpt.vocab = 512;
  OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildGpt(gpt, layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  OF_ASSIGN_OR_RETURN(stage.plan, oneflow::Compile(job, options));
  for (const proto::DevicePlan& device : stage.plan.devices()) {
    int64_t persistent = 0;
    for (const proto::MemoryBlock& block : device.memory_blocks()) {
      if (block.persistent()) persistent += block.size_bytes();
    }
    stage.persistent_bytes = std::max(stage.persistent_bytes, persistent);
    stage.peak_bytes = std::max(stage.peak_bytes, device.peak_bytes());
  }
  return absl::OkStatus();
}

absl::Status Train(Stage& stage, int64_t iterations) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = iterations;
  OF_ASSIGN_OR_RETURN(actors::TrainResult result, actors::TrainPlan(stage.plan, train));
  std::vector<double> steps;
  for (size_t i = 5; i < result.iterations.size(); ++i) steps.push_back(result.iterations[i].step_ms);
  stage.round_medians.push_back(Median(steps));
  stage.final_loss = result.iterations.back().loss;
  return absl::OkStatus();
}

absl::Status Main() {
  const int64_t dp = absl::GetFlag(FLAGS_dp);
  const int64_t iterations = std::max<int64_t>(absl::GetFlag(FLAGS_iterations), 6);
  std::vector<Stage> stages(4);
  for (int64_t zero = 0; zero < 4; ++zero) {
    stages[zero].zero = zero;
    OF_RETURN_IF_ERROR(Compile(stages[zero], dp));
  }
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (Stage& stage : stages) OF_RETURN_IF_ERROR(Train(stage, iterations));
  }
  const double base_step = Median(stages[0].round_medians);
  for (const Stage& stage : stages) {
    const double step = Median(stage.round_medians);
    std::printf(
        "{\"bench\":\"zero\",\"model\":\"gpt\",\"dp\":%lld,\"zero\":%lld,\"persistent_bytes_per_device\":%lld,"
        "\"persistent_ratio\":%.3f,\"peak_bytes_per_device\":%lld,\"bytes_sent_per_iter\":%lld,"
        "\"median_step_ms\":%.3f,\"step_ratio\":%.3f,\"final_loss\":%.5f}\n",
        static_cast<long long>(dp), static_cast<long long>(stage.zero),
        static_cast<long long>(stage.persistent_bytes),
        static_cast<double>(stage.persistent_bytes) / stages[0].persistent_bytes,
        static_cast<long long>(stage.peak_bytes),
        static_cast<long long>(stage.plan.devices(0).bytes_sent_per_iter()), step,
        base_step > 0 ? step / base_step : 0.0, stage.final_loss);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Main();
  if (!status.ok()) {
    std::fprintf(stderr, "zero_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
