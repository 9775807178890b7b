// The two-level compressed reductions of a gradient bucket (bucket_two_level.h) on
// 2 nodes x 3 devices: every member's output and error-feedback residual are bit for bit
// those of TwoLevelCompressedAllReduce / TwoLevelCompressedReduceScatter on that member
// alone (three codec sets, int4 with stochastic rounding across nodes, uneven splits,
// three calls so the residuals carry), each member's metered traffic per level too; the
// bucket makes one in-node and one cross-node call per phase where every member alone
// makes as many, with the same bytes per level; padding and other ranks' chunks untouched.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compression/bucket_two_level.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "kernels/compression/compressed_collectives_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

using compression_testing::CountingCommunicator;
using compression_testing::InProcessBackend;
using compression_testing::RankInput;
using ::testing::HasSubstr;

constexpr int64_t kNodes = 2;
constexpr int64_t kLocal = 3;
constexpr int64_t kRanks = kNodes * kLocal;
constexpr float kPadding = -123.0f;
constexpr int kCalls = 3;

struct NamedCodecs {
  std::string name;
  TwoLevelCodecs codecs;
};

std::vector<NamedCodecs> CodecSets() {
  TwoLevelCodecs stochastic;
  stochastic.in_node = {Codec::kFp8E4M3, 128};
  stochastic.cross_node = {Codec::kInt4, 64, /*hadamard=*/false, /*stochastic_rounding=*/true};
  stochastic.gather = {Codec::kFp8E4M3, 128};
  TwoLevelCodecs bf16;
  bf16.in_node = bf16.cross_node = bf16.gather = {Codec::kBf16, 1};
  return {{"sdp4bit_defaults", TwoLevelCodecs()}, {"fp8_int4_stochastic", stochastic}, {"bf16", bf16}};
}

// Both levels' groups, built twice (bucket and alone) so each side's calls and bytes are
// counted apart.
struct Groups {
  std::vector<CountingCommunicator> in_node, cross_node;  // by group rank
  Groups(InProcessBackend& backend, const std::string& name) {
    std::vector<std::vector<Communicator*>> in(kNodes), cross(kLocal);
    for (int64_t n = 0; n < kNodes; ++n) in[n] = backend.MakeGroup(kLocal, name + "_in" + std::to_string(n));
    for (int64_t l = 0; l < kLocal; ++l) cross[l] = backend.MakeGroup(kNodes, name + "_cross" + std::to_string(l));
    for (int64_t r = 0; r < kRanks; ++r) {
      in_node.emplace_back(in[r / kLocal][r % kLocal]);
      cross_node.emplace_back(cross[r % kLocal][r / kLocal]);
    }
  }
};

// The member seeds of a step at `call` (the step's rounding seed, mixed for the cross-node
// codec as PreparedBoxingStep::Run does).
TwoLevelCodecs WithSeeds(TwoLevelCodecs codecs, uint64_t seed) {
  codecs.in_node.seed = seed;
  codecs.cross_node.seed = MixSeed(seed, -1);
  codecs.gather.seed = seed;
  return codecs;
}

void ExpectSameTraffic(const TwoLevelTraffic& a, const TwoLevelTraffic& b, const std::string& what) {
  for (const auto& [x, y] : {std::pair{a.in_node, b.in_node}, std::pair{a.cross_node, b.cross_node}}) {
    EXPECT_EQ(x.bytes_sent, y.bytes_sent) << what;
    EXPECT_EQ(x.bytes_received, y.bytes_received) << what;
    EXPECT_EQ(x.dense_bytes_sent, y.dense_bytes_sent) << what;
    EXPECT_EQ(x.dense_bytes_received, y.dense_bytes_received) << what;
    EXPECT_EQ(x.error_sq, y.error_sq) << what;
    EXPECT_EQ(x.signal_sq, y.signal_sq) << what;
  }
}

