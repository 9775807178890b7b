// A worker started without a daemon, by a scheduler (Slurm, mpirun, torchrun-style
// scripts): its rank, the world size and where to meet come from the environment.
//
//   rank        RANK, else SLURM_PROCID, else OMPI_COMM_WORLD_RANK, else PMI_RANK
//   world size  WORLD_SIZE, else SLURM_NTASKS, else OMPI_COMM_WORLD_SIZE, else PMI_SIZE
//   rendezvous  MASTER_ADDR and MASTER_PORT: rank 0 serves the rendezvous store there,
//               the others connect to it
//   job id      ONEFLOW_JOB_ID, else SLURM_JOB_ID, else "env"
//   worker host ONEFLOW_WORKER_HOST, else 127.0.0.1 (the address Gloo binds)
// The rank is the node rank: one worker per node of the plan.
#ifndef TOOLS_WORKER_ENVIRONMENT_H_
#define TOOLS_WORKER_ENVIRONMENT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace oneflow::worker {

struct WorkerEnvironment {
  int64_t rank = 0;
  int64_t world_size = 1;
  std::string rendezvous_address;  // MASTER_ADDR:MASTER_PORT
  std::string job_id;
  std::string worker_host;
};

// Reads the variables above through `getenv` (injectable for tests). NOT_FOUND when no
// rank variable is set (not started by a scheduler); INVALID_ARGUMENT naming the variable
// and its value when one is malformed or inconsistent.
absl::StatusOr<WorkerEnvironment> ReadWorkerEnvironment(
    const std::function<const char*(const char*)>& getenv_function);

}  // namespace oneflow::worker

#endif  // TOOLS_WORKER_ENVIRONMENT_H_
