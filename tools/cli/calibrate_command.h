// `oneflow calibrate [--out=FILE]`: measures what the compiler's cost model needs on this
// machine, into the calibration file it reads (sbp/calibration.h):
//  - for every configuration of PickableCodecs (sbp/compression_policy.h), one Encode and
//    one Decode (kernels/compression/codec.h) of 1 Mi Gaussian floats (4 MiB, a fixed
//    seed) on this thread, timed apart, several times after a warm-up; the medians as
//    dense f32 bytes per second (round trip, encode, decode);
//  - alpha and beta of the in-node link (the in-process backend) and of the cross-process
//    transport on 127.0.0.1, and the GEMM and memory rates of one thread
//    (tools/cli/link_calibration.h, tools/cli/machine_calibration.h).
//  - without --nodes, for each count N of --host_devices (default 4,8), the runtime's
//    in-process costs when N devices run as threads of this process: per act, per
//    collective call, and the cores they share (tools/cli/host_calibration.h, what the
//    prediction benchmark measures), one host line each, which --auto_parallel prices with.
// With --nodes=HOST:PORT,... (and the daemons' --token_file, --tls_ca, --transport as for
// `oneflow launch`) the two link levels are measured between the daemons of a cluster
// instead, by a short job on them (cluster_link_calibration.h), whose node 0 also measures
// the codecs and compute rates (machine_calibration.h) on its machine.
// The result is one JSON object per line, on stdout or, with --out, in FILE, written
// atomically (a temporary file in the same directory renamed over FILE), which the
// examples read with --codec_calibration=FILE. The compiler itself never times
// anything, so a plan depends only on the file, not on the machine that compiles it.
#ifndef TOOLS_CLI_CALIBRATE_COMMAND_H_
#define TOOLS_CLI_CALIBRATE_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand CalibrateSubcommand();

// Writes `lines`, one per line, to `path`, atomically: nothing is left
// at `path` or beside it when it fails. Errors name the flag and the path:
//   --out='/no/such/dir/c.jsonl': cannot create a temporary file in '/no/such/dir': No
//   such file or directory
absl::Status WriteCalibrationFile(const std::string& path, const std::vector<std::string>& lines);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_CALIBRATE_COMMAND_H_
