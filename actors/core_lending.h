// A compute thread lends its core for a moment, now and then, while the host has more
// runnable threads than cores.
//
// Ranks of one data-parallel group wait for each other in every reduction, so a step goes
// at the pace of the rank the scheduler served least, and the others' reductions wait for
// it (they count as exposed on them). With more runnable threads than cores, Linux balances
// its run queues by load, not by how much each thread has had: three busy compute threads
// on two cores stay for long stretches as one alone on a core and two taking turns on the
// other. On the 2-core test machine (3 emulated hosts x 1 device, gpt hidden 512, 10
// Gbit/s) the three compute threads got 44-61% of the time they were runnable, started each
// iteration within 6 ms of each other and ended forward 61 ms and backward 204 ms apart
// (docs/gradient_buckets.md, "What is not done").
//
// A thread that blocks leaves its core idle, and a core going idle pulls a thread that
// waits in another core's queue at once (the kernel's newly-idle balance). So a compute
// thread that sleeps for kCoreLendingPause after every kCoreLendingEvery of its own CPU
// time hands its core to a thread that waited, then queues for a core like the others: the
// thread that was alone on a core does not stay alone. Lending costs the lender its pause
// and its turn in a queue, so it lends only while the host's runnable threads (the kernel's
// count, /proc/loadavg, the caller included) outnumber the cores this thread may run on
// (sched_getaffinity): where every runnable thread has a core nobody waits, and a thread
// would only give up compute. A host whose other CPUs run other jobs' threads (a cpuset
// narrower than the machine) is counted as oversubscribed; the cost there is at most the
// pause per kCoreLendingEvery (2%).
#ifndef ACTORS_CORE_LENDING_H_
#define ACTORS_CORE_LENDING_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace oneflow::actors {

// CPU time a compute thread runs between two lendings.
constexpr absl::Duration kCoreLendingEvery = absl::Milliseconds(10);
// How long it sleeps to lend its core.
constexpr absl::Duration kCoreLendingPause = absl::Microseconds(200);

struct CoreLendingOptions {
  absl::Duration every = kCoreLendingEvery;  // <= 0: never lends.
  absl::Duration pause = kCoreLendingPause;
};

// Runnable threads on the host from /proc/loadavg's text, its fourth field's numerator
// ("0.29 1.44 2.05 2/89 29869" -> 2); INVALID_ARGUMENT naming the text otherwise.
absl::StatusOr<int> RunnableThreadsFromLoadavg(absl::string_view text);

// Whether a thread that has run `cpu_since_lent` since it last lent its core lends it now:
// it has run at least `every` (> 0) and more threads are runnable than there are cores.
bool ShouldLendCore(absl::Duration cpu_since_lent, absl::Duration every, int runnable_threads, int cores);

// What a lender reads and does, replaceable in tests.
struct CoreLendingHost {
  std::function<absl::Duration()> thread_cpu_time;  // The calling thread's CPU time.
  std::function<int()> runnable_threads;            // < 0: unknown (never lends).
  std::function<int()> cores;                       // Cores the calling thread may run on.
  std::function<void(absl::Duration)> sleep;
};

// This machine's: CLOCK_THREAD_CPUTIME_ID, /proc/loadavg, sched_getaffinity, a sleep.
CoreLendingHost ThisMachine();

// One per compute thread, used by that thread only.
class CoreLender {
 public:
  CoreLender(CoreLendingOptions options, CoreLendingHost host);

  // Between two acts: lends the core when ShouldLendCore says so. Reads the host's
  // runnable threads only once `every` has run, so an act costs one CPU-clock read.
  // Returns whether it lent.
  bool BetweenActs();

  int64_t lent() const { return lent_; }

 private:
  CoreLendingOptions options_;
  CoreLendingHost host_;
  absl::Duration since_;  // CPU time when it last lent (or started, or last checked).
  int64_t lent_ = 0;
};

}  // namespace oneflow::actors

#endif  // ACTORS_CORE_LENDING_H_
