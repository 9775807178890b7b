// What compressed boxing costs in accuracy, per iteration: the compressed boxing acts of
// this process's devices hand the meter what each act moved and lost (the collectives
// measure their own encodings, kernels/compression/compressed_collectives.h, "Error");
// the runtime takes the sums of an iteration once every local device has finished it and
// puts them on that iteration's metrics line, per codec. An edge (one step of one boxing)
// whose error over an iteration exceeds its codec's documented bound warns once, naming
// the tensor, the step, the codec, the error, the bound and the iteration; never again.
// docs/sbp_and_boxing.md, "Measured error in the metrics", has the table and its source.
#ifndef ACTORS_COMPRESSION_METER_H_
#define ACTORS_COMPRESSION_METER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/metrics.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"

namespace oneflow::actors {

// "int4/128": the codec's name and group size, the key of the metrics line.
std::string CodecMetricsKey(const CodecOptions& codec);

// The relative L2 error one iteration of an edge may show before it warns: about 1.5x
// the worst measured per edge in training runs (Gaussian data for codecs no policy
// picks); the table and its measurements are in compression_meter.cc and the docs.
// 0 for kNone.
double DocumentedErrorBound(Codec codec);

// The traffic of one act: `after` - `before` of a step's running totals.
CompressedTraffic TrafficSince(const CompressedTraffic& after, const CompressedTraffic& before);

struct CompressionMeterOptions {
  // The bound per codec; unset: DocumentedErrorBound(codec.codec).
  std::function<double(const CodecOptions& codec)> bound;
  // Receives each warning line (no newline); unset: stderr.
  std::function<void(const std::string& line)> warn;
};

// Thread-safe: devices' threads record, the runtime takes.
class CompressionMeter {
 public:
  explicit CompressionMeter(CompressionMeterOptions options = {});

  // One metered part of an edge: the step `step` of plan boxing `boxing` encoded with
  // `codec` (a two-level step has two parts, one per level). `description` names it in
  // the warning, e.g. "tensor 'w_grad' boxing 4 step 0 (all_reduce on hierarchy axis 0)".
  // Devices that run the same step share the part; returns its id for Record.
  int AddPart(int64_t boxing, int64_t step, const std::string& description, const CodecOptions& codec);

  // Adds one act's traffic to iteration `iteration` of part `part`.
  void Record(int part, int64_t iteration, const CompressedTraffic& traffic);

  // The sums of `iteration` per codec key, forgotten here; empty when no part was added.
  // Warns for every edge that exceeds its bound in this iteration and has not warned yet.
  // Call once per iteration, after every act of it was recorded.
  std::map<std::string, CodecMetrics> TakeIteration(int64_t iteration);

 private:
  struct Part {
    std::pair<int64_t, int64_t> edge;  // (boxing, step)
    std::string description;
    CodecOptions codec;
    std::string key;
    double bound = 0;
  };
  CompressionMeterOptions options_;
  std::mutex mutex_;
  std::vector<Part> parts_;
  // iteration -> part -> that iteration's traffic of the part on this process's devices.
  std::map<int64_t, std::map<int, CompressedTraffic>> pending_;
  std::set<std::pair<int64_t, int64_t>> warned_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_COMPRESSION_METER_H_
