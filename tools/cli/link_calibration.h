// What `oneflow calibrate` measures besides codecs: alpha and beta of each link level and
// the compute rates, on this machine (sbp/calibration.h has the file format).
//
//   intra_node  2 ranks of the in-process backend (threads of one process: what devices
//               of one node use): all-reduces of 4 KiB and 16 MiB per rank.
//   inter_node  2 processes on this host over the default cross-process transport (UCX,
//               what groups across nodes use), restricted to TCP on 127.0.0.1 (UCX_TLS=
//               tcp,self unless UCX_TLS is set) so that shared memory does not stand in
//               for a network link; its "method" says which: the same all-reduces. The second process is a
//               fork of this one that dies with it (PR_SET_PDEATHSIG) and is reaped
//               before the call returns.
//   gemm        one 512 x 512 x 512 SGEMM on this thread.
//   memory      a 64 MiB memcpy on this thread, bytes read + written.
//
// Alpha and beta from the median time of each size, fitted to the cost model's own
// formula for that route (sbp/collective_cost.h), so that the model reproduces both
// measured times exactly: in-process t = alpha + S / beta (one round, 2 (n-1)/n S = S
// bytes for 2 ranks); cross-process t_small = alpha + S_small / beta (one round of the
// whole input) and t_large = 2 alpha + S_large / beta (two rounds). A fit that would make
// alpha negative (noise on a loaded machine) takes alpha = 0 and beta from the large size.
#ifndef TOOLS_CLI_LINK_CALIBRATION_H_
#define TOOLS_CLI_LINK_CALIBRATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sbp/calibration.h"

namespace oneflow::cli {

struct LinkTimings {
  int64_t small_bytes = 0;
  int64_t large_bytes = 0;
  double small_seconds = 0;
  double large_seconds = 0;
};

// The fits of the top of this file. `rounds_large` is 1 in-process, 2 across processes.
LinkLevelMeasurement FitLink(const LinkTimings& timings, int rounds_large);

// The measurements; `repetitions` timed calls per size after one warm-up.
// Errors: a failing collective (its status), a child process that cannot start or fails.
absl::StatusOr<LinkLevelMeasurement> MeasureInProcessLink(int64_t repetitions);
absl::StatusOr<LinkLevelMeasurement> MeasureCrossProcessLink(int64_t repetitions);
double MeasureGemmFlopsPerSecond(int64_t repetitions);
double MeasureMemoryBytesPerSecond(int64_t repetitions);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_LINK_CALIBRATION_H_
