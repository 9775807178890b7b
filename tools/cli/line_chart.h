// A line chart as inline SVG, for pages that must open from disk with nothing else
// (`oneflow report`): axes with tick labels at "nice" values (1, 2 or 5 times a power of
// ten), one polyline per run of finite points.
//
//   LineChart chart{"loss", "iteration", "loss", {0, 1, 2}, {2.3, 1.9, 1.7}};
//   std::string svg = RenderLineChart(chart);  // "<svg ...>...</svg>"
#ifndef TOOLS_CLI_LINE_CHART_H_
#define TOOLS_CLI_LINE_CHART_H_

#include <string>
#include <vector>

namespace oneflow::cli {

struct LineChart {
  // Escaped when drawn.
  std::string title;
  std::string x_label;
  std::string y_label;
  // Same length. A point with a non-finite y is not drawn: the line breaks there.
  std::vector<double> x;
  std::vector<double> y;
  // x ticks at whole numbers only (iterations).
  bool integer_x = true;
};

// Where the values go, in pixels of the SVG's 640 x 240 viewBox.
struct ChartFrame {
  static constexpr double kWidth = 640, kHeight = 240;
  static constexpr double kLeft = 64, kRight = 624, kTop = 16, kBottom = 200;
};

// The axis drawn for values in [lo, hi]: from a multiple of `step` at or below lo to one
// at or above hi, step 1, 2 or 5 times a power of ten giving about 5 intervals (at least
// 1 with `integer`). A single value v gets [v - 1, v + 1] before rounding.
struct Axis {
  double lo = 0;
  double hi = 1;
  double step = 1;
  std::vector<double> ticks;
};
Axis NiceAxis(double lo, double hi, bool integer);

// One <svg> element; empty data (or no finite y) gives the axes of [0, 1] and no line.
// Points are "X,Y" with one decimal, in the order given.
std::string RenderLineChart(const LineChart& chart);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_LINE_CHART_H_
