// `oneflow calibrate --nodes` on a cluster whose nodes are processes of one machine (every
// worker read one boot id: the "machine" line, cluster_link_calibration.h) with more nodes
// than cores: what the nodes' devices cost when they take turns on those cores, which the
// links measured between idle daemons do not show (docs/auto_parallel_measurements.md,
// "Three hosts, the daemons' calibration alone (session 45)": the machine line's cores
// alone predicted 3 emulated hosts on 2 cores 0.20 short).
//
// The turns are measured on this machine, so only when calibrate itself runs there (its
// boot id the nodes'). The act-count probe's per-act costs and the cores' worth its
// devices obtain are measured as the launched job runs, one process per node with one
// device each (tools/cli/shared_host_processes.h): three worker processes obtain more of
// 2 cores than three devices as threads of one process do (session 46: ~1.7-2 against
// 1.49, every 3 x 1 layout priced 12-44% long). The collective call's cost is a host line's
// (host_calibration.h, MeasureHostRuntime: its ranks threads of this process sharing the
// cores; across processes a call is the inter-node link's, measured between the daemons).
// The same probe in one process runs too, and its share goes into the method beside the
// other, so the file says both. They go on the machine line (sbp/calibration.h, with
// "processes"), which the search applies to a cluster of that many nodes only.
#ifndef TOOLS_CLI_SHARED_MACHINE_TURNS_H_
#define TOOLS_CLI_SHARED_MACHINE_TURNS_H_

#include <string>

#include "absl/status/status.h"
#include "sbp/calibration.h"
#include "tools/cli/host_calibration.h"
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

// Measures the turns into machine->turns when DecideTurns says so (some 10-20 seconds);
// with a core per node on calibrate's own machine, the act's cost on its own core instead
// (AddOwnCoreActSeconds, some 5-10 seconds). Appends to machine->method what was measured
// or why nothing was. The probes' compile or training errors.
absl::Status AddSharedMachineTurns(const std::string& nodes_boot_id, SharedMachineMeasurement* machine);

// The turns from the two measurements: the act costs and the core share of `processes`
// (MeasureSharedHostInProcesses, one process per node), the collective call of `threads`
// (MeasureHostRuntime for the nodes' devices in one process), the line's cores; sets
// machine->processes and appends both measurements to machine->method.
void SetMeasuredTurns(const HostRuntime& threads, const SharedHostProbe& processes, SharedMachineMeasurement* machine);

// With a core per node: the act-count probe across one process per node
// (MeasureSharedHostInProcesses), its steps over each device's acts fitted
// (auto_parallel::FitOwnCoreActSeconds) into machine->own_core_act_seconds
// (SetOwnCoreActSeconds, which also appends the figure and `probe_method` to the method).
// Acts are not free with a core each: 2 emulated hosts on 2 cores (session 59) ran each
// extra micro-batch's acts at ~1-2 us each, and pricing them so ranked the 2 x 1 layouts
// closer to their measured order (docs/auto_parallel.md, "A core per node").
//
// Each dp run is trained kOwnCoreActRounds times, the rounds interleaved, and the fit takes
// each run's least wall time: with 2 rounds run back to back and the rounds of least CPU
// time, six fits in a row on this 2-core VM gave 0.39 to 1.84 us (session 61).
inline constexpr int64_t kOwnCoreActRounds = 5;
absl::Status AddOwnCoreActSeconds(SharedMachineMeasurement* machine);
void SetOwnCoreActSeconds(double act_seconds, const std::string& probe_method, SharedMachineMeasurement* machine);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_SHARED_MACHINE_TURNS_H_
