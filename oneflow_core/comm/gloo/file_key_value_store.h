// A KeyValueStore in a directory that every process on this machine can read: one file
// per key, written under a temporary name and renamed into place, so a reader sees a
// whole value or none. For tests and benchmarks whose ranks are separate processes on
// one machine; a job across machines uses the launcher's Rendezvous service instead.
//
// Wait polls (1 ms, backing off to 10 ms); Add serializes through flock(2) on a lock file
// in the directory. Thread-safe and process-safe.
#ifndef ONEFLOW_CORE_COMM_GLOO_FILE_KEY_VALUE_STORE_H_
#define ONEFLOW_CORE_COMM_GLOO_FILE_KEY_VALUE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {

class FileKeyValueStore final : public KeyValueStore {
 public:
  // `directory` must exist; the store never deletes it or its files.
  explicit FileKeyValueStore(std::string directory);

  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  // The file of `key`: bytes other than [A-Za-z0-9._-] are escaped as %XX.
  std::string PathOf(const std::string& key) const;
  absl::Status WriteFile(const std::string& path, const std::string& value);

  const std::string directory_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_FILE_KEY_VALUE_STORE_H_
