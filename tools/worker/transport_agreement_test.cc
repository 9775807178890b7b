// The workers' agreement on a transport, with the nodes as threads over one in-memory store.
#include "tools/worker/transport_agreement.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::worker {
namespace {

using ::testing::HasSubstr;

// Runs AgreeOnTransport on `transports.size()` nodes at once; node i runs transports[i]
// and is able to run it unless `unavailable[i]` is set.
std::vector<absl::Status> Agree(const std::vector<Transport>& transports, const std::vector<absl::Status>& available) {
  std::unique_ptr<KeyValueStore> store = NewInMemoryKeyValueStore();
  const int64_t nodes = static_cast<int64_t>(transports.size());
  std::vector<absl::Status> statuses(nodes);
  std::vector<std::thread> threads;
  for (int64_t node = 0; node < nodes; ++node) {
    threads.emplace_back([&, node] {
      statuses[node] = AgreeOnTransport(*store, node, nodes, transports[node], available[node], absl::Seconds(5));
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

TEST(TransportAgreementTest, SameTransportEverywhereAgrees) {
  for (Transport transport : {Transport::kUcx, Transport::kGloo}) {
    for (const absl::Status& status : Agree({transport, transport, transport}, {{}, {}, {}})) {
      EXPECT_TRUE(status.ok()) << status;
    }
  }
}

TEST(TransportAgreementTest, MismatchIsRefusedOnEveryNodeNamingIt) {
  for (const absl::Status& status : Agree({Transport::kUcx, Transport::kUcx, Transport::kGloo}, {{}, {}, {}})) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("node 2 runs transport 'gloo' but node 0 runs 'ucx'; every node must be started with the "
                          "same --transport"));
  }
}

TEST(TransportAgreementTest, ATransportMissingOnOneNodeFailsEveryNodeNamingIt) {
  const absl::Status missing = absl::UnavailableError("UCX could not initialize: No such device");
  for (const absl::Status& status : Agree({Transport::kUcx, Transport::kUcx}, {{}, missing})) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("node 1 cannot run transport 'ucx': UCX could not initialize: No such device"));
  }
}

TEST(TransportAgreementTest, AMissingNodeIsNamedAfterTheTimeout) {
  std::unique_ptr<KeyValueStore> store = NewInMemoryKeyValueStore();
  const absl::Status status =
      AgreeOnTransport(*store, 0, 3, Transport::kUcx, absl::OkStatus(), absl::Milliseconds(100));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("for nodes 1, 2 to report a transport"));
}

TEST(TransportAgreementTest, UnknownNamesListTheValidOnes) {
  const absl::StatusOr<Transport> parsed = ParseTransport("tcp");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown transport 'tcp'; valid: ucx, gloo");
  EXPECT_EQ(*ParseTransport("gloo"), Transport::kGloo);
  EXPECT_EQ(*ParseTransport("ucx"), Transport::kUcx);
}

}  // namespace
}  // namespace oneflow::worker
