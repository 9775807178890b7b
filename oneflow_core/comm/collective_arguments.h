// Checks of a collective call's own arguments, and the arithmetic on counts, shared by
// the backends so that a bad call fails with the same INVALID_ARGUMENT message on all.
#ifndef ONEFLOW_CORE_COMM_COLLECTIVE_ARGUMENTS_H_
#define ONEFLOW_CORE_COMM_COLLECTIVE_ARGUMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace oneflow {

// `counts` has `expected_size` entries, each >= 0. `what` names them ("byte_counts").
absl::Status CheckCounts(absl::string_view what, absl::Span<const int64_t> counts,
                         int64_t expected_size);

// `size` >= 0, and `buffer` is not null when `size` > 0 (an empty rank may pass null).
absl::Status CheckBuffer(absl::string_view what, const void* buffer, int64_t size);

// 0 <= `rank` < `group_size`. `what` names it ("root", "peer").
absl::Status CheckRankInGroup(absl::string_view what, int64_t rank, int64_t group_size);

// The sum of `counts`.
int64_t SumOf(absl::Span<const int64_t> counts);

// offsets[i] = counts[0] + ... + counts[i - 1]; one entry per count.
std::vector<int64_t> ExclusiveOffsets(absl::Span<const int64_t> counts);

// "rank 3" or "ranks 1, 3": for messages naming who had not arrived.
std::string RanksText(absl::Span<const int64_t> ranks);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_COLLECTIVE_ARGUMENTS_H_
