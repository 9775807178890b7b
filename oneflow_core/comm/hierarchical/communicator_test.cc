// What only the hierarchical communicator has: its name and the checks of the shape its
// members must fit. Its calls and failures are checked with every other backend's by the
// conformance suites in testing/ (collectives on 1x1 .. 2x4, aborts on 2x1 .. 3x2).
#include "oneflow_core/comm/hierarchical/communicator.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace {

std::unique_ptr<Communicator> Gloo(KeyValueStore* store, const std::string& name, int64_t rank,
                                   int64_t size) {
  GlooGroupOptions options;
  options.group_name = name;
  options.rank = rank;
  options.size = size;
  options.store = store;
  return std::move(NewGlooCommunicator(options)).value();
}

TEST(HierarchicalCommunicatorTest, NameSizeRank) {
  std::unique_ptr<comm_testing::TestGroup> group =
      comm_testing::HierarchicalFactory()->MakeGroup(comm_testing::GroupShape{2, 2});
  EXPECT_EQ((*group)[3].Name(), "hierarchical group 'dp' rank 3 of 4 (2 nodes x 2)");
  EXPECT_EQ((*group)[3].size(), 4);
  EXPECT_EQ((*group)[3].rank(), 3);
}

TEST(HierarchicalCommunicatorTest, MembersMustFitTheShape) {
  std::unique_ptr<KeyValueStore> store = NewInMemoryKeyValueStore();
  std::unique_ptr<InProcessGroup> node = std::move(InProcessGroup::Create(2, "node")).value();
  HierarchyOptions options;
  options.name = "bad";
  options.nodes = 2;
  options.local_size = 2;
  options.in_node = &node->communicator(1);
  options.cross_node = Gloo(store.get(), "bad/cross", 0, 2);
  options.flat = Gloo(store.get(), "bad/flat", 2, 4);  // node 0, local 1 is flat rank 1
  absl::StatusOr<std::unique_ptr<Communicator>> wrong_rank =
      NewHierarchicalCommunicator(std::move(options));
  EXPECT_EQ(wrong_rank.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong_rank.status().message(),
            "hierarchical group 'bad' of 2 nodes x 2: flat rank 2 is not node 0 * local_size 2 + "
            "local 1 = 1");

  HierarchyOptions sizes;
  sizes.name = "bad";
  sizes.nodes = 3;
  sizes.local_size = 2;
  sizes.in_node = &node->communicator(0);
  sizes.cross_node = Gloo(store.get(), "bad/cross", 0, 2);
  sizes.flat = Gloo(store.get(), "bad/flat", 0, 6);
  EXPECT_EQ(NewHierarchicalCommunicator(std::move(sizes)).status().message(),
            "hierarchical group 'bad' of 3 nodes x 2: cross_node (gloo group 'bad/cross' rank 0 of "
            "2) has 2 ranks; the shape needs 3");
}

}  // namespace
}  // namespace oneflow
