// Point-to-point round trips between 2 processes, every path side by side in one run, as
// JSON lines, one per size (4 KiB to 4 MiB, powers of 4):
//   {"bench":"ping_pong","bytes":4096,"round_trips":400,"ucx_seconds":...,"gloo_seconds":...,
//    "ucx_step_seconds":...,"gloo_step_seconds":...,"tcp_seconds":...,"mpi_seconds":...,"mpi_tcp_seconds":...,"ucx_to_tcp":...,
//    "gloo_to_tcp":...,"ucx_to_mpi_tcp":...,"ucx_minus_tcp_us":...,"gloo_minus_tcp_us":...}
// Each X_seconds is the median of the round trips timed one by one on rank 0: rank 0
// sends `bytes`, rank 1 receives them and sends `bytes` back, rank 0 receives them.
//   ucx, gloo:  our communicator's Send/Recv over that transport (NewCrossProcessCommunicator)
//   ucx_step, gloo_step: the same bytes each way through the two-rank all-to-all (one
//               nonzero entry) that a pipeline's send_recv boxing step runs between
//               processes (kernels/boxing/send_recv.cc): the call's arrival, then the data
//   tcp:        one TCP connection with TCP_NODELAY, write()/read() of the whole message:
//               what the network itself costs, the floor any TCP transport pays
//   mpi, mpi_tcp: OpenMPI's MPI_Send/MPI_Recv under `mpirun -np 2` (shared memory; `--mca
//               btl self,tcp`), loopback only (//bench/collectives:mpi_ping_pong_bench)
// `X_to_tcp` = X_seconds / tcp_seconds; `X_minus_tcp_us` the difference in microseconds: what
// the transport adds to a round trip beyond the socket's own.
//
// How it runs, on one machine: this process is rank 0 and starts itself again as rank 1
// (--rank=1); they meet through FileKeyValueStores in a temporary directory. Across
// emulated hosts (network namespaces that share this machine's file system,
// bench/lib/netns_hosts.sh), start both ranks by hand, each in its namespace with its own
// address and the same --store_directory:
//   ip netns exec H1 ping_pong_bench --rank=1 --host=10.0.0.2 --store_directory=D &
//   ip netns exec H0 ping_pong_bench --rank=0 --host=10.0.0.1 --store_directory=D --peer=external
// UCX_TLS decides UCX's transports (netns hosts need UCX_TLS=tcp,self: they share /dev/shm).
//
//   bazel run -c opt //bench/collectives:ping_pong_bench [-- --scale=0.5]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/collectives/ping_pong_sizes.h"
#include "bench/collectives/program_paths.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/transport.h"

ABSL_FLAG(double, scale, 1.0, "multiplies every size's round-trip count");
ABSL_FLAG(int, rank, 0, "0 or 1");
ABSL_FLAG(std::string, host, "127.0.0.1", "this rank's address the peer can reach");
ABSL_FLAG(std::string, store_directory, "", "where the ranks meet; default: a new temporary directory");
ABSL_FLAG(std::string, peer, "spawn", "spawn: rank 0 starts rank 1 on this machine; external: it is started by hand");
ABSL_FLAG(std::string, mpi_binary, "", "mpi_ping_pong_bench; default: beside this binary");

extern char** environ;

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;
using Medians = std::map<int64_t, double>;  // bytes -> median seconds per round trip

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "ping_pong_bench: %s\n", message.c_str());
  std::exit(1);
}

void Check(const absl::Status& status) {
  if (!status.ok()) Die(std::string(status.message()));
}

// The median of `round_trips` calls of `round_trip` after the warm-up ones (rank 1's
// timings are not used; it makes the same calls).
template <typename RoundTrip>
double MedianRoundTrip(int64_t round_trips, RoundTrip&& round_trip) {
  for (int i = 0; i < bench::kPingPongWarmups; ++i) round_trip();
  std::vector<double> calls(round_trips);
  for (int64_t i = 0; i < round_trips; ++i) {
    const Clock::time_point start = Clock::now();
    round_trip();
    calls[i] = std::chrono::duration<double>(Clock::now() - start).count();
  }
  std::nth_element(calls.begin(), calls.begin() + round_trips / 2, calls.end());
  return calls[round_trips / 2];
}

