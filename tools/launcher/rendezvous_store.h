// The rendezvous service's memory: one key-value map per job, with blocking waits that a
// server shutdown or a gone client ends early. Thread-safe.
//
// Kept apart from the gRPC service so its semantics (the same as
// oneflow_core/comm/key_value_store.h, plus job scoping) are tested without a server.
#ifndef TOOLS_LAUNCHER_RENDEZVOUS_STORE_H_
#define TOOLS_LAUNCHER_RENDEZVOUS_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace oneflow::launcher {

class RendezvousStore {
 public:
  absl::Status Set(const std::string& job_id, const std::string& key, const std::string& value);
  // NOT_FOUND when the key was never set for this job.
  absl::StatusOr<std::string> Get(const std::string& job_id, const std::string& key);
  // Returns OK once every key is set for this job; DEADLINE_EXCEEDED naming the missing
  // keys after `timeout`; UNAVAILABLE as soon as Shutdown is called; CANCELLED when
  // `cancelled` (polled every 100 ms; may be empty) turns true, i.e. the caller went away.
  absl::Status Wait(const std::string& job_id, const std::vector<std::string>& keys, absl::Duration timeout,
                    const std::function<bool()>& cancelled);
  // Atomically adds `delta` to the decimal integer at `key` (0 when absent) and returns
  // the sum. FAILED_PRECONDITION when the key holds something else, OUT_OF_RANGE on
  // overflow.
  absl::StatusOr<int64_t> Add(const std::string& job_id, const std::string& key, int64_t delta);

  // Forgets every key of the job (when the daemon forgets the job).
  void DropJob(const std::string& job_id);
  // Ends every present and future Wait with UNAVAILABLE.
  void Shutdown();

 private:
  bool AllSet(const std::string& job_id, const std::vector<std::string>& keys) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  std::mutex mutex_;
  std::condition_variable changed_;  // a key was set or added to, or shut_down_ set
  std::map<std::string, std::map<std::string, std::string>> jobs_ ABSL_GUARDED_BY(mutex_);
  bool shut_down_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_RENDEZVOUS_STORE_H_
