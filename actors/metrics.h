// What a training run reports per iteration, the JSON line every tool prints for it, and
// where the lines go (`oneflow run`, `oneflow launch`, workers without a daemon, the
// examples' --run), so scripts read one format and users see one progress bar.
#ifndef ACTORS_METRICS_H_
#define ACTORS_METRICS_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace oneflow::actors {

struct IterationMetrics {
  int64_t iteration = 0;
  float loss = 0;
  // Wall time since the previous iteration's loss arrived (the first: since start).
  double step_ms = 0;
  double samples_per_s = 0;
};

// {"iter": 3, "loss": 2.71828, "step_ms": 12.345, "samples_per_s": 5184.0} and "\n".
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
