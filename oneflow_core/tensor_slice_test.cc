#include "oneflow_core/tensor_slice.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::vector<Sbp> AllSbpsForRank(int64_t rank) {
  std::vector<Sbp> sbps = {Sbp::Broadcast(), Sbp::Partial()};
  for (int64_t axis = 0; axis < rank; ++axis) sbps.push_back(Sbp::Split(axis));
  return sbps;
}

// How many hierarchy positions hold each logical element (every axis that is not split
// replicates the slice along it).
int64_t ExpectedCopies(const NdSbp& nd_sbp, const Shape& hierarchy) {
  int64_t copies = 1;
  for (int64_t axis = 0; axis < hierarchy.rank(); ++axis) {
    if (!nd_sbp.at(axis).is_split()) copies *= hierarchy.dim(axis);
  }
  return copies;
}

// Counts, per logical element, how many devices' slices contain it.
void ExpectSlicesTile(const Shape& logical, const NdSbp& nd_sbp, const Placement& placement) {
  std::vector<int64_t> hits(logical.NumElements(), 0);
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    absl::StatusOr<TensorSlice> slice = DeviceSlice(logical, nd_sbp, placement, rank);
    ASSERT_TRUE(slice.ok()) << slice.status();
    int64_t local_count = 0;
    ForEachContiguousRun(logical, *slice, [&](int64_t local, int64_t offset, int64_t length) {
      EXPECT_EQ(local, local_count);
      for (int64_t i = 0; i < length; ++i) ++hits[offset + i];
      local_count += length;
    });
    EXPECT_EQ(local_count, slice->NumElements());
  }
  const int64_t copies = ExpectedCopies(nd_sbp, placement.hierarchy());
  for (int64_t i = 0; i < logical.NumElements(); ++i) {
    ASSERT_EQ(hits[i], copies) << "element " << i << " of " << logical.ToString() << " under "
                               << nd_sbp.ToString() << " on " << placement.ToString();
  }
}

TEST(TensorSliceTest, TwoDimensionalExampleFromTheHeader) {
  const Placement placement = *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{2, 2});
  const NdSbp nd_sbp{Sbp::Split(0), Sbp::Split(1)};
  const Shape logical{5, 6};
  EXPECT_EQ(DeviceSlice(logical, nd_sbp, placement, 0)->ToString(), "[0:3, 0:3]");
  EXPECT_EQ(DeviceSlice(logical, nd_sbp, placement, 1)->ToString(), "[0:3, 3:6]");
  EXPECT_EQ(DeviceSlice(logical, nd_sbp, placement, 2)->ToString(), "[3:5, 0:3]");
  EXPECT_EQ(DeviceSlice(logical, nd_sbp, placement, 3)->ToString(), "[3:5, 3:6]");
  EXPECT_EQ(DeviceSlice(logical, nd_sbp, placement, 3)->shape(), (Shape{2, 3}));
}

TEST(TensorSliceTest, SameAxisSplitTwiceNests) {
  const Placement placement = *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{2, 2});
  const NdSbp nd_sbp{Sbp::Split(0), Sbp::Split(0)};
  // 7 rows: [0, 4) and [4, 7) across the outer axis, then each halved again.
  EXPECT_EQ(DeviceSlice(Shape{7}, nd_sbp, placement, 0)->ToString(), "[0:2]");
  EXPECT_EQ(DeviceSlice(Shape{7}, nd_sbp, placement, 1)->ToString(), "[2:4]");
  EXPECT_EQ(DeviceSlice(Shape{7}, nd_sbp, placement, 2)->ToString(), "[4:6]");
  EXPECT_EQ(DeviceSlice(Shape{7}, nd_sbp, placement, 3)->ToString(), "[6:7]");
}

TEST(TensorSliceTest, BroadcastAndPartialHoldTheWholeTensor) {
  const Placement placement = *Placement::Grid(DeviceType::kCpu, 1, 3);
  for (const Sbp& sbp : {Sbp::Broadcast(), Sbp::Partial()}) {
    for (int64_t rank = 0; rank < 3; ++rank) {
      EXPECT_EQ(DeviceSlice(Shape{4, 5}, NdSbp{sbp}, placement, rank)->shape(), (Shape{4, 5}));
    }
  }
}

TEST(TensorSliceTest, OneDimensionalPlacementsTileEveryShape) {
  for (int64_t devices = 1; devices <= 8; ++devices) {
    const Placement placement = *Placement::Grid(DeviceType::kCpu, 1, devices);
    for (const Shape& logical : {Shape{}, Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 9, 4}}) {
      for (const Sbp& sbp : AllSbpsForRank(logical.rank())) {
        ExpectSlicesTile(logical, NdSbp{sbp}, placement);
      }
    }
  }
}

TEST(TensorSliceTest, TwoDimensionalPlacementsTileEveryShape) {
  for (const Shape& hierarchy : {Shape{2, 2}, Shape{2, 3}, Shape{3, 2}, Shape{4, 2}}) {
    const Placement placement =
        *Placement::Grid(DeviceType::kCpu, hierarchy.dim(0), hierarchy.dim(1), hierarchy);
    for (const Shape& logical : {Shape{5}, Shape{5, 7}, Shape{3, 4, 6}, Shape{1, 2}}) {
      for (const Sbp& outer : AllSbpsForRank(logical.rank())) {
        for (const Sbp& inner : AllSbpsForRank(logical.rank())) {
          ExpectSlicesTile(logical, NdSbp{outer, inner}, placement);
        }
      }
    }
  }
}

TEST(TensorSliceTest, ContiguousRunsCopyASliceOutOfTheLogicalTensor) {
  const Shape logical{4, 5};
  std::vector<int> values(20);
  for (int i = 0; i < 20; ++i) values[i] = i;
  const TensorSlice slice({Range{1, 3}, Range{2, 5}});
  std::vector<int> local(slice.NumElements());
  ForEachContiguousRun(logical, slice, [&](int64_t at, int64_t offset, int64_t length) {
    for (int64_t i = 0; i < length; ++i) local[at + i] = values[offset + i];
  });
  EXPECT_EQ(local, (std::vector<int>{7, 8, 9, 12, 13, 14}));
}

TEST(TensorSliceTest, ErrorsNameTheSbpShapeAndHierarchy) {
  const Placement placement = *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{2, 2});
  EXPECT_EQ(DeviceSlice(Shape{4, 4}, NdSbp{Sbp::Split(0)}, placement, 0).status().message(),
            "SBP S(0) has 1 axes but the placement hierarchy [2, 2] has 2; give one SBP per "
            "hierarchy axis");
  EXPECT_EQ(DeviceSlice(Shape{4, 4}, NdSbp{Sbp::Split(2), Sbp::Broadcast()}, placement, 0)
                .status()
                .message(),
            "SBP [S(2), B] splits axis 2 of a tensor of shape [4, 4]; valid split axes are 0..1");
  EXPECT_EQ(DeviceSlice(Shape{4}, NdSbp{Sbp::Split(0), Sbp::Broadcast()}, placement, 4)
                .status()
                .message(),
            "rank 4 is outside placement cpu{0:0-1, 1:0-1}[2, 2]");
  EXPECT_EQ(DeviceSlice(Shape{}, NdSbp{Sbp::Split(0), Sbp::Broadcast()}, placement, 0)
                .status()
                .message(),
            "SBP [S(0), B] splits axis 0 of a tensor of shape []; a scalar cannot be split, use "
            "B or P");
}

}  // namespace
}  // namespace oneflow
