// The compressed all-reduce of a gradient bucket (CompressedBucketAllReduce,
// compressed_collectives.h): every member's output and error-feedback residual are bit
// for bit those of CompressedAllReduce on that member alone (each codec, stochastic
// rounding with a seed per member, three calls so the residuals carry), and so is each
// member's metered traffic (bytes and error), with 2
// communicator calls per bucket where the members alone make 2 each, the same encoded
// bytes, the padding between members untouched; bad members are refused by name.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "kernels/compression/compressed_collectives_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

using compression_testing::Codecs;
using compression_testing::CountingCommunicator;
using compression_testing::InProcessBackend;
using compression_testing::NamedCodec;
using compression_testing::RankInput;
using ::testing::HasSubstr;

// Members as a gradient bucket lays them out: a scalar (the loss), a bias, a weight
// larger than one codec group, an empty one and an odd one, at 64-byte (16-float)
// aligned offsets with padding between them.
struct Layout {
  std::vector<int64_t> offsets = {0, 16, 48, 1072, 1072};
  std::vector<int64_t> counts = {1, 29, 1003, 0, 77};
  int64_t total = 1168;
};

// Marks the padding, which the bucket must leave as it was.
constexpr float kPadding = -123.0f;

TEST(CompressedBucketAllReduceTest, EveryMemberGetsTheBitsAndResidualOfItsOwnCall) {
  constexpr int64_t kRanks = 3;
  constexpr int kCalls = 3;
  const Layout layout;
  const size_t members = layout.counts.size();
  for (const NamedCodec& named : Codecs()) {
    SCOPED_TRACE(named.name);
    InProcessBackend backend;
    const std::vector<Communicator*> bucket_group = backend.MakeGroup(kRanks, "bucket");
    const std::vector<Communicator*> alone_group = backend.MakeGroup(kRanks, "alone");
    // Residuals per rank and member, one set per way of reducing.
    std::vector<std::vector<std::vector<float>>> bucket_residuals(kRanks), alone_residuals(kRanks);
    for (int64_t r = 0; r < kRanks; ++r) {
      for (size_t m = 0; m < members; ++m) {
        const int64_t elements = AllReduceResidualElements(layout.counts[m], kRanks, r);
        bucket_residuals[r].emplace_back(elements, 0.0f);
        alone_residuals[r].emplace_back(elements, 0.0f);
      }
    }
    for (int call = 0; call < kCalls; ++call) {
      std::vector<std::vector<float>> bucket_out(kRanks), alone_out(kRanks);
      std::vector<CountingCommunicator> bucket_counting, alone_counting;
      for (int64_t r = 0; r < kRanks; ++r) {
        bucket_counting.emplace_back(bucket_group[r]);
        alone_counting.emplace_back(alone_group[r]);
      }
      std::vector<int64_t> bucket_calls(kRanks, 0), alone_calls(kRanks, 0);
      std::vector<int64_t> bucket_bytes(kRanks, 0), alone_bytes(kRanks, 0);
      // Per rank and member: the traffic of its own call, and its share of the bucket's.
      std::vector<std::vector<CompressedTraffic>> alone_traffic(kRanks, std::vector<CompressedTraffic>(members));
      std::vector<std::vector<CompressedTraffic>> member_traffic = alone_traffic;
      RunOnRankThreads(kRanks, [&](int64_t rank) {
        std::vector<float> data = RankInput(rank + 7 * call, layout.total);
        for (size_t m = 0; m < members; ++m) {
          const int64_t next = m + 1 < members ? layout.offsets[m + 1] : layout.total;
          for (int64_t i = layout.offsets[m] + layout.counts[m]; i < next; ++i) data[i] = kPadding;
        }
        // Alone: one call per member, each with its own seed (a step's rounding seed).
        alone_out[rank].assign(layout.total, kPadding);
        for (size_t m = 0; m < members; ++m) {
          CodecOptions codec = named.options;
          codec.seed = named.options.seed + 1000 * m + call;
          const absl::StatusOr<CompressedTraffic> traffic =
              CompressedAllReduce(alone_counting[rank], codec, data.data() + layout.offsets[m],
                                  alone_out[rank].data() + layout.offsets[m], layout.counts[m], {},
                                  absl::MakeSpan(alone_residuals[rank][m]));
          ASSERT_TRUE(traffic.ok()) << traffic.status();
          alone_bytes[rank] += traffic->bytes_sent;
          alone_traffic[rank][m] = *traffic;
          alone_calls[rank] += 2;
        }
        // The bucket, in place as the bucket actor runs it.
        std::vector<CompressedBucketMember> bucket;
        for (size_t m = 0; m < members; ++m) {
          bucket.push_back({layout.offsets[m], layout.counts[m], named.options.seed + 1000 * m + call,
                            absl::MakeSpan(bucket_residuals[rank][m]), &member_traffic[rank][m]});
        }
        bucket_out[rank] = data;
        const absl::StatusOr<CompressedTraffic> traffic =
            CompressedBucketAllReduce(bucket_counting[rank], named.options, bucket_out[rank].data(),
                                      bucket_out[rank].data(), bucket, {});
        ASSERT_TRUE(traffic.ok()) << traffic.status();
        bucket_bytes[rank] = traffic->bytes_sent;
        EXPECT_EQ(traffic->bytes_sent, bucket_counting[rank].sent);
        bucket_calls[rank] = 2;
      });
      for (int64_t r = 0; r < kRanks; ++r) {
        SCOPED_TRACE("call " + std::to_string(call) + " rank " + std::to_string(r));
        // Bit for bit, padding included (kPadding in both: untouched by the bucket).
        EXPECT_EQ(bucket_out[r], alone_out[r]);
        EXPECT_EQ(bucket_residuals[r], alone_residuals[r]);
        EXPECT_EQ(bucket_bytes[r], alone_bytes[r]);
        EXPECT_EQ(bucket_counting[r].sent, alone_counting[r].sent);
        EXPECT_EQ(bucket_counting[r].received, alone_counting[r].received);
        // Each member's share of the bucket's traffic is its own call's: bytes and error.
        for (size_t m = 0; m < members; ++m) {
          EXPECT_EQ(member_traffic[r][m].bytes_sent, alone_traffic[r][m].bytes_sent) << "member " << m;
          EXPECT_EQ(member_traffic[r][m].bytes_received, alone_traffic[r][m].bytes_received) << "member " << m;
          EXPECT_EQ(member_traffic[r][m].dense_bytes_sent, alone_traffic[r][m].dense_bytes_sent) << "member " << m;
          EXPECT_EQ(member_traffic[r][m].dense_bytes_received, alone_traffic[r][m].dense_bytes_received);
          EXPECT_EQ(member_traffic[r][m].error_sq, alone_traffic[r][m].error_sq) << "member " << m;
          EXPECT_EQ(member_traffic[r][m].signal_sq, alone_traffic[r][m].signal_sq) << "member " << m;
        }
      }
    }
    // The codec loses something, so the residuals carried are not all zero (the test
    // would pass vacuously otherwise); bf16 on these values too.
    double residual_sum = 0;
    for (const std::vector<float>& residual : bucket_residuals[0]) {
      for (float value : residual) residual_sum += value * value;
    }
    EXPECT_GT(residual_sum, 0.0);
  }
}

TEST(CompressedBucketAllReduceTest, MembersOutOfOrderOrWithAWrongResidualAreRefused) {
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(1, "one");
  std::vector<float> data(64, 1.0f), residual(3, 0.0f);
  const CodecOptions codec{Codec::kInt8, 32};
  CollectiveOptions options;
  options.description = "bucket 4";
  const std::vector<CompressedBucketMember> overlapping = {{0, 20, 0, {}}, {16, 8, 0, {}}};
  absl::StatusOr<CompressedTraffic> traffic =
      CompressedBucketAllReduce(*group[0], codec, data.data(), data.data(), overlapping, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(), HasSubstr("bucket 4: compressed bucket all_reduce: member 1 covers [16, 24)"));
  const std::vector<CompressedBucketMember> wrong_residual = {{0, 20, 0, absl::MakeSpan(residual)}};
  traffic = CompressedBucketAllReduce(*group[0], codec, data.data(), data.data(), wrong_residual, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(), HasSubstr("member 0: residual has 3 floats"));
}

}  // namespace
}  // namespace oneflow
