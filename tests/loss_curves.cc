#include "tests/loss_curves.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"

namespace oneflow::testing {

::testing::AssertionResult MatchesReference(const std::vector<double>& losses, const std::vector<double>& reference,
                                            int iterations) {
  if (reference.size() != static_cast<size_t>(iterations)) {
    return ::testing::AssertionFailure() << "the reference run reported " << reference.size() << " losses for "
                                         << iterations << " iterations";
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    if (!std::isfinite(reference[i])) {
      return ::testing::AssertionFailure() << "the reference loss of iteration " << i << " is " << reference[i];
    }
  }
  // Each loss is one small batch's, so single iterations are noisy: compare the mean of
  // the first third of the curve with the mean of the last third.
  const size_t third = std::max<size_t>(1, reference.size() / 3);
  double first = 0, last = 0;
  for (size_t i = 0; i < third; ++i) {
    first += reference[i] / third;
    last += reference[reference.size() - 1 - i] / third;
  }
  if (!(last < first)) {
    return ::testing::AssertionFailure() << "the reference run does not train: mean loss " << first
                                         << " over its first " << third << " iterations, " << last
                                         << " over its last " << third;
  }
  if (losses.size() != reference.size()) {
    return ::testing::AssertionFailure() << losses.size() << " losses for " << iterations << " iterations: ["
                                         << absl::StrJoin(losses, ", ") << "]";
  }
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool same = true;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (std::abs(losses[i] - reference[i]) <= 1e-4 * std::abs(reference[i]) + 1e-6) continue;
    if (same) result = ::testing::AssertionFailure();
    same = false;
    result << "\n  iteration " << i << ": loss " << losses[i] << ", reference " << reference[i];
  }
  return result;
}

}  // namespace oneflow::testing
