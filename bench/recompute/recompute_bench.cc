// Activation recomputation (compiler/passes/recompute_pass.h) on a gpt on one CPU device:
// none, selective and full in alternating rounds, so a load change on the machine touches
// all three alike. One JSON line per mode:
// {"bench":"recompute","model":"gpt","mode":"full","activation_arena_bytes":..,
//  "arena_ratio":..,"peak_bytes":..,"kept_bytes":..,"kept_bytes_without":..,
//  "recompute_flops":..,"median_step_ms":..,"step_ratio":..,"final_loss":..}
// arena_ratio and step_ratio are to none of the same run. The arena (memory block 1)
// holds every activation register (times the register count); peak_bytes adds weights
// and optimizer state. kept_bytes / kept_bytes_without / recompute_flops are the plan's
// per-block figures (Job.recompute_blocks) summed, logical sizes.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, layers, 4, "Transformer blocks.");
ABSL_FLAG(int64_t, hidden, 128, "Hidden size.");
ABSL_FLAG(int64_t, seq, 128, "Sequence length.");
ABSL_FLAG(int64_t, batch, 8, "Batch.");
ABSL_FLAG(int64_t, iterations, 15, "Iterations per mode and round; the first 5 are warm-up.");
ABSL_FLAG(int64_t, rounds, 3, "Rounds over the modes; a mode's step is the median of its rounds' medians.");

namespace oneflow {
namespace {

struct Mode {
  proto::RecomputeMode mode = proto::RECOMPUTE_NONE;
  const char* name = "none";
  proto::Plan plan;
  std::vector<double> round_medians;
  double final_loss = 0;
};

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

absl::Status Compile(Mode& mode) {
  examples::ParallelFlags flags;
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  examples::GptConfig gpt;
  gpt.batch = absl::GetFlag(FLAGS_batch);
  gpt.seq = absl::GetFlag(FLAGS_seq);
  gpt.layers = absl::GetFlag(FLAGS_layers);
  gpt.hidden = absl::GetFlag(FLAGS_hidden);
  gpt.heads = 4;
  gpt.vocab = 512;
  OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildGpt(gpt, layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  options.recompute = mode.mode;
  OF_ASSIGN_OR_RETURN(mode.plan, oneflow::Compile(job, options));
  return absl::OkStatus();
}

absl::Status Train(Mode& mode, int64_t iterations) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = iterations;
  OF_ASSIGN_OR_RETURN(actors::TrainResult result, actors::TrainPlan(mode.plan, train));
  std::vector<double> steps;
  for (size_t i = 5; i < result.iterations.size(); ++i) steps.push_back(result.iterations[i].step_ms);
  mode.round_medians.push_back(Median(steps));
  mode.final_loss = result.iterations.back().loss;
  return absl::OkStatus();
}

int64_t ArenaBytes(const proto::Plan& plan) { return plan.devices(0).memory_blocks(1).size_bytes(); }

absl::Status Main() {
  const int64_t iterations = std::max<int64_t>(absl::GetFlag(FLAGS_iterations), 6);
  std::vector<Mode> modes(3);
  modes[0] = Mode{proto::RECOMPUTE_NONE, "none"};
  modes[1] = Mode{proto::RECOMPUTE_SELECTIVE, "selective"};
  modes[2] = Mode{proto::RECOMPUTE_FULL, "full"};
  for (Mode& mode : modes) OF_RETURN_IF_ERROR(Compile(mode));
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (Mode& mode : modes) OF_RETURN_IF_ERROR(Train(mode, iterations));
  }
  const double base_step = Median(modes[0].round_medians);
  const double base_arena = static_cast<double>(ArenaBytes(modes[0].plan));
  for (const Mode& mode : modes) {
    int64_t kept = 0, without = 0;
    double flops = 0;
    for (const proto::RecomputeBlockDef& block : mode.plan.job().recompute_blocks()) {
      kept += block.activation_bytes_kept();
      without += block.activation_bytes_without();
      flops += block.recompute_flops();
    }
    const double step = Median(mode.round_medians);
    std::printf(
        "{\"bench\":\"recompute\",\"model\":\"gpt\",\"layers\":%lld,\"hidden\":%lld,\"seq\":%lld,\"batch\":%lld,"
        "\"mode\":\"%s\",\"activation_arena_bytes\":%lld,\"arena_ratio\":%.3f,\"peak_bytes\":%lld,"
        "\"kept_bytes\":%lld,\"kept_bytes_without\":%lld,\"recompute_flops\":%.4g,\"median_step_ms\":%.3f,"
        "\"step_ratio\":%.3f,\"final_loss\":%.6f}\n",
        static_cast<long long>(absl::GetFlag(FLAGS_layers)), static_cast<long long>(absl::GetFlag(FLAGS_hidden)),
        static_cast<long long>(absl::GetFlag(FLAGS_seq)), static_cast<long long>(absl::GetFlag(FLAGS_batch)),
        mode.name, static_cast<long long>(ArenaBytes(mode.plan)), ArenaBytes(mode.plan) / base_arena,
        static_cast<long long>(mode.plan.devices(0).peak_bytes()), static_cast<long long>(kept),
        static_cast<long long>(without), flops, step, base_step > 0 ? step / base_step : 0.0, mode.final_loss);
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
    std::fprintf(stderr, "recompute_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
