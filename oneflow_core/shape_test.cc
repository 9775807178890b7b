#include "oneflow_core/shape.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(ShapeTest, CountsElementsAndStrides) {
  const Shape shape{2, 3, 4};
  EXPECT_EQ(shape.rank(), 3);
  EXPECT_EQ(shape.NumElements(), 24);
  EXPECT_EQ(shape.Strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(Shape{}.NumElements(), 1);  // A scalar.
  EXPECT_EQ((Shape{5, 0}).NumElements(), 0);
}

TEST(ShapeTest, PrintsAndParsesRoundTrip) {
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{2, 3}, Shape{1, 0, 4096}}) {
    absl::StatusOr<Shape> parsed = Shape::Parse(shape.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, shape);
  }
  EXPECT_EQ((Shape{2, 3}).ToString(), "[2, 3]");
  EXPECT_EQ(Shape{}.ToString(), "[]");
  EXPECT_EQ(*Shape::Parse(" [ 8,16 ] "), (Shape{8, 16}));
}

TEST(ShapeTest, ParseErrorsNameTheInput) {
  absl::StatusOr<Shape> missing_bracket = Shape::Parse("2, 3");
  EXPECT_EQ(missing_bracket.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing_bracket.status().message(),
            "cannot parse shape '2, 3': expected a list like [2, 3] or []");
  EXPECT_EQ(Shape::Parse("[2, x]").status().message(),
            "cannot parse shape '[2, x]': 'x' is not an integer");
  EXPECT_EQ(Shape::Parse("[4, -1]").status().message(),
            "shape [4, -1] has negative dimension -1 at axis 1; dimensions must be >= 0");
}

}  // namespace
}  // namespace oneflow
