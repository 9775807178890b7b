// Gloo's rendezvous Store interface over the project's KeyValueStore, so Gloo's own
// full-mesh connection code (gloo::rendezvous::Context::connectFullMesh) publishes and
// reads pair addresses in the job's store, under the group's key prefix.
//
// Gloo's interface reports failures by throwing; this adapter throws StoreError, which
// carries an absl::Status for the communicator to return. Unlike Gloo's own stores it
// waits in short slices against one deadline, and between slices asks `should_stop` whether
// to give up (the communicator was aborted, or another rank recorded a failure), so a
// rank never sits in a connect that its group has already abandoned.
#ifndef ONEFLOW_CORE_COMM_GLOO_STORE_ADAPTER_H_
#define ONEFLOW_CORE_COMM_GLOO_STORE_ADAPTER_H_

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gloo/rendezvous/store.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {
namespace gloo_backend {

// What the adapter throws: the status to report, with a message ready for a prefix.
class StoreError : public std::runtime_error {
 public:
  explicit StoreError(absl::Status status)
      : std::runtime_error(std::string(status.message())), status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// How long one blocking store wait lasts before the adapter (and the join loop) looks
// whether to stop: the bound on how late an abort is noticed while connecting.
constexpr absl::Duration kStoreWaitSlice = absl::Milliseconds(100);

// Waits for `keys` until `deadline`, in slices; between slices returns `should_stop()`
// when it is not OK. DEADLINE_EXCEEDED (the store's message) when the deadline passes.
absl::Status WaitForKeys(KeyValueStore& store, const std::vector<std::string>& keys,
                         absl::Time deadline, const std::function<absl::Status()>& should_stop);

class StoreAdapter final : public ::gloo::rendezvous::Store {
 public:
  // Keys Gloo uses are stored as `prefix + key`. Every wait ends by `deadline`.
  StoreAdapter(KeyValueStore* store, std::string prefix, absl::Time deadline,
               std::function<absl::Status()> should_stop);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Gloo expects get() to block until the key is set (its FileStore does).
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // Gloo's timeout is ignored: the adapter's deadline (the call's) bounds every wait.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  KeyValueStore* const store_;
  const std::string prefix_;
  const absl::Time deadline_;
  const std::function<absl::Status()> should_stop_;
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_STORE_ADAPTER_H_
