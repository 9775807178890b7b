// The host terms of the cost model (PriceOptions act_seconds, collective_call_seconds,
// host_cores) from a calibration file's host lines (sbp/calibration.h, written by
// `oneflow calibrate`), and their record in the plan's decision (Plan.auto_parallel
// .host_terms), so `oneflow inspect` and the run summary say what the prediction assumed.
#ifndef COMPILER_AUTO_PARALLEL_HOST_TERMS_H_
#define COMPILER_AUTO_PARALLEL_HOST_TERMS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/price.h"
#include "proto/plan.pb.h"
#include "sbp/calibration.h"

namespace oneflow::auto_parallel {

// The host terms of devices taking turns on shared cores, from two runs of a model on all
// of them that do the same kernels with other numbers of acts (the same layout with one
// and with two micro-batches: bench/auto_parallel/prediction_bench.cc measures them):
//   act_seconds      (process CPU time of the step with more acts - of the other) / (its
//                    acts - the other's): what an act costs the host's cores when its
//                    threads sleep and wake between kernels (far above the act probe's,
//                    whose nanosecond kernels keep threads spinning); the kernels cancel,
//                    so no compute rate enters it
//   host_core_share  both steps' process CPU time over their wall time: the cores the
//                    process obtains, at most host_cores (other programs take the rest)
struct RunSample {
  double cpu_seconds = 0;   // the process's CPU time in one step (every thread)
  double wall_seconds = 0;  // the step
  int64_t acts = 0;         // every device's acts in one step
};
struct SharedHostTerms {
  double act_seconds = 0;
  double host_core_share = 0;
};
// INVALID_ARGUMENT when a time is not positive, `more` has no more acts than `fewer` or
// host_cores < 1. The act cost is 0 when the run with more acts took less CPU time; the
// share at least 1 / 1000 of a core.
absl::StatusOr<SharedHostTerms> SharedHostTermsOf(const RunSample& fewer, const RunSample& more, int64_t host_cores);

// Sets options' act_seconds, collective_call_seconds and host_cores from `measurement`.
void ApplyHostMeasurement(const HostMeasurement& measurement, PriceOptions* options);

// The record of the calibration's host line nearest `devices` (NearestHostMeasurement),
// or nullopt when it has none. `file` is the path as the user gave it.
std::optional<proto::AutoParallelHostTerms> HostTermsFor(const Calibration& calibration, int64_t devices,
                                                        const std::string& file);

// Sets options' act_seconds, collective_call_seconds and host_cores from a record.
void ApplyHostTerms(const proto::AutoParallelHostTerms& terms, PriceOptions* options);

// "act 2.5 us, collective call 12.5 us, 2 host cores (measured for 4 devices, c.jsonl)", or
// for a decision without the record "none: acts free, every device its own core".
std::string HostTermsText(const proto::AutoParallelDecision& decision);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_HOST_TERMS_H_
