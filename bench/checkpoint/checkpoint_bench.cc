// Checkpoint cost (docs/checkpoints.md) on a gpt with AdamW on this machine's CPU
// devices, in one process: three modes in alternating rounds, so a load change on the
// machine touches all of them alike.
//   none   no checkpoints
//   async  --checkpoint_every: slices staged by memcpy in the variables' acts, files
//          written by a background thread
//   sync   the same, the act that stages the last slice writing the files (training
//          waits)
// One JSON line per mode:
// {"bench":"checkpoint","mode":"async","state_bytes":..,"checkpoints":..,
//  "median_step_ms":..,"median_save_step_ms":..,"median_after_save_step_ms":..,
//  "save_step_ratio":..,"median_stall_ms":..,"median_write_ms":..}
// save steps are the iterations k with k % every == 0 (their variables staged at their
// start), after-save steps k + 1 (the background write overlaps them); the ratio is
// save steps to the median step of "none" in the same rounds. Stall is the time the
// training threads spent in the checkpoint (copies; with sync, the write too) per save.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, dp, 1, "Data-parallel devices.");
ABSL_FLAG(int64_t, layers, 4, "Transformer blocks.");
ABSL_FLAG(int64_t, hidden, 256, "Hidden width.");
ABSL_FLAG(int64_t, iterations, 31, "Iterations per mode and round; iteration 0 is warm-up.");
ABSL_FLAG(int64_t, every, 5, "Save after every N-th iteration.");
ABSL_FLAG(int64_t, rounds, 3, "Rounds over the modes.");
ABSL_FLAG(std::string, dir, "/tmp/oneflow_checkpoint_bench", "Checkpoint directory (emptied first).");

namespace oneflow {
namespace {

namespace fs = std::filesystem;

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Mode {
  std::string name;
  std::vector<double> steps, save_steps, after_save_steps, stall_ms, write_ms;
  int64_t checkpoints = 0;
  int64_t bytes = 0;
};

absl::StatusOr<proto::Plan> GptPlan() {
  examples::ParallelFlags flags;
  flags.devices_per_node = absl::GetFlag(FLAGS_dp);
  flags.dp = absl::GetFlag(FLAGS_dp);
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  examples::GptConfig gpt;
  gpt.batch = 8;
  gpt.seq = 64;
  gpt.layers = absl::GetFlag(FLAGS_layers);
  gpt.hidden = absl::GetFlag(FLAGS_hidden);
  gpt.heads = 4;
  gpt.vocab = 512;
  OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildGpt(gpt, layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  return Compile(job, options);
}

absl::Status Run() {
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, GptPlan());
  int64_t state_bytes = 0;
  for (const proto::RegisterDef& reg : plan.devices(0).registers()) {
    if (reg.persistent()) state_bytes += reg.size_bytes();
  }
  const int64_t every = absl::GetFlag(FLAGS_every);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::vector<Mode> modes = {{"none"}, {"async"}, {"sync"}};
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (Mode& mode : modes) {
      fs::remove_all(dir);
      actors::TrainOptions options;
      options.node = -1;
      options.iterations = absl::GetFlag(FLAGS_iterations);
      if (mode.name != "none") {
        options.checkpoint.dir = dir;
        options.checkpoint.every = every;
        options.checkpoint.synchronous = mode.name == "sync";
      }
      OF_ASSIGN_OR_RETURN(actors::TrainResult result, actors::TrainPlan(plan, options));
      for (const actors::IterationMetrics& m : result.iterations) {
        if (m.iteration == 0) continue;
        mode.steps.push_back(m.step_ms);
        if (m.iteration % every == 0) mode.save_steps.push_back(m.step_ms);
        if (m.iteration % every == 1 && m.iteration > 1) mode.after_save_steps.push_back(m.step_ms);
      }
      for (const actors::CheckpointRecord& saved : result.checkpoints) {
        mode.stall_ms.push_back(saved.stall_ms);
        mode.write_ms.push_back(saved.write_ms);
        mode.bytes = saved.bytes;
        ++mode.checkpoints;
      }
    }
  }
  fs::remove_all(dir);
  const double base = Median(modes[0].steps);
  for (const Mode& mode : modes) {
    const double save_step = Median(mode.name == "none" ? mode.steps : mode.save_steps);
    std::printf(
        "{\"bench\":\"checkpoint\",\"model\":\"gpt\",\"dp\":%lld,\"layers\":%lld,\"hidden\":%lld,\"mode\":\"%s\","
        "\"state_bytes\":%lld,\"checkpoint_bytes\":%lld,\"checkpoints\":%lld,\"median_step_ms\":%.3f,"
        "\"median_save_step_ms\":%.3f,\"median_after_save_step_ms\":%.3f,\"save_step_ratio\":%.4f,"
        "\"median_stall_ms\":%.3f,\"median_write_ms\":%.3f}\n",
        static_cast<long long>(absl::GetFlag(FLAGS_dp)), static_cast<long long>(absl::GetFlag(FLAGS_layers)),
        static_cast<long long>(absl::GetFlag(FLAGS_hidden)), mode.name.c_str(),
        static_cast<long long>(state_bytes), static_cast<long long>(mode.bytes),
        static_cast<long long>(mode.checkpoints), Median(mode.steps), save_step, Median(mode.after_save_steps),
        base > 0 ? save_step / base : 0, Median(mode.stall_ms), Median(mode.write_ms));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "checkpoint_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
