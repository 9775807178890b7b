// The run summary's line that sets --auto_parallel's predicted step (Plan.auto_parallel,
// priced when the plan was compiled, with the host terms it records) beside the measured
// one: `oneflow run`, the examples' --run and `oneflow launch` print it the same way, so
// a user sees when the cost model is wrong on their machine.
//
// A plan compiled with --compression_warmup=N runs its first N iterations with every
// compressed step dense: those iterations are measured apart and set beside the step
// predicted for them, the steady prediction plus what the compressed collectives cost
// dense (BoxingStepDef.dense_seconds - seconds, as compiled); the others are set beside
// the steady prediction alone.
#ifndef ACTORS_PREDICTED_STEP_H_
#define ACTORS_PREDICTED_STEP_H_

#include <cstdint>
#include <string>

#include "proto/plan.pb.h"

namespace oneflow::actors {

// The largest Compression.dense_warmup_iterations of the plan's compressed boxing steps
// and buckets (--compression_warmup); 0 without a warm-up.
int64_t DenseWarmupIterations(const proto::Plan& plan);

// The seconds the dense warm-up adds to one iteration of the slowest device: per device,
// over the collectives it runs (a step's, a bucket's), the compiled dense price less the
// compressed one of each step that runs dense in the warm-up (a bucket: its members'),
// micro-batch collectives once per micro-batch. 0 without a warm-up.
double DenseWarmupExtraSeconds(const proto::Plan& plan);

// The mean step of the iterations after the first (which also allocates and warms up),
// kept as sums: nothing per iteration stays. With a dense warm-up of N iterations,
// iterations 1 .. N-1 are summed apart from iterations N and later.
class MeasuredStep {
 public:
  explicit MeasuredStep(int64_t dense_warmup_iterations = 0) : dense_warmup_iterations_(dense_warmup_iterations) {}

  void Add(int64_t iteration, double step_ms) {
    if (iteration <= 0) return;
    if (iteration < dense_warmup_iterations_) {
      warmup_sum_ms_ += step_ms;
      ++warmup_steps_;
      return;
    }
    sum_ms_ += step_ms;
    ++steps_;
  }
  int64_t dense_warmup_iterations() const { return dense_warmup_iterations_; }
  // The iterations after the first and after the warm-up.
  int64_t steps() const { return steps_; }
  double mean_ms() const { return steps_ == 0 ? 0 : sum_ms_ / static_cast<double>(steps_); }
  // The warm-up's iterations after the first.
  int64_t warmup_steps() const { return warmup_steps_; }
  double warmup_mean_ms() const { return warmup_steps_ == 0 ? 0 : warmup_sum_ms_ / static_cast<double>(warmup_steps_); }

 private:
  int64_t dense_warmup_iterations_ = 0;
  double sum_ms_ = 0;
  int64_t steps_ = 0;
  double warmup_sum_ms_ = 0;
  int64_t warmup_steps_ = 0;
};

// "auto-parallel: predicted step 4.508 ms (compute 1.890 + exposed communication 1.150 +
// bubble 1.468; host terms: act 2.5 us, collective call 12.5 us, 2 host cores), measured
// 44.648 ms (mean of 9 iterations after the first): measured / predicted 9.90x\n", or
// "host terms: none" when the search priced without them. With a dense warm-up the
// steady part reads "measured ... (mean of 9 iterations after the warm-up of 50)" and
// "; the first 50 iterations dense: predicted 6.100 ms (+1.592 dense communication),
// measured 50.2 ms (mean of 49 after the first): measured / predicted 8.23x" follows
// when any was measured. Empty when the plan has no decision record or nothing was
// measured.
std::string PredictedStepLine(const proto::Plan& plan, const MeasuredStep& measured);

}  // namespace oneflow::actors

#endif  // ACTORS_PREDICTED_STEP_H_
