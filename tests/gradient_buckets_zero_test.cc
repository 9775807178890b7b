// Reduce-scatter gradient buckets (compiler/passes/gradient_bucketing_pass.h): ZeRO-2's
// gradient reduce-scatters (P -> S(k) over dp) and the in-node reduce-scatters that start
// 2-D chains pack into buckets whose register holds one chunk per rank, rank-major, each
// chunk that rank's part of every member, reduce-scattered by one collective. The gpt and
// the mlp at --zero=2 (dp=2, dp=2 x tp=2, with micro-batches) train like one device with
// them, issue fewer collectives per step, and the verifier holds their layout.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "plan/plan_verifier.h"
#include "tests/plan_losses.h"

namespace oneflow {
namespace {

struct Layout {
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t zero = 0;
  int64_t micro_batches = 1;
  std::string Name() const { return absl::StrCat("dp", dp, "_tp", tp, "_zero", zero, "_mb", micro_batches); }
};

enum class Model { kGpt, kMlp };

examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;
  config.learning_rate = 0.1;
  return config;
}

examples::MlpConfig SmallMlp() {
  examples::MlpConfig config;
  config.batch = 16;
  config.in_features = 24;
  config.hidden = 40;
  return config;
}

proto::Plan CompileModel(Model model, const Layout& layout, double bucket_mb) {
  examples::ParallelFlags flags;
  flags.devices_per_node = layout.dp * layout.tp;
  flags.dp = layout.dp;
  flags.tp = layout.tp;
  flags.zero = layout.zero;
  flags.micro_batches = layout.micro_batches;
  absl::StatusOr<examples::ParallelLayout> parallel = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(parallel.ok()) << parallel.status();
  if (!parallel.ok()) return proto::Plan();
  absl::StatusOr<proto::Job> job =
      model == Model::kGpt ? examples::BuildGpt(SmallGpt(), *parallel) : examples::BuildMlp(SmallMlp(), *parallel);
  EXPECT_TRUE(job.ok()) << job.status();
  examples::CompileSettings settings;
  settings.bucket_mb = bucket_mb;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*parallel, settings, nullptr);
  EXPECT_TRUE(options.ok()) << options.status();
  if (!job.ok() || !options.ok()) return proto::Plan();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << layout.Name() << ": " << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

// Collectives device 0 issues per iteration of `kind` (each actor issues one per act).
int CollectivesOnDeviceZero(const proto::Plan& plan, proto::CollectiveKind kind) {
  int count = 0;
  for (const proto::ActorDef& actor : plan.devices(0).actors()) {
    if (actor.collective_id() >= 0 && plan.collectives(static_cast<int>(actor.collective_id())).kind() == kind) {
      ++count;
    }
  }
  return count;
}

int ReduceScatterBuckets(const proto::Plan& plan) {
  int count = 0;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    count += plan.collectives(static_cast<int>(bucket.collective_id())).kind() == proto::REDUCE_SCATTER;
  }
  return count;
}

const Layout kLayouts[] = {
    {2, 1, 2, 1},  // ZeRO-2 over dp=2: every sharded gradient reduce-scattered.
    {2, 2, 2, 1},  // dp=2 x tp=2: reduce-scatters over dp, and 2-D chains.
    {2, 1, 2, 2},  // with micro-batches: the accumulated gradients, once per iteration.
    {2, 1, 3, 1},  // ZeRO-3 reduce-scatters its gradients as stage 2 does.
};

// Every layout, both models: reduce-scatter buckets exist, the plan issues fewer
// reduce-scatters per step than with buckets off (same bytes), and the losses follow one
// device's within 1e-4 relative.
TEST(GradientBucketsZeroTest, ReduceScatterBucketsTrainLikeOneDevice) {
  constexpr int64_t kIterations = 3;
  for (Model model : {Model::kGpt, Model::kMlp}) {
    const char* model_name = model == Model::kGpt ? "gpt" : "mlp";
    const std::vector<float> reference = testing::TrainedLosses(CompileModel(model, Layout{}, 25), kIterations);
    ASSERT_EQ(reference.size(), kIterations) << model_name;
    EXPECT_LT(reference.back(), reference.front()) << model_name;
    for (const Layout& layout : kLayouts) {
      const std::string name = absl::StrCat(model_name, " ", layout.Name());
      const proto::Plan off = CompileModel(model, layout, 0);
      const proto::Plan on = CompileModel(model, layout, 25);
      ASSERT_GT(on.devices_size(), 0) << name;
      ASSERT_TRUE(VerifyBuckets(on).ok()) << name << ": " << VerifyBuckets(on);
      EXPECT_GE(ReduceScatterBuckets(on), 1) << name;
      const int scatters_off = CollectivesOnDeviceZero(off, proto::REDUCE_SCATTER);
      const int scatters_on = CollectivesOnDeviceZero(on, proto::REDUCE_SCATTER);
      EXPECT_GE(scatters_off, 4) << name;
      EXPECT_LT(scatters_on, scatters_off) << name;
      EXPECT_EQ(on.devices(0).bytes_sent_per_iter(), off.devices(0).bytes_sent_per_iter()) << name;
      for (double bucket_mb : {25.0, 0.002}) {
        const proto::Plan plan = bucket_mb == 25.0 ? on : CompileModel(model, layout, bucket_mb);
        const std::vector<float> losses = testing::TrainedLosses(plan, kIterations);
        ASSERT_EQ(losses.size(), kIterations) << name;
        for (int64_t i = 0; i < kIterations; ++i) {
          EXPECT_LE(std::abs(losses[i] - reference[i]), 1e-4 * std::abs(reference[i]))
              << name << " bucket_mb " << bucket_mb << " iteration " << i;
        }
      }
    }
  }
}