// Rank 0's first byte and rank 1's reply: both ranks check what they got.
void Fill(std::vector<char>& buffer, char value) { std::fill(buffer.begin(), buffer.end(), value); }

// Round trips over `transport`: through Send/Recv (`medians`) and through the two-rank
// all-to-all a send_recv boxing step runs (`step_medians`).
void RunCommunicator(Transport transport, int rank, KeyValueStore& store, double scale, Medians* medians,
                     Medians* step_medians) {
  const std::string name = TransportName(transport);
  CrossProcessGroupOptions options;
  options.group_name = absl::StrCat("ping_pong_bench_", name);
  options.rank = rank;
  options.size = 2;
  options.store = &store;
  options.host = absl::GetFlag(FLAGS_host);
  absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewCrossProcessCommunicator(transport, options);
  Check(communicator.status());
  CollectiveOptions call;
  call.description = "ping_pong_bench";
  const int64_t peer = 1 - rank;
  for (const int64_t bytes : bench::PingPongSizes()) {
    std::vector<char> buffer(bytes);
    Fill(buffer, static_cast<char>(rank + 1));
    (*medians)[bytes] = MedianRoundTrip(bench::PingPongRoundTrips(bytes, scale), [&] {
      if (rank == 0) {
        Check((*communicator)->Send(buffer.data(), bytes, peer, call));
        Check((*communicator)->Recv(buffer.data(), bytes, peer, call));
      } else {
        Check((*communicator)->Recv(buffer.data(), bytes, peer, call));
        Check((*communicator)->Send(buffer.data(), bytes, peer, call));
      }
    });
    if (buffer[bytes - 1] != 1) Die(absl::StrCat(name, ": rank ", rank, " holds ", int{buffer[bytes - 1]}));
    // kernels/boxing/send_recv.cc: one all-to-all whose byte matrix has one nonzero entry.
    std::vector<char> other(bytes);
    const std::vector<int64_t> to_rank_1 = {0, bytes, 0, 0};
    const std::vector<int64_t> to_rank_0 = {0, 0, bytes, 0};
    (*step_medians)[bytes] = MedianRoundTrip(bench::PingPongRoundTrips(bytes, scale), [&] {
      // Rank 0's `buffer` goes into rank 1's `other`, which goes back into rank 0's
      // `other` (a rank's input and output are distinct; the side that moves nothing passes
      // a buffer of which no byte is read or written).
      Check((*communicator)->AllToAll(buffer.data(), other.data(), to_rank_1, call));
      Check((*communicator)->AllToAll(rank == 1 ? other.data() : buffer.data(), rank == 0 ? other.data() : buffer.data(),
                                      to_rank_0, call));
    });
    if (other[bytes - 1] != 1) Die(absl::StrCat(name, " step: rank ", rank, " holds ", int{other[bytes - 1]}));
  }
}

void WriteAll(int socket, const char* data, int64_t bytes) {
  while (bytes > 0) {
    const ssize_t written = write(socket, data, bytes);
    if (written <= 0) Die(absl::StrCat("tcp write: ", std::strerror(errno)));
    data += written;
    bytes -= written;
  }
}

void ReadAll(int socket, char* data, int64_t bytes) {
  while (bytes > 0) {
    const ssize_t got = read(socket, data, bytes);
    if (got <= 0) Die(absl::StrCat("tcp read: ", got == 0 ? "closed" : std::strerror(errno)));
    data += got;
    bytes -= got;
  }
}

