// The sizes and round-trip counts ping_pong_bench and its MPI reference share, so every
// implementation makes the same calls.
#ifndef BENCH_COLLECTIVES_PING_PONG_SIZES_H_
#define BENCH_COLLECTIVES_PING_PONG_SIZES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace oneflow {
namespace bench {

constexpr int kPingPongWarmups = 3;

// Bytes each way: 4 KiB to 4 MiB in powers of 4 (a pipeline's activations between
// stages are in this range: 192 KiB to 1.5 MiB on the hosts sweep's gpt).
inline std::vector<int64_t> PingPongSizes() {
  std::vector<int64_t> sizes;
  for (int64_t bytes = 4 << 10; bytes <= (int64_t{4} << 20); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

// About 64 MiB each way per size (at least 20 round trips, at most 400), times `scale`.
inline int64_t PingPongRoundTrips(int64_t bytes, double scale) {
  const int64_t base = std::clamp<int64_t>((int64_t{64} << 20) / bytes, 20, 400);
  return std::max<int64_t>(5, static_cast<int64_t>(static_cast<double>(base) * scale));
}

}  // namespace bench
}  // namespace oneflow

#endif  // BENCH_COLLECTIVES_PING_PONG_SIZES_H_
