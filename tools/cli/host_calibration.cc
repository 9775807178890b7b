#include "tools/cli/host_calibration.h"

#include <time.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/host_terms.h"
#include "actors/runtime.h"
#include "compiler/cluster_compute_rates.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "oneflow_core/status.h"
#include "tools/cli/link_calibration.h"
#include "tools/cli/machine_calibration.h"

namespace oneflow::cli {
namespace {

constexpr int64_t kRepetitions = 3;
constexpr int64_t kRounds = 4;
// Iterations of the act probe; the first two (allocation, warm-up) are not timed.
constexpr int64_t kActIterations = 40;

// The fastest step of the tiny mlp (every width 1, or `devices` for tp: kernels of
// nanoseconds) on `devices` devices, data-parallel or tensor-parallel, and its plan.
struct TinyRun {
  double step_seconds = 0;
  int64_t acts = 0;         // every device's, per iteration
  int64_t collectives = 0;  // device 0's collective calls per iteration
  // The process's CPU time per timed iteration (mean): what the acts cost the host's
  // cores, which other programs' load stretches far less than the wall time.
  double cpu_seconds_per_iteration = 0;
};

double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

absl::StatusOr<TinyRun> RunTinyMlp(int64_t devices, bool tensor_parallel) {
  examples::MlpConfig config;
  config.batch = devices;
  config.in_features = 1;
  config.hidden = tensor_parallel ? devices : 1;
  config.classes = 2;
  config.layers = 8;
  examples::ParallelFlags flags;
  flags.devices_per_node = devices;
  (tensor_parallel ? flags.tp : flags.dp) = devices;
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildMlp(config, layout));
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions options,
                      examples::CompileOptionsFor(layout, examples::CompileSettings{}, &dump));
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, Compile(job, options));
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = kActIterations;
  std::vector<double> cpu_at_end;  // when each iteration's loss arrived
  train.on_iteration = [&](const actors::IterationMetrics&) { cpu_at_end.push_back(ProcessCpuSeconds()); };
  OF_ASSIGN_OR_RETURN(const actors::TrainResult result, actors::TrainPlan(plan, train));
  TinyRun run;
  if (cpu_at_end.size() > 2) {
    run.cpu_seconds_per_iteration =
        (cpu_at_end.back() - cpu_at_end[1]) / static_cast<double>(cpu_at_end.size() - 2);
  }
  run.step_seconds = 1e9;
  for (const actors::IterationMetrics& metrics : result.iterations) {
    if (metrics.iteration >= 2) run.step_seconds = std::min(run.step_seconds, metrics.step_ms / 1e3);
  }
  for (const proto::DevicePlan& device : plan.devices()) run.acts += device.actors_size();
  for (const proto::ActorDef& actor : plan.devices(0).actors()) {
    if (actor.kind() == proto::ACTOR_BOXING && actor.collective_id() >= 0) ++run.collectives;
  }
  return run;
}

// The act-count probe: a small gpt (its acts are a transformer's: attention, norms, GEMMs
// of tens of microseconds, between which a device's threads sleep and wake as the real
// models' do) at dp = devices, 8 rows per replica, trained with 1, 2, 4 and 8 micro-batches:
// the same kernels cut into more acts.
constexpr int64_t kProbeRowsPerReplica = 8;
constexpr int64_t kProbeMicroBatches[] = {1, 2, 4, 8};
// The tensor-parallel runs (for the boxing act's cost) on an even device count.
constexpr int64_t kProbeTensorParallelMicroBatches[] = {1, 2, 4};
// Iterations per run (the first two not timed).
constexpr int64_t kProbeIterations = 7;

examples::GptConfig ProbeGpt(int64_t devices) {
  examples::GptConfig config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 2;
  config.seq = 16;
  config.vocab = 64;
  config.batch = devices * kProbeRowsPerReplica;
  return config;
}

}  // namespace

std::vector<SharedHostProbeRun> SharedHostProbeRuns(int64_t devices) {
  std::vector<SharedHostProbeRun> runs;
  for (int64_t micro_batches : kProbeMicroBatches) runs.push_back({false, micro_batches});
  // The boxing acts' own cost: tp = 2, whose extra acts with micro-batches are a
  // collective's in a far larger proportion than dp's (an all-reduce per block's matmul
  // pair), so FitSharedHostTerms' two-kind fit tells the kinds apart, as the prediction
  // benchmark's tp reference does (docs/auto_parallel_measurements.md).
  if (devices >= 2 && devices % 2 == 0) {
    for (int64_t micro_batches : kProbeTensorParallelMicroBatches) runs.push_back({true, micro_batches});
  }
  return runs;
}

