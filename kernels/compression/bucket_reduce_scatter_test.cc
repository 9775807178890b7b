// The compressed reduce-scatter of a gradient bucket (CompressedBucketReduceScatter,
// bucket_reduce_scatter.h): every member's reduced part and error-feedback residual are
// bit for bit those of CompressedReduceScatter on that member alone (each codec, int4
// with stochastic rounding and a seed per member, uneven parts, three calls so the
// residuals carry), and so is each member's metered traffic, with 1 communicator call per
// bucket where the members alone make 1 each, the same encoded bytes, this rank's padding
// and the other ranks' chunks untouched; bad members are refused by name.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compression/bucket_reduce_scatter.h"
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

constexpr int64_t kRanks = 3;

// Members as a reduce-scatter bucket lays them out over 3 ranks: a bias split 10/10/9, a
// weight larger than one codec group (uneven: 335/334/334), an empty one and an odd one
// (26/26/25), each at a 16-float aligned offset that reserves its largest part.
struct Layout {
  std::vector<std::vector<int64_t>> counts = {{10, 10, 9}, {335, 334, 334}, {0, 0, 0}, {26, 26, 25}};
  std::vector<int64_t> offsets = {0, 16, 352, 352};
  int64_t chunk = 384;
};

constexpr float kPadding = -123.0f;

// The member's input as its own step packs it: its parts for ranks 0, 1, 2 back to back,
// cut out of the rank-major register.
std::vector<float> PackedInput(const std::vector<float>& data, const Layout& layout, size_t m) {
  std::vector<float> packed;
  for (int64_t g = 0; g < kRanks; ++g) {
    const float* part = data.data() + g * layout.chunk + layout.offsets[m];
    packed.insert(packed.end(), part, part + layout.counts[m][g]);
  }
  return packed;
}

