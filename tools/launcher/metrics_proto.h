// The per-iteration metrics (actors/metrics.h) as a worker sends them to the launch
// client (proto IterationMetrics), and back: lossless, so that a line printed by
// `oneflow launch` is the line `oneflow run` prints for the same sums.
#ifndef TOOLS_LAUNCHER_METRICS_PROTO_H_
#define TOOLS_LAUNCHER_METRICS_PROTO_H_

#include "actors/metrics.h"
#include "proto/launcher.pb.h"

namespace oneflow::launcher {

// Compression entries in key order.
proto::IterationMetrics MetricsToProto(const actors::IterationMetrics& metrics);

// A repeated codec is added up (a merger's output has none).
actors::IterationMetrics MetricsFromProto(const proto::IterationMetrics& metrics);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_METRICS_PROTO_H_
