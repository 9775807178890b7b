// `oneflow report METRICS.jsonl [--plan=PLAN --trace=T.json]`: one self-contained HTML page
// of a training run (docs/report.md): the loss and step-time curves (line_chart.h), a
// summary table, per codec the compression error and bytes on the wire, and with a plan
// and its trace the tables of `oneflow profile` (profile_report.h).
//
//   OF_ASSIGN_OR_RETURN(std::vector<MetricsLine> lines, ReadMetricsFile("m.jsonl"));
//   std::string html = RenderRunReport({"m.jsonl", lines, /*profile=*/nullptr});
#ifndef TOOLS_CLI_RUN_REPORT_H_
#define TOOLS_CLI_RUN_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/metrics_file.h"
#include "tools/cli/profile_report.h"

namespace oneflow::cli {

// The q-quantile (0 <= q <= 1) of `values`, linearly interpolated between the two nearest
// ranks of the sorted values (numpy's default): the median of 1, 2, 3, 10 is 2.5, its
// 0.9-quantile 7.9. NaN for no values.
double Quantile(std::vector<double> values, double q);

struct CodecSummary {
  std::string codec;
  int64_t lines = 0;
  // rel_l2 of the first and last line carrying the codec, and the largest finite one;
  // non_finite: lines where it was null.
  double first_rel_l2 = 0;
  double last_rel_l2 = 0;
  double max_rel_l2 = 0;
  int64_t non_finite = 0;
  // Summed over the lines: the run's bytes, exact.
  int64_t wire_bytes = 0;
  int64_t dense_bytes = 0;
};

// One node of a launched job, over the timed lines carrying node step times.
struct NodeSummary {
  int64_t node = 0;
  int64_t lines = 0;
  double median_step_ms = 0;
  double p90_step_ms = 0;
  double max_step_ms = 0;
  // Lines in which this node's step was the slowest (ties count for each of them).
  int64_t slowest_lines = 0;
};

struct RunSummary {
  int64_t lines = 0;
  int64_t first_iteration = 0;
  int64_t last_iteration = 0;
  double first_loss = 0;
  double last_loss = 0;
  // The smallest finite loss and its iteration; NaN (iteration -1) when none is finite.
  double min_loss = 0;
  int64_t min_loss_iteration = -1;
  // Over the lines after the first (its step counts from the start of the run,
  // initialization included, like the profile's warm-up); the one line when it is all.
  int64_t timed_lines = 0;
  double median_step_ms = 0;
  double p90_step_ms = 0;
  double median_samples_per_s = 0;
  // By codec key, in key order.
  std::vector<CodecSummary> codecs;
  // A launched job's file (lines with node_step_ms): by node rank; empty otherwise.
  std::vector<NodeSummary> nodes;
};

// `lines` not empty (ReadMetricsFile never gives none).
RunSummary SummarizeRun(const std::vector<MetricsLine>& lines);

struct RunReportInput {
  // Shown (escaped) as the page's title.
  std::string metrics_path;
  std::vector<MetricsLine> lines;
  // With --plan and --trace: TabulateProfile's tables; null for none.
  const ProfileTables* profile = nullptr;
};

// The whole page, "<!DOCTYPE html>" to "</html>": no script, no external reference; every
// string from the inputs (path, codec keys, op and actor names) escaped.
std::string RenderRunReport(const RunReportInput& input);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_RUN_REPORT_H_