// Rank 1 listens on its host (the port through the store), rank 0 connects.
int ConnectTcp(int rank, KeyValueStore& store) {
  const std::string key = "ping_pong_bench_tcp/address";
  if (rank == 1) {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    if (inet_pton(AF_INET, absl::GetFlag(FLAGS_host).c_str(), &address.sin_addr) != 1) Die("--host is no IPv4 address");
    if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(listener, 1) != 0) {
      Die(absl::StrCat("tcp listen: ", std::strerror(errno)));
    }
    socklen_t length = sizeof(address);
    getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    Check(store.Set(key, absl::StrCat(absl::GetFlag(FLAGS_host), " ", ntohs(address.sin_port))));
    const int connection = accept(listener, nullptr, nullptr);
    close(listener);
    return connection;
  }
  Check(store.Wait({key}, absl::Seconds(60)));
  const std::string value = *store.Get(key);
  const size_t space = value.find(' ');
  int port = 0;
  if (space == std::string::npos || !absl::SimpleAtoi(value.substr(space + 1), &port)) Die("bad tcp address");
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, value.substr(0, space).c_str(), &address.sin_addr);
  const int connection = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    Die(absl::StrCat("tcp connect: ", std::strerror(errno)));
  }
  return connection;
}

Medians RunTcp(int rank, KeyValueStore& store, double scale) {
  const int connection = ConnectTcp(rank, store);
  const int one = 1;
  setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Medians medians;
  for (const int64_t bytes : bench::PingPongSizes()) {
    std::vector<char> buffer(bytes);
    Fill(buffer, static_cast<char>(rank + 1));
    medians[bytes] = MedianRoundTrip(bench::PingPongRoundTrips(bytes, scale), [&] {
      if (rank == 0) {
        WriteAll(connection, buffer.data(), bytes);
        ReadAll(connection, buffer.data(), bytes);
      } else {
        ReadAll(connection, buffer.data(), bytes);
        WriteAll(connection, buffer.data(), bytes);
      }
    });
  }
  close(connection);
  return medians;
}

struct RankMedians {
  Medians ucx, gloo, tcp, ucx_step, gloo_step;
};

RankMedians RunRank(int rank, const std::string& directory, double scale) {
  RankMedians medians;
  FileKeyValueStore ucx_store(directory + "/ucx");
  RunCommunicator(Transport::kUcx, rank, ucx_store, scale, &medians.ucx, &medians.ucx_step);
  FileKeyValueStore gloo_store(directory + "/gloo");
  RunCommunicator(Transport::kGloo, rank, gloo_store, scale, &medians.gloo, &medians.gloo_step);
  FileKeyValueStore tcp_store(directory + "/tcp");
  medians.tcp = RunTcp(rank, tcp_store, scale);
  return medians;
}

// This binary's path (the ranks and the MPI reference are started from beside it).
std::string SelfPath() {
  const std::optional<std::string> path = bench::SelfPath();
  if (!path.has_value()) Die("cannot read /proc/self/exe");
  return *path;
}

// Median seconds per MPI round trip by size from mpi_ping_pong_bench under mpirun; empty
// when it fails (its stderr says why).
Medians RunMpi(const std::string& mpirun, const std::string& extra, double scale) {
  std::string binary = absl::GetFlag(FLAGS_mpi_binary);
  if (binary.empty()) binary = SelfPath().substr(0, SelfPath().rfind('/')) + "/mpi_ping_pong_bench";
  const std::string command =
      absl::StrCat(mpirun, " --allow-run-as-root --oversubscribe -np 2 ", extra, " ", binary, " --scale=", scale);
  Medians medians;
  FILE* output = popen(command.c_str(), "r");
  if (output == nullptr) return medians;
  char line[512];
  while (std::fgets(line, sizeof(line), output) != nullptr) {
    long long bytes = 0;
    double median = 0;
    if (std::sscanf(line, "{\"bytes\":%lld,\"median_seconds\":%lf}", &bytes, &median) == 2) medians[bytes] = median;
  }
  if (pclose(output) != 0) {
    std::fprintf(stderr, "ping_pong_bench: `%s` failed\n", command.c_str());
    medians.clear();
  }
  return medians;
}

std::string Value(const Medians& medians, int64_t bytes) {
  const auto found = medians.find(bytes);
  return found == medians.end() ? "null" : absl::StrCat(found->second);
}

std::string Ratio(const Medians& x, const Medians& y, int64_t bytes) {
  const auto x_found = x.find(bytes);
  const auto y_found = y.find(bytes);
  if (x_found == x.end() || y_found == y.end()) return "null";
  return absl::StrCat(x_found->second / y_found->second);
}

