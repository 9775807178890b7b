// The host terms of the cost model (PriceOptions act_seconds, collective_call_seconds,
// host_cores) from a calibration file's host lines (sbp/calibration.h, written by
// `oneflow calibrate`), and their record in the plan's decision (Plan.auto_parallel
// .host_terms), so `oneflow inspect` and the run summary say what the prediction assumed.
#ifndef COMPILER_AUTO_PARALLEL_HOST_TERMS_H_
#define COMPILER_AUTO_PARALLEL_HOST_TERMS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/auto_parallel/price.h"
#include "proto/plan.pb.h"
#include "sbp/calibration.h"

namespace oneflow::auto_parallel {

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
