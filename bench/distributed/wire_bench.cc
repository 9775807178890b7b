// The cross-node part of a data-parallel step alone, on emulated hosts (wire_bench.sh):
// one process per host, `--groups` communication threads per process, each all-reducing
// `--bytes` per call over the cross-process transport in its own group of one member per
// host, as gpt_dp3tp2's two devices per host each reduce their own gradient buckets across
// the hosts (docs/benchmarks.md, "Where the 851 ms go"). Every thread makes `--calls`
// calls, all threads at once; the process prints one JSON line with the wall time of the
// calls (from the first thread's start to the last thread's end, after one warm-up call
// per thread) and the CPU time its communication threads spent in them (getrusage),
// so the wire's use and its CPU cost can be compared with the link time of the bytes.
// A benchmark, not a test: it asserts only that the results are the sums.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/transport.h"

ABSL_FLAG(int, rank, 0, "this process's host index");
ABSL_FLAG(int, ranks, 3, "processes (hosts)");
ABSL_FLAG(int, groups, 2, "groups (communication threads) per process");
ABSL_FLAG(int64_t, bytes, 3538944, "bytes per all-reduce call and thread");
ABSL_FLAG(int, calls, 10, "timed calls per thread");
ABSL_FLAG(std::string, store_directory, "", "a directory every process reads and writes");
ABSL_FLAG(std::string, host, "127.0.0.1", "this process's address (Gloo binds to it)");
ABSL_FLAG(std::string, transport, "ucx", "ucx or gloo");
ABSL_FLAG(int, compute_threads, 0,
          "busy threads beside the communication threads, standing in for a step's compute threads");
ABSL_FLAG(int, compute_nice, 0, "nice value of the compute threads (setpriority on each thread)");
ABSL_FLAG(int, communication_nice, 0, "nice value of the communication threads");

namespace {

// Linux applies setpriority(PRIO_PROCESS, tid) to one thread.
void NiceThisThread(int nice) {
  if (nice != 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) != 0) {
    std::perror("wire_bench: setpriority");
  }
}

// CPU time of the calling thread: the communication threads' own (UCX has no thread of
// its own; Gloo's I/O threads are not counted, nor the compute threads').
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int rank = absl::GetFlag(FLAGS_rank);
  const int ranks = absl::GetFlag(FLAGS_ranks);
  const int groups = absl::GetFlag(FLAGS_groups);
  const int64_t count = absl::GetFlag(FLAGS_bytes) / static_cast<int64_t>(sizeof(float));
  const int calls = absl::GetFlag(FLAGS_calls);
  const absl::StatusOr<oneflow::Transport> transport = oneflow::ParseTransport(absl::GetFlag(FLAGS_transport));
  if (!transport.ok() || absl::GetFlag(FLAGS_store_directory).empty() || groups < 1 || count < 1 || calls < 1) {
    std::fprintf(stderr, "wire_bench: bad flags (%s)\n", transport.status().ToString().c_str());
    return 2;
  }
  oneflow::FileKeyValueStore store(absl::GetFlag(FLAGS_store_directory));
  std::vector<std::unique_ptr<oneflow::Communicator>> communicators;
  for (int g = 0; g < groups; ++g) {
    oneflow::CrossProcessGroupOptions options;
    options.group_name = absl::StrCat("wire/", g);
    options.rank = rank;
    options.size = ranks;
    options.store = &store;
    options.host = absl::GetFlag(FLAGS_host);
    absl::StatusOr<std::unique_ptr<oneflow::Communicator>> communicator =
        oneflow::NewCrossProcessCommunicator(*transport, options);
    if (!communicator.ok()) {
      std::fprintf(stderr, "wire_bench: %s\n", communicator.status().ToString().c_str());
      return 1;
    }
    communicators.push_back(std::move(*communicator));
  }
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> starts(groups), ends(groups);
  std::vector<std::string> errors(groups);
  std::vector<double> cpu_seconds(groups);
  std::atomic<bool> done{false};
  std::vector<std::thread> burners;
  for (int c = 0; c < absl::GetFlag(FLAGS_compute_threads); ++c) {
    burners.emplace_back([&] {
      NiceThisThread(absl::GetFlag(FLAGS_compute_nice));
      volatile float sink = 0;
      while (!done.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 100000; ++i) sink = sink * 0.999f + 1.0f;
      }
    });
  }
  std::vector<std::thread> threads;
  for (int g = 0; g < groups; ++g) {
    threads.emplace_back([&, g] {
      NiceThisThread(absl::GetFlag(FLAGS_communication_nice));
      std::vector<float> data(count);
      oneflow::CollectiveOptions options;
      options.timeout = absl::Seconds(120);
      options.description = absl::StrCat("wire_bench group ", g);
      auto call = [&]() -> bool {
        for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1);
        const absl::Status status = communicators[g]->AllReduce(data.data(), data.data(), count, options);
        if (!status.ok()) {
          errors[g] = status.ToString();
          return false;
        }
        // Every element is 1 + 2 + ... + ranks.
        if (data[0] != static_cast<float>(ranks * (ranks + 1) / 2) ||
            data[count - 1] != static_cast<float>(ranks * (ranks + 1) / 2)) {
          errors[g] = "wrong sum";
          return false;
        }
        return true;
      };
      if (!call()) return;  // warm-up: connects
      // Every thread of every process starts the timed calls together (store barrier).
      if (!store.Set(absl::StrCat("ready/", g, "/", rank), "1").ok()) return;
      for (int r = 0; r < ranks; ++r) {
        if (!store.Wait({absl::StrCat("ready/", g, "/", r)}, absl::Seconds(60)).ok()) return;
      }
      starts[g] = Clock::now();
      const double cpu_at_start = CpuSeconds();
      for (int c = 0; c < calls; ++c) {
        if (!call()) return;
      }
      ends[g] = Clock::now();
      cpu_seconds[g] = CpuSeconds() - cpu_at_start;
    });
  }
  for (std::thread& thread : threads) thread.join();
  done = true;
  for (std::thread& thread : burners) thread.join();
  for (int g = 0; g < groups; ++g) {
    if (!errors[g].empty()) {
      std::fprintf(stderr, "wire_bench: group %d: %s\n", g, errors[g].c_str());
      return 1;
    }
  }
  Clock::time_point first = starts[0], last = ends[0];
  double cpu = cpu_seconds[0];
  for (int g = 1; g < groups; ++g) {
    first = std::min(first, starts[g]);
    last = std::max(last, ends[g]);
    cpu += cpu_seconds[g];
  }
  const double seconds = std::chrono::duration<double>(last - first).count();
  std::printf(
      "{\"rank\": %d, \"ranks\": %d, \"groups\": %d, \"bytes\": %lld, \"calls\": %d, \"transport\": \"%s\", "
      "\"seconds\": %.6f, \"ms_per_call\": %.3f, \"cpu_seconds\": %.6f}\n",
      rank, ranks, groups, static_cast<long long>(count * 4), calls, absl::GetFlag(FLAGS_transport).c_str(), seconds,
      seconds / calls * 1e3, cpu);
  return 0;
}
