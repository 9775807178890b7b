// What the auto-parallel cost model needs to know about the host a whole cluster is
// simulated on (one process, every device a pair of threads: `oneflow run`, the examples'
// --run), measured in a few seconds in this process:
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
#ifndef BENCH_AUTO_PARALLEL_HOST_CALIBRATION_H_
#define BENCH_AUTO_PARALLEL_HOST_CALIBRATION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/price.h"
#include "sbp/calibration.h"

namespace oneflow::bench {

struct HostCalibration {
  double gemm_flops_per_second = 0;
  double memory_bytes_per_second = 0;
  LinkLevelMeasurement intra_node;
  double act_seconds = 0;
  double collective_call_seconds = 0;
  int64_t cores = 0;
  int64_t devices = 0;
  // The act measurement: acts per iteration of its plan and its median step.
  int64_t probe_acts = 0;
  double probe_step_seconds = 0;
};

absl::StatusOr<HostCalibration> MeasureHostCalibration(int64_t devices);

// The cluster's compute rates and intra-node link, act_seconds, collective_call_seconds and
// host_cores of `options`
// from `calibration`.
void ApplyHostCalibration(const HostCalibration& calibration, auto_parallel::PriceOptions* options);

// "\"gemm_flops_per_second\":1.1e+11,...": the fields as JSON members.
std::string HostCalibrationJson(const HostCalibration& calibration);

}  // namespace oneflow::bench

#endif  // BENCH_AUTO_PARALLEL_HOST_CALIBRATION_H_
