// The rendezvous store that communicators across processes use to find each other: a
// job-scoped key-value map every rank can reach (the launcher daemon's Rendezvous
// service, tools/launcher/; an in-memory map for tests). Gloo's own Store interface is
// adapted to this one in gloo/, so the backend never sees where the keys live.
//
// Keys are strings chosen by the caller (a communicator prefixes them with its group's
// name); values are bytes. Every method may be called from any thread.
#ifndef ONEFLOW_CORE_COMM_KEY_VALUE_STORE_H_
#define ONEFLOW_CORE_COMM_KEY_VALUE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace oneflow {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  // Sets `key` to `value`, replacing what was there.
  virtual absl::Status Set(const std::string& key, const std::string& value) = 0;
  // The value of `key`; NOT_FOUND when it was never set.
  virtual absl::StatusOr<std::string> Get(const std::string& key) = 0;
  // Returns when every key of `keys` is set; DEADLINE_EXCEEDED naming the missing keys
  // after `timeout`.
  virtual absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) = 0;
  // Atomically adds `delta` to the integer stored at `key` (0 when absent) and returns
  // the new value. A key set by Set to something that is not a decimal integer gives
  // FAILED_PRECONDITION.
  virtual absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) = 0;
};

// A store in this process's memory: for tests and for ranks that are all threads of one
// process. Thread-safe.
std::unique_ptr<KeyValueStore> NewInMemoryKeyValueStore();

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_KEY_VALUE_STORE_H_
