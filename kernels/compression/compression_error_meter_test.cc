// The error the compressed collectives meter (CompressedTraffic::error_sq / signal_sq):
// what each rank's own encodings lost, equal to a round trip of the same data computed
// here independently, zero for kNone, summed across calls, and attributed to the right
// level in the two-level forms. That metering leaves the outputs' bits alone is checked
// by compressed_collectives_test and two_level_collectives_test, which compare every
// output bit for bit with a sequential reference.
#include <cmath>
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

using compression_testing::InProcessBackend;
using compression_testing::Offsets;
using compression_testing::RankInput;
using compression_testing::Sum;
using compression_testing::ThroughTheWire;

// Equal to float rounding: the sums are accumulated in another order than the references
// below, and an encoding without error feedback is metered as it is made (EncodeMeasured,
// codec.h), in the rotated domain and in float lanes per group, where the references
// decode and compare in double (they agree to about 1e-7 of the sums). A metering that
// lost the rotation's scale, a group or a chunk would be off by far more.
constexpr double kTolerance = 1e-5;

// sum((wire(x) - x)^2) and sum(x^2) of one encoding by `sender`, from the codec alone.
struct Sums {
  double error_sq = 0;
  double signal_sq = 0;
};
void AddReference(const CodecOptions& codec, int64_t sender, const float* values, int64_t count,
                  int64_t first_index, Sums* sums) {
  const std::vector<float> decoded = ThroughTheWire(codec, sender, values, count, first_index);
  for (int64_t i = 0; i < count; ++i) {
    const double difference = static_cast<double>(decoded[i]) - values[i];
    sums->error_sq += difference * difference;
    sums->signal_sq += static_cast<double>(values[i]) * values[i];
  }
}

void ExpectSums(const CompressedTraffic& traffic, const Sums& want, const std::string& what) {
  EXPECT_NEAR(traffic.error_sq, want.error_sq, kTolerance * want.error_sq) << what;
  EXPECT_NEAR(traffic.signal_sq, want.signal_sq, kTolerance * want.signal_sq) << what;
}

std::vector<CodecOptions> DeterministicCodecs() {
  return {{Codec::kFp8E4M3, 128}, {Codec::kFp8E5M2, 32, true}, {Codec::kInt8, 128, true},
          {Codec::kInt4, 128},    {Codec::kInt4, 5},           {Codec::kFp8E4M3, 64, true}};
}

// An all-gather on one rank encodes its shard once and decodes it into the output: the
// metered relative error is the codec's round trip error on that shard (to the rounding of
// the sums, added in another order).
TEST(CompressionErrorMeterTest, OneEncodingIsTheRoundTripError) {
  InProcessBackend backend;
  Communicator& alone = *backend.MakeGroup(1, "alone")[0];
  const std::vector<float> x = RankInput(3, 1000);
  for (const CodecOptions& codec : DeterministicCodecs()) {
    const std::string name =
        std::string(CodecName(codec.codec)) + "/" + std::to_string(codec.group_size);
    std::vector<float> output(x.size());
    absl::StatusOr<CompressedTraffic> traffic =
        CompressedAllGather(alone, codec, x.data(), output.data(), {1000}, {});
    ASSERT_TRUE(traffic.ok()) << traffic.status();
    const double want = RoundTripRelativeError(codec, x.data(), x.size());
    EXPECT_GT(want, 0.0) << name;
    EXPECT_NEAR(traffic->RelativeError(), want, kTolerance * want) << name;
  }
}

