// The examples' compression flags as a CompressionPolicy for the compiler:
//   --compression=off|auto|fp8|int8|int4   (default auto)
//   --codec_bytes_per_second=B             every codec at B dense bytes/s (0: the table)
//   --codec_calibration=FILE               measured throughputs (`oneflow calibrate`)
// Kept apart from example_main.cc, which reads the flags, so tests can check every value
// without touching process-global flags.
#ifndef EXAMPLES_COMMON_COMPRESSION_FLAGS_H_
#define EXAMPLES_COMMON_COMPRESSION_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "sbp/compression_policy.h"

namespace oneflow::examples {

struct CompressionFlags {
  std::string compression = "auto";
  double codec_bytes_per_second = 0;
  std::string codec_calibration;
};

// off: dense. auto: each tensor's role picks its codecs and the cost model decides per
// step. fp8, int8, int4: that codec (groups of 128) on every eligible boxing. The codec
// throughputs: CodecThroughput::Defaults(), or --codec_calibration's file over them, or
// --codec_bytes_per_second for all. INVALID_ARGUMENT naming the flag:
//   --compression=fp9 is not a choice; valid: off, auto, fp8, int8, int4
//   --codec_bytes_per_second=-1 must be a finite number > 0 (or 0: the per-codec table)
//   --codec_bytes_per_second and --codec_calibration both give codec throughputs; use one
//   --codec_calibration: codec calibration file 'c.jsonl' line 2: ...
absl::StatusOr<CompressionPolicy> CompressionPolicyFromFlags(const CompressionFlags& flags);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_COMPRESSION_FLAGS_H_
