#include "tools/cli/machine_calibration.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/compression/codec.h"
#include "sbp/calibration.h"
#include "sbp/compression_policy.h"
#include "sbp/gemm_shape_model.h"
#include "tools/cli/link_calibration.h"

namespace oneflow::cli {
namespace {

// Big enough to stream through the caches like a real boxing's buffers, small enough
// that the whole calibration takes about a second.
constexpr int64_t kElements = int64_t{1} << 20;
constexpr int64_t kRepetitions = 7;

CodecOptions ToCodecOptions(const CompressionChoice& choice) {
  CodecOptions options;
  options.group_size = choice.group_size;
  options.hadamard = choice.hadamard;
  switch (choice.kind) {
    case CompressionKind::kNone:
      options.codec = Codec::kNone;
      break;
    case CompressionKind::kFp8E4M3:
      options.codec = Codec::kFp8E4M3;
      break;
    case CompressionKind::kFp8E5M2:
      options.codec = Codec::kFp8E5M2;
      break;
    case CompressionKind::kInt4:
      options.codec = Codec::kInt4;
      break;
    case CompressionKind::kInt8:
      options.codec = Codec::kInt8;
      break;
    case CompressionKind::kBf16:
      options.codec = Codec::kBf16;
      break;
  }
  return options;
}

// The median; a timer tick of 0 would be an infinite throughput, so at least 1 ns.
double Median(std::vector<double> seconds) {
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return std::max(seconds[seconds.size() / 2], 1e-9);
}

}  // namespace

std::vector<CodecMeasurement> MeasureCodecThroughput(int64_t elements, int64_t repetitions) {
  std::vector<float> input(elements);
  std::mt19937 generator(20240601);
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  for (float& value : input) value = gaussian(generator);
  std::vector<float> decoded(elements);
  std::vector<CodecMeasurement> measurements;
  for (const CompressionChoice& choice : PickableCodecs()) {
    const CodecOptions options = ToCodecOptions(choice);
    std::vector<uint8_t> encoded(EncodedBytes(options, elements));
    // The encode that meters its error as it goes (EncodeMeasured), which a compressed
    // collective without error feedback makes instead of Encode: timed apart, since its
    // read-back of each group's codes costs more than the encode alone.
    EncodingErrorSums sums;
    // The first pass warms caches and pages; it is not timed.
    Encode(options, input.data(), elements, encoded.data());
    Decode(options, encoded.data(), elements, decoded.data());
    EncodeMeasured(options, input.data(), elements, encoded.data(), 0, &sums);
    std::vector<double> encode_seconds, decode_seconds, round_trips, encode_measured_seconds;
    for (int64_t r = 0; r < repetitions; ++r) {
      const auto start = std::chrono::steady_clock::now();
      Encode(options, input.data(), elements, encoded.data());
      const auto middle = std::chrono::steady_clock::now();
      Decode(options, encoded.data(), elements, decoded.data());
      const auto end = std::chrono::steady_clock::now();
      EncodeMeasured(options, input.data(), elements, encoded.data(), 0, &sums);
      const auto measured_end = std::chrono::steady_clock::now();
      encode_seconds.push_back(std::chrono::duration<double>(middle - start).count());
      decode_seconds.push_back(std::chrono::duration<double>(end - middle).count());
      round_trips.push_back(std::chrono::duration<double>(end - start).count());
      encode_measured_seconds.push_back(std::chrono::duration<double>(measured_end - end).count());
    }
    const double bytes = static_cast<double>(elements * sizeof(float));
    // The encoders that do more per element (sbp/codec_throughput.h EncoderVariant), timed
    // the same way where the codec has them.
    auto variant_encode_rate = [&](EncoderVariant variant) {
      if (!HasEncoderVariant(choice, variant)) return 0.0;
      CodecOptions variant_options = options;
      variant_options.fitted_int4_scale = variant == EncoderVariant::kFittedInt4Scale;
      variant_options.stochastic_rounding = variant == EncoderVariant::kStochasticRounding;
      variant_options.seed = 20240601;
      Encode(variant_options, input.data(), elements, encoded.data());  // warm-up
      std::vector<double> seconds;
      for (int64_t r = 0; r < repetitions; ++r) {
        const auto start = std::chrono::steady_clock::now();
        Encode(variant_options, input.data(), elements, encoded.data());
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return bytes / Median(seconds);
    };
    CodecMeasurement measurement;
    measurement.choice = choice;
    measurement.bytes_per_second = bytes / Median(round_trips);
    measurement.encode_bytes_per_second = bytes / Median(encode_seconds);
    measurement.decode_bytes_per_second = bytes / Median(decode_seconds);
    measurement.encode_measured_bytes_per_second = bytes / Median(encode_measured_seconds);
    measurement.encode_fitted_bytes_per_second = variant_encode_rate(EncoderVariant::kFittedInt4Scale);
    measurement.encode_stochastic_bytes_per_second = variant_encode_rate(EncoderVariant::kStochasticRounding);
    measurement.elements = elements;
    measurement.repetitions = repetitions;
    measurements.push_back(measurement);
  }
  return measurements;
}

MachineLines MeasureMachine() {
  MachineLines lines;
  for (const CodecMeasurement& measurement : MeasureCodecThroughput(kElements, kRepetitions)) {
    lines.codec_lines.push_back(CodecMeasurementLine(measurement));
  }
  lines.compute_lines.push_back(ComputeMeasurementLine("gemm", MeasureGemmFlopsPerSecond(kRepetitions),
                                                       "sgemm 512x512x512, 1 thread"));
  const std::vector<GemmTiming> gemm_timings = MeasureGemmShapes(kRepetitions);
  const GemmShapeModel gemm_shape = FitGemmShapeModel(gemm_timings);
  if (gemm_shape.measured()) {
    lines.compute_lines.push_back(GemmShapeMeasurementLine(
        gemm_shape, absl::StrFormat("runtime sgemm over %d shapes (square 64-512, projections, per-head batched), "
                                    "1 thread, fitted; median |error| %.1f%%",
                                    gemm_timings.size(), 100 * MedianRelativeError(gemm_shape, gemm_timings))));
  }
  lines.compute_lines.push_back(ComputeMeasurementLine("memory", MeasureMemoryBytesPerSecond(kRepetitions),
                                                       absl::StrCat("memcpy 64 MiB, 1 thread, bytes read + written, median of ",
                                                                    kMemoryWindows, " windows ",
                                                                    absl::FormatDuration(kMemoryWindowGap), " apart")));
  // Without a listed core cache the line is left out: every byte prices at the memory rate.
  if (const int64_t cache = CoreCacheBytes(); cache > 0) {
    lines.compute_lines.push_back(CachedMemoryMeasurementLine(
        MeasureCachedMemoryBytesPerSecond(kRepetitions, cache), cache,
        absl::StrCat("memcpy ", cache / 2048, " KiB into ", cache / 2048, " KiB, in a ", cache / 1024,
                     " KiB core cache, 1 thread, bytes read + written")));
  }
  return lines;
}

MachineIdentity ThisMachine() {
  MachineIdentity machine;
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::getline(file, machine.boot_id);
  machine.boot_id = std::string(absl::StripAsciiWhitespace(machine.boot_id));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) machine.cores = std::max(1, CPU_COUNT(&set));
  return machine;
}

}  // namespace oneflow::cli
