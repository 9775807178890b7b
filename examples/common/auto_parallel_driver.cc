#include "examples/common/auto_parallel_driver.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/kept_activations.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/search.h"
#include "compiler/auto_parallel/tp_boxings.h"
#include "compiler/compiler.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "plan/plan_checksum.h"
#include "oneflow_core/status.h"
#include "sbp/calibration.h"
#include "sbp/collective_cost.h"

namespace oneflow::examples {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}


// The model built for the probe layout and its profile.
struct Probe {
  ParallelLayout layout;
  proto::Job job;
  auto_parallel::ModelProfile profile;
};

// The probe layout: tp = 2 on two devices of one node when the cluster has two devices
// and the model accepts it, else one device.
absl::StatusOr<Probe> Profile(const JobBuilder& build, const ParallelFlags& cluster) {
  ParallelFlags probe;
  probe.intra_node_bandwidth = cluster.intra_node_bandwidth;
  probe.inter_node_bandwidth = cluster.inter_node_bandwidth;
  if (cluster.nodes * cluster.devices_per_node >= 2) {
    probe.devices_per_node = 2;
    probe.tp = 2;
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(probe);
    if (layout.ok()) {
      absl::StatusOr<proto::Job> job = build(*layout);
      if (job.ok()) {
        OF_ASSIGN_OR_RETURN(auto_parallel::ModelProfile profile, auto_parallel::ProfileJob(*job, 2));
        return Probe{*std::move(layout), *std::move(job), std::move(profile)};
      }
    }
  }
  probe.devices_per_node = 1;
  probe.tp = 1;
  OF_ASSIGN_OR_RETURN(ParallelLayout layout, ParallelLayout::Create(probe));
  OF_ASSIGN_OR_RETURN(proto::Job job, build(layout));
  OF_ASSIGN_OR_RETURN(auto_parallel::ModelProfile profile, auto_parallel::ProfileJob(job, 1));
  return Probe{std::move(layout), std::move(job), std::move(profile)};
}

// The host terms of --codec_calibration's file for the cluster's device count (its host
// line nearest it; without one, its machine line when the cluster's nodes share one
// machine), or nullopt without a file or without either. The file was read and checked by
// CompileOptionsFor already.
absl::StatusOr<std::optional<proto::AutoParallelHostTerms>> HostTerms(const CompileSettings& settings,
                                                                      int64_t nodes, int64_t devices) {
  const std::string& file = settings.compression.codec_calibration;
  if (file.empty()) return std::optional<proto::AutoParallelHostTerms>();
  absl::StatusOr<Calibration> calibration = ReadCalibrationFile(file);
  if (!calibration.ok()) {
    return absl::Status(calibration.status().code(),
                        absl::StrCat("--codec_calibration: ", calibration.status().message()));
  }
  return auto_parallel::HostTermsFor(*calibration, nodes, devices, file);
}

// The cached memory rate of --codec_calibration's file (its "memory_cached" line,
// sbp/compute_cost.h), when it has one. The file was read and checked by CompileOptionsFor.
absl::Status ApplyCachedMemoryRate(const CompileSettings& settings, auto_parallel::PriceOptions* price) {
  const std::string& file = settings.compression.codec_calibration;
  if (file.empty()) return absl::OkStatus();
  absl::StatusOr<Calibration> calibration = ReadCalibrationFile(file);
  if (!calibration.ok()) {
    return absl::Status(calibration.status().code(),
                        absl::StrCat("--codec_calibration: ", calibration.status().message()));
  }
  price->memory_cached_bytes_per_second = calibration->compute.memory_cached_bytes_per_second;
  price->cache_bytes = calibration->compute.cache_bytes;
  return absl::OkStatus();
}

int64_t PlannedPeak(const proto::Plan& plan) {
  int64_t peak = 0;
  for (const proto::DevicePlan& device : plan.devices()) peak = std::max(peak, device.peak_bytes());
  return peak;
}

// What a search and a priced hand layout share: the model's profile (with each unit's
// acts counted when the calibration has host lines), the price options of the cluster
// as every compile of it sees it, and the host terms they were priced with.
struct CostModel {
  Probe probe;
  auto_parallel::SearchOptions options;
  std::optional<proto::AutoParallelHostTerms> host_terms;
};

