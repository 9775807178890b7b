// The run summary's line that sets --auto_parallel's predicted step (Plan.auto_parallel,
// priced when the plan was compiled, with the host terms it records) beside the measured
// one: `oneflow run`, the examples' --run and `oneflow launch` print it the same way, so
// a user sees when the cost model is wrong on their machine.
#ifndef ACTORS_PREDICTED_STEP_H_
#define ACTORS_PREDICTED_STEP_H_

#include <cstdint>
#include <string>

#include "proto/plan.pb.h"

namespace oneflow::actors {

// The mean step of the iterations after the first (which also allocates and warms up),
// kept as a sum: nothing per iteration stays.
class MeasuredStep {
 public:
  void Add(int64_t iteration, double step_ms) {
    if (iteration <= 0) return;
    sum_ms_ += step_ms;
    ++steps_;
  }
  int64_t steps() const { return steps_; }
  double mean_ms() const { return steps_ == 0 ? 0 : sum_ms_ / static_cast<double>(steps_); }

 private:
  double sum_ms_ = 0;
  int64_t steps_ = 0;
};

// "auto-parallel: predicted step 4.508 ms (compute 1.890 + exposed communication 1.150 +
// bubble 1.468; host terms: act 2.5 us, collective call 12.5 us, 2 host cores), measured
// 44.648 ms (mean of 9 iterations after the first): measured / predicted 9.90x\n", or
// "host terms: none" when the search priced without them. Empty when the plan has no
// decision record or nothing was measured.
std::string PredictedStepLine(const proto::Plan& plan, const MeasuredStep& measured);

}  // namespace oneflow::actors

#endif  // ACTORS_PREDICTED_STEP_H_
