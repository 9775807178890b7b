// The lines of the calibration file (sbp/calibration.h) that describe one machine rather
// than a link between two: the throughput of every codec configuration the compiler can
// pick and the compute rates of one thread. `oneflow calibrate` measures them on its own
// machine, or with --nodes has node 0's worker measure them (tools/worker/link_measurement.h),
// so that the whole file describes the cluster.
//
//   codecs   for each PickableCodecs configuration (sbp/compression_policy.h), one Encode
//            and one Decode (kernels/compression/codec.h) of 1 Mi Gaussian floats (4 MiB,
//            a fixed seed) on this thread, timed apart, 7 times after a warm-up; the
//            medians as dense f32 bytes per second (round trip, encode, decode);
//   compute  a 512^3 SGEMM, a 64 MiB memcpy and a memcpy that stays in one core's cache
//            (tools/cli/link_calibration.h).
#ifndef TOOLS_CLI_MACHINE_CALIBRATION_H_
#define TOOLS_CLI_MACHINE_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sbp/codec_throughput.h"

namespace oneflow::cli {

struct MachineLines {
  std::vector<std::string> codec_lines;    // CodecMeasurementLine, PickableCodecs order
  // ComputeMeasurementLine: gemm, then memory, then CachedMemoryMeasurementLine when the
  // machine lists a core cache.
  std::vector<std::string> compute_lines;
};

// The median throughput of each PickableCodecs configuration over `repetitions` timed
// encode+decode passes of `elements` Gaussian floats, each pass's apart, and of an
// EncodeMeasured pass (the metering encode), in PickableCodecs order.
// Preconditions: elements >= 1, repetitions >= 1.
std::vector<CodecMeasurement> MeasureCodecThroughput(int64_t elements, int64_t repetitions);

// The measurements of the top of this file, as calibration file lines (about a second).
MachineLines MeasureMachine();

// Which machine this process runs on and the cores it may use: processes of one machine
// (a cluster's nodes emulated by network namespaces or containers on it) read the same
// boot id, and share its cores.
struct MachineIdentity {
  std::string boot_id;  // /proc/sys/kernel/random/boot_id; empty where it cannot be read
  int64_t cores = 1;    // sched_getaffinity's count, at least 1
};
MachineIdentity ThisMachine();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_MACHINE_CALIBRATION_H_
