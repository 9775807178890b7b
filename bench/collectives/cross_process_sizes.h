// The sizes and iteration counts cross_process_bench and its MPI reference share, so
// every implementation runs the same calls: each rank must make the same number of calls.
#ifndef BENCH_COLLECTIVES_CROSS_PROCESS_SIZES_H_
#define BENCH_COLLECTIVES_CROSS_PROCESS_SIZES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace oneflow {
namespace bench {

constexpr int kWarmupIterations = 2;

// Bytes per rank: 4 KiB to 64 MiB in powers of 4.
inline std::vector<int64_t> CrossProcessSizes() {
  std::vector<int64_t> sizes;
  for (int64_t bytes = 4 << 10; bytes <= (int64_t{64} << 20); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

// About 256 MiB of all-reduce per size (at least 4 calls, at most 2000), times `scale`.
inline int64_t CrossProcessIterations(int64_t bytes, double scale) {
  const int64_t base = std::clamp<int64_t>((int64_t{256} << 20) / bytes, 4, 2000);
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(base) * scale));
}

}  // namespace bench
}  // namespace oneflow

#endif  // BENCH_COLLECTIVES_CROSS_PROCESS_SIZES_H_