// Two ranks: each reduce-scatter encodes exactly one chunk (the other rank's); its error is
// the round trip error of that chunk, and the chunk each keeps dense adds nothing.
TEST(CompressionErrorMeterTest, ReduceScatterOnTwoRanksMetersTheOneChunkSent) {
  InProcessBackend backend;
  std::vector<Communicator*> group = backend.MakeGroup(2, "pair");
  const std::vector<int64_t> counts = {300, 517};
  const CodecOptions codec{Codec::kInt4, 128, /*hadamard=*/true};
  std::vector<std::vector<float>> inputs = {RankInput(0, 817), RankInput(1, 817)};
  std::vector<std::vector<float>> outputs = {std::vector<float>(300), std::vector<float>(517)};
  std::vector<absl::StatusOr<CompressedTraffic>> traffic(2, CompressedTraffic{});
  RunOnRankThreads(2, [&](int64_t rank) {
    traffic[rank] = CompressedReduceScatter(*group[rank], codec, inputs[rank].data(),
                                            outputs[rank].data(), counts, {});
  });
  ASSERT_TRUE(traffic[0].ok() && traffic[1].ok());
  const double rank0 = RoundTripRelativeError(codec, inputs[0].data() + 300, 517);
  const double rank1 = RoundTripRelativeError(codec, inputs[1].data(), 300);
  EXPECT_NEAR(traffic[0]->RelativeError(), rank0, kTolerance * rank0);
  EXPECT_NEAR(traffic[1]->RelativeError(), rank1, kTolerance * rank1);
}

// Every rank meters each chunk it sends, as encoded with its own seed and the chunk's
// logical index (so stochastic rounding is measured as it travelled).
TEST(CompressionErrorMeterTest, ReduceScatterMetersEveryChunkItSends) {
  InProcessBackend backend;
  constexpr int64_t kRanks = 3;
  std::vector<Communicator*> group = backend.MakeGroup(kRanks, "three");
  const std::vector<int64_t> counts = {200, 0, 333};
  const std::vector<int64_t> offsets = Offsets(counts);
  CodecOptions codec{Codec::kInt4, 64, /*hadamard=*/true, /*stochastic_rounding=*/true, 11};
  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) {
    inputs[r] = RankInput(r, Sum(counts));
    outputs[r].resize(counts[r]);
  }
  std::vector<absl::StatusOr<CompressedTraffic>> traffic(kRanks, CompressedTraffic{});
  RunOnRankThreads(kRanks, [&](int64_t rank) {
    traffic[rank] = CompressedReduceScatter(*group[rank], codec, inputs[rank].data(),
                                            outputs[rank].data(), counts, {});
  });
  for (int64_t r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(traffic[r].ok()) << traffic[r].status();
    Sums want;
    for (int64_t d = 0; d < kRanks; ++d) {
      if (d != r)
        AddReference(codec, r, inputs[r].data() + offsets[d], counts[d], offsets[d], &want);
    }
    ExpectSums(*traffic[r], want, "rank " + std::to_string(r));
  }
}

// kNone moves the floats themselves: no error, and the signal is still counted.
TEST(CompressionErrorMeterTest, NoneMetersZeroError) {
  InProcessBackend backend;
  constexpr int64_t kRanks = 3, kCount = 1001;
  std::vector<Communicator*> group = backend.MakeGroup(kRanks, "dense");
  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks, std::vector<float>(kCount));
  for (int64_t r = 0; r < kRanks; ++r) inputs[r] = RankInput(r, kCount);
  std::vector<absl::StatusOr<CompressedTraffic>> traffic(kRanks, CompressedTraffic{});
  RunOnRankThreads(kRanks, [&](int64_t rank) {
    traffic[rank] = CompressedAllReduce(*group[rank], CodecOptions{Codec::kNone, 1},
                                        inputs[rank].data(), outputs[rank].data(), kCount, {});
  });
  for (int64_t r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(traffic[r].ok()) << traffic[r].status();
    EXPECT_EQ(traffic[r]->error_sq, 0.0);
    EXPECT_GT(traffic[r]->signal_sq, 0.0);
    EXPECT_EQ(traffic[r]->RelativeError(), 0.0);
  }
}

// Calls add up: two gathers whose split falls on a group boundary meter together exactly
// what one round trip of the whole tensor loses.
TEST(CompressionErrorMeterTest, AccumulatesAcrossCalls) {
  InProcessBackend backend;
  Communicator& alone = *backend.MakeGroup(1, "alone")[0];
  const CodecOptions codec{Codec::kInt4, 128};
  const std::vector<float> x = RankInput(5, 256 + 300);
  std::vector<float> output(x.size());
  absl::StatusOr<CompressedTraffic> first =
      CompressedAllGather(alone, codec, x.data(), output.data(), {256}, {});
  absl::StatusOr<CompressedTraffic> second =
      CompressedAllGather(alone, codec, x.data() + 256, output.data() + 256, {300}, {});
  ASSERT_TRUE(first.ok() && second.ok());
  CompressedTraffic total = *first;
  total += *second;
  EXPECT_EQ(total.error_sq, first->error_sq + second->error_sq);
  EXPECT_EQ(total.signal_sq, first->signal_sq + second->signal_sq);
  const double whole = RoundTripRelativeError(codec, x.data(), x.size());
  EXPECT_NEAR(total.RelativeError(), whole, kTolerance * whole);
  EXPECT_GT(total.RelativeError(), 0.05);  // int4: about 12% on these values
}

