// The check every end-to-end test makes of a training run against its reference: the
// reference must be a real training curve before anything is compared with it, so a
// changed output format (no losses found) fails instead of comparing two empty lists.
#ifndef TESTS_LOSS_CURVES_H_
#define TESTS_LOSS_CURVES_H_

#include <vector>

#include "gtest/gtest.h"

namespace oneflow::testing {

// Success when `reference` is a real training curve (exactly `iterations` losses, all
// finite, the mean of its last third below the mean of its first third) and `losses` equals it, iteration by iteration,
// within 1e-4 relative (plus 1e-6 absolute, for losses near zero):
//   EXPECT_TRUE(MatchesReference(losses, reference, kIterations)) << "gpt dp=2 x tp=2";
::testing::AssertionResult MatchesReference(const std::vector<double>& losses, const std::vector<double>& reference,
                                            int iterations);

}  // namespace oneflow::testing

#endif  // TESTS_LOSS_CURVES_H_
