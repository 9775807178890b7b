#include "actors/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace oneflow::actors {
namespace {

constexpr int kHighestNice = -20;
constexpr int kLowestNice = 19;

id_t ThisThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

int Clamp(int nice) { return std::clamp(nice, kHighestNice, kLowestNice); }

}  // namespace

absl::Status ValidateCommunicationPriorityLevels(int64_t levels, absl::string_view flag) {
  if (levels >= 0 && levels <= kMaxCommunicationPriorityLevels) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(flag, "=", levels, " is not in [0, ", kMaxCommunicationPriorityLevels,
                                                 "] (nice levels by which communication threads lead compute "
                                                 "threads; 0: every thread at the run's nice value)"));
}

ThreadNiceValues ChooseThreadNiceValues(int base, int levels, bool may_raise) {
  ThreadNiceValues values{base, base};
  if (levels <= 0) return values;
  if (may_raise) {
    values.communication = Clamp(base - levels);
  } else {
    values.compute = Clamp(base + levels);
  }
  return values;
}

int ThisThreadNice() {
  // getpriority returns the nice value itself; -1 is a valid one, so errno tells errors.
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, ThisThreadId());
  return errno == 0 ? nice : 0;
}

bool MayRaiseThreadPriority(int base, int levels) {
  const int target = Clamp(base - levels);
  if (levels <= 0 || target == base) return false;
  if (setpriority(PRIO_PROCESS, ThisThreadId(), target) != 0) return false;
  (void)setpriority(PRIO_PROCESS, ThisThreadId(), base);
  return true;
}

absl::Status SetThisThreadNice(int nice) {
  if (setpriority(PRIO_PROCESS, ThisThreadId(), nice) != 0) {
    const int error = errno;
    return absl::PermissionDeniedError(
        absl::StrCat("cannot set this thread's nice value to ", nice, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace oneflow::actors
