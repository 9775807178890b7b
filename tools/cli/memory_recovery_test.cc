// Choosing the in-memory checkpoint a recovered job resumes from: a lost node's part is
// taken from the next node's replica, a node's own daemon is preferred, and when both
// copies of a part are gone the checkpoint is incomplete and said so.
#include "tools/cli/memory_recovery.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

const std::vector<std::string> kDaemons = {"h:1", "h:2", "h:3"};

proto::MemoryCheckpointEntry Entry(int64_t owner, int64_t iteration) {
  proto::MemoryCheckpointEntry entry;
  entry.set_owner_node(owner);
  entry.set_iteration(iteration);
  for (int64_t node : {0, 1, 2}) entry.add_saving_nodes(node);
  return entry;
}

// What daemon `d` holds after iterations 10 and 20 were put: its node's parts and the
// previous node's replicas.
HeldParts Held(int d) {
  HeldParts held{kDaemons[d], {}};
  const int previous = (d + 2) % 3;
  for (int64_t iteration : {10, 20}) {
    held.entries.push_back(Entry(d, iteration));
    held.entries.push_back(Entry(previous, iteration));
  }
  return held;
}

TEST(MemoryRecoveryTest, ALostNodesPartComesFromTheNextNodesReplica) {
  // Daemon 1 is lost: node 1's part is on daemon 2 (its replica).
  const MemoryResumePoint point = ChooseMemoryCheckpoint({Held(0), Held(2)}, kDaemons);
  EXPECT_EQ(point.iteration, 20);
  EXPECT_EQ(point.holders, std::vector<std::string>({"h:1", "h:3", "h:3"}));
  EXPECT_TRUE(point.incomplete.empty());
}

TEST(MemoryRecoveryTest, EveryNodeReadsItsOwnDaemonWhenAllAnswer) {
  const MemoryResumePoint point = ChooseMemoryCheckpoint({Held(2), Held(1), Held(0)}, kDaemons);
  EXPECT_EQ(point.iteration, 20);
  EXPECT_EQ(point.holders, kDaemons);
}

TEST(MemoryRecoveryTest, BothCopiesLostIsIncompleteAndSaidSo) {
  // Daemons 1 and 2 are lost: node 1's part was on both.
  const MemoryResumePoint point = ChooseMemoryCheckpoint({Held(0)}, kDaemons);
  EXPECT_EQ(point.iteration, 0);
  ASSERT_EQ(point.incomplete.size(), 2u);
  EXPECT_EQ(point.incomplete[0],
            "in-memory checkpoint after iteration 20 is incomplete: node 1's part is lost (it was on h:2 and its "
            "replica on h:3)");
  EXPECT_EQ(point.incomplete[1].rfind("in-memory checkpoint after iteration 10 is incomplete", 0), 0u);
}

TEST(MemoryRecoveryTest, ANewerIterationHalfSentFallsBackToTheOlderOne) {
  // A failure during the sends of iteration 30: only node 0's part of it arrived.
  HeldParts first = Held(0);
  first.entries.push_back(Entry(0, 30));
  const MemoryResumePoint point = ChooseMemoryCheckpoint({first, Held(1), Held(2)}, kDaemons);
  EXPECT_EQ(point.iteration, 20);
  ASSERT_EQ(point.incomplete.size(), 1u);
  EXPECT_EQ(point.incomplete[0],
            "in-memory checkpoint after iteration 30 is incomplete: node 1's part is lost (it was on h:2 and its "
            "replica on h:3); node 2's part is lost (it was on h:3 and its replica on h:1)");
}

TEST(MemoryRecoveryTest, NothingHeldIsNoPoint) {
  const MemoryResumePoint point = ChooseMemoryCheckpoint({{"h:1", {}}}, kDaemons);
  EXPECT_EQ(point.iteration, 0);
  EXPECT_TRUE(point.incomplete.empty());
}

}  // namespace
}  // namespace oneflow::cli
