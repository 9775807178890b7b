// Where the cross-process benchmarks find programs: their own binary (to start more ranks
// and their MPI references beside it) and mpirun.
#ifndef BENCH_COLLECTIVES_PROGRAM_PATHS_H_
#define BENCH_COLLECTIVES_PROGRAM_PATHS_H_

#include <optional>
#include <string>

namespace oneflow {
namespace bench {

// This process's binary (/proc/self/exe); nullopt when it cannot be read.
std::optional<std::string> SelfPath();

// The first executable `program` in a directory of $PATH, or nullopt.
std::optional<std::string> FindOnPath(const std::string& program);

}  // namespace bench
}  // namespace oneflow

#endif  // BENCH_COLLECTIVES_PROGRAM_PATHS_H_
