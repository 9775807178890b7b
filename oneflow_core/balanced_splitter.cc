#include "oneflow_core/balanced_splitter.h"

#include "absl/strings/str_cat.h"

namespace oneflow {

std::string Range::ToString() const { return absl::StrCat("[", begin, ", ", end, ")"); }

Range BalancedPart(int64_t total, int64_t parts, int64_t index) {
  const int64_t base = total / parts;
  const int64_t remainder = total % parts;
  // The first `remainder` parts have base + 1 elements.
  const int64_t begin = index * base + (index < remainder ? index : remainder);
  const int64_t size = base + (index < remainder ? 1 : 0);
  return Range{begin, begin + size};
}

absl::StatusOr<std::vector<Range>> BalancedSplit(int64_t total, int64_t parts) {
  if (parts <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot split ", total, " into ", parts, " parts: parts must be >= 1"));
  }
  if (total < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot split a negative size ", total, " into ", parts, " parts"));
  }
  std::vector<Range> ranges;
  ranges.reserve(parts);
  for (int64_t i = 0; i < parts; ++i) ranges.push_back(BalancedPart(total, parts, i));
  return ranges;
}

}  // namespace oneflow
