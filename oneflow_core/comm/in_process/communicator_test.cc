// What only the in-process backend has: its group type's creation and names. Its calls are
// checked with every other backend's by the conformance suites in testing/.
#include "oneflow_core/comm/in_process/communicator.h"

#include <memory>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(InProcessGroupTest, CreateNeedsOneRank) {
  const absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(0, "tp");
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(), "in-process group 'tp' of 0 ranks; a group needs >= 1");
}

TEST(InProcessGroupTest, NameSizeRank) {
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(3, "test")).value();
  EXPECT_EQ(group->size(), 3);
  EXPECT_EQ(group->communicator(2).size(), 3);
  EXPECT_EQ(group->communicator(2).rank(), 2);
  EXPECT_EQ(group->communicator(2).Name(), "in-process group 'test' rank 2 of 3");
}

}  // namespace
}  // namespace oneflow
