// Prediction quality of --auto_parallel's cost model (compiler/auto_parallel/price.h):
// the gpt on one process with 4 (and 8) simulated CPU devices, over many layouts of the
// search's own enumeration, each priced by the model, compiled, trained and timed. One
// JSON line per layout and a summary per cluster:
//   {"bench":"auto_parallel_prediction","devices":4,"layout":"dp=2 tp=2 ...","predicted_ms":..,
//    "measured_ms":..,"measured_over_predicted":..,"uncalibrated_predicted_ms":..,...}
//   {"bench":"auto_parallel_prediction_summary","devices":4,"layouts":24,
//    "median_abs_error":0.08,"spearman":0.95,"uncalibrated_median_abs_error":..,...}
// The reference of each prediction is the step measured in the same run. Two models are
// reported side by side: "uncalibrated" (the cluster as the examples give it: default
// compute rates, each device its own core, no per-act cost) and "calibrated" (the terms of
// tools/cli/host_calibration.h measured in this process before the sweep (the collective
// call cost the least of that and one measurement per later round:
// {"bench":"auto_parallel_call_cost",...}), the compute rates scaled to the model's own kernels by the CPU time of one 1-device run of
// it ({"bench":"auto_parallel_model_rates",...}), and the act cost and the share of the
// cores the process obtains fitted to runs of it on every device with 1, 2 (and 4)
// micro-batches ({"bench":"auto_parallel_shared_host",...}, FitSharedHostTerms in
// compiler/auto_parallel/host_terms.h). A third model, "probe", prices with the host terms
// `oneflow calibrate` writes (its own act-count probe) in place of the model's references.
// The summary names the host's cores and load.
// The goals (issue 26): median |error| <= 15%, Spearman rank correlation >= 0.9.
//
// Layouts: the search's ranking (calibrated model) of every layout of the cluster, its
// top 3 (the choice) and evenly spaced ranks over the rest, so the sweep covers fast and
// slow families (dp, tp, pp, micro-batches, ZeRO, recomputation). With --reprice=FILE it
// measures nothing: the sweeps FILE holds (this bench's output) are priced again by this
// build's model with each run's own final terms ({"bench":"auto_parallel_reprice",...} per
// layout, with the new prediction's compute / exposed communication / bubble split, the recorded and new error, ranking and choice in
// {"bench":"auto_parallel_reprice_summary",...}). Not a test:
//   bazel run //bench/auto_parallel:prediction_bench   (the .bazelrc builds with -O2)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actors/runtime.h"
#include "bench/auto_parallel/gpt_profile.h"
#include "bench/auto_parallel/prediction_statistics.h"
#include "bench/auto_parallel/reprice.h"
#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/search.h"
#include "compiler/cluster_compute_rates.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"
#include "tools/cli/host_calibration.h"

ABSL_FLAG(std::string, devices, "4,8", "Comma-separated device counts, each one node in this process.");
// The sweep's gpt: large enough that a step is 100-400 ms on 4 devices sharing 2 cores, so
// one scheduler slice (~3 ms) or a wake-up is a few percent of a step and the layouts'
// differences stand above the noise (session 40's hidden 128, seq 32, batch 8 stepped in 6-11
// ms and a layout's measured rank flipped between runs).
ABSL_FLAG(int64_t, layers, 4, "Blocks of the gpt.");
ABSL_FLAG(int64_t, hidden, 256, "Hidden width.");
ABSL_FLAG(int64_t, heads, 4, "Attention heads.");
ABSL_FLAG(int64_t, seq, 64, "Sequence length.");
ABSL_FLAG(int64_t, batch, 16, "Global batch (sequences).");
ABSL_FLAG(int64_t, vocab, 512, "Vocabulary.");
ABSL_FLAG(int64_t, layouts, 20, "Layouts measured per cluster (the top 3 and evenly spaced ranks).");
ABSL_FLAG(int64_t, warmup, 2, "Iterations per layout and round not timed (allocation, warm-up).");
ABSL_FLAG(int64_t, iters, 4, "Timed iterations per layout and round, after the warm-up ones.");
ABSL_FLAG(int64_t, rounds, 5,
          "Rounds over the layouts, interleaved, each starting further into the list; a layout's measured step "
          "is the median of its rounds' medians of the timed iterations, its spread the rounds' medians apart "
          "over that step.");
ABSL_FLAG(int64_t, max_micro_batches, 8, "Largest micro-batch count enumerated.");
ABSL_FLAG(bool, schedule_twins, false,
          "Also measure each picked pipeline layout with the other pipeline schedule (1f1b, zb).");
ABSL_FLAG(bool, sbp_search, true,
          "Compile every layout and the search's probes with the SBP search (--sbp_search, "
          "compiler/passes/sbp_search_pass.h), as --auto_parallel compiles them since session 58; "
          "--nosbp_search: the greedy per-op choice (the runs before session 58).");
ABSL_FLAG(std::string, reprice_memory_cached, "",
          "With --reprice, for a run recorded without a cached memory rate: a calibration file (`oneflow "
          "calibrate --out`) whose \"memory_cached\" line prices the writes into cached bytes (sbp/compute_cost.h).");
ABSL_FLAG(std::string, reprice, "",
          "A file of this bench's output: price the measured layouts of its --devices sweeps again with this "
          "build's model and the run's own final terms (calibration, model rates, shared-host fit, least call "
          "cost), measuring nothing (lines auto_parallel_reprice and auto_parallel_reprice_summary).");

