// What the auto-parallel cost model needs to know about the host a whole cluster is
// simulated on (one process, every device a pair of threads: `oneflow run`, the examples'
// --run), measured in a few seconds in this process. `oneflow calibrate` writes the
// runtime terms as the calibration file's host lines (sbp/calibration.h); the prediction
// benchmark (bench/auto_parallel/prediction_bench.cc) measures everything here before
// its sweep.
//   gemm, memory  one thread's SGEMM and streamed-copy rates, and the in-process link's
//                 alpha and beta (tools/cli/link_calibration.h, as `oneflow calibrate`
//                 measures them); the best of a few medians
//   act_seconds   the runtime's CPU time per act beyond its kernel, for `devices` devices
//   core_share    sharing the host, and the cores' worth of CPU time the process obtains:
//                 the act-count probe, a small gpt (2 blocks, hidden 64, seq 16: kernels of
//                 tens of microseconds, between which threads sleep and wake as a real
//                 model's do) on dp = devices trained with 1, 2, 4 and 8 micro-batches
//                 (the same kernels in more acts), each its least process CPU time per
//                 step of 2 rounds; act_seconds the Theil-Sen slope of CPU time over acts,
//                 core_share the median of the runs' CPU over wall time (auto_parallel::FitSharedHostTerms)
//   boxing_act_seconds
//                 on an even device count, the same gpt at tp = 2 (the rest dp) with 1, 2
//                 and 4 micro-batches beside those runs: its extra acts are boxing acts in
//                 a far larger proportion, so FitSharedHostTerms' two-kind fit gives a
//                 boxing act's own cost (and act_seconds becomes the other acts')
//   collective_call_seconds
//                 what one in-process collective call costs beyond its acts, its ranks
//                 sharing the cores: an mlp of 1-wide layers at tp = devices (hidden =
//                 devices, so it all-reduces every pair of layers), its fastest step less
//                 its acts at the cost the same mlp at dp = devices gives them (its
//                 fastest step x the busy cores over its acts), over one device's calls
//   cores         the cores this process may run on (sched_getaffinity)
// Other programs on the machine only ever slow a measurement down, so each is the fastest
// of several.
#ifndef TOOLS_CLI_HOST_CALIBRATION_H_
#define TOOLS_CLI_HOST_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "actors/runtime.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/price.h"
#include "proto/plan.pb.h"
#include "sbp/calibration.h"

namespace oneflow::cli {

// The act-count probe's runs (one per micro-batch count) and the terms fitted to them.
struct SharedHostProbe {
  std::vector<auto_parallel::RunSample> samples;  // per run, its round of the least CPU time
  // Per run, its round of the least wall time (MeasureSharedHostInProcesses only; empty
  // otherwise): what a fit of wall time takes (shared_machine_turns.h AddOwnCoreActSeconds).
  std::vector<auto_parallel::RunSample> least_wall_samples;
  auto_parallel::SharedHostTerms terms;
  std::string method;  // the runs and the fit, for the host line
};
// INVALID_ARGUMENT for devices < 1; the probe's compile or training errors otherwise.
absl::StatusOr<SharedHostProbe> MeasureSharedHost(int64_t devices, int64_t cores);

// The pieces of the act-count probe, for MeasureSharedHost (its devices threads of this
// process) and tools/cli/shared_host_processes.h (one process per device, as a launched
// job runs).
//
// One run of the probe: its layout and micro-batches. SharedHostProbeRuns gives them in
// order for `devices` devices (dp with 1, 2, 4, 8 micro-batches; on an even count also
// tp = 2 with 1, 2, 4); each is run kSharedHostProbeRounds times and keeps its least CPU
// time (other programs only add to it).
struct SharedHostProbeRun {
  bool tensor_parallel = false;
  int64_t micro_batches = 1;
};
inline constexpr int64_t kSharedHostProbeRounds = 2;
std::vector<SharedHostProbeRun> SharedHostProbeRuns(int64_t devices);
// The probe gpt of `run` on `nodes` nodes of `devices_per_node` devices (the rest of the
// devices data parallelism); the compiler's errors.
absl::StatusOr<proto::Plan> CompileSharedHostProbe(int64_t nodes, int64_t devices_per_node,
                                                   const SharedHostProbeRun& run);
// Trains `plan` (of `run`) with `train` (its node and rendezvous; the iterations are the
// probe's): this process's CPU time and the wall time per timed iteration (means), and
// every device's acts and boxing acts per iteration of the plan. The runtime's errors.
absl::StatusOr<auto_parallel::RunSample> RunSharedHostProbe(const proto::Plan& plan, const SharedHostProbeRun& run,
                                                            actors::TrainOptions train);
// The terms fitted to the runs' samples (each run's least CPU time of `rounds` rounds; the
// share from the data-parallel ones), with the method naming them and `where` they ran ("in
// one process"); FitSharedHostTerms' errors.
absl::StatusOr<SharedHostProbe> FitSharedHostProbe(const std::vector<auto_parallel::RunSample>& samples,
                                                   int64_t devices, int64_t cores, absl::string_view where,
                                                   int64_t rounds = kSharedHostProbeRounds);

// The runtime terms for `devices` devices (act_seconds, collective_call_seconds, cores,
// core_share; a host line of the calibration file, its method naming the probes) and the
// tiny data-parallel mlp's acts per iteration and fastest step. INVALID_ARGUMENT for
// devices < 1; the probes' compile or training errors otherwise.
struct HostRuntime {
  HostMeasurement measurement;
  SharedHostProbe shared;
  int64_t probe_acts = 0;
  double probe_step_seconds = 0;
  // The tiny data-parallel mlp's mean process CPU time per timed iteration over its acts
  // (acts of nanosecond kernels): reported beside act_seconds (the prediction benchmark
  // prints it), not priced.
  double probe_cpu_seconds_per_act = 0;
};
absl::StatusOr<HostRuntime> MeasureHostRuntime(int64_t devices);

struct HostCalibration {
  double gemm_flops_per_second = 0;
  double memory_bytes_per_second = 0;
  // The cached memory rate and the core cache it was measured in (link_calibration.h
  // CoreCacheBytes); 0: the machine lists none.
  double memory_cached_bytes_per_second = 0;
  int64_t cache_bytes = 0;
  // A GEMM's seconds by its shape (sbp/gemm_shape_model.h), fitted to the fastest of the
  // rounds' timings of each shape, and the fit's median |error| over them.
  GemmShapeModel gemm_shape;
  double gemm_shape_median_error = 0;
  LinkLevelMeasurement intra_node;
  HostRuntime runtime;
};

// Everything of the top of this file for `devices` devices.
absl::StatusOr<HostCalibration> MeasureHostCalibration(int64_t devices);

// The cluster's compute rates and intra-node link of `options` from `calibration`, and
// its act_seconds, collective_call_seconds and host_cores (ApplyHostMeasurement).
void ApplyHostCalibration(const HostCalibration& calibration, auto_parallel::PriceOptions* options);

// "\"gemm_flops_per_second\":1.1e+11,...": the fields as JSON members.
std::string HostCalibrationJson(const HostCalibration& calibration);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_HOST_CALIBRATION_H_
