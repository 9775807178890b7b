// All-reduce across 2 or 3 processes on this machine, every transport side by side in one
// run, as JSON lines, one per size (4 KiB to 64 MiB per rank, powers of 4):
//   {"bench":"allreduce_cross_process","ranks":2,"bytes":4096,"iterations":2000,
//    "ucx_seconds":...,"ucx_bus_gbps":...,"gloo_seconds":...,"gloo_bus_gbps":...,
//    "raw_gloo_seconds":...,"raw_gloo_bus_gbps":...,"mpi_seconds":...,"mpi_bus_gbps":...,
//    "mpi_tcp_seconds":...,"mpi_tcp_bus_gbps":...,"mpi_ucx_seconds":...,"mpi_ucx_bus_gbps":...,
//    "ucx_latency_to_mpi":...,"gloo_latency_to_mpi":...,"ucx_latency_to_mpi_tcp":...,
//    "gloo_latency_to_mpi_tcp":...,"gloo_latency_to_ucx":...,
//    "ucx_median_seconds":...,"gloo_median_seconds":...,"raw_gloo_median_seconds":...,
//    "mpi_median_seconds":...,"mpi_tcp_median_seconds":...,"mpi_ucx_median_seconds":...,
//    "ucx_median_latency_to_mpi":...,"ucx_median_latency_to_mpi_tcp":...}
// and then one line of what waiting for a late peer costs:
//   {"bench":"allreduce_cross_process_late_peer","ranks":2,"bytes":4096,"calls":50,
//    "peer_delay_us":2000,"ucx_wait_cpu_us_per_call":...,"ucx_wait_cpu_share":...,
//    "gloo_wait_cpu_us_per_call":...,"gloo_wait_cpu_share":...}
// where every rank but 0 sleeps peer_delay_us before each of `calls` 4 KiB all-reduces
// and rank 0 reads its thread's CPU time around them: `wait_cpu_us_per_call` is that CPU
// time per call, `wait_cpu_share` the CPU time over the wall time of the same calls (1: the
// wait spun throughout; ucx/spin_policy.h says why it should not).
// `seconds` is one all-reduce of `bytes` floats per rank (sum, out of place), as rank 0
// times it, the mean over the timed calls; `median_seconds` the median of the same calls
// timed one by one, which a loaded machine's rare stalls of tens of milliseconds (on any
// transport, MPI's included) do not move; `bus_gbps` = bytes * 2(n-1)/n / seconds / 1e9
// (nccl-tests' bus bandwidth). `X_latency_to_Y` = X_seconds / Y_seconds, and
// `X_median_latency_to_Y` the same of the medians: below 1, X is faster.
//   ucx:      our communicator over UCX (oneflow_core/comm/ucx, the default transport)
//   gloo:     our communicator over Gloo's TCP pairs (oneflow_core/comm/gloo)
//   raw_gloo: gloo::allreduce on a context set up the same way (TCP on 127.0.0.1)
//   mpi:      OpenMPI's MPI_Allreduce, its default transports (shared memory on one host)
//   mpi_tcp:  the same restricted to TCP (`--mca btl self,tcp`: the fair match for Gloo)
//   mpi_ucx:  the same over UCX (`--mca pml ucx`: the fair match for ours over UCX)
//
// How it runs: this process is rank 0; it starts itself again as ranks 1..n-1 (--rank=r),
// and they meet through FileKeyValueStores in a fresh temporary directory (raw Gloo uses
// Gloo's own FileStore). All run every size for ucx, then gloo, then raw Gloo. Then rank 0
// runs //bench/collectives:mpi_allreduce_bench under `mpirun --allow-run-as-root
// --oversubscribe -np n` three times (mpi, mpi_tcp, mpi_ucx). Without mpirun on PATH it
// prints a note line and leaves the MPI fields null; a failing MPI variant is null too.
//
//   bazel run -c opt //bench/collectives:cross_process_bench [-- --ranks=3 --scale=0.5]
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/collectives/cross_process_sizes.h"
#include "bench/collectives/program_paths.h"
#include "gloo/allreduce.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/transport.h"

