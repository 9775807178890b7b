// `oneflow calibrate [--out=FILE]`: measures how fast this machine encodes and decodes
// each codec configuration the compiler can pick, for --compression=auto's cost model.
//
// For every configuration of PickableCodecs (sbp/compression_policy.h) it times one
// Encode followed by one Decode (kernels/compression/codec.h) of 1 Mi Gaussian floats
// (4 MiB, a fixed seed) on this thread, several times after a warm-up, and reports the
// median as dense f32 bytes per second. The result is one JSON object per line
// (CodecMeasurementLine, sbp/codec_throughput.h), on stdout or, with --out, in FILE,
// written atomically (a temporary file in the same directory renamed over FILE), which
// the examples read with --codec_calibration=FILE. The compiler itself never times
// anything, so a plan depends only on the file, not on the machine that compiles it.
#ifndef TOOLS_CLI_CALIBRATE_COMMAND_H_
#define TOOLS_CLI_CALIBRATE_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sbp/codec_throughput.h"
#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand CalibrateSubcommand();

// The median throughput of each PickableCodecs configuration over `repetitions` timed
// encode+decode passes of `elements` Gaussian floats, in PickableCodecs order.
// Preconditions: elements >= 1, repetitions >= 1.
std::vector<CodecMeasurement> MeasureCodecThroughput(int64_t elements, int64_t repetitions);

// Writes one CodecMeasurementLine per measurement to `path`, atomically: nothing is left
// at `path` or beside it when it fails. Errors name the flag and the path:
//   --out='/no/such/dir/c.jsonl': cannot create a temporary file in '/no/such/dir': No
//   such file or directory
absl::Status WriteCalibrationFile(const std::string& path, const std::vector<CodecMeasurement>& measurements);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_CALIBRATE_COMMAND_H_
