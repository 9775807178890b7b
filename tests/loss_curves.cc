#include "tests/loss_curves.h"

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
  if (!(reference.back() < reference.front())) {
    return ::testing::AssertionFailure() << "the reference run does not train: loss " << reference.front()
                                         << " at iteration 0, " << reference.back() << " at iteration "
                                         << iterations - 1;
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
