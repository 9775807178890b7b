// CheckStepSupported for every kind and every dtype, ParseBoxingKind, and TwoLevelLayout.
#include "kernels/boxing/step_support.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr BoxingKind kKinds[] = {
    BoxingKind::kIdentity,     BoxingKind::kAllReduce,      BoxingKind::kReduceScatter,
    BoxingKind::kAllGather,    BoxingKind::kAllToAll,       BoxingKind::kLocalSlice,
    BoxingKind::kLocalPartial, BoxingKind::kSplitToPartial, BoxingKind::kSendRecv};

constexpr DType kDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,   DType::kI32,
                             DType::kI64, DType::kU8,  DType::kF8E4M3, DType::kF8E5M2};

// A change on one axis that `kind` makes, with `op` as the reduction of any P in it.
std::pair<Sbp, Sbp> ChangeOf(BoxingKind kind, ReduceOp op) {
  const Sbp p = Sbp::Partial(op);
  const Sbp b = Sbp::Broadcast();
  switch (kind) {
    case BoxingKind::kIdentity:
      return {p, b};
    case BoxingKind::kAllReduce:
      return {p, b};
    case BoxingKind::kReduceScatter:
      return {p, Sbp::Split(1)};
    case BoxingKind::kAllGather:
      return {Sbp::Split(0), b};
    case BoxingKind::kAllToAll:
      return {Sbp::Split(0), Sbp::Split(1)};
    case BoxingKind::kLocalSlice:
      return {b, Sbp::Split(0)};
    case BoxingKind::kLocalPartial:
      return {b, p};
    case BoxingKind::kSplitToPartial:
      return {Sbp::Split(0), p};
    case BoxingKind::kSendRecv:
      return {b, Sbp::Split(0)};
  }
  return {b, b};
}

bool Reduces(BoxingKind kind) {
  return kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter;
}

bool Reducible(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kI32 || dtype == DType::kI64 ||
         dtype == DType::kU8;
}

TEST(StepSupportTest, EveryKindAndDType) {
  for (BoxingKind kind : kKinds) {
    for (DType dtype : kDTypes) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
        const auto [from, to] = ChangeOf(kind, op);
        const std::string name = absl::StrCat(BoxingKindName(kind), " ", from.ToString(), " -> ",
                                              to.ToString(), " of ", DTypeName(dtype));
        const absl::Status status = CheckStepSupported(kind, dtype, from, to);
        // Unsupported: a reduction of a narrow float, and a P(max)/P(min) made locally.
        const bool makes_extremum_locally =
            !Reduces(kind) && to.is_partial() && !from.is_partial() && op != ReduceOp::kSum;
        if (Reduces(kind) && !Reducible(dtype)) {
          EXPECT_EQ(status, absl::UnimplementedError(absl::StrCat(
                                name,
                                " is not supported: reductions are implemented for f32, i32, "
                                "i64 and u8")));
        } else if (makes_extremum_locally) {
          EXPECT_EQ(status, absl::UnimplementedError(
                                absl::StrCat(name, " is not supported: making ", to.ToString(),
                                             " locally needs its identity element; only P(sum)")));
        } else {
          EXPECT_TRUE(status.ok()) << name << ": " << status;
        }
      }
    }
  }
}

TEST(StepSupportTest, IntegerReductionsAreSupported) {
  for (DType dtype : {DType::kI32, DType::kI64, DType::kU8}) {
    EXPECT_TRUE(
        CheckStepSupported(BoxingKind::kAllReduce, dtype, Sbp::Partial(), Sbp::Broadcast()).ok());
    EXPECT_TRUE(CheckStepSupported(BoxingKind::kReduceScatter, dtype, Sbp::Partial(ReduceOp::kMax),
                                   Sbp::Split(0))
                    .ok());
  }
}