// The gpt at dp=2, ZeRO-2: with buckets off, one reduce-scatter per sharded gradient;
// with the default 25 MiB, they ride in the reduce-scatter buckets: each bucket's
// register is (group size) chunks, each with every member's largest part at 64-byte
// aligned offsets, and device 0's member views lie in chunk 0, device 1's in chunk 1.
TEST(GradientBucketsZeroTest, ReduceScatterBucketLayoutIsRankMajor) {
  const proto::Plan plan = CompileModel(Model::kGpt, Layout{2, 1, 2, 1}, 25);
  ASSERT_GE(ReduceScatterBuckets(plan), 1);
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    if (plan.collectives(static_cast<int>(bucket.collective_id())).kind() != proto::REDUCE_SCATTER) continue;
    int64_t end = 0;
    std::vector<int64_t> parts;
    for (const proto::BucketMemberDef& member : bucket.members()) {
      parts.push_back((end + 63) / 64 * 64);
      end = parts.back() + member.size_bytes();
      EXPECT_EQ(plan.boxings(static_cast<int>(member.boxing_id())).steps(static_cast<int>(member.boxing_step())).kind(),
                proto::STEP_REDUCE_SCATTER);
    }
    const int64_t chunk = (end + 63) / 64 * 64;
    EXPECT_EQ(bucket.size_bytes(), 2 * chunk) << "bucket " << bucket.id();
    for (int d = 0; d < plan.devices_size(); ++d) {
      const proto::DevicePlan& device = plan.devices(d);
      for (const proto::ActorDef& actor : device.actors()) {
        if (!actor.has_bucket_id() || actor.bucket_id() != bucket.id()) continue;
        EXPECT_EQ(actor.name(), absl::StrCat("bucket_", bucket.id(), "/reduce_scatter"));
        for (int k = 0; k < bucket.members_size(); ++k) {
          const proto::RegisterDef& view =
              device.registers(static_cast<int>(actor.kernels(0).outputs().at(absl::StrCat("out_", k))));
          EXPECT_EQ(view.alias_offset_bytes(), device.device().device() * chunk + parts[k])
              << "bucket " << bucket.id() << " member " << k << " device " << d;
        }
      }
    }
  }
}

// The verifier holds a reduce-scatter bucket to its layout and its members' kind.
TEST(GradientBucketsZeroTest, VerifierRejectsInconsistentReduceScatterBuckets) {
  const proto::Plan plan = CompileModel(Model::kGpt, Layout{2, 1, 2, 1}, 25);
  int index = -1;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    if (plan.collectives(static_cast<int>(bucket.collective_id())).kind() == proto::REDUCE_SCATTER) {
      index = static_cast<int>(bucket.id());
    }
  }
  ASSERT_GE(index, 0);
  const proto::GradientBucketDef& bucket = plan.buckets(index);
  {
    // Device 1's member 0 view moved into chunk 0: it would read device 0's reduced part.
    proto::Plan edited = plan;
    proto::DevicePlan& device = *edited.mutable_devices(1);
    const proto::ActorDef* actor = nullptr;
    for (const proto::ActorDef& a : device.actors()) {
      if (a.has_bucket_id() && a.bucket_id() == index) actor = &a;
    }
    ASSERT_NE(actor, nullptr);
    const int64_t view = actor->kernels(0).outputs().at("out_0");
    const int64_t whole = actor->kernels(0).outputs().at("bucket");
    proto::RegisterDef& reg = *device.mutable_registers(static_cast<int>(view));
    const int64_t chunk = bucket.size_bytes() / 2;
    ASSERT_EQ(reg.alias_offset_bytes(), chunk);
    reg.set_alias_offset_bytes(0);
    const absl::Status status = VerifyBuckets(edited);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(),
              absl::StrCat("device 0:1: bucket actor actor ", actor->id(), " ('bucket_", index,
                           "/reduce_scatter') member 0 ('", bucket.members(0).tensor(), "'): its output register ",
                           view, " must be a view of bucket register ", whole, " at byte ", chunk,
                           " (its part in chunk 1)"));
  }
  {
    // The bucket's collective turned into an all-reduce: its members are reduce-scatters.
    proto::Plan edited = plan;
    edited.mutable_collectives(static_cast<int>(bucket.collective_id()))->set_kind(proto::ALL_REDUCE);
    const absl::Status status = VerifyBuckets(edited);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(), absl::StrCat("gradient bucket ", index, " member '", bucket.members(0).tensor(),
                                             "' (boxing ", bucket.members(0).boxing_id(), " step ",
                                             bucket.members(0).boxing_step(),
                                             ") is not a STEP_ALL_REDUCE on hierarchy axis 0 like the bucket's "
                                             "collective"));
  }
}

}  // namespace
}  // namespace oneflow