namespace oneflow {
namespace {

using auto_parallel::LayoutName;
using auto_parallel::StepSeconds;
using prediction::CountedProfile;
using prediction::Median;
using prediction::OfRounds;
using prediction::RepeatabilitySpearman;
using prediction::RoundStatistic;
using prediction::RepriceCluster;
using prediction::Spearman;
using prediction::UncalibratedOptions;

examples::ParallelFlags FlagsFor(int64_t devices, const proto::AutoParallelLayout& layout) {
  examples::ParallelFlags cluster;
  cluster.devices_per_node = devices;
  return examples::FlagsForLayout(cluster, layout);
}

// This process's CPU time (every thread), seconds.
double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

struct Measured {
  // Every timed iteration's step and the process's CPU time in it (every thread: what the
  // layout asks of the host's cores, spin-waits included).
  std::vector<double> steps_ms;
  std::vector<double> cpus_ms;
  int64_t acts_per_iteration = 0;  // every device's, from the plan
  int64_t boxing_acts_per_iteration = 0;  // of them, the boxing actors'
};

// A layout's timed iterations of every round. Its step is the median of the rounds'
// medians, its CPU time the median of every round's iterations: within a round the median leaves out one
// lucky scheduling of the threads on 2 cores (the fastest iteration, what the bench took
// before, was that: session 40's 4-device rank of a layout flipped between runs); across
// rounds, which interleave the layouts, the median leaves out a round that other programs
// slowed (a compile taking the core a sleeping device thread left: the same layout's round
// medians moved 20% apart in half the layouts of runs 20-21, and 2x in one) and one that a
// lucky placement of the threads sped up. Through session 47 the step was the least of the
// rounds; it is not what the model prices (every rate and share it is calibrated with is a
// median), it falls with every round added (so a layout confirmed with more rounds than the
// sweep's is not compared like with like), and it ranked the layouts no more repeatably:
// docs/auto_parallel_measurements.md, "Session 48: m48rounds". CPU time counts only while
// a thread runs, so a slow round stretches it far less than the step, and the
// shared-host fit takes slopes of it between runs that differ by a few percent: the CPU of
// the least round alone (a sample of 4) made the act cost's slopes negative in run 23,
// an act cost of 0 and a Spearman of 0.45.
struct Pooled {
  std::vector<double> round_medians_ms;
  std::vector<double> cpus_ms;
  int64_t acts_per_iteration = 0;
  int64_t boxing_acts_per_iteration = 0;
  bool measured = false;

  void Add(const Measured& run) {
    round_medians_ms.push_back(Median(run.steps_ms));
    cpus_ms.insert(cpus_ms.end(), run.cpus_ms.begin(), run.cpus_ms.end());
    acts_per_iteration = run.acts_per_iteration;
    boxing_acts_per_iteration = run.boxing_acts_per_iteration;
    measured = true;
  }
  double StepMs() const { return OfRounds(round_medians_ms, RoundStatistic::kMedian); }
  // The least round: the statistic through session 47, reported beside the step.
  double LeastRoundMs() const { return OfRounds(round_medians_ms, RoundStatistic::kLeast); }
  double CpuMs() const { return Median(cpus_ms); }
  // The rounds' medians apart, over the step: how far one round's figure moves.
  double Spread() const {
    if (round_medians_ms.empty()) return 0;
    const auto [low, high] = std::minmax_element(round_medians_ms.begin(), round_medians_ms.end());
    return (*high - *low) / std::max(1e-9, StepMs());
  }
  std::string RoundsJson() const {
    std::vector<std::string> texts;
    for (double ms : round_medians_ms) texts.push_back(absl::StrFormat("%.3f", ms));
    return absl::StrCat("[", absl::StrJoin(texts, ","), "]");
  }
};

// The compile settings the probes are compiled with: the examples' defaults, with
// --sbp_search as given and the SBP search charging `call_seconds` per collective call
// (the calibration's, as `--codec_calibration` gives the examples theirs).
examples::CompileSettings SearchSettings(double call_seconds) {
  examples::CompileSettings settings;
  settings.sbp_search = absl::GetFlag(FLAGS_sbp_search);
  settings.collective_call_seconds = call_seconds;
  return settings;
}

// Builds, compiles and trains `layout` for one round: its timed iterations.
absl::StatusOr<Measured> Measure(const examples::GptConfig& config, int64_t devices,
                                 const proto::AutoParallelLayout& layout, double call_seconds) {
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout parallel,
                      examples::ParallelLayout::Create(FlagsFor(devices, layout)));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildGpt(config, parallel));
  examples::CompileSettings settings = examples::SettingsForLayout({}, layout);
  settings.sbp_search = absl::GetFlag(FLAGS_sbp_search);
  settings.collective_call_seconds = call_seconds;
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions options, examples::CompileOptionsFor(parallel, settings, &dump));
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, Compile(job, options));
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = absl::GetFlag(FLAGS_warmup) + absl::GetFlag(FLAGS_iters);
  std::vector<double> cpu_at_end;  // process CPU seconds when each iteration's loss arrived
  train.on_iteration = [&](const actors::IterationMetrics&) { cpu_at_end.push_back(ProcessCpuSeconds()); };
  OF_ASSIGN_OR_RETURN(const actors::TrainResult result, actors::TrainPlan(plan, train));
  Measured measured;
  for (const actors::IterationMetrics& metrics : result.iterations) {
    const size_t i = static_cast<size_t>(metrics.iteration);
    if (static_cast<int64_t>(i) < absl::GetFlag(FLAGS_warmup) || i == 0 || i >= cpu_at_end.size()) continue;
    measured.steps_ms.push_back(metrics.step_ms);
    measured.cpus_ms.push_back(1e3 * (cpu_at_end[i] - cpu_at_end[i - 1]));
  }
  if (measured.steps_ms.empty()) return absl::InternalError(absl::StrCat(LayoutName(layout), ": no timed iteration"));
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      const int64_t acts = actor.per_iteration() ? 1 : layout.micro_batches();
      measured.acts_per_iteration += acts;
      if (auto_parallel::BoxingActMeetsPeers(plan, actor)) measured.boxing_acts_per_iteration += acts;
    }
  }
  return measured;
}

