// What the conformance suites (collectives_conformance_test.cc,
// failures_conformance_test.cc) share: reproducible data, the sequential reference of a
// reduction, small valid calls of every kind, and the options and descriptions the failure
// tests expect to see again in messages.
#ifndef ONEFLOW_CORE_COMM_TESTING_CONFORMANCE_H_
#define ONEFLOW_CORE_COMM_TESTING_CONFORMANCE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace comm_testing {

// A reproducible value for (rank, element) with many distinct low bits, so a chunk taken
// from the wrong rank or offset cannot compare equal.
float Value(int64_t rank, int64_t element);
uint8_t Byte(int64_t rank, int64_t index);
std::vector<float> RankFloats(int64_t rank, int64_t count);

// Uneven per-rank counts with zeros: e.g. 4 ranks -> {3, 0, 0, 4} times `scale`.
std::vector<int64_t> UnevenCounts(int64_t ranks, int64_t scale);

// Elements [first, first + count) of the reduction over every rank's RankFloats, in the
// association `shape` gives (TestGroup::shape): within a node in local order, then across
// nodes in node order. Max and min do not depend on it.
std::vector<float> ReferenceReduction(const GroupShape& shape, ReduceOp op, int64_t first,
                                      int64_t count);

// "actor 'h/boxing_3/all_reduce' on rank 2 collective 12 iteration 7": what the failure
// tests put in CollectiveOptions::description and expect at the start of every message.
std::string Description(int64_t rank);
CollectiveOptions Options(int64_t rank, absl::Duration timeout);

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point start);

// The collective kinds by their names in messages, in communicator.h's order.
const std::vector<std::string>& AllKinds();

// Calls the collective `kind` (a name from AllKinds()) with small valid buffers: 4 floats
// per rank and chunk, a broadcast of 64 bytes from rank 0.
absl::Status CallCollective(Communicator& communicator, absl::string_view kind,
                            const CollectiveOptions& options);

// The calls Connect() makes per rank: each failure test counts them to know which call
// number its messages name.
constexpr int kConnectCalls = 2;

// One all_reduce and one broadcast on every rank, checked: backends that connect lazily
// (Gloo, and the hierarchical one's cross-node and flat groups) are connected afterwards,
// so a later failure is about arrival, not about joining.
void Connect(TestGroup& group);

// The numbers by which a group's messages may name `rank`: its group rank and, in a group
// with several nodes, its node and its local index. The hierarchical communicator passes on
// the messages of its members, and those number their own ranks: the in-node group by
// local index, the cross-node group by node.
std::vector<int64_t> RankNumbers(const GroupShape& shape, int64_t rank);

// True when `message` says it waited for a rank numbered by one of `numbers` to arrive or
// to join the group ("rank 3 to arrive", "ranks 1, 3 to join the group").
bool NamesWaitFor(absl::string_view message, const std::vector<int64_t>& numbers);

}  // namespace comm_testing
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_TESTING_CONFORMANCE_H_