// A probe layout compiled (with `settings`), or nothing when the layout, the model or the
// compiler refuses it: a refused probe leaves its counts to another probe.
std::optional<proto::Plan> CompileProbe(const JobBuilder& build, const ParallelFlags& flags,
                                        const CompileSettings& settings) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  if (!layout.ok()) return std::nullopt;
  absl::StatusOr<proto::Job> job = build(*layout);
  if (!job.ok()) return std::nullopt;
  std::string dump;
  absl::StatusOr<CompileOptions> options = CompileOptionsFor(*layout, settings, &dump);
  if (!options.ok()) return std::nullopt;
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  if (!plan.ok()) return std::nullopt;
  return *std::move(plan);
}

}  // namespace

ParallelFlags FlagsForLayout(const ParallelFlags& cluster, const proto::AutoParallelLayout& layout) {
  ParallelFlags flags = cluster;
  flags.dp = layout.dp();
  flags.tp = layout.tp();
  flags.pp = layout.pp();
  flags.stage_blocks.assign(layout.stage_blocks().begin(), layout.stage_blocks().end());
  flags.micro_batches = layout.micro_batches();
  flags.zero = layout.zero();
  return flags;
}

CompileSettings SettingsForLayout(const CompileSettings& settings, const proto::AutoParallelLayout& layout) {
  CompileSettings for_layout = settings;
  for_layout.recompute = auto_parallel::RecomputeName(layout.recompute());
  for_layout.pp_schedule = std::string(PipelineScheduleName(layout.schedule()));
  for_layout.zero3_regather = !layout.zero3_kept();
  return for_layout;
}

absl::StatusOr<int64_t> CountActsOfLayoutFamilies(const JobBuilder& build, const ParallelFlags& cluster,
                                                  const CompileSettings& settings, int64_t max_micro_batches,
                                                  auto_parallel::ModelProfile* profile) {
  std::vector<proto::AutoParallelLayout> probes;
  for (const proto::AutoParallelLayout& layout :
       auto_parallel::EnumerateLayouts(*profile, cluster.nodes * cluster.devices_per_node, max_micro_batches)) {
    const proto::AutoParallelLayout probe = auto_parallel::ActFamilyProbe(layout);
    const std::string name = auto_parallel::LayoutName(probe);
    bool known = false;
    for (const proto::AutoParallelLayout& other : probes) known = known || auto_parallel::LayoutName(other) == name;
    if (!known) probes.push_back(probe);
  }
  CompileSettings probe_settings = settings;
  probe_settings.recompute = "none";
  int64_t counted = 0;
  for (const proto::AutoParallelLayout& probe : probes) {
    // The probe's devices on one node with the cluster's links (its plan's actors, not
    // its times, are what is counted).
    ParallelFlags flags = FlagsForLayout(cluster, probe);
    flags.nodes = 1;
    flags.devices_per_node = probe.dp() * probe.tp();
    probe_settings.zero3_regather = !probe.zero3_kept();
    const std::optional<proto::Plan> plan = CompileProbe(build, flags, probe_settings);
    if (!plan.has_value()) continue;
    OF_RETURN_IF_ERROR(auto_parallel::CountLayoutActs(*plan, probe, profile));
    ++counted;
  }
  OF_RETURN_IF_ERROR(CountFullRecomputationOfModel(build, cluster, settings, profile));
  return counted;
}

// Devices of the largest tp probe over several nodes (8: tp = 8 of one-device hosts).
constexpr int64_t kMostProbeDevices = 8;
// What the probes of CountTpBoxingsOfEachShape may compile in all, in forward ops x
// devices (a deterministic stand-in for their compile time): every shape of the examples'
// small models (the 2-block gpt: 68 forward ops, 7 probes on 4 devices); of a 48-block gpt
// (1448) on 8 x 8 the whole-batch tp = 4 and 8 and 2 micro-batches of tp = 2 and 4, which
// take its search from 0.9 to 2.4 s.
constexpr int64_t kProbeOpDevices = 30000;

