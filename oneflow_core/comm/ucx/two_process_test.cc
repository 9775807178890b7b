// Three real processes on one UCX group: this test (rank 0) starts this binary twice more
// as ranks 1 and 2, and they meet through a FileKeyValueStore in a temporary directory.
// They run checked all-reduces large enough to leave UCX's eager path (shared memory and
// cross-memory attach between processes) and a send/recv, then rank 2 kills itself
// (SIGKILL: no destructor, no record in the store) while its last send, too large for
// UCX's eager path, is still waiting for rank 0. Rank 1, blocked in a call with a 60 s
// timeout, must fail within seconds as UNAVAILABLE naming rank 2. Rank 0 receives that
// send after rank 2 is gone: UCX then reads the dead process's memory (cross-memory
// attach), fails, and logs it at FATAL, which would abort rank 0 (context.cc); rank 0
// must instead fail the call the same way, naming rank 2.
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/ucx/communicator.h"

extern char** environ;

namespace oneflow {
namespace {

using ::testing::HasSubstr;

constexpr char kChildDirectory[] = "UCX_TWO_PROCESS_TEST_DIRECTORY";
constexpr char kChildRank[] = "UCX_TWO_PROCESS_TEST_RANK";
constexpr int64_t kRanks = 3;
constexpr int kCalls = 3;
constexpr int64_t kCount = 600000;  // more than one 1 MiB segment per chunk

float Value(int64_t rank, int call, int64_t element) {
  return static_cast<float>((element * 31 + rank * 1009 + call * 7) % 2053) * 0.5f;
}

std::unique_ptr<Communicator> MakeRank(KeyValueStore* store, int64_t rank) {
  UcxGroupOptions options;
  options.group_name = "two_process";
  options.rank = rank;
  options.size = kRanks;
  options.store = store;
  absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewUcxCommunicator(options);
  EXPECT_TRUE(communicator.ok()) << communicator.status();
  return std::move(communicator).value();
}

// What every rank runs first: all-reduces checked against the rank-order sum, then rank 2
// sends rank 0 a message.
void RunCheckedCalls(Communicator& communicator) {
  const int64_t rank = communicator.rank();
  CollectiveOptions options;
  options.timeout = absl::Seconds(30);
  options.description = absl::StrCat("two_process_test rank ", rank);
  for (int call = 0; call < kCalls; ++call) {
    std::vector<float> data(kCount);
    for (int64_t i = 0; i < kCount; ++i) data[i] = Value(rank, call, i);
    const absl::Status status = communicator.AllReduce(data.data(), data.data(), kCount, options);
    ASSERT_TRUE(status.ok()) << status;
    int64_t wrong = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      wrong += data[i] != (Value(0, call, i) + Value(1, call, i)) + Value(2, call, i);
    }
    ASSERT_EQ(wrong, 0) << "call " << call;
  }
  if (rank == 1) return;
  std::string message = rank == 2 ? "hello from rank 2" : std::string(17, '?');
  const absl::Status status = rank == 2
                                  ? communicator.Send(message.data(), message.size(), 0, options)
                                  : communicator.Recv(message.data(), message.size(), 2, options);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(message, "hello from rank 2");
}

// Rank 2's last send: 8 MiB, a rendezvous the receiver completes by reading the sender's
// memory.
constexpr int64_t kLastSendBytes = 8 << 20;

// After rank 2 died, rank 1: a call that rank 2 never makes; rank 0: the receive of rank
// 2's last send.
void ExpectRankTwoNamed(Communicator& communicator) {
  CollectiveOptions options;
  options.timeout = absl::Seconds(60);
  options.description = absl::StrCat("two_process_test rank ", communicator.rank());
  std::vector<float> data(16, 1.0f);
  std::vector<char> last_send(kLastSendBytes);
  const auto start = std::chrono::steady_clock::now();
  const bool receiving = communicator.rank() == 0;
  const absl::Status status = receiving
                                  ? communicator.Recv(last_send.data(), kLastSendBytes, 2, options)
                                  : communicator.AllReduce(data.data(), data.data(), 16, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("ucx group 'two_process' rank ", communicator.rank(), " of 3, ",
                                     receiving ? "receive 2 from rank 2" : "all_reduce call 4", ": ")));
  EXPECT_THAT(std::string(status.message()), HasSubstr("lost the connection to rank 2: "));
}

// Ranks 1 and 2: run only as processes rank 0 starts.
TEST(UcxTwoProcessTest, ChildRank) {
  const char* directory = std::getenv(kChildDirectory);
  const char* rank_text = std::getenv(kChildRank);
  if (directory == nullptr || rank_text == nullptr) GTEST_SKIP() << "runs as a child of ParentRank";
  int64_t rank = 0;
  ASSERT_TRUE(absl::SimpleAtoi(rank_text, &rank));
  FileKeyValueStore store(directory);
  std::unique_ptr<Communicator> communicator = MakeRank(&store, rank);
  RunCheckedCalls(*communicator);
  if (rank == 2) {
    if (::testing::Test::HasFailure()) std::_Exit(1);
    // Killed mid-job, its last send posted but not received: no destructor, no record in
    // the store.
    std::thread([&communicator] {
      std::vector<char> last_send(kLastSendBytes, 'x');
      CollectiveOptions options;
      options.timeout = absl::Seconds(60);
      (void)communicator->Send(last_send.data(), kLastSendBytes, 0, options);
    }).detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raise(SIGKILL);
  }
  ExpectRankTwoNamed(*communicator);
  std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
}

pid_t StartChild(const std::string& directory, int64_t rank) {
  std::vector<std::string> environment = {absl::StrCat(kChildDirectory, "=", directory),
                                          absl::StrCat(kChildRank, "=", rank)};
  for (char** variable = environ; *variable != nullptr; ++variable) environment.push_back(*variable);
  std::vector<char*> child_environment;
  for (std::string& variable : environment) child_environment.push_back(variable.data());
  child_environment.push_back(nullptr);
  std::string program = "/proc/self/exe";
  std::string filter = "--gtest_filter=UcxTwoProcessTest.ChildRank";
  char* arguments[] = {program.data(), filter.data(), nullptr};
  pid_t child = 0;
  EXPECT_EQ(posix_spawn(&child, program.c_str(), nullptr, nullptr, arguments, child_environment.data()), 0);
  return child;
}

TEST(UcxTwoProcessTest, ParentRank) {
  if (std::getenv(kChildDirectory) != nullptr) GTEST_SKIP() << "this is a child";
  const char* temporary = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(temporary != nullptr ? temporary : "/tmp", "/ucx_two_process_XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  FileKeyValueStore store(pattern);
  const pid_t survivor = StartChild(pattern, 1);
  const pid_t killed = StartChild(pattern, 2);

  std::unique_ptr<Communicator> communicator = MakeRank(&store, 0);
  RunCheckedCalls(*communicator);
  // Rank 2 gone before its last send is received.
  int status = 0;
  ASSERT_EQ(waitpid(killed, &status, 0), killed);
  ExpectRankTwoNamed(*communicator);

  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "rank 2's checks failed; see its output";
  ASSERT_EQ(waitpid(survivor, &status, 0), survivor);
  ASSERT_TRUE(WIFEXITED(status)) << "rank 1 status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "rank 1's checks failed; see its output above";
}

}  // namespace
}  // namespace oneflow
