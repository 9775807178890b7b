// Test helper: the communicators of every rank of one Gloo group, created by this thread
// in this process over one in-memory store, connecting on 127.0.0.1 (each rank's thread
// connects on its first call). Destroy the communicators before the store.
#ifndef ONEFLOW_CORE_COMM_GLOO_TEST_GROUP_H_
#define ONEFLOW_CORE_COMM_GLOO_TEST_GROUP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {

struct GlooTestGroup {
  Communicator& operator[](int64_t rank) { return *communicators[rank]; }
  int64_t size() const { return static_cast<int64_t>(communicators.size()); }

  std::unique_ptr<KeyValueStore> store;  // declared first: destroyed last
  std::vector<std::unique_ptr<Communicator>> communicators;
};

inline GlooTestGroup MakeGlooGroup(int64_t ranks, const std::string& name = "test",
                                   absl::Duration connect_timeout = absl::Seconds(30)) {
  GlooTestGroup group;
  group.store = NewInMemoryKeyValueStore();
  for (int64_t rank = 0; rank < ranks; ++rank) {
    GlooGroupOptions options;
    options.group_name = name;
    options.rank = rank;
    options.size = ranks;
    options.store = group.store.get();
    options.connect_timeout = connect_timeout;
    absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewGlooCommunicator(options);
    EXPECT_TRUE(communicator.ok()) << communicator.status();
    group.communicators.push_back(std::move(communicator).value());
  }
  return group;
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_TEST_GROUP_H_
