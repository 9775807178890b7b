// UCX groups for the conformance suites: every rank a thread of this process with its own
// UCX worker, meeting through an in-memory store of the group's own.
#include <memory>

#include "gtest/gtest.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/testing/communicator_factory.h"
#include "oneflow_core/comm/ucx/communicator.h"

namespace oneflow {
namespace comm_testing {
namespace {

class UcxGroup final : public TestGroup {
 public:
  explicit UcxGroup(int64_t ranks)
      : TestGroup(GroupShape{1, ranks}), store_(NewInMemoryKeyValueStore()) {
    for (int64_t rank = 0; rank < ranks; ++rank) {
      UcxGroupOptions options;
      options.group_name = "test";
      options.rank = rank;
      options.size = ranks;
      options.store = store_.get();
      options.connect_timeout = absl::Seconds(30);
      absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewUcxCommunicator(options);
      EXPECT_TRUE(communicator.ok()) << communicator.status();
      communicators_.push_back(std::move(communicator).value());
      ranks_.push_back(communicators_.back().get());
    }
  }

 private:
  std::unique_ptr<KeyValueStore> store_;  // declared first: destroyed last
  std::vector<std::unique_ptr<Communicator>> communicators_;
};

class UcxFactoryImpl final : public CommunicatorFactory {
 public:
  std::string name() const override { return "ucx"; }
  // The shared schedules' segments (gloo/schedules.h: kSegmentFloats).
  int64_t segment_bytes() const override { return int64_t{1} << 20; }
  std::unique_ptr<TestGroup> MakeGroup(GroupShape shape) override {
    return std::make_unique<UcxGroup>(shape.size());
  }
};

}  // namespace

std::shared_ptr<CommunicatorFactory> UcxFactory() { return std::make_shared<UcxFactoryImpl>(); }

}  // namespace comm_testing
}  // namespace oneflow
