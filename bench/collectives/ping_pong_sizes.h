// The sizes and round-trip counts ping_pong_bench and its MPI reference share, so every
// implementation makes the same calls.
#ifndef BENCH_COLLECTIVES_PING_PONG_SIZES_H_
#define BENCH_COLLECTIVES_PING_PONG_SIZES_H_

#include <cstdint>
#include <vector>

#include "bench/collectives/size_sweep.h"

namespace oneflow {
namespace bench {

constexpr int kPingPongWarmups = 3;

// Bytes each way: 4 KiB to 4 MiB in powers of 4 (a pipeline's activations between
// stages are in this range: 192 KiB to 1.5 MiB on the hosts sweep's gpt).
inline std::vector<int64_t> PingPongSizes() { return PowersOfFourBytes(4 << 10, int64_t{4} << 20); }

// About 64 MiB each way per size (at least 20 round trips, at most 400), times `scale`.
inline int64_t PingPongRoundTrips(int64_t bytes, double scale) {
  return CallsForBytes(bytes, int64_t{64} << 20, 20, 400, scale, 5);
}

}  // namespace bench
}  // namespace oneflow

#endif  // BENCH_COLLECTIVES_PING_PONG_SIZES_H_
