// --auto_parallel: the compiler chooses the layout. The model is built once for a probe
// layout (tp = 2 on two devices, so its SBP hints show what tensor parallelism shards),
// reduced to a profile (compiler/auto_parallel/model_profile.h), every layout of the
// cluster priced by the cost model (compiler/auto_parallel/search.h), and the cheapest
// compiled for real: rebuilt by the model for that layout (its hints are the constraints:
// a layout the model refuses is skipped with the model's error), compiled, and its
// planned peak checked against --device_memory; the next cheapest is tried on refusal.
// The plan carries the decision record (Plan.auto_parallel), resealed.
//
//   auto_parallel::JobBuilder build = [&](const ParallelLayout& layout) { return BuildMlp(config, layout); };
//   OF_ASSIGN_OR_RETURN(AutoParallelResult result, AutoParallelCompile(build, request));
#ifndef EXAMPLES_COMMON_AUTO_PARALLEL_DRIVER_H_
#define EXAMPLES_COMMON_AUTO_PARALLEL_DRIVER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/model_profile.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::examples {

// The model for a layout: the examples' BuildMlp / BuildGpt / BuildLlama with their config.
using JobBuilder = std::function<absl::StatusOr<proto::Job>(const ParallelLayout&)>;

struct AutoParallelRequest {
  // The cluster: nodes, devices_per_node and link bandwidths (dp, tp, pp, zero and
  // micro_batches are what the search chooses and are ignored).
  ParallelFlags cluster;
  // Everything else the compile takes; its recompute is what the search chooses. A
  // compression.codec_calibration file with host lines (`oneflow calibrate`) gives the
  // search its per-act, per-collective-call and host-core terms (the line nearest the
  // cluster's device count), recorded in the decision (AutoParallelDecision.host_terms).
  CompileSettings settings;
  // Bytes one device may hold (--device_memory); 0: no limit.
  int64_t device_memory = 0;
  // Alternatives kept in the decision record.
  int alternatives = 5;
  // Most pipeline stages and micro-batches (SearchOptions); 0 stages: no limit.
  int64_t max_pipeline_stages = 0;
  int64_t max_micro_batches = 64;
  // Layouts compiled for real before giving up (the model refuses or memory planning's
  // peak is over --device_memory).
  int max_compiles = 8;
};

struct AutoParallelResult {
  ParallelLayout layout;
  proto::Job job;
  // The compiled plan with Plan.auto_parallel set, sealed.
  proto::Plan plan;
  double search_seconds = 0;
  double compile_seconds = 0;
};

// The flags of `layout` (dp, tp, pp and its stage_blocks, micro-batches, ZeRO) on the
// cluster of `cluster` (nodes, devices per node, links; its other fields kept).
ParallelFlags FlagsForLayout(const ParallelFlags& cluster, const proto::AutoParallelLayout& layout);

// `settings` with what of `layout` the compile settings carry: its recomputation and its
// pipeline schedule (--recompute, --pp_schedule).
CompileSettings SettingsForLayout(const CompileSettings& settings, const proto::AutoParallelLayout& layout);

// Errors: the search's (no layout fits the batch; every predicted peak over
// --device_memory, naming the smallest and its layout), or FAILED_PRECONDITION listing
// every layout compiled and why each was refused.
absl::StatusOr<AutoParallelResult> AutoParallelCompile(const JobBuilder& build, const AutoParallelRequest& request);

// A layout given by hand, priced by the search's cost model as the search would price it
// (the same probe profile, links, codecs and --codec_calibration host terms; its edges
// recorded), without searching: the examples' --predict_step, so `oneflow run` /
// `oneflow launch` set the model's prediction beside the measured step of any layout.
// The record's `chosen` is the layout and `candidates` 1 (no alternatives); the caller
// sets planned_peak_bytes from the compiled plan. `request.device_memory` is not checked.
// Errors: the profile's or the calibration file's, or the cost model's for this layout
// (INVALID_ARGUMENT naming it, e.g. a batch its dp and micro-batches do not divide).
absl::StatusOr<proto::AutoParallelDecision> PriceGivenLayout(const JobBuilder& build,
                                                             const AutoParallelRequest& request,
                                                             const proto::AutoParallelLayout& layout);

