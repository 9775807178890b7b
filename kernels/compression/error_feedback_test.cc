// Error feedback in the compressed reductions (compressed_collectives.h, "Error
// feedback"): the arithmetic against a sequential reference bit for bit, the property it
// exists for (the sum over calls of what was decoded tracks the sum of the inputs with a
// bounded error, where without it a deterministic codec's error grows with every call),
// at both stages of an all-reduce, on a gradient's all-gather (the shard owner's) and at
// every stage of the two-level forms, the
// residual's size and its errors.
#include <cmath>
#include <cstdint>
#include <cstring>
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

using compression_testing::Distance;
using compression_testing::InProcessBackend;
using compression_testing::Norm;
using compression_testing::Offsets;
using compression_testing::RankInput;
using compression_testing::Sum;
using compression_testing::ThroughTheWire;
using ::testing::HasSubstr;

// Calls of the tracking tests: enough for an error that grows with the calls to stand far
// above one that does not (the check is 10x, the growth 40x).
constexpr int kCalls = 40;

std::vector<float> Add(std::vector<float> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// Three ranks, uneven counts, three calls with new inputs each: every output and every
// residual equal, bit for bit, to the sequential reference of EF: each rank encodes
// x + r for every peer's chunk and keeps (x + r) - wire(x + r); its own chunk is never
// encoded, is reduced exact and keeps a residual of zeros.
TEST(ErrorFeedbackTest, ReduceScatterMatchesTheSequentialReference) {
  constexpr int64_t kRanks = 3;
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(kRanks, "three");
  const std::vector<int64_t> counts = {70, 0, 129};
  const std::vector<int64_t> offsets = Offsets(counts);
  const int64_t total = Sum(counts);
  for (const CodecOptions& codec : {CodecOptions{Codec::kInt4, 32}, CodecOptions{Codec::kInt8, 64, true}}) {
    SCOPED_TRACE(CodecName(codec.codec));
    std::vector<std::vector<float>> residuals(kRanks, std::vector<float>(total, 0.0f));
    std::vector<std::vector<float>> want_residuals = residuals;
    for (int call = 0; call < 3; ++call) {
      std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks);
      for (int64_t r = 0; r < kRanks; ++r) {
        inputs[r] = RankInput(r + 10 * call, total);
        outputs[r].assign(counts[r], -1.0f);
      }
      std::vector<absl::StatusOr<CompressedTraffic>> traffic(kRanks, CompressedTraffic{});
      RunOnRankThreads(kRanks, [&](int64_t rank) {
        traffic[rank] = CompressedReduceScatter(*group[rank], codec, inputs[rank].data(), outputs[rank].data(),
                                                counts, {}, absl::MakeSpan(residuals[rank]));
      });
      // The reference: what each sender puts on the wire, and its new residual.
      std::vector<std::vector<float>> wire(kRanks, std::vector<float>(total));
      for (int64_t s = 0; s < kRanks; ++s) {
        const std::vector<float> compensated = Add(inputs[s], want_residuals[s]);
        for (int64_t d = 0; d < kRanks; ++d) {
          const int64_t n = counts[d], offset = offsets[d];
          if (d == s) {
            std::memcpy(wire[s].data() + offset, inputs[s].data() + offset, n * sizeof(float));
            continue;
          }
          const std::vector<float> decoded = ThroughTheWire(codec, s, compensated.data() + offset, n, offset);
          for (int64_t i = 0; i < n; ++i) {
            wire[s][offset + i] = decoded[i];
            want_residuals[s][offset + i] = compensated[offset + i] - decoded[i];
          }
        }
      }
      for (int64_t rank = 0; rank < kRanks; ++rank) {
        ASSERT_TRUE(traffic[rank].ok()) << traffic[rank].status();
        std::vector<float> want(counts[rank]);
        for (int64_t s = 0; s < kRanks; ++s) {
          for (int64_t i = 0; i < counts[rank]; ++i) {
            const float value = wire[s][offsets[rank] + i];
            want[i] = s == 0 ? value : want[i] + value;
          }
        }
        EXPECT_EQ(std::memcmp(outputs[rank].data(), want.data(), want.size() * sizeof(float)), 0)
            << "call " << call << " rank " << rank;
        EXPECT_EQ(std::memcmp(residuals[rank].data(), want_residuals[rank].data(), total * sizeof(float)), 0)
            << "call " << call << " rank " << rank;
        // The own chunk is never encoded.
        for (int64_t i = 0; i < counts[rank]; ++i) ASSERT_EQ(residuals[rank][offsets[rank] + i], 0.0f);
      }
    }
  }
}

