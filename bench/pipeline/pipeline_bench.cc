// Pipeline stages (issue 12, "Benchmarks"): the gpt over pp in {1, 2, 4} x micro-batches
// M in {1, 4, 8}, pp devices in one process (pp = 1 on one device), acts recorded. The
// cases run in alternating rounds, so a load change on the machine touches all of them
// alike. One JSON line per case:
// {"bench":"pipeline","model":"gpt","schedule":"1f1b","virtual_stages":1,"pp":2,"micro_batches":4,"devices":2,
//  "median_step_ms":..,"step_ratio":..,"stage0_peak_bytes":..,"stage0_persistent_bytes":..,
//  "stage0_allocated_bytes":..,"modelled_bubble":..,"measured_bubble":..,
//  "measured_bubble_per_stage":[..],"step_ratio_to_1f1b":..,"final_loss":..}
// With --schedules=1f1b,interleaved,zb every pp > 1 runs each schedule (issue 27), and
// step_ratio_to_1f1b is the step time over the 1F1B case of the same pp and M in the
// same run (0 without one); the modelled bubble is the schedule's (tools/cli/pipeline_stages.h).
// step_ratio is to pp=1, M=1 of the same run; stage 0's figures are its first device's:
// the plan's peak and persistent bytes and the engine's measured allocation (arena +
// persistent); the modelled bubble is 1F1B's (S - 1) / (M + S - 1) and the measured one
// the mean over stages of the compute threads' idle fraction of the post-warm-up window
// (actors/bubble.h), the median over the rounds.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actors/bubble.h"
#include "actors/runtime.h"
#include "bench/lib/statistics.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"
#include "tools/cli/pipeline_stages.h"

ABSL_FLAG(int64_t, layers, 4, "Transformer blocks (divisible among the largest pp).");
ABSL_FLAG(int64_t, hidden, 64, "Hidden width.");
ABSL_FLAG(int64_t, heads, 4, "Attention heads.");
ABSL_FLAG(int64_t, seq, 32, "Sequence length.");
ABSL_FLAG(int64_t, batch, 16, "Sequences per iteration (divisible by every M).");
ABSL_FLAG(int64_t, vocab, 512, "Vocabulary size.");
ABSL_FLAG(std::string, pp, "1,2,4", "Pipeline stage counts.");
ABSL_FLAG(std::string, micro_batches, "1,4,8", "Micro-batch counts.");
ABSL_FLAG(int64_t, iterations, 12, "Iterations per case and round; the first `warmup` are left out.");
ABSL_FLAG(int64_t, warmup, 2, "Warm-up iterations per run (step time and bubble).");
ABSL_FLAG(std::string, schedules, "1f1b",
          "Pipeline schedules (--pp_schedule) for each pp > 1: 1f1b, interleaved, zb, comma-separated.");
ABSL_FLAG(int64_t, virtual_stages, 2, "Chunks per stage for interleaved (--layers must divide by pp x this).");
ABSL_FLAG(int64_t, rounds, 3, "Rounds over the cases; a case's figure is the median of its rounds'.");

namespace oneflow {
namespace {

struct Case {
  std::string schedule = "1f1b";
  int64_t virtual_stages = 1;
  int64_t pp = 1;
  int64_t micro_batches = 1;
  proto::Plan plan;
  std::vector<cli::PipelineStage> stages;
  std::vector<double> round_steps;
  std::vector<double> round_bubbles;
  std::vector<std::vector<double>> round_stage_bubbles;
  int64_t allocated_bytes = 0;  // Stage 0's first device, largest over the rounds.
  double final_loss = 0;
};

absl::StatusOr<std::vector<int64_t>> ParseList(const std::string& text, const char* flag) {
  std::vector<int64_t> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(part, &value) || value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": '", part, "' is not a count >= 1"));
    }
    values.push_back(value);
  }
  return values;
}

absl::Status Compile(Case& c) {
  examples::ParallelFlags flags;
  flags.devices_per_node = c.pp;
  flags.pp = c.pp;
  flags.micro_batches = c.micro_batches;
  flags.virtual_stages = c.virtual_stages;
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  examples::GptConfig gpt;
  gpt.layers = absl::GetFlag(FLAGS_layers);
  gpt.hidden = absl::GetFlag(FLAGS_hidden);
  gpt.heads = absl::GetFlag(FLAGS_heads);
  gpt.seq = absl::GetFlag(FLAGS_seq);
  gpt.batch = absl::GetFlag(FLAGS_batch);
  gpt.vocab = absl::GetFlag(FLAGS_vocab);
  OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildGpt(gpt, layout));
  examples::CompileSettings settings;
  settings.pp_schedule = c.schedule;
  OF_ASSIGN_OR_RETURN(const CompileOptions options, examples::CompileOptionsFor(layout, settings, nullptr));
  OF_ASSIGN_OR_RETURN(c.plan, oneflow::Compile(job, options));
  c.stages = cli::PipelineStages(c.plan);
  if (c.stages.empty() || c.stages[0].devices.empty()) return absl::InternalError("a plan without stages");
  return absl::OkStatus();
}

