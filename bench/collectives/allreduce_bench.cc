// In-process all-reduce bandwidth against single-thread memcpy, as JSON lines:
//   {"bench":"allreduce_inproc","ranks":2,"bytes":4096,"repetitions":5,"seconds":...,
//    "bus_gbps":...,"memcpy_gbps":...,"ratio":...,"ratio_min":...,"ratio_max":...,"ok":true}
// `seconds` is the time of one all-reduce (sum, out of place) of `bytes` per rank;
// `bus_gbps` is bytes * 2(n-1)/n / seconds / 1e9, the traffic of a ring all-reduce per
// rank, as nccl-tests reports it (at 2 ranks: bytes of the tensor / seconds);
// `memcpy_gbps` is bytes / (time of one glibc memcpy of `bytes`) / 1e9, single-threaded;
// `ratio` = bus_gbps / memcpy_gbps (at 2 ranks: memcpy time / all-reduce time).
//
// A shared machine drifts by tens of percent within seconds, so the two sides are not
// timed far apart: each of `repetitions` rounds times memcpy and then the all-reduce
// (each for about min_seconds), and a round's ratio compares those two. The line gives
// the medians over the rounds (seconds, bandwidths, ratio) and the spread of the ratio.
// `ok`: one out-of-place and one in-place all-reduce of distinct values, checked (the
// exit status is 1 when any is false).
//
// Each rank is a thread; the ranks' buffers live in one process, so both figures are
// bounded by the same memory system. With more ranks than cores (4 ranks on a 2-core
// machine) the ranks time-share the cores and the waits yield: expect lower numbers.
//
//   bazel run -c opt //bench/collectives:allreduce_bench -- --ranks=2,4 --repetitions=5
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
#include "bench/lib/statistics.h"
#include "oneflow_core/comm/in_process/communicator.h"

ABSL_FLAG(std::vector<std::string>, ranks, std::vector<std::string>({"2", "4"}),
          "group sizes to measure");
ABSL_FLAG(int64_t, min_bytes, 4 << 10, "smallest message, bytes per rank");
ABSL_FLAG(int64_t, max_bytes, 64 << 20, "largest message, bytes per rank (doubling)");
ABSL_FLAG(double, min_seconds, 0.05, "time each side of each round runs for, at least");
ABSL_FLAG(int, repetitions, 5, "rounds per (ranks, bytes); the line gives their medians");

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

// One all-reduce per rank, in place where inputs[r] == outputs[r]; true when all succeed.
bool AllReduceOnce(InProcessGroup& group, const std::vector<float*>& inputs,
                   const std::vector<float*>& outputs, int64_t count) {
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < group.size(); ++rank) {
    threads.emplace_back([&, rank] {
      CollectiveOptions options;
      options.description = "allreduce_bench check";
      if (!group.communicator(rank).AllReduce(inputs[rank], outputs[rank], count, options).ok())
        failed = true;
    });
  }
  for (std::thread& thread : threads) thread.join();
  return !failed;
}

// Whether an out-of-place and an in-place all-reduce of `count` elements give every rank
// the sum in every element (small integers: exact in any order; the order itself is the
// conformance tests' business). Catches a chunk written to the wrong place or not at all,
// at sizes the tests do not reach (streaming stores, docs/collectives.md).
bool CheckAllReduce(InProcessGroup& group, int64_t count) {
  const int64_t ranks = group.size();
  auto value = [](int64_t rank, int64_t i) { return static_cast<float>((i * 7 + rank * 3) % 64); };
  std::vector<std::vector<float>> inputs(ranks, std::vector<float>(count));
  std::vector<std::vector<float>> outputs(ranks, std::vector<float>(count, -1.0f));
  std::vector<float*> input_pointers, output_pointers;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    for (int64_t i = 0; i < count; ++i) inputs[rank][i] = value(rank, i);
    input_pointers.push_back(inputs[rank].data());
    output_pointers.push_back(outputs[rank].data());
  }
  auto all_right = [&](const std::vector<std::vector<float>>& results) {
    for (int64_t i = 0; i < count; ++i) {
      float want = 0;
      for (int64_t rank = 0; rank < ranks; ++rank) want += value(rank, i);
      for (int64_t rank = 0; rank < ranks; ++rank) {
        if (results[rank][i] != want) return false;
      }
    }
    return true;
  };
  return AllReduceOnce(group, input_pointers, output_pointers, count) && all_right(outputs) &&
         AllReduceOnce(group, input_pointers, input_pointers, count) && all_right(inputs);
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

// One JSON line for `ranks` ranks and `bytes` per rank; false when the results are wrong.
bool Measure(InProcessGroup& group, int64_t bytes) {
  const int64_t ranks = group.size();
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  std::vector<std::vector<float>> inputs(ranks, std::vector<float>(count, 1.0f));
  std::vector<std::vector<float>> outputs(ranks, std::vector<float>(count, 0.0f));
  std::vector<char> from(bytes, 1), to(bytes, 0);
  const int64_t memcpy_iterations = IterationsFor(TimeMemcpy(to, from, 3));
  const int64_t all_reduce_iterations = IterationsFor(TimeAllReduce(group, inputs, outputs, 3));
  std::vector<double> seconds, bus_gbps, memcpy_gbps, ratios;
  for (int round = 0; round < std::max(1, absl::GetFlag(FLAGS_repetitions)); ++round) {
    const double copy = TimeMemcpy(to, from, memcpy_iterations);
    const double all_reduce = TimeAllReduce(group, inputs, outputs, all_reduce_iterations);
    seconds.push_back(all_reduce);
    bus_gbps.push_back(bytes * 2.0 * (ranks - 1) / ranks / all_reduce / 1e9);
    memcpy_gbps.push_back(bytes / copy / 1e9);
    ratios.push_back(bus_gbps.back() / memcpy_gbps.back());
  }
  const bool ok = CheckAllReduce(group, count);
  std::printf(
      "{\"bench\":\"allreduce_inproc\",\"ranks\":%lld,\"bytes\":%lld,\"repetitions\":%zu,"
      "\"seconds\":%.9f,\"bus_gbps\":%.3f,\"memcpy_gbps\":%.3f,\"ratio\":%.3f,"
      "\"ratio_min\":%.3f,\"ratio_max\":%.3f,\"ok\":%s}\n",
      static_cast<long long>(ranks), static_cast<long long>(bytes), ratios.size(),
      Median(seconds), Median(bus_gbps), Median(memcpy_gbps), Median(ratios),
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()), ok ? "true" : "false");
  std::fflush(stdout);
  return ok;
}

int Main() {
  std::fprintf(stderr, "allreduce_bench: %u hardware threads\n",
               std::thread::hardware_concurrency());
  bool all_ok = true;
  for (const std::string& text : absl::GetFlag(FLAGS_ranks)) {
    std::unique_ptr<InProcessGroup> group =
        std::move(InProcessGroup::Create(std::stoll(text), "bench")).value();
    for (int64_t bytes = absl::GetFlag(FLAGS_min_bytes); bytes <= absl::GetFlag(FLAGS_max_bytes);
         bytes *= 2) {
      all_ok &= Measure(*group, bytes);
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::Main();
}
