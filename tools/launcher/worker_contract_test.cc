// The worker contract's two channels: events through a pipe, progress in a status file.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/daemon_process.h"
#include "tools/launcher/testing/test_plans.h"
#include "tools/launcher/worker_events.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::launcher {
namespace {

std::string ReadAll(int fd) {
  std::string bytes;
  char buffer[4096];
  ssize_t got;
  while ((got = read(fd, buffer, sizeof(buffer))) > 0) bytes.append(buffer, static_cast<size_t>(got));
  return bytes;
}

TEST(WorkerEventsTest, EventsCrossAPipeWhateverTheChunking) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  WorkerEventWriter writer(fds[1]);
  for (int i = 0; i < 3; ++i) {
    proto::JobEvent event;
    event.mutable_metrics()->set_iteration(i);
    event.mutable_metrics()->set_loss(1.5 * i);
    ASSERT_TRUE(writer.Write(event).ok());
  }
  proto::JobEvent failed;
  failed.mutable_failed()->set_reason(std::string(300, 'x'));  // A two-byte length prefix.
  ASSERT_TRUE(writer.Write(failed).ok());
  close(fds[1]);
  const std::string bytes = ReadAll(fds[0]);
  close(fds[0]);

  WorkerEventParser parser;
  std::vector<proto::JobEvent> events;
  for (char byte : bytes) {  // One byte at a time: every split point of a length or body.
    parser.Append(std::string(1, byte));
    while (true) {
      absl::StatusOr<std::optional<proto::JobEvent>> next = parser.Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      events.push_back(**next);
    }
  }
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[2].metrics().iteration(), 2);
  EXPECT_EQ(events[2].metrics().loss(), 3.0);
  EXPECT_EQ(events[3].failed().reason().size(), 300u);
  EXPECT_EQ(parser.pending_bytes(), 0u);
}

TEST(WorkerEventsTest, GarbageIsDataLoss) {
  WorkerEventParser parser;
  parser.Append("\xff\xff\xff\xff\x7f garbage");  // Announces a 34 GB event.
  EXPECT_EQ(parser.Next().status().code(), absl::StatusCode::kDataLoss);
  WorkerEventParser unparsable;
  unparsable.Append(std::string("\x03\xff\xff\xff", 4));
  EXPECT_EQ(unparsable.Next().status().code(), absl::StatusCode::kDataLoss);
}

TEST(WorkerEventsTest, WriteToAClosedPipeIsUnavailable) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  signal(SIGPIPE, SIG_IGN);
  WorkerEventWriter writer(fds[1]);
  proto::JobEvent event;
  event.mutable_log()->set_text("x");
  EXPECT_EQ(writer.Write(event).code(), absl::StatusCode::kUnavailable);
  close(fds[1]);
}

TEST(WorkerStatusFileTest, RecordsSurviveTheWriter) {
  const std::string path = testing::TestDirectory("status") + "/status";
  {
    absl::StatusOr<std::unique_ptr<WorkerStatusFile>> file = WorkerStatusFile::Create(path, {3, 5});
    ASSERT_TRUE(file.ok()) << file.status();
    (*file)->SetCompletedCollectives(0, 7);
    (*file)->SetCompletedIterations(0, 2);
    (*file)->SetCompletedCollectives(1, 6);
    (*file)->SetCompletedIterations(1, 2);
    (*file)->SetCompletedCollectives(2, 99);  // Not a slot: ignored.
  }
  const std::vector<proto::DeviceProgress> progress = ReadWorkerStatusFile(path, 2);
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].device(), 3);
  EXPECT_EQ(progress[0].completed_collectives(), 7);
  EXPECT_EQ(progress[0].completed_iterations(), 2);
  EXPECT_EQ(progress[1].device(), 5);
  EXPECT_EQ(progress[1].completed_collectives(), 6);
}

