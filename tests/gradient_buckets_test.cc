// Gradient buckets (compiler/passes/gradient_bucketing_pass.h) on the examples: how many
// collectives the 2-block gpt issues with and without them, the members' order, the size
// limit; the same losses as one device with buckets on and off; a bucket's all-reduce
// running while the compute thread goes on with backward.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "actors/trace.h"
#include "compiler/compiler.h"
#include "plan/plan_verifier.h"
#include "tests/plan_losses.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reuse_wait_testing.h"

namespace oneflow {
namespace {

examples::ParallelLayout DataParallel(int64_t dp) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp;
  flags.dp = dp;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Plan CompileGpt(const examples::GptConfig& config, int64_t dp, double bucket_mb) {
  const examples::ParallelLayout layout = DataParallel(dp);
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout.cluster();
  options.bucket_mb = bucket_mb;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

int CountAllReduces(const proto::Plan& plan) {
  int count = 0;
  for (const proto::CollectiveDef& collective : plan.collectives()) count += collective.kind() == proto::ALL_REDUCE;
  return count;
}

// Position in plan.job() of the op producing each tensor.
absl::flat_hash_map<std::string, int> ProducerPositions(const proto::Plan& plan) {
  absl::flat_hash_map<std::string, int> position;
  for (int o = 0; o < plan.job().ops_size(); ++o) {
    for (const auto& [argument, tensor] : plan.job().ops(o).outputs()) position[tensor] = o;
  }
  return position;
}

// The 2-block gpt (the example's defaults) at dp=2 has 24 parameter gradients and the loss.
// With the default 25 MiB, the first bucket is at most 1 MiB (DDP's first bucket): the loss
// and block 1's gradients (771 KiB), then the rest (1.03 MiB) in the second.
TEST(GradientBucketsTest, TwoBucketsReplaceTheTwentyFourGradientAllReduces) {
  const examples::GptConfig gpt;
  const proto::Plan off = CompileGpt(gpt, 2, 0);
  const proto::Plan on = CompileGpt(gpt, 2, 25);
  EXPECT_EQ(CountAllReduces(off), 25);  // 24 gradients + the loss.
  EXPECT_EQ(off.buckets_size(), 0);
  EXPECT_EQ(off.bucket_bytes_limit(), 0);
  // The loss's reduction for the sink waits for the gradients and joins the first bucket.
  EXPECT_EQ(CountAllReduces(on), 2);
  ASSERT_EQ(on.buckets_size(), 2);
  EXPECT_EQ(on.bucket_bytes_limit(), 25 << 20);
  // loss, ln_f (2), block 1: w_proj, w_fc, ln2 (2), w_o, w_v, w_k, w_q, ln1 (2).
  EXPECT_EQ(on.buckets(0).members_size(), 13);
  EXPECT_LE(on.buckets(0).size_bytes(), 1 << 20);  // kFirstBucketBytes
  // Block 0's 10, wpe and wte.
  EXPECT_EQ(on.buckets(1).members_size(), 12);
  EXPECT_GT(on.buckets(1).size_bytes(), 1 << 20);
  // Same bytes on the wire: a bucket moves exactly its members' bytes.
  EXPECT_EQ(on.devices(0).bytes_sent_per_iter(), off.devices(0).bytes_sent_per_iter());
  // Packed in the order their values are produced: the loss (forward) first, then the
  // gradients as backward produces them, the last layer norm's first, the tied
  // embedding's (produced last, by the add of its two uses) last.
  const absl::flat_hash_map<std::string, int> position = ProducerPositions(on);
  std::vector<std::string> members;
  for (const proto::GradientBucketDef& bucket : on.buckets()) {
    for (const proto::BucketMemberDef& member : bucket.members()) members.push_back(member.tensor());
  }
  for (size_t k = 1; k < members.size(); ++k) {
    EXPECT_LE(position.at(members[k - 1]), position.at(members[k])) << members[k];
  }
  EXPECT_EQ(members.front(), "reduce_mean_67");
  EXPECT_EQ(members[1], "layer_norm_62_grad/layer_norm_grad_75/dgamma");
  EXPECT_EQ(members.back(), "wte_grad/add_158");
  EXPECT_TRUE(VerifyPlan(on).ok()) << VerifyPlan(on);
}

TEST(GradientBucketsTest, ATinyLimitMakesSeveralBucketsInBackwardOrder) {
  const examples::GptConfig gpt;
  const double limit_mb = 0.3;  // 314573 bytes: a 256 KiB gradient and a few small ones.
  const proto::Plan plan = CompileGpt(gpt, 2, limit_mb);
  EXPECT_EQ(plan.bucket_bytes_limit(), 314573);
  // In backward order (bytes), the loss (4) first: loss, ln_f 512 + 512, block 1 w_proj 256 Ki | w_fc 256 Ki, ln2 2 x 512 |
  // w_o, w_v, w_k, w_q 4 x 64 Ki, ln1 2 x 512 | block 0 w_proj 256 Ki alone | w_fc 256 Ki,
  // ln2 2 x 512 | w_o, w_v, w_k, w_q 4 x 64 Ki, ln1 2 x 512, wpe 32 Ki | wte 256 Ki alone.
  ASSERT_EQ(plan.buckets_size(), 5);
  std::vector<int> sizes;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) sizes.push_back(bucket.members_size());
  EXPECT_EQ(sizes, (std::vector<int>{4, 3, 6, 3, 7}));
  // Buckets of one member are none: those gradients keep their own all-reduce.
  int bucketed = 0;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) bucketed += bucket.members_size();
  EXPECT_EQ(bucketed, 23);  // 22 gradients and the loss
  EXPECT_EQ(CountAllReduces(plan), 5 + (25 - bucketed));  // 7
  const absl::flat_hash_map<std::string, int> position = ProducerPositions(plan);
  int previous = -1;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    EXPECT_LE(bucket.size_bytes(), plan.bucket_bytes_limit()) << "bucket " << bucket.id();
    EXPECT_GE(bucket.members_size(), 2);
    for (const proto::BucketMemberDef& member : bucket.members()) {
      EXPECT_LE(previous, position.at(member.tensor())) << member.tensor();
      previous = position.at(member.tensor());
    }
  }
  // Each device issues the buckets in that order, before the loss.
  std::vector<std::string> order;
  for (int64_t id : plan.devices(1).collective_order()) order.push_back(plan.collectives(id).tensor());
  EXPECT_EQ(order.front(), "bucket_0");
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
}

