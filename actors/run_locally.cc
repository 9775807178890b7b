#include "actors/run_locally.h"

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "actors/metrics.h"
#include "actors/predicted_step.h"
#include "actors/reduction_overlap.h"
#include "actors/trace.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {

absl::Status RunPlanLocally(const proto::Plan& plan, const LocalRun& run, std::ostream& out, bool out_is_terminal,
                            std::ostream& log) {
  if (run.iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--iters=", run.iterations, " must be >= 1"));
  }
  if (run.checkpoint.dir.empty() != (run.checkpoint.every == 0) || run.checkpoint.every < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint_dir='", run.checkpoint.dir,
                                                   "' and --checkpoint_every=", run.checkpoint.every,
                                                   " go together: a directory and N >= 1"));
  }
  OF_RETURN_IF_ERROR(CheckRetentionPolicy(run.checkpoint.retention));
  OF_ASSIGN_OR_RETURN(std::unique_ptr<MetricsReporter> reporter,
                      MetricsReporter::Open(run.metrics_path, run.iterations, &out, out_is_terminal));
  TrainOptions options;
  options.node = -1;  // Every node of the plan, simulated in this process.
  options.iterations = run.iterations;
  options.threads_per_device = run.threads_per_device;
  options.threads_per_device_flag = "--threads_per_device";
  if (run.communication_priority_levels >= 0) {
    options.communication_priority_levels = run.communication_priority_levels;
    options.communication_priority_levels_flag = "--communication_priority_levels";
  }
  options.record_acts = !run.trace_path.empty();
  // The measured step beside --auto_parallel's prediction (actors/predicted_step.h).
  MeasuredStep measured(DenseWarmupIterations(plan));
  options.on_iteration = [&](const IterationMetrics& m) {
    measured.Add(m.iteration, m.step_ms);
    if (run.communication_priority_levels < 0) {
      reporter->Report(m);
      return;
    }
    IterationMetrics recorded = m;
    recorded.communication_priority_levels = run.communication_priority_levels;
    reporter->Report(recorded);
  };
  // The lines go out as they come: nothing per iteration stays (a run may last weeks).
  options.keep_iteration_metrics = false;
  options.checkpoint = run.checkpoint;
  options.resume_from = run.resume_from;
  absl::StatusOr<TrainResult> result = TrainPlan(plan, options);
  reporter->Finish();
  OF_RETURN_IF_ERROR(result.status());
  log << PredictedStepLine(plan, measured);
  if (!result->resumed_from.empty()) {
    log << "resumed from " << result->resumed_from << " at iteration " << result->first_iteration << "\n";
  }
  for (const CheckpointRecord& saved : result->checkpoints) {
    log << absl::StrFormat("checkpoint %s: %d B, written in %.1f ms, training stalled %.2f ms\n", saved.dir,
                           saved.bytes, saved.write_ms, saved.stall_ms);
  }
  if (options.record_acts) {
    OF_RETURN_IF_ERROR(WriteChromeTrace(run.trace_path, plan, result->engine.acts));
    if (plan.buckets_size() > 0) {
      // What the trace shows of gradient buckets, in one line.
      const BucketOverlap overlap = MeasureBucketOverlap(plan, result->engine.acts);
      log << absl::StrFormat(
          "gradient buckets: %d acts, %.3f ms of all-reduce, %.3f ms of it while the compute thread acted; %d acts "
          "overlapped a later backward op\n",
          overlap.bucket_acts, overlap.bucket_ms, overlap.overlapped_ms, overlap.acts_overlapping_later_compute);
    }
    // Every gradient reduction, bucketed or not: how much of it the compute threads hid.
    absl::StatusOr<ReductionOverlap> reductions = MeasureReductionOverlap(plan, result->engine.acts);
    if (reductions.ok() && reductions->reduction_acts > 0) {
      std::set<int> devices;  // Those that acted: every device of the plan in one process.
      for (const ActRecord& act : result->engine.acts) devices.insert(act.device_index);
      const double per = 1e6 * static_cast<double>(std::max<int64_t>(1, reductions->iterations)) *
                         static_cast<double>(std::max<size_t>(1, devices.size()));
      log << absl::StrFormat(
          "gradient reductions: %d acts, %.3f ms per iteration and device, %.1f%% hidden behind compute; compute "
          "%.3f ms per iteration and device\n",
          reductions->reduction_acts, reductions->reduction_ns / per, 100 * reductions->hidden_fraction,
          reductions->compute_ns / per);
    }
  }
  log.flush();
  return absl::OkStatus();
}

}  // namespace oneflow::actors