absl::Status CountTpBoxingsOfEachShape(const JobBuilder& build, const ParallelFlags& cluster,
                                        const CompileSettings& settings, int64_t max_micro_batches,
                                        auto_parallel::ModelProfile* profile) {
  // A probe is one tp group placed as the layouts place it: within a node, or over whole
  // nodes with the cluster's links (the compiler chooses otherwise on slow links), with the
  // layout's micro-batches (the compiler decides on the logical micro-batch, whatever dp
  // splits it into, and otherwise for fewer rows). Profile's probe is the whole-batch tp = 2
  // of one node.
  const int64_t per_node = std::max<int64_t>(1, cluster.devices_per_node);
  std::set<std::pair<int64_t, int64_t>> shapes;  // (micro-batches, tp): the whole batch first
  for (const proto::AutoParallelLayout& layout :
       auto_parallel::EnumerateLayouts(*profile, cluster.nodes * cluster.devices_per_node, max_micro_batches)) {
    const int64_t tp = layout.tp();
    const int64_t micro_batches = std::max<int64_t>(1, layout.micro_batches());
    const bool in_node = tp <= per_node;
    const bool whole_nodes = tp % per_node == 0 && tp <= kMostProbeDevices;
    if (tp < 2 || (tp == 2 && in_node && micro_batches == 1) || !(in_node || whole_nodes)) continue;
    shapes.insert({micro_batches, tp});
  }
  int64_t forward_ops = 0;
  for (const auto_parallel::ProfileUnit& unit : profile->units) forward_ops += static_cast<int64_t>(unit.op_names.size());
  CompileSettings probe_settings = settings;
  probe_settings.recompute = "none";
  int64_t spent = 0;
  for (const auto& [micro_batches, tp] : shapes) {
    if (spent + forward_ops * tp > kProbeOpDevices) break;
    spent += forward_ops * tp;
    ParallelFlags flags;
    flags.intra_node_bandwidth = cluster.intra_node_bandwidth;
    flags.inter_node_bandwidth = cluster.inter_node_bandwidth;
    flags.nodes = tp <= per_node ? 1 : tp / per_node;
    flags.devices_per_node = std::min(tp, per_node);
    flags.tp = tp;
    flags.micro_batches = micro_batches;
    const std::optional<proto::Plan> plan = CompileProbe(build, flags, probe_settings);
    if (!plan.has_value()) continue;
    auto_parallel::ModelProfile shaped = *profile;
    shaped.tp_probe_profiles.clear();
    OF_RETURN_IF_ERROR(auto_parallel::CountTpBoxings(*plan, &shaped));
    OF_RETURN_IF_ERROR(auto_parallel::CountKeptActivations(*plan, tp, micro_batches, &shaped));
    profile->tp_probe_profiles[{tp, micro_batches}] =
        std::make_shared<const auto_parallel::ModelProfile>(std::move(shaped));
  }
  return absl::OkStatus();
}

absl::Status CountFullRecomputationOfModel(const JobBuilder& build, const ParallelFlags& cluster,
                                           const CompileSettings& settings, auto_parallel::ModelProfile* profile) {
  if (!profile->has_blocks) return absl::OkStatus();
  proto::AutoParallelLayout one_device;
  one_device.set_dp(1);
  one_device.set_tp(1);
  one_device.set_pp(1);
  one_device.set_micro_batches(1);
  ParallelFlags flags = FlagsForLayout(cluster, one_device);
  flags.nodes = 1;
  flags.devices_per_node = 1;
  CompileSettings full = settings;
  full.recompute = "full";
  auto compile = [&]() -> absl::StatusOr<proto::Plan> {
    OF_ASSIGN_OR_RETURN(const ParallelLayout layout, ParallelLayout::Create(flags));
    OF_ASSIGN_OR_RETURN(const proto::Job job, build(layout));
    std::string dump;
    OF_ASSIGN_OR_RETURN(const CompileOptions options, CompileOptionsFor(layout, full, &dump));
    return Compile(job, options);
  };
  const absl::StatusOr<proto::Plan> plan = compile();
  // Refused like a family probe: the profile stays uncounted, and the cost model prices
  // the whole forward again.
  if (!plan.ok()) return absl::OkStatus();
  return auto_parallel::CountFullRecomputation(*plan, profile);
}

