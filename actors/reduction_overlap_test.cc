#include "actors/reduction_overlap.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;

void AddOp(proto::Job* job, const std::string& type, const std::map<std::string, std::string>& inputs,
           const std::string& output) {
  proto::OpDef* op = job->add_ops();
  op->set_name(output + "_op");
  op->set_type(type);
  for (const auto& [argument, tensor] : inputs) (*op->mutable_inputs())[argument] = tensor;
  if (!output.empty()) (*op->mutable_outputs())["out"] = output;
}

void AddBoxing(proto::Plan* plan, const std::string& tensor, std::vector<proto::BoxingStepKind> steps) {
  proto::BoxingDef* boxing = plan->add_boxings();
  boxing->set_id(plan->boxings_size() - 1);
  boxing->set_tensor(tensor);
  for (proto::BoxingStepKind kind : steps) boxing->add_steps()->set_kind(kind);
}

proto::ActorDef* AddActor(proto::DevicePlan* device, int64_t id, proto::ActorKind kind, proto::ThreadKind thread,
                          int64_t boxing = -1, int64_t step = -1) {
  proto::ActorDef* actor = device->add_actors();
  actor->set_id(id);
  actor->set_kind(kind);
  actor->set_thread(thread);
  actor->set_boxing_id(boxing);
  actor->set_boxing_step(step);
  return actor;
}

// Boxing 0: w_grad (read by sgd_update), all_reduce. Boxing 1: x_grad, an activation's
// gradient (read by a matmul), all_reduce. Boxing 2: v_grad, read by adamw_step through
// ZeRO-1's identity: all_reduce then a local slice. Boxing 3: u_grad, accumulated over
// micro-batches into sgd_update's grad, reduce_scatter.
proto::Plan TwoDevicePlan() {
  proto::Plan plan;
  proto::Job* job = plan.mutable_job();
  AddOp(job, "matmul_grad", {{"dy", "y_grad"}}, "w_grad");
  AddOp(job, "sgd_update", {{"param", "w"}, {"grad", "w_grad"}, {"momentum", "w_m"}}, "");
  AddOp(job, "matmul", {{"a", "x_grad"}, {"b", "w"}}, "z");
  AddOp(job, "identity", {{"x", "v_grad"}}, "v_grad_shard");
  AddOp(job, "adamw_step", {{"param", "v"}, {"grad", "v_grad_shard"}, {"m", "v_m"}, {"v", "v_v"}}, "v_new");
  AddOp(job, "accumulate", {{"x", "u_grad"}}, "u_grad_sum");
  AddOp(job, "sgd_update", {{"param", "u"}, {"grad", "u_grad_sum"}, {"momentum", "u_m"}}, "");
  AddBoxing(&plan, "w_grad", {proto::STEP_ALL_REDUCE});
  AddBoxing(&plan, "x_grad", {proto::STEP_ALL_REDUCE});
  AddBoxing(&plan, "v_grad", {proto::STEP_ALL_REDUCE, proto::STEP_LOCAL_SLICE});
  AddBoxing(&plan, "u_grad_sum", {proto::STEP_REDUCE_SCATTER});

  proto::DevicePlan* d0 = plan.add_devices();
  AddActor(d0, 1, proto::ACTOR_COMPUTE, proto::THREAD_COMPUTE);
  AddActor(d0, 2, proto::ACTOR_BOXING, proto::THREAD_COMMUNICATION, 0, 0);
  AddActor(d0, 3, proto::ACTOR_BOXING, proto::THREAD_COMMUNICATION, 1, 0);
  AddActor(d0, 4, proto::ACTOR_BOXING, proto::THREAD_COMMUNICATION)->set_bucket_id(0);
  AddActor(d0, 5, proto::ACTOR_BOXING, proto::THREAD_COMMUNICATION, 2, 0);
  AddActor(d0, 8, proto::ACTOR_COMPUTE, proto::THREAD_COMPUTE);
  AddActor(d0, 9, proto::ACTOR_BOXING, proto::THREAD_COMPUTE, 2, 1);
  AddActor(d0, 10, proto::ACTOR_BOXING, proto::THREAD_COMMUNICATION, 3, 0);
  proto::DevicePlan* d1 = plan.add_devices();
  d1->mutable_device()->set_device(1);
  AddActor(d1, 6, proto::ACTOR_COMPUTE, proto::THREAD_COMPUTE);
  AddActor(d1, 7, proto::ACTOR_BOXING, proto::THREAD_COMMUNICATION, 0, 0);
  return plan;
}

