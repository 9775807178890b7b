// All-reduce across two processes on this machine: our Gloo communicator against raw Gloo
// (gloo::allreduce on a context set up the same way: TCP on 127.0.0.1, full mesh) and
// against OpenMPI's MPI_Allreduce, as JSON lines, one per size (4 KiB to 64 MiB per rank,
// powers of 4):
//   {"bench":"allreduce_cross_process","ranks":2,"bytes":4096,"iterations":2000,
//    "ours_seconds":...,"ours_bus_gbps":...,"raw_gloo_seconds":...,"raw_gloo_bus_gbps":...,
//    "mpi_seconds":...,"mpi_bus_gbps":...,"mpi_tcp_seconds":...,"mpi_tcp_bus_gbps":...,
//    "ours_to_raw_gloo":...,"ours_to_mpi":...,"ours_to_mpi_tcp":...}
// `seconds` is one all-reduce of `bytes` floats per rank (sum, out of place), as rank 0
// times it; `bus_gbps` = bytes * 2(n-1)/n / seconds / 1e9 (nccl-tests' bus bandwidth;
// n = 2). `ours_to_X` = ours_bus_gbps / X_bus_gbps: above 1, ours is faster.
//
// How it runs: this process is rank 0; it starts itself again as rank 1 (--rank=1), and
// the two meet through a FileKeyValueStore in a fresh temporary directory (raw Gloo uses
// Gloo's own FileStore in a subdirectory). Both run every size for ours, then for raw
// Gloo. Rank 1 then exits, and rank 0 runs //bench/collectives:mpi_allreduce_bench under
// `mpirun --allow-run-as-root --oversubscribe -np 2` twice: with OpenMPI's default
// transports (shared memory between processes on one machine: "mpi") and restricted to
// TCP ("mpi_tcp", `--mca btl self,tcp`, the fair comparison with Gloo's TCP). Without
// mpirun on PATH it prints a note line and leaves the MPI fields null.
//
//   bazel run -c opt //bench/collectives:cross_process_bench [-- --scale=0.5]
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/collectives/cross_process_sizes.h"
#include "gloo/allreduce.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"

ABSL_FLAG(double, scale, 1.0, "multiplies every size's iteration count");
ABSL_FLAG(int, rank, 0, "internal: 1 in the process rank 0 starts");
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

// Times `iterations` calls of `all_reduce` after warming up and lining the ranks up with
// `barrier`; seconds per call.
template <typename AllReduce, typename Barrier>
double Time(int64_t iterations, AllReduce&& all_reduce, Barrier&& barrier) {
  for (int i = 0; i < bench::kWarmupIterations; ++i) all_reduce();
  barrier();
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) all_reduce();
  return std::chrono::duration<double>(Clock::now() - start).count() /
         static_cast<double>(iterations);
}

struct Timings {
  std::map<int64_t, double> ours;      // bytes -> seconds
  std::map<int64_t, double> raw_gloo;  // bytes -> seconds
};

Timings RunRank(int rank, const std::string& directory, double scale) {
  FileKeyValueStore store(directory + "/ours");
  GlooGroupOptions options;
  options.group_name = "cross_process_bench";
  options.rank = rank;
  options.size = 2;
  options.store = &store;
  std::unique_ptr<Communicator> ours = std::move(NewGlooCommunicator(options)).value();
  CollectiveOptions call;
  call.description = "cross_process_bench";

  // Raw Gloo: the same transport, set up as Gloo's own examples do.
  ::gloo::rendezvous::FileStore raw_store(directory + "/raw");
  ::gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  std::shared_ptr<::gloo::transport::Device> device = ::gloo::transport::tcp::CreateDevice(attr);
  auto raw = std::make_shared<::gloo::rendezvous::Context>(rank, 2);
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
  auto ours_barrier = [&] {
    const absl::Status status = ours->AllReduce(&one, &one, 1, call);
    if (!status.ok()) Die(std::string(status.message()));
  };
  auto raw_barrier = [&] { raw_all_reduce(&one, &one, 1); };

  Timings timings;
  for (const int64_t bytes : bench::CrossProcessSizes()) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    const int64_t iterations = bench::CrossProcessIterations(bytes, scale);
    std::vector<float> input(count, 1.0f + static_cast<float>(rank));
    std::vector<float> output(count, 0.0f);
    timings.ours[bytes] = Time(
        iterations,
        [&] {
          const absl::Status status = ours->AllReduce(input.data(), output.data(), count, call);
          if (!status.ok()) Die(std::string(status.message()));
        },
        ours_barrier);
    if (output[count - 1] != 3.0f) Die(absl::StrCat("ours: wrong sum ", output[count - 1]));
    output.assign(count, 0.0f);
    timings.raw_gloo[bytes] = Time(
        iterations, [&] { raw_all_reduce(input.data(), output.data(), count); }, raw_barrier);
    if (output[count - 1] != 3.0f) Die(absl::StrCat("raw gloo: wrong sum ", output[count - 1]));
  }
  return timings;
}

std::string SelfPath() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) Die("cannot read /proc/self/exe");
  return std::string(path, length);
}

