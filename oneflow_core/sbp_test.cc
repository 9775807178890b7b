#include "oneflow_core/sbp.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(SbpTest, PrintsCanonicalForms) {
  EXPECT_EQ(Sbp::Split(0).ToString(), "S(0)");
  EXPECT_EQ(Sbp::Split(3).ToString(), "S(3)");
  EXPECT_EQ(Sbp::Broadcast().ToString(), "B");
  EXPECT_EQ(Sbp::Partial().ToString(), "P");
  EXPECT_EQ(Sbp::Partial(ReduceOp::kMax).ToString(), "P(max)");
  EXPECT_EQ(Sbp::Partial(ReduceOp::kMin).ToString(), "P(min)");
}

TEST(SbpTest, ParseAndPrintRoundTrip) {
  for (const Sbp& sbp : {Sbp::Split(0), Sbp::Split(1), Sbp::Split(12), Sbp::Broadcast(),
                         Sbp::Partial(), Sbp::Partial(ReduceOp::kMax),
                         Sbp::Partial(ReduceOp::kMin)}) {
    absl::StatusOr<Sbp> parsed = Sbp::Parse(sbp.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, sbp);
    absl::StatusOr<Sbp> from_proto = Sbp::FromProto(sbp.ToProto());
    ASSERT_TRUE(from_proto.ok());
    EXPECT_EQ(*from_proto, sbp);
  }
  EXPECT_EQ(*Sbp::Parse(" P(sum) "), Sbp::Partial());
  EXPECT_EQ(*Sbp::Parse("S( 2 )"), Sbp::Split(2));
}

TEST(SbpTest, EqualityLooksOnlyAtMeaningfulFields) {
  EXPECT_NE(Sbp::Split(0), Sbp::Split(1));
  EXPECT_NE(Sbp::Split(0), Sbp::Broadcast());
  EXPECT_NE(Sbp::Partial(ReduceOp::kSum), Sbp::Partial(ReduceOp::kMax));
}

TEST(SbpTest, ParseErrorsNameTheTextAndTheValidForms) {
  EXPECT_EQ(Sbp::Parse("S(x)").status().message(),
            "cannot parse SBP 'S(x)': the split axis is not an integer; valid: S(axis) with "
            "axis >= 0, B, P, P(max), P(min)");
  EXPECT_EQ(Sbp::Parse("S(-1)").status().message(),
            "cannot parse SBP 'S(-1)': the split axis is negative; valid: S(axis) with "
            "axis >= 0, B, P, P(max), P(min)");
  EXPECT_EQ(Sbp::Parse("Q").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Sbp::Parse("P(avg)").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Sbp::FromProto(proto::SbpParallel()).ok());
}

TEST(NdSbpTest, PrintsOneAxisBareAndSeveralInBrackets) {
  EXPECT_EQ((NdSbp{Sbp::Split(0)}).ToString(), "S(0)");
  EXPECT_EQ((NdSbp{Sbp::Split(0), Sbp::Broadcast()}).ToString(), "[S(0), B]");
  EXPECT_EQ((NdSbp{Sbp::Partial(), Sbp::Split(1)}).ToString(), "[P, S(1)]");
}

TEST(NdSbpTest, ParseAndPrintRoundTrip) {
  const std::vector<NdSbp> cases = {
      NdSbp{Sbp::Split(0)},
      NdSbp{Sbp::Broadcast()},
      NdSbp{Sbp::Split(0), Sbp::Broadcast()},
      NdSbp{Sbp::Partial(), Sbp::Split(1)},
      NdSbp{Sbp::Split(1), Sbp::Split(0), Sbp::Partial(ReduceOp::kMax)},
  };
  for (const NdSbp& nd_sbp : cases) {
    absl::StatusOr<NdSbp> parsed = NdSbp::Parse(nd_sbp.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, nd_sbp);
    EXPECT_EQ(*NdSbp::FromProto(nd_sbp.ToProto()), nd_sbp);
  }
  EXPECT_EQ(*NdSbp::Parse("[S(0)]"), (NdSbp{Sbp::Split(0)}));
  EXPECT_EQ(*NdSbp::Parse("[S(0),B]"), (NdSbp{Sbp::Split(0), Sbp::Broadcast()}));
}

TEST(NdSbpTest, ParseErrors) {
  EXPECT_EQ(NdSbp::Parse("[S(0), B").status().message(),
            "cannot parse N-D SBP '[S(0), B': missing closing ']'");
  EXPECT_EQ(NdSbp::Parse("[]").status().message(),
            "cannot parse N-D SBP '[]': it needs one SBP per hierarchy axis, e.g. [S(0), B]");
  EXPECT_EQ(NdSbp::Parse("S(0), B").status().message(),
            "cannot parse N-D SBP 'S(0), B': write several axes in brackets, e.g. [S(0), B]");
  EXPECT_EQ(NdSbp::Parse("[S(0), X]").status().message(),
            "cannot parse SBP 'X': unknown form; valid: S(axis) with axis >= 0, B, P, "
            "P(max), P(min)");
}

TEST(NdSbpTest, AllBroadcast) {
  EXPECT_TRUE((NdSbp{Sbp::Broadcast(), Sbp::Broadcast()}).IsAllBroadcast());
  EXPECT_FALSE((NdSbp{Sbp::Broadcast(), Sbp::Partial()}).IsAllBroadcast());
}

}  // namespace
}  // namespace oneflow
