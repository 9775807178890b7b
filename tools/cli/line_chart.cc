#include "tools/cli/line_chart.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/cli/html_escape.h"

namespace oneflow::cli {
namespace {

// Decimals that tell the ticks of `step` apart: 0 from 1 up, 1 for 0.5 or 0.2, 2 for 0.05.
int Decimals(double step) { return step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9)); }

std::string Pixel(double value) { return absl::StrFormat("%.1f", value); }

}  // namespace

Axis NiceAxis(double lo, double hi, bool integer) {
  if (!(lo < hi)) {
    lo -= 1;
    hi += 1;
  }
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  const double normalized = raw / magnitude;
  Axis axis;
  axis.step = (normalized <= 1 ? 1 : normalized <= 2 ? 2 : normalized <= 5 ? 5 : 10) * magnitude;
  if (integer) axis.step = std::max(1.0, std::round(axis.step));
  // The tolerance keeps a value that is a multiple up to rounding from adding a tick.
  const int64_t first = static_cast<int64_t>(std::floor(lo / axis.step + 1e-9));
  const int64_t last = static_cast<int64_t>(std::ceil(hi / axis.step - 1e-9));
  axis.lo = first * axis.step;
  axis.hi = last * axis.step;
  for (int64_t i = first; i <= last; ++i) axis.ticks.push_back(i * axis.step);
  return axis;
}

std::string RenderLineChart(const LineChart& chart) {
  using F = ChartFrame;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool any = false;
  for (size_t i = 0; i < chart.x.size(); ++i) {
    if (!std::isfinite(chart.y[i]) || !std::isfinite(chart.x[i])) continue;
    x_lo = any ? std::min(x_lo, chart.x[i]) : chart.x[i];
    x_hi = any ? std::max(x_hi, chart.x[i]) : chart.x[i];
    y_lo = any ? std::min(y_lo, chart.y[i]) : chart.y[i];
    y_hi = any ? std::max(y_hi, chart.y[i]) : chart.y[i];
    any = true;
  }
  if (!any) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  const Axis x_axis = NiceAxis(x_lo, x_hi, chart.integer_x);
  const Axis y_axis = NiceAxis(y_lo, y_hi, /*integer=*/false);
  auto px = [&](double x) { return F::kLeft + (x - x_axis.lo) / (x_axis.hi - x_axis.lo) * (F::kRight - F::kLeft); };
  auto py = [&](double y) { return F::kBottom - (y - y_axis.lo) / (y_axis.hi - y_axis.lo) * (F::kBottom - F::kTop); };

  // Inline in HTML: no xmlns needed (and the page names no address at all).
  std::string svg = absl::StrCat("<svg viewBox=\"0 0 ", F::kWidth, " ",
                                 F::kHeight, "\" width=\"", F::kWidth, "\" height=\"", F::kHeight,
                                 "\" role=\"img\" aria-label=\"", HtmlEscape(chart.title), "\">\n<title>",
                                 HtmlEscape(chart.title), "</title>\n");
  // Grid and tick labels, then the axes over them, then the data on top.
  const int x_decimals = Decimals(x_axis.step), y_decimals = Decimals(y_axis.step);
  for (double tick : x_axis.ticks) {
    const std::string x = Pixel(px(tick));
    absl::StrAppend(&svg, "<line class=\"grid\" x1=\"", x, "\" y1=\"", F::kTop, "\" x2=\"", x, "\" y2=\"", F::kBottom,
                    "\"/><text class=\"tick\" x=\"", x, "\" y=\"", F::kBottom + 16,
                    "\" text-anchor=\"middle\">", absl::StrFormat("%.*f", x_decimals, tick + 0.0), "</text>\n");
  }
  for (double tick : y_axis.ticks) {
    const std::string y = Pixel(py(tick));
    absl::StrAppend(&svg, "<line class=\"grid\" x1=\"", F::kLeft, "\" y1=\"", y, "\" x2=\"", F::kRight, "\" y2=\"", y,
                    "\"/><text class=\"tick\" x=\"", F::kLeft - 6, "\" y=\"", y,
                    "\" text-anchor=\"end\" dominant-baseline=\"middle\">",
                    absl::StrFormat("%.*f", y_decimals, tick + 0.0), "</text>\n");
  }
  absl::StrAppend(&svg, "<polyline class=\"axis\" points=\"", F::kLeft, ",", F::kTop, " ", F::kLeft, ",", F::kBottom,
                  " ", F::kRight, ",", F::kBottom, "\"/>\n");
  absl::StrAppend(&svg, "<text class=\"label\" x=\"", (F::kLeft + F::kRight) / 2, "\" y=\"", F::kHeight - 6,
                  "\" text-anchor=\"middle\">", HtmlEscape(chart.x_label), "</text>\n");
  absl::StrAppend(&svg, "<text class=\"label\" transform=\"translate(14 ", (F::kTop + F::kBottom) / 2,
                  ") rotate(-90)\" text-anchor=\"middle\">", HtmlEscape(chart.y_label), "</text>\n");
  std::string points;
  auto flush = [&] {
    if (!points.empty()) absl::StrAppend(&svg, "<polyline class=\"data\" points=\"", points, "\"/>\n");
    points.clear();
  };
  for (size_t i = 0; i < chart.x.size(); ++i) {
    if (!std::isfinite(chart.y[i]) || !std::isfinite(chart.x[i])) {
      flush();
      continue;
    }
    absl::StrAppend(&points, points.empty() ? "" : " ", Pixel(px(chart.x[i])), ",", Pixel(py(chart.y[i])));
  }
  flush();
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace oneflow::cli
