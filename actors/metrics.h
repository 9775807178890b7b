// What a training run reports per iteration, and the JSON line every tool prints for it
// (`oneflow run`, `oneflow launch`, workers without a daemon), so scripts read one format.
#ifndef ACTORS_METRICS_H_
#define ACTORS_METRICS_H_

#include <cstdint>
#include <string>

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

}  // namespace oneflow::actors

#endif  // ACTORS_METRICS_H_
