// The step time the cost model predicts for a plan: what `oneflow inspect` prints beside
// the plan, and what tests/predicted_step_time_test.cc compares with measured runs.
//
// Per device, per iteration: its compute kernels priced by sbp/compute_cost.h (GEMMs by
// shape, the rest by the bytes of their registers) at the plan's Cluster rates, plus its
// collectives as the boxing steps' modelled seconds (BoxingStepDef.seconds, priced when
// compiled: sbp/collective_cost.h and the codec passes) and each gradient bucket's
// collective priced the same way from the plan's links (a compressed bucket: its
// members' codec passes and wire bytes summed, its calls' latency once). An actor that acts once per
// micro-batch counts Job.micro_batches times. The prediction is the slowest device's
// compute plus communication, as if none of the communication overlapped compute (the
// upper end: compute and communication threads can overlap, so a run may be faster).
//
// A plan compiled with --compression_warmup=N (Compression.dense_warmup_iterations) runs
// its first N iterations with every compressed step and bucket dense: those iterations
// are predicted apart, from the steps' dense prices (BoxingStepDef.dense_seconds; a
// bucket's dense collective), so the prediction has two steps where the run has two.
#ifndef TOOLS_CLI_PREDICTED_STEP_TIME_H_
#define TOOLS_CLI_PREDICTED_STEP_TIME_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace oneflow::cli {

struct DeviceStepTime {
  double gemm_seconds = 0;
  double memory_bound_seconds = 0;
  double communication_seconds = 0;

  double compute_seconds() const { return gemm_seconds + memory_bound_seconds; }
  double seconds() const { return compute_seconds() + communication_seconds; }
};

struct StepTimePrediction {
  // One per plan.devices, in that order.
  std::vector<DeviceStepTime> devices;
  // The index of the slowest device (the first of equals).
  int slowest = 0;

  double seconds() const { return devices.empty() ? 0 : devices[slowest].seconds(); }

  // The dense warm-up (--compression_warmup): its iterations (0: none, and the two
  // members below stay empty), each device's step in them, and the slowest of those.
  int64_t dense_warmup_iterations = 0;
  std::vector<DeviceStepTime> warmup_devices;
  int warmup_slowest = 0;

  double warmup_seconds() const { return warmup_devices.empty() ? 0 : warmup_devices[warmup_slowest].seconds(); }
};

// INVALID_ARGUMENT naming the bad part when the plan's placements or links cannot be
// priced (a plan that passed CheckPlanForReading and was compiled by this build always
// can).
absl::StatusOr<StepTimePrediction> PredictStepTime(const proto::Plan& plan);

// "predicted step time: 12.3 ms (device 0:0: compute 10.1 ms = GEMM 4.2 + memory-bound
// 5.9, communication 2.2 ms, not overlapped)", and with a dense warm-up a second line,
// "predicted step time of the first 50 iterations (dense warm-up, --compression_warmup):
// 14.8 ms (device 0:0: communication 4.7 ms)" (compute as in the steady step).
std::string StepTimeText(const proto::Plan& plan, const StepTimePrediction& prediction);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_PREDICTED_STEP_TIME_H_
