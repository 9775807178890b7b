// The compressed collectives on every communicator backend (comm/testing's factory:
// in-process on 1..8 ranks, Gloo on 1..4, hierarchical on 2x1, 1x3 and 2x2), one thread
// per rank: one test body per collective. Each result is checked three ways:
//  - bit for bit against a sequential reference built from the codec itself (encode and
//    decode each contribution as its sender would, reduce in the documented order), so
//    the same bits on every rank and every run follow;
//  - against the dense result, within the codec's error bound;
//  - its wire bytes against what actually went through the communicator (a counting
//    wrapper) and against EncodedBytes.
// Counts are uneven and include empty ranks; groups end mid-chunk.
#include "kernels/compression/compressed_collectives.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compression/compressed_collectives_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace {

using comm_testing::BackendCase;
using compression_testing::Codecs;
using compression_testing::CountingCommunicator;
using compression_testing::Distance;
using compression_testing::NamedCodec;
using compression_testing::Norm;
using compression_testing::Offsets;
using compression_testing::RankInput;
using compression_testing::Sum;
using compression_testing::ThroughTheWire;
using compression_testing::UnevenCounts;
using ::testing::HasSubstr;

// A group of one backend, every rank behind a counting wrapper.
struct CountedGroup {
  std::unique_ptr<comm_testing::TestGroup> group;
  std::vector<std::unique_ptr<CountingCommunicator>> counting;
};

class CompressedCollectivesTest : public ::testing::TestWithParam<BackendCase> {
 protected:
  // One group per case, shared by the case's tests: connecting a Gloo group costs about as
  // much as a test's calls. No test fails a call (bad arguments fail before communicating),
  // so every test finds the group usable.
  static std::map<std::string, CountedGroup>& Groups() {
    static auto* const groups = new std::map<std::string, CountedGroup>();
    return *groups;
  }
  static void TearDownTestSuite() { Groups().clear(); }

  void SetUp() override {
    CountedGroup& counted = Groups()[comm_testing::CaseName(GetParam())];
    if (counted.group == nullptr) {
      counted.group = GetParam().factory->MakeGroup(GetParam().shape);
      for (int64_t rank = 0; rank < counted.group->size(); ++rank) {
        counted.counting.push_back(std::make_unique<CountingCommunicator>(&(*counted.group)[rank]));
      }
    }
    counting_ = &counted.counting;
  }

  int64_t ranks() const { return static_cast<int64_t>(counting_->size()); }
  CountingCommunicator& communicator(int64_t rank) { return *(*counting_)[rank]; }
  void ResetCounts() {
    for (auto& c : *counting_) c->sent = c->received = 0;
  }

  std::vector<std::unique_ptr<CountingCommunicator>>* counting_ = nullptr;
};

