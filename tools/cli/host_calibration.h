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
//                 sharing the host: an mlp with 1-wide layers (kernels of nanoseconds) on
//                 dp = devices trained, its fastest step x the cores busy (min(cores,
//                 devices)) over every device's acts per iteration
//   collective_call_seconds
//                 what one in-process collective call costs beyond that, its ranks
//                 sharing the cores: the same mlp at tp = devices (hidden = devices, so
//                 it all-reduces every pair of layers), its fastest step less its acts'
//                 share (act_seconds) over the calls of one device
//   cores         the cores this process may run on (sched_getaffinity)
// Other programs on the machine only ever slow a measurement down, so each is the fastest
// of several.
#ifndef TOOLS_CLI_HOST_CALIBRATION_H_
#define TOOLS_CLI_HOST_CALIBRATION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/price.h"
#include "sbp/calibration.h"

namespace oneflow::cli {

// The runtime terms for `devices` devices (act_seconds, collective_call_seconds, cores;
// a host line of the calibration file, its method naming the probes) and the act probe's
// acts per iteration and fastest step. INVALID_ARGUMENT for devices < 1; the probes'
// compile or training errors otherwise.
struct HostRuntime {
  HostMeasurement measurement;
  int64_t probe_acts = 0;
  double probe_step_seconds = 0;
  // The act probe's mean process CPU time per timed iteration over its acts: reported
  // beside act_seconds (the prediction benchmark prints it), not priced.
  double probe_cpu_seconds_per_act = 0;
};
absl::StatusOr<HostRuntime> MeasureHostRuntime(int64_t devices);

struct HostCalibration {
  double gemm_flops_per_second = 0;
  double memory_bytes_per_second = 0;
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
