// Every per-axis step kind, run by each device on its own thread over in-process
// communicators, against sbp/boxing_simulator on the same distributed tensor.
//
// The cases are generated: for each placement ([2], [3], [4], [2, 2], [2, 3], and [1, 2],
// [3, 1] for identity), each uneven shape, each hierarchy axis, each SBP change the kind
// makes, and each SBP of the other axis (B, P, S(i)). The simulator decides whether the
// step is valid there (it fails, or its result does not hold the logical tensor); a
// valid step must give exactly the simulator's buffers on every device (so the same sums
// in the same order, zeros where the simulator has zeros) and hold the logical tensor; an
// invalid one must fail with INVALID_ARGUMENT on every device, without hanging.
#include "kernels/boxing/boxing_step.h"

#include <cctype>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/boxing/step_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing_simulator.h"

namespace oneflow {
namespace {

struct Case {
  Shape shape;
  BoxingStep step;
};

std::string CaseName(const Case& test, const Placement& placement) {
  return absl::StrCat(BoxingStepToString(test.step), " of ", test.shape.ToString(), " on ",
                      placement.ToString());
}

// The SBP changes on the step's axis that `kind` makes, for a tensor of `rank` axes.
std::vector<std::pair<Sbp, Sbp>> Changes(BoxingKind kind, int64_t rank) {
  const Sbp b = Sbp::Broadcast();
  const Sbp p = Sbp::Partial();
  std::vector<std::pair<Sbp, Sbp>> changes;
  for (int64_t i = 0; i < rank; ++i) {
    const Sbp s = Sbp::Split(i);
    if (kind == BoxingKind::kReduceScatter) changes.push_back({p, s});
    if (kind == BoxingKind::kAllGather) changes.push_back({s, b});
    if (kind == BoxingKind::kLocalSlice) changes.push_back({b, s});
    if (kind == BoxingKind::kSplitToPartial) changes.push_back({s, p});
    for (int64_t j = 0; j < rank; ++j) {
      if (kind == BoxingKind::kAllToAll && i != j) changes.push_back({s, Sbp::Split(j)});
    }
  }
  if (kind == BoxingKind::kAllReduce) changes.push_back({p, b});
  if (kind == BoxingKind::kLocalPartial) changes.push_back({b, p});
  if (kind == BoxingKind::kIdentity) {
    changes = {{p, b}, {b, p}};
    if (rank > 0) {
      changes.push_back({Sbp::Split(0), b});
      changes.push_back({b, Sbp::Split(rank - 1)});
      changes.push_back({p, Sbp::Split(0)});
    }
  }
  return changes;
}

std::vector<Case> CasesFor(const Placement& placement, const Shape& shape) {
  const std::vector<BoxingKind> kinds = {BoxingKind::kAllReduce,      BoxingKind::kReduceScatter,
                                         BoxingKind::kAllGather,      BoxingKind::kAllToAll,
                                         BoxingKind::kLocalSlice,     BoxingKind::kLocalPartial,
                                         BoxingKind::kSplitToPartial, BoxingKind::kIdentity};
  std::vector<Sbp> others = {Sbp::Broadcast(), Sbp::Partial()};
  for (int64_t i = 0; i < shape.rank(); ++i) others.push_back(Sbp::Split(i));
  const int64_t axes = placement.hierarchy().rank();
  std::vector<Case> cases;
  for (int64_t axis = 0; axis < axes; ++axis) {
    for (BoxingKind kind : kinds) {
      if ((kind == BoxingKind::kIdentity) != (placement.hierarchy().dim(axis) == 1)) continue;
      for (const auto& [from, to] : Changes(kind, shape.rank())) {
        for (const Sbp& other : axes == 1 ? std::vector<Sbp>{Sbp::Broadcast()} : others) {
          std::vector<Sbp> src(axes, other);
          std::vector<Sbp> dst(axes, other);
          src[axis] = from;
          dst[axis] = to;
          BoxingStep step;
          step.kind = kind;
          step.hierarchy_axis = axis;
          step.src = NdSbp(src);
          step.dst = NdSbp(dst);
          cases.push_back({shape, step});
        }
      }
    }
  }
  return cases;
}

bool HasPartial(const NdSbp& nd_sbp) {
  for (const Sbp& sbp : nd_sbp.sbps()) {
    if (sbp.is_partial()) return true;
  }
  return false;
}

// Runs the case on every device; returns "valid" or "invalid" (for the tally), and
// records test failures.
std::string RunCase(const Case& test, const Placement& placement, DType dtype) {
  const std::string name = CaseName(test, placement);
  const std::vector<float> values = LogicalValues(test.shape, 5);
  const absl::StatusOr<SimulatedTensor> before =
      Distribute(test.shape, values, test.step.src, placement, /*seed=*/11);
  EXPECT_TRUE(before.ok()) << name << ": " << before.status();
  if (!before.ok()) return "error";
  SimulatedTensor expected = *before;
  const bool valid = SimulateStep(test.shape, test.step, placement, placement, &expected).ok() &&
                     CheckHoldsLogical(test.shape, values, expected, placement, 1e-3f).ok();

  const int64_t devices = placement.num_devices();
  const int64_t element_size = SizeOf(dtype);
  std::vector<std::vector<char>> inputs(devices);
  std::vector<std::vector<char>> outputs(devices);
  for (int64_t rank = 0; rank < devices; ++rank) {
    const std::vector<float>& buffer = before->buffers[rank];
    inputs[rank].resize(buffer.size() * element_size);
    for (size_t i = 0; i < buffer.size(); ++i) {
      if (dtype == DType::kF32) {
        reinterpret_cast<float*>(inputs[rank].data())[i] = buffer[i];
      } else {
        reinterpret_cast<int32_t*>(inputs[rank].data())[i] = static_cast<int32_t>(buffer[i]);
      }
    }
    const TensorSlice slice = *DeviceSlice(test.shape, test.step.dst, placement, rank);
    outputs[rank].assign(slice.NumElements() * element_size, static_cast<char>(0x7f));
  }
  const AxisCommunicators communicators(placement, test.step.hierarchy_axis);
  std::vector<absl::Status> statuses(devices);
  RunOnRankThreads(devices, [&](int64_t rank) {
    BoxingStepArgs args;
    args.logical = test.shape;
    args.dtype = dtype;
    args.kind = std::string(BoxingKindName(test.step.kind));
    args.src = test.step.src;
    args.dst = test.step.dst;
    args.hierarchy_axis = test.step.hierarchy_axis;
    args.placement = &placement;
    args.rank = rank;
    args.communicator = communicators.For(rank);
    args.input = inputs[rank].data();
    args.input_bytes = static_cast<int64_t>(inputs[rank].size());
    args.output = outputs[rank].data();
    args.output_bytes = static_cast<int64_t>(outputs[rank].size());
    args.options.timeout = absl::Seconds(20);
    args.options.description = absl::StrCat(name, " rank ", rank);
    statuses[rank] = RunBoxingStep(args);
  });

  SimulatedTensor produced{test.step.dst, {}};
  for (int64_t rank = 0; rank < devices; ++rank) {
    if (!valid) {
      EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kInvalidArgument)
          << name << " rank " << rank << ": the simulator rejects the step; " << statuses[rank];
      continue;
    }
    EXPECT_TRUE(statuses[rank].ok()) << name << " rank " << rank << ": " << statuses[rank];
    if (!statuses[rank].ok()) return "error";
    std::vector<float> got(outputs[rank].size() / element_size);
    for (size_t i = 0; i < got.size(); ++i) {
      got[i] = dtype == DType::kF32
                   ? reinterpret_cast<const float*>(outputs[rank].data())[i]
                   : static_cast<float>(reinterpret_cast<const int32_t*>(outputs[rank].data())[i]);
    }
    if (got != expected.buffers[rank]) {
      ADD_FAILURE() << name << " " << DTypeName(dtype) << " rank " << rank
                    << ": the buffer differs from the simulator's";
      return "error";
    }
    produced.buffers.push_back(std::move(got));
  }
  if (valid) {  // The devices hold the logical tensor (P: summed over the group).
    const absl::Status holds = CheckHoldsLogical(test.shape, values, produced, placement, 1e-3f);
    EXPECT_TRUE(holds.ok()) << name << ": " << holds;
  }
  return valid ? "valid" : "invalid";
}

class BoxingStepTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoxingStepTest, EveryKindMatchesTheSimulator) {
  const Placement placement = *Placement::Parse(GetParam());
  // Uneven everywhere: 5 and 7 rows/columns over 2, 3 and 4 devices, a rank-3 tensor whose
  // middle axis splits (pieces not contiguous), fewer rows than devices (empty slices),
  // and a scalar.
  std::map<std::string, int64_t> tally;  // "<kind> valid|invalid" -> cases
  for (const Shape& shape : {Shape{5, 7}, Shape{3, 5, 4}, Shape{2, 9}, Shape{}}) {
    for (const Case& test : CasesFor(placement, shape)) {
      const std::string kind(BoxingKindName(test.step.kind));
      ++tally[absl::StrCat(kind, " ", RunCase(test, placement, DType::kF32))];
      const bool reduces =
          test.step.kind == BoxingKind::kAllReduce || test.step.kind == BoxingKind::kReduceScatter;
      if (!reduces && !HasPartial(test.step.src)) {
        ++tally[absl::StrCat(kind, " i32 ", RunCase(test, placement, DType::kI32))];
      }
    }
  }
  EXPECT_EQ(tally.count("error"), 0u);
  bool has_unit_axis = false;
  for (int64_t dim : placement.hierarchy().dims()) has_unit_axis = has_unit_axis || dim == 1;
  // Every kind that applies here ran valid cases.
  for (const char* kind : {"all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                           "local_slice", "local_partial", "split_to_partial"}) {
    EXPECT_GT(tally[absl::StrCat(kind, " valid")], 0) << kind;
  }
  if (has_unit_axis) {
    EXPECT_GT(tally["identity valid"], 0);
  }
  std::string summary;
  for (const auto& [key, count] : tally) absl::StrAppend(&summary, key, ": ", count, "; ");
  std::cout << placement.ToString() << ": " << summary << "\n";
}

INSTANTIATE_TEST_SUITE_P(Placements, BoxingStepTest,
                         ::testing::Values("cpu{0:0-1}", "cpu{0:0-2}", "cpu{0:0-3}",
                                           "cpu{0:0-1, 1:0-1}[2, 2]", "cpu{0:0-2, 1:0-2}[2, 3]",
                                           "cpu{0:0-1}[1, 2]", "cpu{0:0-2}[3, 1]"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace oneflow