// --stage_blocks=auto: the pipeline cuts of `layout` (pp > 1) that the search's DP over
// the cuts chooses (compiler/auto_parallel/price.h ChooseStageBlocks, within
// request.device_memory), priced beside the balanced cuts by the search's cost model.
// `counts` is empty when the balanced cuts are as good (or no cut fits the memory).
struct ChosenStageCuts {
  std::vector<int64_t> counts;
  double balanced_step_seconds = 0;
  double chosen_step_seconds = 0;  // = balanced_step_seconds when counts is empty
};
absl::StatusOr<ChosenStageCuts> ChooseStageCuts(const JobBuilder& build, const AutoParallelRequest& request,
                                                const proto::AutoParallelLayout& layout);

// Every unit's acts in the plans of the layouts the search prices on `cluster`: the model
// built and compiled (with `settings`, recomputing nothing) for the probe of each family
// of them (auto_parallel::ActFamilyProbe: dp, tp and micro-batches at most 2, the ZeRO
// stage, one stage) and its first device's actors counted (auto_parallel::CountLayoutActs).
// A probe the model or the compiler refuses is left out: its family keeps the counts of
// CountActs' probe plan. For a model with blocks, also what full recomputation re-runs:
// the model on one device compiled with --recompute=full
// (CountFullRecomputationOfModel). The families counted.
absl::StatusOr<int64_t> CountActsOfLayoutFamilies(const JobBuilder& build, const ParallelFlags& cluster,
                                                  const CompileSettings& settings, int64_t max_micro_batches,
                                                  auto_parallel::ModelProfile* profile);

// The tp boxings of every shape of tp group the search enumerates for `cluster`, each from
// its own probe: the model on one tp group of that degree, placed as the layouts place it
// (in one node, or over whole nodes with the cluster's links), with the layout's
// micro-batches, one stage, compiled with `settings` recomputing nothing, into
// profile->tp_probe_profiles (a copy of `profile` with auto_parallel::CountTpBoxings of
// that plan), keyed by (tp, micro-batches): the compiler's per-op SBP choice for that many
// devices, links and rows of a micro-batch, which the one-node whole-batch tp = 2 probe's
// may not be. Probes go whole batch first, then by more micro-batches, while their forward
// ops x devices stay within a budget (30000: every shape of the examples' small models, a
// few of a 48-block gpt); a group over more than 8 devices of several nodes (or over part
// of a node) is not probed. A shape without a probe is priced with the nearest probed one
// below it (auto_parallel::ProfileForTp). Call after every other count (the copies carry
// them).
absl::Status CountTpBoxingsOfEachShape(const JobBuilder& build, const ParallelFlags& cluster,
                                        const CompileSettings& settings, int64_t max_micro_batches,
                                        auto_parallel::ModelProfile* profile);

// For a model with blocks, what full recomputation re-runs: the model built for one
// device of `cluster`, compiled with `settings` and --recompute=full, and the copies the
// recompute pass made counted (auto_parallel::CountFullRecomputation). Left out, as a
// refused probe, when the model or the compiler refuses it (the cost model then prices
// the whole forward again). The search and --predict_step do it with or without host
// terms; nothing for a model without blocks.
absl::Status CountFullRecomputationOfModel(const JobBuilder& build, const ParallelFlags& cluster,
                                           const CompileSettings& settings, auto_parallel::ModelProfile* profile);

// What a person reads: the chosen layout as flags, its predicted step split, predicted
// and planned peak, the search's size and time, the host terms it was priced with
// (auto_parallel::HostTermsText), and the alternatives with why each lost. `given_layout`:
// the record of PriceGivenLayout, which says "priced the given ..." where a search's says
// "chose ...".
std::string AutoParallelSummary(const proto::AutoParallelDecision& decision, double search_seconds,
                                bool given_layout = false);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_AUTO_PARALLEL_DRIVER_H_