std::string MinusMicroseconds(const Medians& x, const Medians& y, int64_t bytes) {
  const auto x_found = x.find(bytes);
  const auto y_found = y.find(bytes);
  if (x_found == x.end() || y_found == y.end()) return "null";
  return absl::StrCat((x_found->second - y_found->second) * 1e6);
}

int RunBenchmark() {
  const double scale = absl::GetFlag(FLAGS_scale);
  const int rank = absl::GetFlag(FLAGS_rank);
  const bool spawn = absl::GetFlag(FLAGS_peer) == "spawn";
  if (rank != 0 && rank != 1) Die(absl::StrCat("--rank=", rank, ": valid values are 0 and 1"));
  if (!spawn && absl::GetFlag(FLAGS_peer) != "external") {
    Die(absl::StrCat("--peer=", absl::GetFlag(FLAGS_peer), ": valid values are spawn and external"));
  }
  std::string directory = absl::GetFlag(FLAGS_store_directory);
  if (directory.empty()) {
    if (rank != 0 || !spawn) Die("--store_directory is needed with --rank=1 or --peer=external");
    const char* temporary = std::getenv("TMPDIR");
    directory = absl::StrCat(temporary != nullptr ? temporary : "/tmp", "/ping_pong_bench_XXXXXX");
    if (mkdtemp(directory.data()) == nullptr) Die("cannot make a temporary directory");
  }
  for (const char* part : {"/ucx", "/gloo", "/tcp"}) mkdir((directory + part).c_str(), 0700);
  if (rank == 1) {
    RunRank(1, directory, scale);
    return 0;
  }
  pid_t child = 0;
  if (spawn) {
    std::vector<std::string> arguments = {SelfPath(), "--rank=1", absl::StrCat("--store_directory=", directory),
                                          absl::StrCat("--scale=", scale),
                                          absl::StrCat("--host=", absl::GetFlag(FLAGS_host))};
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    if (posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0) Die("cannot start rank 1");
  }
  const RankMedians medians = RunRank(0, directory, scale);
  if (spawn) {
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("rank 1 failed");
  }
  Medians mpi, mpi_tcp;
  const std::optional<std::string> mpirun = bench::FindOnPath("mpirun");
  if (spawn && mpirun.has_value()) {
    mpi = RunMpi(*mpirun, "", scale);
    mpi_tcp = RunMpi(*mpirun, "--mca btl self,tcp", scale);
  }
  const char* tls = std::getenv("UCX_TLS");
  for (const int64_t bytes : bench::PingPongSizes()) {
    std::printf(
        "{\"bench\":\"ping_pong\",\"bytes\":%lld,\"round_trips\":%lld,\"host\":\"%s\",\"ucx_tls\":\"%s\","
        "\"ucx_seconds\":%s,\"gloo_seconds\":%s,\"ucx_step_seconds\":%s,\"gloo_step_seconds\":%s,"
        "\"tcp_seconds\":%s,\"mpi_seconds\":%s,\"mpi_tcp_seconds\":%s,"
        "\"ucx_to_tcp\":%s,\"gloo_to_tcp\":%s,\"ucx_to_mpi_tcp\":%s,\"ucx_minus_tcp_us\":%s,"
        "\"gloo_minus_tcp_us\":%s}\n",
        static_cast<long long>(bytes), static_cast<long long>(bench::PingPongRoundTrips(bytes, scale)),
        absl::GetFlag(FLAGS_host).c_str(), tls != nullptr ? tls : "", Value(medians.ucx, bytes).c_str(),
        Value(medians.gloo, bytes).c_str(), Value(medians.ucx_step, bytes).c_str(),
        Value(medians.gloo_step, bytes).c_str(), Value(medians.tcp, bytes).c_str(), Value(mpi, bytes).c_str(),
        Value(mpi_tcp, bytes).c_str(), Ratio(medians.ucx, medians.tcp, bytes).c_str(),
        Ratio(medians.gloo, medians.tcp, bytes).c_str(), Ratio(medians.ucx, mpi_tcp, bytes).c_str(),
        MinusMicroseconds(medians.ucx, medians.tcp, bytes).c_str(),
        MinusMicroseconds(medians.gloo, medians.tcp, bytes).c_str());
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
