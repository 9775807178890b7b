// Test support: one interface that makes a group of communicators of any backend, so that
// one test body (the conformance suites in this folder, the compressed collectives' tests)
// runs on every backend instead of being copied per backend. Ranks are threads of the test
// process; backends across processes connect on 127.0.0.1 through an in-memory store.
//
//   for (const std::shared_ptr<CommunicatorFactory>& factory : AllCommunicatorFactories()) {
//     std::unique_ptr<TestGroup> group = factory->MakeGroup(4);
//     RunOnRankThreads(group->size(), [&](int64_t rank) { (*group)[rank].AllReduce(...); });
//   }
//
// Adding a backend: a factory in this folder, listed in AllCommunicatorFactories(); every
// suite then runs against it.
#ifndef ONEFLOW_CORE_COMM_TESTING_COMMUNICATOR_FACTORY_H_
#define ONEFLOW_CORE_COMM_TESTING_COMMUNICATOR_FACTORY_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "oneflow_core/comm/communicator.h"

namespace oneflow {
namespace comm_testing {

// nodes x local_size ranks, group rank = node * local_size + local (as in the hierarchical
// communicator). Backends without nodes make one node of size() ranks.
struct GroupShape {
  int64_t nodes = 1;
  int64_t local_size = 1;

  int64_t size() const { return nodes * local_size; }
};

// "1x4".
std::string ShapeName(const GroupShape& shape);

// Every rank's communicator of one group, and what they need (stores, member groups) for
// as long as the group lives. Destroy it only after every call on it has returned.
class TestGroup {
 public:
  virtual ~TestGroup() = default;

  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  // The shape the backend built. It fixes how sums associate, which is what a test's
  // reference must follow to compare bits: within a node in local order, then the node
  // sums in node order. A flat backend is one node, so that is plain rank order.
  const GroupShape& shape() const { return shape_; }
  Communicator& operator[](int64_t rank) { return *ranks_[rank]; }

 protected:
  explicit TestGroup(GroupShape shape) : shape_(shape) {}

  GroupShape shape_;
  std::vector<Communicator*> ranks_;  // set by the backend's group
};

class CommunicatorFactory {
 public:
  virtual ~CommunicatorFactory() = default;

  // "in_process", "gloo", "ucx", "hierarchical": for test names and messages.
  virtual std::string name() const = 0;

  // A new group of `shape.size()` ranks (>= 1). Backends without nodes ignore how the ranks
  // split into nodes (the group's shape() says what was built). A group the backend refuses
  // is a bug in the test: it is reported as a test failure and the test aborts.
  virtual std::unique_ptr<TestGroup> MakeGroup(GroupShape shape) = 0;

  // The shape this backend gives a group of `ranks` ranks when the test does not choose:
  // one node for flat backends; the hierarchical one spreads even groups of 4 or more over
  // 2 nodes (so both levels carry traffic) and puts the others one rank per node.
  virtual GroupShape ShapeFor(int64_t ranks) const { return GroupShape{1, ranks}; }

  // The most bytes the backend moves in one piece (0: no limit; Gloo: 1 MiB segments).
  // Tests add sizes past it where it is set, since the seams between segments are where
  // such a backend goes wrong; elsewhere those sizes would only cost time.
  virtual int64_t segment_bytes() const { return 0; }

  // Empty for a backend whose ranks all meet at the start of every call, as the in-process
  // and Gloo ones do. A backend built from member groups without such a group-wide arrival
  // (the hierarchical one: its calls meet only inside its members) returns why it cannot
  // keep two promises of communicator.h across members: a failure releases only the ranks
  // blocked in a member group of the failing rank, and ranks whose calls go through
  // different members wait for each other until the deadline instead of being told they
  // disagree. The suites skip the tests of those two promises for it with this text, so
  // the gap stays visible in every run.
  virtual std::string group_arrival_gap() const { return ""; }

  std::unique_ptr<TestGroup> MakeGroup(int64_t ranks) { return MakeGroup(ShapeFor(ranks)); }
};

void PrintTo(const std::shared_ptr<CommunicatorFactory>& factory, std::ostream* os);

// In-process groups: every rank a thread, shared memory.
std::shared_ptr<CommunicatorFactory> InProcessFactory();
// Gloo groups: every rank a thread with its own TCP connections on 127.0.0.1, meeting
// through an in-memory store of the group's own.
std::shared_ptr<CommunicatorFactory> GlooFactory();
// UCX groups: every rank a thread with its own UCX worker (shared memory between them),
// meeting through an in-memory store of the group's own.
std::shared_ptr<CommunicatorFactory> UcxFactory();
// Hierarchical groups: in-process groups within a node, Gloo groups across nodes and flat.
std::shared_ptr<CommunicatorFactory> HierarchicalFactory();

// Every backend, in that order.
std::vector<std::shared_ptr<CommunicatorFactory>> AllCommunicatorFactories();

// A test parameter: a backend and the shape of the groups its test makes.
struct BackendCase {
  std::shared_ptr<CommunicatorFactory> factory;
  GroupShape shape;
};

// "in_process_4ranks", "hierarchical_2x2": a valid gtest parameter name.
std::string CaseName(const BackendCase& backend_case);
void PrintTo(const BackendCase& backend_case, std::ostream* os);

}  // namespace comm_testing
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_TESTING_COMMUNICATOR_FACTORY_H_
