// What a training run reports per iteration, the JSON line every tool prints for it, and
// where the lines go (`oneflow run`, `oneflow launch`, workers without a daemon, the
// examples' --run), so scripts read one format and users see one progress bar.
#ifndef ACTORS_METRICS_H_
#define ACTORS_METRICS_H_

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace oneflow::actors {

// What the compressed boxings of one codec moved and lost over one iteration, as sums so
// that devices and nodes add up (the launcher merges nodes by adding these).
struct CodecMetrics {
  // Over every element the devices encoded: sum((decoded - original)^2) and
  // sum(original^2) (kernels/compression/compressed_collectives.h, "Error").
  double error_sq = 0;
  double signal_sq = 0;
  // Encoded bytes the devices sent, and what the same exchanges weigh as dense f32.
  int64_t wire_bytes = 0;
  int64_t dense_bytes = 0;

  // sqrt(error_sq / signal_sq); 0 when nothing (or only zeros) was encoded.
  double RelativeError() const;
  CodecMetrics& operator+=(const CodecMetrics& other);
};

// What the row-sparse boxings of the devices moved over one iteration (actors/
// sparse_meter.h, kernels/boxing/sparse_rows.h): sums, so devices and nodes add up.
struct SparseMetrics {
  int64_t payload_bytes = 0;   // rows (and their indices) sent, or the dense bytes of calls that ran dense
  int64_t metadata_bytes = 0;  // row masks and counts exchanged
  int64_t dense_bytes = 0;     // what the dense collectives would have sent
  int64_t rows_sent = 0;
  int64_t sparse_calls = 0;
  int64_t dense_calls = 0;

  SparseMetrics& operator+=(const SparseMetrics& other);
};

struct IterationMetrics {
  int64_t iteration = 0;
  float loss = 0;
  // Wall time since the previous iteration's loss arrived (the first: since start).
  double step_ms = 0;
  double samples_per_s = 0;
  // By codec key ("int4/128": codec name / group size); empty when no boxing compresses.
  std::map<std::string, CodecMetrics> compression;
  // Zero calls when no boxing is row-sparse.
  SparseMetrics sparse;
  // A launched job's merged line (tools/launcher/metrics_merger.h): each reporting
  // node's own step time by node rank, step_ms being the slowest; empty otherwise.
  std::map<int64_t, double> node_step_ms;
  // A multi-node job's transport across nodes ("ucx", "gloo": oneflow_core/comm/transport.h);
  // empty in one process.
  std::string transport;
  // The settings that transport ran with in this process when it has its own (UCX's
  // measured defaults and environment overrides: oneflow_core/comm/ucx/settings.h); empty
  // otherwise.
  std::string transport_settings;
  // Nice levels by which the run's communication threads led its compute threads
  // (--communication_priority_levels, actors/thread_priority.h); < 0: not recorded.
  int64_t communication_priority_levels = -1;
  // `oneflow launch` after recovering from a lost node, on the first line trained again
  // only: the recovery as a JSON object (tools/cli/launch_recovery.h, RecoveryJson).
  std::string recovery_json;
};

// {"iter": 3, "loss": 2.71828, "step_ms": 12.345, "samples_per_s": 5184.0} and "\n";
// with compression, before the closing brace, in key order:
//   , "compression": {"int4/128": {"rel_l2": 0.1172, "wire_bytes": 1234, "dense_bytes": 9876}}
// with row-sparse boxings, last:
//   , "sparse": {"payload_bytes": 1234, "metadata_bytes": 96, "dense_bytes": 9876,
//                "rows_sent": 10, "sparse_calls": 2, "dense_calls": 0}
// and for a launched job's merged line, last, each node's step time by node rank:
//   , "node_step_ms": {"0": 11.482, "1": 12.345}
// and for a multi-node job, the transport of its cross-node groups:
//   , "transport": "ucx"
// and the settings it ran with, when it has any:
//   , "transport_settings": "RNDV_THRESH=inf; TLS=tcp,self (environment)"
// and where recorded, the lead of the communication threads' priority:
//   , "communication_priority_levels": 10
// and on the first line after `oneflow launch` recovered from a lost node, last:
//   , "recovery": {"cause": "daemon unreachable", "node": 1, "from": "disk", "iteration": 10, "seconds": 1.234}
// rel_l2 is RelativeError() (4 significant digits; null when not finite: a NaN or Inf was
// encoded, and JSON has no NaN).
std::string MetricsJsonLine(const IterationMetrics& metrics);

// The --metrics=FILE contract: with a path, JSON lines go to that file; without one,
// `out` gets a progress bar when it is a terminal and JSON lines otherwise.
class MetricsReporter {
 public:
  // PERMISSION_DENIED naming the flag and the path when the file cannot be created.
  static absl::StatusOr<std::unique_ptr<MetricsReporter>> Open(const std::string& path, int64_t iterations,
                                                               std::ostream* out, bool out_is_terminal);
  void Report(const IterationMetrics& metrics);
  // Ends the progress bar's line (nothing otherwise).
  void Finish();

 private:
  MetricsReporter(std::unique_ptr<std::ofstream> file, int64_t iterations, std::ostream* out, bool progress_bar)
      : file_(std::move(file)), iterations_(iterations), out_(out), progress_bar_(progress_bar) {}

  std::unique_ptr<std::ofstream> file_;
  int64_t iterations_;
  std::ostream* out_;
  bool progress_bar_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_METRICS_H_
