// Gloo groups for the conformance suites: every rank a thread of this process with its own
// TCP connections on 127.0.0.1, meeting through an in-memory store of the group's own.
#include <memory>

#include "oneflow_core/comm/gloo/test_group.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace comm_testing {
namespace {

class GlooGroup final : public TestGroup {
 public:
  explicit GlooGroup(int64_t ranks)
      : TestGroup(GroupShape{1, ranks}), group_(MakeGlooGroup(ranks)) {
    for (int64_t rank = 0; rank < ranks; ++rank) ranks_.push_back(&group_[rank]);
  }

 private:
  GlooTestGroup group_;
};

class GlooFactoryImpl final : public CommunicatorFactory {
 public:
  std::string name() const override { return "gloo"; }
  // gloo/schedules.h: kSegmentFloats (256Ki floats).
  int64_t segment_bytes() const override { return int64_t{1} << 20; }
  std::unique_ptr<TestGroup> MakeGroup(GroupShape shape) override {
    return std::make_unique<GlooGroup>(shape.size());
  }
};

}  // namespace

std::shared_ptr<CommunicatorFactory> GlooFactory() { return std::make_shared<GlooFactoryImpl>(); }

}  // namespace comm_testing
}  // namespace oneflow