TEST_P(CompressedCollectivesTest, ReduceScatterMatchesTheSequentialReference) {
  const int64_t ranks = this->ranks();
  for (const NamedCodec& codec : Codecs()) {
    for (int64_t scale : {0, 1, 61}) {
      const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
      const std::vector<int64_t> offsets = Offsets(counts);
      const int64_t total = Sum(counts);
      std::vector<std::vector<float>> inputs(ranks), outputs(ranks);
      std::vector<absl::StatusOr<CompressedTraffic>> traffic(ranks, CompressedTraffic{});
      for (int64_t r = 0; r < ranks; ++r) {
        inputs[r] = RankInput(r, total);
        outputs[r].assign(counts[r], -1.0f);
      }
      ResetCounts();
      RunOnRankThreads(ranks, [&](int64_t rank) {
        traffic[rank] =
            CompressedReduceScatter(communicator(rank), codec.options, inputs[rank].data(),
                                    outputs[rank].data(), counts, {});
      });
      for (int64_t rank = 0; rank < ranks; ++rank) {
        ASSERT_TRUE(traffic[rank].ok()) << traffic[rank].status();
        const int64_t n = counts[rank], offset = offsets[rank];
        // Rank order, each peer's chunk through the wire, this rank's own exact.
        std::vector<float> want(n, 0.0f), dense(n, 0.0f);
        double contributions = 0.0;
        for (int64_t sender = 0; sender < ranks; ++sender) {
          const float* chunk = inputs[sender].data() + offset;
          const std::vector<float> received =
              sender == rank ? std::vector<float>(chunk, chunk + n)
                             : ThroughTheWire(codec.options, sender, chunk, n, offset);
          for (int64_t i = 0; i < n; ++i) {
            want[i] = sender == 0 ? received[i] : want[i] + received[i];
            dense[i] = sender == 0 ? chunk[i] : dense[i] + chunk[i];
          }
          if (sender != rank) contributions += std::pow(Norm(chunk, n), 2);
        }
        ASSERT_EQ(std::memcmp(outputs[rank].data(), want.data(), n * sizeof(float)), 0)
            << codec.name << " rank " << rank << " scale " << scale;
        EXPECT_LE(Distance(outputs[rank].data(), dense.data(), n),
                  1.5 * codec.bound * std::sqrt(contributions) + 1e-6)
            << codec.name << " rank " << rank;
        // Bytes: every peer's chunk out, this rank's chunk in from every peer.
        int64_t sent = 0;
        for (int64_t d = 0; d < ranks; ++d) {
          if (d != rank) sent += EncodedBytes(codec.options, counts[d]);
        }
        const CompressedTraffic& bytes = *traffic[rank];
        EXPECT_EQ(bytes.bytes_sent, sent);
        EXPECT_EQ(bytes.bytes_received, (ranks - 1) * EncodedBytes(codec.options, n));
        EXPECT_EQ(bytes.dense_bytes_sent, 4 * (total - n));
        EXPECT_EQ(bytes.dense_bytes_received, 4 * (ranks - 1) * n);
        EXPECT_EQ(communicator(rank).sent, bytes.bytes_sent);
        EXPECT_EQ(communicator(rank).received, bytes.bytes_received);
      }
    }
  }
}

TEST_P(CompressedCollectivesTest, AllGatherGivesEveryRankTheOwnersEncoding) {
  const int64_t ranks = this->ranks();
  for (const NamedCodec& codec : Codecs()) {
    for (int64_t scale : {0, 1, 61}) {
      const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
      const std::vector<int64_t> offsets = Offsets(counts);
      const int64_t total = Sum(counts);
      std::vector<std::vector<float>> shards(ranks), outputs(ranks);
      std::vector<absl::StatusOr<CompressedTraffic>> traffic(ranks, CompressedTraffic{});
      for (int64_t r = 0; r < ranks; ++r) {
        shards[r] = RankInput(r + 100, counts[r]);
        outputs[r].assign(total, -1.0f);
      }
      ResetCounts();
      RunOnRankThreads(ranks, [&](int64_t rank) {
        traffic[rank] = CompressedAllGather(communicator(rank), codec.options, shards[rank].data(),
                                            outputs[rank].data(), counts, {});
      });
      std::vector<float> want;
      for (int64_t r = 0; r < ranks; ++r) {
        const std::vector<float> shard =
            ThroughTheWire(codec.options, r, shards[r].data(), counts[r], offsets[r]);
        want.insert(want.end(), shard.begin(), shard.end());
        EXPECT_LE(Distance(shard.data(), shards[r].data(), counts[r]),
                  codec.bound * Norm(shards[r].data(), counts[r]) + 1e-6)
            << codec.name;
      }
      for (int64_t rank = 0; rank < ranks; ++rank) {
        ASSERT_TRUE(traffic[rank].ok()) << traffic[rank].status();
        ASSERT_EQ(std::memcmp(outputs[rank].data(), want.data(), total * sizeof(float)), 0)
            << codec.name << " rank " << rank;
        const CompressedTraffic& bytes = *traffic[rank];
        int64_t all = 0;
        for (int64_t count : counts) all += EncodedBytes(codec.options, count);
        const int64_t own = EncodedBytes(codec.options, counts[rank]);
        EXPECT_EQ(bytes.bytes_sent, (ranks - 1) * own);
        EXPECT_EQ(bytes.bytes_received, all - own);
        EXPECT_EQ(bytes.dense_bytes_sent, 4 * (ranks - 1) * counts[rank]);
        EXPECT_EQ(bytes.dense_bytes_received, 4 * (total - counts[rank]));
        EXPECT_EQ(communicator(rank).sent, bytes.bytes_sent);
        EXPECT_EQ(communicator(rank).received, bytes.bytes_received);
      }
    }
  }
}

