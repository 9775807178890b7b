// The gradient_accumulation pass on a small graph written as text: the accumulate op it
// puts between a gradient and the optimizer.
#include "compiler/passes/gradient_accumulation_pass.h"

#include <map>
#include <string>

#include "compiler/compiler.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr const char* kLinear = kOneDeviceLinearGraph;

TEST(GradientAccumulationPassTest, AccumulatesEachVariablesGradientOverMicroBatches) {
  absl::StatusOr<proto::Job> job = JobFromText(kLinear);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // w's gradient (matmul_8) gets an accumulate op, which the optimizer pass then reads;
  // x's gradient (matmul_7, not a variable's) does not.
  EXPECT_EQ(ChangedLines(*texts), "+ %w_accumulate: f32[8, 4] = accumulate(x=%matmul_0_grad/matmul_8) @0\n")
      << texts->after;
}

// Two layers (kOneDeviceTwoLayerGraph): backward produces the classifier's weight gradient
// (w2) first, then the first layer's bias (b1) and weight (w1) gradients, and the
// accumulate ops follow that order, so gradient_bucketing (which orders a bucket group by
// the op that makes each member ready) fills the first bucket with the gradients backward
// produces first. In variable order w1's would come first and the first bucket would wait
// for the end of the last micro-batch's backward.
TEST(GradientAccumulationPassTest, AccumulatesInTheOrderBackwardProducesTheGradients) {
  absl::StatusOr<proto::Job> job = JobFromText(kOneDeviceTwoLayerGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  const std::string changed = ChangedLines(*texts);
  const size_t w2 = changed.find("%w2_accumulate");
  const size_t b1 = changed.find("%b1_accumulate");
  const size_t w1 = changed.find("%w1_accumulate");
  ASSERT_NE(w2, std::string::npos) << changed;
  ASSERT_NE(b1, std::string::npos) << changed;
  ASSERT_NE(w1, std::string::npos) << changed;
  EXPECT_LT(w2, b1) << "backward produces w2's gradient before b1's:\n" << texts->after;
  EXPECT_LT(b1, w1) << "backward produces b1's gradient before w1's:\n" << texts->after;
}

// A variable read on two pipeline stages, like the gpt's tied embedding: %w lives on
// device 0, where the first layer reads it, and the second layer on device 1 multiplies
// by it too, so autograd sums a gradient term of each stage on device 0. Each stage
// accumulates its own term over the micro-batches and the two accumulated terms are
// added once per iteration on device 0: device 1's term crosses the cut once an
// iteration, not once a micro-batch.
constexpr char kTiedTwoStageGraph[] = R"(graph tied
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=8
%x = input f32[4, 8] source=data placement="cpu{0:0}"
%labels = input i32[4] source=data placement="cpu{0:0}"
%w = variable f32[8, 8] init=xavier_uniform seed=1 placement="cpu{0:0}"
%first = matmul(a=%x, b=%w) f32[4, 8] placement="cpu{0:0}"
%relu = relu(x=%first) f32[4, 8] placement="cpu{0:0}"
%second = matmul(a=%relu, b=%w) f32[4, 8] placement="cpu{0:1}"
%cross_entropy = sparse_softmax_cross_entropy(logits=%second, labels=%labels) f32[4] placement="cpu{0:1}"
%loss = reduce_mean(x=%cross_entropy, axes=[], keep_dims=false) f32[] placement="cpu{0:1}"
optimizer sgd lr=0.1 momentum=0.0
loss %loss
)";

TEST(GradientAccumulationPassTest, AccumulatesATiedVariablesTermsOnTheirOwnStagesAndAddsThemOnce) {
  absl::StatusOr<proto::Job> job = JobFromText(kTiedTwoStageGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "gradient_accumulation", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Autograd's sum %w_grad/add_14 of device 1's term (%second_grad/matmul_10, @2) and
  // device 0's (%first_grad/matmul_13, @1) is left to dead-op elimination.
  EXPECT_EQ(ChangedLines(*texts),
            "+ %w_accumulate_placement1: f32[8, 8] = accumulate(x=%first_grad/matmul_13) @1\n"
            "+ %w_accumulate_placement2: f32[8, 8] = accumulate(x=%second_grad/matmul_10) @2\n"
            "+ %w_accumulated_sum: f32[8, 8] = add(x=%w_accumulate_placement1, y=%w_accumulate_placement2) @1\n")
      << texts->after;
}

// Through the whole pipeline: between the stages device 1 sends device 0 the activation's
// gradient once per micro-batch and its accumulated term of %w once per iteration, after
// the iteration's micro-batches (ActorDef.after_micro_batches); before, the term went
// with every micro-batch.
TEST(GradientAccumulationPassTest, ATiedVariablesTermCrossesTheCutOncePerIteration) {
  absl::StatusOr<proto::Job> job = JobFromText(kTiedTwoStageGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<proto::Plan> plan = Compile(*job, TwoDeviceOptions());
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<std::string, std::string> transfers;  // tensor -> how often its actors act
  for (const proto::BoxingDef& boxing : plan->boxings()) {
    bool send_recv = false;
    for (const proto::BoxingStepDef& step : boxing.steps()) send_recv |= step.kind() == proto::STEP_SEND_RECV;
    if (!send_recv || boxing.src_placement().devices(0).device() != 1 || boxing.dst_placement().devices(0).device() != 0) continue;
    for (const proto::DevicePlan& device : plan->devices()) {
      for (const proto::ActorDef& actor : device.actors()) {
        if (actor.kind() != proto::ACTOR_BOXING || actor.boxing_id() != boxing.id()) continue;
        transfers[boxing.tensor()] = !actor.per_iteration()       ? "every micro-batch"
                                     : actor.after_micro_batches() ? "once, after the micro-batches"
                                                                   : "once, before the micro-batches";
      }
    }
  }
  EXPECT_EQ(transfers, (std::map<std::string, std::string>{{"second_grad/matmul_9", "every micro-batch"},
                                                           {"w_accumulate_placement2", "once, after the micro-batches"}}));
}

TEST(GradientAccumulationPassTest, WithoutMicroBatchesChangesNothing) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "gradient_accumulation");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
