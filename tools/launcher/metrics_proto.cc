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
  return metrics;
}

}  // namespace oneflow::launcher