TEST(GradientBucketsTest, NegativeSizeIsRefused) {
  const examples::ParallelLayout layout = DataParallel(2);
  CompileOptions options;
  options.cluster = layout.cluster();
  options.bucket_mb = -1;
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildGpt(examples::GptConfig(), layout), options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "bucket_mb is -1; it must be >= 0 MiB (0 turns gradient buckets off, 25 is the default) and at most 1e6");
}

// The verifier (plan/plan_verifier_buckets.cc) on a compiled plan, edited.
TEST(GradientBucketsTest, VerifierRejectsInconsistentBuckets) {
  const proto::Plan plan = CompileGpt(examples::GptConfig(), 2, 0.3);
  ASSERT_TRUE(VerifyBuckets(plan).ok()) << VerifyBuckets(plan);
  const proto::GradientBucketDef& bucket = plan.buckets(0);
  auto expect = [](const proto::Plan& edited, const std::string& message) {
    const absl::Status status = VerifyBuckets(edited);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(), message);
  };
  {
    proto::Plan edited = plan;
    edited.set_bucket_bytes_limit(bucket.size_bytes() - 1);
    expect(edited, absl::StrCat("gradient bucket 0 holds ", bucket.size_bytes(),
                                " bytes, over the plan's bucket limit of ", bucket.size_bytes() - 1, " bytes"));
  }
  {
    proto::Plan edited = plan;
    edited.mutable_buckets(0)->mutable_members()->RemoveLast();
    const proto::BucketMemberDef& last = bucket.members(bucket.members_size() - 1);
    expect(edited, absl::StrCat("boxing ", last.boxing_id(), " of '", last.tensor(), "' step 0 names bucket 0, "
                                "which does not list it"));
  }
  {
    proto::Plan edited = plan;
    // A codec the members do not travel in.
    edited.mutable_buckets(0)->mutable_compression()->set_kind(proto::Compression::INT8);
    const proto::BucketMemberDef& first = bucket.members(0);
    expect(edited, absl::StrCat("gradient bucket 0 member '", first.tensor(), "' (boxing ", first.boxing_id(),
                                " step 0) travels in another format than the bucket; a bucket's members share one"));
    // A cross-node codec without an in-node one is no two-level form.
    edited.mutable_buckets(0)->mutable_compression()->set_kind(proto::Compression::NONE);
    edited.mutable_buckets(0)->mutable_compression()->set_cross_node_kind(proto::Compression::INT4);
    expect(edited, "gradient bucket 0 has a cross-node codec without an in-node one; a two-level bucket compresses "
                   "both levels");
  }
  {
    // Member 1's view moved 64 bytes into the bucket: it would read member 2's bytes.
    proto::Plan edited = plan;
    proto::DevicePlan& device = *edited.mutable_devices(0);
    const proto::ActorDef* actor = nullptr;
    for (const proto::ActorDef& a : device.actors()) {
      if (a.has_bucket_id() && a.bucket_id() == 0) actor = &a;
    }
    ASSERT_NE(actor, nullptr);
    const int64_t view = actor->kernels(0).outputs().at("out_1");
    const int64_t in = actor->kernels(0).inputs().at("in_1");
    const int64_t whole = actor->kernels(0).outputs().at("bucket");
    proto::RegisterDef& reg = *device.mutable_registers(static_cast<int>(view));
    reg.set_alias_offset_bytes(reg.alias_offset_bytes() + 64);
    expect(edited, absl::StrCat("device 0:0: bucket actor actor ", actor->id(), " ('bucket_0/all_reduce') member 1 ('",
                                bucket.members(1).tensor(), "'): its output register ", view,
                                " must be a view of bucket register ", whole, " at byte ",
                                reg.alias_offset_bytes() - 64, " of the size of its f32 input register ", in, " (",
                                device.registers(static_cast<int>(in)).size_bytes(), " bytes)"));
  }
}

examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.batch = 6;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;
  config.learning_rate = 0.1;
  return config;
}

// dp=2 and dp=3 (uneven batch) with buckets off, one bucket, and several small ones.
TEST(GradientBucketsTest, LossesEqualOneDeviceWithBucketsOnAndOff) {
  constexpr int64_t kIterations = 4;
  const std::vector<float> reference = testing::TrainedLosses(CompileGpt(SmallGpt(), 1, 25), kIterations);
  ASSERT_EQ(reference.size(), kIterations);
  for (int64_t dp : {2, 3}) {
    for (double bucket_mb : {0.0, 25.0, 0.004}) {
      const proto::Plan plan = CompileGpt(SmallGpt(), dp, bucket_mb);
      if (bucket_mb == 0.004) {
        EXPECT_GE(plan.buckets_size(), 3) << "dp " << dp;
      }
      const std::vector<float> losses = testing::TrainedLosses(plan, kIterations);
      ASSERT_EQ(losses.size(), kIterations);
      for (int64_t i = 0; i < kIterations; ++i) {
        EXPECT_LE(std::abs(losses[i] - reference[i]), 1e-4 * std::abs(reference[i]))
            << "dp " << dp << " bucket_mb " << bucket_mb << " iteration " << i;
      }
    }
  }
}

// The first bucket's all-reduce is held up for a while: meanwhile the compute thread of
// its device goes on with backward (later ops), since nothing but updates waits for it:
// with small buckets and with the default (a first bucket of at most 1 MiB, then the rest).
// The bytes of the bucket's inputs are not reused by later backward ops (that would make
// them wait for the bucket's act, collective included).
TEST(GradientBucketsTest, ABucketsAllReduceOverlapsLaterBackwardOps) {
  for (double bucket_mb : {0.3, 25.0}) {
    const proto::Plan plan = CompileGpt(examples::GptConfig(), 2, bucket_mb);
    ASSERT_GE(plan.buckets_size(), 2) << "bucket_mb " << bucket_mb;
    for (const proto::DevicePlan& device : plan.devices()) {
      absl::flat_hash_set<int64_t> buckets;
      for (const proto::ActorDef& actor : device.actors()) {
        if (actor.has_bucket_id()) buckets.insert(actor.id());
      }
      EXPECT_THAT(testing::WaitsBeforeLastReader(device, buckets), ::testing::IsEmpty()) << "bucket_mb " << bucket_mb;
    }
    actors::TrainOptions options;
    options.node = -1;
    options.iterations = 2;
    options.record_acts = true;
    // Bucket 0's all-reduce takes 30 ms more, and every compute act 1 ms more: sleeps, so
    // the backward that follows bucket 0 lasts long enough in wall time for the
    // communication thread to be scheduled beside it on a loaded machine (without the
    // compute sleep, 1 of 4 bucket acts missed the overlap at load 16 on 2 cores).
    options.wrap_act = [](const actors::ActorBinding& binding, actors::ActFunction act) -> actors::ActFunction {
      const bool bucket_zero = binding.actor->has_bucket_id() && binding.actor->bucket_id() == 0;
      if (!bucket_zero && binding.actor->kind() != proto::ACTOR_COMPUTE) return act;
      const std::chrono::milliseconds pause(bucket_zero ? 30 : 1);
      return [act, pause](int64_t iteration, const actors::ActContext& context) {
        std::this_thread::sleep_for(pause);
        return act(iteration, context);
      };
    };
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
    ASSERT_TRUE(result.ok()) << result.status();
    const actors::BucketOverlap overlap = actors::MeasureBucketOverlap(plan, result->engine.acts);
    EXPECT_EQ(overlap.bucket_acts, 2 * 2 * plan.buckets_size());  // Devices x iterations x buckets.
    // Bucket 0 on each device and iteration.
    EXPECT_GE(overlap.acts_overlapping_later_compute, 2 * 2) << "bucket_mb " << bucket_mb;
    EXPECT_GT(overlap.overlapped_ms, 0) << "bucket_mb " << bucket_mb;
  }
}

}  // namespace
}  // namespace oneflow
