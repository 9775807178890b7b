#include "tools/worker/environment.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/files/file_descriptor.h"

namespace oneflow::worker {
namespace {

struct Found {
  const char* name = nullptr;
  std::string value;
};

Found First(const std::function<const char*(const char*)>& getenv_function, const std::vector<const char*>& names) {
  for (const char* name : names) {
    const char* value = getenv_function(name);
    if (value != nullptr && *value != '\0') return Found{name, value};
  }
  return Found{};
}

absl::StatusOr<int64_t> Integer(const Found& found, int64_t minimum) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(found.value, &value) || value < minimum) {
    return absl::InvalidArgumentError(absl::StrCat("environment variable ", found.name, "='", found.value,
                                                   "' is not an integer >= ", minimum));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int64_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* resolved = nullptr;
  const int error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &resolved);
  if (error != 0 || resolved == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("MASTER_ADDR='", host, "' does not resolve to an IPv4 address (",
                                                   gai_strerror(error), "); set ONEFLOW_WORKER_HOST to this node's address"));
  }
  const FileDescriptor socket_fd(socket(AF_INET, SOCK_DGRAM, 0));
  std::string address;
  if (socket_fd.valid() && connect(socket_fd.get(), resolved->ai_addr, resolved->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(socket_fd.get(), reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      address = text;
    }
  }
  const int saved = errno;
  freeaddrinfo(resolved);
  if (address.empty() || address == "0.0.0.0") {
    return absl::InvalidArgumentError(absl::StrCat("no route from this machine to MASTER_ADDR='", host, "' (",
                                                   std::strerror(saved), "); set ONEFLOW_WORKER_HOST to this node's address"));
  }
  return address;
}

absl::StatusOr<WorkerEnvironment> ReadWorkerEnvironment(
    const std::function<const char*(const char*)>& getenv_function,
    const std::function<absl::StatusOr<std::string>(const std::string&, int64_t)>& local_address_toward) {
  const Found rank = First(getenv_function, {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"});
  if (rank.name == nullptr) {
    return absl::NotFoundError(
        "no rank in the environment (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK)");
  }
  const Found size = First(getenv_function, {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (size.name == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(rank.name, " is set but no world size is (WORLD_SIZE, "
                                                   "SLURM_NTASKS, OMPI_COMM_WORLD_SIZE or PMI_SIZE)"));
  }
  WorkerEnvironment environment;
  auto parsed_rank = Integer(rank, 0);
  if (!parsed_rank.ok()) return parsed_rank.status();
  auto parsed_size = Integer(size, 1);
  if (!parsed_size.ok()) return parsed_size.status();
  environment.rank = *parsed_rank;
  environment.world_size = *parsed_size;
  if (environment.rank >= environment.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(rank.name, "=", environment.rank, " is not below ", size.name,
                                                   "=", environment.world_size));
  }
  const Found address = First(getenv_function, {"MASTER_ADDR"});
  const Found port = First(getenv_function, {"MASTER_PORT"});
  if (address.name == nullptr || port.name == nullptr) {
    return absl::InvalidArgumentError("MASTER_ADDR and MASTER_PORT must name where rank 0 serves the rendezvous store");
  }
  auto parsed_port = Integer(port, 1);
  if (!parsed_port.ok() || *parsed_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("environment variable MASTER_PORT='", port.value,
                                                   "' is not a port in [1, 65535]"));
  }
  environment.rendezvous_address = absl::StrCat(address.value, ":", *parsed_port);
  const Found job = First(getenv_function, {"ONEFLOW_JOB_ID", "SLURM_JOB_ID"});
  environment.job_id = job.name == nullptr ? "env" : job.value;
  const Found host = First(getenv_function, {"ONEFLOW_WORKER_HOST"});
  if (host.name != nullptr) {
    environment.worker_host = host.value;
  } else {
    // Gloo must bind an address the other nodes reach: the one this node uses toward
    // rank 0 (127.0.0.1 would leave every cross-host connection refused).
    absl::StatusOr<std::string> local = local_address_toward(address.value, *parsed_port);
    if (!local.ok()) return local.status();
    environment.worker_host = *local;
  }
  return environment;
}

}  // namespace oneflow::worker