absl::StatusOr<proto::Plan> CompileSharedHostProbe(int64_t nodes, int64_t devices_per_node,
                                                   const SharedHostProbeRun& run) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = devices_per_node;
  flags.tp = run.tensor_parallel ? 2 : 1;
  flags.dp = nodes * devices_per_node / flags.tp;
  flags.micro_batches = run.micro_batches;
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildGpt(ProbeGpt(nodes * devices_per_node), layout));
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions options,
                      examples::CompileOptionsFor(layout, examples::CompileSettings{}, &dump));
  return Compile(job, options);
}

absl::StatusOr<auto_parallel::RunSample> RunSharedHostProbe(const proto::Plan& plan, const SharedHostProbeRun& run,
                                                            actors::TrainOptions train) {
  train.iterations = kProbeIterations;
  std::vector<double> cpu_at_end;
  train.on_iteration = [&](const actors::IterationMetrics&) { cpu_at_end.push_back(ProcessCpuSeconds()); };
  OF_ASSIGN_OR_RETURN(const actors::TrainResult result, actors::TrainPlan(plan, train));
  auto_parallel::RunSample sample;
  if (cpu_at_end.size() < 3) {
    return absl::InternalError(absl::StrCat("the act-count probe reported ", cpu_at_end.size(), " iterations of ",
                                            kProbeIterations));
  }
  sample.cpu_seconds = (cpu_at_end.back() - cpu_at_end[1]) / static_cast<double>(cpu_at_end.size() - 2);
  double wall = 0;
  int64_t timed = 0;
  for (const actors::IterationMetrics& metrics : result.iterations) {
    if (metrics.iteration < 2) continue;
    wall += metrics.step_ms / 1e3;
    ++timed;
  }
  sample.wall_seconds = timed > 0 ? wall / static_cast<double>(timed) : 0;
  sample.reference = run.tensor_parallel ? 1 : 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      const int64_t acts = actor.per_iteration() ? 1 : run.micro_batches;
      sample.acts += acts;
      if (auto_parallel::BoxingActMeetsPeers(plan, actor)) sample.boxing_acts += acts;
    }
  }
  return sample;
}

absl::StatusOr<SharedHostProbe> FitSharedHostProbe(const std::vector<auto_parallel::RunSample>& samples,
                                                   int64_t devices, int64_t cores, absl::string_view where,
                                                   int64_t rounds) {
  SharedHostProbe probe;
  probe.samples = samples;
  OF_ASSIGN_OR_RETURN(probe.terms, auto_parallel::FitSharedHostTerms(probe.samples, cores));
  // The share with every device busy on the same layout: the data-parallel runs' (a tp
  // run's ranks also wait in their all-reduces, which is not the share of the cores).
  std::vector<auto_parallel::RunSample> data_parallel;
  for (const auto_parallel::RunSample& sample : samples) {
    if (sample.reference == 0) data_parallel.push_back(sample);
  }
  OF_ASSIGN_OR_RETURN(const auto_parallel::SharedHostTerms busy, auto_parallel::FitSharedHostTerms(data_parallel, cores));
  probe.terms.host_core_share = busy.host_core_share;
  const examples::GptConfig config = ProbeGpt(devices);
  std::vector<std::string> runs;
  for (const auto_parallel::RunSample& sample : probe.samples) {
    runs.push_back(absl::StrFormat("%s%d acts (%d boxing) %.4g s CPU in %.4g s", sample.reference == 1 ? "tp=2 " : "",
                                   sample.acts, sample.boxing_acts, sample.cpu_seconds, sample.wall_seconds));
  }
  const std::string boxing =
      probe.terms.boxing_act_seconds.has_value()
          ? absl::StrFormat("boxing act: two-kind fit with tp=2 dp=%d, 1/2/4 micro-batches (%d solutions)",
                            devices / 2, probe.terms.solutions)
          : std::string("boxing act: not told apart (costs an act)");
  probe.method = absl::StrFormat(
      "gpt of %d blocks (hidden %d, seq %d) %s, dp=%d, 1/2/4/8 micro-batches, least CPU of %d rounds: "
      "%s; act: Theil-Sen slope of CPU over acts (%d pairs); %s; core share: median CPU over wall at dp=%d",
      config.layers, config.hidden, config.seq, where, devices, rounds, absl::StrJoin(runs, ", "),
      probe.terms.slopes, boxing, devices);
  return probe;
}

