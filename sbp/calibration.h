// The calibration file `oneflow calibrate --out=FILE` writes and the compiler's callers
// read (the examples' --codec_calibration=FILE): one JSON object per line, of three kinds.
//
//   {"codec": "int4", "group_size": 128, "hadamard": true, "bytes_per_second": 2.1e+09, ...}
//       codec throughput (sbp/codec_throughput.h)
//   {"link": "intra_node", "latency_seconds": 3.1e-06, "bytes_per_second": 5.2e+09,
//    "method": "in-process all_reduce, 2 ranks"}
//   {"link": "inter_node", "latency_seconds": 0.00043, "bytes_per_second": 1.6e+09,
//    "method": "gloo all_reduce, 2 processes, 127.0.0.1"}
//       alpha and beta of one level of the link model (sbp/link_model.h)
//   {"transfer": "inter_node", "latency_seconds": 0.00012, "round_trip_seconds": 0.00031,
//    "bytes": 64, "method": "ucx send_recv round trips, 2 processes, ..."}
//       one point-to-point transfer between processes beyond its bytes / beta (a
//       pipeline's send_recv between stages: LinkModel::inter_node_transfer_latency),
//       from the median round trip of `bytes` each way: round_trip / 2 - bytes / the
//       inter_node line's bytes_per_second, at least 0. At most one; files written
//       before it existed have none (a transfer then costs the inter_node latency).
//   {"compute": "gemm", "per_second": 1.2e+11, "method": "sgemm 512x512x512, 1 thread"}
//   {"compute": "memory", "per_second": 1.4e+10, "method": "memcpy 64 MiB, read + written"}
//   {"compute": "memory_cached", "per_second": 5.4e+10, "bytes": 2097152,
//    "method": "memcpy 1 MiB, in a 2 MiB L2, read + written"}
//       the compute rates of sbp/compute_cost.h; "memory_cached" is a copy that stays in
//       one core's cache of "bytes" (ComputeRates::memory_cached_bytes_per_second and
//       cache_bytes). Optional: files without it price every byte at the memory rate.
//   {"compute": "gemm_shape", "per_second": 1.1e+11, "operand_bytes_per_second": 6.2e+09,
//    "call_seconds": 1.4e-06, "method": "21 shapes, 1 thread, median error 4.1%"}
//       a GEMM's seconds by its shape (sbp/gemm_shape_model.h, ComputeRates::gemm_shape):
//       the peak, the operands' bytes rate (0: no such cost) and the cost per call, fitted
//       to the runtime's kernel. Optional: files without it price every GEMM at "gemm".
//   {"host": "in_process", "devices": 4, "act_seconds": 2.1e-06, "collective_call_seconds": 1.3e-05,
//    "cores": 2, "core_share": 1.6, "boxing_act_seconds": 4.2e-05, "method": "..."}
//       the runtime's own costs when `devices` devices run as threads of one process on
//       this host (`oneflow run`, the examples' --run): per act, per collective call, the
//       cores they share and the cores' worth of CPU time the process obtained (the
//       auto-parallel cost model's PriceOptions act_seconds, collective_call_seconds,
//       host_cores, host_core_share, boxing_act_seconds: a boxing act's -- a collective's
//       or a transfer's actor's -- own cost where it differs from other acts'); one line
//       per device count measured. "core_share" and "boxing_act_seconds" are optional
//       (lines written before they existed load with none: boxing acts then cost
//       act_seconds). Files written before host lines existed have none and still load.
//   {"machine": "shared", "nodes": 3, "cores": 2, "method": "..."}
//   {"machine": "shared", "nodes": 3, "cores": 2, "devices": 3, "processes": 3, "act_seconds": 1.0e-06,
//    "collective_call_seconds": 4.7e-05, "core_share": 1.9, "method": "..."}
//       written by `oneflow calibrate --nodes` when every node's worker reported the same
//       boot id (/proc/sys/kernel/random/boot_id): the cluster's nodes are processes on one
//       machine (emulated hosts: network namespaces, containers), whose `cores` they share
//       (the auto-parallel cost model's PriceOptions::host_cores for a cluster of `nodes`
//       nodes, when the file has no host line). When the nodes outnumber the cores and
//       calibrate ran on that machine, it also has the runtime's costs of `devices` devices
//       taking turns on those cores (a host line's act_seconds, collective_call_seconds and
//       core_share, all required then, and optional boxing_act_seconds); a line without
//       "devices" (written before they existed, or with a core per node) has none. With
//       "processes" (= devices) the act costs and the core share were measured as the
//       launched job runs: that many processes of one device each, meeting in their
//       collectives over the transport (tools/cli/shared_host_processes.h), the share the
//       CPU time of all of them over the wall time; the collective call is the one of a
//       host line, its ranks threads of one process. Without "processes" (lines before
//       session 47) every term was measured as a host line's, one process's threads. At most one.
//
// Every line must be valid; "method" is informational. The same file always gives the
// same values, so the same inputs give the same plan bytes.
#ifndef SBP_CALIBRATION_H_
#define SBP_CALIBRATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sbp/codec_throughput.h"
#include "sbp/compute_cost.h"

