// The shape every collective bench's size sweep shares: sizes in powers of 4, and a call
// count per size that moves about the same bytes at every size within bounds, so that
// each implementation (ours, MPI's) makes the same calls and every rank the same number.
#ifndef BENCH_COLLECTIVES_SIZE_SWEEP_H_
#define BENCH_COLLECTIVES_SIZE_SWEEP_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace oneflow {
namespace bench {

// min_bytes, 4 x min_bytes, ... up to max_bytes.
inline std::vector<int64_t> PowersOfFourBytes(int64_t min_bytes, int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

// About `total_bytes` / `bytes` calls, clamped to [min_calls, max_calls], times `scale`,
// at least `scaled_floor`.
inline int64_t CallsForBytes(int64_t bytes, int64_t total_bytes, int64_t min_calls, int64_t max_calls, double scale,
                             int64_t scaled_floor) {
  const int64_t base = std::clamp<int64_t>(total_bytes / bytes, min_calls, max_calls);
  return std::max<int64_t>(scaled_floor, static_cast<int64_t>(static_cast<double>(base) * scale));
}

}  // namespace bench
}  // namespace oneflow

#endif  // BENCH_COLLECTIVES_SIZE_SWEEP_H_