namespace {

absl::StatusOr<CostModel> PrepareCostModel(const JobBuilder& build, const AutoParallelRequest& request) {
  OF_ASSIGN_OR_RETURN(Probe probe, Profile(build, request.cluster));
  // Whether ZeRO-3 re-gathers is each layout's (SettingsForLayout); the probes, which are
  // not stage 3 but for their family's, re-gather.
  CompileSettings settings = request.settings;
  settings.zero3_regather = true;
  // The cluster proto (links, calibration, compute rates) as every compile of it sees it.
  ParallelFlags whole = request.cluster;
  whole.dp = whole.nodes * whole.devices_per_node;
  whole.tp = whole.pp = whole.micro_batches = 1;
  whole.zero = 0;
  OF_ASSIGN_OR_RETURN(const ParallelLayout whole_layout, ParallelLayout::Create(whole));
  std::string unused_dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions base, CompileOptionsFor(whole_layout, settings, &unused_dump));
  auto_parallel::SearchOptions options;
  options.price.cluster = base.cluster;
  options.price.bucket_mb = base.bucket_mb;
  options.price.register_count = base.register_count;
  // --compression as every compile applies it: the search prices the tp edges' codecs.
  options.price.compression = base.compression;
  options.price.encoders = EncoderSettingsOf(base);
  options.price.training = TrainingSetupOf(probe.job, base);
  OF_RETURN_IF_ERROR(ApplyCachedMemoryRate(settings, &options.price));
  options.device_memory = request.device_memory;
  options.max_pipeline_stages = request.max_pipeline_stages;
  options.max_micro_batches = request.max_micro_batches;
  OF_ASSIGN_OR_RETURN(const std::optional<proto::AutoParallelHostTerms> host_terms,
                      HostTerms(settings, request.cluster.nodes,
                                request.cluster.nodes * request.cluster.devices_per_node));
  if (host_terms.has_value()) auto_parallel::ApplyHostTerms(*host_terms, &options.price);
  // The per-act cost needs the acts of each unit, tp's price the boxings the compiler
  // plans for it, and the peak the activations backward reads: the probe job compiled (as
  // a layout of the search would be, recomputing nothing), its actors counted (with host
  // terms), its tp boxings read (with hints) and its kept activations found.
  absl::StatusOr<proto::Plan> probe_plan = absl::FailedPreconditionError("the probe layout was not compiled");
  {
    std::string probe_dump;
    CompileSettings probe_settings = settings;
    probe_settings.recompute = "none";
    OF_ASSIGN_OR_RETURN(const CompileOptions probe_options,
                        CompileOptionsFor(probe.layout, probe_settings, &probe_dump));
    probe_plan = Compile(probe.job, probe_options);
    if (!probe_plan.ok()) {
      return absl::Status(probe_plan.status().code(),
                          absl::StrCat("--auto_parallel: compiling the probe layout to count its acts and tp "
                                       "boxings: ",
                                       probe_plan.status().message()));
    }
    if (probe.profile.tp_hinted) OF_RETURN_IF_ERROR(auto_parallel::CountTpBoxings(*probe_plan, &probe.profile));
    OF_RETURN_IF_ERROR(auto_parallel::CountKeptActivations(*probe_plan, probe.layout.tp(), 1, &probe.profile));
  }
  if (host_terms.has_value()) {
    OF_RETURN_IF_ERROR(auto_parallel::CountActs(*probe_plan, &probe.profile));
    // Layouts of other families run other actors (dp's gradient sync, ZeRO's collectives
    // and copies, the micro-batches' accumulators): each family's acts from its own probe.
    OF_RETURN_IF_ERROR(
        CountActsOfLayoutFamilies(build, request.cluster, settings, request.max_micro_batches, &probe.profile)
            .status());
  } else {
    // What full recomputation re-runs (with host terms CountActsOfLayoutFamilies counts
    // it too): uncounted, the model prices the whole forward again (the cluster
    // calibration of the emulated hosts' bench priced dp = 2's full recomputation at +9.4
    // ms where the copies the plan runs took 5.8 ms, traced; docs/auto_parallel_measurements.md, "Full
    // recomputation, traced").
    OF_RETURN_IF_ERROR(
        CountFullRecomputationOfModel(build, request.cluster, settings, &probe.profile));
  }
  if (probe.profile.tp_boxings_counted) {
    OF_RETURN_IF_ERROR(CountTpBoxingsOfEachShape(build, request.cluster, settings, request.max_micro_batches,
                                                  &probe.profile));
  }
  return CostModel{std::move(probe), std::move(options), host_terms};
}

}  // namespace