namespace oneflow {

struct LinkLevelMeasurement {
  double latency_seconds = 0;
  double bytes_per_second = 0;
  std::string method;
};

// The "transfer" line: one point-to-point transfer between processes.
struct TransferMeasurement {
  double latency_seconds = 0;
  double round_trip_seconds = 0;
  int64_t bytes = 0;
  std::string method;
};

// One "host" line: the runtime's in-process costs measured for `devices` devices.
struct HostMeasurement {
  int64_t devices = 0;
  double act_seconds = 0;
  double collective_call_seconds = 0;
  int64_t cores = 0;
  std::string method;
  // CPU seconds the process obtained per wall second with every device busy; 0: not
  // measured (the cost model then takes `cores`).
  double core_share = 0;
  // A boxing act's own cost (auto_parallel::FitSharedHostTerms' two-kind fit); nullopt:
  // not measured (boxing acts cost act_seconds).
  std::optional<double> boxing_act_seconds;
};

// The "machine" line: every one of `nodes` nodes runs on one machine of `cores` cores.
struct SharedMachineMeasurement {
  int64_t nodes = 0;
  int64_t cores = 0;
  std::string method;
  // The runtime's costs of `turns->devices` devices taking turns on the cores, measured on
  // the machine as a host line is (its `cores` the line's); nullopt: not measured.
  std::optional<HostMeasurement> turns;
  // The processes (one device each) across which the turns' act costs and core share
  // were measured; 0: as threads of one process (a host line's way, before session 47).
  int64_t processes = 0;
  // With no more nodes than cores (a core per node): the wall seconds one more act adds to
  // its device's step, measured across one process per node (the act-count probe's wall
  // time over its acts: auto_parallel::FitOwnCoreActSeconds); nullopt: not measured.
  // (Acts are not free with a core each: the act hands its device's thread from one
  // kernel to the next through the actor's queues, and a kernel cut into micro-batches
  // runs each piece's fixed costs again.)
  std::optional<double> own_core_act_seconds;
};

struct Calibration {
  // CodecThroughput::Defaults() with the file's codec lines over it.
  CodecThroughput codecs = CodecThroughput::Defaults();
  std::optional<LinkLevelMeasurement> intra_node;
  std::optional<LinkLevelMeasurement> inter_node;
  // The "transfer" line (between nodes), when the file has one.
  std::optional<TransferMeasurement> inter_node_transfer;
  // 0 where the file has no such line.
  ComputeRates compute;
  // The file's host lines in file order, at most one per device count.
  std::vector<HostMeasurement> hosts;
  // The "machine" line, when the cluster's nodes share one machine.
  std::optional<SharedMachineMeasurement> shared_machine;
};

// {"link": "intra_node", "latency_seconds": ..., "bytes_per_second": ..., "method": "..."}
// with 6 significant digits; `level` is "intra_node" or "inter_node".
std::string LinkMeasurementLine(absl::string_view level, const LinkLevelMeasurement& measurement);
// {"transfer": "inter_node", "latency_seconds": ..., "round_trip_seconds": ..., "bytes": ...,
//  "method": "..."} with 6 significant digits.
std::string TransferMeasurementLine(const TransferMeasurement& measurement);
// {"compute": "gemm", "per_second": ..., "method": "..."}; `kind` is "gemm" or "memory".
std::string ComputeMeasurementLine(absl::string_view kind, double per_second, absl::string_view method);
// {"compute": "gemm_shape", "per_second": ..., "operand_bytes_per_second": ...,
//  "call_seconds": ..., "method": "..."} with 6 significant digits.
std::string GemmShapeMeasurementLine(const GemmShapeModel& model, absl::string_view method);
// {"compute": "memory_cached", "per_second": ..., "bytes": ..., "method": "..."}.
std::string CachedMemoryMeasurementLine(double per_second, int64_t bytes, absl::string_view method);

// {"host": "in_process", "devices": ..., "act_seconds": ..., "collective_call_seconds": ...,
//  "cores": ..., "core_share": ..., "boxing_act_seconds": ..., "method": "..."} with 6
// significant digits ("core_share" only when measured, i.e. above 0; "boxing_act_seconds"
// only when measured).
std::string HostMeasurementLine(const HostMeasurement& measurement);

// {"machine": "shared", "nodes": ..., "cores": ..., "method": "..."}, with the measured
// terms before "method" when `turns` has them ("devices", "processes" when above 0, "act_seconds",
// "collective_call_seconds", then "core_share" and "boxing_act_seconds" when measured).
std::string SharedMachineLine(const SharedMachineMeasurement& measurement);

// The host line measured for the device count nearest `devices` (ties: the larger count),
// or nullptr when the calibration has none.
const HostMeasurement* NearestHostMeasurement(const Calibration& calibration, int64_t devices);

// The calibration of a file's text. INVALID_ARGUMENT naming `file` and the line for a bad
// line (ParseCodecCalibration's errors for codec lines; for the others e.g.
//   calibration file 'c.jsonl' line 7: "link" is "wan"; valid: intra_node, inter_node
//   calibration file 'c.jsonl' line 9: "cores" is 0; it must be a whole number >= 1
//   calibration file 'c.jsonl' line 4: "transfer" is "intra_node"; valid: inter_node
// ), a level, compute kind or host device count given twice, a second "machine" or
// "transfer" line, a
// "machine" line of fewer than 2 nodes, or a file with no line at all.
absl::StatusOr<Calibration> ParseCalibration(absl::string_view text, absl::string_view file);

// ParseCalibration of the file at `path`; NOT_FOUND when it does not exist.
absl::StatusOr<Calibration> ReadCalibrationFile(const std::string& path);

}  // namespace oneflow

#endif  // SBP_CALIBRATION_H_
