#include "tools/cli/run_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/cli/html_escape.h"
#include "tools/cli/line_chart.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Loss(double loss) { return absl::StrFormat("%.6g", loss); }
std::string Ms(double ms) { return absl::StrFormat("%.3f ms", ms); }

// The page's look: system fonts only, nothing fetched.
constexpr char kStyle[] = R"(body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; font-variant-numeric: tabular-nums; }
thead th { background: #eee; }
tbody th { background: #f6f6f6; font-weight: normal; }
p.note { color: #555; font-size: 0.9em; }
svg { display: block; margin: 0.5em 0 1em; }
svg .grid { stroke: #e4e4e4; }
svg .axis { stroke: #444; fill: none; }
svg .data { stroke: #1f66c1; stroke-width: 1.5; fill: none; }
svg .tick, svg .label { font-size: 11px; fill: #444; }
)";

void AppendRow(std::string& html, const std::string& header, const std::string& value) {
  absl::StrAppend(&html, "<tr><th>", HtmlEscape(header), "</th><td>", HtmlEscape(value), "</td></tr>\n");
}

// A table of cells, the first row as its header, every cell escaped.
void AppendTable(std::string& html, const std::vector<std::vector<std::string>>& rows) {
  absl::StrAppend(&html, "<table>\n");
  for (size_t r = 0; r < rows.size(); ++r) {
    const char* cell = r == 0 ? "th" : "td";
    absl::StrAppend(&html, r == 0 ? "<thead>" : "", r == 1 ? "<tbody>" : "", "<tr>");
    for (const std::string& text : rows[r]) absl::StrAppend(&html, "<", cell, ">", HtmlEscape(text), "</", cell, ">");
    absl::StrAppend(&html, "</tr>", r == 0 ? "</thead>" : "", r + 1 == rows.size() && r > 0 ? "</tbody>" : "", "\n");
  }
  absl::StrAppend(&html, "</table>\n");
}

void AppendSummary(std::string& html, const RunSummary& s) {
  absl::StrAppend(&html, "<h2>Summary</h2>\n<table class=\"summary\"><tbody>\n");
  AppendRow(html, "iterations", absl::StrCat(s.first_iteration, "..", s.last_iteration, " (", s.lines,
                                             s.lines == 1 ? " line)" : " lines)"));
  AppendRow(html, "first loss", absl::StrCat(Loss(s.first_loss), " (iteration ", s.first_iteration, ")"));
  AppendRow(html, "last loss", absl::StrCat(Loss(s.last_loss), " (iteration ", s.last_iteration, ")"));
  AppendRow(html, "min loss", s.min_loss_iteration < 0
                                  ? std::string("none finite")
                                  : absl::StrCat(Loss(s.min_loss), " (iteration ", s.min_loss_iteration, ")"));
  AppendRow(html, "median step time", Ms(s.median_step_ms));
  AppendRow(html, "p90 step time", Ms(s.p90_step_ms));
  AppendRow(html, "median samples/s", absl::StrFormat("%.1f", s.median_samples_per_s));
  absl::StrAppend(&html, "</tbody></table>\n<p class=\"note\">Step time and samples/s: ",
                  s.timed_lines == s.lines ? "of the one line"
                                           : absl::StrCat("of the ", s.timed_lines,
                                                          " lines after the first (whose step counts from the "
                                                          "start of the run, initialization included)"),
                  "; median and p90 interpolated between the nearest ranks. A file of <code>oneflow "
                  "launch --metrics</code> holds the job's merged line per iteration (the loss of the first "
                  "reporting node, the step of the slowest), with each node's own step time: see Per node.</p>\n");
}

// Charts beyond this many nodes would bury the page; the table still has every node.
constexpr size_t kMaxNodeCharts = 8;

void AppendNodes(std::string& html, const std::vector<NodeSummary>& nodes, const std::vector<MetricsLine>& lines) {
  if (nodes.empty()) return;
  absl::StrAppend(&html, "<h2>Per node</h2>\n");
  std::vector<std::vector<std::string>> rows = {
      {"node", "lines", "median step", "p90 step", "max step", "slowest in"}};
  for (const NodeSummary& n : nodes) {
    rows.push_back({absl::StrCat(n.node), absl::StrCat(n.lines), Ms(n.median_step_ms), Ms(n.p90_step_ms),
                    Ms(n.max_step_ms), absl::StrCat(n.slowest_lines, " of ", n.lines, " lines")});
  }
  AppendTable(html, rows);
  absl::StrAppend(&html,
                  "<p class=\"note\">Each reporting node's own step time (a node reports once its loss "
                  "arrived); the job's step is the slowest node's. Over the same lines as the summary.</p>\n");
  if (nodes.size() > kMaxNodeCharts) {
    absl::StrAppend(&html, "<p class=\"note\">", nodes.size(), " nodes: step-time charts of the first ",
                    kMaxNodeCharts, " only.</p>\n");
  }
  for (size_t i = 0; i < nodes.size() && i < kMaxNodeCharts; ++i) {
    LineChart chart{absl::StrCat("node ", nodes[i].node, ": step time per iteration (ms)"), "iteration", "step ms"};
    for (const MetricsLine& line : lines) {
      auto it = line.node_step_ms.find(nodes[i].node);
      if (it == line.node_step_ms.end()) continue;
      chart.x.push_back(static_cast<double>(line.iteration));
      chart.y.push_back(it->second);
    }
    absl::StrAppend(&html, RenderLineChart(chart));
  }
}

void AppendCompression(std::string& html, const std::vector<CodecSummary>& codecs) {
  if (codecs.empty()) return;
  absl::StrAppend(&html, "<h2>Compression</h2>\n");
  std::vector<std::vector<std::string>> rows = {{"codec", "lines", "rel_l2 first", "rel_l2 last", "rel_l2 max",
                                                 "wire bytes", "dense bytes", "wire / dense"}};
  for (const CodecSummary& c : codecs) {
    rows.push_back({c.codec, absl::StrCat(c.lines), absl::StrFormat("%.4g", c.first_rel_l2),
                    absl::StrFormat("%.4g", c.last_rel_l2),
                    absl::StrCat(absl::StrFormat("%.4g", c.max_rel_l2),
                                 c.non_finite > 0 ? absl::StrCat(" (", c.non_finite, " non-finite)") : ""),
                    FormatBytes(c.wire_bytes), FormatBytes(c.dense_bytes),
                    c.dense_bytes > 0 ? absl::StrFormat("%.3f", static_cast<double>(c.wire_bytes) / c.dense_bytes)
                                      : std::string("-")});
  }
  AppendTable(html, rows);
  absl::StrAppend(&html,
                  "<p class=\"note\">rel_l2: sqrt(sum of squared errors / sum of squares) over what the "
                  "devices encoded in one iteration; bytes: summed over the lines.</p>\n");
}

void AppendProfile(std::string& html, const ProfileTables& profile) {
  absl::StrAppend(&html, "<h2>Profile</h2>\n");
  for (const std::string& line : profile.heading) absl::StrAppend(&html, "<p>", HtmlEscape(line), "</p>\n");
  for (const ProfileSection& section : profile.sections) {
    absl::StrAppend(&html, "<h3>", HtmlEscape(section.title), "</h3>\n");
    for (const std::string& note : section.notes) absl::StrAppend(&html, "<p>", HtmlEscape(note), "</p>\n");
    AppendTable(html, section.rows);
  }
}

}  // namespace

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double rank = q * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (rank - below) * (values[above] - values[below]);
}

RunSummary SummarizeRun(const std::vector<MetricsLine>& lines) {
  RunSummary s;
  s.lines = static_cast<int64_t>(lines.size());
  s.first_iteration = lines.front().iteration;
  s.last_iteration = lines.back().iteration;
  s.first_loss = lines.front().loss;
  s.last_loss = lines.back().loss;
  s.min_loss = kNaN;
  for (const MetricsLine& line : lines) {
    if (std::isfinite(line.loss) && (s.min_loss_iteration < 0 || line.loss < s.min_loss)) {
      s.min_loss = line.loss;
      s.min_loss_iteration = line.iteration;
    }
  }
  const size_t first_timed = lines.size() > 1 ? 1 : 0;
  std::vector<double> steps, throughputs;
  for (size_t i = first_timed; i < lines.size(); ++i) {
    steps.push_back(lines[i].step_ms);
    throughputs.push_back(lines[i].samples_per_s);
  }
  s.timed_lines = static_cast<int64_t>(steps.size());
  s.median_step_ms = Quantile(steps, 0.5);
  s.p90_step_ms = Quantile(steps, 0.9);
  s.median_samples_per_s = Quantile(throughputs, 0.5);

  std::map<std::string, CodecSummary> codecs;
  for (const MetricsLine& line : lines) {
    for (const auto& [key, entry] : line.compression) {
      CodecSummary& c = codecs[key];
      if (c.lines == 0) {
        c.codec = key;
        c.first_rel_l2 = entry.rel_l2;
        c.max_rel_l2 = kNaN;
      }
      ++c.lines;
      c.last_rel_l2 = entry.rel_l2;
      if (!std::isfinite(entry.rel_l2)) {
        ++c.non_finite;
      } else if (std::isnan(c.max_rel_l2) || entry.rel_l2 > c.max_rel_l2) {
        c.max_rel_l2 = entry.rel_l2;
      }
      c.wire_bytes += entry.wire_bytes;
      c.dense_bytes += entry.dense_bytes;
    }
  }
  for (auto& [key, c] : codecs) s.codecs.push_back(std::move(c));

  std::map<int64_t, std::vector<double>> node_steps;
  std::map<int64_t, int64_t> slowest;
  for (size_t i = first_timed; i < lines.size(); ++i) {
    double max_step = -std::numeric_limits<double>::infinity();
    for (const auto& [node, step_ms] : lines[i].node_step_ms) {
      node_steps[node].push_back(step_ms);
      max_step = std::max(max_step, step_ms);
    }
    for (const auto& [node, step_ms] : lines[i].node_step_ms) {
      if (step_ms == max_step) ++slowest[node];
    }
  }
  for (const auto& [node, steps_of_node] : node_steps) {
    NodeSummary& n = s.nodes.emplace_back();
    n.node = node;
    n.lines = static_cast<int64_t>(steps_of_node.size());
    n.median_step_ms = Quantile(steps_of_node, 0.5);
    n.p90_step_ms = Quantile(steps_of_node, 0.9);
    n.max_step_ms = *std::max_element(steps_of_node.begin(), steps_of_node.end());
    n.slowest_lines = slowest[node];
  }
  return s;
}

std::string RenderRunReport(const RunReportInput& input) {
  const RunSummary summary = SummarizeRun(input.lines);
  const std::string path = HtmlEscape(input.metrics_path);
  std::string html = absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
                                  "oneflow report: ", path, "</title>\n<style>\n", kStyle,
                                  "</style>\n</head>\n<body>\n<h1>Training run: ", path, "</h1>\n");
  AppendSummary(html, summary);

  LineChart loss{"loss per iteration", "iteration", "loss"};
  LineChart step{"step time per iteration (ms)", "iteration", "step ms"};
  for (const MetricsLine& line : input.lines) {
    const double x = static_cast<double>(line.iteration);
    loss.x.push_back(x);
    loss.y.push_back(line.loss);
    step.x.push_back(x);
    step.y.push_back(line.step_ms);
  }
  absl::StrAppend(&html, "<h2>Loss</h2>\n", RenderLineChart(loss), "<h2>Step time</h2>\n", RenderLineChart(step));
  AppendNodes(html, summary.nodes, input.lines);
  AppendCompression(html, summary.codecs);
  if (input.profile != nullptr) AppendProfile(html, *input.profile);
  absl::StrAppend(&html, "</body>\n</html>\n");
  return html;
}

}  // namespace oneflow::cli
