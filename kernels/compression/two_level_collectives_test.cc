// The two-level compressed collectives (in-node 8-bit, cross-node 4-bit) on layouts of
// 1x1 .. 2x4 (nodes x devices), every device a thread, both levels' groups made by one
// communicator backend (comm/testing's factory: in-process on every layout, Gloo on 2x2
// and 3x1, hierarchical groups on 2x2).
// As for the flat forms: bit for bit against a sequential reference that follows the
// documented association (local order within a node, then node order), near the dense
// sum, the same bits on every rank, and wire bytes per level against a counting wrapper.
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
#include "kernels/compression/compressed_collectives.h"
#include "kernels/compression/compressed_collectives_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/comm/testing/communicator_factory.h"

namespace oneflow {
namespace {

using compression_testing::CountingCommunicator;
using compression_testing::Distance;
using compression_testing::Norm;
using compression_testing::Offsets;
using compression_testing::RankInput;
using compression_testing::Sum;
using compression_testing::ThroughTheWire;
using compression_testing::UnevenCounts;
using ::testing::HasSubstr;

using comm_testing::BackendCase;
using comm_testing::GroupShape;

// The groups of a two-level layout: one in-node group per node and one cross-node group
// per local index, all from one backend, each rank behind a counting wrapper.
struct TwoLevelGroups {
  std::vector<std::unique_ptr<comm_testing::TestGroup>> groups;
  std::vector<std::unique_ptr<CountingCommunicator>> in_node, cross_node;  // by group rank
};

class TwoLevelTest : public ::testing::TestWithParam<BackendCase> {
 protected:
  // One layout per case, shared by the case's tests: connecting Gloo groups costs about as
  // much as a test's calls. No test fails a call (bad arguments fail before communicating).
  static std::map<std::string, TwoLevelGroups>& Layouts() {
    static auto* const layouts = new std::map<std::string, TwoLevelGroups>();
    return *layouts;
  }
  static void TearDownTestSuite() { Layouts().clear(); }

  void SetUp() override {
    TwoLevelGroups& layout = Layouts()[comm_testing::CaseName(GetParam())];
    if (layout.groups.empty()) Build(layout);
    layout_ = &layout;
  }

  CountingCommunicator& in_node(int64_t rank) { return *layout_->in_node[rank]; }
  CountingCommunicator& cross_node(int64_t rank) { return *layout_->cross_node[rank]; }
  void ResetCounts() {
    for (auto* level : {&layout_->in_node, &layout_->cross_node}) {
      for (auto& c : *level) c->sent = c->received = 0;
    }
  }

  TwoLevelGroups* layout_ = nullptr;

