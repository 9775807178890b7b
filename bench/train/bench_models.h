// The models the training benchmarks time, compiled data-parallel, so train_bench and
// multi_process_bench measure exactly the same configuration.
#ifndef BENCH_TRAIN_BENCH_MODELS_H_
#define BENCH_TRAIN_BENCH_MODELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace oneflow::bench {

struct BenchModel {
  proto::Job job;
  proto::Plan plan;
  std::string config;  // The model's configuration in words, for the JSON lines.
};

// "mlp" (256-1024-1024-1024-10, batch 256, SGD momentum) or "gpt" (2 layers, hidden 128,
// 4 heads, seq 64, vocab 512, batch 8, AdamW), dp = nodes x devices_per_node.
absl::StatusOr<BenchModel> CompileBenchModel(const std::string& model, int64_t nodes, int64_t devices_per_node);

// The median of `step_ms` from index `warmup` on (0 when none).
double MedianStepMs(const std::vector<double>& step_ms, size_t warmup);

}  // namespace oneflow::bench

#endif  // BENCH_TRAIN_BENCH_MODELS_H_
