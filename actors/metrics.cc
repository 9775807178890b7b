#include "actors/metrics.h"

#include "absl/strings/str_format.h"

namespace oneflow::actors {

std::string MetricsJsonLine(const IterationMetrics& m) {
  return absl::StrFormat("{\"iter\": %d, \"loss\": %.6g, \"step_ms\": %.3f, \"samples_per_s\": %.1f}\n",
                         m.iteration, m.loss, m.step_ms, m.samples_per_s);
}

}  // namespace oneflow::actors
