#include "oneflow_core/process_memory.h"

#include <unistd.h>

#include <cstring>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;

TEST(ProcessMemoryTest, ParsesTheKernelsFields) {
  const std::string text = "Name:\tworker\nVmPeak:\t  900 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\nThreads:\t3\n";
  absl::StatusOr<ProcessMemory> memory = ParseProcessStatus(text, "/proc/7/status");
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->resident_bytes, 4096 * 1024);
  EXPECT_EQ(memory->peak_resident_bytes, 5120 * 1024);
}

TEST(ProcessMemoryTest, MissingOrMalformedFieldsNameTheFile) {
  absl::StatusOr<ProcessMemory> memory =
      ParseProcessStatus("Name:\tx\nVmRSS:\t12 MB\nVmHWM:\t1 kB\n", "/proc/9/status");
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(memory.status().message()), HasSubstr("/proc/9/status has no readable VmRSS"));
}

// Touching 64 MiB raises this process's own reading by about that much.
TEST(ProcessMemoryTest, SeesThisProcessGrow) {
  absl::StatusOr<ProcessMemory> before = ReadProcessMemory();
  ASSERT_TRUE(before.ok()) << before.status();
  constexpr size_t kBytes = size_t{64} << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);
  absl::StatusOr<ProcessMemory> after = ReadProcessMemory(getpid());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GE(after->resident_bytes - before->resident_bytes, static_cast<int64_t>(kBytes * 9 / 10));
  EXPECT_GE(after->peak_resident_bytes, after->resident_bytes);
  EXPECT_EQ(block[kBytes - 1], 1);
}

TEST(ProcessMemoryTest, AGoneProcessIsNotFound) {
  // Pid numbers stop well below 2^22 on Linux by default; this one is not running.
  EXPECT_EQ(ReadProcessMemory(4194304 + 17).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace oneflow
