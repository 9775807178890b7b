// The cost model's memory (compiler/auto_parallel/peak_bytes.h) against memory planning:
// every layout the search enumerates for the gpt (or an mlp, --model=mlp) on one process with 4 (and 8) devices
// (ZeRO stages, recomputation, pipelines and micro-batches included), priced by the model
// and compiled, its predicted peak beside the largest DevicePlan.peak_bytes of its plan.
// Nothing is trained: both figures are deterministic, so one run is the measurement. One
// JSON line per layout and a summary per cluster:
//   {"bench":"auto_parallel_peak","devices":4,"layout":"dp=2 tp=2 ...","predicted_bytes":..,
//    "planned_bytes":..,"predicted_over_planned":..,"blocks":[...]}
//   {"bench":"auto_parallel_peak_summary","devices":4,"layouts":..,"median_ratio":..,
//    "least_ratio":..,"greatest_ratio":..,"within_25_percent":..}
// "blocks" are the memory blocks of the device with the largest planned peak (persistent,
// the arena's slot and copies, the receptions, the per-iteration values): where a
// difference lies. The goal (26): memory = what memory planning will allocate.
// Not a test:
//   bazel run //bench/auto_parallel:peak_bench
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
#include "bench/auto_parallel/gpt_profile.h"
#include "bench/auto_parallel/prediction_statistics.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "oneflow_core/status.h"

ABSL_FLAG(std::string, model, "gpt",
          "gpt (the sweep's, its profile counted as prediction_bench counts it) or mlp (each layout priced "
          "by the examples' driver, PriceGivenLayout, as --predict_step prices it).");
ABSL_FLAG(std::string, devices, "4,8", "Comma-separated device counts, each one node in this process.");
ABSL_FLAG(int64_t, nodes, 1, "Nodes the devices are spread over (mlp; the devices are per node).");
ABSL_FLAG(int64_t, layers, 4, "Blocks of the gpt.");
ABSL_FLAG(int64_t, hidden, 256, "Hidden width.");
ABSL_FLAG(int64_t, heads, 4, "Attention heads.");
ABSL_FLAG(int64_t, seq, 64, "Sequence length.");
ABSL_FLAG(int64_t, batch, 16, "Global batch (sequences).");
ABSL_FLAG(int64_t, vocab, 512, "Vocabulary.");
ABSL_FLAG(int64_t, max_micro_batches, 8, "Largest micro-batch count enumerated.");
ABSL_FLAG(int64_t, mlp_hidden, 64, "The mlp's hidden width (its batch is --batch, 3 layers).");
ABSL_FLAG(int64_t, layouts, 0, "Layouts compiled per cluster, evenly spaced over the enumeration (0: all).");