absl::StatusOr<AutoParallelResult> AutoParallelCompile(const JobBuilder& build, const AutoParallelRequest& request) {
  const auto search_start = std::chrono::steady_clock::now();
  OF_ASSIGN_OR_RETURN(CostModel model, PrepareCostModel(build, request));
  const auto_parallel::ModelProfile& profile = model.probe.profile;
  const auto_parallel::SearchOptions& options = model.options;
  const std::optional<proto::AutoParallelHostTerms>& host_terms = model.host_terms;
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult result, auto_parallel::Search(profile, options));
  AutoParallelResult out;
  out.search_seconds = SecondsSince(search_start);

  std::vector<proto::AutoParallelPrediction> refused;
  const size_t tries = std::min<size_t>(result.fitting.size(), std::max(1, request.max_compiles));
  for (size_t i = 0; i < tries; ++i) {
    const proto::AutoParallelPrediction& candidate = result.fitting[i];
    auto refuse = [&](const std::string& why) {
      proto::AutoParallelPrediction entry = candidate;
      entry.set_lost_because(why);
      refused.push_back(std::move(entry));
    };
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(FlagsForLayout(request.cluster, candidate.layout()));
    if (!layout.ok()) {
      refuse(absl::StrCat("the layout is refused: ", layout.status().message()));
      continue;
    }
    absl::StatusOr<proto::Job> job = build(*layout);
    if (!job.ok()) {
      refuse(absl::StrCat("the model refuses it: ", job.status().message()));
      continue;
    }
    const CompileSettings settings = SettingsForLayout(request.settings, candidate.layout());
    std::string dump;
    OF_ASSIGN_OR_RETURN(CompileOptions compile_options, CompileOptionsFor(*layout, settings, &dump));
    const auto compile_start = std::chrono::steady_clock::now();
    absl::StatusOr<proto::Plan> plan = Compile(*job, compile_options);
    if (!plan.ok()) {
      refuse(absl::StrCat("the compiler refuses it: ", plan.status().message()));
      continue;
    }
    const int64_t planned = PlannedPeak(*plan);
    if (request.device_memory > 0 && planned > request.device_memory) {
      refuse(absl::StrCat("planned peak ", auto_parallel::BytesText(planned), " > --device_memory=",
                          auto_parallel::BytesText(request.device_memory)));
      continue;
    }
    proto::AutoParallelDecision decision =
        auto_parallel::DecisionRecord(result, i, request.device_memory, request.alternatives, refused);
    decision.set_planned_peak_bytes(planned);
    // The chosen layout's priced edges (dense and compressed, which was taken), for
    // `oneflow inspect` beside the compiled plan's own boxing decisions.
    auto_parallel::PriceOptions recording = options.price;
    recording.record_edges = true;
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction recorded,
                        auto_parallel::PriceLayout(profile, recording, candidate.layout()));
    *decision.mutable_chosen()->mutable_edges() = recorded.edges();
    if (host_terms.has_value()) *decision.mutable_host_terms() = *host_terms;
    *plan->mutable_auto_parallel() = std::move(decision);
    OF_RETURN_IF_ERROR(SealPlan(&*plan));
    out.compile_seconds = SecondsSince(compile_start);
    out.layout = *std::move(layout);
    out.job = *std::move(job);
    out.plan = *std::move(plan);
    return out;
  }
  std::vector<std::string> lines;
  for (const proto::AutoParallelPrediction& entry : refused) {
    lines.push_back(absl::StrCat(auto_parallel::LayoutFlags(entry.layout()), ": ", entry.lost_because()));
  }
  return absl::FailedPreconditionError(absl::StrCat("--auto_parallel compiled the ", tries,
                                                    " cheapest of its layouts and none could be used:\n  ",
                                                    absl::StrJoin(lines, "\n  ")));
}

