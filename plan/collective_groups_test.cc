#include "plan/collective_groups.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

proto::DeviceId Id(int node, int device) {
  proto::DeviceId id;
  id.set_node(node);
  id.set_device(device);
  return id;
}

TEST(CollectiveGroupsTest, DistinctMemberListsInOrderOfFirstUse) {
  // dp=2 x tp=2 on 2 nodes: tp pairs per node, dp pairs across; a second dp collective.
  proto::Plan plan;
  for (const auto& id : {Id(0, 0), Id(0, 1), Id(1, 0), Id(1, 1)}) *plan.add_devices()->mutable_device() = id;
  auto add = [&](std::vector<proto::DeviceId> members) {
    proto::CollectiveDef* collective = plan.add_collectives();
    collective->set_id(plan.collectives_size() - 1);
    for (const auto& member : members) *collective->add_group() = member;
  };
  add({Id(0, 0), Id(0, 1)});
  add({Id(0, 0), Id(1, 0)});
  add({Id(1, 0), Id(1, 1)});
  add({Id(0, 0), Id(1, 0)});
  add({Id(1, 0), Id(0, 0)});  // Another rank order: another communicator.
  const CollectiveGroups groups = CollectiveGroupsOf(plan);
  EXPECT_EQ(groups.names, (std::vector<std::string>{"devices [0:0, 0:1]", "devices [0:0, 1:0]", "devices [1:0, 1:1]",
                                                    "devices [1:0, 0:0]"}));
  EXPECT_EQ(groups.of_collective, (std::vector<int>{0, 1, 2, 1, 3}));
  EXPECT_EQ(groups.members[1], (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(groups.members[3], (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(groups.of_device[0], (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(groups.of_device[1], (std::vector<int>{0}));
  EXPECT_EQ(groups.of_device[2], (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace oneflow
