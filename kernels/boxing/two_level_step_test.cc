// Two-level compressed boxing steps (int8 in the node, int4 across nodes, both rotated:
// the compiler's choice for data-parallel gradients) on groups of 2 nodes x 2 and 2 x 3
// devices, 1-D and N-D placements, uneven and empty slices, packed chunks. Each device
// runs its prepared step on its own thread, twice. Checked:
//  - bit for bit against the collective of kernels/compression called directly on the
//    same group with the chunks packed by hand (so the step passes the documented codecs
//    and chunk order), with the same wire bytes;
//  - near the dense sum, within the codecs' error;
//  - the same bits on every device that holds an element, and in both acts.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/slice_boxes.h"
#include "kernels/boxing/step_testing.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

const CodecOptions kInNode{Codec::kInt8, 512, /*hadamard=*/true};
const CodecOptions kCrossNode{Codec::kInt4, 128, /*hadamard=*/true};

struct Case {
  const char* placement;
  BoxingKind kind;
  const char* src;
  const char* dst;
  Shape shape;
};

std::string CaseName(const Case& c) {
  return absl::StrCat(BoxingKindName(c.kind), " ", c.src, " -> ", c.dst, " of ", c.shape.ToString(), " on ",
                      c.placement);
}

// Member g's contribution (the partial value of the devices with coordinate g on axis 0),
// as a logical tensor: Gaussian, one element in 97 an outlier x30 (what rotation is for).
std::vector<float> Contribution(const Shape& shape, int64_t g) {
  std::mt19937 generator(static_cast<uint32_t>(1000 + g));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(shape.NumElements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = normal(generator) * (i % 97 == 5 ? 30.0f : 1.0f);
  return values;
}

// The buffer of `slice` cut from a logical tensor.
std::vector<float> Cut(const Shape& shape, const TensorSlice& slice, const std::vector<float>& logical) {
  std::vector<float> buffer(slice.NumElements());
  ForEachContiguousRun(shape, slice, [&](int64_t local, int64_t logical_offset, int64_t length) {
    std::memcpy(buffer.data() + local, logical.data() + logical_offset, length * sizeof(float));
  });
  return buffer;
}

double Norm(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v * v;
  return std::sqrt(sum);
}

// The device buffers and what each device's prepared step reports.
struct Outcome {
  std::vector<std::vector<float>> outputs;
  std::vector<CompressedTraffic> in_node;
  std::vector<CompressedTraffic> cross_node;
};

BoxingStepArgs ArgsFor(const Case& c, const Placement& placement, int64_t rank) {
  BoxingStepArgs args;
  args.logical = c.shape;
  args.kind = c.kind;
  args.src = *NdSbp::Parse(c.src);
  args.dst = *NdSbp::Parse(c.dst);
  args.hierarchy_axis = 0;
  args.placement = &placement;
  args.rank = rank;
  args.input_bytes = DeviceSlice(c.shape, args.src, placement, rank)->NumElements() * 4;
  args.output_bytes = DeviceSlice(c.shape, args.dst, placement, rank)->NumElements() * 4;
  args.compression = kInNode;
  args.cross_node_compression = kCrossNode;
  args.options.timeout = absl::Seconds(10);
  return args;
}

// The step on every device, `acts` times on the same inputs; every act must give the
// same bits.
Outcome RunSteps(const Case& c, const Placement& placement, const std::vector<std::vector<float>>& inputs,
                 int acts) {
  const int64_t devices = placement.num_devices();
  TwoLevelAxisCommunicators communicators(placement, 0);
  Outcome outcome;
  outcome.outputs.resize(devices);
  outcome.in_node.resize(devices);
  outcome.cross_node.resize(devices);
  std::vector<absl::Status> statuses(devices);
  RunOnRankThreads(devices, [&](int64_t rank) {
    BoxingStepArgs args = ArgsFor(c, placement, rank);
    args.in_node_communicator = communicators.InNode(rank);
    args.cross_node_communicator = communicators.CrossNode(rank);
    absl::StatusOr<PreparedBoxingStep> step = PreparedBoxingStep::Prepare(args);
    if (!step.ok()) {
      statuses[rank] = step.status();
      return;
    }
    std::vector<float>& output = outcome.outputs[rank];
    for (int act = 0; act < acts && statuses[rank].ok(); ++act) {
      std::vector<float> result(args.output_bytes / 4, -1.0f);
      statuses[rank] = step->Run(inputs[rank].data(), result.data(), args.options);
      if (act > 0 && result != output) statuses[rank] = absl::InternalError("another act gave other bits");
      output = result;
    }
    outcome.in_node[rank] = step->traffic();
    outcome.cross_node[rank] = step->cross_node_traffic();
  });
  for (int64_t rank = 0; rank < devices; ++rank) EXPECT_TRUE(statuses[rank].ok()) << statuses[rank];
  return outcome;
}

// The same exchange through the collectives directly: each device's chunks packed by
// hand, in the order of the group members' destination slices.
Outcome RunDirect(const Case& c, const Placement& placement, const std::vector<std::vector<float>>& inputs) {
  const int64_t devices = placement.num_devices();
  TwoLevelAxisCommunicators communicators(placement, 0);
  const TwoLevelCodecs codecs{kInNode, kCrossNode, /*gather=*/kInNode};
  Outcome outcome;
  outcome.outputs.resize(devices);
  outcome.in_node.resize(devices);
  outcome.cross_node.resize(devices);
  std::vector<absl::Status> statuses(devices);
  RunOnRankThreads(devices, [&](int64_t rank) {
    const BoxingStepArgs args = ArgsFor(c, placement, rank);
    const TensorSlice src = *DeviceSlice(c.shape, args.src, placement, rank);
    std::vector<float>& output = outcome.outputs[rank];
    output.assign(args.output_bytes / 4, -1.0f);
    absl::StatusOr<TwoLevelTraffic> traffic;
    if (c.kind == BoxingKind::kAllReduce) {
      traffic = TwoLevelCompressedAllReduce(*communicators.InNode(rank), *communicators.CrossNode(rank), codecs,
                                            inputs[rank].data(), output.data(), output.size(), args.options);
    } else {
      std::vector<float> packed;
      std::vector<int64_t> counts;
      std::vector<int64_t> coordinate = placement.Coordinate(rank);
      for (int64_t h = 0; h < placement.hierarchy().dim(0); ++h) {
        coordinate[0] = h;
        const TensorSlice dst = *DeviceSlice(c.shape, args.dst, placement, placement.RankOf(coordinate));
        std::vector<float> chunk(dst.NumElements());
        PackBox(src, inputs[rank].data(), dst, sizeof(float), chunk.data());
        packed.insert(packed.end(), chunk.begin(), chunk.end());
        counts.push_back(dst.NumElements());
      }
      traffic = TwoLevelCompressedReduceScatter(*communicators.InNode(rank), *communicators.CrossNode(rank),
                                                codecs, packed.data(), output.data(), counts, args.options);
    }
    statuses[rank] = traffic.status();
    if (traffic.ok()) {
      outcome.in_node[rank] = traffic->in_node;
      outcome.cross_node[rank] = traffic->cross_node;
    }
  });
  for (int64_t rank = 0; rank < devices; ++rank) EXPECT_TRUE(statuses[rank].ok()) << statuses[rank];
  return outcome;
}

void ExpectSameBytes(const CompressedTraffic& got, const CompressedTraffic& want, int acts,
                     const std::string& what) {
  EXPECT_EQ(got.bytes_sent, acts * want.bytes_sent) << what;
  EXPECT_EQ(got.bytes_received, acts * want.bytes_received) << what;
  EXPECT_EQ(got.dense_bytes_sent, acts * want.dense_bytes_sent) << what;
  EXPECT_EQ(got.dense_bytes_received, acts * want.dense_bytes_received) << what;
}

void Check(const Case& c) {
  SCOPED_TRACE(CaseName(c));
  const Placement placement = *Placement::Parse(c.placement);
  const int64_t devices = placement.num_devices();
  const NdSbp src = *NdSbp::Parse(c.src);
  const NdSbp dst = *NdSbp::Parse(c.dst);
  std::vector<std::vector<float>> contributions;
  for (int64_t g = 0; g < placement.hierarchy().dim(0); ++g) contributions.push_back(Contribution(c.shape, g));
  std::vector<std::vector<float>> inputs(devices);
  for (int64_t rank = 0; rank < devices; ++rank) {
    inputs[rank] = Cut(c.shape, *DeviceSlice(c.shape, src, placement, rank), contributions[placement.Coordinate(rank)[0]]);
  }
  constexpr int kActs = 2;
  const Outcome steps = RunSteps(c, placement, inputs, kActs);
  const Outcome direct = RunDirect(c, placement, inputs);
  if (::testing::Test::HasFailure()) return;

  // Every device: the direct collective's bits and bytes; near the dense sum.
  std::vector<double> dense(c.shape.NumElements(), 0.0);
  for (const std::vector<float>& contribution : contributions) {
    for (size_t i = 0; i < dense.size(); ++i) dense[i] += contribution[i];
  }
  double total_error = 0;
  std::vector<float> seen(c.shape.NumElements());
  std::vector<int64_t> holder(c.shape.NumElements(), -1);
  for (int64_t rank = 0; rank < devices; ++rank) {
    const std::string device = absl::StrCat("device ", placement.device(rank).ToString());
    const std::vector<float>& output = steps.outputs[rank];
    ASSERT_EQ(output.size(), direct.outputs[rank].size()) << device;
    EXPECT_EQ(std::memcmp(output.data(), direct.outputs[rank].data(), output.size() * sizeof(float)), 0) << device;
    ExpectSameBytes(steps.in_node[rank], direct.in_node[rank], kActs, device + " in the node");
    ExpectSameBytes(steps.cross_node[rank], direct.cross_node[rank], kActs, device + " across nodes");
    const TensorSlice slice = *DeviceSlice(c.shape, dst, placement, rank);
    std::vector<double> error, sum, contributed(output.size(), 0.0);
    ForEachContiguousRun(c.shape, slice, [&](int64_t local, int64_t logical, int64_t length) {
      for (int64_t i = 0; i < length; ++i) {
        const float value = output[local + i];
        error.push_back(value - dense[logical + i]);
        sum.push_back(dense[logical + i]);
        for (const std::vector<float>& contribution : contributions) {
          contributed[local + i] += static_cast<double>(contribution[logical + i]) * contribution[logical + i];
        }
        // The same bits on every device that holds this element.
        if (holder[logical + i] < 0) {
          holder[logical + i] = rank;
          seen[logical + i] = value;
        } else {
          EXPECT_EQ(std::memcmp(&seen[logical + i], &value, sizeof(float)), 0)
              << device << " and device " << placement.device(holder[logical + i]).ToString() << " at element "
              << logical + i;
        }
      }
    });
    double contributions_norm = 0;
    for (double v : contributed) contributions_norm += v;
    // int8 + int4 of each contribution (~0.01 + ~0.1 relative), int8 of the result.
    EXPECT_LE(Norm(error), 0.2 * std::sqrt(contributions_norm) + 0.02 * Norm(sum) + 1e-6) << device;
    total_error += Norm(error);
  }
  // The codecs really ran: a dense step would be exact here up to reassociation. (On a
  // few elements the codecs can be exact too: a group of one element is its own scale.)
  if (c.shape.NumElements() >= 64) {
    EXPECT_GT(total_error, 1e-3);
  }
  // Whatever one device sends, another receives, at each level.
  int64_t in_sent = 0, in_received = 0, cross_sent = 0, cross_received = 0;
  for (int64_t rank = 0; rank < devices; ++rank) {
    in_sent += steps.in_node[rank].bytes_sent;
    in_received += steps.in_node[rank].bytes_received;
    cross_sent += steps.cross_node[rank].bytes_sent;
    cross_received += steps.cross_node[rank].bytes_received;
  }
  EXPECT_EQ(in_sent, in_received);
  EXPECT_EQ(cross_sent, cross_received);
  if (c.shape.NumElements() >= devices) {
    EXPECT_GT(cross_sent, 0);
  }
}

TEST(TwoLevelStepTest, AllReduceOnTwoNodesOfTwo) {
  for (const Shape& shape : {Shape{37, 5}, Shape{3}, Shape{64, 33}}) {
    Check({"cpu{0:0-1, 1:0-1}", BoxingKind::kAllReduce, "P", "B", shape});
  }
}

TEST(TwoLevelStepTest, AllReduceOnTwoNodesOfThree) {
  for (const Shape& shape : {Shape{2}, Shape{41, 7}}) {
    Check({"cpu{0:0-2, 1:0-2}", BoxingKind::kAllReduce, "P", "B", shape});
  }
}

TEST(TwoLevelStepTest, ReduceScatterUnevenAndEmptyChunks) {
  // 5 rows on 6 devices: one gets none; 3 rows on 4: one gets none.
  Check({"cpu{0:0-2, 1:0-2}", BoxingKind::kReduceScatter, "P", "S(0)", Shape{5, 3}});
  Check({"cpu{0:0-1, 1:0-1}", BoxingKind::kReduceScatter, "P", "S(0)", Shape{3, 70}});
  Check({"cpu{0:0-2, 1:0-2}", BoxingKind::kReduceScatter, "P", "S(0)", Shape{64, 33}});
}

TEST(TwoLevelStepTest, ReduceScatterOfColumnsIsPacked) {
  // S(1): each chunk is a stripe of columns, not contiguous in the input.
  Check({"cpu{0:0-2, 1:0-2}", BoxingKind::kReduceScatter, "P", "S(1)", Shape{7, 40}});
  Check({"cpu{0:0-1, 1:0-1}", BoxingKind::kReduceScatter, "P", "S(1)", Shape{9, 10}});
}

// Hierarchy [4, 2] over 2 nodes x 4 devices: the groups along axis 0 are 0:0 0:2 1:0 1:2
// and 0:1 0:3 1:1 1:3, 2 nodes x 2 each; [6, 2] over 2 x 6 gives 2 x 3.
TEST(TwoLevelStepTest, NdSbpStepsOnTheAxisThatCrossesNodes) {
  Check({"cpu{0:0-3, 1:0-3}[4, 2]", BoxingKind::kReduceScatter, "[P, B]", "[S(1), B]", Shape{6, 10}});
  Check({"cpu{0:0-3, 1:0-3}[4, 2]", BoxingKind::kReduceScatter, "[P, S(0)]", "[S(1), S(0)]", Shape{9, 13}});
  Check({"cpu{0:0-3, 1:0-3}[4, 2]", BoxingKind::kAllReduce, "[P, S(1)]", "[B, S(1)]", Shape{5, 9}});
  Check({"cpu{0:0-5, 1:0-5}[6, 2]", BoxingKind::kReduceScatter, "[P, B]", "[S(1), B]", Shape{4, 17}});
  Check({"cpu{0:0-5, 1:0-5}[6, 2]", BoxingKind::kAllReduce, "[P, S(0)]", "[B, S(0)]", Shape{11, 6}});
}

// A flat compressed step reports no cross-node traffic.
TEST(TwoLevelStepTest, FlatStepsHaveNoCrossNodeTraffic) {
  const Placement placement = *Placement::Parse("cpu{0:0-1, 1:0-1}");
  AxisCommunicators communicators(placement, 0);
  std::vector<CompressedTraffic> traffic(4), cross(4);
  std::vector<absl::Status> statuses(4);
  RunOnRankThreads(4, [&](int64_t rank) {
    BoxingStepArgs args = ArgsFor({"", BoxingKind::kAllReduce, "P", "B", Shape{100}}, placement, rank);
    args.cross_node_compression = CodecOptions();
    args.communicator = communicators.For(rank);
    absl::StatusOr<PreparedBoxingStep> step = PreparedBoxingStep::Prepare(args);
    statuses[rank] = step.status();
    if (!step.ok()) return;
    std::vector<float> buffer(100, 1.0f), output(100);
    statuses[rank] = step->Run(buffer.data(), output.data(), args.options);
    traffic[rank] = step->traffic();
    cross[rank] = step->cross_node_traffic();
  });
  for (int64_t rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
    EXPECT_GT(traffic[rank].bytes_sent, 0);
    EXPECT_EQ(cross[rank].bytes_sent, 0);
    EXPECT_EQ(cross[rank].bytes_received, 0);
    EXPECT_EQ(cross[rank].dense_bytes_sent, 0);
  }
}

}  // namespace
}  // namespace oneflow