TEST(StepSupportTest, ExactMessages) {
  EXPECT_EQ(
      CheckStepSupported(BoxingKind::kAllReduce, DType::kF16, Sbp::Partial(), Sbp::Broadcast()),
      absl::UnimplementedError("all_reduce P -> B of f16 is not supported: reductions are "
                               "implemented for f32, i32, i64 and u8"));
  EXPECT_EQ(CheckStepSupported(BoxingKind::kReduceScatter, DType::kBF16,
                               Sbp::Partial(ReduceOp::kMin), Sbp::Split(1)),
            absl::UnimplementedError("reduce_scatter P(min) -> S(1) of bf16 is not supported: "
                                     "reductions are implemented for f32, i32, i64 and u8"));
  EXPECT_EQ(CheckStepSupported(BoxingKind::kLocalPartial, DType::kI32, Sbp::Broadcast(),
                               Sbp::Partial(ReduceOp::kMax)),
            absl::UnimplementedError("local_partial B -> P(max) of i32 is not supported: making "
                                     "P(max) locally needs its identity element; only P(sum)"));
}

TEST(StepSupportTest, ParseBoxingKindInvertsTheName) {
  for (BoxingKind kind : kKinds) {
    const absl::StatusOr<BoxingKind> parsed = ParseBoxingKind(BoxingKindName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
  }
  const std::string kinds =
      "the kinds are identity, all_reduce, reduce_scatter, all_gather, all_to_all, local_slice, "
      "local_partial, split_to_partial, send_recv";
  EXPECT_EQ(ParseBoxingKind("all_gathr").status(),
            absl::InvalidArgumentError("unknown step kind 'all_gathr'; " + kinds));
  EXPECT_EQ(ParseBoxingKind("All_Reduce").status(),
            absl::InvalidArgumentError("unknown step kind 'All_Reduce'; " + kinds));
  EXPECT_EQ(ParseBoxingKind("").status(),
            absl::InvalidArgumentError("unknown step kind ''; " + kinds));
}

TEST(TwoLevelLayoutTest, RegularGroupsAcrossNodes) {
  const absl::StatusOr<NodeLayout> two_by_three = TwoLevelLayout({4, 4, 4, 1, 1, 1});
  ASSERT_TRUE(two_by_three.ok()) << two_by_three.status();
  EXPECT_EQ(two_by_three->nodes, 2);
  EXPECT_EQ(two_by_three->local_size, 3);
  const absl::StatusOr<NodeLayout> three_by_two = TwoLevelLayout({0, 0, 1, 1, 2, 2});
  ASSERT_TRUE(three_by_two.ok()) << three_by_two.status();
  EXPECT_EQ(three_by_two->nodes, 3);
  EXPECT_EQ(three_by_two->local_size, 2);
}

TEST(TwoLevelLayoutTest, SaysWhichRuleAGroupBreaks) {
  EXPECT_EQ(TwoLevelLayout({0, 1, 1, 0}).status(),
            absl::InvalidArgumentError(
                "its members are on nodes [0, 1, 1, 0]; a two-level step needs them listed node by node"));
  EXPECT_EQ(TwoLevelLayout({0, 0, 1, 1, 1}).status(),
            absl::InvalidArgumentError("its members are on nodes [0, 0, 1, 1, 1]; a two-level step needs the same "
                                       "number of members on every node"));
  EXPECT_EQ(TwoLevelLayout({3, 3}).status(),
            absl::InvalidArgumentError("its members are on nodes [3, 3]; a two-level step needs more than one node "
                                       "and more than one member per node (1 node of 2)"));
  EXPECT_EQ(TwoLevelLayout({0, 1}).status(),
            absl::InvalidArgumentError("its members are on nodes [0, 1]; a two-level step needs more than one node "
                                       "and more than one member per node (2 nodes of 1)"));
  EXPECT_EQ(TwoLevelLayout({}).status(),
            absl::InvalidArgumentError("its members are on nodes []; a two-level step needs more than one node and "
                                       "more than one member per node (0 nodes of 0)"));
}

}  // namespace
}  // namespace oneflow
