#include "compiler/auto_parallel/search.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/auto_parallel/candidate.h"
#include "oneflow_core/status.h"
#include "sbp/collective_cost.h"

namespace oneflow::auto_parallel {
namespace {

bool Cheaper(const proto::AutoParallelPrediction& a, const proto::AutoParallelPrediction& b) {
  const double step_a = StepSeconds(a);
  const double step_b = StepSeconds(b);
  if (step_a != step_b) return step_a < step_b;
  return SimplerLayout(a.layout(), b.layout());
}

}  // namespace

std::string BytesText(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.2f %s (%d B)", value, kUnits[unit], bytes);
}

std::string EdgeText(const proto::AutoParallelEdge& edge) {
  return absl::StrCat(edge.unit(), " ", edge.tensor(), ": ", edge.codec().empty() ? "dense" : edge.codec(), " ",
                      FormatMilliseconds(edge.seconds()), ", dense ", FormatMilliseconds(edge.dense_seconds()),
                      edge.decision().empty() ? "" : ": ", edge.decision());
}

absl::StatusOr<SearchResult> Search(const ModelProfile& profile, const SearchOptions& options) {
  const int64_t devices = options.price.cluster.num_nodes() * options.price.cluster.devices_per_node();
  if (devices < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the cluster has no device: --nodes=", options.price.cluster.num_nodes(),
                                                   " x --devices_per_node=", options.price.cluster.devices_per_node()));
  }
  if (options.device_memory < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device_memory=", options.device_memory, " is negative; give bytes > 0 (0: no limit)"));
  }
  SearchResult result;
  EdgePriceCache cache(options.price);
  EdgePriceCache* edge_cache = options.cache_edge_prices ? &cache : nullptr;
  auto price = [&](const proto::AutoParallelLayout& layout) {
    absl::StatusOr<proto::AutoParallelPrediction> prediction = PriceLayout(profile, options.price, layout, edge_cache);
    if (!prediction.ok()) return false;  // a layout the enumeration could not rule out cheaply
    ++result.candidates;
    if (options.device_memory > 0 && prediction->peak_bytes() > options.device_memory) {
      result.over_memory.push_back(*std::move(prediction));
    } else {
      result.fitting.push_back(*std::move(prediction));
    }
    return true;
  };
  for (const proto::AutoParallelLayout& layout : EnumerateLayouts(profile, devices, options.max_micro_batches)) {
    if (options.max_pipeline_stages > 0 && layout.pp() > options.max_pipeline_stages) continue;
    if (!price(layout) || !options.search_stage_cuts || layout.pp() <= 1) continue;
    absl::StatusOr<std::optional<std::vector<int64_t>>> cuts =
        ChooseStageBlocks(profile, options.price, layout, options.device_memory, edge_cache);
    if (!cuts.ok() || !cuts->has_value()) continue;
    proto::AutoParallelLayout cut = layout;
    for (int64_t blocks : **cuts) cut.add_stage_blocks(blocks);
    if (price(cut)) ++result.cut_layouts;
  }
  result.edges_planned = cache.misses();
  result.edges_reused = cache.hits();
  if (result.candidates == 0) {
    return absl::InvalidArgumentError(absl::StrCat("no layout of '", profile.job_name, "' fits ", devices,
                                                   " devices: the batch of ", profile.batch_rows,
                                                   " rows must divide by the data-parallel degree"));
  }
  std::sort(result.fitting.begin(), result.fitting.end(), Cheaper);
  std::sort(result.over_memory.begin(), result.over_memory.end(), Cheaper);
  result.near_tie_fraction = std::max(0.0, options.near_tie_fraction);
  if (!result.fitting.empty() && options.near_tie_fraction > 0) {
    // The near tie: the simplest layout the model cannot tell from the cheapest goes first.
    const double within = StepSeconds(result.fitting.front()) * (1 + options.near_tie_fraction);
    size_t simplest = 0;
    for (size_t i = 1; i < result.fitting.size() && StepSeconds(result.fitting[i]) <= within; ++i) {
      if (SimplerFamily(result.fitting[i].layout(), result.fitting[simplest].layout())) simplest = i;
    }
    std::rotate(result.fitting.begin(), result.fitting.begin() + static_cast<std::ptrdiff_t>(simplest),
                result.fitting.begin() + static_cast<std::ptrdiff_t>(simplest) + 1);
  }
  if (result.fitting.empty()) {
    const proto::AutoParallelPrediction* smallest = &result.over_memory.front();
    for (const proto::AutoParallelPrediction& prediction : result.over_memory) {
      if (prediction.peak_bytes() < smallest->peak_bytes()) smallest = &prediction;
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "--device_memory=", BytesText(options.device_memory), " is below every layout's predicted peak (",
        result.candidates, " layouts of '", profile.job_name, "' on ", devices, " devices); the smallest is ",
        BytesText(smallest->peak_bytes()), ", with ", LayoutFlags(smallest->layout()),
        "; give at least that much, or more devices"));
  }
  return result;
}

