// Merging the per-node metrics of a job into the job's own, one iteration at a time: an
// iteration is complete once every node reported it; its loss is node 0's (node 0 holds
// the loss's first shard, and with a replicated loss every node's is the same), its step
// time the slowest node's (a step ends when the last node's does), its throughput the
// plan's global batch over that step time, and its compression entries the sums over
// nodes per codec (each node's are the sums over its devices), in codec order.
#ifndef TOOLS_LAUNCHER_METRICS_MERGER_H_
#define TOOLS_LAUNCHER_METRICS_MERGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/launcher.pb.h"

namespace oneflow::launcher {

class MetricsMerger {
 public:
  MetricsMerger(int64_t num_nodes, int64_t batch_size) : num_nodes_(num_nodes), batch_size_(batch_size) {}

  // Records one node's metrics; returns the iterations this completed, in order (an
  // iteration is only returned after every earlier one).
  std::vector<proto::IterationMetrics> Add(int64_t node, const proto::IterationMetrics& metrics);

 private:
  struct Partial {
    int64_t reported = 0;
    double loss = 0;
    double step_ms = 0;
    std::map<std::string, proto::CodecMetrics> compression;
  };
  int64_t num_nodes_;
  int64_t batch_size_;
  int64_t next_ = -1;  // The next iteration to complete; -1 before the first report.
  std::map<int64_t, Partial> partial_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_METRICS_MERGER_H_