// In place, the shard is the output's own part: the error is still measured against the
// original values, not against the decoded ones that replace them.
TEST(CompressionErrorMeterTest, InPlaceAllGatherMetersTheOriginal) {
  InProcessBackend backend;
  std::vector<Communicator*> group = backend.MakeGroup(2, "pair");
  const CodecOptions codec{Codec::kFp8E4M3, 128};
  const std::vector<int64_t> counts = {400, 250};
  const std::vector<int64_t> offsets = Offsets(counts);
  std::vector<std::vector<float>> buffers(2, std::vector<float>(650));
  std::vector<std::vector<float>> shards = {RankInput(0, 400), RankInput(1, 250)};
  for (int64_t r = 0; r < 2; ++r) {
    std::copy(shards[r].begin(), shards[r].end(), buffers[r].begin() + offsets[r]);
  }
  std::vector<absl::StatusOr<CompressedTraffic>> traffic(2, CompressedTraffic{});
  RunOnRankThreads(2, [&](int64_t rank) {
    traffic[rank] = CompressedAllGather(*group[rank], codec, buffers[rank].data() + offsets[rank],
                                        buffers[rank].data(), counts, {});
  });
  for (int64_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(traffic[r].ok()) << traffic[r].status();
    Sums want;
    AddReference(codec, r, shards[r].data(), counts[r], offsets[r], &want);
    ExpectSums(*traffic[r], want, "rank " + std::to_string(r));
    EXPECT_GT(want.error_sq, 0.0);
  }
}

// Two levels on 2 nodes x 2 devices, groups as two_level_collectives_test builds them.
class TwoLevelMeterTest : public ::testing::Test {
 protected:
  static constexpr int64_t kNodes = 2, kLocal = 2, kRanks = kNodes * kLocal;
  void SetUp() override {
    in_node_.resize(kRanks);
    cross_node_.resize(kRanks);
    for (int64_t node = 0; node < kNodes; ++node) {
      std::vector<Communicator*> group = backend_.MakeGroup(kLocal, "node" + std::to_string(node));
      for (int64_t local = 0; local < kLocal; ++local)
        in_node_[node * kLocal + local] = group[local];
    }
    for (int64_t local = 0; local < kLocal; ++local) {
      std::vector<Communicator*> group =
          backend_.MakeGroup(kNodes, "cross" + std::to_string(local));
      for (int64_t node = 0; node < kNodes; ++node)
        cross_node_[node * kLocal + local] = group[node];
    }
  }
  InProcessBackend backend_;
  std::vector<Communicator*> in_node_, cross_node_;
};

