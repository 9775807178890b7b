// all_reduce and reduce_scatter of integer tensors: each device on its own thread over
// in-process communicators, against a reference computed here element by element. Sums
// wrap modulo 2^bits (the inputs sit near the ends of the type's range), max and min
// work, uneven and empty slices work, and every member of a group gets the same bytes.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/step_support.h"
#include "kernels/boxing/step_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

// Device `rank`'s partial value at logical offset `i`: near the top or the bottom of T's
// range, or small and of either sign, varying with the rank, so that sums wrap.
template <typename T>
T Part(int64_t rank, int64_t i) {
  const int64_t k = (rank * 7 + i * 3) % 50;
  switch ((rank + i) % 3) {
    case 0:
      return static_cast<T>(std::numeric_limits<T>::max() - static_cast<T>(k));
    case 1:
      return static_cast<T>(std::numeric_limits<T>::min() + static_cast<T>(k));
    default:  // for u8, the negative ones are near 255
      return static_cast<T>(k % 21 - 10);
  }
}

// The reference reduction. A sum is accumulated modulo 2^64 and cut to T's width (which
// is the sum modulo 2^bits), independently of the runtime's way.
template <typename T>
T Reduce(ReduceOp op, const std::vector<T>& values) {
  using Unsigned = std::make_unsigned_t<T>;
  if (op == ReduceOp::kSum) {
    uint64_t sum = 0;
    for (T value : values) sum += static_cast<uint64_t>(value);
    const Unsigned bits = static_cast<Unsigned>(sum);
    T result;
    std::memcpy(&result, &bits, sizeof(T));
    return result;
  }
  T result = values[0];
  for (T value : values)
    result = op == ReduceOp::kMax ? std::max(result, value) : std::min(result, value);
  return result;
}

template <typename T>
DType DTypeOf() {
  if (std::is_same_v<T, int32_t>) return DType::kI32;
  if (std::is_same_v<T, int64_t>) return DType::kI64;
  return DType::kU8;
}

struct Step {
  std::string placement;  // e.g. "cpu{0:0-2}"
  std::string kind;       // all_reduce or reduce_scatter
  Shape shape;
  std::string src;
  std::string dst;
  int64_t axis = 0;
};

// Runs `step` on every device with Part<T> as each device's partial value, checks each
// device's output against the reference, and that the members of a group that end with
// the same slice hold the same bytes.
template <typename T>
void CheckReduction(const Step& step) {
  const Placement placement = *Placement::Parse(step.placement);
  const NdSbp src = *NdSbp::Parse(step.src);
  const NdSbp dst = *NdSbp::Parse(step.dst);
  const std::string name =
      absl::StrCat(step.kind, " ", DTypeName(DTypeOf<T>()), " ", step.shape.ToString(), " ",
                   step.src, " -> ", step.dst, " on ", step.placement, " axis ", step.axis);
  const int64_t devices = placement.num_devices();
  std::vector<std::vector<T>> inputs(devices);
  std::vector<std::vector<T>> expected(devices);
  std::vector<std::vector<char>> outputs(devices);
  std::vector<std::vector<int64_t>> groups(devices);
  for (int64_t rank = 0; rank < devices; ++rank) {
    const TensorSlice in = *DeviceSlice(step.shape, src, placement, rank);
    inputs[rank].resize(in.NumElements());
    ForEachContiguousRun(step.shape, in, [&](int64_t local, int64_t logical, int64_t length) {
      for (int64_t j = 0; j < length; ++j) inputs[rank][local + j] = Part<T>(rank, logical + j);
    });
    // The group: the devices that differ from this one only on the step's axis.
    std::vector<int64_t>& group = groups[rank];
    std::vector<int64_t> coordinate = placement.Coordinate(rank);
    for (int64_t g = 0; g < placement.hierarchy().dim(step.axis); ++g) {
      coordinate[step.axis] = g;
      group.push_back(placement.RankOf(coordinate));
    }
    const TensorSlice out = *DeviceSlice(step.shape, dst, placement, rank);
    expected[rank].resize(out.NumElements());
    ForEachContiguousRun(step.shape, out, [&](int64_t local, int64_t logical, int64_t length) {
      for (int64_t j = 0; j < length; ++j) {
        std::vector<T> parts;
        for (int64_t member : group) parts.push_back(Part<T>(member, logical + j));
        expected[rank][local + j] = Reduce(src.at(step.axis).reduce_op(), parts);
      }
    });
    outputs[rank].assign(out.NumElements() * sizeof(T), static_cast<char>(0x5a));
  }
  const AxisCommunicators communicators(placement, step.axis);
  std::vector<absl::Status> statuses(devices);
  RunOnRankThreads(devices, [&](int64_t rank) {
    BoxingStepArgs args;
    args.logical = step.shape;
    args.dtype = DTypeOf<T>();
    args.kind = ParseBoxingKind(step.kind).value();
    args.src = src;
    args.dst = dst;
    args.hierarchy_axis = step.axis;
    args.placement = &placement;
    args.rank = rank;
    args.communicator = communicators.For(rank);
    args.input = inputs[rank].data();
    args.input_bytes = static_cast<int64_t>(inputs[rank].size() * sizeof(T));
    args.output = outputs[rank].data();
    args.output_bytes = static_cast<int64_t>(outputs[rank].size());
    args.options.timeout = absl::Seconds(20);
    statuses[rank] = RunBoxingStep(args);
  });
  for (int64_t rank = 0; rank < devices; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << name << " rank " << rank << ": " << statuses[rank];
    std::vector<T> got(expected[rank].size());
    if (!got.empty()) std::memcpy(got.data(), outputs[rank].data(), outputs[rank].size());
    EXPECT_EQ(got, expected[rank]) << name << " rank " << rank;
  }
  // The members of a group that end with the same slice (all of them for all_reduce)
  // hold the same bytes: they reduce the same parts in the same order.
  for (int64_t a = 0; a < devices; ++a) {
    for (int64_t b : groups[a]) {
      if (b > a && *DeviceSlice(step.shape, dst, placement, a) ==
                       *DeviceSlice(step.shape, dst, placement, b)) {
        EXPECT_EQ(outputs[a], outputs[b]) << name << " ranks " << a << " and " << b;
      }
    }
  }
}