// What a run of kCalls all-reduces of the same inputs (a gradient that stays put, the
// case where a deterministic codec's error adds up) gives: the output of the first call,
// the sum of the outputs over the calls, and the final residuals.
struct Tracking {
  std::vector<std::vector<float>> first;
  std::vector<std::vector<float>> summed;
  std::vector<std::vector<float>> residuals;
};

constexpr int64_t kCount = 1000;

std::vector<float> DenseSum(int64_t ranks) {
  std::vector<float> dense(kCount, 0.0f);
  for (int64_t r = 0; r < ranks; ++r) dense = Add(dense, RankInput(r, kCount));
  return dense;
}

// `call(rank, input, output, residual)` runs one all-reduce on `rank`; `residual_elements`
// per rank, 0: without error feedback.
template <typename Call>
Tracking Track(int64_t ranks, const std::vector<int64_t>& residual_elements, Call call) {
  Tracking tracking;
  tracking.first.assign(ranks, std::vector<float>(kCount));
  tracking.summed.assign(ranks, std::vector<float>(kCount, 0.0f));
  tracking.residuals.resize(ranks);
  for (int64_t r = 0; r < ranks; ++r) tracking.residuals[r].assign(residual_elements[r], 0.0f);
  RunOnRankThreads(ranks, [&](int64_t rank) {
    const std::vector<float> input = RankInput(rank, kCount);
    std::vector<float> output(kCount);
    for (int c = 0; c < kCalls; ++c) {
      const absl::Status status = call(rank, input.data(), output.data(), absl::MakeSpan(tracking.residuals[rank]));
      ASSERT_TRUE(status.ok()) << status;
      if (c == 0) tracking.first[rank] = output;
      tracking.summed[rank] = Add(tracking.summed[rank], output);
    }
  });
  return tracking;
}

// The cumulative error after kCalls calls against one call's error: bounded with EF (the
// last residuals), kCalls times one call's without it.
void ExpectTracking(const Tracking& with, const Tracking& without, const std::vector<float>& dense,
                    const std::string& what) {
  std::vector<float> want(kCount);
  for (int64_t i = 0; i < kCount; ++i) want[i] = kCalls * dense[i];
  for (size_t rank = 0; rank < with.summed.size(); ++rank) {
    SCOPED_TRACE(what + " rank " + std::to_string(rank));
    const double one_call = Distance(without.first[rank].data(), dense.data(), kCount);
    ASSERT_GT(one_call, 1e-3 * Norm(dense.data(), kCount)) << "the codec loses nothing: nothing to feed back";
    // The first call with EF (zero residuals) is the call without it.
    EXPECT_EQ(with.first[rank], without.first[rank]);
    const double error_without = Distance(without.summed[rank].data(), want.data(), kCount);
    const double error_with = Distance(with.summed[rank].data(), want.data(), kCount);
    printf("%s rank %zu: one call %.4g; after %d calls: %.4g without error feedback, %.4g with it\n", what.c_str(),
           rank, one_call, kCalls, error_without, error_with);
    EXPECT_GT(error_without, 0.9 * kCalls * one_call);
    EXPECT_LT(error_with, 4 * one_call);
    EXPECT_LT(error_with, error_without / 10);
  }
}

TEST(ErrorFeedbackTest, AllReduceSumOfOutputsTracksTheSumOfInputs) {
  constexpr int64_t kRanks = 4;
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(kRanks, "four");
  const CodecOptions codec{Codec::kInt4, 128, /*hadamard=*/true};
  auto all_reduce = [&](int64_t rank, const float* input, float* output, absl::Span<float> residual) {
    return CompressedAllReduce(*group[rank], codec, input, output, kCount, {}, residual).status();
  };
  std::vector<int64_t> elements(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) elements[r] = AllReduceResidualElements(kCount, kRanks, r);
  EXPECT_EQ(elements[0], kCount + 250);
  const Tracking with = Track(kRanks, elements, all_reduce);
  const Tracking without = Track(kRanks, std::vector<int64_t>(kRanks, 0), all_reduce);
  const std::vector<float> dense = DenseSum(kRanks);
  ExpectTracking(with, without, dense, "flat int4 all-reduce");
  // The arithmetic telescopes: sum of outputs = kCalls * sum of inputs minus the final
  // residuals of every encoding that reached the element (the senders' reduce-scatter
  // residuals of its chunk, the owner's gather residual), to float rounding.
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    std::vector<float> expected(kCount);
    for (int64_t i = 0; i < kCount; ++i) {
      const int64_t owner = i / 250;
      double value = static_cast<double>(kCalls) * dense[i] - with.residuals[owner][kCount + i - owner * 250];
      for (int64_t s = 0; s < kRanks; ++s) value -= with.residuals[s][i];
      expected[i] = static_cast<float>(value);
    }
    EXPECT_LT(Distance(with.summed[rank].data(), expected.data(), kCount),
              1e-5 * kCalls * Norm(dense.data(), kCount))
        << "rank " << rank;
  }
}