// In the node each rank encodes the chunks of the other local index; across nodes it
// encodes its node's partial sums, which are measured against themselves (what was
// encoded), not against the inputs.
TEST_F(TwoLevelMeterTest, ReduceScatterMetersEachLevelWithItsCodec) {
  TwoLevelCodecs codecs;
  codecs.in_node.group_size = 64;
  const std::vector<int64_t> counts = {130, 70, 0, 201};
  const std::vector<int64_t> offsets = Offsets(counts);
  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) {
    inputs[r] = RankInput(r, Sum(counts));
    outputs[r].resize(counts[r]);
  }
  std::vector<absl::StatusOr<TwoLevelTraffic>> traffic(kRanks, TwoLevelTraffic{});
  RunOnRankThreads(kRanks, [&](int64_t rank) {
    traffic[rank] =
        TwoLevelCompressedReduceScatter(*in_node_[rank], *cross_node_[rank], codecs,
                                        inputs[rank].data(), outputs[rank].data(), counts, {});
  });
  for (int64_t r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(traffic[r].ok()) << traffic[r].status();
    const int64_t node = r / kLocal, local = r % kLocal, peer = node * kLocal + (1 - local);
    Sums in_node, cross_node;
    for (int64_t m = 0; m < kNodes; ++m) {
      // In the node: to the other local index, the chunks of every node's rank with it.
      const int64_t target = m * kLocal + (1 - local);
      AddReference(codecs.in_node, r, inputs[r].data() + offsets[target], counts[target],
                   offsets[target], &in_node);
      if (m == node) continue;
      // Across nodes: this node's partial of node m's chunk with this local index, summed
      // in local order from this rank's own chunk and the peer's, through the wire.
      const int64_t chunk = m * kLocal + local, n = counts[chunk];
      const std::vector<float> from_peer = ThroughTheWire(
          codecs.in_node, peer, inputs[peer].data() + offsets[chunk], n, offsets[chunk]);
      std::vector<float> partial(n);
      for (int64_t i = 0; i < n; ++i) {
        const float own = inputs[r][offsets[chunk] + i];
        partial[i] = local == 0 ? own + from_peer[i] : from_peer[i] + own;
      }
      AddReference(codecs.cross_node, r, partial.data(), n, offsets[chunk], &cross_node);
    }
    ExpectSums(traffic[r]->in_node, in_node, "in-node, rank " + std::to_string(r));
    ExpectSums(traffic[r]->cross_node, cross_node, "cross-node, rank " + std::to_string(r));
  }
}

// The gathered shard is encoded once (codecs.gather) and metered once, in in_node (the
// level whose codec the boxing steps give it), though its bytes cross nodes too.
TEST_F(TwoLevelMeterTest, AllGatherMetersTheShardOnceInNode) {
  TwoLevelCodecs codecs;
  const std::vector<int64_t> counts = {100, 0, 257, 64};
  const std::vector<int64_t> offsets = Offsets(counts);
  std::vector<std::vector<float>> shards(kRanks), outputs(kRanks, std::vector<float>(Sum(counts)));
  for (int64_t r = 0; r < kRanks; ++r) shards[r] = RankInput(r + 3, counts[r]);
  std::vector<absl::StatusOr<TwoLevelTraffic>> traffic(kRanks, TwoLevelTraffic{});
  RunOnRankThreads(kRanks, [&](int64_t rank) {
    traffic[rank] =
        TwoLevelCompressedAllGather(*in_node_[rank], *cross_node_[rank], codecs,
                                    shards[rank].data(), outputs[rank].data(), counts, {});
  });
  for (int64_t r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(traffic[r].ok()) << traffic[r].status();
    Sums want;
    AddReference(codecs.gather, r, shards[r].data(), counts[r], offsets[r], &want);
    ExpectSums(traffic[r]->in_node, want, "rank " + std::to_string(r));
    EXPECT_EQ(traffic[r]->cross_node.error_sq, 0.0);
    EXPECT_EQ(traffic[r]->cross_node.signal_sq, 0.0);
    if (counts[r] > 0) {
      EXPECT_GT(traffic[r]->cross_node.bytes_sent, 0);  // it did cross
    }
  }
}

// Ranks that encode with different codecs must not decode each other's bytes as their own:
// fp8 and int8 at one group size send the same byte counts, so only the payload format
// (the codec in CollectiveOptions) tells them apart, and the call fails on both ranks
// before any byte is reduced.
TEST(CompressionErrorMeterTest, RanksOnDifferentCodecsAreRefused) {
  InProcessBackend backend;
  std::vector<Communicator*> group = backend.MakeGroup(2, "mismatch");
  const CodecOptions fp8{Codec::kFp8E4M3, 128};
  const CodecOptions int8{Codec::kInt8, 128};
  ASSERT_EQ(EncodedBytes(fp8, 500), EncodedBytes(int8, 500));
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    const std::vector<float> x = RankInput(rank, 1000);
    std::vector<float> output(500);
    CollectiveOptions options;
    options.timeout = absl::Seconds(10);
    statuses[rank] = CompressedReduceScatter(*group[rank], rank == 0 ? fp8 : int8, x.data(),
                                             output.data(), {500, 500}, options)
                         .status();
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("payload_format")) << status;
  }
}

}  // namespace
}  // namespace oneflow
