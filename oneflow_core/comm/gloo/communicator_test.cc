// What only the Gloo backend has: the options of its factory and its names. Its calls are
// checked with every other backend's by the conformance suites in testing/; its own
// failures (a connect timeout, a peer that goes away, a dead process) by failures_test.cc
// and two_process_test.cc.
#include "oneflow_core/comm/gloo/communicator.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/test_group.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {
namespace {

TEST(GlooCommunicatorTest, NameSizeRank) {
  GlooTestGroup group = MakeGlooGroup(3, "tp0");
  EXPECT_EQ(group[2].size(), 3);
  EXPECT_EQ(group[2].rank(), 2);
  EXPECT_EQ(group[2].Name(), "gloo group 'tp0' rank 2 of 3");
}

TEST(GlooCommunicatorTest, CreateChecksItsOptions) {
  std::unique_ptr<KeyValueStore> store = NewInMemoryKeyValueStore();
  auto create = [&](const std::string& name, int64_t rank, int64_t size, KeyValueStore* with) {
    GlooGroupOptions options;
    options.group_name = name;
    options.rank = rank;
    options.size = size;
    options.store = with;
    return NewGlooCommunicator(options).status();
  };
  EXPECT_EQ(create("", 0, 2, store.get()).message(),
            "gloo group: group_name is empty; it names the group's keys in the store and must be "
            "unique in the job");
  EXPECT_EQ(create("g", 0, 0, store.get()).message(),
            "gloo group 'g' of 0 ranks; a group needs >= 1");
  EXPECT_EQ(create("g", 2, 2, store.get()).message(),
            "gloo group 'g': rank 2 is outside the group of 2 ranks");
  EXPECT_EQ(create("g", 0, 2, nullptr).message(),
            "gloo group 'g' of 2 ranks needs a rendezvous store; store is null");
  EXPECT_EQ(create("g", 0, 2, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(create("g", 0, 1, nullptr).ok());  // one rank talks to nobody
}

}  // namespace
}  // namespace oneflow