// The shard owner's error feedback on an all-gather (a gradient gathered after its
// reduction, the server side of two-sided error feedback): each rank encodes its shard
// plus its residual, every rank decodes the same bits, and the owner's residual is all
// that the sum of the outputs misses.
TEST(ErrorFeedbackTest, AllGatherSumOfOutputsTracksTheSumOfShards) {
  constexpr int64_t kRanks = 4, kShard = kCount / kRanks;
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(kRanks, "four");
  const CodecOptions codec{Codec::kInt4, 32};
  const std::vector<int64_t> counts(kRanks, kShard);
  auto all_gather = [&](int64_t rank, const float* input, float* output, absl::Span<float> residual) {
    return CompressedAllGather(*group[rank], codec, input + kShard * rank, output, counts, {}, residual).status();
  };
  std::vector<int64_t> elements(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) elements[r] = AllGatherResidualElements(counts, r);
  EXPECT_EQ(elements[0], kShard);
  const Tracking with = Track(kRanks, elements, all_gather);
  const Tracking without = Track(kRanks, std::vector<int64_t>(kRanks, 0), all_gather);
  // The gathered tensor: shard r is rank r's input there.
  std::vector<float> dense(kCount);
  for (int64_t r = 0; r < kRanks; ++r) {
    const std::vector<float> input = RankInput(r, kCount);
    std::copy(input.begin() + kShard * r, input.begin() + kShard * (r + 1), dense.begin() + kShard * r);
  }
  ExpectTracking(with, without, dense, "flat int4 all-gather");
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    // Every rank decodes the same bytes: the same output bits everywhere.
    EXPECT_EQ(with.summed[rank], with.summed[0]) << "rank " << rank;
    // Telescoping: kCalls * shard - the owner's last residual, to float rounding.
    std::vector<float> expected(kCount);
    for (int64_t i = 0; i < kCount; ++i) {
      const int64_t owner = i / kShard;
      expected[i] = static_cast<float>(static_cast<double>(kCalls) * dense[i] - with.residuals[owner][i % kShard]);
    }
    EXPECT_LT(Distance(with.summed[rank].data(), expected.data(), kCount), 1e-5 * kCalls * Norm(dense.data(), kCount))
        << "rank " << rank;
  }
  // A residual of another size is refused, naming the call.
  std::vector<float> input(kShard), output(kCount), wrong(kShard + 1);
  const absl::StatusOr<CompressedTraffic> refused =
      CompressedAllGather(*group[0], codec, input.data(), output.data(), counts, {}, absl::MakeSpan(wrong));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("compressed all_gather: residual has 251 floats; error feedback on this call needs 250"));
}

