#include "tools/cli/shared_machine_turns.h"

#include "absl/strings/str_cat.h"
#include "tools/cli/host_calibration.h"

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
      return absl::OkStatus();
    case TurnsDecision::kOtherMachine:
      absl::StrAppend(&machine->method, "; turns not measured: calibrate ran on another machine (boot id ",
                      here.boot_id.empty() ? "unread" : here.boot_id, ")");
      return absl::OkStatus();
    case TurnsDecision::kMeasure:
      break;
  }
  absl::StatusOr<HostRuntime> runtime = MeasureHostRuntime(machine->nodes);
  if (!runtime.ok()) {
    return absl::Status(runtime.status().code(),
                        absl::StrCat("measuring the turns of ", machine->nodes, " nodes' devices on ", machine->cores,
                                     " cores: ", runtime.status().message()));
  }
  machine->turns = runtime->measurement;
  // The machine's cores as node 0's worker read them, which the line gives.
  machine->turns->cores = machine->cores;
  absl::StrAppend(&machine->method, "; turns: measured by calibrate on the machine, one device per node as threads "
                                    "of one process: ",
                  runtime->measurement.method);
  machine->turns->method = machine->method;
  return absl::OkStatus();
}

}  // namespace oneflow::cli