absl::StatusOr<SharedHostProbe> MeasureSharedHost(int64_t devices, int64_t cores) {
  if (devices < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the shared host is measured for devices >= 1, not ", devices));
  }
  std::vector<auto_parallel::RunSample> samples;
  for (const SharedHostProbeRun& run : SharedHostProbeRuns(devices)) {
    OF_ASSIGN_OR_RETURN(const proto::Plan plan, CompileSharedHostProbe(1, devices, run));
    auto_parallel::RunSample least;
    for (int64_t round = 0; round < kSharedHostProbeRounds; ++round) {
      actors::TrainOptions train;
      train.node = -1;
      OF_ASSIGN_OR_RETURN(const auto_parallel::RunSample sample, RunSharedHostProbe(plan, run, train));
      if (round == 0 || sample.cpu_seconds < least.cpu_seconds) least = sample;
    }
    samples.push_back(least);
  }
  return FitSharedHostProbe(samples, devices, cores, "in one process");
}

// act_seconds and the core share from the act-count probe (MeasureSharedHost).
// collective_call_seconds from the tiny tensor-parallel mlp: its step less its acts at the
// tiny data-parallel mlp's cost per act (its step x the busy cores over its acts: acts of
// nanosecond kernels, as the tp mlp's are), over device 0's calls.
absl::StatusOr<HostRuntime> MeasureHostRuntime(int64_t devices) {
  if (devices < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the host's runtime is measured for devices >= 1, not ", devices));
  }
  HostRuntime runtime;
  HostMeasurement& measurement = runtime.measurement;
  measurement.devices = devices;
  measurement.cores = ThisMachine().cores;
  OF_ASSIGN_OR_RETURN(runtime.shared, MeasureSharedHost(devices, measurement.cores));
  measurement.act_seconds = runtime.shared.terms.act_seconds;
  measurement.core_share = runtime.shared.terms.host_core_share;
  measurement.boxing_act_seconds = runtime.shared.terms.boxing_act_seconds;
  measurement.method = runtime.shared.method;
  OF_ASSIGN_OR_RETURN(const TinyRun data_parallel, RunTinyMlp(devices, /*tensor_parallel=*/false));
  runtime.probe_step_seconds = data_parallel.step_seconds;
  runtime.probe_acts = data_parallel.acts;
  runtime.probe_cpu_seconds_per_act = data_parallel.cpu_seconds_per_iteration / static_cast<double>(data_parallel.acts);
  if (devices < 2) return runtime;
  const double busy_cores = static_cast<double>(std::min(measurement.cores, devices));
  const double tiny_act_seconds = data_parallel.step_seconds * busy_cores / static_cast<double>(data_parallel.acts);
  OF_ASSIGN_OR_RETURN(const TinyRun tensor_parallel, RunTinyMlp(devices, /*tensor_parallel=*/true));
  const double acts_share = tiny_act_seconds * static_cast<double>(tensor_parallel.acts) / busy_cores;
  const int64_t calls = std::max<int64_t>(1, tensor_parallel.collectives);
  measurement.collective_call_seconds =
      std::max(0.0, tensor_parallel.step_seconds - acts_share) / static_cast<double>(calls);
  absl::StrAppendFormat(&measurement.method,
                        "; collective call: mlp of 8 1-wide layers, tp=%d fastest step %.4g s less its %d acts at "
                        "dp=%d's %.3g us, over %d calls per device",
                        devices, tensor_parallel.step_seconds, tensor_parallel.acts, devices, 1e6 * tiny_act_seconds,
                        calls);
  return runtime;
}

