#include "actors/core_lending.h"

#include <sched.h>
#include <time.h>

#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace oneflow::actors {

absl::StatusOr<int> RunnableThreadsFromLoadavg(absl::string_view text) {
  const std::vector<absl::string_view> fields = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  int runnable = 0;
  if (fields.size() >= 4) {
    const std::pair<absl::string_view, absl::string_view> counts = absl::StrSplit(fields[3], absl::MaxSplits('/', 1));
    if (!counts.second.empty() && absl::SimpleAtoi(counts.first, &runnable) && runnable >= 0) return runnable;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", text, "' is not /proc/loadavg's text (its fourth field is runnable/total threads)"));
}

bool ShouldLendCore(absl::Duration cpu_since_lent, absl::Duration every, int runnable_threads, int cores) {
  return every > absl::ZeroDuration() && cpu_since_lent >= every && cores > 0 && runnable_threads > cores;
}

CoreLendingHost ThisMachine() {
  CoreLendingHost host;
  host.thread_cpu_time = [] {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return absl::DurationFromTimespec(now);
  };
  host.runnable_threads = [] {
    std::ifstream file("/proc/loadavg");
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    absl::StatusOr<int> runnable = RunnableThreadsFromLoadavg(text);
    return runnable.ok() ? *runnable : -1;
  };
  host.cores = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
  };
  host.sleep = [](absl::Duration pause) { std::this_thread::sleep_for(absl::ToChronoNanoseconds(pause)); };
  return host;
}

CoreLender::CoreLender(CoreLendingOptions options, CoreLendingHost host)
    : options_(options), host_(std::move(host)), since_(host_.thread_cpu_time()) {}

bool CoreLender::BetweenActs() {
  if (options_.every <= absl::ZeroDuration()) return false;
  const absl::Duration now = host_.thread_cpu_time();
  const absl::Duration ran = now - since_;
  if (ran < options_.every) return false;
  // Checked once per `every` whatever the answer: a host that is not oversubscribed now
  // is asked again after the next `every`, not after every act.
  since_ = now;
  if (!ShouldLendCore(ran, options_.every, host_.runnable_threads(), host_.cores())) return false;
  host_.sleep(options_.pause);
  ++lent_;
  return true;
}

}  // namespace oneflow::actors
