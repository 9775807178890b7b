#include "actors/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::actors {

std::string MetricsJsonLine(const IterationMetrics& m) {
  return absl::StrFormat("{\"iter\": %d, \"loss\": %.6g, \"step_ms\": %.3f, \"samples_per_s\": %.1f}\n",
                         m.iteration, m.loss, m.step_ms, m.samples_per_s);
}

absl::StatusOr<std::unique_ptr<MetricsReporter>> MetricsReporter::Open(const std::string& path, int64_t iterations,
                                                                       std::ostream* out, bool out_is_terminal) {
  std::unique_ptr<std::ofstream> file;
  if (!path.empty()) {
    file = std::make_unique<std::ofstream>(path, std::ios::trunc);
    if (!*file) return absl::PermissionDeniedError(absl::StrCat("--metrics='", path, "': cannot create the file"));
  }
  const bool progress_bar = path.empty() && out_is_terminal;
  return std::unique_ptr<MetricsReporter>(
      new MetricsReporter(std::move(file), std::max<int64_t>(1, iterations), out, progress_bar));
}

void MetricsReporter::Report(const IterationMetrics& m) {
  if (file_ != nullptr) {
    *file_ << MetricsJsonLine(m) << std::flush;
  } else if (progress_bar_) {
    const int width = 30;
    const int filled = static_cast<int>(width * std::min<int64_t>(m.iteration + 1, iterations_) / iterations_);
    *out_ << absl::StrFormat("\r[%s%s] %d/%d  loss %.4f  %.0f samples/s  %.1f ms/step", std::string(filled, '#'),
                             std::string(width - filled, ' '), m.iteration + 1, iterations_, m.loss,
                             m.samples_per_s, m.step_ms)
          << std::flush;
  } else {
    *out_ << MetricsJsonLine(m) << std::flush;
  }
}

void MetricsReporter::Finish() {
  if (progress_bar_) *out_ << "\n" << std::flush;
}

}  // namespace oneflow::actors