// The price of error feedback, and why it is opt-in (docs/sbp_and_boxing.md, "Error
// feedback"): with EF a call delivers x_c + r_{c-1} - r_c instead of x_c - e_c, so where
// the inputs of consecutive calls are unrelated (a gradient of a new batch every step) the
// errors of consecutive calls are too, and one call's error is about sqrt(2) times the
// error without EF (the previous call's residual comes on top of this call's own); what
// EF buys is that these errors telescope in the sum over calls. An optimizer that applies
// the sum (SGD, momentum) gains; one that normalizes each step by its own running
// magnitude (Adam) sees mostly the larger per-step error. Measured here (2 ranks, int4
// G=128, 40 calls on fresh inputs): per-call RMS error 1.43x the error without EF;
// the summed error 1/5.9 of the summed error without it (6.50 vs 38.2).
TEST(ErrorFeedbackTest, OnFreshInputsOneCallsErrorIsAboutRootTwoLargerAndTheSumsErrorSmaller) {
  constexpr int64_t kRanks = 2;
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(kRanks, "two");
  const CodecOptions codec{Codec::kInt4, 128};
  // Per mode (0: without EF, 1: with): the sum over calls 1.. of one call's squared
  // error (call 0 is the same in both), and the error of the summed outputs.
  double call_error_sq[2] = {0, 0}, summed_error[2] = {0, 0};
  for (int with : {0, 1}) {
    std::vector<std::vector<float>> outputs(kRanks);
    std::vector<float> dense_sum(kCount, 0.0f), output_sum(kCount, 0.0f);
    std::vector<std::vector<float>> residuals(kRanks);
    for (int64_t r = 0; r < kRanks; ++r) {
      residuals[r].assign(with ? AllReduceResidualElements(kCount, kRanks, r) : 0, 0.0f);
    }
    for (int c = 0; c < kCalls; ++c) {
      RunOnRankThreads(kRanks, [&](int64_t rank) {
        const std::vector<float> input = RankInput(rank + kRanks * c, kCount);
        outputs[rank].assign(kCount, 0.0f);
        ASSERT_TRUE(CompressedAllReduce(*group[rank], codec, input.data(), outputs[rank].data(), kCount, {},
                                        absl::MakeSpan(residuals[rank]))
                        .ok());
      });
      std::vector<float> dense(kCount, 0.0f);
      for (int64_t r = 0; r < kRanks; ++r) dense = Add(dense, RankInput(r + kRanks * c, kCount));
      dense_sum = Add(dense_sum, dense);
      output_sum = Add(output_sum, outputs[0]);
      const double error = Distance(outputs[0].data(), dense.data(), kCount);
      if (c > 0) call_error_sq[with] += error * error / (kCalls - 1);
    }
    summed_error[with] = Distance(output_sum.data(), dense_sum.data(), kCount);
  }
  const double ratio = std::sqrt(call_error_sq[1] / call_error_sq[0]);
  printf("int4/128 all-reduce, %d calls on fresh inputs: per-call error %.4g without error feedback, %.4g with it "
         "(x%.3f); error of the sum %.4g without, %.4g with\n",
         kCalls, std::sqrt(call_error_sq[0]), std::sqrt(call_error_sq[1]), ratio, summed_error[0], summed_error[1]);
  // Independent errors add in quadrature: sqrt(2) = 1.414.
  EXPECT_GT(ratio, 1.3);
  EXPECT_LT(ratio, 1.5);
  // Without EF the errors of independent calls add in quadrature too (sqrt(kCalls) = 6.3
  // times one call's); with it only the last residuals remain.
  EXPECT_LT(summed_error[1], summed_error[0] / 3);
}

// 2 nodes x 2 devices: the in-node exchange, the node partial sums across nodes and the
// gathered shard all carry their residuals.
TEST(ErrorFeedbackTest, TwoLevelAllReduceSumOfOutputsTracksTheSumOfInputs) {
  constexpr int64_t kNodes = 2, kLocal = 2, kRanks = kNodes * kLocal;
  InProcessBackend backend;
  std::vector<Communicator*> in_node(kRanks), cross_node(kRanks);
  for (int64_t node = 0; node < kNodes; ++node) {
    const std::vector<Communicator*> group = backend.MakeGroup(kLocal, "node" + std::to_string(node));
    for (int64_t local = 0; local < kLocal; ++local) in_node[node * kLocal + local] = group[local];
  }
  for (int64_t local = 0; local < kLocal; ++local) {
    const std::vector<Communicator*> group = backend.MakeGroup(kNodes, "cross" + std::to_string(local));
    for (int64_t node = 0; node < kNodes; ++node) cross_node[node * kLocal + local] = group[node];
  }
  TwoLevelCodecs codecs;  // int8 G=512 in the node, int4 G=128 across, both rotated
  auto all_reduce = [&](int64_t rank, const float* input, float* output, absl::Span<float> residual) {
    return TwoLevelCompressedAllReduce(*in_node[rank], *cross_node[rank], codecs, input, output, kCount, {},
                                       residual)
        .status();
  };
  std::vector<int64_t> elements(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) {
    elements[r] = TwoLevelAllReduceResidualElements(kCount, kNodes, kLocal, r / kLocal, r % kLocal);
  }
  // The input, the partial sums of the chunks of its local index on both nodes, its shard.
  EXPECT_EQ(elements[0], kCount + 500 + 250);
  const Tracking with = Track(kRanks, elements, all_reduce);
  const Tracking without = Track(kRanks, std::vector<int64_t>(kRanks, 0), all_reduce);
  ExpectTracking(with, without, DenseSum(kRanks), "two-level int8/int4 all-reduce");
  // Every stage kept something: each part of every residual is non-zero somewhere.
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    const std::vector<float>& r = with.residuals[rank];
    EXPECT_GT(Norm(r.data(), kCount), 0) << "in-node, rank " << rank;
    EXPECT_GT(Norm(r.data() + kCount, 500), 0) << "cross-node, rank " << rank;
    EXPECT_GT(Norm(r.data() + kCount + 500, 250), 0) << "gather, rank " << rank;
  }
}

