// Balanced splitting of one dimension into parts, as OneFlow's BalancedSplitter does.
//
// Splitting 10 rows over 4 devices gives [0, 3) [3, 6) [6, 8) [8, 10): the first
// `10 % 4 = 2` parts are one larger. When there are more parts than rows, the last parts
// are empty ([0, 1) [1, 2) [2, 2) for 2 rows over 3 parts). Every SBP split in the
// project (device slices, boxing, data loading) uses this one rule, so all layers agree
// on which device holds which row.
#ifndef ONEFLOW_CORE_BALANCED_SPLITTER_H_
#define ONEFLOW_CORE_BALANCED_SPLITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace oneflow {

// A half-open interval [begin, end).
struct Range {
  int64_t begin = 0;
  int64_t end = 0;

  int64_t size() const { return end - begin; }
  std::string ToString() const;
  friend bool operator==(const Range& a, const Range& b) {
    return a.begin == b.begin && a.end == b.end;
  }
};

// Splits [0, total) into `parts` contiguous ranges whose sizes differ by at most one,
// larger ones first. Errors if parts <= 0 or total < 0.
absl::StatusOr<std::vector<Range>> BalancedSplit(int64_t total, int64_t parts);

// The `index`-th range of BalancedSplit(total, parts) without building the whole list.
// Preconditions (checked by the caller): parts > 0, total >= 0, 0 <= index < parts.
Range BalancedPart(int64_t total, int64_t parts, int64_t index);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_BALANCED_SPLITTER_H_
