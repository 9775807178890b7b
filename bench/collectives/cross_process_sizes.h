// The sizes and iteration counts cross_process_bench and its MPI reference share, so
// every implementation runs the same calls: each rank must make the same number of calls.
#ifndef BENCH_COLLECTIVES_CROSS_PROCESS_SIZES_H_
#define BENCH_COLLECTIVES_CROSS_PROCESS_SIZES_H_

#include <cstdint>
#include <vector>

#include "bench/collectives/size_sweep.h"

namespace oneflow {
namespace bench {

constexpr int kWarmupIterations = 2;

// Bytes per rank: 4 KiB to 64 MiB in powers of 4.
inline std::vector<int64_t> CrossProcessSizes() { return PowersOfFourBytes(4 << 10, int64_t{64} << 20); }

// About 256 MiB of all-reduce per size (at least 4 calls, at most 2000), times `scale`.
inline int64_t CrossProcessIterations(int64_t bytes, double scale) {
  return CallsForBytes(bytes, int64_t{256} << 20, 4, 2000, scale, 1);
}

}  // namespace bench
}  // namespace oneflow

#endif  // BENCH_COLLECTIVES_CROSS_PROCESS_SIZES_H_