std::vector<Step> StepsOnOneAxis(int64_t ranks, const std::string& op) {
  const std::string placement = ranks == 1 ? "cpu{0:0}" : absl::StrCat("cpu{0:0-", ranks - 1, "}");
  const std::string p = absl::StrCat("P", op);
  return {
      {placement, "all_reduce", Shape{5, 3}, p, "B"},
      {placement, "all_reduce", Shape{}, p, "B"},             // a scalar
      {placement, "all_reduce", Shape{0, 3}, p, "B"},         // nothing at all
      {placement, "reduce_scatter", Shape{7, 3}, p, "S(0)"},  // uneven rows
      {placement, "reduce_scatter", Shape{2, 3}, p, "S(0)"},  // empty slices past 2 ranks
      {placement, "reduce_scatter", Shape{3, 5}, p, "S(1)"},  // chunks packed, uneven
      {placement, "reduce_scatter", Shape{4, 2}, p, "S(1)"},  // packed, empty past 2
  };
}

TEST(IntegerReductionTest, OneToFourRanksEveryOpAndType) {
  for (int64_t ranks = 1; ranks <= 4; ++ranks) {
    for (const std::string op : {"", "(max)", "(min)"}) {
      for (const Step& step : StepsOnOneAxis(ranks, op)) {
        CheckReduction<int32_t>(step);
        CheckReduction<int64_t>(step);
        CheckReduction<uint8_t>(step);
      }
    }
  }
}

// The inner axis of a 2-D placement: each group reduces its own rows, and reduce_scatter's
// chunks are not contiguous in the slices.
TEST(IntegerReductionTest, InnerAxisOfATwoDimensionalPlacement) {
  for (const std::string placement :
       {"cpu{0:0-1, 1:0-1}[2, 2]", "cpu{0:0-2, 1:0-2, 2:0-2}[3, 3]"}) {
    CheckReduction<int32_t>({placement, "all_reduce", Shape{5, 7}, "[S(0), P]", "[S(0), B]", 1});
    CheckReduction<int32_t>(
        {placement, "reduce_scatter", Shape{5, 7}, "[S(0), P]", "[S(0), S(1)]", 1});
    CheckReduction<int64_t>(
        {placement, "reduce_scatter", Shape{5, 7}, "[S(1), P(max)]", "[S(1), S(0)]", 1});
    CheckReduction<int32_t>({placement, "reduce_scatter", Shape{5, 7}, "[P, B]", "[S(0), B]", 0});
  }
}

