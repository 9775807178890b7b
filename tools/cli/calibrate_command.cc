#include "tools/cli/calibrate_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "kernels/compression/codec.h"
#include "oneflow_core/files/atomic_write.h"
#include "sbp/calibration.h"
#include "sbp/compression_policy.h"
#include "tools/cli/cluster_link_calibration.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/link_calibration.h"

ABSL_DECLARE_FLAG(std::string, transport);

ABSL_FLAG(std::string, out, "",
          "Write the measurements (JSON lines) to this file, atomically, instead of stdout.");

namespace oneflow::cli {
namespace {

// Big enough to stream through the caches like a real boxing's buffers, small enough
// that the whole calibration takes about a second.
constexpr int64_t kElements = int64_t{1} << 20;
constexpr int64_t kRepetitions = 7;
// Link calls are short (a 4 KiB all-reduce is microseconds to a millisecond): more of
// them make the median steadier on a loaded machine.
constexpr int64_t kLinkRepetitions = 21;

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
    case CompressionKind::kTacoFp8:
      options.codec = Codec::kTacoFp8;
      break;
  }
  return options;
}

// The median; a timer tick of 0 would be an infinite throughput, so at least 1 ns.
double Median(std::vector<double> seconds) {
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return std::max(seconds[seconds.size() / 2], 1e-9);
}

// Both levels on this machine alone: the in-process backend and 2 processes over TCP.
absl::StatusOr<ClusterLinks> MeasureLocalLinks() {
  // The cross-process link first: it forks, and a fork is simplest before this process
  // has started any thread.
  absl::StatusOr<MeasuredLink> inter_node = MeasureCrossProcessLink(kLinkRepetitions);
  if (!inter_node.ok()) {
    return absl::Status(inter_node.status().code(),
                        absl::StrCat("measuring the cross-process link: ", inter_node.status().message()));
  }
  absl::StatusOr<MeasuredLink> intra_node = MeasureInProcessLink(kLinkRepetitions);
  if (!intra_node.ok()) {
    return absl::Status(intra_node.status().code(),
                        absl::StrCat("measuring the in-process link: ", intra_node.status().message()));
  }
  return ClusterLinks{intra_node->fit, inter_node->fit};
}

// With --nodes: both levels between the daemons of the cluster (cluster_link_calibration.h).
absl::StatusOr<ClusterLinks> MeasureLinksBetweenDaemons() {
  absl::StatusOr<DaemonFlags> daemons = ReadDaemonFlags();
  if (!daemons.ok()) return daemons.status();
  ClusterCalibrationOptions options;
  options.nodes = daemons->nodes;
  options.token = daemons->token;
  options.tls_ca_file = daemons->tls_ca_file;
  // LaunchSession::Create refuses an unknown one, listing the valid ones.
  options.transport = absl::GetFlag(FLAGS_transport);
  return MeasureClusterLinks(options);
}

absl::Status RunCalibrate(const std::vector<std::string>& /*arguments*/, std::ostream& out) {
  absl::StatusOr<ClusterLinks> links =
      absl::GetFlag(FLAGS_nodes).empty() ? MeasureLocalLinks() : MeasureLinksBetweenDaemons();
  if (!links.ok()) return links.status();
  std::vector<std::string> lines;
  for (const CodecMeasurement& measurement : MeasureCodecThroughput(kElements, kRepetitions)) {
    lines.push_back(CodecMeasurementLine(measurement));
  }
  lines.push_back(LinkMeasurementLine("intra_node", links->intra_node));
  lines.push_back(LinkMeasurementLine("inter_node", links->inter_node));
  lines.push_back(ComputeMeasurementLine("gemm", MeasureGemmFlopsPerSecond(kRepetitions),
                                         "sgemm 512x512x512, 1 thread"));
  lines.push_back(ComputeMeasurementLine("memory", MeasureMemoryBytesPerSecond(kRepetitions),
                                         "memcpy 64 MiB, 1 thread, bytes read + written"));
  const std::string path = absl::GetFlag(FLAGS_out);
  if (!path.empty()) return WriteCalibrationFile(path, lines);
  for (const std::string& line : lines) out << line << "\n";
  out.flush();
  if (!out) return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
  return absl::OkStatus();
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
    // The first pass warms caches and pages; it is not timed.
    Encode(options, input.data(), elements, encoded.data());
    Decode(options, encoded.data(), elements, decoded.data());
    std::vector<double> encode_seconds, decode_seconds, round_trips;
    for (int64_t r = 0; r < repetitions; ++r) {
      const auto start = std::chrono::steady_clock::now();
      Encode(options, input.data(), elements, encoded.data());
      const auto middle = std::chrono::steady_clock::now();
      Decode(options, encoded.data(), elements, decoded.data());
      const auto end = std::chrono::steady_clock::now();
      encode_seconds.push_back(std::chrono::duration<double>(middle - start).count());
      decode_seconds.push_back(std::chrono::duration<double>(end - middle).count());
      round_trips.push_back(std::chrono::duration<double>(end - start).count());
    }
    const double bytes = static_cast<double>(elements * sizeof(float));
    CodecMeasurement measurement{choice, bytes / Median(round_trips), 0, 0, elements, repetitions};
    measurement.encode_bytes_per_second = bytes / Median(encode_seconds);
    measurement.decode_bytes_per_second = bytes / Median(decode_seconds);
    measurements.push_back(measurement);
  }
  return measurements;
}

absl::Status WriteCalibrationFile(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
  const absl::Status written = WriteFileAtomically(path, text, WriteFileOptions{absl::StrCat("--out='", path, "'")});
  // A place the user named that cannot be written is a usage error (exit 2), whatever errno said.
  if (!written.ok()) return absl::InvalidArgumentError(written.message());
  return absl::OkStatus();
}

Subcommand CalibrateSubcommand() {
  Subcommand command;
  command.name = "calibrate";
  command.arguments = "";
  command.flag_usage = "[--out=FILE] [--nodes=HOST:PORT,... --token_file=F [--tls_ca=F] [--transport=ucx|gloo]]";
  command.summary =
      "measure the links (alpha, beta) of this machine or, with --nodes, between a cluster's daemons, and this "
      "machine's codecs and compute rates, for the cost model (for --codec_calibration=FILE)";
  command.flags = {"out", "nodes", "token_file", "tls_ca", "transport"};
  command.flag_help = {
      {"nodes",
       "HOST:PORT of each node's oneflowd, comma-separated, node 0 first (at least 2): measure the links within "
       "and between these nodes by a short job on them; without it, this machine alone"},
      {"transport", "the transport of the measured groups across nodes: ucx (default) or gloo"},
  };
  command.min_arguments = 0;
  command.max_arguments = 0;
  command.run = &RunCalibrate;
  return command;
}

}  // namespace oneflow::cli
