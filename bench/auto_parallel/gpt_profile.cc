#include "bench/auto_parallel/gpt_profile.h"

#include <cstdio>
#include <string>

#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/kept_activations.h"
#include "compiler/auto_parallel/tp_boxings.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "oneflow_core/status.h"

namespace oneflow::prediction {

// The gpt's profile with its acts counted, per family of layouts of `devices` devices from
// its own plan (dp's gradient sync, ZeRO's collectives and copies, the micro-batches'
// accumulators), as --auto_parallel counts them.
absl::StatusOr<auto_parallel::ModelProfile> CountedProfile(const examples::GptConfig& config, int64_t devices,
                                                             int64_t max_micro_batches,
                                                             const examples::CompileSettings& settings) {
  examples::ParallelFlags probe;
  probe.devices_per_node = 2;
  probe.tp = 2;
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout probe_layout, examples::ParallelLayout::Create(probe));
  OF_ASSIGN_OR_RETURN(const proto::Job probe_job, examples::BuildGpt(config, probe_layout));
  OF_ASSIGN_OR_RETURN(auto_parallel::ModelProfile profile, auto_parallel::ProfileJob(probe_job, 2));
  std::string probe_dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions probe_options,
                      examples::CompileOptionsFor(probe_layout, settings, &probe_dump));
  OF_ASSIGN_OR_RETURN(const proto::Plan probe_plan, Compile(probe_job, probe_options));
  OF_RETURN_IF_ERROR(auto_parallel::CountActs(probe_plan, &profile));
  // tp priced as the probe plan boxes it, as --auto_parallel does.
  OF_RETURN_IF_ERROR(auto_parallel::CountTpBoxings(probe_plan, &profile));
  // The peak's activations: those backward reads, as --auto_parallel finds them.
  OF_RETURN_IF_ERROR(auto_parallel::CountKeptActivations(probe_plan, 2, 1, &profile));
  examples::ParallelFlags cluster;
  cluster.devices_per_node = devices;
  OF_ASSIGN_OR_RETURN(
      const int64_t families,
      examples::CountActsOfLayoutFamilies(
          [&](const examples::ParallelLayout& layout) { return examples::BuildGpt(config, layout); }, cluster,
          settings, max_micro_batches, &profile));
  std::printf("{\"bench\":\"auto_parallel_act_families\",\"devices\":%lld,\"families\":%lld}\n",
              static_cast<long long>(devices), static_cast<long long>(families));
  // Each tp degree's own boxings, as --auto_parallel prices them.
  OF_RETURN_IF_ERROR(examples::CountTpBoxingsOfEachShape(
      [&](const examples::ParallelLayout& layout) { return examples::BuildGpt(config, layout); }, cluster, settings,
      max_micro_batches, &profile));
  return profile;
}

// The cluster as the examples' driver gives it to the search (compile_driver's options).
absl::StatusOr<auto_parallel::SearchOptions> UncalibratedOptions(int64_t devices, int64_t max_micro_batches) {
  examples::ParallelFlags whole;
  whole.devices_per_node = devices;
  whole.dp = devices;
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout whole_layout, examples::ParallelLayout::Create(whole));
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions base,
                      examples::CompileOptionsFor(whole_layout, examples::CompileSettings{}, &dump));
  auto_parallel::SearchOptions uncalibrated;
  uncalibrated.price.cluster = base.cluster;
  uncalibrated.price.bucket_mb = base.bucket_mb;
  uncalibrated.price.register_count = base.register_count;
  uncalibrated.max_micro_batches = max_micro_batches;
  return uncalibrated;
}

}  // namespace oneflow::prediction
