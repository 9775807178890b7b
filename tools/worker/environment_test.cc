#include "tools/worker/environment.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace oneflow::worker {
namespace {

// The route lookup answers for a fake cluster: 10.0.0.* is reached from 10.0.0.9.
absl::StatusOr<std::string> FakeRoute(const std::string& host, int64_t) {
  if (host == "127.0.0.1") return std::string("127.0.0.1");
  if (host.rfind("10.0.0.", 0) == 0) return std::string("10.0.0.9");
  return absl::InvalidArgumentError(absl::StrCat("MASTER_ADDR='", host, "' does not resolve"));
}

absl::StatusOr<WorkerEnvironment> Read(const std::map<std::string, std::string>& variables) {
  return ReadWorkerEnvironment(
      [&](const char* name) -> const char* {
        auto it = variables.find(name);
        return it == variables.end() ? nullptr : it->second.c_str();
      },
      FakeRoute);
}

TEST(EnvironmentTest, TorchStyleVariables) {
  auto environment = Read({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(environment.ok()) << environment.status();
  EXPECT_EQ(environment->rank, 1);
  EXPECT_EQ(environment->world_size, 2);
  EXPECT_EQ(environment->rendezvous_address, "10.0.0.5:29500");
  EXPECT_EQ(environment->job_id, "env");
  // Without ONEFLOW_WORKER_HOST: this machine's address toward MASTER_ADDR.
  EXPECT_EQ(environment->worker_host, "10.0.0.9");
}

TEST(EnvironmentTest, LocalAddressTowardLoopbackIsLoopback) {
  absl::StatusOr<std::string> local = LocalAddressToward("127.0.0.1", 29500);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(*local, "127.0.0.1");
  EXPECT_EQ(LocalAddressToward("no-such-host.invalid", 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EnvironmentTest, SlurmAndOpenMpiVariables) {
  auto slurm = Read({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_JOB_ID", "777"},
                     {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "1234"}, {"ONEFLOW_WORKER_HOST", "n3"}});
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  EXPECT_EQ(slurm->rank, 2);
  EXPECT_EQ(slurm->world_size, 3);
  EXPECT_EQ(slurm->job_id, "777");
  EXPECT_EQ(slurm->worker_host, "n3");
  auto mpi = Read({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", "1"}});
  ASSERT_TRUE(mpi.ok()) << mpi.status();
  EXPECT_EQ(mpi->world_size, 2);
  EXPECT_EQ(mpi->worker_host, "127.0.0.1");
  EXPECT_EQ(Read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "elsewhere"}, {"MASTER_PORT", "1"}})
                .status()
                .message(),
            "MASTER_ADDR='elsewhere' does not resolve");
}

TEST(EnvironmentTest, ErrorsNameTheVariable) {
  EXPECT_EQ(Read({}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Read({{"RANK", "0"}}).status().message(),
            "RANK is set but no world size is (WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE or PMI_SIZE)");
  EXPECT_EQ(Read({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).status().message(),
            "environment variable RANK='x' is not an integer >= 0");
  EXPECT_EQ(Read({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}).status().message(),
            "RANK=2 is not below WORLD_SIZE=2");
  EXPECT_EQ(Read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).status().message(),
            "MASTER_ADDR and MASTER_PORT must name where rank 0 serves the rendezvous store");
  EXPECT_EQ(Read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})
                .status()
                .message(),
            "environment variable MASTER_PORT='70000' is not a port in [1, 65535]");
}

}  // namespace
}  // namespace oneflow::worker
