// The MPI reference of ping_pong_bench (2 ranks): MPI_Send/MPI_Recv round trips at the
// same sizes and counts, one JSON line per size from rank 0:
//   {"bytes":4096,"median_seconds":...}
// the median of the round trips timed one by one. Started by ping_pong_bench under mpirun;
// by hand:
//   mpirun --allow-run-as-root --oversubscribe -np 2 bazel-bin/bench/collectives/mpi_ping_pong_bench
// (mpi_allreduce_bench.cc says why the header is <mpi/mpi.h>.)
#include <mpi/mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/collectives/ping_pong_sizes.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  double scale = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--scale=", 8) == 0) scale = std::atof(argv[i] + 8);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int peer = 1 - rank;
  for (const int64_t bytes : oneflow::bench::PingPongSizes()) {
    std::vector<char> buffer(bytes, static_cast<char>(rank + 1));
    const int count = static_cast<int>(bytes);
    auto round_trip = [&] {
      if (rank == 0) {
        MPI_Send(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      }
    };
    for (int i = 0; i < oneflow::bench::kPingPongWarmups; ++i) round_trip();
    const int64_t round_trips = oneflow::bench::PingPongRoundTrips(bytes, scale);
    std::vector<double> calls(round_trips);
    for (int64_t i = 0; i < round_trips; ++i) {
      const double start = MPI_Wtime();
      round_trip();
      calls[i] = MPI_Wtime() - start;
    }
    std::nth_element(calls.begin(), calls.begin() + round_trips / 2, calls.end());
    if (buffer[bytes - 1] != 1) {
      std::fprintf(stderr, "mpi_ping_pong_bench: rank %d holds %d\n", rank, buffer[bytes - 1]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
      std::printf("{\"bytes\":%lld,\"median_seconds\":%.9g}\n", static_cast<long long>(bytes),
                  calls[round_trips / 2]);
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