struct Row {
  proto::AutoParallelLayout layout;
  double predicted_ms = 0;
  double uncalibrated_ms = 0;
  double measured_ms = 0;
  double measured_cpu_ms = 0;
  // The model's CPU demand of a step: the layout priced on one host core, so the step is
  // every device's compute (acts included) in turn, compared with measured_cpu_ms: the
  // model's work terms without the share of the cores other programs leave this process.
  double predicted_cpu_ms = 0;
  // Priced with the host terms `oneflow calibrate` writes (its act-count probe) instead of
  // the model's own references.
  double probe_ms = 0;
  double spread = 0;  // the rounds' medians apart over the measured step
  // Priced with one cost for every act (no boxing act cost of its own).
  double one_act_cost_ms = 0;
  std::vector<double> round_medians_ms;  // the measured rounds, in round order
  // Priced with one GEMM rate (no GEMM shape model), its own scale and host terms.
  double one_gemm_rate_ms = 0;
};

absl::Status RunCluster(const examples::GptConfig& config, int64_t devices) {
  const auto calibration_start = std::chrono::steady_clock::now();
  OF_ASSIGN_OR_RETURN(const cli::HostCalibration calibration, cli::MeasureHostCalibration(devices));
  std::printf("{\"bench\":\"auto_parallel_calibration\",%s,\"seconds\":%.2f}\n",
              cli::HostCalibrationJson(calibration).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - calibration_start).count());
  std::fflush(stdout);
  // Every plan of the sweep (the probes and the measured layouts) is compiled with the
  // first calibration's call cost, so the rounds measure the same plans.
  const double plan_call_seconds = calibration.runtime.measurement.collective_call_seconds;
  OF_ASSIGN_OR_RETURN(const auto_parallel::ModelProfile profile,
                      CountedProfile(config, devices, absl::GetFlag(FLAGS_max_micro_batches),
                                     SearchSettings(plan_call_seconds)));
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions uncalibrated, UncalibratedOptions(devices, absl::GetFlag(FLAGS_max_micro_batches)));
  auto_parallel::SearchOptions calibrated = uncalibrated;
  cli::ApplyHostCalibration(calibration, &calibrated.price);
  // The collective call cost (what a rank waits for descheduled peers) is the least of its
  // measurements (a model input, unlike a layout's step, which the model is judged by), one before the sweep and one per later round:
  // other programs only ever lengthen the tiny tensor-parallel mlp's step it comes from.
  // (Once, on 8 devices, it came out 588 us as another engineer's run finished, where the
  // runs before and after gave 59-71 us, and ZeRO-3's layouts, whose gathers wait on a call
  // each, measured 0.75-0.82 x their prediction: run 37 of docs/auto_parallel_measurements.md.)
  auto measure_call_cost = [&](int64_t round) {
    absl::StatusOr<cli::HostRuntime> runtime = cli::MeasureHostRuntime(devices);
    if (!runtime.ok()) return;
    const double measured = runtime->measurement.collective_call_seconds;
    calibrated.price.collective_call_seconds = std::min(calibrated.price.collective_call_seconds, measured);
    std::printf(
        "{\"bench\":\"auto_parallel_call_cost\",\"devices\":%lld,\"after_round\":%lld,\"measured_s\":%.4g,"
        "\"least_s\":%.4g}\n",
        static_cast<long long>(devices), static_cast<long long>(round), measured,
        calibrated.price.collective_call_seconds);
    std::fflush(stdout);
  };
  // The model's own kernels on this host (per-op rates differ from a 512^3 SGEMM's): the
  // 1-device layout trained, and both compute rates scaled by its measured step over its
  // predicted compute (its acts' share set aside). A profile of one layout, not a fit to
  // the sweep. It is measured like every layout of the sweep (once per round, the median
  // of the rounds' medians): a reference taken once before the sweep saw another load than the
  // sweep did (measured 68 ms of wall for 31 ms of CPU while the load rose from 2 to 14,
  // which made every prediction 2x too slow). The first measurement ranks the layouts
  // to sweep; the final rates, from every round, price the measured ones.
  proto::AutoParallelLayout single;
  single.set_dp(1);
  single.set_tp(1);
  single.set_pp(1);
  single.set_micro_batches(1);
  // Priced on a core of its own: the scale compares the kernels with the run's CPU time,
  // which no share of the cores stretches. (With the calibration's share, 0.42 here, the
  // prediction was the kernels over that share, so every rate came out 1 / share too fast
  // and the sweep's CPU demand about half its measured CPU time: run 14 of
  // docs/auto_parallel_measurements.md.)
  // Scaled by its CPU time: the kernels' own cost. The host's share of cores and the acts'
  // cost when devices share the cores are measured apart (the shared reference below).
  // (Scaling by wall time under load, without those terms, was run 3 of docs/auto_parallel_measurements.md.)
  // `one_gemm_rate`: every GEMM at the scaled 512^3 rate (the model before the GEMM shape
  // model, priced beside it: the "one_gemm_rate" columns), its own scale.
  auto rates_of = [&](const Pooled& one_device, int64_t round, bool one_gemm_rate) -> absl::StatusOr<auto_parallel::SearchOptions> {
    auto_parallel::SearchOptions scaled = calibrated;
    if (one_gemm_rate) SetClusterGemmShapeModel(GemmShapeModel(), &scaled.price.cluster);
    auto_parallel::PriceOptions one = scaled.price;
    one.cluster.set_devices_per_node(1);
    one.cluster.set_num_nodes(1);
    one.host_cores = 0;
    one.host_core_share = 0;
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction with_acts, auto_parallel::PriceLayout(profile, one, single));
    one.act_seconds = 0;
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction kernels_only,
                        auto_parallel::PriceLayout(profile, one, single));
    const double act_part = StepSeconds(with_acts) - StepSeconds(kernels_only);
    const double scale = std::max(0.05, (one_device.CpuMs() / 1e3 - act_part) / StepSeconds(kernels_only));
    scaled.price.cluster.set_gemm_flops_per_second(calibration.gemm_flops_per_second / scale);
    scaled.price.cluster.set_memory_bytes_per_second(calibration.memory_bytes_per_second / scale);
    scaled.price.memory_cached_bytes_per_second = calibration.memory_cached_bytes_per_second / scale;
    GemmShapeModel shape = ClusterGemmShapeModel(scaled.price.cluster);
    if (shape.measured()) {
      shape.flops_per_second /= scale;
      shape.operand_bytes_per_second /= scale;
      shape.call_seconds *= scale;
      SetClusterGemmShapeModel(shape, &scaled.price.cluster);
    }
    std::printf(
        "{\"bench\":\"auto_parallel_model_rates\",\"devices\":%lld,\"after_round\":%lld,\"one_gemm_rate\":%s,"
        "\"one_device_measured_ms\":%.4f,\"one_device_measured_cpu_ms\":%.4f,"
        "\"one_device_predicted_ms\":%.4f,\"rate_scale\":%.4f,\"gemm_flops_per_second\":%.4g,"
        "\"memory_bytes_per_second\":%.4g,\"gemm_shape_flops_per_second\":%.4g,"
        "\"gemm_shape_operand_bytes_per_second\":%.4g,\"gemm_shape_call_seconds\":%.4g}\n",
        static_cast<long long>(devices), static_cast<long long>(round), one_gemm_rate ? "true" : "false",
        one_device.StepMs(), one_device.CpuMs(), 1e3 * StepSeconds(with_acts), 1 / scale,
        scaled.price.cluster.gemm_flops_per_second(), scaled.price.cluster.memory_bytes_per_second(),
        shape.flops_per_second, shape.operand_bytes_per_second, shape.call_seconds);
    std::fflush(stdout);
    return scaled;
  };
  auto with_rates_of = [&](const Pooled& one_device, int64_t round) {
    return rates_of(one_device, round, /*one_gemm_rate=*/false);
  };
  // The host shared by every device: layouts of the model on all of them, each trained
  // like the sweep's with every micro-batch count its replicas' rows allow (the same
  // kernels in more acts), and auto_parallel::FitSharedHostTerms over them: the act cost
  // the median slope of CPU time over acts among runs of one layout (threads sleep and
  // wake, caches go cold: far above the cost of an act of nanosecond kernels), the share
  // of the cores the process obtains CPU over wall time. The layouts: the most data
  // parallelism that leaves 2 rows per replica (the rest pipeline stages), and the most
  // below it that leaves 4 rows per replica (1, 2 and 4 micro-batches). Profiles of a few layouts, like the
  // 1-device one, measured like them. (Two runs alone, 1 and 2 micro-batches of the first layout, gave an
  // act cost of 0 on 4 devices where the run with fewer acts spun longer: run 11 of
  // docs/auto_parallel_measurements.md.)
  struct Reference {
    proto::AutoParallelLayout layout;
    int64_t group = 0;
    Pooled runs;
    bool for_share = true;  // a one-stage reference of the share's (not the tp one)
  };
  std::vector<Reference> references;
  int64_t above = devices + 1;  // the second layout has less data parallelism than the first
  for (int64_t rows : {2, 4}) {
    for (int64_t dp = above - 1; dp >= 1; --dp) {
      if (devices % dp != 0 || config.batch % (rows * dp) != 0 || devices / dp > profile.stageable_units) continue;
      for (int64_t micro_batches = 1; micro_batches <= rows; micro_batches *= 2) {
        Reference reference;
        reference.layout = single;
        reference.layout.set_dp(dp);
        reference.layout.set_pp(devices / dp);
        reference.layout.set_micro_batches(micro_batches);
        // Runs of one dp x pp share the kernels (the micro-batches only split their rows),
        // so their pairs' slopes are the act cost. (Grouped by rows per replica, a batch of
        // 16 on 4 devices gave dp = 4 for both and left its 4 micro-batches alone in a
        // group: one slope, from 1 and 2 micro-batches.)
        reference.group = dp;
        references.push_back(reference);
      }
      above = dp;
      break;
    }
  }
  // The boxing acts' own cost (FitSharedHostTerms' two-kind fit): tp = 2 with the rest
  // data parallelism, 1, 2 and 4 micro-batches, whose extra acts are one in six
  // Megatron's all-reduces where the references above add 0.5-3% boxing acts. (With 1
  // and 2 alone, one pair set the boxing cost: 68-90 us, which priced tp = 2 with 8
  // micro-batches 25-40% above its CPU time: run 28 of docs/auto_parallel_measurements.md.) Not in
  // the share: the share is that of the layouts measured with it before (runs 22-27).
  for (int64_t micro_batches : {1, 2, 4}) {
    if (!profile.tp_hinted || devices % 2 != 0 || config.batch % ((devices / 2) * micro_batches) != 0) continue;
    Reference reference;
    reference.layout = single;
    reference.layout.set_dp(devices / 2);
    reference.layout.set_tp(2);
    reference.layout.set_micro_batches(micro_batches);
    reference.group = -2;  // no dp of the groups above
    reference.for_share = false;
    references.push_back(reference);
  }
  auto measure_references = [&]() {
    for (Reference& reference : references) {
      absl::StatusOr<Measured> run = Measure(config, devices, reference.layout, plan_call_seconds);
      if (run.ok()) reference.runs.Add(*run);
    }
  };
  // The model with one cost for every act (the median slope), as before the two-kind
  // fit, priced beside it: the "one_act_cost" columns of the summary.
  auto_parallel::SearchOptions one_act_cost;
  auto with_shared_host_of = [&](const auto_parallel::SearchOptions& scaled,
                                 int64_t round) -> absl::StatusOr<auto_parallel::SearchOptions> {
    // The share from the references with every device busy the whole step (one stage)
    // when they fit alone: a pipeline's runs use fewer cores than the host offers (it fills
    // and drains), which the cost model plays out itself (shared_core_pipeline.h), so
    // their CPU over wall would count it twice.
    std::vector<auto_parallel::RunSample> samples, one_stage;
    std::vector<std::string> runs;
    for (const Reference& reference : references) {
      if (!reference.runs.measured) continue;
      samples.push_back({reference.runs.CpuMs() / 1e3, reference.runs.StepMs() / 1e3,
                         reference.runs.acts_per_iteration, reference.group,
                         reference.runs.boxing_acts_per_iteration});
      if (reference.layout.pp() == 1 && reference.for_share) one_stage.push_back(samples.back());
      runs.push_back(absl::StrFormat(
          "{\"layout\":\"%s\",\"measured_ms\":%.4f,\"measured_cpu_ms\":%.4f,\"spread\":%.3f,"
          "\"acts_per_iteration\":%d,\"boxing_acts_per_iteration\":%d}",
          LayoutName(reference.layout), reference.runs.StepMs(), reference.runs.CpuMs(), reference.runs.Spread(),
          reference.runs.acts_per_iteration, reference.runs.boxing_acts_per_iteration));
    }
    OF_ASSIGN_OR_RETURN(auto_parallel::SharedHostTerms terms,
                        auto_parallel::FitSharedHostTerms(samples, scaled.price.host_cores));
    const absl::StatusOr<auto_parallel::SharedHostTerms> busy =
        auto_parallel::FitSharedHostTerms(one_stage, scaled.price.host_cores);
    const bool share_of_one_stage = busy.ok();
    if (share_of_one_stage) terms.host_core_share = busy->host_core_share;
    auto_parallel::SearchOptions shared = scaled;
    shared.price.act_seconds = terms.act_seconds;
    shared.price.boxing_act_seconds = terms.boxing_act_seconds;
    shared.price.host_core_share = terms.host_core_share;
    one_act_cost = shared;
    one_act_cost.price.act_seconds = terms.one_cost_act_seconds;
    one_act_cost.price.boxing_act_seconds.reset();
    std::printf(
        "{\"bench\":\"auto_parallel_shared_host\",\"devices\":%lld,\"after_round\":%lld,\"references\":[%s],"
        "\"act_seconds\":%.4g,\"boxing_act_seconds\":%.4g,\"one_cost_act_seconds\":%.4g,\"solutions\":%lld,"
        "\"host_core_share\":%.3f,\"share_of_one_stage\":%s,\"slopes\":%lld}\n",
        static_cast<long long>(devices), static_cast<long long>(round), absl::StrJoin(runs, ",").c_str(),
        terms.act_seconds, terms.boxing_act_seconds.value_or(-1), terms.one_cost_act_seconds,
        static_cast<long long>(terms.solutions), terms.host_core_share, share_of_one_stage ? "true" : "false",
        static_cast<long long>(terms.slopes));
    std::fflush(stdout);
    return shared;
  };
  // What `oneflow calibrate` writes for this host (its act-count probe, a small gpt of its
  // own: tools/cli/host_calibration.h) priced beside the model's own references: the
  // "probe" columns of the summary.
  auto with_probe_terms = [&](const auto_parallel::SearchOptions& scaled) {
    auto_parallel::SearchOptions probe = scaled;
    probe.price.act_seconds = calibration.runtime.measurement.act_seconds;
    probe.price.host_core_share = calibration.runtime.measurement.core_share;
    probe.price.boxing_act_seconds = calibration.runtime.measurement.boxing_act_seconds;
    return probe;
  };
  Pooled one_device;
  {
    OF_ASSIGN_OR_RETURN(const Measured first, Measure(config, 1, single, plan_call_seconds));
    one_device.Add(first);
  }
  measure_references();
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions first_rates, with_rates_of(one_device, 0));
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions preliminary, with_shared_host_of(first_rates, 0));

  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult ranking, auto_parallel::Search(profile, preliminary));
  // The top 3 and evenly spaced ranks over the rest.
  const int64_t total = static_cast<int64_t>(ranking.fitting.size());
  const int64_t wanted = std::min<int64_t>(total, std::max<int64_t>(3, absl::GetFlag(FLAGS_layouts)));
  std::vector<int64_t> picks = {0, 1, 2};
  for (int64_t k = 0; static_cast<int64_t>(picks.size()) < wanted && k < wanted; ++k) {
    const int64_t index = 3 + (total - 4) * k / std::max<int64_t>(1, wanted - 4);
    if (index < total && std::find(picks.begin(), picks.end(), index) == picks.end()) picks.push_back(index);
  }
  picks.resize(std::min<size_t>(picks.size(), static_cast<size_t>(wanted)));
  if (absl::GetFlag(FLAGS_schedule_twins)) {
    // Each picked pipeline's twin of the other schedule (1F1B, ZB-H1), so the sweep says
    // what the schedule alone changes, measured and predicted.
    const size_t picked = picks.size();
    for (size_t k = 0; k < picked; ++k) {
      const proto::AutoParallelLayout& layout = ranking.fitting[static_cast<size_t>(picks[k])].layout();
      if (layout.pp() <= 1) continue;
      proto::AutoParallelLayout twin = layout;
      twin.set_schedule(layout.schedule() == proto::PIPELINE_SCHEDULE_1F1B ? proto::PIPELINE_SCHEDULE_ZB_H1
                                                                          : proto::PIPELINE_SCHEDULE_1F1B);
      for (int64_t index = 0; index < total; ++index) {
        if (auto_parallel::LayoutName(ranking.fitting[static_cast<size_t>(index)].layout()) ==
                auto_parallel::LayoutName(twin) &&
            std::find(picks.begin(), picks.end(), index) == picks.end()) {
          picks.push_back(index);
        }
      }
    }
  }

  // Round-robin over the layouts, so a burst of load elsewhere slows one round of many
  // layouts rather than every round of one; round r starts r * layouts / rounds layouts in,
  // so no layout always runs at the same moment of a round or after the same neighbour.
  std::vector<Pooled> pooled(picks.size());
  std::vector<absl::Status> failures(picks.size());
  const int64_t rounds = absl::GetFlag(FLAGS_rounds);
  for (int64_t round = 0; round < rounds; ++round) {
    if (round > 0) {
      absl::StatusOr<Measured> again = Measure(config, 1, single, plan_call_seconds);
      if (again.ok()) one_device.Add(*again);
      measure_references();
      measure_call_cost(round);
    }
    const size_t count = picks.size();
    for (size_t k = 0; k < count; ++k) {
      const size_t p = (static_cast<size_t>(round) * count / static_cast<size_t>(rounds) + k) % count;
      absl::StatusOr<Measured> measured = Measure(config, devices, ranking.fitting[picks[p]].layout(), plan_call_seconds);
      if (measured.ok()) {
        pooled[p].Add(*measured);
      } else {
        failures[p] = measured.status();
      }
    }
  }
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions final_rates,
                      with_rates_of(one_device, absl::GetFlag(FLAGS_rounds)));
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions final_options,
                      with_shared_host_of(final_rates, absl::GetFlag(FLAGS_rounds)));
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions one_rate_rates,
                      rates_of(one_device, absl::GetFlag(FLAGS_rounds), /*one_gemm_rate=*/true));
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchOptions one_rate_options,
                      with_shared_host_of(one_rate_rates, absl::GetFlag(FLAGS_rounds)));
  const auto_parallel::SearchOptions probe_options = with_probe_terms(final_rates);
  std::vector<Row> rows;
  const Row* chosen = nullptr;  // the measured layout the final model predicts fastest
  for (size_t p = 0; p < picks.size(); ++p) {
    const int64_t index = picks[p];
    const proto::AutoParallelLayout& layout = ranking.fitting[index].layout();
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction after,
                        auto_parallel::PriceLayout(profile, final_options.price, layout));
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction before,
                        auto_parallel::PriceLayout(profile, uncalibrated.price, layout));
    const Pooled& measured = pooled[p];
    if (!measured.measured || !failures[p].ok()) {
      std::printf("{\"bench\":\"auto_parallel_prediction\",\"devices\":%lld,\"layout\":\"%s\",\"error\":\"%s\"}\n",
                  static_cast<long long>(devices), LayoutName(layout).c_str(),
                  absl::CHexEscape(failures[p].message()).c_str());
      continue;
    }
    auto_parallel::PriceOptions one_core = final_options.price;
    one_core.host_cores = 1;
    one_core.host_core_share = 0;
    // CPU demand: kernels and acts (the acts' cost measured in CPU time includes the
    // collectives' spinning); a wait for a descheduled peer is no CPU work.
    one_core.collective_call_seconds = 0;
    auto_parallel::PriceOptions no_call = final_options.price;
    no_call.collective_call_seconds = 0;
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction without_calls,
                        auto_parallel::PriceLayout(profile, no_call, layout));
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction demand,
                        auto_parallel::PriceLayout(profile, one_core, layout));
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction probed,
                        auto_parallel::PriceLayout(profile, probe_options.price, layout));
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction one_cost,
                        auto_parallel::PriceLayout(profile, one_act_cost.price, layout));
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction one_rate,
                        auto_parallel::PriceLayout(profile, one_rate_options.price, layout));
    Row row{layout,           1e3 * StepSeconds(after),  1e3 * StepSeconds(before), measured.StepMs(),
            measured.CpuMs(), 1e3 * StepSeconds(demand), 1e3 * StepSeconds(probed), measured.Spread(),
            1e3 * StepSeconds(one_cost), measured.round_medians_ms, 1e3 * StepSeconds(one_rate)};
    std::printf(
        "{\"bench\":\"auto_parallel_prediction\",\"model\":\"gpt\",\"devices\":%lld,\"search_rank\":%lld,"
        "\"layout\":\"%s\",\"predicted_ms\":%.4f,\"predicted_compute_ms\":%.4f,\"predicted_communication_ms\":%.4f,"
        "\"predicted_bubble_ms\":%.4f,\"measured_ms\":%.4f,\"measured_round_medians_ms\":%s,\"measured_spread\":%.3f,"
        "\"measured_least_of_rounds_ms\":%.4f,\"measured_cpu_ms\":%.4f,\"measured_over_predicted\":%.3f,"
        "\"uncalibrated_predicted_ms\":%.4f,\"measured_over_uncalibrated\":%.3f,\"acts_per_iteration\":%lld,"
        "\"predicted_acts_per_iteration\":%lld,"
        "\"predicted_cpu_ms\":%.4f,\"predicted_without_call_cost_ms\":%.4f,\"probe_predicted_ms\":%.4f,"
        "\"one_act_cost_predicted_ms\":%.4f,\"one_gemm_rate_predicted_ms\":%.4f}\n",
        static_cast<long long>(devices), static_cast<long long>(index + 1), LayoutName(layout).c_str(),
        row.predicted_ms, 1e3 * after.compute_seconds(), 1e3 * after.exposed_communication_seconds(),
        1e3 * after.bubble_seconds(), row.measured_ms, measured.RoundsJson().c_str(), measured.Spread(),
        measured.LeastRoundMs(), row.measured_cpu_ms,
        row.measured_ms / row.predicted_ms, row.uncalibrated_ms, row.measured_ms / row.uncalibrated_ms,
        static_cast<long long>(measured.acts_per_iteration),
        static_cast<long long>(after.acts_per_iteration()),
        row.predicted_cpu_ms, 1e3 * StepSeconds(without_calls), row.probe_ms, row.one_act_cost_ms,
        row.one_gemm_rate_ms);
    std::fflush(stdout);
    rows.push_back(row);
  }
  if (rows.size() < 3) return absl::InternalError(absl::StrCat(devices, " devices: fewer than 3 layouts ran"));
  std::vector<double> predicted, uncalibrated_predicted, measured, errors, uncalibrated_errors;
  std::vector<double> predicted_cpu, measured_cpu, cpu_errors, probe_predicted, probe_errors, spreads;
  std::vector<double> one_cost_predicted, one_cost_errors, one_rate_predicted, one_rate_errors;
  const Row* best = &rows.front();
  for (const Row& row : rows) {
    predicted.push_back(row.predicted_ms);
    uncalibrated_predicted.push_back(row.uncalibrated_ms);
    measured.push_back(row.measured_ms);
    errors.push_back(std::abs(row.predicted_ms - row.measured_ms) / row.measured_ms);
    uncalibrated_errors.push_back(std::abs(row.uncalibrated_ms - row.measured_ms) / row.measured_ms);
    predicted_cpu.push_back(row.predicted_cpu_ms);
    measured_cpu.push_back(row.measured_cpu_ms);
    cpu_errors.push_back(std::abs(row.predicted_cpu_ms - row.measured_cpu_ms) / std::max(1e-9, row.measured_cpu_ms));
    probe_predicted.push_back(row.probe_ms);
    probe_errors.push_back(std::abs(row.probe_ms - row.measured_ms) / row.measured_ms);
    spreads.push_back(row.spread);
    one_cost_predicted.push_back(row.one_act_cost_ms);
    one_cost_errors.push_back(std::abs(row.one_act_cost_ms - row.measured_ms) / row.measured_ms);
    one_rate_predicted.push_back(row.one_gemm_rate_ms);
    one_rate_errors.push_back(std::abs(row.one_gemm_rate_ms - row.measured_ms) / row.measured_ms);
    if (row.measured_ms < best->measured_ms) best = &row;
  }
  const Row* one_cost_chosen = nullptr;
  const Row* one_rate_chosen = nullptr;
  for (const Row& row : rows) {
    if (chosen == nullptr || row.predicted_ms < chosen->predicted_ms) chosen = &row;
    if (one_cost_chosen == nullptr || row.one_act_cost_ms < one_cost_chosen->one_act_cost_ms) one_cost_chosen = &row;
    if (one_rate_chosen == nullptr || row.one_gemm_rate_ms < one_rate_chosen->one_gemm_rate_ms) one_rate_chosen = &row;
  }
  // The statistic through session 47 beside this one, from the same rounds: each layout's
  // least round, its Spearman against the prediction, the choice over the best by it, and
  // both statistics' repeatability (even rounds against odd ones).
  std::vector<std::vector<double>> rounds_per_row;
  std::vector<double> least;
  double least_best = 0;
  for (const Row& row : rows) {
    rounds_per_row.push_back(row.round_medians_ms);
    least.push_back(OfRounds(row.round_medians_ms, RoundStatistic::kLeast));
    least_best = least_best == 0 ? least.back() : std::min(least_best, least.back());
  }
  const double chosen_least = OfRounds(chosen->round_medians_ms, RoundStatistic::kLeast);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 1) load[0] = -1;
  std::printf(
      "{\"bench\":\"auto_parallel_prediction_summary\",\"model\":\"gpt\",\"layers\":%lld,\"hidden\":%lld,"
      "\"seq\":%lld,\"batch\":%lld,\"devices\":%lld,\"layouts_enumerated\":%lld,\"layouts\":%zu,"
      "\"median_abs_error\":%.4f,\"spearman\":%.4f,\"uncalibrated_median_abs_error\":%.4f,"
      "\"uncalibrated_spearman\":%.4f,\"goal_median_abs_error\":0.15,\"goal_spearman\":0.9,"
      "\"chosen\":\"%s\",\"chosen_measured_ms\":%.4f,\"best_measured\":\"%s\",\"best_measured_ms\":%.4f,"
      "\"chosen_over_best\":%.3f,\"cpu_median_abs_error\":%.4f,\"cpu_spearman\":%.4f,"
      "\"probe_median_abs_error\":%.4f,\"probe_spearman\":%.4f,\"median_spread\":%.4f,\"max_spread\":%.4f,"
      "\"one_act_cost_median_abs_error\":%.4f,\"one_act_cost_spearman\":%.4f,\"one_act_cost_chosen_over_best\":%.3f,"
      "\"gemm_shape_model\":%s,\"one_gemm_rate_median_abs_error\":%.4f,\"one_gemm_rate_spearman\":%.4f,"
      "\"one_gemm_rate_chosen_over_best\":%.3f,"
      "\"rounds\":%lld,\"repeatability_spearman\":%.4f,\"least_of_rounds_repeatability_spearman\":%.4f,"
      "\"least_of_rounds_spearman\":%.4f,\"least_of_rounds_chosen_over_best\":%.3f,"
      "\"host_cores\":%lld,\"loadavg_1min\":%.2f,\"sbp_search\":%s,\"sbp_search_call_seconds\":%.4g}\n",
      static_cast<long long>(config.layers), static_cast<long long>(config.hidden),
      static_cast<long long>(config.seq), static_cast<long long>(config.batch), static_cast<long long>(devices),
      static_cast<long long>(total), rows.size(), Median(errors), Spearman(predicted, measured),
      Median(uncalibrated_errors), Spearman(uncalibrated_predicted, measured), LayoutName(chosen->layout).c_str(),
      chosen->measured_ms, LayoutName(best->layout).c_str(), best->measured_ms, chosen->measured_ms / best->measured_ms,
      Median(cpu_errors), Spearman(predicted_cpu, measured_cpu), Median(probe_errors),
      Spearman(probe_predicted, measured), Median(spreads), *std::max_element(spreads.begin(), spreads.end()),
      Median(one_cost_errors), Spearman(one_cost_predicted, measured), one_cost_chosen->measured_ms / best->measured_ms,
      ClusterGemmShapeModel(final_options.price.cluster).measured() ? "true" : "false", Median(one_rate_errors),
      Spearman(one_rate_predicted, measured), one_rate_chosen->measured_ms / best->measured_ms,
      static_cast<long long>(absl::GetFlag(FLAGS_rounds)), RepeatabilitySpearman(rounds_per_row, RoundStatistic::kMedian),
      RepeatabilitySpearman(rounds_per_row, RoundStatistic::kLeast), Spearman(predicted, least),
      chosen_least / least_best, static_cast<long long>(calibration.runtime.measurement.cores),
      load[0], absl::GetFlag(FLAGS_sbp_search) ? "true" : "false", plan_call_seconds);
  std::fflush(stdout);
  return absl::OkStatus();
}

