// The one call-agreement check, field by field: the message for each kind of disagreement,
// the order in which fields are reported, and counts known only by their summary (as a
// Gloo peer's are). The backends' own tests (testing/failures_conformance_test.cc) check
// that every backend reports these messages.
#include "oneflow_core/comm/call_agreement.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr char kDisagree[] = "the ranks disagree on the call (a plan or runtime bug): ";

CollectiveOptions WithFormat(uint32_t payload_format, ReduceOp op = ReduceOp::kSum) {
  CollectiveOptions options;
  options.payload_format = payload_format;
  options.reduce_op = op;
  return options;
}

// What a Gloo peer's header tells of its call: the counts by their summary only.
CallDescription SummaryOnly(CallDescription call) {
  call.counts.clear();
  call.counts_known = false;
  return call;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(CallAgreementTest, EqualCallsAgree) {
  const std::vector<int64_t> counts = {3, 0, 5};
  const CallDescription call =
      DescribeCall(CollectiveKind::kReduceScatter, WithFormat(7, ReduceOp::kMax), 0, counts, 0);
  EXPECT_TRUE(CheckCallsAgree(0, call, 1, call).ok());
  EXPECT_TRUE(CheckCallsAgree(0, call, 1, SummaryOnly(call)).ok());
}

TEST(CallAgreementTest, EachFieldIsNamedWithBothValues) {
  const CollectiveOptions plain;
  const CallDescription all_reduce = DescribeCall(CollectiveKind::kAllReduce, plain, 8, {}, 0);
  const CallDescription all_gather =
      DescribeCall(CollectiveKind::kAllGather, plain, 0, std::vector<int64_t>{4, 4}, 0);
  absl::Status status = CheckCallsAgree(0, all_reduce, 1, all_gather);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(status),
            std::string(kDisagree) + "rank 1 called all_gather where rank 0 called all_reduce");

  status = CheckCallsAgree(0, all_reduce, 1,
                           DescribeCall(CollectiveKind::kAllReduce, WithFormat(0x2a), 8, {}, 0));
  EXPECT_EQ(Message(status),
            std::string(kDisagree) + "rank 1 passed payload_format 0x2a where rank 0 passed 0x0");

  status =
      CheckCallsAgree(0, all_reduce, 1, DescribeCall(CollectiveKind::kAllReduce, plain, 6, {}, 0));
  EXPECT_EQ(Message(status),
            std::string(kDisagree) + "rank 1 passed count 6 where rank 0 passed 8");

  const CallDescription other_counts =
      DescribeCall(CollectiveKind::kAllGather, plain, 0, std::vector<int64_t>{4, 6}, 0);
  status = CheckCallsAgree(1, all_gather, 0, other_counts);
  EXPECT_EQ(Message(status),
            std::string(kDisagree) + "rank 0 passed counts [4, 6] where rank 1 passed [4, 4]");

  const CallDescription broadcast = DescribeCall(CollectiveKind::kBroadcast, plain, 64, {}, 0);
  status =
      CheckCallsAgree(0, broadcast, 2, DescribeCall(CollectiveKind::kBroadcast, plain, 64, {}, 1));
  EXPECT_EQ(Message(status), std::string(kDisagree) + "rank 2 passed root 1 where rank 0 passed 0");

  status = CheckCallsAgree(
      0, all_reduce, 1,
      DescribeCall(CollectiveKind::kAllReduce, WithFormat(0, ReduceOp::kMin), 8, {}, 0));
  EXPECT_EQ(Message(status),
            std::string(kDisagree) + "rank 1 reduces by min where rank 0 reduces by sum");
}

// Without the peer's counts (a Gloo header carries their summary), the message gives what
// is known of them.
TEST(CallAgreementTest, CountsKnownBySummaryOnly) {
  const CollectiveOptions plain;
  const CallDescription mine =
      DescribeCall(CollectiveKind::kAllGather, plain, 0, std::vector<int64_t>{4, 4}, 0);
  const CallDescription theirs = SummaryOnly(
      DescribeCall(CollectiveKind::kAllGather, plain, 0, std::vector<int64_t>{4, 4, 2}, 0));
  const absl::Status status = CheckCallsAgree(0, mine, 1, theirs);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(status).substr(0, sizeof(kDisagree) - 1), kDisagree);
  EXPECT_NE(Message(status).find("rank 1 passed 3 counts summing to 10 (fingerprint 0x"),
            std::string::npos)
      << status;
  EXPECT_NE(Message(status).find(") where rank 0 passed [4, 4]"), std::string::npos) << status;

  // Same size and sum, different order: only the fingerprint tells them apart.
  const CallDescription swapped = SummaryOnly(
      DescribeCall(CollectiveKind::kAllGather, plain, 0, std::vector<int64_t>{3, 5}, 0));
  const CallDescription even =
      DescribeCall(CollectiveKind::kAllGather, plain, 0, std::vector<int64_t>{5, 3}, 0);
  EXPECT_FALSE(CheckCallsAgree(0, even, 1, swapped).ok());
}

// A different codec usually changes the byte counts too; the format is the cause, so it is
// what the message names.
TEST(CallAgreementTest, PayloadFormatIsReportedBeforeTheCountsItChanges) {
  const CallDescription int8 = DescribeCall(CollectiveKind::kAllToAll, WithFormat(3), 0,
                                            std::vector<int64_t>{0, 132, 132, 0}, 0);
  const CallDescription int4 = DescribeCall(CollectiveKind::kAllToAll, WithFormat(4), 0,
                                            std::vector<int64_t>{0, 68, 68, 0}, 0);
  EXPECT_EQ(Message(CheckCallsAgree(0, int8, 1, int4)),
            std::string(kDisagree) + "rank 1 passed payload_format 0x4 where rank 0 passed 0x3");
}

// Calls that do not reduce record no reduction, so ranks may leave options.reduce_op as
// they like there.
TEST(CallAgreementTest, OnlyReductionsRecordTheirReduceOp) {
  const std::vector<int64_t> bytes = {4, 4};
  const CallDescription sum = DescribeCall(CollectiveKind::kAllGather, WithFormat(0), 0, bytes, 0);
  const CallDescription max =
      DescribeCall(CollectiveKind::kAllGather, WithFormat(0, ReduceOp::kMax), 0, bytes, 0);
  EXPECT_TRUE(CheckCallsAgree(0, sum, 1, max).ok());
  EXPECT_EQ(DescribeCall(CollectiveKind::kReduceScatter, WithFormat(0, ReduceOp::kMax), 0, bytes, 0)
                .reduce_op,
            ReduceOp::kMax);
}

TEST(CallAgreementTest, SummaryAndNames) {
  const CountsSummary summary = SummarizeCounts(std::vector<int64_t>{1, 2, 3});
  EXPECT_EQ(summary.size, 3);
  EXPECT_EQ(summary.sum, 6);
  EXPECT_EQ(summary, SummarizeCounts(std::vector<int64_t>{1, 2, 3}));
  EXPECT_NE(summary, SummarizeCounts(std::vector<int64_t>{3, 2, 1}));
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kAllToAll), "all_to_all");
  EXPECT_STREQ(CollectiveKindName(static_cast<CollectiveKind>(99)), "an unknown collective");
}

}  // namespace
}  // namespace oneflow