TEST(TwoLevelBucketTest, AllReduceMembersGetTheBitsAndResidualsOfTheirOwnCalls) {
  const std::vector<int64_t> offsets = {0, 16, 48, 1072, 1072};
  const std::vector<int64_t> counts = {1, 29, 1003, 0, 77};
  const int64_t total = 1168;
  for (const NamedCodecs& named : CodecSets()) {
    SCOPED_TRACE(named.name);
    InProcessBackend backend;
    Groups bucket_groups(backend, "bucket"), alone_groups(backend, "alone");
    std::vector<std::vector<std::vector<float>>> bucket_residuals(kRanks), alone_residuals(kRanks);
    for (int64_t r = 0; r < kRanks; ++r) {
      for (int64_t count : counts) {
        const int64_t elements = TwoLevelAllReduceResidualElements(count, kNodes, kLocal, r / kLocal, r % kLocal);
        bucket_residuals[r].emplace_back(elements, 0.0f);
        alone_residuals[r].emplace_back(elements, 0.0f);
      }
    }
    for (int call = 0; call < kCalls; ++call) {
      std::vector<std::vector<float>> bucket_out(kRanks), alone_out(kRanks);
      std::vector<std::vector<TwoLevelTraffic>> alone_traffic(kRanks, std::vector<TwoLevelTraffic>(counts.size()));
      std::vector<std::vector<TwoLevelTraffic>> member_traffic = alone_traffic;
      RunOnRankThreads(kRanks, [&](int64_t rank) {
        std::vector<float> data = RankInput(rank + 7 * call, total);
        for (size_t m = 0; m < counts.size(); ++m) {
          const int64_t next = m + 1 < counts.size() ? offsets[m + 1] : total;
          for (int64_t i = offsets[m] + counts[m]; i < next; ++i) data[i] = kPadding;
        }
        alone_out[rank].assign(total, kPadding);
        std::vector<TwoLevelBucketMember> bucket;
        for (size_t m = 0; m < counts.size(); ++m) {
          const uint64_t seed = 1000 * m + call + 1;
          const absl::StatusOr<TwoLevelTraffic> traffic = TwoLevelCompressedAllReduce(
              alone_groups.in_node[rank], alone_groups.cross_node[rank], WithSeeds(named.codecs, seed),
              data.data() + offsets[m], alone_out[rank].data() + offsets[m], counts[m], {},
              absl::MakeSpan(alone_residuals[rank][m]));
          ASSERT_TRUE(traffic.ok()) << traffic.status();
          alone_traffic[rank][m] = *traffic;
          TwoLevelBucketMember member;
          member.offset = offsets[m];
          member.count = counts[m];
          member.in_node_seed = seed;
          member.cross_node_seed = MixSeed(seed, -1);
          member.gather_seed = seed;
          member.residual = absl::MakeSpan(bucket_residuals[rank][m]);
          member.traffic = &member_traffic[rank][m];
          bucket.push_back(member);
        }
        bucket_out[rank] = data;
        const int64_t in_node_before = bucket_groups.in_node[rank].sent;
        const int64_t cross_node_before = bucket_groups.cross_node[rank].sent;
        const absl::StatusOr<TwoLevelTraffic> traffic =
            TwoLevelCompressedBucketAllReduce(bucket_groups.in_node[rank], bucket_groups.cross_node[rank],
                                              named.codecs, bucket_out[rank].data(), bucket, {});
        ASSERT_TRUE(traffic.ok()) << traffic.status();
        EXPECT_EQ(traffic->in_node.bytes_sent, bucket_groups.in_node[rank].sent - in_node_before);
        EXPECT_EQ(traffic->cross_node.bytes_sent, bucket_groups.cross_node[rank].sent - cross_node_before);
      });
      for (int64_t r = 0; r < kRanks; ++r) {
        SCOPED_TRACE("call " + std::to_string(call) + " rank " + std::to_string(r));
        EXPECT_EQ(bucket_out[r], alone_out[r]);
        EXPECT_EQ(bucket_residuals[r], alone_residuals[r]);
        EXPECT_EQ(bucket_groups.in_node[r].sent, alone_groups.in_node[r].sent);
        EXPECT_EQ(bucket_groups.cross_node[r].sent, alone_groups.cross_node[r].sent);
        EXPECT_EQ(bucket_groups.cross_node[r].received, alone_groups.cross_node[r].received);
        for (size_t m = 0; m < counts.size(); ++m) {
          ExpectSameTraffic(member_traffic[r][m], alone_traffic[r][m], "member " + std::to_string(m));
        }
      }
    }
    double residual_sum = 0;
    for (const std::vector<float>& residual : bucket_residuals[0]) {
      for (float value : residual) residual_sum += value * value;
    }
    EXPECT_GT(residual_sum, 0.0);
  }
}

