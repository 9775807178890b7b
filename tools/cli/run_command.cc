#include "tools/cli/run_command.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "actors/runtime.h"
#include "actors/trace.h"
#include "oneflow_core/status.h"
#include "compiler/plan_io.h"

ABSL_FLAG(int64_t, iters, 10, "Iterations to train.");
ABSL_FLAG(std::string, metrics, "",
          "Write one JSON line per iteration here; default: stdout when it is not a terminal "
          "(on a terminal: a progress bar).");
ABSL_FLAG(int64_t, threads_per_device, 0,
          "Threads each CPU device runs its compute kernels on, overriding the plan's "
          "cluster.threads_per_device (0: the plan's).");
ABSL_FLAG(std::string, trace, "",
          "run: write a Chrome/Perfetto trace (JSON) of every act here. inspect: read such a "
          "trace of the plan and show the measured pipeline bubble per stage. report (with "
          "--plan): add the tables of `oneflow profile` for that trace.");

ABSL_FLAG(std::string, checkpoint_dir, "",
          "Save the variables and optimizer state into DIR/iter-N every --checkpoint_every iterations "
          "(asynchronously, atomically; docs/checkpoints.md).");
ABSL_FLAG(int64_t, checkpoint_every, 0, "With --checkpoint_dir: save after every N-th iteration (N >= 1).");
ABSL_FLAG(bool, checkpoint_sync, false,
          "Save checkpoints synchronously, training waiting for the files (the baseline of bench/checkpoint).");
ABSL_FLAG(std::string, resume_from, "",
          "Start from this checkpoint, or the newest complete one under this directory: runs iterations k .. "
          "--iters - 1 for a checkpoint taken after k iterations, on any layout.");

namespace oneflow::cli {
namespace {

absl::Status RunRun(const std::vector<std::string>& arguments, std::ostream& out) {
  const int64_t iterations = absl::GetFlag(FLAGS_iters);
  if (iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--iters=", iterations, " must be >= 1"));
  }
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, ReadPlanFile(arguments[0]));
  OF_ASSIGN_OR_RETURN(std::unique_ptr<actors::MetricsReporter> reporter,
                      actors::MetricsReporter::Open(absl::GetFlag(FLAGS_metrics), iterations, &out,
                                                    isatty(STDOUT_FILENO)));
  actors::TrainOptions options;
  options.node = -1;  // Every node of the plan, simulated in this process.
  options.iterations = iterations;
  // 0 keeps the plan's value; anything else is checked (and refused) by TrainPlan.
  options.threads_per_device = absl::GetFlag(FLAGS_threads_per_device);
  options.threads_per_device_flag = "--threads_per_device";
  options.record_acts = !absl::GetFlag(FLAGS_trace).empty();
  options.on_iteration = [&](const actors::IterationMetrics& m) { reporter->Report(m); };
  options.checkpoint.dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.checkpoint.every = absl::GetFlag(FLAGS_checkpoint_every);
  options.checkpoint.synchronous = absl::GetFlag(FLAGS_checkpoint_sync);
  options.resume_from = absl::GetFlag(FLAGS_resume_from);
  if (options.checkpoint.dir.empty() != (options.checkpoint.every == 0) || options.checkpoint.every < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint_dir='", options.checkpoint.dir,
                                                   "' and --checkpoint_every=", options.checkpoint.every,
                                                   " go together: a directory and N >= 1"));
  }
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  reporter->Finish();
  OF_RETURN_IF_ERROR(result.status());
  // stderr: stdout may be metrics.
  if (!result->resumed_from.empty()) {
    std::fprintf(stderr, "resumed from %s at iteration %lld\n", result->resumed_from.c_str(),
                 static_cast<long long>(result->first_iteration));
  }
  for (const actors::CheckpointRecord& saved : result->checkpoints) {
    std::fprintf(stderr, "checkpoint %s: %lld B, written in %.1f ms, training stalled %.2f ms\n", saved.dir.c_str(),
                 static_cast<long long>(saved.bytes), saved.write_ms, saved.stall_ms);
  }
  if (options.record_acts) {
    OF_RETURN_IF_ERROR(actors::WriteChromeTrace(absl::GetFlag(FLAGS_trace), plan, result->engine.acts));
    if (plan.buckets_size() > 0) {
      // What the trace shows of gradient buckets, in one line (stderr: stdout may be metrics).
      const actors::BucketOverlap overlap = actors::MeasureBucketOverlap(plan, result->engine.acts);
      std::fprintf(stderr,
                   "gradient buckets: %lld acts, %.3f ms of all-reduce, %.3f ms of it while the compute thread "
                   "acted; %lld acts overlapped a later backward op\n",
                   static_cast<long long>(overlap.bucket_acts), overlap.bucket_ms, overlap.overlapped_ms,
                   static_cast<long long>(overlap.acts_overlapping_later_compute));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand RunSubcommand() {
  Subcommand command;
  command.name = "run";
  command.arguments = "PLAN";
  command.flag_usage = "[--iters=N] [--metrics=FILE] [--trace=FILE.json] [--threads_per_device=N] "
      "[--checkpoint_dir=DIR --checkpoint_every=N [--checkpoint_sync]] [--resume_from=DIR]";
  command.summary = "train a plan on this machine's CPU devices, printing loss and throughput";
  command.flags = {"iters",          "metrics",          "trace",           "threads_per_device",
                   "checkpoint_dir", "checkpoint_every", "checkpoint_sync", "resume_from"};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunRun;
  return command;
}

}  // namespace oneflow::cli
