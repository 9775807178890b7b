// Reading back a --metrics file: the JSON lines actors/metrics.h writes (MetricsJsonLine),
// one per iteration, from `oneflow run`, `oneflow launch` (the job's merged line, with
// each node's step time in "node_step_ms") or a worker. `oneflow report` draws them (run_report.h).
//
//   OF_ASSIGN_OR_RETURN(std::vector<MetricsLine> lines, ReadMetricsFile("m.jsonl"));
//   lines[0].loss  // 2.30412
#ifndef TOOLS_CLI_METRICS_FILE_H_
#define TOOLS_CLI_METRICS_FILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow::cli {

// One codec's entry of a line's "compression" object, as written: the line carries the
// relative error, not the sums it came from, so lines cannot be merged again.
struct CodecLine {
  // NaN where the writer put null (a NaN or Inf was encoded).
  double rel_l2 = 0;
  int64_t wire_bytes = 0;
  int64_t dense_bytes = 0;
};

struct MetricsLine {
  int64_t iteration = 0;
  // NaN or +-Inf where the writer printed nan or inf (a diverged run).
  double loss = 0;
  double step_ms = 0;
  double samples_per_s = 0;
  // By codec key ("int4/128"); empty when the line has no "compression".
  std::map<std::string, CodecLine> compression;
  // A launched job's line: each reporting node's own step time by node rank; empty
  // otherwise.
  std::map<int64_t, double> node_step_ms;
};

// One line. Requires "iter", "loss", "step_ms" and "samples_per_s" as numbers (the bare
// words nan, -nan, inf and -inf, which printf writes for a non-finite value and JSON
// lacks, are taken too); an optional "compression" object of codec objects with "rel_l2"
// (a number or null), "wire_bytes" and "dense_bytes"; an optional "node_step_ms" object
// of numbers keyed by node rank. Other keys are ignored, so a later
// writer may add fields. INVALID_ARGUMENT saying what is wrong, without a file name.
absl::StatusOr<MetricsLine> ParseMetricsLine(absl::string_view line);

// Every non-blank line of the file, in file order. Errors name the file: NOT_FOUND (or
// PERMISSION_DENIED) when it cannot be opened; INVALID_ARGUMENT for a line that is not a
// metrics line (with its 1-based line number) and for a file without any line.
absl::StatusOr<std::vector<MetricsLine>> ReadMetricsFile(const std::string& path);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_METRICS_FILE_H_
