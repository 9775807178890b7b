#include "tools/launcher/metrics_proto.h"

namespace oneflow::launcher {

proto::IterationMetrics MetricsToProto(const actors::IterationMetrics& m) {
  proto::IterationMetrics metrics;
  metrics.set_iteration(m.iteration);
  metrics.set_loss(m.loss);
  metrics.set_step_ms(m.step_ms);
  metrics.set_samples_per_s(m.samples_per_s);
  for (const auto& [key, codec] : m.compression) {
    proto::CodecMetrics* entry = metrics.add_compression();
    entry->set_codec(key);
    entry->set_error_sq(codec.error_sq);
    entry->set_signal_sq(codec.signal_sq);
    entry->set_wire_bytes(codec.wire_bytes);
    entry->set_dense_bytes(codec.dense_bytes);
  }
  const actors::SparseMetrics& sparse = m.sparse;
  if (sparse.sparse_calls + sparse.dense_calls > 0) {
    proto::SparseMetrics* entry = metrics.mutable_sparse();
    entry->set_payload_bytes(sparse.payload_bytes);
    entry->set_metadata_bytes(sparse.metadata_bytes);
    entry->set_dense_bytes(sparse.dense_bytes);
    entry->set_rows_sent(sparse.rows_sent);
    entry->set_sparse_calls(sparse.sparse_calls);
    entry->set_dense_calls(sparse.dense_calls);
  }
  for (const auto& [node, step_ms] : m.node_step_ms) (*metrics.mutable_node_step_ms())[node] = step_ms;
  metrics.set_transport(m.transport);
  metrics.set_transport_settings(m.transport_settings);
  if (m.communication_priority_levels >= 0) metrics.set_communication_priority_levels(m.communication_priority_levels);
  return metrics;
}

actors::IterationMetrics MetricsFromProto(const proto::IterationMetrics& m) {
  actors::IterationMetrics metrics;
  metrics.iteration = m.iteration();
  metrics.loss = static_cast<float>(m.loss());
  metrics.step_ms = m.step_ms();
  metrics.samples_per_s = m.samples_per_s();
  for (const proto::CodecMetrics& entry : m.compression()) {
    metrics.compression[entry.codec()] +=
        actors::CodecMetrics{entry.error_sq(), entry.signal_sq(), entry.wire_bytes(), entry.dense_bytes()};
  }
  if (m.has_sparse()) {
    const proto::SparseMetrics& sparse = m.sparse();
    metrics.sparse = actors::SparseMetrics{sparse.payload_bytes(), sparse.metadata_bytes(), sparse.dense_bytes(),
                                           sparse.rows_sent(),     sparse.sparse_calls(),   sparse.dense_calls()};
  }
  for (const auto& [node, step_ms] : m.node_step_ms()) metrics.node_step_ms[node] = step_ms;
  metrics.transport = m.transport();
  metrics.transport_settings = m.transport_settings();
  if (m.has_communication_priority_levels()) metrics.communication_priority_levels = m.communication_priority_levels();
  return metrics;
}

}  // namespace oneflow::launcher
