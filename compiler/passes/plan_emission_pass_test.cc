// The plan_emission pass on a small graph written as text: what it adds to the plan
// that actors, registers and memory already fill.
#include "compiler/passes/plan_emission_pass.h"

#include <string>

#include "compiler/compiler.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"
#include "plan/plan_checksum.h"

namespace oneflow {
namespace {

TEST(PlanEmissionPassTest, EmitsLayoutsBoxingsWireBytesAndSeals) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "plan_emission", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // The plan's header (format version, cluster, the final job's 9 ops and one SBP entry
  // each), the layouts of inputs and variables, each boxing with its collectives (the
  // slices run none: -1; the two all-reduces run the bucket's collective 0), and the
  // bytes each device sends and receives per iteration: the bucket's collective moves
  // the loss and the gradient. The seal (checksum) is last. Actors, registers and
  // memory are unchanged.
  EXPECT_EQ(ChangedLines(*texts),
            "+ plan format_version=2 nodes=1 devices_per_node=2 job_ops=9 op_sbps=9 sealed\n"
            "+ layout %x B\n"
            "+ layout %labels B\n"
            "+ layout %w B\n"
            "+ layout %w/momentum B\n"
            "+ emitted boxing#0 %x data_source/data -> matmul_0: collective -1 0 B/iter\n"
            "+ emitted boxing#1 %labels data_source/data -> sparse_softmax_cross_entropy_1: collective -1 0 B/iter\n"
            "+ emitted boxing#2 %matmul_0_grad/matmul_8 matmul_0_grad/matmul_8 -> w_update/sgd_update_9: "
            "collective 0 (bucket#0) 256 B/iter\n"
            "+ emitted boxing#3 %reduce_mean_2 reduce_mean_2 -> loss_sink: collective 0 (bucket#0) 16 B/iter\n"
            "+ wire 0:0 sent=136 received=136\n"
            "+ wire 0:1 sent=136 received=136\n")
      << texts->after;
}

// The recipe is recorded before the seal, and a caller that writes the plan gets the bytes
// the seal serialized: those of the plan it returns, carrying its checksum, and the same
// plan as attaching the recipe after the compile and sealing again.
TEST(PlanEmissionPassTest, SealsTheRecipeAndHandsOutTheSealedBytes) {
  absl::StatusOr<proto::Job> job = JobFromText(kTwoDeviceLinearGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  proto::CompileRecipe recipe;
  recipe.set_graph_text("graph linear");
  recipe.set_dp(2);
  CompileOptions options = TwoDeviceOptions();
  options.recipe = recipe;
  std::string bytes;
  options.sealed_plan = &bytes;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->recipe().dp(), 2);
  EXPECT_TRUE(VerifyPlanChecksum(*plan).ok());
  EXPECT_EQ(bytes, *SerializePlanDeterministically(*plan));
  EXPECT_TRUE(VerifySerializedPlanChecksum(*plan, bytes).ok());

  options.recipe.reset();
  options.sealed_plan = nullptr;
  absl::StatusOr<proto::Plan> attached_later = Compile(*job, options);
  ASSERT_TRUE(attached_later.ok()) << attached_later.status();
  EXPECT_FALSE(attached_later->has_recipe());
  *attached_later->mutable_recipe() = recipe;
  ASSERT_TRUE(SealPlan(&*attached_later).ok());
  EXPECT_EQ(*SerializePlanDeterministically(*attached_later), bytes);
}

}  // namespace
}  // namespace oneflow
