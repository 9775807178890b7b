#include "tools/launcher/rendezvous_store.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/wait_until.h"

namespace oneflow::launcher {
namespace {

// How often a Wait looks whether its caller went away: gRPC's sync API has no callback
// for that, and a waiter must not hold a server thread after its client is gone.
constexpr absl::Duration kCancelPollInterval = absl::Milliseconds(100);

}  // namespace

absl::Status RendezvousStore::Set(const std::string& job_id, const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_[job_id][key] = value;
  changed_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::string> RendezvousStore::Get(const std::string& job_id, const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto job = jobs_.find(job_id);
  if (job != jobs_.end()) {
    const auto found = job->second.find(key);
    if (found != job->second.end()) return found->second;
  }
  return absl::NotFoundError(absl::StrCat("key '", key, "' is not set for job '", job_id, "'"));
}

bool RendezvousStore::AllSet(const std::string& job_id, const std::vector<std::string>& keys) const {
  const auto job = jobs_.find(job_id);
  if (job == jobs_.end()) return keys.empty();
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& key) { return job->second.count(key) > 0; });
}

absl::Status RendezvousStore::Wait(const std::string& job_id, const std::vector<std::string>& keys,
                                   absl::Duration timeout, const std::function<bool()>& cancelled) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return shut_down_ || AllSet(job_id, keys); };
  while (true) {
    WaitUntil(changed_, lock, std::min(deadline, absl::Now() + kCancelPollInterval), done);
    if (shut_down_) return absl::UnavailableError("the rendezvous server is shutting down");
    if (AllSet(job_id, keys)) return absl::OkStatus();
    if (cancelled && cancelled()) return absl::CancelledError("the caller went away");
    if (absl::Now() >= deadline) break;
  }
  std::vector<std::string> missing;
  const auto job = jobs_.find(job_id);
  for (const std::string& key : keys) {
    if (job == jobs_.end() || job->second.count(key) == 0) missing.push_back(key);
  }
  return absl::DeadlineExceededError(absl::StrCat("waited ", absl::FormatDuration(timeout), " for job '", job_id,
                                                  "' keys that were never set: ", absl::StrJoin(missing, ", ")));
}

absl::StatusOr<int64_t> RendezvousStore::Add(const std::string& job_id, const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::string>& job = jobs_[job_id];
  const auto found = job.find(key);
  int64_t value = 0;
  if (found != job.end() && !absl::SimpleAtoi(found->second, &value)) {
    return absl::FailedPreconditionError(
        absl::StrCat("key '", key, "' holds '", found->second, "', not an integer to add to"));
  }
  if ((delta > 0 && value > std::numeric_limits<int64_t>::max() - delta) ||
      (delta < 0 && value < std::numeric_limits<int64_t>::min() - delta)) {
    return absl::OutOfRangeError(absl::StrCat("key '", key, "': ", value, " + ", delta, " overflows int64"));
  }
  value += delta;
  job[key] = absl::StrCat(value);
  changed_.notify_all();
  return value;
}

void RendezvousStore::DropJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.erase(job_id);
}

void RendezvousStore::Shutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  shut_down_ = true;
  changed_.notify_all();
}

}  // namespace oneflow::launcher
