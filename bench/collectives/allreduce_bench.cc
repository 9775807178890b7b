// In-process all-reduce bandwidth against single-thread memcpy, as JSON lines:
//   {"bench":"allreduce_inproc","ranks":2,"bytes":4096,"seconds":...,"bus_gbps":...,
//    "memcpy_gbps":...,"ratio":...}
// `seconds` is the time of one all-reduce of `bytes` per rank; `bus_gbps` is
// bytes * 2(n-1)/n / seconds / 1e9, the traffic of a ring all-reduce per rank, as
// nccl-tests reports it; `memcpy_gbps` is bytes / (time of one memcpy of `bytes`) / 1e9,
// measured in the same run, single-threaded; `ratio` = bus_gbps / memcpy_gbps.
//
// Each rank is a thread; the ranks' buffers live in one process, so both figures are
// bounded by the same memory system. With more ranks than cores (4 ranks on a 2-core
// machine) the ranks time-share the cores and the waits yield: expect lower numbers.
//
//   bazel run -c opt //bench/collectives:allreduce_bench -- --ranks=2,4 --min_seconds=0.3
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "oneflow_core/comm/in_process/communicator.h"

ABSL_FLAG(std::vector<std::string>, ranks, std::vector<std::string>({"2", "4"}),
          "group sizes to measure");
ABSL_FLAG(int64_t, min_bytes, 4 << 10, "smallest message, bytes per rank");
ABSL_FLAG(int64_t, max_bytes, 64 << 20, "largest message, bytes per rank (doubling)");
ABSL_FLAG(double, min_seconds, 0.3, "time each measurement runs for, at least");

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per all-reduce over `iterations` calls, as rank 0 sees it (every rank leaves a
// call within one barrier of the others). One untimed call first lines the ranks up.
double TimeAllReduce(InProcessGroup& group, std::vector<std::vector<float>>& inputs,
                     std::vector<std::vector<float>>& outputs, int64_t iterations) {
  double seconds = 0;
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < group.size(); ++rank) {
    threads.emplace_back([&, rank] {
      Communicator& communicator = group.communicator(rank);
      const int64_t count = static_cast<int64_t>(inputs[rank].size());
      CollectiveOptions options;
      options.description = "allreduce_bench";
      if (!communicator.AllReduce(inputs[rank].data(), outputs[rank].data(), count, options).ok())
        failed = true;
      const Clock::time_point start = Clock::now();
      for (int64_t i = 0; i < iterations; ++i) {
        const absl::Status status =
            communicator.AllReduce(inputs[rank].data(), outputs[rank].data(), count, options);
        if (!status.ok()) {
          std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
          failed = true;
          return;
        }
      }
      if (rank == 0) seconds = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (failed) std::exit(1);
  return seconds / iterations;
}

double TimeMemcpy(std::vector<char>& to, const std::vector<char>& from, int64_t iterations) {
  std::memcpy(to.data(), from.data(), from.size());
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    std::memcpy(to.data(), from.data(), from.size());
    // Keep the copies from being merged or dropped.
    asm volatile("" : : "r"(to.data()) : "memory");
  }
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

// Iterations for about `min_seconds`, from a short pilot of `pilot` seconds per call.
int64_t IterationsFor(double pilot) {
  const double wanted = absl::GetFlag(FLAGS_min_seconds) / std::max(pilot, 1e-9);
  return std::clamp<int64_t>(static_cast<int64_t>(wanted) + 1, 3, 1000000);
}

int Main() {
  const int64_t min_bytes = absl::GetFlag(FLAGS_min_bytes);
  const int64_t max_bytes = absl::GetFlag(FLAGS_max_bytes);
  std::fprintf(stderr, "allreduce_bench: %u hardware threads\n",
               std::thread::hardware_concurrency());
  std::vector<double> memcpy_seconds;  // per size, shared by every group size
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    std::vector<char> from(bytes, 1), to(bytes, 0);
    const int64_t iterations = IterationsFor(TimeMemcpy(to, from, 3));
    memcpy_seconds.push_back(TimeMemcpy(to, from, iterations));
  }
  for (const std::string& text : absl::GetFlag(FLAGS_ranks)) {
    const int64_t ranks = std::stoll(text);
    std::unique_ptr<InProcessGroup> group =
        std::move(InProcessGroup::Create(ranks, "bench")).value();
    size_t size_index = 0;
    for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2, ++size_index) {
      const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
      std::vector<std::vector<float>> inputs(ranks, std::vector<float>(count, 1.0f));
      std::vector<std::vector<float>> outputs(ranks, std::vector<float>(count, 0.0f));
      const int64_t iterations = IterationsFor(TimeAllReduce(*group, inputs, outputs, 3));
      const double seconds = TimeAllReduce(*group, inputs, outputs, iterations);
      const double bus_gbps = bytes * 2.0 * (ranks - 1) / ranks / seconds / 1e9;
      const double memcpy_gbps = bytes / memcpy_seconds[size_index] / 1e9;
      std::printf(
          "{\"bench\":\"allreduce_inproc\",\"ranks\":%lld,\"bytes\":%lld,\"seconds\":%.9f,"
          "\"bus_gbps\":%.3f,\"memcpy_gbps\":%.3f,\"ratio\":%.3f}\n",
          static_cast<long long>(ranks), static_cast<long long>(bytes), seconds, bus_gbps,
          memcpy_gbps, bus_gbps / memcpy_gbps);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::Main();
}