absl::Status Train(Case& c, int64_t iterations, int64_t warmup) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = iterations;
  train.record_acts = true;
  OF_ASSIGN_OR_RETURN(actors::TrainResult result, actors::TrainPlan(c.plan, train));
  std::vector<double> steps;
  for (size_t i = warmup; i < result.iterations.size(); ++i) steps.push_back(result.iterations[i].step_ms);
  c.round_steps.push_back(Median(steps));
  c.final_loss = result.iterations.back().loss;
  const int stage0 = c.stages[0].devices[0];
  if (stage0 < static_cast<int>(result.engine.allocated_bytes.size())) {
    c.allocated_bytes = std::max(c.allocated_bytes, result.engine.allocated_bytes[stage0]);
  }
  OF_ASSIGN_OR_RETURN(const actors::MeasuredBubble bubble, actors::MeasureBubble(c.plan, result.engine.acts, warmup));
  std::vector<double> idle;
  for (const actors::DeviceIdle& device : bubble.devices) idle.push_back(device.idle_fraction);
  std::vector<double> per_stage;
  double sum = 0;
  for (const cli::PipelineStage& stage : c.stages) {
    per_stage.push_back(cli::StageMeasuredBubble(stage, idle));
    sum += per_stage.back();
  }
  c.round_bubbles.push_back(sum / per_stage.size());
  c.round_stage_bubbles.push_back(per_stage);
  return absl::OkStatus();
}

absl::Status Main() {
  OF_ASSIGN_OR_RETURN(const std::vector<int64_t> pps, ParseList(absl::GetFlag(FLAGS_pp), "pp"));
  OF_ASSIGN_OR_RETURN(const std::vector<int64_t> ms, ParseList(absl::GetFlag(FLAGS_micro_batches), "micro_batches"));
  const int64_t warmup = std::max<int64_t>(absl::GetFlag(FLAGS_warmup), 1);
  const int64_t iterations = std::max<int64_t>(absl::GetFlag(FLAGS_iterations), warmup + 1);
  const std::vector<std::string> schedules = absl::StrSplit(absl::GetFlag(FLAGS_schedules), ',', absl::SkipEmpty());
  std::vector<Case> cases;
  for (int64_t pp : pps) {
    for (int64_t m : ms) {
      for (const std::string& schedule : schedules) {
        if (pp == 1 && schedule != schedules[0]) continue;  // One stage has no schedule.
        Case c;
        c.pp = pp;
        c.micro_batches = m;
        if (pp > 1) c.schedule = schedule;
        if (pp > 1 && schedule == "interleaved") c.virtual_stages = absl::GetFlag(FLAGS_virtual_stages);
        OF_RETURN_IF_ERROR(Compile(c));
        cases.push_back(std::move(c));
      }
    }
  }
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (Case& c : cases) OF_RETURN_IF_ERROR(Train(c, iterations, warmup));
  }
  // The reference: pp=1, M=1 when the lists have it, else the first case.
  double base_step = Median(cases[0].round_steps);
  for (const Case& c : cases) {
    if (c.pp == 1 && c.micro_batches == 1) base_step = Median(c.round_steps);
  }
  for (const Case& c : cases) {
    const double step = Median(c.round_steps);
    // The 1F1B case of the same pp and M in this run, when there is one.
    double one_f_one_b = 0;
    for (const Case& other : cases) {
      if (other.pp == c.pp && other.micro_batches == c.micro_batches && other.schedule == "1f1b") {
        one_f_one_b = Median(other.round_steps);
      }
    }
    // Per stage: the median over rounds.
    std::vector<std::string> per_stage;
    for (size_t s = 0; s < c.stages.size(); ++s) {
      std::vector<double> values;
      for (const std::vector<double>& round : c.round_stage_bubbles) values.push_back(round[s]);
      per_stage.push_back(absl::StrFormat("%.3f", Median(values)));
    }
    const cli::PipelineStage& stage0 = c.stages[0];
    std::printf(
        "{\"bench\":\"pipeline\",\"model\":\"gpt\",\"schedule\":\"%s\",\"virtual_stages\":%lld,\"layers\":%lld,\"hidden\":%lld,\"seq\":%lld,\"batch\":%lld,"
        "\"pp\":%lld,\"micro_batches\":%lld,\"devices\":%d,\"median_step_ms\":%.3f,\"step_ratio\":%.3f,"
        "\"stage0_peak_bytes\":%lld,\"stage0_persistent_bytes\":%lld,\"stage0_allocated_bytes\":%lld,"
        "\"modelled_bubble\":%.3f,\"measured_bubble\":%.3f,\"measured_bubble_per_stage\":[%s],"
        "\"step_ratio_to_1f1b\":%.3f,\"final_loss\":%.5f}\n",
        c.schedule.c_str(), static_cast<long long>(c.virtual_stages), static_cast<long long>(absl::GetFlag(FLAGS_layers)), static_cast<long long>(absl::GetFlag(FLAGS_hidden)),
        static_cast<long long>(absl::GetFlag(FLAGS_seq)), static_cast<long long>(absl::GetFlag(FLAGS_batch)),
        static_cast<long long>(c.pp), static_cast<long long>(c.micro_batches), c.plan.devices_size(), step,
        base_step > 0 ? step / base_step : 0.0, static_cast<long long>(c.plan.devices(stage0.devices[0]).peak_bytes()),
        static_cast<long long>(stage0.persistent_bytes), static_cast<long long>(c.allocated_bytes),
        cli::ModelledBubble(static_cast<int64_t>(c.stages.size()), c.micro_batches, c.plan.job().pipeline_schedule(),
                            c.virtual_stages),
        Median(c.round_bubbles), absl::StrJoin(per_stage, ",").c_str(), one_f_one_b > 0 ? step / one_f_one_b : 0.0,
        c.final_loss);
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
    std::fprintf(stderr, "pipeline_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