ActRecord Act(int device, int64_t actor, int64_t iteration, int64_t start, int64_t end) {
  return ActRecord{0, device, actor, iteration, start, end};
}

TEST(GradientReductionsTest, GradientsThroughIdentityAndAccumulateNotActivations) {
  const proto::Plan plan = TwoDevicePlan();
  const GradientReductions reductions(plan);
  auto actor = [&](int device, int index) -> const proto::ActorDef& { return plan.devices(device).actors(index); };
  EXPECT_TRUE(reductions.Contains(actor(0, 1)));   // w_grad's all_reduce
  EXPECT_FALSE(reductions.Contains(actor(0, 2)));  // x_grad: an activation's gradient
  EXPECT_TRUE(reductions.Contains(actor(0, 3)));   // a bucket
  EXPECT_TRUE(reductions.Contains(actor(0, 4)));   // v_grad, through the identity
  EXPECT_FALSE(reductions.Contains(actor(0, 0)));  // compute
  EXPECT_FALSE(reductions.Contains(actor(0, 6)));  // v_grad's local slice: no reduction
  EXPECT_TRUE(reductions.Contains(actor(0, 7)));   // u_grad_sum's reduce_scatter
}

TEST(MeasureReductionOverlapTest, HiddenFractionOfAConstructedTrace) {
  const std::vector<ActRecord> acts = {
      // Iteration 0, warm-up: the reduction is not counted.
      Act(0, 1, 0, 0, 100), Act(0, 2, 0, 50, 150), Act(1, 7, 0, 100, 150),
      // Iteration 1, device 0: compute [200, 300) and [350, 400).
      Act(0, 1, 1, 200, 300), Act(0, 8, 1, 350, 400),
      // w_grad's all_reduce [250, 330) and the bucket [320, 380): union [250, 380), 130 ns,
      // hidden [250, 300) and [350, 380), 80 ns.
      Act(0, 2, 1, 250, 330), Act(0, 4, 1, 320, 380),
      // x_grad's all_reduce is no gradient reduction; v_grad's [500, 520) is not hidden.
      Act(0, 3, 1, 300, 350), Act(0, 5, 1, 500, 520),
      // Device 1: compute [200, 260), w_grad's all_reduce [240, 300): 20 of 60 ns hidden.
      Act(1, 6, 1, 200, 260), Act(1, 7, 1, 240, 300)};
  absl::StatusOr<ReductionOverlap> overlap = MeasureReductionOverlap(TwoDevicePlan(), acts);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  EXPECT_EQ(overlap->first_iteration, 1);
  EXPECT_EQ(overlap->last_iteration, 1);
  EXPECT_EQ(overlap->reduction_acts, 4);
  EXPECT_EQ(overlap->reduction_ns, 130 + 20 + 60);
  EXPECT_EQ(overlap->hidden_ns, 80 + 20);
  EXPECT_THAT(overlap->hidden_fraction, DoubleEq(100.0 / 210));
  // Compute in the window [200, 520): 100 + 50 on device 0, 60 on device 1.
  EXPECT_EQ(overlap->compute_ns, 210);
}

TEST(MeasureReductionOverlapTest, NextIterationsComputeHidesAReductionToo) {
  // The reduction of iteration 1 runs while iteration 2's compute acts.
  const std::vector<ActRecord> acts = {Act(0, 1, 0, 0, 10), Act(0, 1, 1, 10, 20), Act(0, 2, 1, 20, 60),
                                       Act(0, 1, 2, 30, 50)};
  absl::StatusOr<ReductionOverlap> overlap = MeasureReductionOverlap(TwoDevicePlan(), acts);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  EXPECT_EQ(overlap->reduction_ns, 40);
  EXPECT_EQ(overlap->hidden_ns, 20);
  EXPECT_THAT(overlap->hidden_fraction, DoubleEq(0.5));
}

