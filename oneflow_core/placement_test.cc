#include "oneflow_core/placement.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(PlacementTest, GridIsNodeMajorWithRowMajorCoordinates) {
  const Placement placement = *Placement::Grid(DeviceType::kCpu, 2, 4, Shape{2, 4});
  EXPECT_EQ(placement.num_devices(), 8);
  EXPECT_EQ(placement.device(5), (DeviceId{1, 1}));
  EXPECT_EQ(placement.Coordinate(5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(placement.Coordinate(3), (std::vector<int64_t>{0, 3}));
  for (int64_t rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(placement.RankOf(placement.Coordinate(rank)), rank);
    EXPECT_EQ(placement.RankOf(placement.device(rank)), rank);
  }
  EXPECT_EQ(placement.RankOf(DeviceId{2, 0}), -1);
}

TEST(PlacementTest, OneDimensionalByDefault) {
  const Placement placement = *Placement::Grid(DeviceType::kCuda, 1, 4);
  EXPECT_EQ(placement.hierarchy(), Shape{4});
  EXPECT_EQ(placement.ToString(), "cuda{0:0-3}");
}

TEST(PlacementTest, PrintsAndParsesRoundTrip) {
  const std::vector<Placement> cases = {
      *Placement::Grid(DeviceType::kCpu, 1, 1),
      *Placement::Grid(DeviceType::kCpu, 1, 4),
      *Placement::Grid(DeviceType::kCuda, 2, 4, Shape{2, 4}),
      *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{4}),
      *Placement::Create(DeviceType::kCpu, {{0, 0}, {0, 2}, {1, 5}}),
      *Placement::Create(DeviceType::kCpu, {{0, 3}, {0, 2}, {0, 1}, {0, 0}}, Shape{2, 2}),
  };
  for (const Placement& placement : cases) {
    absl::StatusOr<Placement> parsed = Placement::Parse(placement.ToString());
    ASSERT_TRUE(parsed.ok()) << placement.ToString() << ": " << parsed.status();
    EXPECT_EQ(*parsed, placement) << placement.ToString();
    absl::StatusOr<Placement> from_proto = Placement::FromProto(placement.ToProto());
    ASSERT_TRUE(from_proto.ok());
    EXPECT_EQ(*from_proto, placement);
  }
  EXPECT_EQ(cases[2].ToString(), "cuda{0:0-3, 1:0-3}[2, 4]");
  EXPECT_EQ(cases[4].ToString(), "cpu{0:0, 0:2, 1:5}");
  EXPECT_EQ(cases[5].ToString(), "cpu{0:3, 0:2, 0:1, 0:0}[2, 2]");
  EXPECT_EQ(*Placement::Parse(" cpu{ 0:0-1 , 1:0-1 } [2,2] "),
            *Placement::Grid(DeviceType::kCpu, 2, 2, Shape{2, 2}));
}

TEST(PlacementTest, RejectsInvalidPlacementsWithClearMessages) {
  EXPECT_EQ(Placement::Create(DeviceType::kCpu, {}).status().message(),
            "a placement needs at least one device");
  EXPECT_EQ(Placement::Create(DeviceType::kCpu, {{0, 1}, {0, 1}}).status().message(),
            "device 0:1 appears twice in the placement");
  EXPECT_EQ(Placement::Grid(DeviceType::kCpu, 1, 6, Shape{4, 2}).status().message(),
            "hierarchy [4, 2] has 8 positions but the placement has 6 devices; the product of "
            "the hierarchy must equal the number of devices");
  EXPECT_EQ(Placement::Grid(DeviceType::kCpu, 0, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PlacementTest, ParseErrorsNameTheText) {
  EXPECT_EQ(Placement::Parse("tpu{0:0}").status().message(),
            "cannot parse placement 'tpu{0:0}': unknown device type 'tpu'; valid: cpu, cuda; "
            "expected e.g. cpu{0:0-3} or cuda{0:0-3, 1:0-3}[2, 4]");
  EXPECT_EQ(Placement::Parse("cpu{0:3-1}").status().message(),
            "cannot parse placement 'cpu{0:3-1}': '0:3-1' is not node:device or "
            "node:first-last; expected e.g. cpu{0:0-3} or cuda{0:0-3, 1:0-3}[2, 4]");
  EXPECT_EQ(Placement::Parse("cpu").status().message(),
            "cannot parse placement 'cpu': missing {devices}; expected e.g. cpu{0:0-3} or "
            "cuda{0:0-3, 1:0-3}[2, 4]");
  EXPECT_EQ(Placement::Parse("cpu{0:0-3}[3]").status().message(),
            "placement 'cpu{0:0-3}[3]': hierarchy [3] has 3 positions but the placement has 4 "
            "devices; the product of the hierarchy must equal the number of devices");
}

}  // namespace
}  // namespace oneflow
