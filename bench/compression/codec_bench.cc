// Encode + decode throughput of each codec on one thread, next to memcpy of the same
// float bytes on one thread, measured in the same run. One JSON line per codec and size:
//   {"bench":"codec","codec":"fp8e4m3","group_size":128,"hadamard":true,"elements":..,
//    "encode_gbps":..,"decode_gbps":..,"round_trip_gbps":..,"memcpy_gbps":..,"ratio":..,
//    "goal":0.25,"wire_bytes_per_element":..,"relative_error":..,"meter_gbps":..,
//    "reduce_scatter_metering":..,"all_gather_metering":..,"encode_measured_gbps":..,
//    "reduce_scatter_metering_measured":..}
// gbps = GB/s of float32 input (4 bytes per element); round_trip = one encode plus one
// decode; ratio = round_trip / memcpy, the fraction of a plain copy's speed the codec
// keeps: a compressed collective spends about that much CPU per byte on top of moving
// fewer bytes. Goals (the issue): >= 0.25 for FP8 with a Hadamard of 128, >= 0.40 for
// int8 and int4 without. Calls of the three alternate and each keeps its fastest, so
// drift in clock speed or a busy neighbour on a shared machine affects all alike.
//
// Metering (compressed_collectives.h, "Error"): the collectives measure what their own
// encodings lose. meter_gbps is AddEncodingError alone; the two overheads are relative to
// the codec work a sent element costs anyway (one encode plus one decode): a
// reduce-scatter sender decodes each chunk it sent once more and meters it
// ((decode + meter) / (encode + decode)), an all-gather meters the decode of its own shard
// that it makes anyway (meter / (encode + decode)). Since session 46 a reduce-scatter
// without error feedback meters while it encodes (EncodeMeasured, codec.h):
// encode_measured_gbps is that call, and reduce_scatter_metering_measured its overhead,
// (encode_measured - encode) / (encode + decode), against reduce_scatter_metering, the
// decode-and-compare it replaced (with error feedback the collectives still pay that one).
//
//   bazel run -c opt //bench/compression:codec_bench
//   bazel run -c opt //bench/compression:codec_bench -- --elements=262144,16777216
//
// Three sizes by default: 256 Ki elements (1 MiB of floats: the buffers stay in L2, where
// memcpy runs at L2 speed and every codec is compute-bound), 4 Mi (16 MiB: the last-level
// cache) and 16 Mi (64 MiB: memcpy and the codecs stream from memory, as they do on the
// tensors compressed boxing moves). --group_size changes G for every codec.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/random.h"

ABSL_FLAG(std::vector<std::string>, elements,
          std::vector<std::string>({"262144", "4194304", "16777216"}),
          "tensor sizes in elements");
ABSL_FLAG(double, min_seconds, 0.5, "time spent on each codec and size, at least");
ABSL_FLAG(int, min_calls, 5, "calls of each side, at least");
ABSL_FLAG(int64_t, group_size, 128, "elements per scale (a power of two in [32, 2048])");

