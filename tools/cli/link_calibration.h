// What `oneflow calibrate` measures besides codecs: alpha and beta of each link level and
// the compute rates, on this machine (sbp/calibration.h has the file format).
//
//   intra_node  2 ranks of the in-process backend (threads of one process: what devices
//               of one node use): all-reduces of 64 B and 16 MiB per rank
//               (kCalibrationSmallBytes, kCalibrationLargeBytes).
//   inter_node  2 processes on this host over the default cross-process transport (UCX,
//               what groups across nodes use), restricted to TCP on 127.0.0.1 (UCX_TLS=
//               tcp,self unless UCX_TLS is set) so that shared memory does not stand in
//               for a network link; its "method" says which: the same all-reduces. The second process is a
//               fork of this one that dies with it (PR_SET_PDEATHSIG) and is reaped
//               before the call returns.
//   gemm        one 512 x 512 x 512 SGEMM on this thread.
//   memory      a 64 MiB memcpy on this thread, bytes read + written.
//
// `oneflow calibrate --nodes` measures the same two levels between the daemons of a
// cluster (tools/worker/link_measurement.h): intra_node in each node's worker, inter_node
// over a group of one worker per node, on the transport and interfaces the job's own
// cross-node groups use (no UCX_TLS restriction: the nodes are what they are).
//
// The transfer (the file's "transfer" line): one point-to-point transfer between two
// processes as a pipeline's send_recv boxing step runs it (kernels/boxing/send_recv.cc:
// a two-rank all-to-all whose byte matrix has one nonzero entry). Rank 0 sends 64 B to
// rank 1 and rank 1 sends them back, `repetitions` round trips after one warm-up, on a
// group of two of its own (the first two nodes with --nodes, the two processes without);
// latency = median round trip / 2 - 64 B / the inter_node level's beta, at least 0. 64 B
// for the reason the small all-reduce is 64 B (below): 4 KiB's modelled wire time at 1
// Gbit/s (34 us) exceeded a whole 4 KiB transfer on emulated hosts (their tc tbf burst),
// which left the fit 0 (docs/auto_parallel_measurements.md, "Transfers between processes
// (session 45)").
//
// The small call's time is the median of kLatencyWindows windows kLatencyWindowGap apart,
// each the median of `repetitions` calls: the daemons' alpha from one window of 21 calls
// measured 88, 106, 249 and 314 us within 20 minutes on the same emulated links at load 18-37,
// while the runtime's small gathers on those links took 0.30-0.32 ms from their last
// member's arrival at every one of those moments (docs/auto_parallel_measurements.md,
// "Session 48: c48cache"), and a layout of 64-128 calls an iteration pays alpha on each.
// The large call (beta) stays one window: it lasts 21 x ~0.15 s at 1 Gbit/s.
//
// Alpha and beta from the median time of each size, fitted to the cost model's own
// formula for that route (sbp/collective_cost.h), so that the model reproduces both
// measured times exactly. With n ranks and S bytes per rank, the busiest rank receives
// W bytes: in-process t = alpha + W / beta, W = 2 (n-1)/n S (one round; S for 2 ranks);
// cross-process t_small = alpha + W_small / beta, W_small = (n-1) S_small (one round of the
// whole input to every peer) and t_large = 2 alpha + W_large / beta, W_large = 2 (n-1)/n
// S_large (two rounds). A fit that would make alpha negative (noise on a loaded machine)
// takes alpha = 0 and beta from the large size.
//
// Why 64 B and not a few KiB for the small size: alpha is the cost of a call that moves
// nothing, which is what the compiler weighs when it decides between one bucketed
// collective and a call per tensor (sbp/boxing/sbp_search.cc takes a bucket's shared
// latency off a step; a per-tensor step keeps it). With 4 KiB the small call's modelled
// wire time (34 us at 1 Gbit/s) was as large as alpha itself, so alpha was whatever was
// left of the measured time after it: on emulated hosts, whose tc tbf burst lets 4 KiB
// through at veth speed, 0 to 195 us between calibrations of the same hosts; at 0 the
// boxing planner saw no cost in a gradient's reduce-scatter bucket followed by one
// all-gather per tensor (38 calls on the bench gpt) and chose it over one all-reduce
// bucket, and the step ran 10-25% slower (docs/auto_parallel_measurements.md, "Alpha from
// a call that moves nothing"). 64 B moves in under 1 us on any link this runs on.
#ifndef TOOLS_CLI_LINK_CALIBRATION_H_
#define TOOLS_CLI_LINK_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/transport.h"
#include "sbp/calibration.h"
#include "sbp/gemm_shape_model.h"