absl::StatusOr<ChosenStageCuts> ChooseStageCuts(const JobBuilder& build, const AutoParallelRequest& request,
                                                const proto::AutoParallelLayout& layout) {
  OF_ASSIGN_OR_RETURN(const CostModel model, PrepareCostModel(build, request));
  const auto_parallel::ModelProfile& profile = model.probe.profile;
  proto::AutoParallelLayout balanced = layout;
  balanced.clear_stage_blocks();
  OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction balanced_price,
                      auto_parallel::PriceLayout(profile, model.options.price, balanced));
  ChosenStageCuts chosen;
  chosen.balanced_step_seconds = chosen.chosen_step_seconds = auto_parallel::StepSeconds(balanced_price);
  OF_ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> counts,
                      auto_parallel::ChooseStageBlocks(profile, model.options.price, balanced, request.device_memory,
                                                       nullptr));
  if (!counts.has_value()) return chosen;
  proto::AutoParallelLayout cut = balanced;
  for (int64_t blocks : *counts) cut.add_stage_blocks(blocks);
  OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction cut_price,
                      auto_parallel::PriceLayout(profile, model.options.price, cut));
  // The DP minimizes the slowest stage; the whole model decides, as in the search (its
  // ties keep the balanced cut).
  const bool fits_better = request.device_memory > 0 && balanced_price.peak_bytes() > request.device_memory &&
                           cut_price.peak_bytes() <= request.device_memory;
  if (fits_better || auto_parallel::StepSeconds(cut_price) < chosen.balanced_step_seconds) {
    chosen.counts = *counts;
    chosen.chosen_step_seconds = auto_parallel::StepSeconds(cut_price);
  }
  return chosen;
}

absl::StatusOr<proto::AutoParallelDecision> PriceGivenLayout(const JobBuilder& build,
                                                             const AutoParallelRequest& request,
                                                             const proto::AutoParallelLayout& layout) {
  OF_ASSIGN_OR_RETURN(const CostModel model, PrepareCostModel(build, request));
  // Priced with its edges recorded, as the search records its chosen layout's.
  auto_parallel::PriceOptions recording = model.options.price;
  recording.record_edges = true;
  absl::StatusOr<proto::AutoParallelPrediction> prediction =
      auto_parallel::PriceLayout(model.probe.profile, recording, layout);
  if (!prediction.ok()) {
    return absl::Status(prediction.status().code(),
                        absl::StrCat("--predict_step: the cost model cannot price ", auto_parallel::LayoutFlags(layout),
                                     ": ", prediction.status().message()));
  }
  proto::AutoParallelDecision decision;
  *decision.mutable_chosen() = *std::move(prediction);
  decision.set_candidates(1);  // One layout priced; `oneflow inspect` shows it as chosen among 1.
  if (model.host_terms.has_value()) *decision.mutable_host_terms() = *model.host_terms;
  return decision;
}

std::string AutoParallelSummary(const proto::AutoParallelDecision& decision, double search_seconds, bool given_layout) {
  const proto::AutoParallelPrediction& chosen = decision.chosen();
  const std::string how = given_layout
                              ? absl::StrFormat("priced the given %s (--predict_step, not searched) in %.3f s",
                                                auto_parallel::LayoutFlags(chosen.layout()), search_seconds)
                              : absl::StrFormat("chose %s among %d layouts in %.3f s",
                                                auto_parallel::LayoutFlags(chosen.layout()), decision.candidates(),
                                                search_seconds);
  std::string text = absl::StrFormat(
      "auto-parallel: %s: predicted step %s (compute %s, exposed communication "
      "%s, bubble %s), predicted peak %s, planned peak %s",
      how,
      FormatMilliseconds(auto_parallel::StepSeconds(chosen)), FormatMilliseconds(chosen.compute_seconds()),
      FormatMilliseconds(chosen.exposed_communication_seconds()), FormatMilliseconds(chosen.bubble_seconds()),
      auto_parallel::BytesText(chosen.peak_bytes()), auto_parallel::BytesText(decision.planned_peak_bytes()));
  if (decision.device_memory() > 0) {
    absl::StrAppend(&text, " (--device_memory=", auto_parallel::BytesText(decision.device_memory()), ", ",
                    decision.over_memory(), " layouts over it)");
  }
  absl::StrAppend(&text, "\n  host terms: ", auto_parallel::HostTermsText(decision), "\n");
  for (const proto::AutoParallelEdge& edge : chosen.edges()) {
    absl::StrAppend(&text, "  edge: ", auto_parallel::EdgeText(edge), "\n");
  }
  for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) {
    absl::StrAppend(&text, "  lost: ", alternative.lost_because(), "\n");
  }
  for (const proto::AutoParallelPrediction& entry : decision.refused()) {
    absl::StrAppend(&text, "  refused: ", auto_parallel::LayoutName(entry.layout()), ": ", entry.lost_because(), "\n");
  }
  return text;
}

}  // namespace oneflow::examples