// In place and not, every rank ends with the same bits, near the dense sum.
TEST_P(CompressedCollectivesTest, AllReduceGivesTheSameBitsEverywhere) {
  const int64_t ranks = this->ranks();
  for (const NamedCodec& codec : Codecs()) {
    for (int64_t count : {int64_t{0}, int64_t{1}, ranks + 2, int64_t{3001}}) {
      std::vector<std::vector<float>> outputs(ranks), in_place(ranks);
      std::vector<absl::Status> statuses(ranks);
      RunOnRankThreads(ranks, [&](int64_t rank) {
        const std::vector<float> input = RankInput(rank, count);
        outputs[rank].assign(count, -1.0f);
        absl::StatusOr<CompressedTraffic> traffic = CompressedAllReduce(
            communicator(rank), codec.options, input.data(), outputs[rank].data(), count, {});
        if (!traffic.ok()) {
          statuses[rank] = traffic.status();
          return;
        }
        in_place[rank] = input;
        statuses[rank] =
            CompressedAllReduce(communicator(rank), codec.options, in_place[rank].data(),
                                in_place[rank].data(), count, {})
                .status();
      });
      std::vector<float> dense(count, 0.0f);
      double contributions = 0.0;
      for (int64_t r = 0; r < ranks; ++r) {
        const std::vector<float> input = RankInput(r, count);
        for (int64_t i = 0; i < count; ++i) dense[i] += input[i];
        contributions += std::pow(Norm(input.data(), count), 2);
      }
      for (int64_t rank = 0; rank < ranks; ++rank) {
        ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
        ASSERT_EQ(std::memcmp(outputs[rank].data(), outputs[0].data(), count * sizeof(float)), 0)
            << codec.name << " rank " << rank << " count " << count;
        ASSERT_EQ(std::memcmp(in_place[rank].data(), outputs[0].data(), count * sizeof(float)), 0)
            << codec.name << " in place, rank " << rank;
      }
      // One encoding per contribution and one of the reduced shard.
      EXPECT_LE(Distance(outputs[0].data(), dense.data(), count),
                1.5 * codec.bound * (std::sqrt(contributions) + Norm(dense.data(), count)) + 1e-6)
          << codec.name << " count " << count;
    }
  }
}

TEST_P(CompressedCollectivesTest, InPlaceReduceScatterAndAllGatherMatchOutOfPlace) {
  const int64_t ranks = this->ranks();
  const CodecOptions codec{Codec::kInt4, 64, true, true, 3};
  const std::vector<int64_t> counts = UnevenCounts(ranks, 50);
  const std::vector<int64_t> offsets = Offsets(counts);
  const int64_t total = Sum(counts);
  std::vector<std::vector<float>> separate(ranks), together(ranks), gathered(ranks),
      gathered_in_place(ranks);
  RunOnRankThreads(ranks, [&](int64_t rank) {
    const std::vector<float> input = RankInput(rank, total);
    separate[rank].assign(counts[rank], 0.0f);
    EXPECT_TRUE(CompressedReduceScatter(communicator(rank), codec, input.data(),
                                        separate[rank].data(), counts, {})
                    .ok());
    together[rank] = input;
    float* own = together[rank].data() + offsets[rank];
    EXPECT_TRUE(
        CompressedReduceScatter(communicator(rank), codec, together[rank].data(), own, counts, {})
            .ok());
    gathered[rank].assign(total, 0.0f);
    EXPECT_TRUE(CompressedAllGather(communicator(rank), codec, separate[rank].data(),
                                    gathered[rank].data(), counts, {})
                    .ok());
    gathered_in_place[rank].assign(total, 0.0f);
    std::memcpy(gathered_in_place[rank].data() + offsets[rank], separate[rank].data(),
                counts[rank] * sizeof(float));
    EXPECT_TRUE(CompressedAllGather(communicator(rank), codec,
                                    gathered_in_place[rank].data() + offsets[rank],
                                    gathered_in_place[rank].data(), counts, {})
                    .ok());
  });
  for (int64_t rank = 0; rank < ranks; ++rank) {
    ASSERT_EQ(std::memcmp(separate[rank].data(), together[rank].data() + offsets[rank],
                          counts[rank] * sizeof(float)),
              0)
        << "rank " << rank;
    EXPECT_EQ(gathered_in_place[rank], gathered[rank]) << "rank " << rank;
    EXPECT_EQ(gathered[rank], gathered[0]) << "rank " << rank;
  }
}