ABSL_FLAG(double, scale, 1.0, "multiplies every size's iteration count");
ABSL_FLAG(int, ranks, 2, "processes: 2 or 3");
ABSL_FLAG(int, rank, 0, "internal: set in the processes rank 0 starts");
ABSL_FLAG(std::string, store_directory, "", "internal: where the ranks meet");
ABSL_FLAG(std::string, mpi_binary, "", "mpi_allreduce_bench; default: beside this binary");

extern char** environ;

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "cross_process_bench: %s\n", message.c_str());
  std::exit(1);
}

// Seconds per call: the mean of a run and the median of its calls.
struct Timing {
  double mean = 0;
  double median = 0;
};

// Times `iterations` calls of `all_reduce` after warming up and lining the ranks up with
// `barrier`.
template <typename AllReduce, typename Barrier>
Timing Time(int64_t iterations, AllReduce&& all_reduce, Barrier&& barrier) {
  for (int i = 0; i < bench::kWarmupIterations; ++i) all_reduce();
  barrier();
  std::vector<double> calls(iterations);
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    const Clock::time_point call_start = Clock::now();
    all_reduce();
    calls[i] = std::chrono::duration<double>(Clock::now() - call_start).count();
  }
  Timing timing;
  timing.mean = std::chrono::duration<double>(Clock::now() - start).count() /
                static_cast<double>(iterations);
  std::nth_element(calls.begin(), calls.begin() + iterations / 2, calls.end());
  timing.median = calls[iterations / 2];
  return timing;
}

using Seconds = std::map<int64_t, Timing>;  // bytes -> seconds per call

// Rank 0's cost of waiting for late peers (see the top of the file).
struct LatePeerWait {
  double cpu_us_per_call = 0;
  double cpu_share = 0;  // CPU time over wall time
};

struct Timings {
  Seconds ucx;
  Seconds gloo;
  Seconds raw_gloo;
  LatePeerWait ucx_late_peer;
  LatePeerWait gloo_late_peer;
};

constexpr int kLatePeerCalls = 50;
constexpr int64_t kLatePeerBytes = 4096;
constexpr auto kLatePeerDelay = std::chrono::microseconds(2000);