namespace oneflow::cli {

// The two all-reduce sizes per rank (the top of this file), and how methods name them.
inline constexpr int64_t kCalibrationSmallBytes = 64;
inline constexpr int64_t kCalibrationLargeBytes = int64_t{16} << 20;
inline constexpr char kCalibrationSizesText[] = "64 B (median of 5 windows 200 ms apart) and 16 MiB";
inline constexpr int64_t kLatencyWindows = 5;
inline constexpr absl::Duration kLatencyWindowGap = absl::Milliseconds(200);

// The median over `windows` windows, `gap` apart, of each window's median seconds of
// `repetitions` calls of `call` after one warm-up call; the first error stops. A machine
// whose other programs come and go in bursts slows one window, not the median.
absl::StatusOr<double> MedianOfWindows(int64_t windows, absl::Duration gap, int64_t repetitions,
                                       const std::function<absl::Status()>& call);

// Median seconds of one all-reduce of each size, and the bytes the busiest rank received
// in it (W of the top of this file).
struct LinkTimings {
  double small_bytes = 0;
  double large_bytes = 0;
  double small_seconds = 0;
  double large_seconds = 0;
};

// The bytes the busiest of `ranks` >= 2 ranks receives in one all-reduce of each size
// (W of the top of this file; the seconds are 0): in-process, or across processes.
LinkTimings AllReduceWireBytes(int64_t ranks, bool cross_process);

// The fits of the top of this file. `rounds_large` is 1 in-process, 2 across processes.
LinkLevelMeasurement FitLink(const LinkTimings& timings, int rounds_large);

// One level measured: the fit and the timings it came from.
struct MeasuredLink {
  LinkLevelMeasurement fit;
  LinkTimings timings;
};

// The bytes each way of the transfer's round trips, and how methods name them.
inline constexpr int64_t kTransferBytes = kCalibrationSmallBytes;
inline constexpr char kTransferSizeText[] = "64 B each way";

// The transfer's fit of the top of this file: round_trip_seconds / 2 - bytes / beta, at least 0.
TransferMeasurement FitTransfer(double round_trip_seconds, int64_t bytes, double bytes_per_second);

// The measurements; `repetitions` timed calls per size after one warm-up.
// Errors: a failing collective (its status), a child process that cannot start or fails.
absl::StatusOr<MeasuredLink> MeasureInProcessLink(int64_t repetitions);
// MeasureCrossProcessLink also measures the transfer between its two processes.
struct CrossProcessMeasurement {
  MeasuredLink link;
  TransferMeasurement transfer;
};
absl::StatusOr<CrossProcessMeasurement> MeasureCrossProcessLink(int64_t repetitions);

// A fresh directory under /tmp where processes of this machine that this one starts meet
// (their rendezvous files), removed with everything in it when this goes.
class MeetingDirectory {
 public:
  // `prefix` names it ("/tmp/PREFIX.XXXXXX"); INTERNAL when it cannot be made.
  static absl::StatusOr<std::unique_ptr<MeetingDirectory>> Create(absl::string_view prefix);
  ~MeetingDirectory();
  MeetingDirectory(const MeetingDirectory&) = delete;
  MeetingDirectory& operator=(const MeetingDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit MeetingDirectory(std::string path) : path_(std::move(path)) {}
  const std::string path_;
};

// For processes of this machine that this one is about to start on the default transport:
// keeps UCX to TCP (UCX_TLS=tcp,self in this process's environment, which they inherit)
// unless the user set UCX_TLS, so that shared memory does not stand in for a network
// link. Returns how they will talk, for a "method": "ucx ... over TCP on 127.0.0.1",
// "ucx ... UCX_TLS=<the user's>" or "gloo ... 127.0.0.1" (the transport's name, then
// `what`, e.g. "all_reduce, 2 processes").
std::string KeepProcessesOnTcp(absl::string_view what);

// Rank `options.rank` of a group of `options.size` >= 2 processes over `transport`, met
// through `options.store`: every rank calls it at the same time; each returns its own
// timings, fitted. `method` goes into the fit as is.
absl::StatusOr<MeasuredLink> MeasureCrossProcessGroup(Transport transport, const CrossProcessGroupOptions& options,
                                                      int64_t repetitions, std::string method);
// The transfer between the two ranks of `options` (size 2; both call it at the same
// time), fitted with `bytes_per_second` (the inter_node level's beta); `method` goes into
// the fit as is.
absl::StatusOr<TransferMeasurement> MeasureCrossProcessTransfer(Transport transport,
                                                                const CrossProcessGroupOptions& options,
                                                                int64_t repetitions, double bytes_per_second,
                                                                std::string method);
double MeasureGemmFlopsPerSecond(int64_t repetitions);
// The runtime's GEMM kernel (kernels/cpu/sgemm.h) on this thread over
// kGemmCalibrationShapes (sbp/gemm_shape_model.h): per shape the median of `repetitions`
// samples, each at least 1 ms of back-to-back calls, per call.
std::vector<GemmTiming> MeasureGemmShapes(int64_t repetitions);
// Bytes read + written per second by memcpy of 64 MiB: the median of kMemoryWindows
// windows kMemoryWindowGap apart, each the median of `repetitions` copies.
inline constexpr int64_t kMemoryWindows = 5;
inline constexpr absl::Duration kMemoryWindowGap = absl::Milliseconds(200);
double MeasureMemoryBytesPerSecond(int64_t repetitions);

// The bytes of this machine's largest cache private to one core (of levels 1 and 2, from
// /sys/devices/system/cpu/cpu0/cache: the L2 on today's x86 and Arm servers), or 0 when the
// kernel does not list it. The level 3 is shared by every core, and by other machines'
// guests on a virtual one: what of it one core may keep is not listed.
int64_t CoreCacheBytes();

// Bytes read + written per second by a memcpy of `cache_bytes` / 2 into `cache_bytes` / 2
// (both in the cache after the first call), median of `repetitions` calls: the cost
// model's rate for a write into bytes still cached (sbp/compute_cost.h).
double MeasureCachedMemoryBytesPerSecond(int64_t repetitions, int64_t cache_bytes);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_LINK_CALIBRATION_H_
