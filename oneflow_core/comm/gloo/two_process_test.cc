// Two real processes: this test (rank 0) starts this binary again as rank 1, and they
// meet through a FileKeyValueStore in a temporary directory. They run checked calls, then
// rank 1's process exits without closing anything properly (as a crash would): rank 0,
// blocked in a call with a 60 s timeout, must fail within seconds as UNAVAILABLE naming
// rank 1, since a dead process leaves no record in the store.
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"

extern char** environ;

namespace oneflow {
namespace {

using ::testing::HasSubstr;

constexpr char kChildDirectory[] = "GLOO_TWO_PROCESS_TEST_DIRECTORY";
constexpr int kCalls = 3;
constexpr int64_t kCount = 600000;  // more than one 1 MiB segment per chunk

float Value(int64_t rank, int call, int64_t element) {
  return static_cast<float>((element * 31 + rank * 1009 + call * 7) % 2053) * 0.5f;
}

std::unique_ptr<Communicator> MakeRank(KeyValueStore* store, int64_t rank) {
  GlooGroupOptions options;
  options.group_name = "two_process";
  options.rank = rank;
  options.size = 2;
  options.store = store;
  absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewGlooCommunicator(options);
  EXPECT_TRUE(communicator.ok()) << communicator.status();
  return std::move(communicator).value();
}

// The checked part both ranks run: all-reduces, then rank 1 sends rank 0 a message.
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
    for (int64_t i = 0; i < kCount; ++i) wrong += data[i] != Value(0, call, i) + Value(1, call, i);
    ASSERT_EQ(wrong, 0) << "call " << call;
  }
  std::string message = rank == 1 ? "hello from rank 1" : std::string(17, '?');
  const absl::Status status = rank == 1
                                  ? communicator.Send(message.data(), message.size(), 0, options)
                                  : communicator.Recv(message.data(), message.size(), 1, options);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(message, "hello from rank 1");
}

// Rank 1: runs only as the process rank 0 starts.
TEST(GlooTwoProcessTest, ChildRank) {
  const char* directory = std::getenv(kChildDirectory);
  if (directory == nullptr) GTEST_SKIP() << "runs as the second process of ParentRank";
  FileKeyValueStore store(directory);
  std::unique_ptr<Communicator> communicator = MakeRank(&store, 1);
  RunCheckedCalls(*communicator);
  // Leave mid-job without a word: no destructor, no record in the store.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
}

TEST(GlooTwoProcessTest, ParentRank) {
  if (std::getenv(kChildDirectory) != nullptr) GTEST_SKIP() << "this is the child";
  const char* temporary = std::getenv("TEST_TMPDIR");
  std::string pattern =
      absl::StrCat(temporary != nullptr ? temporary : "/tmp", "/gloo_two_process_XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  FileKeyValueStore store(pattern);

  // The child: this binary, only its ChildRank test, with the store's directory.
  std::vector<std::string> environment = {absl::StrCat(kChildDirectory, "=", pattern)};
  for (char** variable = environ; *variable != nullptr; ++variable)
    environment.push_back(*variable);
  std::vector<char*> child_environment;
  for (std::string& variable : environment) child_environment.push_back(variable.data());
  child_environment.push_back(nullptr);
  std::string program = "/proc/self/exe";
  std::string filter = "--gtest_filter=GlooTwoProcessTest.ChildRank";
  char* arguments[] = {program.data(), filter.data(), nullptr};
  pid_t child = 0;
  ASSERT_EQ(
      posix_spawn(&child, program.c_str(), nullptr, nullptr, arguments, child_environment.data()),
      0);

  std::unique_ptr<Communicator> communicator = MakeRank(&store, 0);
  RunCheckedCalls(*communicator);

  // Rank 1 never makes this call; its process exits while rank 0 waits.
  CollectiveOptions options;
  options.timeout = absl::Seconds(60);
  options.description = "two_process_test rank 0";
  std::vector<float> data(16, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = communicator->AllReduce(data.data(), data.data(), 16, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(
      std::string(status.message()),
      HasSubstr("two_process_test rank 0: gloo group 'two_process' rank 0 of 2, all_reduce call "
                "4: stopped waiting for rank 1 to arrive: lost the connection to rank 1: "));

  int child_status = 0;
  ASSERT_EQ(waitpid(child, &child_status, 0), child);
  ASSERT_TRUE(WIFEXITED(child_status)) << "child status " << child_status;
  EXPECT_EQ(WEXITSTATUS(child_status), 0) << "rank 1's checks failed; see its output above";
}

}  // namespace
}  // namespace oneflow
