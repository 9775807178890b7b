// Gradients as bucket views (compiler/passes/memory_planning_pass.cc, PyTorch DDP's
// gradient_as_bucket_view): memory planning places an all-reduce bucket member's input,
// the gradient its producer writes, at the member's own bytes in the bucket register, so
// the bucket's act copies nothing for it (actors/behaviors/bucket_behavior.cc), and the
// gradients are no longer held twice until the updates. With micro-batches the members'
// inputs are the accumulated gradients, per-iteration registers of one copy outside the
// arena like their bucket: the accumulators sum in the bucket's bytes (since session 53).
// Where placing is not possible the copy stays: reduce-scatter buckets (the act packs
// each rank's part of a member into that rank's chunk). The plans train like one device,
// tied and untied, with and without micro-batches; the verifier refuses an input inside
// its bucket anywhere but at its view, or read by another actor.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "plan/plan_verifier.h"
#include "tests/gpt_plan.h"
#include "tests/plan_losses.h"

namespace oneflow {
namespace {

examples::GptConfig SmallGpt(bool tied) {
  examples::GptConfig config;
  config.batch = 12;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;
  config.learning_rate = 0.1;
  config.tied_embeddings = tied;
  return config;
}

proto::Plan CompileGpt(const examples::GptConfig& gpt, int64_t dp, int64_t zero, int64_t micro_batches,
                       double bucket_mb) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp;
  flags.dp = dp;
  flags.zero = zero;
  flags.micro_batches = micro_batches;
  examples::CompileSettings settings;
  settings.bucket_mb = bucket_mb;
  return testing::CompileGptPlan(gpt, flags, settings);
}

// Per device, the bucket members whose input lies at its view (placed) and those whose
// input lies elsewhere (copied by the act).
struct Placement {
  int placed = 0;
  int copied = 0;
  std::vector<std::string> copied_members;  // "tensor (read by actor, ...)"
};
std::vector<Placement> MemberPlacements(const proto::Plan& plan) {
  std::vector<Placement> result;
  for (const proto::DevicePlan& device : plan.devices()) {
    Placement placement;
    for (const proto::ActorDef& actor : device.actors()) {
      if (!actor.has_bucket_id()) continue;
      const proto::KernelDef& kernel = actor.kernels(0);
      for (int k = 0; kernel.inputs().contains(absl::StrCat("in_", k)); ++k) {
        const proto::RegisterDef& input = device.registers(static_cast<int>(kernel.inputs().at(absl::StrCat("in_", k))));
        const proto::RegisterDef& view =
            device.registers(static_cast<int>(kernel.outputs().at(absl::StrCat("out_", k))));
        const bool at_view = input.memory_block() == view.memory_block() && input.offset() == view.offset();
        (at_view ? placement.placed : placement.copied)++;
        if (!at_view) {
          std::string readers;
          for (int64_t reader : input.consumer_actors()) {
            absl::StrAppend(&readers, readers.empty() ? "" : ", ",
                            device.actors(static_cast<int>(reader - device.actors(0).id())).name());
          }
          placement.copied_members.push_back(absl::StrCat(
              plan.buckets(static_cast<int>(actor.bucket_id())).members(k).tensor(), " (read by ", readers, ")"));
        }
      }
    }
    result.push_back(placement);
  }
  return result;
}

// The 2-block gpt at dp=2 with the default limit: two all-reduce buckets of 13 and 12
// members (the loss and block 1's 12 gradients; block 0's 10, wpe and wte; see
// gradient_buckets_test). The 24 gradients are read by their bucket alone, so they are
// written in place on both devices; the loss is read by its backward's ones_like too, so
// its copy stays. The verifier holds the layout (each bucket register's bytes live from
// its first placed member's producer on).
TEST(GradientBucketViewsTest, EveryGradientOfAnAllReduceBucketIsWrittenInIt) {
  const proto::Plan plan = CompileGpt(examples::GptConfig(), 2, 0, 1, 25);
  ASSERT_EQ(plan.buckets_size(), 2);
  ASSERT_EQ(plan.buckets(0).members_size() + plan.buckets(1).members_size(), 25);
  for (const Placement& placement : MemberPlacements(plan)) {
    EXPECT_EQ(placement.placed, 24);
    EXPECT_EQ(placement.copied_members,
              std::vector<std::string>{"reduce_mean_67 (read by reduce_mean_67_grad/ones_like_68, bucket_0/all_reduce)"});
  }
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
}

// With micro-batches the accumulators write in the bucket too (every member: the
// accumulated gradients have no other reader), outside the arena, one copy; ZeRO-2's
// reduce-scatter buckets keep the copy (each rank's part goes to another chunk).
TEST(GradientBucketViewsTest, AccumulatorsAreWrittenInTheBucketReduceScatterBucketsKeepTheCopy) {
  const proto::Plan micro = CompileGpt(SmallGpt(true), 2, 0, 2, 25);
  ASSERT_GE(micro.buckets_size(), 1);
  for (const Placement& placement : MemberPlacements(micro)) {
    EXPECT_GT(placement.placed, 0);
    EXPECT_EQ(placement.copied_members, std::vector<std::string>{});
  }
  for (const proto::DevicePlan& device : micro.devices()) {
    for (const proto::RegisterDef& reg : device.registers()) {
      if (!reg.per_iteration() || reg.persistent()) continue;
      EXPECT_EQ(reg.count(), 1) << reg.tensor();
      EXPECT_EQ(device.memory_blocks(static_cast<int>(reg.memory_block())).copies(), 1) << reg.tensor();
    }
  }
  EXPECT_TRUE(VerifyPlan(micro).ok()) << VerifyPlan(micro);
  const proto::Plan zero2 = CompileGpt(SmallGpt(true), 2, 2, 1, 25);
  int scatter_buckets = 0;
  for (const proto::GradientBucketDef& bucket : zero2.buckets()) {
    scatter_buckets += zero2.collectives(static_cast<int>(bucket.collective_id())).kind() == proto::REDUCE_SCATTER;
  }
  ASSERT_GE(scatter_buckets, 1);
  for (const proto::DevicePlan& device : zero2.devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      if (!actor.has_bucket_id() || actor.kernels(0).name() != "bucket_reduce_scatter") continue;
      const proto::KernelDef& kernel = actor.kernels(0);
      const proto::RegisterDef& whole = device.registers(static_cast<int>(kernel.outputs().at("bucket")));
      for (const auto& [name, id] : kernel.inputs()) {
        const proto::RegisterDef& input = device.registers(static_cast<int>(id));
        const bool inside = input.memory_block() == whole.memory_block() &&
                            input.offset() < whole.offset() + whole.size_bytes() &&
                            input.offset() + input.size_bytes() > whole.offset();
        EXPECT_FALSE(inside) << actor.name() << " " << name;
      }
    }
  }
  EXPECT_TRUE(VerifyPlan(zero2).ok()) << VerifyPlan(zero2);
}

