#include "oneflow_core/comm/collective_arguments.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {

absl::Status CheckCounts(absl::string_view what, absl::Span<const int64_t> counts,
                         int64_t expected_size) {
  if (static_cast<int64_t>(counts.size()) != expected_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", counts.size(), " entries; the call needs ", expected_size));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, "[", i, "] is ", counts[i], "; counts must be >= 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBuffer(absl::string_view what, const void* buffer, int64_t size) {
  if (size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " size is ", size, "; it must be >= 0"));
  }
  if (buffer == nullptr && size > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is null but its size is ", size));
  }
  return absl::OkStatus();
}

absl::Status CheckRankInGroup(absl::string_view what, int64_t rank, int64_t group_size) {
  if (rank < 0 || rank >= group_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", rank, " is outside the group of ", group_size, " ranks"));
  }
  return absl::OkStatus();
}

int64_t SumOf(absl::Span<const int64_t> counts) {
  int64_t sum = 0;
  for (int64_t count : counts) sum += count;
  return sum;
}

std::vector<int64_t> ExclusiveOffsets(absl::Span<const int64_t> counts) {
  std::vector<int64_t> offsets(counts.size());
  int64_t offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    offsets[i] = offset;
    offset += counts[i];
  }
  return offsets;
}

std::string RanksText(absl::Span<const int64_t> ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

}  // namespace oneflow
