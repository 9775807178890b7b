// The link-rate cap of node-crossing gradient buckets (compiler/passes/bucket_cap.h): a
// group whose collective crosses nodes packs buckets no larger than what the cost model
// prices at kNodeCrossingBucketSeconds on its link, nor, where a --bucket_mb bucket
// crosses within that, than an eighth of the whole group's price (not below 5 ms), unless
// the user gave --bucket_mb; the plan records each
// such bucket's limit and why. A gradient alone in its bucket crosses early, in backward
// order, and no backward op waits for it through reused memory.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "compiler/passes/bucket_cap.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/plan_verifier.h"
#include "tests/reuse_wait_testing.h"

namespace oneflow {
namespace {

// dp over `nodes` nodes x 1 device, inter-node links of `bandwidth` bytes/s and the
// examples' default latency (0.5 ms per round).
examples::ParallelLayout AcrossNodes(int64_t nodes, double bandwidth) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = 1;
  flags.dp = nodes;
  flags.inter_node_bandwidth = bandwidth;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Plan CompileGpt(const examples::GptConfig& config, const examples::ParallelLayout& layout, double bucket_mb,
                       bool given) {
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout.cluster();
  options.cluster.set_inter_node_latency(5e-4);
  options.bucket_mb = bucket_mb;
  options.bucket_mb_given = given;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::vector<int> MemberCounts(const proto::Plan& plan) {
  std::vector<int> counts;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) counts.push_back(bucket.members_size());
  return counts;
}

Placement Grid(int64_t nodes, int64_t per_node) {
  absl::StatusOr<Placement> grid = Placement::Grid(DeviceType::kCpu, nodes, per_node);
  EXPECT_TRUE(grid.ok()) << grid.status();
  return *grid;
}

// The cap, worked out by hand from the flat all-reduce's price across 3 processes
// (sbp/collective_cost.h: 2 rounds x alpha + 2(n-1)/n T / beta): at 1 Gbit/s (125e6 B/s)
// and 0.5 ms per round, 2 x 0.5 ms + (4/3) T / 125e6 <= 40 ms gives T <= 3,656,250 B,
// 3,656,192 as a multiple of 64.
TEST(BucketCapTest, ANodeCrossingGroupIsCappedToWhatItsLinkMovesInFortyMilliseconds) {
  const LinkModel links{100e9, 125e6, 1e-5, 5e-4};
  const Placement dp3 = Grid(3, 1);
  const int64_t limit = BucketBytesLimit(25);
  const BucketCap cap = BucketCapFor(links, dp3, 0, BoxingKind::kAllReduce, limit, /*given=*/false);
  EXPECT_EQ(cap.bytes, 3656192);
  EXPECT_NE(cap.reason.find("link rate"), std::string::npos) << cap.reason;
  EXPECT_NE(cap.reason.find("flat across nodes over 3 devices, 2 rounds"), std::string::npos) << cap.reason;
  // A reduce-scatter sends (n-1)/n T in one round: 0.5 ms + (2/3) T / 125e6 <= 40 ms.
  EXPECT_EQ(BucketCapFor(links, dp3, 0, BoxingKind::kReduceScatter, limit, false).bytes, 7406208);
  // Given, the limit wins.
  const BucketCap given = BucketCapFor(links, dp3, 0, BoxingKind::kAllReduce, limit, /*given=*/true);
  EXPECT_EQ(given.bytes, limit);
  EXPECT_EQ(given.reason, "--bucket_mb (given)");
  // A group inside one node keeps the limit.
  EXPECT_EQ(BucketCapFor(links, Grid(1, 3), 0, BoxingKind::kAllReduce, limit, false).bytes, limit);
  // At 100 Gbit/s a 25 MiB bucket takes 5.2 ms: the limit stays.
  const LinkModel fast{100e9, 12.5e9, 1e-5, 5e-4};
  const BucketCap fast_cap = BucketCapFor(fast, dp3, 0, BoxingKind::kAllReduce, limit, false);
  EXPECT_EQ(fast_cap.bytes, limit);
  EXPECT_NE(fast_cap.reason.find("--bucket_mb (default)"), std::string::npos) << fast_cap.reason;
  // Never below DDP's first bucket: at 100 Mbit/s 40 ms move 0.47 MB.
  const LinkModel slow{100e9, 12.5e6, 1e-5, 5e-4};
  EXPECT_EQ(BucketCapFor(slow, dp3, 0, BoxingKind::kAllReduce, limit, false).bytes, kFirstBucketBytes);
  // A smaller limit than the cap stays the limit.
  EXPECT_EQ(BucketCapFor(links, dp3, 0, BoxingKind::kAllReduce, 1 << 20, false).bytes, 1 << 20);
}

// With the group's bytes known, a bucket also takes at most 1/8 of the whole group's price,
// not below 5 ms. At 10 Gbit/s (1.25e9 B/s), 0.5 ms a round, a group of 48 MiB
// (50,331,648 B) is priced 2 x 0.5 ms + (4/3) 50,331,648 / 1.25e9 = 54.687 ms; an eighth,
// 6.836 ms, gives 1 ms + (4/3) T / 1.25e9 <= 6.836 ms: T <= 5,471,143 B, 5,471,104 as a
// multiple of 64 (the 40 ms cap alone: the 25 MiB limit). A group of 8 MiB is priced 9.95
// ms: an eighth is below 5 ms, so 5 ms: T <= 3,750,000 B, 3,749,952. At 1 Gbit/s a 25 MiB
// bucket is priced over 40 ms: the 40 ms cap binds and the eighth does not apply (an 8 MiB
// group, priced 90.5 ms, would give 11.3 ms).
TEST(BucketCapTest, AFastLinkBoundsEachBucketToAnEighthOfTheGroup) {
  const LinkModel ten_gigabit{100e9, 1.25e9, 1e-5, 5e-4};
  const LinkModel one_gigabit{100e9, 125e6, 1e-5, 5e-4};
  const Placement dp3 = Grid(3, 1);
  const int64_t limit = BucketBytesLimit(25);
  EXPECT_EQ(BucketCapFor(ten_gigabit, dp3, 0, BoxingKind::kAllReduce, limit, false).bytes, limit);
  const BucketCap eighth =
      BucketCapFor(ten_gigabit, dp3, 0, BoxingKind::kAllReduce, limit, false, BucketGroupBytes{50331648});
  EXPECT_EQ(eighth.bytes, 5471104);
  EXPECT_NE(eighth.reason.find("at most 1/8 of that per bucket"), std::string::npos) << eighth.reason;
  EXPECT_EQ(BucketCapFor(ten_gigabit, dp3, 0, BoxingKind::kAllReduce, limit, false, BucketGroupBytes{8 << 20}).bytes,
            3749952);
  EXPECT_EQ(BucketCapFor(one_gigabit, dp3, 0, BoxingKind::kAllReduce, limit, false, BucketGroupBytes{50331648}).bytes,
            3656192);
  EXPECT_EQ(BucketCapFor(one_gigabit, dp3, 0, BoxingKind::kAllReduce, limit, false, BucketGroupBytes{8 << 20}).bytes,
            3656192);
  // Given, or inside one node, the limit wins whatever the group.
  EXPECT_EQ(BucketCapFor(ten_gigabit, dp3, 0, BoxingKind::kAllReduce, limit, true, BucketGroupBytes{8 << 20}).bytes,
            limit);
  EXPECT_EQ(
      BucketCapFor(ten_gigabit, Grid(1, 3), 0, BoxingKind::kAllReduce, limit, false, BucketGroupBytes{8 << 20}).bytes,
      limit);
}

// A reduce-scatter group (ZeRO-2 and 3) longer than one 40 ms bucket takes the eighth on a
// slow link too: it moves half
// an all-reduce's bytes in backward, so backward is no longer shorter than its transfer
// (gpt_dp3tp2 at 1 Gbit/s with ZeRO-3 keeping its gathered copies: 7.14 MiB buckets, the
// first big one 130 ms into backward, a 732 ms step; 1 MiB buckets 587-648 ms; docs/zero.md).
// At 1 Gbit/s, 0.5 ms a round, a group of 48 MiB is priced 0.5 ms + (2/3) 50,331,648 /
// 125e6 = 268.935 ms (one round); an eighth, 33.617 ms, gives 0.5 ms + (2/3) T / 125e6 <=
// 33.617 ms: T <= 6,209,414 B, 6,209,408 as a multiple of 64. An all-reduce group of the
// same bytes keeps the 40 ms cap (above).
TEST(BucketCapTest, AReduceScatterGroupTakesTheEighthOnASlowLinkToo) {
  const LinkModel one_gigabit{100e9, 125e6, 1e-5, 5e-4};
  const Placement dp3 = Grid(3, 1);
  const int64_t limit = BucketBytesLimit(25);
  const BucketCap scatter =
      BucketCapFor(one_gigabit, dp3, 0, BoxingKind::kReduceScatter, limit, false, BucketGroupBytes{50331648});
  EXPECT_EQ(scatter.bytes, 6209408) << scatter.reason;
  EXPECT_NE(scatter.reason.find("at most 1/8 of that per bucket"), std::string::npos) << scatter.reason;
  EXPECT_EQ(BucketCapFor(one_gigabit, dp3, 0, BoxingKind::kReduceScatter, limit, false).bytes, 7406208);
  // A group within one 40 ms bucket (4 MiB: 0.5 ms + (2/3) 4,194,304 / 125e6 = 22.87 ms)
  // keeps the 40 ms cap: one bucket, as before.
  EXPECT_EQ(BucketCapFor(one_gigabit, dp3, 0, BoxingKind::kReduceScatter, limit, false, BucketGroupBytes{4 << 20}).bytes,
            7406208);
  EXPECT_EQ(BucketCapFor(one_gigabit, dp3, 0, BoxingKind::kReduceScatter, limit, true, BucketGroupBytes{50331648}).bytes,
            limit);
}

// The 2-block gpt at dp=2 over 2 nodes. On fast links it packs as on one node: the loss
// and block 1 (13 members, the first bucket of at most 1 MiB), then block 0, wpe and wte
// (12, 1.03 MiB). At 100 Mbit/s the cap is 1 MiB (40 ms move 0.49 MB; never below the
// first bucket): block 0 and wpe (11) make the second bucket and wte (256 KiB, produced
// last) its own all-reduce.
TEST(GradientBucketsLinkCapTest, ASlowLinkSplitsTheLastBucketOfTheTwoBlockGpt) {
  const examples::GptConfig gpt;
  const proto::Plan fast = CompileGpt(gpt, AcrossNodes(2, 12.5e9), 25, false);
  EXPECT_EQ(MemberCounts(fast), (std::vector<int>{13, 12}));
  const proto::Plan slow = CompileGpt(gpt, AcrossNodes(2, 12.5e6), 25, false);
  ASSERT_EQ(MemberCounts(slow), (std::vector<int>{13, 11}));
  EXPECT_EQ(slow.bucket_bytes_limit(), 25 << 20);
  for (const proto::GradientBucketDef& bucket : slow.buckets()) {
    EXPECT_EQ(bucket.limit_bytes(), kFirstBucketBytes) << "bucket " << bucket.id();
    EXPECT_LE(bucket.size_bytes(), bucket.limit_bytes()) << "bucket " << bucket.id();
    EXPECT_NE(bucket.limit_reason().find("link rate"), std::string::npos) << bucket.limit_reason();
  }
  EXPECT_EQ(slow.buckets(0).members(0).tensor(), "reduce_mean_67");
  EXPECT_EQ(slow.buckets(1).members(10).tensor(), "add_1_grad/reduce_sum_like_156");  // wpe's
  int alone = 0;
  for (const proto::CollectiveDef& collective : slow.collectives()) alone += collective.tensor() == "wte_grad/add_158";
  EXPECT_EQ(alone, 1);
  // Same bytes on the wire as the fast plan: only the packing differs.
  EXPECT_EQ(slow.devices(0).bytes_sent_per_iter(), fast.devices(0).bytes_sent_per_iter());
  EXPECT_TRUE(VerifyPlan(slow).ok()) << VerifyPlan(slow);
  // The verifier holds a bucket to its recorded limit.
  proto::Plan edited = slow;
  edited.mutable_buckets(1)->set_limit_bytes(edited.buckets(1).size_bytes() - 1);
  const absl::Status refused = VerifyBuckets(edited);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("gradient bucket 1 holds"), absl::string_view::npos) << refused;
  // An explicit --bucket_mb wins: the 25 MiB packing of the fast link.
  const proto::Plan given = CompileGpt(gpt, AcrossNodes(2, 12.5e6), 25, true);
  EXPECT_EQ(MemberCounts(given), (std::vector<int>{13, 12}));
  EXPECT_EQ(given.buckets(1).limit_bytes(), 25 << 20);
  EXPECT_EQ(given.buckets(1).limit_reason(), "--bucket_mb (given)");
}

// A larger gpt (hidden 256: 3 MiB per block) at dp=3 across 3 nodes at 1 Gbit/s: every
// bucket after the first holds at most the 3,656,192 B cap, so block 1's and block 0's
// gradients reduce in buckets that close during backward instead of one of 6.5 MiB at
// its end.
TEST(GradientBucketsLinkCapTest, OneGigabitCapsTheBucketsOfADp3Gpt) {
  examples::GptConfig gpt;
  gpt.hidden = 256;
  gpt.heads = 4;
  gpt.batch = 12;  // Even over dp=3.
  const proto::Plan uncapped = CompileGpt(gpt, AcrossNodes(3, 125e6), 25, true);
  const proto::Plan capped = CompileGpt(gpt, AcrossNodes(3, 125e6), 25, false);
  ASSERT_GE(uncapped.buckets_size(), 2);
  EXPECT_GT(uncapped.buckets(uncapped.buckets_size() - 1).size_bytes(), 3656192);
  EXPECT_GT(capped.buckets_size(), uncapped.buckets_size());
  std::vector<int64_t> sizes;
  for (const proto::GradientBucketDef& bucket : capped.buckets()) {
    EXPECT_EQ(bucket.limit_bytes(), 3656192);
    EXPECT_LE(bucket.size_bytes(), 3656192) << "bucket " << bucket.id();
    sizes.push_back(bucket.size_bytes());
  }
  EXPECT_LE(capped.buckets(0).size_bytes(), kFirstBucketBytes);
  EXPECT_EQ(capped.devices(0).bytes_sent_per_iter(), uncapped.devices(0).bytes_sent_per_iter());
  EXPECT_TRUE(VerifyPlan(capped).ok()) << VerifyPlan(capped);
  // The loss and ln_f's 2 gradients (the next, a 1 MiB mlp weight, does not fit the
  // 1 MiB first bucket beside them), then block 1's 10, then block 0's 10 with wpe's.
  EXPECT_EQ(sizes, (std::vector<int64_t>{2112, 3149824, 3215360}));
  EXPECT_EQ(MemberCounts(capped), (std::vector<int>{3, 10, 11}));
}

// dp=3 across 3 nodes x tp=2 in each (gpt_dp3tp2's layout, 2 blocks) at 1 Gbit/s: the
// first weight gradient backward produces (block 1's w_proj, 1.125 MiB per device, split
// over tp) does not fit its group's 1 MiB first bucket and crosses alone. It runs early,
// right after backward produces it, first on the cross-node stream, not after every
// bucket where its update needs it; and no later backward op waits for it through reused
// memory: its input's bytes stay live until its output's last reader, as a bucket's do
// (on gpt_dp3tp2, without that, backward took 1.7x as long).
TEST(GradientBucketsLinkCapTest, ALoneGradientAllReduceCrossesEarlyAndHoldsNoBackwardOpUp) {
  examples::GptConfig gpt;
  gpt.hidden = 384;
  gpt.heads = 6;
  gpt.layers = 2;
  gpt.batch = 12;
  examples::ParallelFlags flags;
  flags.nodes = 3;
  flags.devices_per_node = 2;
  flags.dp = 3;
  flags.tp = 2;
  flags.inter_node_bandwidth = 125e6;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const proto::Plan plan = CompileGpt(gpt, *layout, 25, false);
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  absl::flat_hash_map<int64_t, int64_t> bucket_of_collective;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    bucket_of_collective[bucket.collective_id()] = bucket.id();
  }
  // Device 0's cross-node (axis 0) all-reduces in its collective order: a bucket (its id)
  // or one on its own (its tensor).
  std::vector<std::string> order;
  for (int64_t id : plan.devices(0).collective_order()) {
    const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(id));
    if (collective.kind() != proto::ALL_REDUCE || collective.hierarchy_axis() != 0) continue;
    order.push_back(bucket_of_collective.contains(id) ? absl::StrCat("bucket ", bucket_of_collective[id])
                                                      : collective.tensor());
  }
  ASSERT_GE(order.size(), 3u);
  EXPECT_EQ(order.front(), "matmul_59_grad/matmul_78");  // Block 1's w_proj gradient.
  for (size_t k = 1; k < order.size(); ++k) EXPECT_EQ(order[k].rfind("bucket ", 0), 0u) << order[k];
  int lone = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    absl::flat_hash_set<int64_t> alone;  // Its cross-node all-reduces outside any bucket.
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.kind() != proto::ACTOR_BOXING || actor.has_bucket_id() || actor.collective_id() < 0) continue;
      const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(actor.collective_id()));
      if (collective.kind() == proto::ALL_REDUCE && collective.hierarchy_axis() == 0) alone.insert(actor.id());
    }
    lone += static_cast<int>(alone.size());
    EXPECT_THAT(testing::WaitsBeforeLastReader(device, alone), ::testing::IsEmpty());
  }
  EXPECT_EQ(lone, 6);  // One on each of the 6 devices.
}

}  // namespace
}  // namespace oneflow