double ThreadCpuSeconds() {
  timespec now = {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// The sum every rank's output must hold: rank r contributes 1 + r.
float ExpectedSum(int ranks) { return static_cast<float>(ranks * (ranks + 1) / 2); }

// Every size over `communicator`, checked; then the late-peer calls (rank 0's figures in
// `late_peer`).
Seconds RunOurs(Communicator& communicator, int rank, int ranks, double scale,
                LatePeerWait* late_peer) {
  CollectiveOptions call;
  call.description = "cross_process_bench";
  float one = 1.0f;
  auto barrier = [&] {
    const absl::Status status = communicator.AllReduce(&one, &one, 1, call);
    if (!status.ok()) Die(std::string(status.message()));
  };
  Seconds seconds;
  for (const int64_t bytes : bench::CrossProcessSizes()) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::vector<float> input(count, 1.0f + static_cast<float>(rank));
    std::vector<float> output(count, 0.0f);
    seconds[bytes] = Time(
        bench::CrossProcessIterations(bytes, scale),
        [&] {
          const absl::Status status = communicator.AllReduce(input.data(), output.data(), count, call);
          if (!status.ok()) Die(std::string(status.message()));
        },
        barrier);
    if (output[count - 1] != ExpectedSum(ranks)) {
      Die(absl::StrCat(communicator.Name(), ": wrong sum ", output[count - 1]));
    }
  }
  const int64_t count = kLatePeerBytes / static_cast<int64_t>(sizeof(float));
  std::vector<float> input(count, 1.0f + static_cast<float>(rank));
  std::vector<float> output(count, 0.0f);
  barrier();
  const double cpu_start = ThreadCpuSeconds();
  const Clock::time_point wall_start = Clock::now();
  for (int i = 0; i < kLatePeerCalls; ++i) {
    if (rank != 0) std::this_thread::sleep_for(kLatePeerDelay);
    const absl::Status status = communicator.AllReduce(input.data(), output.data(), count, call);
    if (!status.ok()) Die(std::string(status.message()));
  }
  const double cpu = ThreadCpuSeconds() - cpu_start;
  const double wall = std::chrono::duration<double>(Clock::now() - wall_start).count();
  late_peer->cpu_us_per_call = cpu / kLatePeerCalls * 1e6;
  late_peer->cpu_share = cpu / wall;
  return seconds;
}

Timings RunRank(int rank, int ranks, const std::string& directory, double scale) {
  Timings timings;
  for (Transport transport : {Transport::kUcx, Transport::kGloo}) {
    const std::string name = TransportName(transport);
    FileKeyValueStore store(absl::StrCat(directory, "/", name));
    CrossProcessGroupOptions options;
    options.group_name = absl::StrCat("cross_process_bench_", name);
    options.rank = rank;
    options.size = ranks;
    options.store = &store;
    absl::StatusOr<std::unique_ptr<Communicator>> communicator =
        NewCrossProcessCommunicator(transport, options);
    if (!communicator.ok()) Die(std::string(communicator.status().message()));
    const bool ucx = transport == Transport::kUcx;
    (ucx ? timings.ucx : timings.gloo) = RunOurs(
        **communicator, rank, ranks, scale, ucx ? &timings.ucx_late_peer : &timings.gloo_late_peer);
  }

  // Raw Gloo: the same transport, set up as Gloo's own examples do.
  ::gloo::rendezvous::FileStore raw_store(directory + "/raw");
  ::gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  std::shared_ptr<::gloo::transport::Device> device = ::gloo::transport::tcp::CreateDevice(attr);
  auto raw = std::make_shared<::gloo::rendezvous::Context>(rank, ranks);
  raw->setTimeout(std::chrono::seconds(60));
  raw->connectFullMesh(raw_store, device);
  auto raw_all_reduce = [&](const float* input, float* output, int64_t count) {
    ::gloo::AllreduceOptions raw_options(raw);
    raw_options.setInput(const_cast<float*>(input), count);
    raw_options.setOutput(output, count);
    raw_options.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&::gloo::sum<float>));
    ::gloo::allreduce(raw_options);
  };
  float one = 1.0f;
  auto raw_barrier = [&] { raw_all_reduce(&one, &one, 1); };
  for (const int64_t bytes : bench::CrossProcessSizes()) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::vector<float> input(count, 1.0f + static_cast<float>(rank));
    std::vector<float> output(count, 0.0f);
    timings.raw_gloo[bytes] =
        Time(bench::CrossProcessIterations(bytes, scale),
             [&] { raw_all_reduce(input.data(), output.data(), count); }, raw_barrier);
    if (output[count - 1] != ExpectedSum(ranks)) {
      Die(absl::StrCat("raw gloo: wrong sum ", output[count - 1]));
    }
  }
  return timings;
}

// This binary's path (the ranks and the MPI reference are started from beside it).
std::string SelfPath() {
  const std::optional<std::string> path = bench::SelfPath();
  if (!path.has_value()) Die("cannot read /proc/self/exe");
  return *path;
}

pid_t StartRank(int rank, int ranks, const std::string& directory, double scale) {
  std::vector<std::string> arguments = {SelfPath(), absl::StrCat("--rank=", rank),
                                        absl::StrCat("--ranks=", ranks),
                                        absl::StrCat("--store_directory=", directory),
                                        absl::StrCat("--scale=", scale)};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    Die(absl::StrCat("cannot start rank ", rank));
  return child;
}

