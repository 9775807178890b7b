// Hierarchical groups for the conformance suites, every device a thread: one in-process
// group per node, and Gloo groups across nodes (one per local index) and flat, all meeting
// through one in-memory store of the group's own.
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/hierarchical/communicator.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace comm_testing {
namespace {

template <typename T>
T ValueOrFail(absl::StatusOr<T> result) {
  EXPECT_TRUE(result.ok()) << result.status();
  return std::move(result).value();
}

class HierarchicalGroup final : public TestGroup {
 public:
  explicit HierarchicalGroup(GroupShape shape) : TestGroup(shape) {
    for (int64_t node = 0; node < shape.nodes; ++node) {
      nodes_.push_back(
          ValueOrFail(InProcessGroup::Create(shape.local_size, absl::StrCat("dp/node", node))));
    }
    for (int64_t rank = 0; rank < shape.size(); ++rank) {
      const int64_t node = rank / shape.local_size;
      const int64_t local = rank % shape.local_size;
      HierarchyOptions options;
      options.name = "dp";
      options.nodes = shape.nodes;
      options.local_size = shape.local_size;
      options.in_node = &nodes_[node]->communicator(local);
      options.cross_node = Gloo(absl::StrCat("dp/cross", local), node, shape.nodes);
      options.flat = Gloo("dp/flat", rank, shape.size());
      devices_.push_back(ValueOrFail(NewHierarchicalCommunicator(std::move(options))));
      ranks_.push_back(devices_.back().get());
    }
  }

 private:
  std::unique_ptr<Communicator> Gloo(const std::string& name, int64_t rank, int64_t size) {
    GlooGroupOptions options;
    options.group_name = name;
    options.rank = rank;
    options.size = size;
    options.store = store_.get();
    return ValueOrFail(NewGlooCommunicator(options));
  }

  // Destroyed in reverse: the devices (and their Gloo communicators) first, the store last.
  std::unique_ptr<KeyValueStore> store_ = NewInMemoryKeyValueStore();
  std::vector<std::unique_ptr<InProcessGroup>> nodes_;
  std::vector<std::unique_ptr<Communicator>> devices_;
};

class HierarchicalFactoryImpl final : public CommunicatorFactory {
 public:
  std::string name() const override { return "hierarchical"; }
  // gloo/schedules.h: kSegmentFloats (256Ki floats).
  int64_t segment_bytes() const override { return int64_t{1} << 20; }
  std::unique_ptr<TestGroup> MakeGroup(GroupShape shape) override {
    return std::make_unique<HierarchicalGroup>(shape);
  }
  std::string group_arrival_gap() const override {
    return "the hierarchical communicator has no group-wide arrival: a failure aborts the "
           "failing device's member groups only (its node's, its cross-node group, flat), so a "
           "device blocked in another member group waits out its own deadline; and calls routed "
           "through different members (all_reduce in node, all_to_all flat) are not compared";
  }
  GroupShape ShapeFor(int64_t ranks) const override {
    if (ranks >= 4 && ranks % 2 == 0) return GroupShape{2, ranks / 2};
    return GroupShape{ranks, 1};
  }
};

}  // namespace

std::shared_ptr<CommunicatorFactory> HierarchicalFactory() {
  return std::make_shared<HierarchicalFactoryImpl>();
}

}  // namespace comm_testing
}  // namespace oneflow
