#include "oneflow_core/comm/key_value_store.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include <chrono>
#include <condition_variable>
#include <mutex>


namespace oneflow {
namespace {

class InMemoryKeyValueStore final : public KeyValueStore {
 public:
  absl::Status Set(const std::string& key, const std::string& value) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = values_.find(key);
    if (found == values_.end()) return absl::NotFoundError(absl::StrCat("key '", key, "' is not set"));
    return found->second;
  }

  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto all_set = [&] {
      for (const std::string& key : keys) {
        if (!values_.count(key)) return false;
      }
      return true;
    };
    if (!changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout), all_set)) {
      std::vector<std::string> missing;
      for (const std::string& key : keys) {
        if (!values_.count(key)) missing.push_back(key);
      }
      return absl::DeadlineExceededError(absl::StrCat("waited ", absl::FormatDuration(timeout),
                                                      " for keys that were never set: ",
                                                      absl::StrJoin(missing, ", ")));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    std::unique_lock<std::mutex> lock(mutex_);
    int64_t value = 0;
    auto found = values_.find(key);
    if (found != values_.end() && !absl::SimpleAtoi(found->second, &value)) {
      return absl::FailedPreconditionError(
          absl::StrCat("key '", key, "' holds '", found->second, "', not an integer to add to"));
    }
    value += delta;
    values_[key] = absl::StrCat(value);
    lock.unlock();
    changed_.notify_all();
    return value;
  }

 private:
  // std::mutex rather than absl::Mutex: Debian's absl is not built with ThreadSanitizer
  // annotations, and the communicator tests run under --config=tsan.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

}  // namespace

std::unique_ptr<KeyValueStore> NewInMemoryKeyValueStore() { return std::make_unique<InMemoryKeyValueStore>(); }

}  // namespace oneflow
