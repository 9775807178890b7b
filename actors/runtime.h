// Training a plan on this process's devices: the engine (engine.h) with every actor
// bound to its behavior (data source, variable, compute kernel, boxing collective,
// loss sink), reporting per-iteration loss and throughput.
//
//   TrainOptions options;
//   options.iterations = 30;
//   options.on_iteration = [](const IterationMetrics& m) { ... m.loss ... };
//   OF_ASSIGN_OR_RETURN(TrainResult result, TrainPlan(plan, options));
#ifndef ACTORS_RUNTIME_H_
#define ACTORS_RUNTIME_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

struct IterationMetrics {
  int64_t iteration = 0;
  float loss = 0;
  // Wall time since the previous iteration's loss arrived (the first: since start).
  double step_ms = 0;
  double samples_per_s = 0;
};

struct TrainOptions {
  int64_t node = 0;
  int64_t iterations = 1;
  std::chrono::milliseconds progress_timeout{60000};
  // Keep every act for a trace.
  bool record_acts = false;
  // Called in iteration order from the thread of the first device's sink.
  std::function<void(const IterationMetrics&)> on_iteration;
};

struct TrainResult {
  std::vector<IterationMetrics> iterations;
  EngineResult engine;
};

absl::StatusOr<TrainResult> TrainPlan(const proto::Plan& plan, const TrainOptions& options);

}  // namespace oneflow::actors

#endif  // ACTORS_RUNTIME_H_