std::string WhyLost(const proto::AutoParallelPrediction& alternative, const proto::AutoParallelPrediction& chosen,
                    int64_t device_memory, double near_tie_fraction) {
  const std::string what = LayoutDifference(alternative.layout(), chosen.layout());
  if (device_memory > 0 && alternative.peak_bytes() > device_memory) {
    return absl::StrCat(what, ": peak ", BytesText(alternative.peak_bytes()), " > --device_memory=",
                        BytesText(device_memory));
  }
  const double step = StepSeconds(alternative);
  const double reference = StepSeconds(chosen);
  if (step == reference) return absl::StrCat(what, ": same predicted step; the simpler layout wins the tie");
  if (step < reference) {
    // Ahead of the chosen one only within the near tie (Search).
    return absl::StrCat(what, ": ", absl::StrFormat("%+.1f%%", 100.0 * (step - reference) / reference),
                        " step, within the ", absl::StrFormat("%g", 100.0 * near_tie_fraction),
                        "% the model cannot tell apart: the simpler layout wins");
  }
  const std::pair<const char*, double> parts[] = {
      {"compute", alternative.compute_seconds() - chosen.compute_seconds()},
      {"exposed communication",
       alternative.exposed_communication_seconds() - chosen.exposed_communication_seconds()},
      {"bubble", alternative.bubble_seconds() - chosen.bubble_seconds()}};
  const auto* worst = &parts[0];
  for (const auto& part : parts) {
    if (part.second > worst->second) worst = &part;
  }
  const double percent = reference > 0 ? 100.0 * (step - reference) / reference : 0;
  return absl::StrCat(what, ": ", absl::StrFormat("%+.0f%%", percent), " step: ", worst->first, " +",
                      FormatMilliseconds(worst->second));
}

proto::AutoParallelDecision DecisionRecord(const SearchResult& result, size_t chosen, int64_t device_memory,
                                           int alternatives,
                                           const std::vector<proto::AutoParallelPrediction>& refused) {
  proto::AutoParallelDecision decision;
  const proto::AutoParallelPrediction& winner = result.fitting[chosen];
  *decision.mutable_chosen() = winner;
  decision.set_device_memory(device_memory);
  decision.set_candidates(result.candidates);
  decision.set_over_memory(static_cast<int64_t>(result.over_memory.size()));
  int added = 0;
  for (size_t i = chosen + 1; i < result.fitting.size() && added < alternatives; ++i, ++added) {
    proto::AutoParallelPrediction* alternative = decision.add_alternatives();
    *alternative = result.fitting[i];
    alternative->set_lost_because(WhyLost(*alternative, winner, device_memory, result.near_tie_fraction));
  }
  added = 0;
  for (const proto::AutoParallelPrediction& over : result.over_memory) {
    if (added >= alternatives || StepSeconds(over) > StepSeconds(winner)) break;
    proto::AutoParallelPrediction* alternative = decision.add_alternatives();
    *alternative = over;
    alternative->set_lost_because(WhyLost(over, winner, device_memory, result.near_tie_fraction));
    ++added;
  }
  for (const proto::AutoParallelPrediction& prediction : refused) *decision.add_refused() = prediction;
  return decision;
}

}  // namespace oneflow::auto_parallel