absl::Status Run() {
  examples::GptConfig config;
  config.layers = absl::GetFlag(FLAGS_layers);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.seq = absl::GetFlag(FLAGS_seq);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.vocab = absl::GetFlag(FLAGS_vocab);
  if (absl::GetFlag(FLAGS_iters) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--iters=", absl::GetFlag(FLAGS_iters), " leaves no timed iteration; give 1 or more"));
  }
  if (absl::GetFlag(FLAGS_warmup) < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--warmup=", absl::GetFlag(FLAGS_warmup), ": give 1 or more (the first iteration allocates every register)"));
  }
  if (absl::GetFlag(FLAGS_rounds) < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--rounds=", absl::GetFlag(FLAGS_rounds), " must be >= 1"));
  }
  std::vector<int64_t> clusters;  // every count checked before the first sweep
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_devices), ',', absl::SkipEmpty())) {
    int64_t devices = 0;
    if (!absl::SimpleAtoi(text, &devices) || devices < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--devices: '", text, "' is not a device count >= 1"));
    }
    clusters.push_back(devices);
  }
  const std::string reprice = absl::GetFlag(FLAGS_reprice);
  if (!reprice.empty()) {
    std::ifstream in(reprice);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--reprice: cannot read '", reprice, "'"));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (int64_t devices : clusters) OF_RETURN_IF_ERROR(RepriceCluster(config, devices, absl::GetFlag(FLAGS_max_micro_batches), lines, reprice,
                                                                     absl::GetFlag(FLAGS_reprice_memory_cached)));
    return absl::OkStatus();
  }
  for (int64_t devices : clusters) OF_RETURN_IF_ERROR(RunCluster(config, devices));
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "prediction_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