// Seconds per MPI_Allreduce by size, from mpi_allreduce_bench under mpirun; empty when it
// fails (its stderr shows why).
Seconds RunMpi(const std::string& mpirun, const std::string& extra, int ranks, double scale) {
  std::string binary = absl::GetFlag(FLAGS_mpi_binary);
  if (binary.empty()) binary = SelfPath().substr(0, SelfPath().rfind('/')) + "/mpi_allreduce_bench";
  const std::string command = absl::StrCat(mpirun, " --allow-run-as-root --oversubscribe -np ", ranks, " ",
                                           extra, " ", binary, " --scale=", scale);
  Seconds seconds;
  FILE* output = popen(command.c_str(), "r");
  if (output == nullptr) return seconds;
  char line[512];
  while (std::fgets(line, sizeof(line), output) != nullptr) {
    long long bytes = 0;
    Timing timing;
    if (std::sscanf(line, "{\"bytes\":%lld,\"seconds\":%lf,\"median_seconds\":%lf}", &bytes,
                    &timing.mean, &timing.median) == 3)
      seconds[bytes] = timing;
  }
  if (pclose(output) != 0) {
    std::fprintf(stderr, "cross_process_bench: `%s` failed\n", command.c_str());
    seconds.clear();
  }
  return seconds;
}

std::string Field(const std::string& name, const Seconds& seconds, int64_t bytes, int ranks) {
  auto found = seconds.find(bytes);
  if (found == seconds.end())
    return absl::StrCat("\"", name, "_seconds\":null,\"", name, "_bus_gbps\":null");
  const double bus_bytes = static_cast<double>(bytes) * 2.0 * (ranks - 1) / ranks;
  return absl::StrCat("\"", name, "_seconds\":", found->second.mean, ",\"", name,
                      "_bus_gbps\":", bus_bytes / found->second.mean / 1e9);
}

std::string MedianField(const std::string& name, const Seconds& seconds, int64_t bytes) {
  auto found = seconds.find(bytes);
  return absl::StrCat("\"", name, "_median_seconds\":",
                      found == seconds.end() ? "null" : absl::StrCat(found->second.median));
}

// "X_latency_to_Y": X's mean seconds over Y's; with `median`, "X_median_latency_to_Y" of
// the medians.
std::string Ratio(const std::string& x_name, const Seconds& x, const std::string& y_name,
                  const Seconds& y, int64_t bytes, bool median = false) {
  auto x_found = x.find(bytes);
  auto y_found = y.find(bytes);
  const bool known = x_found != x.end() && y_found != y.end();
  const auto value = [&](const Timing& timing) { return median ? timing.median : timing.mean; };
  return absl::StrCat("\"", x_name, median ? "_median" : "", "_latency_to_", y_name, "\":",
                      known ? absl::StrCat(value(x_found->second) / value(y_found->second))
                            : "null");
}

