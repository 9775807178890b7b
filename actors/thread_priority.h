// Communication threads get a core before compute threads.
//
// A device's compute thread is busy for most of a step; its communication threads
// mostly wait, and when a message arrives (a TCP segment for UCX or Gloo, a peer thread's
// hand-off in process) the transfer goes on only once the waiting thread runs again. On
// a host with fewer cores than busy compute threads, a woken communication thread of
// equal priority waits for its fair share behind them, and a cross-node bucket then moves
// at the pace of the scheduler rather than the link: bench/distributed/wire_bench.sh
// measured a 3.4 MiB all-reduce over 3 emulated hosts at 1 Gbit/s 3.4x slower with two
// busy threads per process beside it than alone, and 2.1-2.5x faster again when the
// communication threads ran 10 nice levels above them (docs/benchmarks.md, "Where the 851
// ms go"). Communication threads spin at most briefly and then block
// (oneflow_core/comm/ucx/exchange.h; in-process groups wait on condition variables).
//
// What they need is latency, and a nice lead buys it with weight: at nice -10 a thread
// weighs as much as 9 at nice 0, in its share of a contended core and in the load by
// which the kernel balances its cores. Over TCP at 10 Gbit/s the communication threads
// are busy (104-147 ms of CPU per second each on dp3_h512: the socket copies), and with
// them 10 levels ahead the three compute threads of 3 emulated hosts on 2 cores were
// often queued on one core while the communication threads held the other, so one
// device ran ahead of the others by 160-290 ms per backward. A kernel with per-thread
// slices (EEVDF, Linux 6.12 and later) gives latency without weight: a woken thread
// whose slice is shorter than the running one's preempts it. Where the kernel keeps
// them, communication threads lead by kCommunicationSlice at the compute threads' nice
// value; on dp3_h512 that cut the spread of the backward ends to 71-107 ms and the step
// by 13% (docs/benchmarks.md, "Session 46"). Elsewhere they lead by nice levels:
//
// Linux applies nice values per thread (setpriority(PRIO_PROCESS, tid)). Raising a
// thread above its process's nice needs CAP_SYS_NICE or RLIMIT_NICE; lowering one is
// always allowed. So when this process may raise priority the communication threads go
// `levels` below the run's base nice value, and otherwise the compute threads go
// `levels` above it: either way communication leads compute by `levels`.
#ifndef ACTORS_THREAD_PRIORITY_H_
#define ACTORS_THREAD_PRIORITY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace oneflow::actors {

// Nice levels between the communication threads and the compute threads of a run by
// default (EngineOptions::communication_priority_levels): a weight ratio of about 9
// (the kernel's sched_prio_to_weight table: nice 0 is 1024, nice -10 is 9548).
constexpr int kCommunicationPriorityLevels = 10;

// The most levels that can separate two threads: Linux's nice range is [-20, 19].
constexpr int kMaxCommunicationPriorityLevels = 39;

// Checks a user-given lead (`flag` names where it came from, e.g.
// "--communication_priority_levels"): INVALID_ARGUMENT unless 0 <= levels <= 39, e.g.
// "--communication_priority_levels=-1 is not in [0, 39] (nice levels by which
// communication threads lead compute threads; 0: every thread at the run's nice value)".
absl::Status ValidateCommunicationPriorityLevels(int64_t levels, absl::string_view flag);

// The slice a communication thread asks for where the kernel takes one per thread
// (sched_attr.sched_runtime of a SCHED_OTHER thread; the kernel's least is 100 us;
// its default, 0.7-3 ms, is what the compute threads keep). A woken thread whose slice
// is shorter than the running one's gets an earlier deadline and preempts it, as a
// higher priority would, at the weight of the run's nice value.
constexpr absl::Duration kCommunicationSlice = absl::Microseconds(100);

struct ThreadNiceValues {
  int compute = 0;
  int communication = 0;
  // The communication threads' lead is kCommunicationSlice, not nice levels.
  bool communication_short_slice = false;
};

// The nice values of a run's threads from the base (the nice value of the thread that
// starts the run) and the lead: with `short_slices` (the kernel takes per-thread
// slices) both at base and communication_short_slice; else communication at base -
// levels when `may_raise`, else compute at base + levels; clamped to Linux's range
// [-20, 19]. levels <= 0: both base, no short slice.
ThreadNiceValues ChooseThreadNiceValues(int base, int levels, bool may_raise, bool short_slices = false);

// Whether the kernel keeps a slice asked for per thread (tried on the calling thread,
// read back, and undone: a kernel before 6.12 accepts sched_runtime and ignores it).
bool KernelTakesThreadSlices();

// Asks the kernel for `slice` per turn for the calling thread (SCHED_OTHER at its
// current nice); the error names errno's text.
absl::Status SetThisThreadSlice(absl::Duration slice);

// The slice the kernel reports for thread `thread_id` (0: the calling thread;
// sched_getattr's sched_runtime: on Linux 6.12 and later the thread's slice, asked for or
// the kernel's default; 0 on kernels before). The error names the thread and errno's text.
absl::StatusOr<absl::Duration> ReportedThreadSlice(int64_t thread_id);

// The calling thread's nice value.
int ThisThreadNice();

// Whether this process may give a thread a nice value below `base` (tried on the calling
// thread and undone: raising the nice value back is always allowed).
bool MayRaiseThreadPriority(int base, int levels);

// Sets the calling thread's nice value; the error names errno's text.
absl::Status SetThisThreadNice(int nice);

}  // namespace oneflow::actors

#endif  // ACTORS_THREAD_PRIORITY_H_