namespace oneflow {
namespace {

struct Case {
  CodecOptions options;
  double goal;  // 0: none stated
};

std::vector<Case> Cases(int64_t g) {
  CodecOptions stochastic{Codec::kInt4, g};
  stochastic.stochastic_rounding = true;
  // What a gradient's int4 steps run (Compression.fitted_int4_scale): the scale chosen by
  // error, seven candidates per group (int_quant.h, ChooseInt4Scale).
  CodecOptions fitted{Codec::kInt4, g};
  fitted.fitted_int4_scale = true;
  CodecOptions fitted_rotated{Codec::kInt4, g, true};
  fitted_rotated.fitted_int4_scale = true;
  return {
      {{Codec::kFp8E4M3, g, /*hadamard=*/true}, 0.25},
      {{Codec::kFp8E4M3, g}, 0},
      {{Codec::kFp8E5M2, g}, 0},
      {{Codec::kInt8, g}, 0.40},
      {{Codec::kInt4, g}, 0.40},
      {{Codec::kInt8, g, true}, 0},
      {{Codec::kInt4, g, true}, 0},
      {stochastic, 0},
      {fitted, 0},
      {fitted_rotated, 0},
      {{Codec::kBf16, g}, 0},  // no groups: g is ignored
  };
}

template <typename Fn>
double Seconds(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Run() {
  for (const std::string& text : absl::GetFlag(FLAGS_elements)) {
    const int64_t count = std::stoll(text);
    std::vector<float> input(count), copy(count), decoded(count);
    BlockNormals(LogicalRandom(1), 0, count, input.data());
    for (const Case& c : Cases(absl::GetFlag(FLAGS_group_size))) {
      const CodecOptions& options = c.options;
      std::vector<uint8_t> encoded(EncodedBytes(options, count));
      auto run_memcpy = [&] { std::memcpy(copy.data(), input.data(), count * sizeof(float)); };
      auto run_encode = [&] { Encode(options, input.data(), count, encoded.data()); };
      auto run_decode = [&] { Decode(options, encoded.data(), count, decoded.data()); };
      CompressedTraffic metered;
      auto run_meter = [&] { AddEncodingError(input.data(), decoded.data(), count, &metered); };
      EncodingErrorSums sums;
      auto run_encode_measured = [&] {
        EncodeMeasured(options, input.data(), count, encoded.data(), 0, &sums);
      };
      run_memcpy();  // page faults and warm caches
      run_encode();
      run_decode();
      run_meter();
      run_encode_measured();
      double memcpy_seconds = 1e30, encode_seconds = 1e30, decode_seconds = 1e30;
      double meter_seconds = 1e30, encode_measured_seconds = 1e30, spent = 0;
      for (int calls = 0;
           calls < absl::GetFlag(FLAGS_min_calls) || spent < absl::GetFlag(FLAGS_min_seconds);
           ++calls) {
        const double m = Seconds(run_memcpy), e = Seconds(run_encode), d = Seconds(run_decode);
        const double r = Seconds(run_meter), em = Seconds(run_encode_measured);
        encode_measured_seconds = std::min(encode_measured_seconds, em);
        memcpy_seconds = std::min(memcpy_seconds, m);
        encode_seconds = std::min(encode_seconds, e);
        decode_seconds = std::min(decode_seconds, d);
        meter_seconds = std::min(meter_seconds, r);
        spent += m + e + d + r + em;
      }
      const double codec_seconds = encode_seconds + decode_seconds;
      const double bytes = 4.0 * count;
      const double memcpy_gbps = bytes / memcpy_seconds * 1e-9;
      const double round_trip_gbps = bytes / (encode_seconds + decode_seconds) * 1e-9;
      const double error = RoundTripRelativeError(options, input.data(), std::min<int64_t>(count, 1 << 20));
      std::printf(
          "{\"bench\":\"codec\",\"codec\":\"%s\",\"group_size\":%lld,\"hadamard\":%s,"
          "\"stochastic_rounding\":%s,\"fitted_int4_scale\":%s,\"elements\":%lld,\"encode_gbps\":%.2f,"
          "\"decode_gbps\":%.2f,\"round_trip_gbps\":%.2f,\"memcpy_gbps\":%.2f,\"ratio\":%.3f,"
          "\"goal\":%.2f,\"meets_goal\":%s,\"wire_bytes_per_element\":%.4f,"
          "\"relative_error\":%.5f,\"meter_gbps\":%.2f,\"reduce_scatter_metering\":%.3f,"
          "\"all_gather_metering\":%.3f,\"encode_measured_gbps\":%.2f,"
          "\"reduce_scatter_metering_measured\":%.3f,\"threads\":1}\n",
          std::string(CodecName(options.codec)).c_str(),
          static_cast<long long>(options.group_size), options.hadamard ? "true" : "false",
          options.stochastic_rounding ? "true" : "false", options.fitted_int4_scale ? "true" : "false",
          static_cast<long long>(count),
          bytes / encode_seconds * 1e-9, bytes / decode_seconds * 1e-9, round_trip_gbps,
          memcpy_gbps, round_trip_gbps / memcpy_gbps, c.goal,
          c.goal == 0 ? "null" : (round_trip_gbps / memcpy_gbps >= c.goal ? "true" : "false"),
          static_cast<double>(EncodedBytes(options, count)) / count, error,
          bytes / meter_seconds * 1e-9, (decode_seconds + meter_seconds) / codec_seconds,
          meter_seconds / codec_seconds, bytes / encode_measured_seconds * 1e-9,
          (encode_measured_seconds - encode_seconds) / codec_seconds);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::Run();
}
