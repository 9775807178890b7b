#include "actors/thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

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

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h); glibc before 2.41
// has no wrapper.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

// SCHED_OTHER at the calling thread's nice with `slice_ns` (0: the kernel's default).
int SetSlice(uint64_t slice_ns) {
  SchedAttr attr{};
  attr.size = sizeof(attr);
  attr.sched_policy = SCHED_OTHER;
  attr.sched_nice = ThisThreadNice();
  attr.sched_runtime = slice_ns;
  return static_cast<int>(syscall(SYS_sched_setattr, 0, &attr, 0));
}

int GetAttr(int64_t thread_id, SchedAttr* attr) {
  return static_cast<int>(syscall(SYS_sched_getattr, static_cast<pid_t>(thread_id), attr, sizeof(*attr), 0));
}

uint64_t CurrentSlice() {
  SchedAttr attr{};
  if (GetAttr(0, &attr) != 0) return 0;
  return attr.sched_runtime;
}

}  // namespace

absl::Status ValidateCommunicationPriorityLevels(int64_t levels, absl::string_view flag) {
  if (levels >= 0 && levels <= kMaxCommunicationPriorityLevels) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(flag, "=", levels, " is not in [0, ", kMaxCommunicationPriorityLevels,
                                                 "] (nice levels by which communication threads lead compute "
                                                 "threads; 0: every thread at the run's nice value)"));
}

ThreadNiceValues ChooseThreadNiceValues(int base, int levels, bool may_raise, bool short_slices) {
  ThreadNiceValues values{base, base};
  if (levels <= 0) return values;
  if (short_slices) {
    values.communication_short_slice = true;
  } else if (may_raise) {
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

bool KernelTakesThreadSlices() {
  const uint64_t wanted = static_cast<uint64_t>(absl::ToInt64Nanoseconds(kCommunicationSlice));
  const uint64_t before = CurrentSlice();
  if (SetSlice(wanted) != 0) return false;
  const bool kept = CurrentSlice() == wanted;
  // getattr reports the default slice like one asked for, so only a thread that had
  // asked for `wanted` keeps it; any other goes back to the kernel's default.
  (void)SetSlice(before == wanted ? wanted : 0);
  return kept;
}

absl::Status SetThisThreadSlice(absl::Duration slice) {
  if (SetSlice(static_cast<uint64_t>(absl::ToInt64Nanoseconds(slice))) != 0) {
    const int error = errno;
    return absl::PermissionDeniedError(absl::StrCat("cannot set this thread's slice to ", absl::FormatDuration(slice),
                                                    ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> ReportedThreadSlice(int64_t thread_id) {
  SchedAttr attr{};
  if (GetAttr(thread_id, &attr) != 0) {
    const int error = errno;
    return absl::NotFoundError(absl::StrCat("cannot read the slice of thread ", thread_id, ": ", std::strerror(error)));
  }
  return absl::Nanoseconds(static_cast<int64_t>(attr.sched_runtime));
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
