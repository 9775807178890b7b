// The per-iteration losses of a plan trained in this process (every node's devices as
// threads), for tests that compare a layout's curve with one device's.
#ifndef TESTS_PLAN_LOSSES_H_
#define TESTS_PLAN_LOSSES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow::testing {

// Trains `plan` for `iterations` with actors::TrainPlan (all nodes); a failed run is a test
// failure and gives no losses.
std::vector<float> TrainedLosses(const proto::Plan& plan, int64_t iterations);

// Expects as many losses as `reference` and each within `relative` x |reference[i]| of
// it, failures naming `what` and the iteration.
void ExpectLossesNear(const std::vector<float>& losses, const std::vector<float>& reference, double relative,
                      const std::string& what);

}  // namespace oneflow::testing

#endif  // TESTS_PLAN_LOSSES_H_
