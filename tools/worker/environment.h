// A worker started without a daemon, by a scheduler (Slurm, mpirun, torchrun-style
// scripts): its rank, the world size and where to meet come from the environment.
//
//   rank        RANK, else SLURM_PROCID, else OMPI_COMM_WORLD_RANK, else PMI_RANK
//   world size  WORLD_SIZE, else SLURM_NTASKS, else OMPI_COMM_WORLD_SIZE, else PMI_SIZE
//   rendezvous  MASTER_ADDR and MASTER_PORT: rank 0 serves the rendezvous store there,
//               the others connect to it
//   job id      ONEFLOW_JOB_ID, else SLURM_JOB_ID, else "env"
//   worker host ONEFLOW_WORKER_HOST, else this machine's address on the route to
//               MASTER_ADDR (the address Gloo binds: 127.0.0.1 when MASTER_ADDR is
//               loopback, the interface's address on a cluster)
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

// The local address of the route to host:port (IPv4, numeric): what the kernel would use
// as source address to reach it, found with a connected UDP socket (nothing is sent).
// INVALID_ARGUMENT naming MASTER_ADDR when the host does not resolve or is unreachable.
absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int64_t port);

// Reads the variables above through `getenv` (injectable for tests, as is the route
// lookup for the default worker host). NOT_FOUND when no rank variable is set (not
// started by a scheduler); INVALID_ARGUMENT naming the variable and its value when one is
// malformed or inconsistent.
absl::StatusOr<WorkerEnvironment> ReadWorkerEnvironment(
    const std::function<const char*(const char*)>& getenv_function,
    const std::function<absl::StatusOr<std::string>(const std::string&, int64_t)>& local_address_toward =
        LocalAddressToward);

}  // namespace oneflow::worker

#endif  // TOOLS_WORKER_ENVIRONMENT_H_
