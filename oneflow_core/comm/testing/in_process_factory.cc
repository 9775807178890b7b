// In-process groups for the conformance suites: every rank a thread of this process.
#include <memory>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace comm_testing {
namespace {

class InProcessTestGroup final : public TestGroup {
 public:
  explicit InProcessTestGroup(int64_t ranks) : TestGroup(GroupShape{1, ranks}) {
    absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(ranks, "test");
    EXPECT_TRUE(group.ok()) << group.status();
    group_ = std::move(group).value();
    for (int64_t rank = 0; rank < ranks; ++rank) ranks_.push_back(&group_->communicator(rank));
  }

 private:
  std::unique_ptr<InProcessGroup> group_;
};

class InProcessFactoryImpl final : public CommunicatorFactory {
 public:
  std::string name() const override { return "in_process"; }
  std::unique_ptr<TestGroup> MakeGroup(GroupShape shape) override {
    return std::make_unique<InProcessTestGroup>(shape.size());
  }
};

}  // namespace

std::shared_ptr<CommunicatorFactory> InProcessFactory() {
  return std::make_shared<InProcessFactoryImpl>();
}

}  // namespace comm_testing
}  // namespace oneflow
