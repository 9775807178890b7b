#include "tools/launcher/metrics_merger.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace oneflow::launcher {

std::vector<int64_t> ReportingNodes(const proto::Plan& plan) {
  std::vector<int64_t> nodes, all;
  for (const proto::DevicePlan& device : plan.devices()) {
    all.push_back(device.device().node());
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.kind() == proto::ACTOR_SINK) {
        nodes.push_back(device.device().node());
        break;
      }
    }
  }
  if (nodes.empty()) nodes = std::move(all);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

std::vector<proto::IterationMetrics> MetricsMerger::Add(int64_t node, const proto::IterationMetrics& metrics) {
  std::vector<proto::IterationMetrics> complete;
  if (std::find(reporting_nodes_.begin(), reporting_nodes_.end(), node) == reporting_nodes_.end()) return complete;
  // Workers count iterations from 0; should one count from 1, the first report (every
  // node's first is the same iteration) sets where the job starts.
  if (next_ < 0) next_ = metrics.iteration();
  if (metrics.iteration() < next_) return complete;  // A repeat of an iteration already out.
  int64_t& last = last_reported_.try_emplace(node, -1).first->second;
  last = std::max(last, metrics.iteration());
  Partial& partial = partial_[metrics.iteration()];
  ++partial.reported;
  if (partial.loss_node < 0 || node < partial.loss_node) {
    partial.loss_node = node;
    partial.loss = metrics.loss();
    // Nodes may run with different environments: the line shows the lowest node's.
    partial.transport_settings = metrics.transport_settings();
  }
  partial.step_ms = std::max(partial.step_ms, metrics.step_ms());
  partial.node_step_ms[node] = metrics.step_ms();
  if (!metrics.transport().empty()) partial.transport = metrics.transport();
  if (metrics.has_communication_priority_levels()) {
    partial.communication_priority_levels = metrics.communication_priority_levels();
  }
  for (const proto::CodecMetrics& entry : metrics.compression()) {
    proto::CodecMetrics& sum = partial.compression[entry.codec()];
    sum.set_codec(entry.codec());
    sum.set_error_sq(sum.error_sq() + entry.error_sq());
    sum.set_signal_sq(sum.signal_sq() + entry.signal_sq());
    sum.set_wire_bytes(sum.wire_bytes() + entry.wire_bytes());
    sum.set_dense_bytes(sum.dense_bytes() + entry.dense_bytes());
  }
  if (metrics.has_sparse()) {
    proto::SparseMetrics& sum = partial.sparse;
    const proto::SparseMetrics& node_sums = metrics.sparse();
    sum.set_payload_bytes(sum.payload_bytes() + node_sums.payload_bytes());
    sum.set_metadata_bytes(sum.metadata_bytes() + node_sums.metadata_bytes());
    sum.set_dense_bytes(sum.dense_bytes() + node_sums.dense_bytes());
    sum.set_rows_sent(sum.rows_sent() + node_sums.rows_sent());
    sum.set_sparse_calls(sum.sparse_calls() + node_sums.sparse_calls());
    sum.set_dense_calls(sum.dense_calls() + node_sums.dense_calls());
  }
  // Every node reported this iteration or a later one: an iteration up to it that is
  // still incomplete was skipped by some node.
  int64_t all_past = std::numeric_limits<int64_t>::max();
  for (int64_t reporting : reporting_nodes_) {
    const auto found = last_reported_.find(reporting);
    all_past = std::min(all_past, found == last_reported_.end() ? -1 : found->second);
  }
  while (!partial_.empty()) {
    const int64_t iteration = partial_.begin()->first;
    if (partial_.begin()->second.reported < static_cast<int64_t>(reporting_nodes_.size())) {
      if (iteration > all_past) break;  // Still to come from some node.
      partial_.erase(partial_.begin());  // Skipped by some node: given up.
      next_ = iteration + 1;
      continue;
    }
    // Iterations before this one that no node reported were skipped by every node.
    next_ = iteration;
    complete.push_back(Merged(iteration, partial_.begin()->second));
    partial_.erase(partial_.begin());
    ++next_;
  }
  return complete;
}

proto::IterationMetrics MetricsMerger::Merged(int64_t iteration, const Partial& done) const {
  proto::IterationMetrics merged;
  merged.set_iteration(iteration);
  merged.set_loss(done.loss);
  merged.set_step_ms(done.step_ms);
  merged.set_transport(done.transport);
  merged.set_transport_settings(done.transport_settings);
  if (done.communication_priority_levels >= 0) {
    merged.set_communication_priority_levels(done.communication_priority_levels);
  }
  merged.set_samples_per_s(done.step_ms > 0 ? static_cast<double>(batch_size_) * 1000.0 / done.step_ms : 0.0);
  for (const auto& [reporting_node, step_ms] : done.node_step_ms) (*merged.mutable_node_step_ms())[reporting_node] = step_ms;
  for (const auto& [codec, sum] : done.compression) *merged.add_compression() = sum;
  if (done.sparse.sparse_calls() + done.sparse.dense_calls() > 0) *merged.mutable_sparse() = done.sparse;
  return merged;
}

std::vector<MetricsMerger::Incomplete> MetricsMerger::TakeIncomplete(std::vector<int64_t>* unreported) {
  std::vector<Incomplete> incomplete;
  int64_t expected = next_;
  for (const auto& [iteration, partial] : partial_) {
    for (int64_t skipped = expected; skipped < iteration; ++skipped) unreported->push_back(skipped);
    Incomplete& merged = incomplete.emplace_back();
    merged.metrics = Merged(iteration, partial);
    for (int64_t node : reporting_nodes_) {
      if (partial.node_step_ms.count(node) == 0) merged.missing_nodes.push_back(node);
    }
    expected = iteration + 1;
  }
  partial_.clear();
  next_ = expected;
  return incomplete;
}

}  // namespace oneflow::launcher
