#include "tools/cli/run_command.h"

#include <unistd.h>

#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "actors/checkpoint/checkpoint_retention.h"
#include "actors/run_locally.h"
#include "actors/thread_priority.h"
#include "plan/plan_io.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, iters, 10, "Iterations to train.");
ABSL_FLAG(std::string, metrics, "",
          "Write one JSON line per iteration here; default: stdout when it is not a terminal "
          "(on a terminal: a progress bar).");
ABSL_FLAG(int64_t, threads_per_device, 0,
          "Threads each CPU device runs its compute kernels on, overriding the plan's "
          "cluster.threads_per_device (0: the plan's).");
ABSL_FLAG(std::string, trace, "",
          "run, launch: write a Chrome/Perfetto trace (JSON) of every act here (launch: every node's, "
          "after the job finished). inspect: read such a trace of the plan and show the measured "
          "pipeline bubble per stage. report: add the tables of `oneflow profile` for that trace.");

ABSL_FLAG(std::string, checkpoint_dir, "",
          "Save the variables and optimizer state into DIR/iter-N every --checkpoint_every iterations "
          "(asynchronously, atomically; docs/checkpoints.md).");
ABSL_FLAG(int64_t, checkpoint_every, 0, "With --checkpoint_dir: save after every N-th iteration (N >= 1).");
ABSL_FLAG(int64_t, keep_checkpoints, oneflow::actors::kDefaultKeepCheckpoints,
          "With --checkpoint_dir: keep the newest N complete checkpoints, deleting older ones once a newer one "
          "is complete and verified (0 keeps all; docs/checkpoints.md).");
ABSL_FLAG(int64_t, keep_checkpoint_every, 0,
          "With --keep_checkpoints: checkpoints whose iteration is a multiple of N are kept besides (0: none).");
ABSL_FLAG(bool, checkpoint_sync, false,
          "Save checkpoints synchronously, training waiting for the files (the baseline of bench/checkpoint).");
ABSL_FLAG(std::string, resume_from, "",
          "Start from this checkpoint, or the newest complete one under this directory: runs iterations k .. "
          "--iters - 1 for a checkpoint taken after k iterations, on any layout.");
ABSL_FLAG(int64_t, communication_priority_levels, -1,
          "run, launch: nice levels by which communication threads lead compute threads, in [0, 39] (0: every "
          "thread at the process's nice value; -1: the default, 10; on a kernel with per-thread slices, Linux "
          "6.12 and later, any N > 0 is a short slice at one nice value instead, docs/runtime.md); recorded in "
          "every metrics line (launch: always, the workers' value).");

namespace oneflow::cli {
namespace {

absl::Status RunRun(const std::vector<std::string>& arguments, std::ostream& out) {
  actors::LocalRun run;
  run.iterations = absl::GetFlag(FLAGS_iters);
  if (run.iterations < 1) {  // Before reading a possibly big plan.
    return absl::InvalidArgumentError(absl::StrCat("--iters=", run.iterations, " must be >= 1"));
  }
  run.metrics_path = absl::GetFlag(FLAGS_metrics);
  run.threads_per_device = absl::GetFlag(FLAGS_threads_per_device);
  run.trace_path = absl::GetFlag(FLAGS_trace);
  run.checkpoint.dir = absl::GetFlag(FLAGS_checkpoint_dir);
  run.checkpoint.every = absl::GetFlag(FLAGS_checkpoint_every);
  run.checkpoint.synchronous = absl::GetFlag(FLAGS_checkpoint_sync);
  run.checkpoint.retention.keep_last = absl::GetFlag(FLAGS_keep_checkpoints);
  run.checkpoint.retention.keep_every = absl::GetFlag(FLAGS_keep_checkpoint_every);
  run.resume_from = absl::GetFlag(FLAGS_resume_from);
  run.communication_priority_levels = absl::GetFlag(FLAGS_communication_priority_levels);
  if (run.communication_priority_levels != -1) {
    OF_RETURN_IF_ERROR(actors::ValidateCommunicationPriorityLevels(run.communication_priority_levels,
                                                                   "--communication_priority_levels"));
  }
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, ReadPlanFile(arguments[0]));
  // stderr for what is not a metrics line: stdout may be metrics.
  return actors::RunPlanLocally(plan, run, out, isatty(STDOUT_FILENO), std::cerr);
}

}  // namespace

Subcommand RunSubcommand() {
  Subcommand command;
  command.name = "run";
  command.arguments = "PLAN";
  command.flag_usage = "[--iters=N] [--metrics=FILE] [--trace=FILE.json] [--threads_per_device=N] "
      "[--checkpoint_dir=DIR --checkpoint_every=N [--checkpoint_sync] [--keep_checkpoints=K] "
      "[--keep_checkpoint_every=N]] [--resume_from=DIR] [--communication_priority_levels=N]";
  command.summary = "train a plan on this machine's CPU devices, printing loss and throughput";
  command.flags = {"iters",          "metrics",          "trace",           "threads_per_device",
                   "checkpoint_dir", "checkpoint_every", "checkpoint_sync", "resume_from",
                   "keep_checkpoints", "keep_checkpoint_every", "communication_priority_levels"};
  command.flag_help = {{"trace", "Write a Chrome/Perfetto trace (JSON) of every act here (ui.perfetto.dev)."}};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunRun;
  return command;
}

}  // namespace oneflow::cli
