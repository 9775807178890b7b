#include "compiler/auto_parallel/pipeline_period.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace oneflow::auto_parallel {

absl::StatusOr<std::vector<double>> PipelineStageSeconds(const std::vector<double>& stage_seconds,
                                                         const std::vector<PipelineCutTransfers>& cuts) {
  const size_t pp = stage_seconds.size();
  if (pp == 0) return absl::InvalidArgumentError("a pipeline needs at least one stage");
  if (cuts.size() != pp) {
    return absl::InvalidArgumentError(
        absl::StrCat("the transfers of ", pp, " stages are given for ", cuts.size(), " cuts; give ", pp, " (index 0 unused)"));
  }
  for (size_t s = 0; s < pp; ++s) {
    const PipelineCutTransfers& cut = cuts[s];
    if (stage_seconds[s] < 0 || cut.forward_seconds < 0 || cut.backward_seconds < 0 || cut.forward_link_seconds < 0 ||
        cut.backward_link_seconds < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage ", s, ": a negative time (stage ", stage_seconds[s], " s; transfers forward ", cut.forward_seconds,
          " s, backward ", cut.backward_seconds, " s, links ", cut.forward_link_seconds, " s and ",
          cut.backward_link_seconds, " s)"));
    }
  }
  // The bound of cut e (1 .. pp - 1): its two-micro-batch loop and its link's transfers.
  auto cut_bound = [&](size_t e) {
    const PipelineCutTransfers& cut = cuts[e];
    const double loop = (stage_seconds[e - 1] + stage_seconds[e] + cut.forward_seconds + cut.backward_seconds) / 2;
    return std::max({loop, cut.forward_link_seconds, cut.backward_link_seconds});
  };
  std::vector<double> seconds(stage_seconds);
  for (size_t s = 0; s < pp; ++s) {
    if (s > 0) seconds[s] = std::max(seconds[s], cut_bound(s));
    if (s + 1 < pp) seconds[s] = std::max(seconds[s], cut_bound(s + 1));
  }
  return seconds;
}

std::vector<double> PipelineTransferCallSeconds(int64_t pp, double call_seconds) {
  std::vector<double> seconds(static_cast<size_t>(std::max<int64_t>(pp, 0)), 0);
  for (int64_t s = 0; s < pp; ++s) {
    const int64_t neighbours = (s > 0 ? 1 : 0) + (s + 1 < pp ? 1 : 0);
    seconds[static_cast<size_t>(s)] = static_cast<double>(2 * neighbours) * call_seconds;
  }
  return seconds;
}

}  // namespace oneflow::auto_parallel
