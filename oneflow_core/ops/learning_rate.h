// Learning-rate schedules of the optimizer update ops (sgd_update, adamw_update).
//
// The schedule travels as op attributes so each update op is self-contained:
//   lr_schedule   "constant" | "warmup_cosine"
//   base_lr       the rate (constant), or the peak after warmup
//   warmup_steps  iterations of linear warmup: step t < warmup_steps runs at
//                 base_lr * (t + 1) / warmup_steps
//   total_steps   the iteration at which the cosine decay reaches min_lr
//   min_lr        the rate from total_steps on
// Kernels and the reference evaluator call LearningRateAt with the 0-based iteration, so
// every device of every layout computes the same rate.
#ifndef ONEFLOW_CORE_OPS_LEARNING_RATE_H_
#define ONEFLOW_CORE_OPS_LEARNING_RATE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "oneflow_core/ops/attr.h"
#include "proto/job.pb.h"

namespace oneflow {

// The attributes above for a job's schedule.
AttrMap LearningRateAttrs(const proto::LearningRateSchedule& schedule);

// INVALID_ARGUMENT naming the attribute and the valid range: an unknown lr_schedule,
// a negative rate, warmup_steps > total_steps, min_lr outside [0, base_lr].
absl::Status CheckLearningRateAttrs(const AttrMap& attrs);

// The rate at 0-based iteration `step`, for attributes that passed the check.
double LearningRateAt(const AttrMap& attrs, int64_t step);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_LEARNING_RATE_H_
