#include "oneflow_core/status.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

absl::StatusOr<int> ParsePositive(int value) {
  if (value <= 0) return absl::InvalidArgumentError("value must be positive");
  return value;
}

absl::Status Twice(int value, int* out) {
  OF_ASSIGN_OR_RETURN(int parsed, ParsePositive(value));
  OF_ASSIGN_OR_RETURN(*out, ParsePositive(parsed * 2));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> MoveOnly(int value) {
  OF_RETURN_IF_ERROR(ParsePositive(value).status());
  return std::make_unique<int>(value);
}

absl::Status UsesMoveOnly(int value, int* out) {
  OF_ASSIGN_OR_RETURN(std::unique_ptr<int> pointer, MoveOnly(value));
  *out = *pointer;
  return absl::OkStatus();
}

TEST(StatusTest, AssignOrReturnPassesValuesThrough) {
  int out = 0;
  ASSERT_TRUE(Twice(3, &out).ok());
  EXPECT_EQ(out, 6);
  ASSERT_TRUE(UsesMoveOnly(5, &out).ok());
  EXPECT_EQ(out, 5);
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  int out = 7;
  const absl::Status status = Twice(-1, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "value must be positive");
  EXPECT_EQ(out, 7);  // Untouched on error.
}

TEST(StatusTest, ReturnIfErrorPropagates) {
  int out = 0;
  const absl::Status status = UsesMoveOnly(0, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatusTest, WithContextPrefixesMessageAndKeepsCode) {
  const absl::Status status =
      WithContext(absl::NotFoundError("no op 'foo'"), "while compiling job 'mlp'");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "while compiling job 'mlp': no op 'foo'");
  EXPECT_TRUE(WithContext(absl::OkStatus(), "ignored").ok());
}

}  // namespace
}  // namespace oneflow
