#include "compiler/auto_parallel/pipeline_period.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace oneflow::auto_parallel {

absl::StatusOr<std::vector<double>> PipelineStageSeconds(const std::vector<double>& stage_seconds,
                                                         const std::vector<double>& forward_seconds,
                                                         const std::vector<double>& backward_seconds) {
  const size_t pp = stage_seconds.size();
  if (pp == 0) return absl::InvalidArgumentError("a pipeline needs at least one stage");
  if (forward_seconds.size() != pp || backward_seconds.size() != pp) {
    return absl::InvalidArgumentError(absl::StrCat("the transfers of ", pp, " stages are given for ",
                                                   forward_seconds.size(), " and ", backward_seconds.size(),
                                                   " cuts; give ", pp, " of each (index 0 unused)"));
  }
  for (size_t s = 0; s < pp; ++s) {
    if (stage_seconds[s] < 0 || forward_seconds[s] < 0 || backward_seconds[s] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("stage ", s, ": a negative time (stage ", stage_seconds[s],
                                                     " s, forward transfer ", forward_seconds[s],
                                                     " s, backward transfer ", backward_seconds[s], " s)"));
    }
  }
  // The bound of cut e (1 .. pp - 1): its two-micro-batch loop and its link's transfers.
  auto cut_bound = [&](size_t e) {
    const double loop = (stage_seconds[e - 1] + stage_seconds[e] + forward_seconds[e] + backward_seconds[e]) / 2;
    return std::max({loop, forward_seconds[e], backward_seconds[e]});
  };
  std::vector<double> seconds(stage_seconds);
  for (size_t s = 0; s < pp; ++s) {
    if (s > 0) seconds[s] = std::max(seconds[s], cut_bound(s));
    if (s + 1 < pp) seconds[s] = std::max(seconds[s], cut_bound(s + 1));
  }
  return seconds;
}

}  // namespace oneflow::auto_parallel
