#include "actors/runtime.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/behaviors/boxing_behavior.h"
#include "actors/behaviors/bucket_behavior.h"
#include "actors/behaviors/compute_behavior.h"
#include "actors/behaviors/leaf_behaviors.h"
#include "actors/behaviors/plan_index.h"
#include "actors/compression_meter.h"
#include "compiler/plan_verifier.h"
#include "kernels/cpu/thread_pool.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {

namespace {

// The threads per device this run uses: the option when set, else the plan's.
absl::StatusOr<int64_t> ThreadsPerDevice(const proto::Plan& plan, const TrainOptions& options) {
  if (options.threads_per_device != 0) {
    OF_RETURN_IF_ERROR(
        CheckThreadsPerDevice(options.threads_per_device, options.threads_per_device_flag));
    return options.threads_per_device;
  }
  // Plans written before the field have 0: one thread, as they ran then.
  const int64_t planned = plan.cluster().threads_per_device();
  if (planned == 0) return 1;
  OF_RETURN_IF_ERROR(CheckThreadsPerDevice(planned, "the plan's cluster.threads_per_device"));
  return planned;
}

}  // namespace

absl::StatusOr<TrainResult> TrainPlan(const proto::Plan& plan, const TrainOptions& options) {
  // Before anything is allocated: a plan that is damaged, crafted, would deadlock or
  // needs a step the runtime lacks is refused here, not in iteration 0.
  OF_RETURN_IF_ERROR(VerifyPlan(plan));
  OF_RETURN_IF_ERROR(CheckDevicesRunHere(plan));
  OF_ASSIGN_OR_RETURN(PlanIndex index, PlanIndex::Create(plan));
  OF_ASSIGN_OR_RETURN(const int64_t threads_per_device, ThreadsPerDevice(plan, options));
  CommunicatorPoolOptions pool_options;
  pool_options.node = options.node;
  pool_options.rendezvous = options.rendezvous;
  pool_options.worker_host = options.worker_host;
  CommunicatorPool communicators(plan, pool_options);
  // The loss is B: every device's sink sees the same value; the first device of this
  // node (of the plan, when every node runs here) that has a sink reports it. With
  // pipeline stages only the last stage's devices have one, so a node holding no last
  // stage reports no losses.
  int reporting_device = -1;
  for (int d = 0; d < plan.devices_size() && reporting_device < 0; ++d) {
    if (options.node >= 0 && plan.devices(d).device().node() != options.node) continue;
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      if (actor.kind() == proto::ACTOR_SINK) {
        reporting_device = d;
        break;
      }
    }
  }
  CompressionMeterOptions meter_options;
  meter_options.bound = options.compression_error_bound;
  meter_options.warn = options.on_warning;
  CompressionMeter meter(std::move(meter_options));
  TrainResult result;
  std::mutex mutex;
  auto last = std::chrono::steady_clock::now();
  const int64_t batch = plan.job().batch_size();
  // A line covers its whole iteration: the backward boxings (and what they meter) run
  // after the loss arrives, so iteration i is reported once its loss arrived and every
  // local device finished it (the engine's iteration gate: all its actors acted on i).
  std::vector<int64_t> completed(plan.devices_size(), 0);
  std::vector<int> local_devices;
  for (int d = 0; d < plan.devices_size(); ++d) {
    const bool local = options.node < 0 || plan.devices(d).device().node() == options.node;
    if (local && plan.devices(d).actors_size() > 0) local_devices.push_back(d);
  }
  // One pool per local device that computes; they outlive the engine run below.
  std::vector<std::unique_ptr<KernelThreadPool>> pools(plan.devices_size());
  if (threads_per_device > 1) {
    for (int d : local_devices) {
      pools[d] = std::make_unique<KernelThreadPool>(static_cast<int>(threads_per_device));
    }
  }
  std::map<int64_t, IterationMetrics> losses;  // arrived, not yet reported
  int64_t next_report = 0;
  auto report_ready = [&] {  // under `mutex`
    int64_t finished = std::numeric_limits<int64_t>::max();
    for (int d : local_devices) finished = std::min(finished, completed[d]);
    for (auto it = losses.find(next_report); it != losses.end() && next_report < finished;
         it = losses.find(next_report)) {
      IterationMetrics metrics = std::move(it->second);
      losses.erase(it);
      metrics.compression = meter.TakeIteration(next_report++);
      result.iterations.push_back(metrics);
      if (options.on_iteration) options.on_iteration(metrics);
    }
  };
  auto on_loss = [&](int64_t iteration, float loss) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto now = std::chrono::steady_clock::now();
    IterationMetrics& metrics = losses[iteration];
    metrics.iteration = iteration;
    metrics.loss = loss;
    metrics.step_ms = std::chrono::duration<double, std::milli>(now - last).count();
    metrics.samples_per_s = metrics.step_ms > 0 ? batch * 1000.0 / metrics.step_ms : 0;
    last = now;
    report_ready();
  };
  BindFunction behavior = [&](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
    switch (binding.actor->kind()) {
      case proto::ACTOR_DATA_SOURCE:
        return BindDataSource(index, binding);
      case proto::ACTOR_VARIABLE:
        return BindVariable(index, binding);
      case proto::ACTOR_COMPUTE:
        return BindCompute(index, binding, pools[binding.device_index].get());
      case proto::ACTOR_BOXING:
        if (binding.actor->has_bucket_id()) {
          return BindBucket(index, binding, &communicators, options.collective_timeout);
        }
        return BindBoxing(index, binding, &communicators, options.collective_timeout, &meter);
      case proto::ACTOR_SINK:
        return BindLossSink(binding, binding.device_index == reporting_device
                                         ? std::function<void(int64_t, float)>(on_loss)
                                         : nullptr);
      default:
        return absl::UnimplementedError(absl::StrCat("actor kind ", proto::ActorKind_Name(binding.actor->kind()),
                                                     " has no behavior"));
    }
  };
  BindFunction bind = behavior;
  if (options.wrap_act) {
    bind = [&](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
      OF_ASSIGN_OR_RETURN(ActFunction act, behavior(binding));
      return options.wrap_act(binding, std::move(act));
    };
  }
  EngineOptions engine_options;
  engine_options.node = options.node;
  engine_options.iterations = options.iterations;
  engine_options.progress_timeout = options.progress_timeout;
  engine_options.record_acts = options.record_acts;
  engine_options.on_collective_done = options.on_collective_done;
  engine_options.on_iteration_done = [&](int device_index, int64_t count) {
    if (options.on_iteration_done) options.on_iteration_done(device_index, count);
    std::lock_guard<std::mutex> lock(mutex);
    // Two threads of one device may report out of order; counts only grow.
    completed[device_index] = std::max(completed[device_index], count);
    report_ready();
  };
  engine_options.on_failure = [&communicators, &options](const absl::Status& error) {
    communicators.AbortAll(absl::AbortedError(absl::StrCat("the run stopped: ", error.message())));
    if (options.on_failure) options.on_failure(error);
  };
  last = std::chrono::steady_clock::now();
  OF_ASSIGN_OR_RETURN(result.engine, RunEngine(plan, bind, engine_options));
  return result;
}

}  // namespace oneflow::actors