int RunBenchmark() {
  const double scale = absl::GetFlag(FLAGS_scale);
  const int ranks = absl::GetFlag(FLAGS_ranks);
  if (ranks < 2 || ranks > 3) Die(absl::StrCat("--ranks=", ranks, ": valid values are 2 and 3"));
  if (absl::GetFlag(FLAGS_rank) > 0) {
    RunRank(absl::GetFlag(FLAGS_rank), ranks, absl::GetFlag(FLAGS_store_directory), scale);
    return 0;
  }
  const char* temporary = std::getenv("TMPDIR");
  std::string directory =
      absl::StrCat(temporary != nullptr ? temporary : "/tmp", "/cross_process_bench_XXXXXX");
  if (mkdtemp(directory.data()) == nullptr) Die("cannot make a temporary directory");
  for (const char* part : {"/ucx", "/gloo", "/raw"}) mkdir((directory + part).c_str(), 0700);

  std::vector<pid_t> children;
  for (int rank = 1; rank < ranks; ++rank) children.push_back(StartRank(rank, ranks, directory, scale));
  const Timings timings = RunRank(0, ranks, directory, scale);
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("a rank failed");
  }

  Seconds mpi;
  Seconds mpi_tcp;
  Seconds mpi_ucx;
  const std::optional<std::string> mpirun = bench::FindOnPath("mpirun");
  if (mpirun.has_value()) {
    mpi = RunMpi(*mpirun, "", ranks, scale);
    mpi_tcp = RunMpi(*mpirun, "--mca btl self,tcp", ranks, scale);
    mpi_ucx = RunMpi(*mpirun, "--mca pml ucx", ranks, scale);
  } else {
    std::printf(
        "{\"bench\":\"allreduce_cross_process\",\"note\":\"mpirun not found on PATH; the MPI "
        "fields are null (install openmpi-bin: tools/dev.sh deps)\"}\n");
  }
  for (const int64_t bytes : bench::CrossProcessSizes()) {
    std::printf(
        "{\"bench\":\"allreduce_cross_process\",\"ranks\":%d,\"bytes\":%lld,\"iterations\":%lld,"
        "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s}\n",
        ranks, static_cast<long long>(bytes),
        static_cast<long long>(bench::CrossProcessIterations(bytes, scale)),
        Field("ucx", timings.ucx, bytes, ranks).c_str(),
        Field("gloo", timings.gloo, bytes, ranks).c_str(),
        Field("raw_gloo", timings.raw_gloo, bytes, ranks).c_str(),
        Field("mpi", mpi, bytes, ranks).c_str(), Field("mpi_tcp", mpi_tcp, bytes, ranks).c_str(),
        Field("mpi_ucx", mpi_ucx, bytes, ranks).c_str(),
        Ratio("ucx", timings.ucx, "mpi", mpi, bytes).c_str(),
        Ratio("gloo", timings.gloo, "mpi", mpi, bytes).c_str(),
        Ratio("ucx", timings.ucx, "mpi_tcp", mpi_tcp, bytes).c_str(),
        Ratio("gloo", timings.gloo, "mpi_tcp", mpi_tcp, bytes).c_str(),
        Ratio("gloo", timings.gloo, "ucx", timings.ucx, bytes).c_str(),
        MedianField("ucx", timings.ucx, bytes).c_str(),
        MedianField("gloo", timings.gloo, bytes).c_str(),
        MedianField("raw_gloo", timings.raw_gloo, bytes).c_str(),
        MedianField("mpi", mpi, bytes).c_str(), MedianField("mpi_tcp", mpi_tcp, bytes).c_str(),
        MedianField("mpi_ucx", mpi_ucx, bytes).c_str(),
        Ratio("ucx", timings.ucx, "mpi", mpi, bytes, /*median=*/true).c_str(),
        Ratio("ucx", timings.ucx, "mpi_tcp", mpi_tcp, bytes, /*median=*/true).c_str());
    std::fflush(stdout);
  }
  std::printf(
      "{\"bench\":\"allreduce_cross_process_late_peer\",\"ranks\":%d,\"bytes\":%lld,\"calls\":%d,"
      "\"peer_delay_us\":%lld,\"ucx_wait_cpu_us_per_call\":%.2f,\"ucx_wait_cpu_share\":%.4f,"
      "\"gloo_wait_cpu_us_per_call\":%.2f,\"gloo_wait_cpu_share\":%.4f}\n",
      ranks, static_cast<long long>(kLatePeerBytes), kLatePeerCalls,
      static_cast<long long>(kLatePeerDelay.count()), timings.ucx_late_peer.cpu_us_per_call,
      timings.ucx_late_peer.cpu_share, timings.gloo_late_peer.cpu_us_per_call,
      timings.gloo_late_peer.cpu_share);
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::RunBenchmark();
}