TEST(CompressedBucketReduceScatterTest, EveryMemberGetsTheBitsAndResidualOfItsOwnCall) {
  constexpr int kCalls = 3;
  const Layout layout;
  const size_t members = layout.counts.size();
  for (const NamedCodec& named : Codecs()) {
    SCOPED_TRACE(named.name);
    InProcessBackend backend;
    const std::vector<Communicator*> bucket_group = backend.MakeGroup(kRanks, "bucket");
    const std::vector<Communicator*> alone_group = backend.MakeGroup(kRanks, "alone");
    std::vector<std::vector<std::vector<float>>> bucket_residuals(kRanks), alone_residuals(kRanks);
    for (int64_t r = 0; r < kRanks; ++r) {
      for (size_t m = 0; m < members; ++m) {
        const int64_t elements = ReduceScatterResidualElements(layout.counts[m]);
        bucket_residuals[r].emplace_back(elements, 0.0f);
        alone_residuals[r].emplace_back(elements, 0.0f);
      }
    }
    for (int call = 0; call < kCalls; ++call) {
      // Per rank: the register after the bucket, and each member's own call's output.
      std::vector<std::vector<float>> registers(kRanks), before(kRanks);
      std::vector<std::vector<std::vector<float>>> alone_out(kRanks);
      std::vector<CountingCommunicator> bucket_counting, alone_counting;
      for (int64_t r = 0; r < kRanks; ++r) {
        bucket_counting.emplace_back(bucket_group[r]);
        alone_counting.emplace_back(alone_group[r]);
      }
      std::vector<int64_t> bucket_bytes(kRanks, 0), alone_bytes(kRanks, 0);
      std::vector<std::vector<CompressedTraffic>> alone_traffic(kRanks, std::vector<CompressedTraffic>(members));
      std::vector<std::vector<CompressedTraffic>> member_traffic = alone_traffic;
      RunOnRankThreads(kRanks, [&](int64_t rank) {
        std::vector<float> data = RankInput(rank + 7 * call, kRanks * layout.chunk);
        // Padding between and after the parts of every chunk.
        for (int64_t g = 0; g < kRanks; ++g) {
          for (size_t m = 0; m < members; ++m) {
            const int64_t next = m + 1 < members ? layout.offsets[m + 1] : layout.chunk;
            for (int64_t i = layout.offsets[m] + layout.counts[m][g]; i < next; ++i) data[g * layout.chunk + i] = kPadding;
          }
        }
        alone_out[rank].resize(members);
        for (size_t m = 0; m < members; ++m) {
          CodecOptions codec = named.options;
          codec.seed = named.options.seed + 1000 * m + call;
          const std::vector<float> input = PackedInput(data, layout, m);
          alone_out[rank][m].assign(layout.counts[m][rank], 0.0f);
          const absl::StatusOr<CompressedTraffic> traffic = CompressedReduceScatter(
              alone_counting[rank], codec, input.data(), alone_out[rank][m].data(), layout.counts[m], {},
              absl::MakeSpan(alone_residuals[rank][m]));
          ASSERT_TRUE(traffic.ok()) << traffic.status();
          alone_bytes[rank] += traffic->bytes_sent;
          alone_traffic[rank][m] = *traffic;
        }
        std::vector<CompressedScatterBucketMember> bucket;
        for (size_t m = 0; m < members; ++m) {
          bucket.push_back({layout.offsets[m], layout.counts[m], named.options.seed + 1000 * m + call,
                            absl::MakeSpan(bucket_residuals[rank][m]), &member_traffic[rank][m]});
        }
        before[rank] = data;
        registers[rank] = data;
        const absl::StatusOr<CompressedTraffic> traffic = CompressedBucketReduceScatter(
            bucket_counting[rank], named.options, registers[rank].data(), layout.chunk, bucket, {});
        ASSERT_TRUE(traffic.ok()) << traffic.status();
        bucket_bytes[rank] = traffic->bytes_sent;
        EXPECT_EQ(traffic->bytes_sent, bucket_counting[rank].sent);
      });
      for (int64_t r = 0; r < kRanks; ++r) {
        SCOPED_TRACE("call " + std::to_string(call) + " rank " + std::to_string(r));
        for (size_t m = 0; m < members; ++m) {
          const float* part = registers[r].data() + r * layout.chunk + layout.offsets[m];
          EXPECT_EQ(std::vector<float>(part, part + layout.counts[m][r]), alone_out[r][m]) << "member " << m;
        }
        // Everything but this rank's parts is as it was: padding and other ranks' chunks.
        std::vector<float> untouched = registers[r];
        for (size_t m = 0; m < members; ++m) {
          const int64_t start = r * layout.chunk + layout.offsets[m];
          std::copy(before[r].begin() + start, before[r].begin() + start + layout.counts[m][r],
                    untouched.begin() + start);
        }
        EXPECT_EQ(untouched, before[r]);
        EXPECT_EQ(bucket_residuals[r], alone_residuals[r]);
        EXPECT_EQ(bucket_bytes[r], alone_bytes[r]);
        EXPECT_EQ(bucket_counting[r].sent, alone_counting[r].sent);
        EXPECT_EQ(bucket_counting[r].received, alone_counting[r].received);
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
    double residual_sum = 0;
    for (const std::vector<float>& residual : bucket_residuals[0]) {
      for (float value : residual) residual_sum += value * value;
    }
    EXPECT_GT(residual_sum, 0.0);
  }
}

// One AllToAll per bucket: the members alone make one each.
class CallCounter : public CountingCommunicator {
 public:
  using CountingCommunicator::CountingCommunicator;
  int calls = 0;
  absl::Status AllToAll(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                        const CollectiveOptions& options) override {
    ++calls;
    return CountingCommunicator::AllToAll(input, output, byte_counts, options);
  }
};

TEST(CompressedBucketReduceScatterTest, OneCommunicatorCallPerBucket) {
  const Layout layout;
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(kRanks, "calls");
  std::vector<int> calls(kRanks, 0);
  RunOnRankThreads(kRanks, [&](int64_t rank) {
    CallCounter counter(group[rank]);
    std::vector<float> data = RankInput(rank, kRanks * layout.chunk);
    std::vector<CompressedScatterBucketMember> bucket;
    for (size_t m = 0; m < layout.counts.size(); ++m) bucket.push_back({layout.offsets[m], layout.counts[m], 0, {}});
    const absl::StatusOr<CompressedTraffic> traffic =
        CompressedBucketReduceScatter(counter, {Codec::kInt8, 32}, data.data(), layout.chunk, bucket, {});
    ASSERT_TRUE(traffic.ok()) << traffic.status();
    calls[rank] = counter.calls;
  });
  EXPECT_EQ(calls, std::vector<int>(kRanks, 1));
}

TEST(CompressedBucketReduceScatterTest, BadMembersAreRefusedByName) {
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(1, "one");
  std::vector<float> data(64, 1.0f), residual(3, 0.0f);
  const CodecOptions codec{Codec::kInt8, 32};
  CollectiveOptions options;
  options.description = "bucket 4";
  const std::vector<CompressedScatterBucketMember> overlapping = {{0, {20}, 0, {}}, {16, {8}, 0, {}}};
  absl::StatusOr<CompressedTraffic> traffic =
      CompressedBucketReduceScatter(*group[0], codec, data.data(), 64, overlapping, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(),
              HasSubstr("bucket 4: compressed bucket reduce_scatter: member 1 covers [16, 24) of each chunk of 64"));
  const std::vector<CompressedScatterBucketMember> past_chunk = {{48, {20}, 0, {}}};
  traffic = CompressedBucketReduceScatter(*group[0], codec, data.data(), 64, past_chunk, options);
  EXPECT_THAT(traffic.status().message(), HasSubstr("member 0 covers [48, 68)"));
  const std::vector<CompressedScatterBucketMember> two_counts = {{0, {4, 4}, 0, {}}};
  traffic = CompressedBucketReduceScatter(*group[0], codec, data.data(), 64, two_counts, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(), HasSubstr("member 0 counts"));
  const std::vector<CompressedScatterBucketMember> wrong_residual = {{0, {20}, 0, absl::MakeSpan(residual)}};
  traffic = CompressedBucketReduceScatter(*group[0], codec, data.data(), 64, wrong_residual, options);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(), HasSubstr("member 0: residual has 3 floats"));
}

}  // namespace
}  // namespace oneflow