namespace oneflow {
namespace {

using auto_parallel::LayoutName;

std::string BlocksJson(const proto::DevicePlan& device) {
  std::vector<std::string> blocks;
  for (const proto::MemoryBlock& block : device.memory_blocks()) {
    blocks.push_back(absl::StrFormat("{\"id\":%d,\"bytes\":%d,\"slot_bytes\":%d,\"persistent\":%s}", block.id(),
                                     block.size_bytes(), block.slot_stride_bytes(),
                                     block.persistent() ? "true" : "false"));
  }
  return absl::StrCat("[", absl::StrJoin(blocks, ","), "]");
}

absl::Status RunCluster(const examples::GptConfig& config, int64_t devices) {
  const int64_t max_micro_batches = absl::GetFlag(FLAGS_max_micro_batches);
  const bool mlp = absl::GetFlag(FLAGS_model) == "mlp";
  if (!mlp && absl::GetFlag(FLAGS_model) != "gpt") {
    return absl::InvalidArgumentError(absl::StrCat("--model=", absl::GetFlag(FLAGS_model), " is not one of: gpt, mlp"));
  }
  examples::MlpConfig mlp_config;
  mlp_config.batch = config.batch;
  mlp_config.hidden = absl::GetFlag(FLAGS_mlp_hidden);
  mlp_config.layers = 3;
  const examples::JobBuilder build = [&](const examples::ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
    return mlp ? examples::BuildMlp(mlp_config, layout) : examples::BuildGpt(config, layout);
  };
  examples::ParallelFlags cluster;
  cluster.nodes = mlp ? absl::GetFlag(FLAGS_nodes) : 1;
  cluster.devices_per_node = devices;
  const int64_t all_devices = cluster.nodes * devices;
  examples::AutoParallelRequest request;
  request.cluster = cluster;
  request.max_micro_batches = max_micro_batches;
  auto_parallel::ModelProfile profile;
  auto_parallel::SearchOptions options;
  if (mlp) {
    // Enumerated from the probe's profile; each layout priced by the driver.
    examples::ParallelFlags probe;
    probe.devices_per_node = 2;
    probe.tp = 2;
    OF_ASSIGN_OR_RETURN(const examples::ParallelLayout probe_layout, examples::ParallelLayout::Create(probe));
    OF_ASSIGN_OR_RETURN(const proto::Job probe_job, build(probe_layout));
    OF_ASSIGN_OR_RETURN(profile, auto_parallel::ProfileJob(probe_job, 2));
  } else {
    OF_ASSIGN_OR_RETURN(profile, prediction::CountedProfile(config, devices, max_micro_batches));
    OF_ASSIGN_OR_RETURN(options, prediction::UncalibratedOptions(devices, max_micro_batches));
  }
  std::vector<proto::AutoParallelLayout> layouts =
      auto_parallel::EnumerateLayouts(profile, all_devices, max_micro_batches);
  const int64_t wanted = absl::GetFlag(FLAGS_layouts);
  if (wanted > 0 && wanted < static_cast<int64_t>(layouts.size())) {
    std::vector<proto::AutoParallelLayout> spaced;
    for (int64_t i = 0; i < wanted; ++i) spaced.push_back(layouts[i * layouts.size() / wanted]);
    layouts = spaced;
  }
  std::vector<double> ratios;
  for (const proto::AutoParallelLayout& layout : layouts) {
    absl::StatusOr<proto::AutoParallelPrediction> predicted;
    if (mlp) {
      absl::StatusOr<proto::AutoParallelDecision> decision = examples::PriceGivenLayout(build, request, layout);
      if (!decision.ok()) continue;
      predicted = decision->chosen();
    } else {
      predicted = auto_parallel::PriceLayout(profile, options.price, layout);
    }
    if (!predicted.ok()) continue;
    OF_ASSIGN_OR_RETURN(const examples::ParallelLayout parallel,
                        examples::ParallelLayout::Create(examples::FlagsForLayout(cluster, layout)));
    absl::StatusOr<proto::Job> job = build(parallel);
    if (!job.ok()) continue;
    const examples::CompileSettings settings = examples::SettingsForLayout({}, layout);
    std::string dump;
    OF_ASSIGN_OR_RETURN(const CompileOptions compile_options, examples::CompileOptionsFor(parallel, settings, &dump));
    absl::StatusOr<proto::Plan> plan = Compile(*job, compile_options);
    if (!plan.ok()) {
      std::printf("{\"bench\":\"auto_parallel_peak\",\"devices\":%lld,\"layout\":\"%s\",\"error\":\"%s\"}\n",
                  static_cast<long long>(devices), LayoutName(layout).c_str(),
                  std::string(plan.status().message()).c_str());
      continue;
    }
    const proto::DevicePlan* largest = nullptr;
    std::vector<std::string> peaks;
    for (const proto::DevicePlan& device : plan->devices()) {
      if (largest == nullptr || device.peak_bytes() > largest->peak_bytes()) largest = &device;
      peaks.push_back(absl::StrCat(device.peak_bytes()));
    }
    if (largest == nullptr) continue;
    const double ratio = static_cast<double>(predicted->peak_bytes()) / static_cast<double>(largest->peak_bytes());
    ratios.push_back(ratio);
    std::printf(
        "{\"bench\":\"auto_parallel_peak\",\"devices\":%lld,\"layout\":\"%s\",\"predicted_bytes\":%lld,"
        "\"planned_bytes\":%lld,\"predicted_over_planned\":%.4f,\"device_peaks\":[%s],\"blocks\":%s}\n",
        static_cast<long long>(devices), LayoutName(layout).c_str(), static_cast<long long>(predicted->peak_bytes()),
        static_cast<long long>(largest->peak_bytes()), ratio, absl::StrJoin(peaks, ",").c_str(),
        BlocksJson(*largest).c_str());
    std::fflush(stdout);
  }
  if (ratios.empty()) return absl::InternalError(absl::StrCat(devices, " devices: no layout compiled"));
  const auto [least, greatest] = std::minmax_element(ratios.begin(), ratios.end());
  const int64_t within = std::count_if(ratios.begin(), ratios.end(), [](double r) { return r >= 0.75 && r <= 1.25; });
  std::printf(
      "{\"bench\":\"auto_parallel_peak_summary\",\"devices\":%lld,\"layouts\":%zu,\"median_ratio\":%.4f,"
      "\"least_ratio\":%.4f,\"greatest_ratio\":%.4f,\"within_25_percent\":%.4f}\n",
      static_cast<long long>(devices), ratios.size(), prediction::Median(ratios), *least, *greatest,
      static_cast<double>(within) / static_cast<double>(ratios.size()));
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  oneflow::examples::GptConfig config;
  config.layers = absl::GetFlag(FLAGS_layers);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.seq = absl::GetFlag(FLAGS_seq);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.vocab = absl::GetFlag(FLAGS_vocab);
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_devices), ',')) {
    int64_t devices = 0;
    if (!absl::SimpleAtoi(text, &devices) || devices < 1) {
      std::fprintf(stderr, "--devices: '%s' is not a device count\n", std::string(text).c_str());
      return 2;
    }
    const absl::Status status = oneflow::RunCluster(config, devices);
    if (!status.ok()) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
