#include "oneflow_core/comm/key_value_store.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace oneflow {
namespace {

class InMemoryKeyValueStore final : public KeyValueStore {
 public:
  absl::Status Set(const std::string& key, const std::string& value) override {
    absl::MutexLock lock(&mutex_);
    values_[key] = value;
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    absl::MutexLock lock(&mutex_);
    auto found = values_.find(key);
    if (found == values_.end()) return absl::NotFoundError(absl::StrCat("key '", key, "' is not set"));
    return found->second;
  }

  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    absl::MutexLock lock(&mutex_);
    auto all_set = [&] {
      for (const std::string& key : keys) {
        if (!values_.count(key)) return false;
      }
      return true;
    };
    const absl::Time deadline = absl::Now() + timeout;
    while (!all_set()) {
      if (mutex_.AwaitWithDeadline(absl::Condition(&all_set), deadline)) break;
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
    absl::MutexLock lock(&mutex_);
    int64_t value = 0;
    auto found = values_.find(key);
    if (found != values_.end() && !absl::SimpleAtoi(found->second, &value)) {
      return absl::FailedPreconditionError(
          absl::StrCat("key '", key, "' holds '", found->second, "', not an integer to add to"));
    }
    value += delta;
    values_[key] = absl::StrCat(value);
    return value;
  }

 private:
  absl::Mutex mutex_;
  std::map<std::string, std::string> values_;
};

}  // namespace

std::unique_ptr<KeyValueStore> NewInMemoryKeyValueStore() { return std::make_unique<InMemoryKeyValueStore>(); }

}  // namespace oneflow
