#include "tools/cli/shared_machine_turns.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/host_terms.h"
#include "tools/cli/host_calibration.h"
#include "tools/cli/shared_host_processes.h"

namespace oneflow::cli {

TurnsDecision DecideTurns(const SharedMachineMeasurement& machine, const std::string& nodes_boot_id,
                          const MachineIdentity& here) {
  if (machine.nodes <= machine.cores) return TurnsDecision::kCorePerNode;
  if (here.boot_id.empty() || here.boot_id != nodes_boot_id) return TurnsDecision::kOtherMachine;
  return TurnsDecision::kMeasure;
}

absl::Status AddSharedMachineTurns(const std::string& nodes_boot_id, SharedMachineMeasurement* machine) {
  const MachineIdentity here = ThisMachine();
  switch (DecideTurns(*machine, nodes_boot_id, here)) {
    case TurnsDecision::kCorePerNode:
      absl::StrAppend(&machine->method, "; no turns measured: a core per node");
      if (here.boot_id.empty() || here.boot_id != nodes_boot_id) {
        absl::StrAppend(&machine->method, "; act on its own core not measured: calibrate ran on another machine");
        return absl::OkStatus();
      }
      return AddOwnCoreActSeconds(machine);
    case TurnsDecision::kOtherMachine:
      absl::StrAppend(&machine->method, "; turns not measured: calibrate ran on another machine (boot id ",
                      here.boot_id.empty() ? "unread" : here.boot_id, ")");
      return absl::OkStatus();
    case TurnsDecision::kMeasure:
      break;
  }
  auto named = [&](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("measuring the turns of ", machine->nodes, " nodes' devices on ",
                                                    machine->cores, " cores: ", status.message()));
  };
  absl::StatusOr<HostRuntime> threads = MeasureHostRuntime(machine->nodes);
  if (!threads.ok()) return named(threads.status());
  absl::StatusOr<SharedHostProbe> processes = MeasureSharedHostInProcesses(machine->nodes, machine->cores);
  if (!processes.ok()) return named(processes.status());
  SetMeasuredTurns(*threads, *processes, machine);
  return absl::OkStatus();
}

absl::Status AddOwnCoreActSeconds(SharedMachineMeasurement* machine) {
  auto named = [&](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("measuring an act of ", machine->nodes, " nodes' devices on ",
                                                    machine->cores, " cores, a core each: ", status.message()));
  };
  // The data-parallel runs only: their extra acts are the same kernels cut finer, where the
  // tensor-parallel runs' are mostly all-reduces waiting on the other process, which the
  // links' measurement prices.
  // A fit of wall time: each run's fastest of kOwnCoreActRounds interleaved rounds (the
  // machine's slower spells only add to a run's step).
  absl::StatusOr<SharedHostProbe> processes = MeasureSharedHostInProcesses(
      machine->nodes, machine->cores, /*data_parallel_only=*/true, kOwnCoreActRounds);
  if (!processes.ok()) return named(processes.status());
  absl::StatusOr<double> act_seconds =
      auto_parallel::FitOwnCoreActSeconds(processes->least_wall_samples, machine->nodes);
  if (!act_seconds.ok()) return named(act_seconds.status());
  std::vector<std::string> steps;
  for (const auto_parallel::RunSample& sample : processes->least_wall_samples) {
    steps.push_back(absl::StrFormat("%d acts in %.4g s", sample.acts, sample.wall_seconds));
  }
  SetOwnCoreActSeconds(*act_seconds,
                       absl::StrFormat("the fastest of %d interleaved rounds of each run: %s (the probe: %s)",
                                       kOwnCoreActRounds, absl::StrJoin(steps, ", "), processes->method),
                       machine);
  return absl::OkStatus();
}

void SetOwnCoreActSeconds(double act_seconds, const std::string& probe_method, SharedMachineMeasurement* machine) {
  machine->own_core_act_seconds = act_seconds;
  absl::StrAppendFormat(&machine->method,
                        "; act on its own core: %.3g us, the slope of the step over each device's acts in the dp "
                        "runs, with one process per node: %s",
                        1e6 * act_seconds, probe_method);
}

void SetMeasuredTurns(const HostRuntime& threads, const SharedHostProbe& processes, SharedMachineMeasurement* machine) {
  machine->turns = threads.measurement;
  // The machine's cores as node 0's worker read them, which the line gives.
  machine->turns->cores = machine->cores;
  machine->turns->act_seconds = processes.terms.act_seconds;
  machine->turns->boxing_act_seconds = processes.terms.boxing_act_seconds;
  machine->turns->core_share = processes.terms.host_core_share;
  machine->processes = threads.measurement.devices;
  absl::StrAppendFormat(&machine->method,
                        "; turns: measured by calibrate on the machine; act and core share (%.3g) with one process "
                        "per node: %s; collective call, and the same probe as threads of one process (core share "
                        "%.3g, act %.3g us): %s",
                        processes.terms.host_core_share, processes.method, threads.measurement.core_share,
                        1e6 * threads.measurement.act_seconds, threads.measurement.method);
  machine->turns->method = machine->method;
}

}  // namespace oneflow::cli
