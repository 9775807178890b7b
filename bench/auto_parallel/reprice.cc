#include "bench/auto_parallel/reprice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/auto_parallel/gpt_profile.h"
#include "bench/auto_parallel/prediction_statistics.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/auto_parallel/search.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "oneflow_core/status.h"
#include "sbp/calibration.h"

namespace oneflow::prediction {
namespace {

using auto_parallel::LayoutName;
using auto_parallel::StepSeconds;

// The value after "key": in one of this bench's JSON lines (the first such key: the
// summaries' nested arrays hold none of the keys read here), or nullopt.
std::optional<std::string> Field(absl::string_view line, absl::string_view key) {
  const std::string quoted = absl::StrCat("\"", key, "\":");
  const size_t at = line.find(quoted);
  if (at == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = line.substr(at + quoted.size());
  if (absl::ConsumePrefix(&rest, "\"")) {
    const size_t end = rest.find('"');
    if (end == absl::string_view::npos) return std::nullopt;
    return std::string(rest.substr(0, end));
  }
  const size_t end = rest.find_first_of(",}");
  return std::string(rest.substr(0, end));
}

absl::StatusOr<double> NumberField(absl::string_view line, absl::string_view key, absl::string_view what) {
  const std::optional<std::string> text = Field(line, key);
  double value = 0;
  if (!text.has_value() || !absl::SimpleAtod(*text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("--reprice: the ", what, " line has no number \"", key, "\""));
  }
  return value;
}

// "dp=2 tp=1 pp=4 micro_batches=1 zero=0 recompute=none" (LayoutName, with
// "pp_schedule=zb" after pp for ZB-H1) back to a layout.
absl::StatusOr<proto::AutoParallelLayout> ParseLayoutName(absl::string_view name) {
  proto::AutoParallelLayout layout;
  int found = 0;
  for (absl::string_view part : absl::StrSplit(name, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> field = absl::StrSplit(part, absl::MaxSplits('=', 1));
    int64_t value = 0;
    const bool number = absl::SimpleAtoi(field.second, &value);
    if (field.first == "recompute") {
      for (proto::RecomputeMode mode : {proto::RECOMPUTE_NONE, proto::RECOMPUTE_SELECTIVE, proto::RECOMPUTE_FULL}) {
        if (auto_parallel::RecomputeName(mode) == field.second) {
          layout.set_recompute(mode);
          ++found;
        }
      }
    } else if (number && field.first == "dp") {
      layout.set_dp(value), ++found;
    } else if (number && field.first == "tp") {
      layout.set_tp(value), ++found;
    } else if (number && field.first == "pp") {
      layout.set_pp(value), ++found;
    } else if (number && field.first == "micro_batches") {
      layout.set_micro_batches(value), ++found;
    } else if (number && field.first == "zero") {
      layout.set_zero(static_cast<int32_t>(value)), ++found;
    } else if (field.first == "pp_schedule") {
      absl::StatusOr<proto::PipelineSchedule> schedule = ParsePipelineSchedule(field.second);
      if (!schedule.ok()) return schedule.status();
      layout.set_schedule(*schedule);
    }
  }
  if (found != 6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reprice: layout '", name, "' is not dp=N tp=N pp=N micro_batches=N zero=N recompute=none|selective|full"));
  }
  return layout;
}

}  // namespace

absl::Status RepriceCluster(const examples::GptConfig& config, int64_t devices, int64_t max_micro_batches,
                            const std::vector<std::string>& lines, const std::string& file,
                            const std::string& memory_cached_file) {
  // The run's terms: its calibration, and the last (final) rates, shared-host fit and
  // call cost it printed for this cluster.
  const std::string* calibration = nullptr;
  const std::string* rates = nullptr;
  const std::string* shared = nullptr;
  const std::string* call_cost = nullptr;
  const std::string* summary = nullptr;
  std::vector<const std::string*> rows;
  for (const std::string& line : lines) {
    const std::optional<std::string> bench = Field(line, "bench");
    const std::optional<std::string> count = Field(line, "devices");
    if (!bench.has_value() || count != absl::StrCat(devices)) continue;
    if (*bench == "auto_parallel_calibration") calibration = &line;
    if (*bench == "auto_parallel_model_rates") rates = &line;
    if (*bench == "auto_parallel_shared_host") shared = &line;
    if (*bench == "auto_parallel_call_cost") call_cost = &line;
    if (*bench == "auto_parallel_prediction_summary") summary = &line;
    if (*bench == "auto_parallel_prediction" && Field(line, "measured_ms").has_value()) rows.push_back(&line);
  }
  if (calibration == nullptr || rates == nullptr || shared == nullptr || rows.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reprice: ", file, " has no sweep of ", devices, " devices to price again (its calibration, model rates "
        "and shared-host lines and 3 or more measured layouts, as prediction_bench prints them)"));
  }
  // The probes compiled as the run compiled them ("sbp_search" in its summary line since
  // session 52, absent before: the greedy per-op choice; the search's call cost
  // "sbp_search_call_seconds" since session 63, absent before: none).
  examples::CompileSettings settings;
  settings.sbp_search = summary != nullptr && Field(*summary, "sbp_search") == std::optional<std::string>("true");
  settings.collective_call_seconds = 0;
  if (summary != nullptr && Field(*summary, "sbp_search_call_seconds").has_value()) {
    OF_ASSIGN_OR_RETURN(settings.collective_call_seconds, NumberField(*summary, "sbp_search_call_seconds", "summary"));
  }
  OF_ASSIGN_OR_RETURN(const auto_parallel::ModelProfile profile,
                      CountedProfile(config, devices, max_micro_batches, settings));
  OF_ASSIGN_OR_RETURN(auto_parallel::SearchOptions options, UncalibratedOptions(devices, max_micro_batches));
  proto::Cluster& cluster = options.price.cluster;
  OF_ASSIGN_OR_RETURN(const double latency, NumberField(*calibration, "intra_node_latency_s", "calibration"));
  OF_ASSIGN_OR_RETURN(const double bandwidth, NumberField(*calibration, "intra_node_bytes_per_second", "calibration"));
  OF_ASSIGN_OR_RETURN(const double call, NumberField(*calibration, "collective_call_seconds", "calibration"));
  OF_ASSIGN_OR_RETURN(const double cores, NumberField(*calibration, "host_cores", "calibration"));
  OF_ASSIGN_OR_RETURN(const double gemm, NumberField(*rates, "gemm_flops_per_second", "model rates"));
  OF_ASSIGN_OR_RETURN(const double memory, NumberField(*rates, "memory_bytes_per_second", "model rates"));
  OF_ASSIGN_OR_RETURN(const double act, NumberField(*shared, "act_seconds", "shared-host"));
  OF_ASSIGN_OR_RETURN(const double boxing_act, NumberField(*shared, "boxing_act_seconds", "shared-host"));
  OF_ASSIGN_OR_RETURN(const double share, NumberField(*shared, "host_core_share", "shared-host"));
  cluster.set_intra_node_latency(latency);
  cluster.set_intra_node_bandwidth(bandwidth);
  cluster.set_gemm_flops_per_second(gemm);
  cluster.set_memory_bytes_per_second(memory);
  // The cached memory rate, scaled by the run's model rates like its memory rate.
  OF_ASSIGN_OR_RETURN(const double measured_memory,
                      NumberField(*calibration, "memory_bytes_per_second", "calibration"));
  double cached = 0;
  double cache_bytes = 0;
  if (Field(*calibration, "memory_cached_bytes_per_second").has_value()) {
    OF_ASSIGN_OR_RETURN(cached, NumberField(*calibration, "memory_cached_bytes_per_second", "calibration"));
    OF_ASSIGN_OR_RETURN(cache_bytes, NumberField(*calibration, "cache_bytes", "calibration"));
  } else if (!memory_cached_file.empty()) {
    OF_ASSIGN_OR_RETURN(const Calibration measured, ReadCalibrationFile(memory_cached_file));
    cached = measured.compute.memory_cached_bytes_per_second;
    cache_bytes = measured.compute.cache_bytes;
  }
  options.price.memory_cached_bytes_per_second = measured_memory > 0 ? cached * memory / measured_memory : 0;
  options.price.cache_bytes = cache_bytes;
  options.price.act_seconds = act;
  // The shared-host line prints -1 when the two-kind fit found no boxing act cost.
  options.price.boxing_act_seconds = boxing_act >= 0 ? std::optional<double>(boxing_act) : std::nullopt;
  options.price.host_cores = static_cast<int64_t>(cores);
  options.price.host_core_share = share;
  options.price.collective_call_seconds = call;
  if (call_cost != nullptr) {
    OF_ASSIGN_OR_RETURN(options.price.collective_call_seconds, NumberField(*call_cost, "least_s", "call cost"));
  }
  std::vector<double> recorded, predicted, measured, recorded_errors, errors;
  std::vector<std::string> names;
  for (const std::string* row : rows) {
    const std::optional<std::string> name = Field(*row, "layout");
    if (!name.has_value()) return absl::InvalidArgumentError("--reprice: a prediction line has no \"layout\"");
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelLayout layout, ParseLayoutName(*name));
    OF_ASSIGN_OR_RETURN(const double was, NumberField(*row, "predicted_ms", "prediction"));
    OF_ASSIGN_OR_RETURN(const double step, NumberField(*row, "measured_ms", "prediction"));
    OF_ASSIGN_OR_RETURN(const proto::AutoParallelPrediction now,
                        auto_parallel::PriceLayout(profile, options.price, layout));
    const double ms = 1e3 * StepSeconds(now);
    std::printf(
        "{\"bench\":\"auto_parallel_reprice\",\"devices\":%lld,\"layout\":\"%s\",\"recorded_predicted_ms\":%.4f,"
        "\"predicted_ms\":%.4f,\"compute_ms\":%.4f,\"exposed_communication_ms\":%.4f,\"bubble_ms\":%.4f,"
        "\"measured_ms\":%.4f,\"measured_over_predicted\":%.3f}\n",
        static_cast<long long>(devices), name->c_str(), was, ms, 1e3 * now.compute_seconds(),
        1e3 * now.exposed_communication_seconds(), 1e3 * now.bubble_seconds(), step, step / ms);
    names.push_back(*name);
    recorded.push_back(was);
    predicted.push_back(ms);
    measured.push_back(step);
    recorded_errors.push_back(std::abs(was - step) / step);
    errors.push_back(std::abs(ms - step) / step);
  }
  auto fastest = [](const std::vector<double>& values) {
    return static_cast<size_t>(std::min_element(values.begin(), values.end()) - values.begin());
  };
  OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult search, auto_parallel::Search(profile, options));
  const proto::AutoParallelPrediction& top = search.fitting.front();
  const size_t best = fastest(measured);
  std::printf(
      "{\"bench\":\"auto_parallel_reprice_summary\",\"devices\":%lld,\"file\":\"%s\",\"layouts\":%zu,"
      "\"recorded_median_abs_error\":%.4f,\"recorded_spearman\":%.4f,\"recorded_chosen\":\"%s\","
      "\"recorded_chosen_over_best\":%.3f,\"median_abs_error\":%.4f,\"spearman\":%.4f,\"chosen\":\"%s\","
      "\"chosen_over_best\":%.3f,\"best_measured\":\"%s\",\"search_first\":\"%s\",\"search_first_predicted_ms\":%.4f,"
      "\"collective_call_seconds\":%.4g}\n",
      static_cast<long long>(devices), absl::CHexEscape(file).c_str(), names.size(), Median(recorded_errors),
      Spearman(recorded, measured), names[fastest(recorded)].c_str(), measured[fastest(recorded)] / measured[best],
      Median(errors), Spearman(predicted, measured), names[fastest(predicted)].c_str(),
      measured[fastest(predicted)] / measured[best], names[best].c_str(), LayoutName(top.layout()).c_str(),
      1e3 * StepSeconds(top), options.price.collective_call_seconds);
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace oneflow::prediction
