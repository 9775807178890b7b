#include "tools/cli/calibrate_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "kernels/compression/codec.h"
#include "sbp/compression_policy.h"

ABSL_FLAG(std::string, out, "",
          "Write the measurements (JSON lines) to this file, atomically, instead of stdout.");

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
    case CompressionKind::kTacoFp8:
      options.codec = Codec::kTacoFp8;
      break;
  }
  return options;
}

absl::Status SystemError(const std::string& path, absl::string_view what, int error) {
  return absl::InvalidArgumentError(absl::StrCat("--out='", path, "': ", what, ": ", std::strerror(error)));
}

absl::Status RunCalibrate(const std::vector<std::string>& /*arguments*/, std::ostream& out) {
  const std::vector<CodecMeasurement> measurements = MeasureCodecThroughput(kElements, kRepetitions);
  const std::string path = absl::GetFlag(FLAGS_out);
  if (!path.empty()) return WriteCalibrationFile(path, measurements);
  for (const CodecMeasurement& measurement : measurements) out << CodecMeasurementLine(measurement) << "\n";
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
    std::vector<double> seconds;
    for (int64_t r = 0; r < repetitions; ++r) {
      const auto start = std::chrono::steady_clock::now();
      Encode(options, input.data(), elements, encoded.data());
      Decode(options, encoded.data(), elements, decoded.data());
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
    // A timer tick of 0 would be an infinite throughput; one nanosecond bounds it.
    const double median = std::max(seconds[seconds.size() / 2], 1e-9);
    measurements.push_back(CodecMeasurement{choice, elements * sizeof(float) / median, elements, repetitions});
  }
  return measurements;
}

absl::Status WriteCalibrationFile(const std::string& path, const std::vector<CodecMeasurement>& measurements) {
  std::string text;
  for (const CodecMeasurement& measurement : measurements) {
    absl::StrAppend(&text, CodecMeasurementLine(measurement), "\n");
  }
  const size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  // In the same directory, so that rename() is atomic (one filesystem).
  std::string temporary = absl::StrCat(path, ".tmp.XXXXXX");
  const int file = mkostemp(temporary.data(), O_CLOEXEC);
  if (file < 0) return SystemError(path, absl::StrCat("cannot create a temporary file in '", directory, "'"), errno);
  auto fail = [&](absl::string_view what, int error) {
    close(file);
    unlink(temporary.c_str());
    return SystemError(path, what, error);
  };
  // mkstemp makes the file 0600; a calibration is no secret and other users compile with it.
  if (fchmod(file, 0644) != 0) return fail("cannot set the mode of the temporary file", errno);
  for (size_t written = 0; written < text.size();) {
    const ssize_t n = write(file, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write the temporary file", errno);
    written += static_cast<size_t>(n);
  }
  if (fsync(file) != 0) return fail("cannot flush the temporary file", errno);
  if (close(file) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    return SystemError(path, "cannot close the temporary file", error);
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    return SystemError(path, "cannot rename the temporary file into place", error);
  }
  return absl::OkStatus();
}

Subcommand CalibrateSubcommand() {
  Subcommand command;
  command.name = "calibrate";
  command.arguments = "";
  command.flag_usage = "[--out=FILE]";
  command.summary =
      "time each codec the compiler can pick on this machine (for --codec_calibration=FILE)";
  command.flags = {"out"};
  command.min_arguments = 0;
  command.max_arguments = 0;
  command.run = &RunCalibrate;
  return command;
}

}  // namespace oneflow::cli