absl::StatusOr<HostCalibration> MeasureHostCalibration(int64_t devices) {
  HostCalibration calibration;
  // The best of a few medians: other programs only ever slow a measurement down.
  for (int64_t round = 0; round < kRounds; ++round) {
    calibration.gemm_flops_per_second =
        std::max(calibration.gemm_flops_per_second, cli::MeasureGemmFlopsPerSecond(kRepetitions));
    calibration.memory_bytes_per_second =
        std::max(calibration.memory_bytes_per_second, cli::MeasureMemoryBytesPerSecond(kRepetitions));
  }
  std::vector<GemmTiming> gemm_timings;
  for (int64_t round = 0; round < kRounds; ++round) {
    const std::vector<GemmTiming> timings = cli::MeasureGemmShapes(kRepetitions);
    if (round == 0) gemm_timings = timings;
    for (size_t i = 0; i < timings.size(); ++i) {
      gemm_timings[i].seconds = std::min(gemm_timings[i].seconds, timings[i].seconds);
    }
  }
  calibration.gemm_shape = FitGemmShapeModel(gemm_timings);
  calibration.gemm_shape_median_error = MedianRelativeError(calibration.gemm_shape, gemm_timings);
  calibration.cache_bytes = cli::CoreCacheBytes();
  for (int64_t round = 0; calibration.cache_bytes > 0 && round < kRounds; ++round) {
    calibration.memory_cached_bytes_per_second =
        std::max(calibration.memory_cached_bytes_per_second,
                 cli::MeasureCachedMemoryBytesPerSecond(kRepetitions, calibration.cache_bytes));
  }
  for (int64_t round = 0; round < kRounds; ++round) {
    OF_ASSIGN_OR_RETURN(const cli::MeasuredLink measured, cli::MeasureInProcessLink(kRepetitions));
    const LinkLevelMeasurement& link = measured.fit;
    if (round == 0 || link.latency_seconds < calibration.intra_node.latency_seconds) {
      calibration.intra_node.latency_seconds = link.latency_seconds;
    }
    if (round == 0 || link.bytes_per_second > calibration.intra_node.bytes_per_second) {
      calibration.intra_node.bytes_per_second = link.bytes_per_second;
      calibration.intra_node.method = link.method;
    }
  }
  OF_ASSIGN_OR_RETURN(calibration.runtime, MeasureHostRuntime(devices));
  return calibration;
}

void ApplyHostCalibration(const HostCalibration& calibration, auto_parallel::PriceOptions* options) {
  options->cluster.set_gemm_flops_per_second(calibration.gemm_flops_per_second);
  options->cluster.set_memory_bytes_per_second(calibration.memory_bytes_per_second);
  options->memory_cached_bytes_per_second = calibration.memory_cached_bytes_per_second;
  options->cache_bytes = static_cast<double>(calibration.cache_bytes);
  SetClusterGemmShapeModel(calibration.gemm_shape, &options->cluster);
  options->cluster.set_intra_node_latency(calibration.intra_node.latency_seconds);
  options->cluster.set_intra_node_bandwidth(calibration.intra_node.bytes_per_second);
  auto_parallel::ApplyHostMeasurement(calibration.runtime.measurement, options);
}

std::string HostCalibrationJson(const HostCalibration& calibration) {
  return absl::StrFormat(
      "\"devices\":%d,\"gemm_flops_per_second\":%.4g,\"memory_bytes_per_second\":%.4g,"
      "\"memory_cached_bytes_per_second\":%.4g,\"cache_bytes\":%d,\"gemm_shape_flops_per_second\":%.4g,"
      "\"gemm_shape_operand_bytes_per_second\":%.4g,\"gemm_shape_call_seconds\":%.4g,"
      "\"gemm_shape_median_error\":%.4f,\"intra_node_latency_s\":%.4g,\"intra_node_bytes_per_second\":%.4g,\"act_seconds\":%.4g,"
      "\"collective_call_seconds\":%.4g,"
      "\"host_cores\":%d,\"host_core_share\":%.4g,\"act_fit_pairs\":%d,\"act_probe_acts\":%d,"
      "\"act_probe_step_s\":%.4g,\"act_probe_cpu_s_per_act\":%.4g,\"boxing_act_seconds\":%s",
      calibration.runtime.measurement.devices, calibration.gemm_flops_per_second,
      calibration.memory_bytes_per_second, calibration.memory_cached_bytes_per_second, calibration.cache_bytes,
      calibration.gemm_shape.flops_per_second, calibration.gemm_shape.operand_bytes_per_second,
      calibration.gemm_shape.call_seconds, calibration.gemm_shape_median_error, calibration.intra_node.latency_seconds,
      calibration.intra_node.bytes_per_second, calibration.runtime.measurement.act_seconds,
      calibration.runtime.measurement.collective_call_seconds, calibration.runtime.measurement.cores,
      calibration.runtime.measurement.core_share, calibration.runtime.shared.terms.slopes, calibration.runtime.probe_acts, calibration.runtime.probe_step_seconds,
      calibration.runtime.probe_cpu_seconds_per_act,
      calibration.runtime.measurement.boxing_act_seconds.has_value()
          ? absl::StrFormat("%.4g", *calibration.runtime.measurement.boxing_act_seconds)
          : std::string("null"));
}

}  // namespace oneflow::cli
