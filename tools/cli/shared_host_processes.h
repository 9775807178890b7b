// The act-count probe of host_calibration.h (MeasureSharedHost) run as a launched job
// runs: `processes` processes of this machine with one device each, the nodes of one plan
// meeting in their collectives over the default cross-process transport on 127.0.0.1
// (TCP: link_calibration.h, KeepProcessesOnTcp), each with its compute, communication and
// transfer threads, instead of `processes` devices as threads of one process.
//
// Why: `oneflow calibrate --nodes` prices emulated hosts (more nodes than cores on one
// machine) with the cores' worth of CPU time their devices obtain. Three worker processes
// obtain more of 2 cores than one process's three devices do (session 46: the launched 3
// x 1 steps ran as if at ~1.7-2 cores where threads of one process obtained 1.49, and every
// layout was priced 12-44% long; docs/auto_parallel_measurements.md, "The core share of
// three processes (session 47)").
//
// How: this process compiles every probe plan (the same runs and rounds as in one
// process), then forks the processes together; process k trains node k of each plan in
// turn, rendezvousing through a directory of its own per run (FileKeyValueStore), and
// writes its CPU time and wall time per timed iteration to a file. A run's sample is the
// CPU time of all processes (the sum) over their mean wall time; each run keeps its least
// CPU of the rounds, and the terms are fitted as in one process (FitSharedHostProbe): the
// act cost from the slope of CPU over acts, the share the median CPU over wall of the dp
// runs. The children are forks of a process that may have other threads by then (the
// daemons' gRPC client): they only train the plans compiled before the fork, with the
// runtime's own threads, die with this process (PR_SET_PDEATHSIG) and are killed when they
// have not all finished within kProcessProbeDeadline.
#ifndef TOOLS_CLI_SHARED_HOST_PROCESSES_H_
#define TOOLS_CLI_SHARED_HOST_PROCESSES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/cli/host_calibration.h"

namespace oneflow::cli {

inline constexpr absl::Duration kProcessProbeDeadline = absl::Seconds(180);

// INVALID_ARGUMENT for processes < 2 or cores < 1; the probe's compile errors; INTERNAL
// naming the process and its error (or exit) when one fails, DEADLINE_EXCEEDED when they
// do not finish in time.
// With `data_parallel_only`, the probe's data-parallel runs alone (SharedHostProbeRuns'
// first four: what an act on its own core is fitted from, shared_machine_turns.h). Each
// run is trained `rounds_per_run` times, the rounds interleaved (every run once, then
// again); INVALID_ARGUMENT for fewer than 1.
absl::StatusOr<SharedHostProbe> MeasureSharedHostInProcesses(int64_t processes, int64_t cores,
                                                             bool data_parallel_only = false,
                                                             int64_t rounds_per_run = kSharedHostProbeRounds);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_SHARED_HOST_PROCESSES_H_