 private:
  static void Build(TwoLevelGroups& layout) {
    const GroupShape shape = GetParam().shape;
    comm_testing::CommunicatorFactory& factory = *GetParam().factory;
    layout.in_node.resize(shape.size());
    layout.cross_node.resize(shape.size());
    for (int64_t node = 0; node < shape.nodes; ++node) {
      layout.groups.push_back(factory.MakeGroup(shape.local_size));
      for (int64_t local = 0; local < shape.local_size; ++local) {
        layout.in_node[node * shape.local_size + local] =
            std::make_unique<CountingCommunicator>(&(*layout.groups.back())[local]);
      }
    }
    for (int64_t local = 0; local < shape.local_size; ++local) {
      layout.groups.push_back(factory.MakeGroup(shape.nodes));
      for (int64_t node = 0; node < shape.nodes; ++node) {
        layout.cross_node[node * shape.local_size + local] =
            std::make_unique<CountingCommunicator>(&(*layout.groups.back())[node]);
      }
    }
  }
};

TwoLevelCodecs TestCodecs() {
  TwoLevelCodecs codecs;           // int8 G=512 rotated in the node, int4 G=128 rotated across
  codecs.in_node.group_size = 64;  // small test chunks still span several groups
  codecs.cross_node.stochastic_rounding = true;
  codecs.cross_node.seed = 5;
  return codecs;
}

TEST_P(TwoLevelTest, ReduceScatterIsInNodeThenCrossNodeInThatOrder) {
  const GroupShape shape = GetParam().shape;
  const int64_t ranks = shape.size(), L = shape.local_size;
  const TwoLevelCodecs codecs = TestCodecs();
  for (int64_t scale : {0, 1, 70}) {
    const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
    const std::vector<int64_t> offsets = Offsets(counts);
    const int64_t total = Sum(counts);
    std::vector<std::vector<float>> inputs(ranks), outputs(ranks);
    std::vector<absl::StatusOr<TwoLevelTraffic>> traffic(ranks, TwoLevelTraffic{});
    for (int64_t r = 0; r < ranks; ++r) {
      inputs[r] = RankInput(r, total);
      outputs[r].assign(counts[r], -1.0f);
    }
    ResetCounts();
    RunOnRankThreads(ranks, [&](int64_t rank) {
      traffic[rank] =
          TwoLevelCompressedReduceScatter(in_node(rank), cross_node(rank), codecs,
                                          inputs[rank].data(), outputs[rank].data(), counts, {});
    });
    for (int64_t target = 0; target < ranks; ++target) {
      ASSERT_TRUE(traffic[target].ok()) << traffic[target].status();
      const int64_t node = target / L, local = target % L, n = counts[target];
      const int64_t offset = offsets[target];
      // Node k's partial sum of this chunk, as local rank `local` of node k computes it.
      std::vector<float> want(n, 0.0f), dense(n, 0.0f);
      for (int64_t k = 0; k < shape.nodes; ++k) {
        std::vector<float> partial(n, 0.0f), node_dense(n, 0.0f);
        for (int64_t s = 0; s < L; ++s) {
          const int64_t sender = k * L + s;
          const float* chunk = inputs[sender].data() + offset;
          const std::vector<float> received =
              s == local ? std::vector<float>(chunk, chunk + n)
                         : ThroughTheWire(codecs.in_node, sender, chunk, n, offset);
          for (int64_t i = 0; i < n; ++i) {
            partial[i] = s == 0 ? received[i] : partial[i] + received[i];
            node_dense[i] = s == 0 ? chunk[i] : node_dense[i] + chunk[i];
          }
        }
        const std::vector<float> crossed =
            k == node ? partial
                      : ThroughTheWire(codecs.cross_node, k * L + local, partial.data(), n, offset);
        for (int64_t i = 0; i < n; ++i) {
          want[i] = k == 0 ? crossed[i] : want[i] + crossed[i];
          dense[i] = k == 0 ? node_dense[i] : dense[i] + node_dense[i];
        }
      }
      ASSERT_EQ(std::memcmp(outputs[target].data(), want.data(), n * sizeof(float)), 0)
          << "rank " << target << " scale " << scale;
      // int8 then int4 (0.2 each, loosely) of node partials around the dense sum.
      double bound = 0.0;
      for (int64_t sender = 0; sender < ranks; ++sender) {
        bound += 0.3 * Norm(inputs[sender].data() + offset, n);
      }
      EXPECT_LE(Distance(outputs[target].data(), dense.data(), n), bound + 1e-6);

      // Bytes: in the node, the chunks of the ranks with every other local index out, and
      // this local index's chunks in from every other device; across nodes, the node
      // partials of this local index.
      const TwoLevelTraffic& bytes = *traffic[target];
      int64_t in_sent = 0, mine = 0, mine_elements = 0, cross_sent = 0, out_elements = 0;
      for (int64_t m = 0; m < shape.nodes; ++m) {
        for (int64_t l = 0; l < L; ++l) {
          const int64_t count = counts[m * L + l];
          if (l != local) {
            in_sent += EncodedBytes(codecs.in_node, count);
            out_elements += count;
          } else {
            mine += EncodedBytes(codecs.in_node, count);
            mine_elements += count;
            if (m != node) cross_sent += EncodedBytes(codecs.cross_node, count);
          }
        }
      }
      EXPECT_EQ(bytes.in_node.bytes_sent, in_sent);
      EXPECT_EQ(bytes.in_node.bytes_received, (L - 1) * mine);
      EXPECT_EQ(bytes.in_node.dense_bytes_sent, 4 * out_elements);
      EXPECT_EQ(bytes.in_node.dense_bytes_received, 4 * (L - 1) * mine_elements);
      EXPECT_EQ(bytes.cross_node.bytes_sent, cross_sent);
      EXPECT_EQ(bytes.cross_node.bytes_received,
                (shape.nodes - 1) * EncodedBytes(codecs.cross_node, n));
      EXPECT_EQ(in_node(target).sent, bytes.in_node.bytes_sent);
      EXPECT_EQ(in_node(target).received, bytes.in_node.bytes_received);
      EXPECT_EQ(cross_node(target).sent, bytes.cross_node.bytes_sent);
      EXPECT_EQ(cross_node(target).received, bytes.cross_node.bytes_received);
    }
  }
}

TEST_P(TwoLevelTest, AllGatherDecodesEveryOwnersEncodingOnEveryRank) {
  const GroupShape shape = GetParam().shape;
  const int64_t ranks = shape.size(), L = shape.local_size;
  const TwoLevelCodecs codecs = TestCodecs();
  for (int64_t scale : {0, 1, 70}) {
    const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
    const std::vector<int64_t> offsets = Offsets(counts);
    const int64_t total = Sum(counts);
    std::vector<std::vector<float>> shards(ranks), outputs(ranks);
    std::vector<absl::StatusOr<TwoLevelTraffic>> traffic(ranks, TwoLevelTraffic{});
    for (int64_t r = 0; r < ranks; ++r) {
      shards[r] = RankInput(r + 7, counts[r]);
      outputs[r].assign(total, -1.0f);
    }
    ResetCounts();
    RunOnRankThreads(ranks, [&](int64_t rank) {
      traffic[rank] =
          TwoLevelCompressedAllGather(in_node(rank), cross_node(rank), codecs, shards[rank].data(),
                                      outputs[rank].data(), counts, {});
    });
    std::vector<float> want;
    for (int64_t r = 0; r < ranks; ++r) {
      const std::vector<float> shard =
          ThroughTheWire(codecs.gather, r, shards[r].data(), counts[r], offsets[r]);
      want.insert(want.end(), shard.begin(), shard.end());
    }
    for (int64_t rank = 0; rank < ranks; ++rank) {
      ASSERT_TRUE(traffic[rank].ok()) << traffic[rank].status();
      ASSERT_EQ(std::memcmp(outputs[rank].data(), want.data(), total * sizeof(float)), 0)
          << "rank " << rank << " scale " << scale;
      const int64_t node = rank / L, local = rank % L;
      int64_t block = 0, all = 0;
      for (int64_t m = 0; m < shape.nodes; ++m)
        block += EncodedBytes(codecs.gather, counts[m * L + local]);
      for (int64_t count : counts) all += EncodedBytes(codecs.gather, count);
      const int64_t own = EncodedBytes(codecs.gather, counts[rank]);
      const TwoLevelTraffic& bytes = *traffic[rank];
      EXPECT_EQ(bytes.cross_node.bytes_sent, (shape.nodes - 1) * own) << node;
      EXPECT_EQ(bytes.cross_node.bytes_received, block - own);
      EXPECT_EQ(bytes.in_node.bytes_sent, (L - 1) * block);
      EXPECT_EQ(bytes.in_node.bytes_received, all - block);
      EXPECT_EQ(in_node(rank).sent, bytes.in_node.bytes_sent);
      EXPECT_EQ(in_node(rank).received, bytes.in_node.bytes_received);
      EXPECT_EQ(cross_node(rank).sent, bytes.cross_node.bytes_sent);
      EXPECT_EQ(cross_node(rank).received, bytes.cross_node.bytes_received);
    }
  }
}

TEST_P(TwoLevelTest, AllReduceGivesTheSameBitsEverywhereNearTheDenseSum) {
  const GroupShape shape = GetParam().shape;
  const int64_t ranks = shape.size();
  const TwoLevelCodecs codecs = TestCodecs();
  for (int64_t count : {0, 1, 5000}) {
    std::vector<std::vector<float>> outputs(ranks);
    std::vector<absl::Status> statuses(ranks);
    RunOnRankThreads(ranks, [&](int64_t rank) {
      outputs[rank] = RankInput(rank, count);
      statuses[rank] =
          TwoLevelCompressedAllReduce(in_node(rank), cross_node(rank), codecs, outputs[rank].data(),
                                      outputs[rank].data(), count, {})
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
      ASSERT_EQ(outputs[rank], outputs[0]) << "rank " << rank;
    }
    // int8 + int4 per contribution, int8 of the result.
    EXPECT_LE(Distance(outputs[0].data(), dense.data(), count),
              0.2 * std::sqrt(contributions) + 0.02 * Norm(dense.data(), count) + 1e-6);
  }
}

TEST_P(TwoLevelTest, CountsMustCoverBothGroups) {
  const GroupShape shape = GetParam().shape;
  std::vector<float> buffer(8, 0.0f);
  absl::StatusOr<TwoLevelTraffic> result =
      TwoLevelCompressedReduceScatter(in_node(0), cross_node(0), TwoLevelCodecs{}, buffer.data(),
                                      buffer.data(), std::vector<int64_t>(shape.size() + 1, 0), {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(),
            absl::StrCat("two-level compressed reduce_scatter: counts has ", shape.size() + 1,
                         " entries; the in-node group (", shape.local_size,
                         " ranks) times the cross-node group (", shape.nodes, " ranks) is ",
                         shape.size()));
  TwoLevelCodecs bad;
  bad.cross_node.group_size = 100;
  result = TwoLevelCompressedAllGather(in_node(0), cross_node(0), bad, buffer.data(), buffer.data(),
                                       std::vector<int64_t>(shape.size(), 0), {});
  EXPECT_THAT(result.status().message(), HasSubstr("codecs.cross_node: codec int4 with hadamard"));
}

// Both levels from one backend: in-process on 1x1 .. 2x4 (nodes x devices), Gloo on 2x2 and
// 3x1, hierarchical groups on 2x2.
std::vector<BackendCase> TwoLevelCases() {
  std::vector<BackendCase> cases;
  for (GroupShape shape : {GroupShape{1, 1}, GroupShape{1, 3}, GroupShape{2, 1}, GroupShape{2, 2},
                           GroupShape{3, 2}, GroupShape{2, 4}}) {
    cases.push_back({comm_testing::InProcessFactory(), shape});
  }
  for (GroupShape shape : {GroupShape{2, 2}, GroupShape{3, 1}}) {
    cases.push_back({comm_testing::GlooFactory(), shape});
  }
  cases.push_back({comm_testing::HierarchicalFactory(), GroupShape{2, 2}});
  return cases;
}

// Named by the backend and the two-level layout (not the groups' own sizes).
INSTANTIATE_TEST_SUITE_P(Shapes, TwoLevelTest, ::testing::ValuesIn(TwoLevelCases()),
                         [](const ::testing::TestParamInfo<BackendCase>& info) {
                           return absl::StrCat(info.param.factory->name(), "_",
                                               comm_testing::ShapeName(info.param.shape));
                         });

}  // namespace
}  // namespace oneflow
