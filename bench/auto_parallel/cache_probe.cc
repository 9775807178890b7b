// How much faster a memory-bound kernel runs on data still in the core's cache, for the
// cost model's cache term (sbp/compute_cost.h; docs/auto_parallel_measurements.md,
// "Recomputation and the cache (session 47)"). Softmax backward (dx = y (dy - sum(dy y))
// per row) over the bench gpt's per-device attention probabilities (8 rows x 4 heads x 64 x
// 64 f32, 512 KiB per tensor) reads y and dy produced just before (gap 0: cached) or after
// `gap` bytes of other copies (evicted from the L2), median of 201 calls; then memcpy of a
// range of sizes, the reference the calibrated rates are (64 MiB: "memory", within the L2:
// "memory_cached"). JSON lines; no flags:
//   bazel run -c opt //bench/auto_parallel:cache_probe
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// A softmax-like forward output and its incoming gradient.
void Produce(float* y, float* dy, size_t n, float seed) {
  for (size_t i = 0; i < n; ++i) {
    y[i] = 1.0f / 64 + seed * 1e-6f * static_cast<float>(i & 63);
    dy[i] = 0.5f - seed * 1e-7f * static_cast<float>(i & 31);
  }
}

void SoftmaxGrad(const float* y, const float* dy, float* dx, size_t rows, size_t columns) {
  for (size_t r = 0; r < rows; ++r) {
    const float* y_row = y + r * columns;
    const float* dy_row = dy + r * columns;
    float* dx_row = dx + r * columns;
    float dot = 0;
    for (size_t c = 0; c < columns; ++c) dot += y_row[c] * dy_row[c];
    for (size_t c = 0; c < columns; ++c) dx_row[c] = y_row[c] * (dy_row[c] - dot);
  }
}

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

int main() {
  const size_t columns = 64, rows = 8 * 4 * 64, n = rows * columns;
  std::vector<float> y(n), dy(n), dx(n);
  const size_t other_elements = (size_t{64} << 20) / sizeof(float);
  std::vector<float> from(other_elements, 1), to(other_elements, 2);
  double sink = 0;  // keeps the results live
  for (size_t gap_mib : {0, 1, 2, 4, 8, 32, 64}) {
    std::vector<double> times;
    for (int call = 0; call < 201; ++call) {
      Produce(y.data(), dy.data(), n, static_cast<float>(call));
      const size_t gap = gap_mib << 20;  // bytes read + written in between
      if (gap > 0) std::memcpy(to.data(), from.data(), gap / 2);
      const Clock::time_point start = Clock::now();
      SoftmaxGrad(y.data(), dy.data(), dx.data(), rows, columns);
      times.push_back(Seconds(start));
      sink += dx[static_cast<size_t>(call) % n];
    }
    std::sort(times.begin(), times.end());
    std::printf(
        "{\"bench\":\"cache_probe_softmax_grad\",\"tensor_bytes\":%zu,\"gap_bytes\":%zu,\"median_s\":%.4g,"
        "\"bytes_per_second\":%.4g}\n",
        n * sizeof(float), gap_mib << 20, times[100], 3.0 * n * sizeof(float) / times[100]);
  }
  for (size_t kib : {256, 512, 1024, 2048, 4096, 16384, 65536}) {
    const size_t bytes = kib << 10;
    std::vector<double> times;
    for (int call = 0; call < 101; ++call) {
      const Clock::time_point start = Clock::now();
      std::memcpy(to.data(), from.data(), bytes);
      times.push_back(Seconds(start));
      sink += to[static_cast<size_t>(call)];
    }
    std::sort(times.begin(), times.end());
    std::printf("{\"bench\":\"cache_probe_memcpy\",\"bytes\":%zu,\"median_s\":%.4g,\"bytes_per_second\":%.4g}\n",
                bytes, times[50], 2.0 * bytes / times[50]);
  }
  std::fprintf(stderr, "checksum %g\n", sink);
  return 0;
}