pid_t StartRankOne(const std::string& directory, double scale) {
  std::vector<std::string> arguments = {SelfPath(), "--rank=1",
                                        absl::StrCat("--store_directory=", directory),
                                        absl::StrCat("--scale=", scale)};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    Die("cannot start rank 1");
  return child;
}

std::optional<std::string> FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string directories = path != nullptr ? path : "";
  size_t begin = 0;
  while (begin <= directories.size()) {
    size_t end = directories.find(':', begin);
    if (end == std::string::npos) end = directories.size();
    const std::string candidate =
        absl::StrCat(directories.substr(begin, end - begin), "/", program);
    if (end > begin && access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

// Seconds per MPI_Allreduce by size, from mpi_allreduce_bench under mpirun; empty when it
// fails (its stderr shows why).
std::map<int64_t, double> RunMpi(const std::string& mpirun, const std::string& extra,
                                 double scale) {
  std::string binary = absl::GetFlag(FLAGS_mpi_binary);
  if (binary.empty()) binary = SelfPath().substr(0, SelfPath().rfind('/')) + "/mpi_allreduce_bench";
  const std::string command = absl::StrCat(mpirun, " --allow-run-as-root --oversubscribe -np 2 ",
                                           extra, " ", binary, " --scale=", scale);
  std::map<int64_t, double> seconds;
  FILE* output = popen(command.c_str(), "r");
  if (output == nullptr) return seconds;
  char line[512];
  while (std::fgets(line, sizeof(line), output) != nullptr) {
    long long bytes = 0;
    double value = 0;
    if (std::sscanf(line, "{\"bytes\":%lld,\"seconds\":%lf}", &bytes, &value) == 2)
      seconds[bytes] = value;
  }
  if (pclose(output) != 0) {
    std::fprintf(stderr, "cross_process_bench: `%s` failed\n", command.c_str());
  }
  return seconds;
}

std::string Field(const std::string& name, const std::map<int64_t, double>& seconds,
                  int64_t bytes) {
  auto found = seconds.find(bytes);
  if (found == seconds.end())
    return absl::StrCat("\"", name, "_seconds\":null,\"", name, "_bus_gbps\":null");
  // n = 2: bus bytes = bytes * 2(n-1)/n = bytes.
  return absl::StrCat("\"", name, "_seconds\":", found->second, ",\"", name,
                      "_bus_gbps\":", static_cast<double>(bytes) / found->second / 1e9);
}

std::string Ratio(const std::string& name, double ours, const std::map<int64_t, double>& seconds,
                  int64_t bytes) {
  auto found = seconds.find(bytes);
  return absl::StrCat("\"ours_to_", name,
                      "\":", found == seconds.end() ? "null" : absl::StrCat(found->second / ours));
}

int RunBenchmark() {
  const double scale = absl::GetFlag(FLAGS_scale);
  if (absl::GetFlag(FLAGS_rank) == 1) {
    RunRank(1, absl::GetFlag(FLAGS_store_directory), scale);
    return 0;
  }
  const char* temporary = std::getenv("TMPDIR");
  std::string directory =
      absl::StrCat(temporary != nullptr ? temporary : "/tmp", "/cross_process_bench_XXXXXX");
  if (mkdtemp(directory.data()) == nullptr) Die("cannot make a temporary directory");
  mkdir((directory + "/ours").c_str(), 0700);
  mkdir((directory + "/raw").c_str(), 0700);

  const pid_t child = StartRankOne(directory, scale);
  const Timings timings = RunRank(0, directory, scale);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("rank 1 failed");

  std::map<int64_t, double> mpi;
  std::map<int64_t, double> mpi_tcp;
  const std::optional<std::string> mpirun = FindOnPath("mpirun");
  if (mpirun.has_value()) {
    mpi = RunMpi(*mpirun, "", scale);
    mpi_tcp = RunMpi(*mpirun, "--mca btl self,tcp", scale);
  } else {
    std::printf(
        "{\"bench\":\"allreduce_cross_process\",\"note\":\"mpirun not found on PATH; the MPI "
        "fields are null (install openmpi-bin: tools/dev.sh deps)\"}\n");
  }
  for (const int64_t bytes : bench::CrossProcessSizes()) {
    const double ours = timings.ours.at(bytes);
    std::printf(
        "{\"bench\":\"allreduce_cross_process\",\"ranks\":2,\"bytes\":%lld,\"iterations\":%lld,%s,%"
        "s,%s,%s,%s,%s,%s}\n",
        static_cast<long long>(bytes),
        static_cast<long long>(bench::CrossProcessIterations(bytes, scale)),
        Field("ours", timings.ours, bytes).c_str(),
        Field("raw_gloo", timings.raw_gloo, bytes).c_str(), Field("mpi", mpi, bytes).c_str(),
        Field("mpi_tcp", mpi_tcp, bytes).c_str(),
        Ratio("raw_gloo", ours, timings.raw_gloo, bytes).c_str(),
        Ratio("mpi", ours, mpi, bytes).c_str(), Ratio("mpi_tcp", ours, mpi_tcp, bytes).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::RunBenchmark();
}
