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

// The host terms of devices taking turns on shared cores, from one run of a model on all of
// them (bench/auto_parallel/prediction_bench.cc measures it):
//   act_seconds      (process CPU time of a step - the step's kernels as the cost model
//                    prices them on one core) / the step's acts: what an act costs the
//                    host's cores when its threads sleep and wake between kernels (far
//                    above the act probe's, whose nanosecond kernels keep threads spinning)
//   host_core_share  process CPU time / wall time of that step: the cores the process
//                    obtains, at most host_cores (other programs take the rest)
struct SharedHostTerms {
  double act_seconds = 0;
  double host_core_share = 0;
};
// INVALID_ARGUMENT when a time is not positive, acts < 1 or host_cores < 1. The act cost
// is 0 when the kernels alone take the CPU time; the share at least 1 / 1000 of a core.
absl::StatusOr<SharedHostTerms> SharedHostTermsOf(double cpu_seconds, double wall_seconds, double kernel_cpu_seconds,
                                                  int64_t acts, int64_t host_cores);

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
