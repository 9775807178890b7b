#include "actors/forward_first.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

ForwardFirstActor Actor(proto::PipelineAct act, bool per_iteration, std::vector<int> producers,
                        std::vector<int> consumers) {
  ForwardFirstActor actor;
  actor.pipeline_act = act;
  actor.per_iteration = per_iteration;
  actor.producers = std::move(producers);
  actor.consumers = std::move(consumers);
  return actor;
}

constexpr proto::PipelineAct kUnset = proto::PIPELINE_ACT_UNSET;
constexpr proto::PipelineAct kForward = proto::PIPELINE_ACT_FORWARD;
constexpr proto::PipelineAct kInput = proto::PIPELINE_ACT_BACKWARD_INPUT;
constexpr proto::PipelineAct kWeight = proto::PIPELINE_ACT_BACKWARD_WEIGHT;

// A first stage: a variable and the data feed a forward matmul, whose output goes
// through a boxing to the send; the gradient comes back through a receive into the input
// gradient (B) and the weight gradient (W), whose boxing feeds the variable's update.
std::vector<ForwardFirstActor> Stage() {
  return {
      Actor(kUnset, true, {}, {2, 7}),      // 0 variable (per iteration)
      Actor(kForward, false, {}, {2}),      // 1 data
      Actor(kForward, false, {0, 1}, {3, 6, 7}),  // 2 matmul
      Actor(kUnset, false, {2}, {4}),       // 3 its output's boxing: fed by forward only
      Actor(kUnset, false, {3}, {}),        // 4 the send: fed by forward only
      Actor(kUnset, false, {}, {6, 7}),     // 5 the gradient's receive: feeds backward only
      Actor(kInput, false, {5, 2}, {}),     // 6 input gradient
      Actor(kWeight, false, {5, 2, 0}, {8}),  // 7 weight gradient
      Actor(kUnset, false, {7}, {9}),       // 8 the weight gradient's boxing: feeds the update
      Actor(kUnset, true, {8, 0}, {}),      // 9 the update (per iteration)
  };
}

TEST(ForwardFirstTest, ForwardActsVariablesUpdatesAndWhatConnectsThemRunFirst) {
  EXPECT_EQ(ForwardActors(Stage()),
            (std::vector<bool>{true, true, true, true, true, false, false, false, true, true}));
}

TEST(ForwardFirstTest, APlanWithoutForwardActsKeepsThePlainPick) {
  std::vector<ForwardFirstActor> stage = Stage();
  for (ForwardFirstActor& actor : stage) {
    if (actor.pipeline_act == kForward) actor.pipeline_act = kUnset;
  }
  EXPECT_EQ(ForwardActors(stage), std::vector<bool>(stage.size(), false));
}

TEST(ForwardFirstTest, TheQueueGivesTheReadyForwardOfTheOldestMicroBatchFirst) {
  // Actor 0 a backward of micro-batch 1, actors 1 and 2 forwards of micro-batches 3 and 2.
  std::vector<ForwardFirstQueue::Key> keys = {{1, 1, 0}, {0, 3, 1}, {0, 2, 2}};
  std::vector<bool> ready = {true, true, true};
  auto key_of = [&](int a) { return keys[a]; };
  auto is_ready = [&](int a) { return static_cast<bool>(ready[a]); };
  ForwardFirstQueue queue;
  for (const auto& key : keys) queue.Push(key);
  EXPECT_EQ(queue.PopReady(key_of, is_ready), 2);
  // Actor 1 acted for micro-batch 3 and moved on to 4 since it was queued: its entry goes
  // back with its current key, behind nothing else forward, so it still comes before the
  // backward.
  keys[1] = {0, 4, 1};
  EXPECT_EQ(queue.PopReady(key_of, is_ready), 1);
  // A backward not ready is dropped, not returned.
  ready[0] = false;
  EXPECT_EQ(queue.PopReady(key_of, is_ready), std::nullopt);
  EXPECT_EQ(queue.PopReady(key_of, is_ready), std::nullopt);
}

}  // namespace
}  // namespace oneflow::actors