TEST(TwoLevelBucketTest, ReduceScatterMembersGetTheBitsAndResidualsOfTheirOwnCalls) {
  // Parts per group rank (node-major), each member at a 16-float aligned offset reserving
  // its largest part.
  const std::vector<std::vector<int64_t>> counts = {
      {5, 5, 5, 4, 4, 4}, {168, 168, 167, 167, 167, 167}, {0, 0, 0, 0, 0, 0}, {13, 13, 12, 12, 12, 12}};
  const std::vector<int64_t> offsets = {0, 16, 192, 192};
  const int64_t chunk = 208;
  for (const NamedCodecs& named : CodecSets()) {
    SCOPED_TRACE(named.name);
    InProcessBackend backend;
    Groups bucket_groups(backend, "bucket"), alone_groups(backend, "alone");
    std::vector<std::vector<std::vector<float>>> bucket_residuals(kRanks), alone_residuals(kRanks);
    for (int64_t r = 0; r < kRanks; ++r) {
      for (const std::vector<int64_t>& member : counts) {
        const int64_t elements = TwoLevelReduceScatterResidualElements(member, kLocal, r % kLocal);
        bucket_residuals[r].emplace_back(elements, 0.0f);
        alone_residuals[r].emplace_back(elements, 0.0f);
      }
    }
    for (int call = 0; call < kCalls; ++call) {
      std::vector<std::vector<float>> registers(kRanks), before(kRanks);
      std::vector<std::vector<std::vector<float>>> alone_out(kRanks);
      std::vector<std::vector<TwoLevelTraffic>> alone_traffic(kRanks, std::vector<TwoLevelTraffic>(counts.size()));
      std::vector<std::vector<TwoLevelTraffic>> member_traffic = alone_traffic;
      RunOnRankThreads(kRanks, [&](int64_t rank) {
        std::vector<float> data = RankInput(rank + 7 * call, kRanks * chunk);
        for (int64_t g = 0; g < kRanks; ++g) {
          for (size_t m = 0; m < counts.size(); ++m) {
            const int64_t next = m + 1 < counts.size() ? offsets[m + 1] : chunk;
            for (int64_t i = offsets[m] + counts[m][g]; i < next; ++i) data[g * chunk + i] = kPadding;
          }
        }
        alone_out[rank].resize(counts.size());
        std::vector<TwoLevelBucketMember> bucket;
        for (size_t m = 0; m < counts.size(); ++m) {
          const uint64_t seed = 1000 * m + call + 1;
          std::vector<float> input;  // its parts back to back, as its own step packs them
          for (int64_t g = 0; g < kRanks; ++g) {
            const float* part = data.data() + g * chunk + offsets[m];
            input.insert(input.end(), part, part + counts[m][g]);
          }
          alone_out[rank][m].assign(counts[m][rank], 0.0f);
          const absl::StatusOr<TwoLevelTraffic> traffic = TwoLevelCompressedReduceScatter(
              alone_groups.in_node[rank], alone_groups.cross_node[rank], WithSeeds(named.codecs, seed), input.data(),
              alone_out[rank][m].data(), counts[m], {}, absl::MakeSpan(alone_residuals[rank][m]));
          ASSERT_TRUE(traffic.ok()) << traffic.status();
          alone_traffic[rank][m] = *traffic;
          TwoLevelBucketMember member;
          member.offset = offsets[m];
          member.counts = counts[m];
          member.in_node_seed = seed;
          member.cross_node_seed = MixSeed(seed, -1);
          member.residual = absl::MakeSpan(bucket_residuals[rank][m]);
          member.traffic = &member_traffic[rank][m];
          bucket.push_back(member);
        }
        before[rank] = data;
        registers[rank] = data;
        const absl::StatusOr<TwoLevelTraffic> traffic =
            TwoLevelCompressedBucketReduceScatter(bucket_groups.in_node[rank], bucket_groups.cross_node[rank],
                                                  named.codecs, registers[rank].data(), chunk, bucket, {});
        ASSERT_TRUE(traffic.ok()) << traffic.status();
      });
      for (int64_t r = 0; r < kRanks; ++r) {
        SCOPED_TRACE("call " + std::to_string(call) + " rank " + std::to_string(r));
        std::vector<float> untouched = registers[r];
        for (size_t m = 0; m < counts.size(); ++m) {
          const int64_t start = r * chunk + offsets[m];
          EXPECT_EQ(std::vector<float>(registers[r].begin() + start, registers[r].begin() + start + counts[m][r]),
                    alone_out[r][m])
              << "member " << m;
          std::copy(before[r].begin() + start, before[r].begin() + start + counts[m][r], untouched.begin() + start);
          ExpectSameTraffic(member_traffic[r][m], alone_traffic[r][m], "member " + std::to_string(m));
        }
        EXPECT_EQ(untouched, before[r]);
        EXPECT_EQ(bucket_residuals[r], alone_residuals[r]);
        EXPECT_EQ(bucket_groups.in_node[r].sent, alone_groups.in_node[r].sent);
        EXPECT_EQ(bucket_groups.cross_node[r].sent, alone_groups.cross_node[r].sent);
      }
    }
    double residual_sum = 0;
    for (const std::vector<float>& residual : bucket_residuals[0]) {
      for (float value : residual) residual_sum += value * value;
    }
    EXPECT_GT(residual_sum, 0.0);
  }
}

TEST(TwoLevelBucketTest, BadMembersAreRefusedByName) {
  InProcessBackend backend;
  const std::vector<Communicator*> in = backend.MakeGroup(1, "in"), cross = backend.MakeGroup(1, "cross");
  std::vector<float> data(64, 1.0f);
  CollectiveOptions options;
  options.description = "bucket 2";
  TwoLevelBucketMember first, second;
  first.count = 20;
  second.offset = 16;
  second.count = 8;
  absl::StatusOr<TwoLevelTraffic> traffic = TwoLevelCompressedBucketAllReduce(
      *in[0], *cross[0], TwoLevelCodecs(), data.data(), std::vector<TwoLevelBucketMember>{first, second}, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(),
              HasSubstr("bucket 2: two-level compressed bucket all_reduce: member 1 covers [16, 24)"));
  TwoLevelBucketMember part;
  part.offset = 48;
  part.counts = {20};
  traffic = TwoLevelCompressedBucketReduceScatter(*in[0], *cross[0], TwoLevelCodecs(), data.data(), 64,
                                                  std::vector<TwoLevelBucketMember>{part}, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(), HasSubstr("member 0 covers [48, 68) of each chunk of 64 floats"));
}

}  // namespace
}  // namespace oneflow