TEST(WorkerStatusFileTest, CollectiveActivityAndHeartbeat) {
  const std::string path = testing::TestDirectory("status") + "/status";
  absl::StatusOr<std::unique_ptr<WorkerStatusFile>> file = WorkerStatusFile::Create(path, {3, 5}, /*heartbeat_ms=*/10);
  ASSERT_TRUE(file.ok()) << file.status();
  WorkerStatusSnapshot before = ReadWorkerStatus(path, 2);
  ASSERT_TRUE(before.present);
  EXPECT_EQ(before.progress[1].collective(), -1);
  (*file)->SetCollectiveActivity(1, 8, 4, 123456);
  // The heartbeat thread ticks every 10 ms; on a loaded machine it may wait its turn.
  WorkerStatusSnapshot after = ReadWorkerStatus(path, 2);
  for (int wait = 0; wait < 500 && after.heartbeat <= before.heartbeat; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = ReadWorkerStatus(path, 2);
  }
  ASSERT_EQ(after.progress.size(), 2u);
  EXPECT_EQ(after.progress[1].entered_collectives(), 8);
  EXPECT_EQ(after.progress[1].collective(), 4);
  EXPECT_EQ(after.progress[1].collective_ns(), 123456);
  EXPECT_EQ(after.progress[0].entered_collectives(), 0);
  EXPECT_GT(after.heartbeat, before.heartbeat);  // The worker's heartbeat thread ticks.
  file->reset();
  const int64_t stopped = ReadWorkerStatus(path, 2).heartbeat;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ReadWorkerStatus(path, 2).heartbeat, stopped);
}

TEST(WorkerStatusFileTest, GroupActivityPerDeviceAndGroup) {
  const std::string path = testing::TestDirectory("status-groups") + "/status";
  // Slot 0 (plan device 3) is in groups 0 and 2, slot 1 (device 5) in group 1.
  absl::StatusOr<std::unique_ptr<WorkerStatusFile>> file =
      WorkerStatusFile::Create(path, {3, 5}, /*heartbeat_ms=*/0, {{0, 2}, {1}});
  ASSERT_TRUE(file.ok()) << file.status();
  (*file)->SetGroupActivity(0, 2, 6, 5, 9);
  (*file)->SetGroupActivity(1, 1, 4, 4, 7);
  (*file)->SetGroupActivity(1, 2, 99, 99, 99);  // no record: ignored
  const std::vector<proto::DeviceProgress> progress = ReadWorkerStatusFile(path, 2);
  ASSERT_EQ(progress.size(), 2u);
  ASSERT_EQ(progress[0].groups_size(), 2);
  EXPECT_EQ(progress[0].groups(0).group(), 0);
  EXPECT_EQ(progress[0].groups(0).entered(), 0);
  EXPECT_EQ(progress[0].groups(0).collective(), -1);
  EXPECT_EQ(progress[0].groups(1).group(), 2);
  EXPECT_EQ(progress[0].groups(1).entered(), 6);
  EXPECT_EQ(progress[0].groups(1).completed(), 5);
  EXPECT_EQ(progress[0].groups(1).collective(), 9);
  ASSERT_EQ(progress[1].groups_size(), 1);
  EXPECT_EQ(progress[1].groups(0).group(), 1);
  EXPECT_EQ(progress[1].groups(0).entered(), 4);
  EXPECT_EQ(progress[1].groups(0).collective(), 7);
  // A file without group records (an older worker's): none, the rest read as before.
  absl::StatusOr<std::unique_ptr<WorkerStatusFile>> plain = WorkerStatusFile::Create(path, {3, 5}, 0);
  ASSERT_TRUE(plain.ok());
  (*plain)->SetCompletedCollectives(1, 6);
  const std::vector<proto::DeviceProgress> without = ReadWorkerStatusFile(path, 2);
  ASSERT_EQ(without.size(), 2u);
  EXPECT_EQ(without[0].groups_size(), 0);
  EXPECT_EQ(without[1].completed_collectives(), 6);
}

TEST(WorkerStatusFileTest, MissingOrShortFileGivesNoProgress) {
  const std::string directory = testing::TestDirectory("status");
  EXPECT_TRUE(ReadWorkerStatusFile(directory + "/missing", 2).empty());
  std::ofstream(directory + "/short") << std::string(30, '\0');
  EXPECT_TRUE(ReadWorkerStatusFile(directory + "/short", 2).empty());
}

TEST(WorkerStatusFileTest, NodeDeviceIndicesFollowPlanOrder) {
  const proto::Plan plan = testing::FakeJobPlan("fake:finish", 2, 2);
  EXPECT_EQ(NodeDeviceIndices(plan, 1), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(NodeDeviceIndices(plan, 2).empty());
}

}  // namespace
}  // namespace oneflow::launcher
