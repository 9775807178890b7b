// The MPI reference of cross_process_bench (any number of ranks): MPI_Allreduce of floats (sum, out of place)
// at the same sizes and iteration counts, one JSON line per size from rank 0:
//   {"bytes":4096,"seconds":...,"median_seconds":...}
// `seconds` is the mean over the timed calls, `median_seconds` the median of the calls
// timed one by one (robust to the millisecond stalls a loaded machine inflicts on a few).
// Started by cross_process_bench under mpirun; by hand:
//   mpirun --allow-run-as-root --oversubscribe -np 2 bazel-bin/bench/collectives/mpi_allreduce_bench --scale=1
// Debian links the active MPI's headers under /usr/include/x86_64-linux-gnu/mpi, inside
// the toolchain's system include directories (Bazel refuses -I paths outside the
// execution root such as /usr/lib/x86_64-linux-gnu/openmpi/include).
#include <mpi/mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/collectives/cross_process_sizes.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  double scale = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--scale=", 8) == 0) scale = std::atof(argv[i] + 8);
  }
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // Rank r contributes 1 + r.
  const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
  for (const int64_t bytes : oneflow::bench::CrossProcessSizes()) {
    const int count = static_cast<int>(bytes / sizeof(float));
    std::vector<float> input(count, 1.0f + rank);
    std::vector<float> output(count, 0.0f);
    const int64_t iterations = oneflow::bench::CrossProcessIterations(bytes, scale);
    for (int i = 0; i < oneflow::bench::kWarmupIterations; ++i) {
      MPI_Allreduce(input.data(), output.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<double> calls(iterations);
    const double start = MPI_Wtime();
    for (int64_t i = 0; i < iterations; ++i) {
      const double call_start = MPI_Wtime();
      MPI_Allreduce(input.data(), output.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      calls[i] = MPI_Wtime() - call_start;
    }
    const double seconds = (MPI_Wtime() - start) / static_cast<double>(iterations);
    std::nth_element(calls.begin(), calls.begin() + iterations / 2, calls.end());
    const double median = calls[iterations / 2];
    if (output[count - 1] != expected) {
      std::fprintf(stderr, "mpi_allreduce_bench: wrong sum %f\n", output[count - 1]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
      std::printf("{\"bytes\":%lld,\"seconds\":%.9g,\"median_seconds\":%.9g}\n",
                  static_cast<long long>(bytes), seconds, median);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
