#include "actors/metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::actors {

double CodecMetrics::RelativeError() const {
  // As RoundTripRelativeError (kernels/compression/codec.h): an all-zero input has no scale.
  if (signal_sq == 0.0) return error_sq == 0.0 ? 0.0 : std::sqrt(error_sq);
  return std::sqrt(error_sq / signal_sq);
}

CodecMetrics& CodecMetrics::operator+=(const CodecMetrics& other) {
  error_sq += other.error_sq;
  signal_sq += other.signal_sq;
  wire_bytes += other.wire_bytes;
  dense_bytes += other.dense_bytes;
  return *this;
}

SparseMetrics& SparseMetrics::operator+=(const SparseMetrics& other) {
  payload_bytes += other.payload_bytes;
  metadata_bytes += other.metadata_bytes;
  dense_bytes += other.dense_bytes;
  rows_sent += other.rows_sent;
  sparse_calls += other.sparse_calls;
  dense_calls += other.dense_calls;
  return *this;
}

std::string MetricsJsonLine(const IterationMetrics& m) {
  std::string line = absl::StrFormat("{\"iter\": %d, \"loss\": %.6g, \"step_ms\": %.3f, \"samples_per_s\": %.1f",
                                     m.iteration, m.loss, m.step_ms, m.samples_per_s);
  if (!m.compression.empty()) {
    absl::StrAppend(&line, ", \"compression\": {");
    const char* separator = "";
    for (const auto& [codec, metrics] : m.compression) {
      const double error = metrics.RelativeError();
      absl::StrAppend(&line, separator, "\"", codec, "\": {\"rel_l2\": ",
                      std::isfinite(error) ? absl::StrFormat("%.4g", error) : "null",
                      ", \"wire_bytes\": ", metrics.wire_bytes, ", \"dense_bytes\": ", metrics.dense_bytes, "}");
      separator = ", ";
    }
    absl::StrAppend(&line, "}");
  }
  const SparseMetrics& sparse = m.sparse;
  if (sparse.sparse_calls + sparse.dense_calls > 0) {
    absl::StrAppend(&line, ", \"sparse\": {\"payload_bytes\": ", sparse.payload_bytes,
                    ", \"metadata_bytes\": ", sparse.metadata_bytes, ", \"dense_bytes\": ", sparse.dense_bytes,
                    ", \"rows_sent\": ", sparse.rows_sent, ", \"sparse_calls\": ", sparse.sparse_calls,
                    ", \"dense_calls\": ", sparse.dense_calls, "}");
  }
  if (!m.node_step_ms.empty()) {
    absl::StrAppend(&line, ", \"node_step_ms\": {");
    const char* separator = "";
    for (const auto& [node, step_ms] : m.node_step_ms) {
      absl::StrAppend(&line, separator, "\"", node, "\": ", absl::StrFormat("%.3f", step_ms));
      separator = ", ";
    }
    absl::StrAppend(&line, "}");
  }
  if (!m.transport.empty()) absl::StrAppend(&line, ", \"transport\": \"", m.transport, "\"");
  if (!m.transport_settings.empty()) {
    absl::StrAppend(&line, ", \"transport_settings\": \"", m.transport_settings, "\"");
  }
  if (m.communication_priority_levels >= 0) {
    absl::StrAppend(&line, ", \"communication_priority_levels\": ", m.communication_priority_levels);
  }
  if (!m.recovery_json.empty()) absl::StrAppend(&line, ", \"recovery\": ", m.recovery_json);
  absl::StrAppend(&line, "}\n");
  return line;
}

absl::StatusOr<std::unique_ptr<MetricsReporter>> MetricsReporter::Open(const std::string& path, int64_t iterations,
                                                                       std::ostream* out, bool out_is_terminal) {
  std::unique_ptr<std::ofstream> file;
  if (!path.empty()) {
    file = std::make_unique<std::ofstream>(path, std::ios::trunc);
    if (!*file) return absl::PermissionDeniedError(absl::StrCat("--metrics='", path, "': cannot create the file"));
  }
  const bool progress_bar = path.empty() && out_is_terminal;
  return std::unique_ptr<MetricsReporter>(
      new MetricsReporter(std::move(file), std::max<int64_t>(1, iterations), out, progress_bar));
}

void MetricsReporter::Report(const IterationMetrics& m) {
  if (file_ != nullptr) {
    *file_ << MetricsJsonLine(m) << std::flush;
  } else if (progress_bar_) {
    const int width = 30;
    const int filled = static_cast<int>(width * std::min<int64_t>(m.iteration + 1, iterations_) / iterations_);
    *out_ << absl::StrFormat("\r[%s%s] %d/%d  loss %.4f  %.0f samples/s  %.1f ms/step", std::string(filled, '#'),
                             std::string(width - filled, ' '), m.iteration + 1, iterations_, m.loss,
                             m.samples_per_s, m.step_ms)
          << std::flush;
  } else {
    *out_ << MetricsJsonLine(m) << std::flush;
  }
}

void MetricsReporter::Finish() {
  if (progress_bar_) *out_ << "\n" << std::flush;
}

}  // namespace oneflow::actors