// Across processes the members of a call arrive at different times: the transfer is
// counted from the last arrival, so a device that waits in the call while its own compute
// thread works does not count that wait as reduction time hidden behind compute.
TEST(MeasureReductionOverlapTest, TransferCountsFromTheLastMembersArrival) {
  proto::Plan plan = TwoDevicePlan();
  // Every boxing actor its own collective, w_grad's all_reduce one collective on both devices.
  // Actor 3 stands for a member of another group of the same collective (dp over another
  // tp rank): it starts after both acts above ended, so it is no peer of theirs.
  const std::map<int64_t, int64_t> collective_of = {{2, 0}, {7, 0}, {3, 0}, {4, 2}, {5, 3}, {9, -1}, {10, 4}};
  for (proto::DevicePlan& device : *plan.mutable_devices()) {
    for (proto::ActorDef& actor : *device.mutable_actors()) {
      auto it = collective_of.find(actor.id());
      if (it != collective_of.end()) actor.set_collective_id(it->second);
    }
  }
  const std::vector<ActRecord> acts = {
      Act(0, 1, 0, 0, 100), Act(1, 6, 0, 0, 100),  // warm-up
      // Device 0 reaches the all-reduce at 210 and computes until 300; device 1 computes
      // until 280 and arrives then; both leave at 320.
      Act(0, 1, 1, 200, 300), Act(0, 2, 1, 210, 320), Act(1, 6, 1, 200, 280), Act(1, 7, 1, 280, 320),
      Act(0, 3, 1, 400, 410)};
  absl::StatusOr<ReductionOverlap> overlap = MeasureReductionOverlap(plan, acts);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  // From the acts' own starts: device 0 110 ns (90 of them hidden), device 1 40 ns.
  EXPECT_EQ(overlap->reduction_ns, 110 + 40);
  EXPECT_EQ(overlap->hidden_ns, 90);
  // From the last arrival (280): 40 ns each; device 0's compute hides [280, 300).
  EXPECT_EQ(overlap->transfer_ns, 40 + 40);
  EXPECT_EQ(overlap->transfer_hidden_ns, 20);
  EXPECT_THAT(overlap->transfer_hidden_fraction, DoubleEq(0.25));
  // Device 1 ended its compute at 280 and waits; device 0's compute hides [280, 300) of
  // both devices' transfer: the members' compute hides 20 + 20 of 80 ns.
  EXPECT_EQ(overlap->transfer_hidden_by_members_ns, 20 + 20);
  EXPECT_THAT(overlap->transfer_hidden_by_members_fraction, DoubleEq(0.5));
}

TEST(MeasureReductionOverlapTest, NoReductionIsZeroNotNaN) {
  const std::vector<ActRecord> acts = {Act(0, 1, 0, 0, 10), Act(0, 1, 1, 10, 20), Act(0, 3, 1, 20, 30)};
  absl::StatusOr<ReductionOverlap> overlap = MeasureReductionOverlap(TwoDevicePlan(), acts);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  EXPECT_EQ(overlap->reduction_acts, 0);
  EXPECT_EQ(overlap->reduction_ns, 0);
  EXPECT_THAT(overlap->hidden_fraction, DoubleEq(0.0));
  EXPECT_THAT(overlap->transfer_hidden_fraction, DoubleEq(0.0));
}

TEST(MeasureReductionOverlapTest, OnlyTheWarmUpIteration) {
  absl::StatusOr<ReductionOverlap> overlap = MeasureReductionOverlap(TwoDevicePlan(), {Act(0, 2, 0, 0, 10)});
  EXPECT_EQ(overlap.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(overlap.status().message(), HasSubstr("iterations 0..0 only"));
}

TEST(MeasureReductionOverlapTest, ActOfAnotherPlan) {
  absl::StatusOr<ReductionOverlap> overlap =
      MeasureReductionOverlap(TwoDevicePlan(), {Act(0, 1, 0, 0, 10), Act(1, 2, 1, 10, 20)});
  EXPECT_EQ(overlap.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow::actors