TEST(ErrorFeedbackTest, TwoLevelReduceScatterSumOfOutputsTracksTheSumOfInputs) {
  constexpr int64_t kNodes = 2, kLocal = 2, kRanks = kNodes * kLocal;
  InProcessBackend backend;
  std::vector<Communicator*> in_node(kRanks), cross_node(kRanks);
  for (int64_t node = 0; node < kNodes; ++node) {
    const std::vector<Communicator*> group = backend.MakeGroup(kLocal, "node" + std::to_string(node));
    for (int64_t local = 0; local < kLocal; ++local) in_node[node * kLocal + local] = group[local];
  }
  for (int64_t local = 0; local < kLocal; ++local) {
    const std::vector<Communicator*> group = backend.MakeGroup(kNodes, "cross" + std::to_string(local));
    for (int64_t node = 0; node < kNodes; ++node) cross_node[node * kLocal + local] = group[node];
  }
  TwoLevelCodecs codecs;
  const std::vector<int64_t> counts = {250, 250, 250, 250};
  // Each rank's output is its chunk: compared as a whole tensor after an identity gather,
  // here simply at its offset (the rest of the rows stay 0 in both runs).
  auto reduce_scatter = [&](int64_t rank, const float* input, float* output, absl::Span<float> residual) {
    std::fill(output, output + kCount, 0.0f);
    return TwoLevelCompressedReduceScatter(*in_node[rank], *cross_node[rank], codecs, input, output + 250 * rank,
                                           counts, {}, residual)
        .status();
  };
  std::vector<int64_t> elements(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) elements[r] = TwoLevelReduceScatterResidualElements(counts, kLocal, r % kLocal);
  EXPECT_EQ(elements[0], kCount + 500);
  const Tracking with = Track(kRanks, elements, reduce_scatter);
  const Tracking without = Track(kRanks, std::vector<int64_t>(kRanks, 0), reduce_scatter);
  const std::vector<float> dense = DenseSum(kRanks);
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    // Only the own chunk is compared: elsewhere both runs hold zeros.
    std::vector<float> chunk_dense(kCount, 0.0f);
    std::copy(dense.begin() + 250 * rank, dense.begin() + 250 * (rank + 1), chunk_dense.begin() + 250 * rank);
    Tracking one_with{{with.first[rank]}, {with.summed[rank]}, {}};
    Tracking one_without{{without.first[rank]}, {without.summed[rank]}, {}};
    ExpectTracking(one_with, one_without, chunk_dense,
                   "two-level reduce-scatter, chunk " + std::to_string(rank) + ",");
  }
}

TEST(ErrorFeedbackTest, AResidualOfTheWrongSizeIsInvalidAndNamed) {
  InProcessBackend backend;
  Communicator& alone = *backend.MakeGroup(1, "alone")[0];
  std::vector<float> input(10, 1.0f), output(10), residual(5);
  const absl::StatusOr<CompressedTraffic> traffic = CompressedAllReduce(
      alone, {Codec::kInt4, 128}, input.data(), output.data(), 10, {}, absl::MakeSpan(residual));
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(),
              HasSubstr("compressed all_reduce: residual has 5 floats; error feedback on this call needs 20"));
}

// A NaN in a group decodes to NaN in the whole group (codec.h): that group's residual is
// 0, not NaN, so the next calls are not poisoned; the other groups keep theirs.
TEST(ErrorFeedbackTest, ANonFiniteGroupLeavesAZeroResidual) {
  InProcessBackend backend;
  const std::vector<Communicator*> group = backend.MakeGroup(2, "pair");
  const CodecOptions codec{Codec::kInt4, 8};
  const std::vector<int64_t> counts = {16, 16};
  std::vector<std::vector<float>> inputs = {RankInput(0, 32), RankInput(1, 32)};
  inputs[0][16] = std::nanf("");  // rank 0's chunk for rank 1, first group
  std::vector<std::vector<float>> outputs(2, std::vector<float>(16)), residuals(2, std::vector<float>(32, 0.0f));
  RunOnRankThreads(2, [&](int64_t rank) {
    ASSERT_TRUE(CompressedReduceScatter(*group[rank], codec, inputs[rank].data(), outputs[rank].data(), counts, {},
                                        absl::MakeSpan(residuals[rank]))
                    .ok());
  });
  for (int64_t i = 16; i < 24; ++i) EXPECT_EQ(residuals[0][i], 0.0f) << i;
  EXPECT_GT(Norm(residuals[0].data() + 24, 8), 0.0);
  for (float value : residuals[0]) EXPECT_TRUE(std::isfinite(value));
}

}  // namespace
}  // namespace oneflow
