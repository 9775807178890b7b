// Training a plan on this machine, all of its nodes in this process: the one path behind
// `oneflow run PLAN` and the examples' `--run` (so both print the same lines, take the
// same checkpoint and trace options, and refuse the same bad input).
//
//   LocalRun run;
//   run.iterations = 30;
//   OF_RETURN_IF_ERROR(RunPlanLocally(plan, run, std::cout, isatty(STDOUT_FILENO), std::cerr));
#ifndef ACTORS_RUN_LOCALLY_H_
#define ACTORS_RUN_LOCALLY_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "actors/runtime.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

struct LocalRun {
  int64_t iterations = 10;
  // JSON lines go here; empty: to `out` (a progress bar when it is a terminal).
  std::string metrics_path;
  // 0: the plan's; otherwise checked by TrainPlan.
  int64_t threads_per_device = 0;
  // A Chrome/Perfetto trace of every act is written here; empty: none.
  std::string trace_path;
  CheckpointOptions checkpoint;
  std::string resume_from;
  // Nice levels by which communication threads lead compute threads (TrainOptions);
  // < 0: the default (kCommunicationPriorityLevels), not recorded; otherwise checked
  // ([0, 39]) and recorded in every metrics line.
  int64_t communication_priority_levels = -1;
};

// Errors name the flag spelling of the option (--iters=0 must be >= 1, --checkpoint_dir
// without --checkpoint_every, ...). What is not a metrics line (resume point, checkpoint
// figures, the gradient-bucket overlap of a trace) goes to `log`.
absl::Status RunPlanLocally(const proto::Plan& plan, const LocalRun& run, std::ostream& out, bool out_is_terminal,
                            std::ostream& log);

}  // namespace oneflow::actors

#endif  // ACTORS_RUN_LOCALLY_H_
