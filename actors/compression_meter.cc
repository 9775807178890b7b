#include "actors/compression_meter.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::actors {

std::string CodecMetricsKey(const CodecOptions& codec) {
  return absl::StrCat(CodecName(codec.codec), "/", codec.group_size);
}

double DocumentedErrorBound(Codec codec) {
  // The relative L2 error of one edge in one iteration, about 1.5x the worst measured
  // (docs/sbp_and_boxing.md, "Measured error in the metrics"): per edge and iteration in
  // 200-iteration runs of the gpt and the mlp on 4 devices (every codec forced, and auto
  // with two-level gradients and TACO activations), and codec_test's Gaussian data for
  // the codecs no policy picks. Small tensors (a layer norm's 64 gains over 2 devices)
  // are the worst: a few groups, each with its own grid. One bound per codec, whatever
  // the group size, rotation or rounding.
  switch (codec) {
    case Codec::kNone:
      return 0.0;
    case Codec::kFp8E4M3:  // worst 3.14% per edge (Gaussian 2.57%; with hadamard, auto's
                           // activations, worst below 3.2%, Gaussian 2.58%)
      return 0.05;
    case Codec::kFp8E5M2:  // not picked by any policy: Gaussian 5.13%
      return 0.08;
    case Codec::kInt8:  // worst 1.29% per edge, int8/512 rotated (Gaussian 0.65%)
      return 0.02;
    case Codec::kInt4:  // worst 21.1% per edge (Gaussian 11.7%, stochastic 16.6%)
      return 0.30;
    case Codec::kBf16:  // at most 2^-8 = 0.39% per element by construction (Gaussian 0.165%)
      return 0.004;
  }
  return 0.0;
}

CompressedTraffic TrafficSince(const CompressedTraffic& after, const CompressedTraffic& before) {
  CompressedTraffic traffic;
  traffic.bytes_sent = after.bytes_sent - before.bytes_sent;
  traffic.bytes_received = after.bytes_received - before.bytes_received;
  traffic.dense_bytes_sent = after.dense_bytes_sent - before.dense_bytes_sent;
  traffic.dense_bytes_received = after.dense_bytes_received - before.dense_bytes_received;
  traffic.error_sq = after.error_sq - before.error_sq;
  traffic.signal_sq = after.signal_sq - before.signal_sq;
  return traffic;
}

CompressionMeter::CompressionMeter(CompressionMeterOptions options) : options_(std::move(options)) {
  if (!options_.bound) options_.bound = [](const CodecOptions& codec) { return DocumentedErrorBound(codec.codec); };
  if (!options_.warn) {
    options_.warn = [](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    };
  }
}

int CompressionMeter::AddPart(int64_t boxing, int64_t step, const std::string& description,
                              const CodecOptions& codec) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = CodecMetricsKey(codec);
  for (size_t p = 0; p < parts_.size(); ++p) {
    if (parts_[p].edge == std::make_pair(boxing, step) && parts_[p].key == key) return static_cast<int>(p);
  }
  parts_.push_back(Part{{boxing, step}, description, codec, key, options_.bound(codec)});
  return static_cast<int>(parts_.size() - 1);
}

void CompressionMeter::Record(int part, int64_t iteration, const CompressedTraffic& traffic) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_[iteration][part] += traffic;
}

std::map<std::string, CodecMetrics> CompressionMeter::TakeIteration(int64_t iteration) {
  std::map<std::string, CodecMetrics> metrics;
  std::vector<std::string> warnings;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Every codec in use appears, even in an iteration whose acts moved nothing.
    for (const Part& part : parts_) metrics[part.key];
    auto it = pending_.find(iteration);
    if (it == pending_.end()) return metrics;
    for (const auto& [p, traffic] : it->second) {
      const Part& part = parts_[p];
      CodecMetrics& sums = metrics[part.key];
      sums += CodecMetrics{traffic.error_sq, traffic.signal_sq, traffic.bytes_sent, traffic.dense_bytes_sent};
      const double error = traffic.RelativeError();
      // Written so that a NaN error (a NaN or Inf was encoded) warns too.
      if (!(error <= part.bound) && warned_.insert(part.edge).second) {
        warnings.push_back(absl::StrFormat(
            "oneflow: warning: compressed boxing of %s, codec %s: relative L2 error %.4g in iteration %d "
            "exceeds the bound %.4g for %s (docs/sbp_and_boxing.md, \"Measured error in the metrics\"); "
            "this edge does not warn again",
            part.description, part.key, error, iteration, part.bound, CodecName(part.codec.codec)));
      }
    }
    pending_.erase(it);
  }
  for (const std::string& line : warnings) options_.warn(line);
  return metrics;
}

}  // namespace oneflow::actors
