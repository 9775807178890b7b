#include "oneflow_core/comm/gloo/store_adapter.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "oneflow_core/comm/collective_arguments.h"

namespace oneflow {
namespace gloo_backend {
namespace {

// Gloo's connectFullMesh keys are "rank_<i>" (rank i's host name) and "<i>" (rank i's
// pair addresses): the rank a missing key waits for.
std::vector<int64_t> RanksOfKeys(const std::vector<std::string>& keys) {
  std::vector<int64_t> ranks;
  for (const std::string& key : keys) {
    int64_t rank = 0;
    if (absl::SimpleAtoi(absl::StripPrefix(key, "rank_"), &rank)) ranks.push_back(rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace

absl::Status WaitForKeys(KeyValueStore& store, const std::vector<std::string>& keys,
                         absl::Time deadline, const std::function<absl::Status()>& should_stop) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    const absl::Status waited =
        store.Wait(keys, std::clamp(left, absl::ZeroDuration(), kStoreWaitSlice));
    if (waited.ok() || !absl::IsDeadlineExceeded(waited)) return waited;
    if (absl::Now() >= deadline) return waited;
    const absl::Status stop = should_stop();
    if (!stop.ok()) return stop;
  }
}

StoreAdapter::StoreAdapter(KeyValueStore* store, std::string prefix, absl::Time deadline,
                           std::function<absl::Status()> should_stop)
    : store_(store),
      prefix_(std::move(prefix)),
      deadline_(deadline),
      should_stop_(std::move(should_stop)) {}

void StoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  const absl::Status status = store_->Set(prefix_ + key, std::string(data.begin(), data.end()));
  if (!status.ok()) throw StoreError(status);
}

std::vector<char> StoreAdapter::get(const std::string& key) {
  wait({key});
  const absl::StatusOr<std::string> value = store_->Get(prefix_ + key);
  if (!value.ok()) throw StoreError(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void StoreAdapter::wait(const std::vector<std::string>& keys) {
  std::vector<std::string> prefixed;
  for (const std::string& key : keys) prefixed.push_back(prefix_ + key);
  const absl::Status status = WaitForKeys(*store_, prefixed, deadline_, should_stop_);
  if (status.ok()) return;
  if (absl::IsDeadlineExceeded(status)) {
    throw StoreError(absl::DeadlineExceededError(
        absl::StrCat("waited for ", RanksText(RanksOfKeys(keys)),
                     " to publish its connection addresses (", status.message(), ")")));
  }
  throw StoreError(status);
}

void StoreAdapter::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) {
  wait(keys);
}

}  // namespace gloo_backend
}  // namespace oneflow
