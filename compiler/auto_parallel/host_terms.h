// The host terms of the cost model (PriceOptions act_seconds, collective_call_seconds,
// host_cores) from a calibration file's host lines (sbp/calibration.h, written by
// `oneflow calibrate`), and their record in the plan's decision (Plan.auto_parallel
// .host_terms), so `oneflow inspect` and the run summary say what the prediction assumed.
#ifndef COMPILER_AUTO_PARALLEL_HOST_TERMS_H_
#define COMPILER_AUTO_PARALLEL_HOST_TERMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/price.h"
#include "proto/plan.pb.h"
#include "sbp/calibration.h"

namespace oneflow::auto_parallel {

// The host terms of devices taking turns on shared cores, fitted to runs on all of them
// that do the same kernels with other numbers of acts (one layout with 1, 2, 4, ...
// micro-batches: the rows per kernel shrink, the acts grow; `oneflow calibrate`'s probe and
// bench/auto_parallel/prediction_bench.cc measure them):
//   act_seconds      the slope of process CPU time per step against acts per step, by
//                    Theil-Sen: the median of the slopes of every pair of runs of one
//                    reference (the same `reference` id: the same layout, so the same
//                    kernels) with other act counts. The kernels cancel in each pair, so no
//                    compute rate enters it; the median keeps one run measured in a bad
//                    moment (a burst of other programs, a collective spinning long) from
//                    setting it, where the difference of two runs would take it whole.
//                    What an act costs the host's cores when its threads sleep and wake
//                    between kernels (far above an act of nanosecond kernels, whose
//                    threads keep spinning).
//   host_core_share  the median of the runs' process CPU time over wall time: the cores
//                    the process obtains, at most host_cores (other programs take the
//                    rest). A median, not the sums' ratio: a run whose threads mostly
//                    waited (4 ranks of a collective on 2 loaded cores: 113-153 ms of wall
//                    for 21 ms of CPU, where the other references got 1-1.5 cores) says
//                    nothing about the share, and the ratio of sums weighs it most
//                    (run 15 of docs/auto_parallel_measurements.md: 0.29 cores, every prediction ~4x long).
//
// With the boxing acts of each run (boxing_acts: a collective's or a transfer's actors,
// which wait for their peers), two act costs, one per kind: every pair of runs of one
// reference says  extra CPU = act x extra other acts + boxing act x extra boxing acts;
// two such pairs of references whose extra acts are boxing acts in other proportions
// (|difference of the boxing fractions| >= 0.05: a data-parallel reference adds hardly any
// with micro-batches, a tensor-parallel one an all-reduce per block's matmul pair) give
// both costs, and each is the median over every such two (a Theil-Sen of two unknowns).
struct RunSample {
  double cpu_seconds = 0;   // the process's CPU time in one step (every thread)
  double wall_seconds = 0;  // the step
  int64_t acts = 0;         // every device's acts in one step
  int64_t reference = 0;    // runs of one reference (layout) share the kernels
  int64_t boxing_acts = 0;  // of acts, the boxing actors'
};
struct SharedHostTerms {
  double act_seconds = 0;
  double host_core_share = 0;
  int64_t slopes = 0;  // pairs the median was taken over
  // The two-kind fit's (nullopt when no two pairs tell the kinds apart): the boxing act's
  // cost, and act_seconds is then the other acts'.
  std::optional<double> boxing_act_seconds;
  int64_t solutions = 0;
  // The one cost of every act (the median slope), whichever fit set act_seconds.
  double one_cost_act_seconds = 0;  // two-pair solutions the medians were taken over
};
// INVALID_ARGUMENT when a time is not positive, no reference has two runs with other act
// counts, boxing acts are negative or above the acts, or host_cores < 1. An act cost is 0
// when its median is negative (more acts took less CPU); the share is at least 1 / 1000
// of a core.
absl::StatusOr<SharedHostTerms> FitSharedHostTerms(const std::vector<RunSample>& runs, int64_t host_cores);

// With a core per device (`devices` processes of one device each on at least as many
// cores): the wall seconds one more act adds to a device's step, the Theil-Sen slope of
// the step (wall_seconds) over each device's acts (acts / devices) between the runs of one
// reference (FitSharedHostTerms' fit, each device's step standing for its CPU time). A
// device's acts run one after another on its own thread, so their fixed cost is its
// step's, not CPU spread over shared cores; the probe's runs cut the same kernels into
// more acts (1-8 micro-batches), so the slope is an act's dispatch and each kernel piece's
// fixed costs. INVALID_ARGUMENT when devices < 1, or FitSharedHostTerms' errors (a step not
// positive, no reference with two runs of other act counts) prefixed "an act's cost on
// its own core: "; 0 when the median is negative (more acts took less time).
absl::StatusOr<double> FitOwnCoreActSeconds(const std::vector<RunSample>& runs, int64_t devices);

// Sets options' act_seconds, collective_call_seconds, host_cores, host_core_share and
// boxing_act_seconds (nullopt when not measured) from `measurement`.
void ApplyHostMeasurement(const HostMeasurement& measurement, PriceOptions* options);

// The record of the calibration's host line nearest `devices` (NearestHostMeasurement);
// without host lines, of its "machine" line when that names `nodes` nodes (the cluster's
// nodes are processes on one machine of that many cores: host_cores; when `devices`
// outnumber the cores and the line measured their turns, its act, call and boxing act
// costs and core share; with a core each and the line's own_core_act_seconds, that act
// cost, calls free (they are the links') and a core per device; otherwise acts free and
// the core share the cores); else nullopt.
// `file` is the path as the user gave it.
std::optional<proto::AutoParallelHostTerms> HostTermsFor(const Calibration& calibration, int64_t nodes,
                                                        int64_t devices, const std::string& file);

// Sets options' act_seconds, collective_call_seconds, host_cores, host_core_share and
// boxing_act_seconds (nullopt when the record has none) from a record.
void ApplyHostTerms(const proto::AutoParallelHostTerms& terms, PriceOptions* options);

// "act 2.5 us, collective call 12.5 us, 2 host cores (measured for 4 devices, c.jsonl)" (with
// ", boxing act 42 us" after the act and ", core share 1.6" after the cores when the line
// had them), from a machine line "3 nodes on one machine of 2 cores, acts free (c.jsonl)" or,
// with its measured terms, "3 nodes on one machine of 2 cores: act 1.04 us, collective call
// 47.3 us, core share 1.57 (measured for 3 devices, c.jsonl)", or with a core each "2 nodes
// on one machine of 2 cores, a core each: act 1.1 us of wall time (measured across 2
// processes, c.jsonl)", or
// for a decision without the record "none: acts free, every device its own core".
std::string HostTermsText(const proto::AutoParallelDecision& decision);

// With options.host_cores: whether the cluster's devices are more than the cores they share
// (some device always waits for a core while every device has work).
bool DevicesOutnumberCores(const PriceOptions& options);

// With options.host_cores: the cores' worth the devices obtain (host_core_share, at most
// the cores).
double SharedCores(const PriceOptions& options);

// With options.host_cores and one stage: how much longer each device's compute takes when
// all of the stage's devices compute at once on the cores' share, each at most one core
// (devices / share, at least 1). Every device of one stage runs the same program, so they
// compute at once; a pipeline's stages do not (shared_core_pipeline.h plays them out). 1
// otherwise.
double LockstepStretch(const PriceOptions& options, const proto::AutoParallelLayout& layout);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_HOST_TERMS_H_
