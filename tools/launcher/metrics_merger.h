// Merging the per-node metrics of a job into the job's own, one iteration at a time. The
// nodes that report are those holding a loss sink (ReportingNodes): a worker reports an
// iteration once its loss arrived (actors/runtime.cc), so with pipeline stages on
// different nodes only the nodes of the last stage report; without stages every node
// does. An iteration is complete once every reporting node reported it; its loss is the
// first reporting node's (the loss is replicated over the devices that hold it), its step
// time the slowest reporting node's (a step ends when the last node's does; each node's
// own is kept in node_step_ms, for `oneflow report`'s per-node table), its
// throughput the plan's global batch over that step time, and its compression entries
// the sums over the reporting nodes per codec (each node's are the sums over its
// devices), in codec order. A node without a sink sends no metrics, so with stages across
// nodes the compressed boxings of the earlier stages are missing from the job's entries.
#ifndef TOOLS_LAUNCHER_METRICS_MERGER_H_
#define TOOLS_LAUNCHER_METRICS_MERGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/launcher.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher {

// The nodes of `plan` whose workers report per-iteration metrics, in increasing order:
// those with a device that has a loss sink; every node of a plan without one (the
// launcher's test plans, run by fake workers that report from every node).
std::vector<int64_t> ReportingNodes(const proto::Plan& plan);

class MetricsMerger {
 public:
  // `reporting_nodes`: ReportingNodes(plan), not empty.
  MetricsMerger(std::vector<int64_t> reporting_nodes, int64_t batch_size)
      : reporting_nodes_(std::move(reporting_nodes)), batch_size_(batch_size) {}

  // Records one node's metrics; returns the iterations this completed, in order (an
  // iteration is only returned after every earlier one). Metrics of a node that is not
  // a reporting node are ignored. Each node reports its iterations in order, so an
  // iteration some node skipped (its daemon dropped it for a client that read too slowly)
  // is given up once every node reported a later one: it is never returned and nothing
  // of it is kept.
  std::vector<proto::IterationMetrics> Add(int64_t node, const proto::IterationMetrics& metrics);

  // After a failed attempt, when no more reports will come: every iteration some but not
  // all reporting nodes reported (the others' reports went down with a lost node), in
  // order, merged from the nodes that did report (the loss of the lowest such node: the
  // loss is the same on every node that holds it; the step time the slowest of theirs;
  // node_step_ms theirs only), with the nodes missing. `unreported` gets the iterations
  // before the newest of them that no node reported. Nothing is kept afterwards.
  struct Incomplete {
    proto::IterationMetrics metrics;
    std::vector<int64_t> missing_nodes;
  };
  std::vector<Incomplete> TakeIncomplete(std::vector<int64_t>* unreported);

 private:
  struct Partial {
    int64_t reported = 0;
    int64_t loss_node = -1;  // The node whose loss `loss` is: the lowest that reported.
    double loss = 0;
    double step_ms = 0;
    std::map<int64_t, double> node_step_ms;
    std::map<std::string, proto::CodecMetrics> compression;
    proto::SparseMetrics sparse;
    std::string transport;  // the nodes' (they agreed on one before training)
    std::string transport_settings;  // the lowest reporting node's
    // The nodes' priority lead (each worker got the launch's); -1: none recorded.
    int64_t communication_priority_levels = -1;
  };
  proto::IterationMetrics Merged(int64_t iteration, const Partial& partial) const;

  std::vector<int64_t> reporting_nodes_;
  int64_t batch_size_;
  int64_t next_ = -1;  // The next iteration to complete; -1 before the first report.
  std::map<int64_t, Partial> partial_;
  std::map<int64_t, int64_t> last_reported_;  // by node: the newest iteration it reported
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_METRICS_MERGER_H_
