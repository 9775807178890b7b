#include "compiler/auto_parallel/stage_cuts.h"

#include <algorithm>
#include <limits>

namespace oneflow::auto_parallel {

std::vector<int64_t> BalancedStageBlocks(int64_t blocks, int64_t stages) {
  std::vector<int64_t> counts(stages, 0);
  for (int64_t block = 0; block < blocks; ++block) ++counts[((block + 1) * stages - 1) / blocks];
  return counts;
}

std::optional<std::vector<int64_t>> MinimizeSlowestStage(const StageCutCosts& costs) {
  const int64_t stages = static_cast<int64_t>(costs.seconds.size());
  if (stages < 1 || costs.bytes.size() != costs.seconds.size()) return std::nullopt;
  const int64_t segments = static_cast<int64_t>(costs.seconds[0].size());
  if (segments < stages) return std::nullopt;
  for (int64_t s = 0; s < stages; ++s) {
    if (static_cast<int64_t>(costs.seconds[s].size()) != segments ||
        static_cast<int64_t>(costs.bytes[s].size()) != segments) {
      return std::nullopt;
    }
  }
  // Prefix sums per stage: segments [j, k) on stage s cost seconds_sum[s][k] - seconds_sum[s][j].
  std::vector<std::vector<double>> seconds_sum(stages, std::vector<double>(segments + 1, 0));
  std::vector<std::vector<double>> bytes_sum(stages, std::vector<double>(segments + 1, 0));
  for (int64_t s = 0; s < stages; ++s) {
    for (int64_t k = 0; k < segments; ++k) {
      seconds_sum[s][k + 1] = seconds_sum[s][k] + costs.seconds[s][k];
      bytes_sum[s][k + 1] = bytes_sum[s][k] + costs.bytes[s][k];
    }
  }
  const double infinity = std::numeric_limits<double>::infinity();
  // slowest[s][k]: the least slowest stage of segments [0, k) on stages [0, s]; start[s][k]
  // the first segment of stage s in that answer.
  std::vector<std::vector<double>> slowest(stages, std::vector<double>(segments + 1, infinity));
  std::vector<std::vector<int64_t>> start(stages, std::vector<int64_t>(segments + 1, -1));
  auto fits = [&](int64_t s, int64_t j, int64_t k) {
    return costs.memory_limit <= 0 || bytes_sum[s][k] - bytes_sum[s][j] <= costs.memory_limit;
  };
  for (int64_t k = 1; k <= segments - (stages - 1); ++k) {
    if (fits(0, 0, k)) {
      slowest[0][k] = seconds_sum[0][k];
      start[0][k] = 0;
    }
  }
  for (int64_t s = 1; s < stages; ++s) {
    // Stage s holds segments [j, k): at least one before it per earlier stage, at least
    // one after it per later stage.
    for (int64_t k = s + 1; k <= segments - (stages - 1 - s); ++k) {
      for (int64_t j = s; j < k; ++j) {
        if (slowest[s - 1][j] == infinity || !fits(s, j, k)) continue;
        const double candidate = std::max(slowest[s - 1][j], seconds_sum[s][k] - seconds_sum[s][j]);
        // Ties (within rounding) keep the smaller j: fewer blocks on the earlier stages.
        if (candidate < slowest[s][k] * (1 - 1e-9)) {
          slowest[s][k] = candidate;
          start[s][k] = j;
        }
      }
    }
  }
  if (slowest[stages - 1][segments] == infinity) return std::nullopt;
  std::vector<int64_t> counts(stages, 0);
  int64_t end = segments;
  for (int64_t s = stages - 1; s >= 0; --s) {
    const int64_t first = start[s][end];
    counts[s] = end - first;
    end = first;
  }
  return counts;
}

}  // namespace oneflow::auto_parallel
