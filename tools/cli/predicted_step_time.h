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
};

// INVALID_ARGUMENT naming the bad part when the plan's placements or links cannot be
// priced (a plan that passed CheckPlanForReading and was compiled by this build always
// can).
absl::StatusOr<StepTimePrediction> PredictStepTime(const proto::Plan& plan);

// "predicted step time: 12.3 ms (device 0:0: compute 10.1 ms = GEMM 4.2 + memory-bound
// 5.9, communication 2.2 ms, not overlapped)".
std::string StepTimeText(const proto::Plan& plan, const StepTimePrediction& prediction);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_PREDICTED_STEP_TIME_H_