// kMax reduces the decoded values: against the max of what went through the wire.
TEST_P(CompressedCollectivesTest, ReduceScatterMaxReducesDecodedValues) {
  const int64_t ranks = this->ranks();
  const CodecOptions codec{Codec::kFp8E4M3, 32};
  const std::vector<int64_t> counts = UnevenCounts(ranks, 20);
  const std::vector<int64_t> offsets = Offsets(counts);
  const int64_t total = Sum(counts);
  std::vector<std::vector<float>> outputs(ranks);
  RunOnRankThreads(ranks, [&](int64_t rank) {
    const std::vector<float> input = RankInput(rank, total);
    outputs[rank].assign(counts[rank], 0.0f);
    CollectiveOptions options;
    options.reduce_op = ReduceOp::kMax;
    EXPECT_TRUE(CompressedReduceScatter(communicator(rank), codec, input.data(),
                                        outputs[rank].data(), counts, options)
                    .ok());
  });
  for (int64_t rank = 0; rank < ranks; ++rank) {
    for (int64_t i = 0; i < counts[rank]; ++i) {
      float want = -INFINITY;
      for (int64_t sender = 0; sender < ranks; ++sender) {
        const std::vector<float> input = RankInput(sender, total);
        const float* chunk = input.data();
        const float value = sender == rank ? chunk[offsets[rank] + i]
                                           : ThroughTheWire(codec, sender, chunk + offsets[rank],
                                                            counts[rank], offsets[rank])[i];
        want = std::fmax(want, value);
      }
      ASSERT_EQ(outputs[rank][i], want) << "rank " << rank << " i " << i;
    }
  }
}

// Bad arguments fail before any communication, naming the call and the argument.
TEST_P(CompressedCollectivesTest, BadArgumentsAreInvalidAndNamed) {
  const int64_t ranks = this->ranks();
  CollectiveOptions options;
  options.description = "actor 'b/rs' collective 3";
  std::vector<float> buffer(64, 0.0f);
  const std::vector<int64_t> counts(ranks, 4);
  absl::StatusOr<CompressedTraffic> result = CompressedReduceScatter(
      communicator(0), {Codec::kInt8, 0}, buffer.data(), buffer.data(), counts, options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(),
            "actor 'b/rs' collective 3: compressed reduce_scatter: codec int8: group_size is 0; "
            "it must be >= 1");
  result = CompressedAllGather(communicator(0), {Codec::kInt8}, buffer.data(), buffer.data(),
                               std::vector<int64_t>(ranks + 1, 1), options);
  EXPECT_EQ(result.status().message(),
            absl::StrCat("actor 'b/rs' collective 3: compressed all_gather: counts has ", ranks + 1,
                         " entries; the call needs ", ranks));
  std::vector<int64_t> negative = counts;
  negative.back() = -2;
  result = CompressedReduceScatter(communicator(0), {Codec::kInt8}, buffer.data(), buffer.data(),
                                   negative, {});
  EXPECT_THAT(result.status().message(), HasSubstr("counts must be >= 0"));
  result = CompressedAllReduce(communicator(0), {Codec::kInt8}, nullptr, buffer.data(), 8, {});
  EXPECT_EQ(result.status().message(), "compressed all_reduce: input is null but its size is 8");
}

// In-process on 1..8 ranks, Gloo on 1..4, UCX on 2 and 3, hierarchical on one device per node, one node,
// and 2 nodes of 2 (where the all-gather crosses nodes and the all-to-all goes flat).
std::vector<BackendCase> Cases() {
  std::vector<BackendCase> cases;
  for (int64_t ranks = 1; ranks <= 8; ++ranks) {
    cases.push_back({comm_testing::InProcessFactory(), {1, ranks}});
  }
  for (int64_t ranks = 1; ranks <= 4; ++ranks)
    cases.push_back({comm_testing::GlooFactory(), {1, ranks}});
  for (int64_t ranks : {2, 3}) cases.push_back({comm_testing::UcxFactory(), {1, ranks}});
  for (comm_testing::GroupShape shape :
       {comm_testing::GroupShape{2, 1}, comm_testing::GroupShape{1, 3},
        comm_testing::GroupShape{2, 2}}) {
    cases.push_back({comm_testing::HierarchicalFactory(), shape});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Backends, CompressedCollectivesTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<BackendCase>& info) {
                           return comm_testing::CaseName(info.param);
                         });

}  // namespace
}  // namespace oneflow