// The reductions read what the producers wrote in place: dp=2 and dp=3 (batch 12 splits
// evenly), tied and untied embeddings, the default limit and a 4 KiB one (several
// buckets), one and two micro-batches (the accumulators summing in the bucket), each
// within 1e-4 of one device.
TEST(GradientBucketViewsTest, LossesEqualOneDeviceTiedAndUntied) {
  constexpr int64_t kIterations = 4;
  for (bool tied : {true, false}) {
    const std::vector<float> reference =
        testing::TrainedLosses(CompileGpt(SmallGpt(tied), 1, 0, 1, 25), kIterations);
    ASSERT_EQ(reference.size(), kIterations);
    for (int64_t dp : {2, 3}) {
      for (auto [bucket_mb, micro_batches] : {std::pair<double, int64_t>{25.0, 1}, {0.004, 1}, {25.0, 2}, {0.004, 2}}) {
        const proto::Plan plan = CompileGpt(SmallGpt(tied), dp, 0, micro_batches, bucket_mb);
        const std::string what =
            absl::StrCat("tied ", tied, " dp ", dp, " bucket_mb ", bucket_mb, " micro_batches ", micro_batches);
        ASSERT_GE(plan.buckets_size(), 1) << what;
        EXPECT_GT(MemberPlacements(plan)[0].placed, 0) << what;
        testing::ExpectLossesNear(testing::TrainedLosses(plan, kIterations), reference, 1e-4, what);
      }
    }
  }
}

TEST(GradientBucketViewsTest, VerifierRefusesAnInputInsideItsBucketElsewhereThanAtItsView) {
  const proto::Plan plan = CompileGpt(examples::GptConfig(), 2, 0, 1, 25);
  ASSERT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  const proto::DevicePlan& device = plan.devices(0);
  const proto::ActorDef* actor = nullptr;
  for (const proto::ActorDef& a : device.actors()) {
    if (a.has_bucket_id() && a.bucket_id() == 1) actor = &a;
  }
  ASSERT_NE(actor, nullptr);
  const int64_t in = actor->kernels(0).inputs().at("in_1");
  const int64_t whole = actor->kernels(0).outputs().at("bucket");
  const std::string input_text = absl::StrCat("device 0:0: register ", in, " ('", device.registers(static_cast<int>(in)).tensor(),
                                              "'), input in_1 of actor ", actor->id(), " '", actor->name(),
                                              "', lies inside its bucket register ", whole,
                                              ", but an input may lie there only ");
  {
    // Moved onto member 0's bytes: member 0's gradient would be overwritten.
    proto::Plan edited = plan;
    const int64_t view0 = actor->kernels(0).outputs().at("out_0");
    edited.mutable_devices(0)->mutable_registers(static_cast<int>(in))->set_offset(device.registers(static_cast<int>(view0)).offset());
    const absl::Status status = VerifyMemory(edited);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(), input_text + "exactly at its member's view (out_1) (gradients as bucket views)");
  }
  {
    // A second reader (the sink) would read the reduced sums where it expects the partial ones.
    proto::Plan edited = plan;
    int64_t other = -1;
    for (const proto::ActorDef& a : device.actors()) {
      if (a.kind() == proto::ACTOR_SINK) other = a.id();
    }
    ASSERT_GE(other, 0);
    edited.mutable_devices(0)->mutable_registers(static_cast<int>(in))->add_consumer_actors(other);
    const absl::Status status = VerifyMemory(edited);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(), input_text + "when the bucket actor is its only reader (gradients as bucket views)");
  }
}

}  // namespace
}  // namespace oneflow