// Literal expectations: the sum wraps as two's complement arithmetic does, on every rank.
TEST(IntegerReductionTest, SumsNearInt32MaxWrapExactly) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  const std::vector<std::vector<int32_t>> inputs = {
      {kMax, kMin, -1, 7, 0}, {1, -1, kMin, 8, kMax}, {kMax, 1, 1, -15, 1}};
  // Two ranks, then three.
  const std::vector<std::vector<int32_t>> expected = {{kMin, kMax, kMax, 15, kMax},
                                                      {-1, kMin, kMin, 0, kMin}};
  for (int64_t ranks : {2, 3}) {
    const Placement placement = *Placement::Parse(absl::StrCat("cpu{0:0-", ranks - 1, "}"));
    const AxisCommunicators communicators(placement, 0);
    std::vector<std::vector<int32_t>> outputs(ranks, std::vector<int32_t>(5));
    std::vector<absl::Status> statuses(ranks);
    RunOnRankThreads(ranks, [&](int64_t rank) {
      BoxingStepArgs args{Shape{5},
                          DType::kI32,
                          BoxingKind::kAllReduce,
                          *NdSbp::Parse("P"),
                          *NdSbp::Parse("B"),
                          0,
                          &placement,
                          rank,
                          communicators.For(rank),
                          inputs[rank].data(),
                          20,
                          outputs[rank].data(),
                          20,
                          {}};
      statuses[rank] = RunBoxingStep(args);
    });
    for (int64_t rank = 0; rank < ranks; ++rank) {
      EXPECT_TRUE(statuses[rank].ok()) << statuses[rank];
      EXPECT_EQ(outputs[rank], expected[ranks - 2]) << ranks << " ranks, rank " << rank;
    }
  }
}

// reduce_scatter P(max) -> S(0) of 5 i64 over 2 ranks: rows [0, 3) and [3, 5).
TEST(IntegerReductionTest, ReduceScatterMaxAndMinLiterals) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Placement placement = *Placement::Parse("cpu{0:0-1}");
  const std::vector<std::vector<int64_t>> inputs = {{kMin, -3, 4, kMax, 0}, {-7, -2, 4, 1, kMin}};
  for (const auto& [op, expected] :
       std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>>{
           {"P(max)", {{-7, -2, 4}, {kMax, 0}}}, {"P(min)", {{kMin, -3, 4}, {1, kMin}}}}) {
    const AxisCommunicators communicators(placement, 0);
    std::vector<std::vector<int64_t>> outputs = {std::vector<int64_t>(3), std::vector<int64_t>(2)};
    std::vector<absl::Status> statuses(2);
    RunOnRankThreads(2, [&](int64_t rank) {
      BoxingStepArgs args{Shape{5},
                          DType::kI64,
                          BoxingKind::kReduceScatter,
                          *NdSbp::Parse(op),
                          *NdSbp::Parse("S(0)"),
                          0,
                          &placement,
                          rank,
                          communicators.For(rank),
                          inputs[rank].data(),
                          40,
                          outputs[rank].data(),
                          static_cast<int64_t>(outputs[rank].size() * 8),
                          {}};
      statuses[rank] = RunBoxingStep(args);
    });
    for (int64_t rank = 0; rank < 2; ++rank) {
      EXPECT_TRUE(statuses[rank].ok()) << statuses[rank];
      EXPECT_EQ(outputs[rank], expected[rank]) << op << " rank " << rank;
    }
  }
}

// Narrow floats are not reduced; the message names the step, the dtype and what is
// supported. Every rank fails in validation, before any collective.
TEST(IntegerReductionTest, NarrowFloatReductionIsRefused) {
  const Placement placement = *Placement::Parse("cpu{0:0-1}");
  std::vector<char> input(6), output(6);
  BoxingStepArgs args{Shape{3},
                      DType::kF16,
                      BoxingKind::kAllReduce,
                      *NdSbp::Parse("P"),
                      *NdSbp::Parse("B"),
                      0,
                      &placement,
                      0,
                      nullptr,
                      input.data(),
                      6,
                      output.data(),
                      6,
                      {}};
  EXPECT_EQ(RunBoxingStep(args),
            absl::UnimplementedError(
                "boxing step all_reduce axis 0 of f16 [3]: P -> B on cpu{0:0-1}, rank 0: "
                "all_reduce P -> B of f16 is not supported: reductions are implemented for f32, "
                "i32, i64 and u8"));
  for (DType dtype : {DType::kBF16, DType::kF8E4M3, DType::kF8E5M2}) {
    args.dtype = dtype;
    args.kind = BoxingKind::kReduceScatter;
    args.dst = *NdSbp::Parse("S(0)");
    const absl::Status status = RunBoxingStep(args);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
    EXPECT_NE(status.message().find(absl::StrCat("reduce_scatter P -> S(0) of ", DTypeName(dtype),
                                                 " is not supported")),
              absl::string_view::npos)
        << status;
  }
}

}  // namespace
}  // namespace oneflow
