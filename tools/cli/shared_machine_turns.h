// `oneflow calibrate --nodes` on a cluster whose nodes are processes of one machine (every
// worker read one boot id: the "machine" line, cluster_link_calibration.h) with more nodes
// than cores: what the nodes' devices cost when they take turns on those cores, which the
// links measured between idle daemons do not show (docs/auto_parallel_measurements.md,
// "Three hosts, the daemons' calibration alone (session 45)": the machine line's cores
// alone predicted 3 emulated hosts on 2 cores 0.20 short).
//
// The turns are measured as a host line is (tools/cli/host_calibration.h,
// MeasureHostRuntime): one device per node as threads of this process, on this machine,
// so only when calibrate itself runs there (its boot id the nodes'): the act-count
// probe's per-act costs and the cores' worth its devices obtain, and the collective call's
// cost with its ranks sharing the cores. They go on the machine line (sbp/calibration.h),
// which the search applies to a cluster of that many nodes only.
#ifndef TOOLS_CLI_SHARED_MACHINE_TURNS_H_
#define TOOLS_CLI_SHARED_MACHINE_TURNS_H_

#include <string>

#include "absl/status/status.h"
#include "sbp/calibration.h"
#include "tools/cli/machine_calibration.h"

namespace oneflow::cli {

enum class TurnsDecision {
  kMeasure,        // more nodes than cores, and calibrate runs on their machine
  kCorePerNode,    // no more nodes than cores: no device waits for a core
  kOtherMachine,   // calibrate runs elsewhere: it cannot measure the nodes' machine
};

// Whether calibrate, running on `here`, measures the turns of `machine`'s nodes (whose
// workers read `nodes_boot_id`).
TurnsDecision DecideTurns(const SharedMachineMeasurement& machine, const std::string& nodes_boot_id,
                          const MachineIdentity& here);

// Measures the turns into machine->turns when DecideTurns says so (a few seconds), and
// appends to machine->method what was measured or why nothing was. The probes' compile
// or training errors.
absl::Status AddSharedMachineTurns(const std::string& nodes_boot_id, SharedMachineMeasurement* machine);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_SHARED_MACHINE_TURNS_H_
